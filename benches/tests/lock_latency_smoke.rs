//! Runs the lock latency benchmark binary with tiny counts and `--json` against its own local
//! ZooKeeper, and checks the report's shape: every expected metric line parses, the contended
//! lock saw no mutual-exclusion violation, and the ratios are finite. No timing thresholds.
//! The first run compares with the Java client and Curator (`--compare java,curator`, in 2
//! blocks): the reference's lines, and our ratios to them with their spread.
//!
//! Java, the ZooKeeper jars and Apache Curator are required (the binary starts a server with
//! the test kit; `scripts/test.sh` installs them): when they are missing the binary fails with
//! a message naming the script that installs them, and so does this test.

mod support;

use serde_json::Value;

const EXPECTED: [&str; 25] = [
    "raw_create",
    "raw_delete",
    "raw_pair",
    "raw_get",
    "pipelined_get",
    "lock_acquire",
    "lock_release",
    "lock_cycle",
    "lock_contended",
    "lock_contended_release",
    "election_failover",
    "codec_get_data_reply_decode",
    "codec_watcher_event_encode",
    "lock_cycle_p50/raw_pair_p50",
    "handoff_p50/raw_delete_p50",
    "handoff_p50/contended_release_p50",
    "pipelined_get_ops/raw_get_ops",
    "raw_create_p50/raw_create_p50@java",
    "raw_delete_p50/raw_delete_p50@java",
    "raw_get_p50/raw_get_p50@java",
    "pipelined_get_ops/pipelined_get_ops@java",
    "lock_cycle_p50/lock_cycle_p50@curator",
    "handoff_p50/handoff_p50@curator",
    "contended_ops/contended_ops@curator",
    "failover_p50/failover_p50@curator",
];

const LATENCY_KEYS: [&str; 4] = ["p50_us", "p90_us", "p99_us", "max_us"];

/// The request breakdown of `raw_pair` and `raw_get` (µs per request, never negative).
const BREAKDOWN_KEYS: [&str; 6] = [
    "round_trip_mean_us",
    "client_send_mean_us",
    "client_send_p50_us",
    "client_receive_mean_us",
    "client_receive_p50_us",
    "server_mean_us",
];

