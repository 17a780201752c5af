//! Runs the `tree_cache` binary once, tiny, with `--json` against its own local ZooKeeper, and
//! checks what it reports: the whole tree loaded, every figure present and finite, every
//! write mirrored. No timing thresholds.

use std::process::Command;

use serde_json::Value;

fn number(lines: &[Value], metric: &str, key: &str) -> f64 {
    let line = lines
        .iter()
        .find(|l| l.get("metric").and_then(Value::as_str) == Some(metric))
        .unwrap_or_else(|| panic!("no {metric} line in {lines:?}"));
    let value = line
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} is not a number in {line:?}"));
    assert!(
        value.is_finite() && value >= 0.0,
        "{key} = {value} in {line:?}"
    );
    value
}

#[test]
fn tree_cache_reports_the_load_the_ratio_and_the_writes_followed() {
    let binary = env!("CARGO_BIN_EXE_tree_cache");
    let args = [
        "--json", "--nodes", "300", "--fanout", "10", "--writes", "200", "--sample", "30",
    ];
    let output = Command::new(binary)
        .args(args)
        .output()
        .expect("the binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{binary} {args:?} failed with {}:\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(
        number(&lines, "initial_load", "n"),
        301.0,
        "the tree and its root"
    );
    number(&lines, "initial_load", "seconds");
    number(&lines, "initial_load", "rss_bytes_per_node");
    number(&lines, "initial_load", "client_cpu_us_per_node");
    assert_eq!(number(&lines, "sequential_get", "n"), 30.0);
    assert!(number(&lines, "sequential_load/pipelined_load", "ratio") > 0.0);
    assert_eq!(number(&lines, "follow_writes", "n"), 200.0);
    number(&lines, "follow_writes", "mirrored_per_s");
    let updates = number(&lines, "follow_writes", "updated_events");
    assert!(
        (1.0..=200.0).contains(&updates),
        "{updates} updates for 200 writes"
    );
}
