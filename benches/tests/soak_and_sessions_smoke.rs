//! Runs the `sessions` and `soak` binaries once, tiny, with `--json`, and checks what they
//! report: every operation done, every watch fired, the memory figures present; and for the
//! soak, cycles done with no violation, no token-order error and no leftover node across a
//! server restart. No timing thresholds.

mod support;

use support::{metric, number, run_json};

#[test]
fn sessions_reports_memory_and_completes_the_mixed_load() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_sessions"),
        &[
            "--json",
            "--sessions",
            "20",
            "--ops",
            "2000",
            "--in-flight",
            "16",
        ],
    );
    let memory = metric(&lines, "idle_session_memory");
    assert_eq!(number(memory, "n"), 20.0);
    assert!(number(memory, "peak_rss_per_session_bytes") > 0.0);
    let load = metric(&lines, "mixed_load");
    assert_eq!(number(load, "n"), 2000.0);
    assert_eq!(number(load, "errors"), 0.0);
    assert_eq!(number(load, "watches_fired"), number(load, "watches"));
    assert_eq!(number(load, "watches"), 40.0);
}

#[test]
fn soak_survives_a_server_restart_without_violation_or_leftover() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_soak"),
        &[
            "--json",
            "--minutes",
            "0.12",
            "--sessions",
            "3",
            "--restart-every",
            "3",
        ],
    );
    let soak = metric(&lines, "soak");
    assert!(number(soak, "n") > 0.0, "no lock cycle done");
    assert!(number(soak, "restarts") >= 1.0, "no server restarted");
    assert_eq!(number(soak, "violations"), 0.0);
    assert_eq!(number(soak, "token_order_errors"), 0.0);
    assert_eq!(number(soak, "leftover_nodes"), 0.0);
}
