//! Runs the codec benchmark binary in `--quick --json` mode and checks the report's shape: the
//! JSON parses, the reference cross-check passed, and every figure and ratio is finite and
//! positive. No timing thresholds: the figures of a debug build on a shared machine mean nothing.
//!
//! Java and the ZooKeeper jars are required (as for the other Java-backed tests): when they are
//! missing the benchmark fails with a message naming `scripts/install-deps.sh`, and so does this
//! test.

use std::process::Command;

use serde_json::Value;
use zk_benches::codec::CaseId;

fn run_codec(args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_codec"))
        .args(args)
        .output()
        .expect("the codec binary starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "codec {args:?} failed with {}:\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

fn positive(message: &Value, key: &str) -> f64 {
    let value = message
        .get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} is not a number in {message:?}"));
    assert!(
        value.is_finite() && value > 0.0,
        "{key} = {value} in {message:?}"
    );
    value
}

fn messages(report: &Value) -> &[Value] {
    let messages = report
        .get("messages")
        .and_then(Value::as_array)
        .expect("a messages array");
    let ids: Vec<&str> = messages
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .collect();
    let expected: Vec<&str> = CaseId::ALL.iter().map(|c| c.id()).collect();
    assert_eq!(ids, expected);
    messages
}

#[test]
fn quick_run_with_the_reference_cross_checks_and_reports_ratios() {
    let report = run_codec(&["--quick", "--json"]);
    assert_eq!(
        report.get("benchmark").and_then(Value::as_str),
        Some("codec")
    );
    assert_eq!(report.get("mode").and_then(Value::as_str), Some("quick"));
    let cores = report
        .get("machine")
        .and_then(|m| m.get("cores"))
        .and_then(Value::as_f64)
        .expect("machine.cores");
    assert!(cores >= 1.0);
    let reference = report.get("reference").expect("a reference object");
    assert_eq!(
        reference.get("cross_check").and_then(Value::as_str),
        Some("passed")
    );
    assert!(
        reference
            .get("java_version")
            .and_then(Value::as_str)
            .is_some()
    );

    for message in messages(&report) {
        assert_eq!(
            message.get("cross_check").and_then(Value::as_str),
            Some("passed"),
            "{message:?}"
        );
        let bytes = positive(message, "bytes");
        let id = message.get("id").and_then(Value::as_str).expect("id");
        let case = CaseId::from_id(id).expect("a known case");
        assert_eq!(bytes as usize, case.frame().len());
        for op in ["decode", "encode"] {
            let ours = positive(message, &format!("ours_{op}_ns"));
            let reference = positive(message, &format!("ref_{op}_ns"));
            positive(message, &format!("ours_{op}_mb_s"));
            let ratio = positive(message, &format!("{op}_ratio"));
            // The printed ratio is the quotient of the printed times (3 decimals each).
            let expected = ours / reference;
            assert!(
                (ratio - expected).abs() <= expected * 0.01 + 0.002,
                "{op}_ratio {ratio} vs {ours}/{reference}"
            );
        }
        // The create request and the notification decode on their real paths, the borrowed
        // views, which allocate nothing; their owned decodes are reported beside them.
        let path = message.get("decode_path").and_then(Value::as_str);
        let allocs = message.get("ours_decode_allocs").and_then(Value::as_f64);
        if matches!(case, CaseId::CreateRequest | CaseId::WatcherEvent) {
            assert_eq!(path, Some("view"), "{id}");
            assert_eq!(allocs, Some(0.0), "{id}: a view decode allocates nothing");
            positive(message, "ours_owned_decode_ns");
            positive(message, "owned_decode_ratio");
            assert!(positive(message, "ours_owned_decode_allocs") >= 1.0, "{id}");
        } else {
            assert_eq!(path, Some("owned"), "{id}");
            for key in ["ours_owned_decode_ns", "owned_decode_ratio"] {
                assert_eq!(message.get(key), Some(&Value::Null), "{id}: {key}");
            }
        }
    }
}

#[test]
fn quick_run_without_java_reports_only_our_codec() {
    let report = run_codec(&["--quick", "--json", "--no-java"]);
    assert_eq!(report.get("reference"), Some(&Value::Null));
    for message in messages(&report) {
        assert_eq!(
            message.get("cross_check").and_then(Value::as_str),
            Some("skipped")
        );
        positive(message, "ours_decode_ns");
        positive(message, "ours_encode_ns");
        for key in [
            "ref_decode_ns",
            "decode_ratio",
            "ref_encode_ns",
            "encode_ratio",
        ] {
            assert_eq!(message.get(key), Some(&Value::Null), "{key}");
        }
    }
}
