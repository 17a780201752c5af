//! What the smoke tests of the binaries share: run a binary with `--json` and read its lines
//! back, find a metric, read a number.

#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

/// Runs `binary` with `args`; its stdout's lines as JSON. Panics (with both outputs) when it
/// fails or prints something else.
pub(crate) fn run_json(binary: &str, args: &[&str]) -> Vec<Value> {
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

pub(crate) fn metric<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l.get("metric").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no {name} line in {lines:?}"))
}

pub(crate) fn number(line: &Value, key: &str) -> f64 {
    line.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{key} is not a number in {line:?}"))
}
