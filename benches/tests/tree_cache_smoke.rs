//! Runs the `tree_cache` binary once, tiny, with `--json` against its own local ZooKeeper, and
//! checks what it reports: the whole tree loaded, every figure present and a number, every
//! write mirrored. No timing thresholds.

mod support;

use support::{metric, number, run_json};

#[test]
fn tree_cache_reports_the_load_the_ratio_and_the_writes_followed() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_tree_cache"),
        &[
            "--json", "--nodes", "300", "--fanout", "10", "--writes", "200", "--sample", "30",
        ],
    );
    let load = metric(&lines, "initial_load");
    assert_eq!(number(load, "n"), 301.0, "the tree and its root");
    for key in ["seconds", "rss_bytes_per_node", "client_cpu_us_per_node"] {
        assert!(number(load, key) >= 0.0, "{key}");
    }
    assert_eq!(number(metric(&lines, "sequential_get"), "n"), 30.0);
    assert!(number(metric(&lines, "sequential_load/pipelined_load"), "ratio") > 0.0);
    let writes = metric(&lines, "follow_writes");
    assert_eq!(number(writes, "n"), 200.0);
    assert!(number(writes, "mirrored_per_s") > 0.0);
    let updates = number(writes, "updated_events");
    assert!(
        (1.0..=200.0).contains(&updates),
        "{updates} updates for 200 writes"
    );
}