fn finite(line: &Value, key: &str) -> f64 {
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
fn tiny_run_reports_every_metric() {
    let args = [
        "--json",
        "--quiet",
        "--codec-no-java",
        "--scale",
        "0.01",
        "--contended-sessions",
        "3",
        "--contended-cycles",
        "5",
        "--candidates",
        "3",
        "--failover-rounds",
        "2",
        "--pipelined-gets",
        "300",
        "--in-flight",
        "32",
        "--compare",
        "java,curator",
        "--blocks",
        "2",
    ];
    let lines = run_lock_latency(&args);
    let by_name = |name: &str| {
        lines
            .iter()
            .find(|l| l.get("metric").and_then(Value::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no {name} line in:\n{lines:?}"))
    };
    for line in &lines {
        let client = line.get("client").and_then(Value::as_str);
        let metric = line
            .get("metric")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match metric.split_once('@').filter(|_| !metric.contains('/')) {
            Some((_, reference)) => assert_eq!(client, Some(reference), "{line}"),
            None => assert_eq!(client, Some("rzk"), "{line}"),
        }
        for key in ["n", "p50_us", "p90_us", "p99_us", "max_us", "ops_per_s"] {
            assert!(line.get(key).is_some(), "{key} missing in {line:?}");
        }
        assert!(line.get("client_cpu_us_per_op").is_some());
    }
    for name in EXPECTED {
        by_name(name);
    }
    for name in &EXPECTED[..11] {
        let line = by_name(name);
        assert!(finite(line, "n") >= 1.0, "{name}: no samples");
        for key in LATENCY_KEYS {
            finite(line, key);
        }
    }
    for name in [
        "raw_pair",
        "raw_get",
        "pipelined_get",
        "lock_cycle",
        "lock_contended",
    ] {
        let line = by_name(name);
        finite(line, "server_packets_per_op");
        finite(line, "client_cpu_us_per_op");
    }
    for name in ["raw_get", "pipelined_get", "lock_contended"] {
        assert!(
            finite(by_name(name), "ops_per_s") > 0.0,
            "{name}: no throughput"
        );
    }
    // Where a raw request's time goes: the client's own times and the server's, per request.
    // The rest (round trip less the others) may come out below zero on a noisy machine.
    for name in ["raw_pair", "raw_get"] {
        let line = by_name(name);
        for key in BREAKDOWN_KEYS {
            finite(line, key);
        }
        let rest = line
            .get("rest_mean_us")
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN);
        assert!(rest.is_finite(), "{name}: rest_mean_us = {rest}");
    }
    let contended = by_name("lock_contended");
    assert_eq!(
        contended.get("violations").and_then(Value::as_f64),
        Some(0.0),
        "mutual exclusion violated: {contended:?}"
    );
    for name in &EXPECTED[13..] {
        let line = by_name(name);
        let ratio = finite(line, "ratio");
        assert!(ratio > 0.0, "{name}: ratio {ratio}");
        // A target is a string like "<= 1.25" with a boolean verdict, or null with null.
        match line.get("target") {
            Some(Value::Null) => assert_eq!(line.get("target_met"), Some(&Value::Null)),
            Some(Value::String(_)) => {
                assert!(matches!(line.get("target_met"), Some(Value::Bool(_))))
            }
            other => panic!("{name}: target {other:?}"),
        }
    }
    assert_eq!(
        by_name("handoff_p50/raw_delete_p50").get("target"),
        Some(&Value::Null),
        "the raw delete ratio has no target"
    );
    // The reference clients: their own lines, pooled over the 2 blocks, and ours' ratios to
    // them (the median of the blocks' ratios, inside their spread).
    for name in &EXPECTED[..11] {
        let client = if name.starts_with("raw_") || name.starts_with("pipelined_") {
            "java"
        } else {
            "curator"
        };
        let reference = by_name(&format!("{name}@{client}"));
        assert!(finite(reference, "n") >= 1.0, "{name}@{client}: no samples");
        for key in LATENCY_KEYS {
            finite(reference, key);
        }
        let ours = by_name(name);
        assert_eq!(
            ours.get("ref_client").and_then(Value::as_str),
            Some(client),
            "{ours}"
        );
        let ratio = finite(ours, "ratio_to_ref");
        assert!(ratio > 0.0, "{name}: ratio_to_ref {ratio}");
        let spread = ours
            .get("ratio_spread")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{name}: no ratio_spread in {ours}"));
        assert_eq!(spread.len(), 2, "{ours}");
        let (lo, hi) = (
            spread[0].as_f64().unwrap_or(f64::NAN),
            spread[1].as_f64().unwrap_or(f64::NAN),
        );
        assert!(
            lo <= ratio && ratio <= hi,
            "{name}: {ratio} not in [{lo}, {hi}]"
        );
    }
    for name in ["pipelined_get@java", "lock_contended@curator"] {
        assert!(
            finite(by_name(name), "ops_per_s") > 0.0,
            "{name}: no throughput"
        );
    }
    assert_eq!(
        by_name("lock_contended@curator")
            .get("violations")
            .and_then(Value::as_f64),
        Some(0.0),
        "mutual exclusion violated with Curator"
    );
    // Our ratios are interleaved too: the median of the 2 blocks'.
    for name in [
        "lock_cycle_p50/raw_pair_p50",
        "lock_cycle_p50/lock_cycle_p50@curator",
    ] {
        assert_eq!(by_name(name).get("blocks").and_then(Value::as_u64), Some(2));
    }
}

/// Runs the binary with `args` and tiny counts of the workloads `--tls`/`--sasl` report on;
/// returns its JSON lines.
fn tiny_secured_run(extra: &str) -> Vec<Value> {
    let args = [
        extra,
        "--json",
        "--quiet",
        "--only",
        "raw_create_delete,pipelined_get,lock_uncontended,lock_contended",
        "--scale",
        "0.01",
        "--contended-sessions",
        "3",
        "--contended-cycles",
        "5",
        "--pipelined-gets",
        "300",
        "--in-flight",
        "32",
    ];
    run_lock_latency(&args)
}

/// Runs the binary with `args`, expecting success; returns its JSON lines and its output.
fn run_lock_latency(args: &[&str]) -> Vec<Value> {
    support::run_json(env!("CARGO_BIN_EXE_lock_latency"), args)
}

fn line<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l.get("metric").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in {lines:?}"))
}

#[test]
fn tls_runs_measure_plaintext_and_tls_side_by_side() {
    let lines = tiny_secured_run("--tls");
    for name in ["raw_pair", "pipelined_get", "lock_cycle", "lock_contended"] {
        for metric in [name.to_owned(), format!("{name}@tls")] {
            let l = line(&lines, &metric);
            assert!(finite(l, "n") >= 1.0, "{metric}: no samples");
            finite(l, "client_cpu_us_per_op");
        }
    }
    for ratio in [
        "raw_pair_p50@tls/raw_pair_p50",
        "lock_cycle_p50@tls/lock_cycle_p50",
        "handoff_p50@tls/handoff_p50",
        "pipelined_get_ops@tls/pipelined_get_ops",
    ] {
        // Interleaved: the median of the 4 blocks' ratios, inside their spread.
        let l = line(&lines, ratio);
        let median = finite(l, "ratio");
        assert!(median > 0.0, "{ratio}");
        assert_eq!(l.get("blocks").and_then(Value::as_u64), Some(4), "{ratio}");
        let spread = l
            .get("ratio_spread")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{ratio}: no spread in {l}"));
        let (lo, hi) = (
            spread[0].as_f64().unwrap_or(f64::NAN),
            spread[1].as_f64().unwrap_or(f64::NAN),
        );
        assert!(
            lo <= median && median <= hi,
            "{ratio}: {median} not in [{lo}, {hi}]"
        );
        finite(l, "pooled_ratio");
    }
    // The reference clients are not measured over TLS.
    assert!(
        lines.iter().all(|l| l.get("ref_client").is_none()),
        "no comparison with --tls"
    );
    // Each side pooled over its blocks.
    assert_eq!(
        line(&lines, "lock_cycle@tls")
            .get("blocks")
            .and_then(Value::as_u64),
        Some(4)
    );
}

#[test]
fn sasl_runs_measure_with_authenticated_sessions() {
    let lines = tiny_secured_run("--sasl");
    for name in ["raw_pair", "lock_cycle"] {
        assert!(finite(line(&lines, name), "n") >= 1.0, "{name}: no samples");
    }
    assert!(
        lines.iter().all(|l| !l
            .get("metric")
            .and_then(Value::as_str)
            .is_some_and(|m| m.ends_with("@tls"))),
        "no TLS metrics without --tls"
    );
}
