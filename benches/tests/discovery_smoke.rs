//! Runs the `discovery` binary once, tiny, with `--json` against its own local ZooKeeper and a
//! Curator process, and checks what it reports: both sides' query and change latencies, every
//! figure a positive number, and the ratios. No timing thresholds.

mod support;

use support::{metric, number, run_json};

#[test]
fn discovery_reports_both_sides_query_and_change_latency() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_discovery"),
        &[
            "--json",
            "--instances",
            "5",
            "--queries",
            "20",
            "--changes",
            "20",
            "--warmup",
            "5",
        ],
    );
    for kind in ["query", "change"] {
        for client in ["rzk", "curator"] {
            let line = lines
                .iter()
                .find(|l| l["metric"] == kind && l["client"] == client)
                .unwrap_or_else(|| panic!("no {client} {kind} line in {lines:?}"));
            assert_eq!(number(line, "n"), 20.0, "{client} {kind}");
            assert_eq!(number(line, "instances"), 5.0);
            assert!(number(line, "p50_us") > 0.0, "{client} {kind}");
            assert!(number(line, "p99_us") >= number(line, "p50_us"));
        }
        assert!(number(metric(&lines, &format!("{kind} rzk/curator")), "p50_ratio") > 0.0);
    }
}
