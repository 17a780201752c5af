//! Runs the `queues` binary once, tiny, with `--json` against its own local ZooKeeper and
//! Curator processes, and checks what it reports: both sides' put and take throughput in both
//! modes, every figure a positive number, and the ratios. No timing thresholds.

mod support;

use support::{number, run_json};

#[test]
fn queues_report_both_sides_put_and_take_throughput() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_queues"),
        &["--json", "--items", "20", "--warmup", "5"],
    );
    for mode in ["default", "lock-safe"] {
        for metric in ["put", "take"] {
            for client in ["rzk", "curator"] {
                let line = lines
                    .iter()
                    .find(|l| l["metric"] == metric && l["client"] == client && l["mode"] == mode)
                    .unwrap_or_else(|| panic!("no {client} {metric} {mode} line in {lines:?}"));
                assert_eq!(number(line, "n"), 20.0);
                assert!(
                    number(line, "items_per_s") > 0.0,
                    "{client} {metric} {mode}"
                );
            }
            let ratio = lines
                .iter()
                .find(|l| l["metric"] == format!("{metric} rzk/curator") && l["mode"] == mode)
                .unwrap_or_else(|| panic!("no {metric} ratio for {mode}"));
            assert!(number(ratio, "throughput_ratio") > 0.0);
        }
    }
}
