//! Runs the `selector` binary once, tiny, with `--json` against its own local ZooKeeper and a
//! Curator process, and checks what it reports: both sides' failover samples, every figure a
//! positive number, and the ratio. No timing thresholds.

mod support;

use support::{metric, number, run_json};

#[test]
fn selector_reports_both_sides_failover() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_selector"),
        &["--json", "--tenures", "20", "--warmup", "5"],
    );
    for client in ["rzk", "curator"] {
        let line = lines
            .iter()
            .find(|l| l["metric"] == "selector failover" && l["client"] == client)
            .unwrap_or_else(|| panic!("no {client} line in {lines:?}"));
        assert!(number(line, "n") >= 20.0, "{client}");
        assert!(number(line, "p50_us") > 0.0, "{client}");
        assert!(number(line, "p99_us") >= number(line, "p50_us"));
    }
    assert!(number(metric(&lines, "selector failover rzk/curator"), "p50_ratio") > 0.0);
}
