//! Runs the `sessions` and `soak` binaries once, tiny, with `--json`, and checks what they
//! report: every operation done, every watch fired, the memory figures present; and for the
//! soak, cycles done with no violation, no token-order error and no leftover node across a
//! server restart. No timing thresholds.

use std::process::Command;

use serde_json::Value;

fn run_json(binary: &str, args: &[&str]) -> Vec<Value> {
    let output = Command::new(binary)
        .args(args)
        .output()
        .expect("the binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{binary} {args:?} failed with {}:\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn metric<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l.get("metric").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in {lines:?}"))
}

fn number(line: &Value, key: &str) -> f64 {
    line.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} is not a number in {line:?}"))
}

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
