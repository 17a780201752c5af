//! The report of a run: the machine, one [`Row`] per message, rendered as a table
//! ([`Report::to_table`]) or as one JSON document ([`Report::to_json`], shape in
//! `docs/benchmarks.md`).

use std::env;
use std::fs;

use serde::Serialize;

use super::Settings;
use super::cases::CaseId;
use super::reference::JavaReport;
use super::timing::Measurement;
use crate::json;

/// The machine the figures come from. Serialized as it is: the report's `machine` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Machine {
    /// Logical cores available to this process.
    pub cores: usize,
    /// `model name` of `/proc/cpuinfo`, when readable.
    pub cpu: Option<String>,
    /// The 1-minute load average at the start, when readable (a noisy machine shows here).
    pub load_1m: Option<f64>,
    /// `std::env::consts::OS`.
    pub os: &'static str,
    /// `std::env::consts::ARCH`.
    pub arch: &'static str,
    /// `release` or `debug`: our figures mean nothing in a debug build.
    pub rust_profile: &'static str,
}

impl Machine {
    /// Describes this machine.
    pub fn detect() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned());
        let load_1m = fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            load_1m,
            os: env::consts::OS,
            arch: env::consts::ARCH,
            rust_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        }
    }
}

/// The figures of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The message.
    pub case: CaseId,
    /// Its encoded size (header + record).
    pub bytes: usize,
    /// Our decode, on the message's real path (the borrowed view for the create request and
    /// the watch notification).
    pub ours_decode: Measurement,
    /// Our owned decode, for the messages whose real path is the borrowed view.
    pub ours_owned_decode: Option<Measurement>,
    /// Our encode.
    pub ours_encode: Measurement,
    /// The reference's decode and encode, absent with `--no-java`.
    pub reference: Option<(Measurement, Measurement)>,
}

impl Row {
    /// Our decode throughput in MB/s (10^6 bytes per second).
    pub fn ours_decode_mb_s(&self) -> f64 {
        mb_per_s(self.bytes, self.ours_decode.median_ns)
    }

    /// Our encode throughput in MB/s.
    pub fn ours_encode_mb_s(&self) -> f64 {
        mb_per_s(self.bytes, self.ours_encode.median_ns)
    }

    /// Our decode time over the reference's (below 1: we are faster).
    pub fn decode_ratio(&self) -> Option<f64> {
        self.reference
            .map(|(decode, _)| self.ours_decode.median_ns / decode.median_ns)
    }

    /// Our owned decode time over the reference's decode, when the owned decode was timed apart.
    pub fn owned_decode_ratio(&self) -> Option<f64> {
        let owned = self.ours_owned_decode?;
        self.reference
            .map(|(decode, _)| owned.median_ns / decode.median_ns)
    }

    /// `view` when [`Row::ours_decode`] is the borrowed view, `owned` otherwise.
    pub fn decode_path(&self) -> &'static str {
        if self.ours_owned_decode.is_some() {
            "view"
        } else {
            "owned"
        }
    }

    /// Our encode time over the reference's (below 1: we are faster).
    pub fn encode_ratio(&self) -> Option<f64> {
        self.reference
            .map(|(_, encode)| self.ours_encode.median_ns / encode.median_ns)
    }
}

fn mb_per_s(bytes: usize, ns: f64) -> f64 {
    bytes as f64 / ns * 1e3
}

/// A whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `quick` or `full`.
    pub mode: &'static str,
    /// The timing settings.
    pub settings: Settings,
    /// Where it ran.
    pub machine: Machine,
    /// The reference's `info` lines; `None` with `--no-java`.
    pub reference: Option<JavaReport>,
    /// One row per message, in [`CaseId::ALL`] order.
    pub rows: Vec<Row>,
}

// The JSON document, declared field by field in output order (`docs/benchmarks.md` shows it).

/// The whole document.
#[derive(Serialize)]
struct JsonReport<'a> {
    benchmark: &'static str,
    mode: &'static str,
    settings: JsonSettings,
    machine: &'a Machine,
    /// `null` with `--no-java`.
    reference: Option<JsonReference<'a>>,
    messages: Vec<JsonMessage>,
}

#[derive(Serialize)]
struct JsonSettings {
    warmup_ms: u128,
    java_warmup_ms: u128,
    rounds: usize,
    round_ms: u128,
}

#[derive(Serialize)]
struct JsonReference<'a> {
    serializer: &'static str,
    java_version: Option<&'a str>,
    vm: Option<&'a str>,
    gc: Option<&'a str>,
    max_heap_mb: Option<u64>,
    /// Always `passed`: a failed cross-check stops the run before any report.
    cross_check: &'static str,
}

/// One message; the `ref_*` and `*_ratio` fields are `null` with `--no-java`.
#[derive(Serialize)]
struct JsonMessage {
    id: &'static str,
    name: &'static str,
    bytes: usize,
    /// `passed`, or `skipped` with `--no-java`.
    cross_check: &'static str,
    ours_decode_ns: f64,
    ours_decode_mb_s: f64,
    /// Heap allocations per decode (`null` without the counting allocator).
    ours_decode_allocs: Option<f64>,
    ref_decode_ns: Option<f64>,
    decode_ratio: Option<f64>,
    /// `view` (the borrowed view, the real path of this message) or `owned`.
    decode_path: &'static str,
    /// The owned decode when `decode_path` is `view`, else `null`.
    ours_owned_decode_ns: Option<f64>,
    ours_owned_decode_allocs: Option<f64>,
    owned_decode_ratio: Option<f64>,
    ours_encode_ns: f64,
    ours_encode_mb_s: f64,
    /// Heap allocations per encode (into a reused buffer).
    ours_encode_allocs: Option<f64>,
    ref_encode_ns: Option<f64>,
    encode_ratio: Option<f64>,
}

impl Report {
    /// One JSON document (see `docs/benchmarks.md`).
    pub fn to_json(&self) -> String {
        let settings = &self.settings;
        let document = JsonReport {
            benchmark: "codec",
            mode: self.mode,
            settings: JsonSettings {
                warmup_ms: settings.warmup.as_millis(),
                java_warmup_ms: settings.java_warmup.as_millis(),
                rounds: settings.rounds,
                round_ms: settings.round.as_millis(),
            },
            machine: &self.machine,
            reference: self.reference.as_ref().map(|r| JsonReference {
                serializer: "org.apache.jute.BinaryInputArchive/BinaryOutputArchive (ZooKeeper 3.8)",
                java_version: r.info("java_version"),
                vm: r.info("vm"),
                gc: r.info("gc"),
                max_heap_mb: r.info("max_heap_mb").and_then(|v| v.parse().ok()),
                cross_check: "passed",
            }),
            messages: self
                .rows
                .iter()
                .map(|row| JsonMessage {
                    id: row.case.id(),
                    name: row.case.label(),
                    bytes: row.bytes,
                    cross_check: if row.reference.is_some() {
                        "passed"
                    } else {
                        "skipped"
                    },
                    ours_decode_ns: row.ours_decode.median_ns,
                    ours_decode_mb_s: row.ours_decode_mb_s(),
                    ours_decode_allocs: row.ours_decode.allocs_per_op,
                    ref_decode_ns: row.reference.map(|(d, _)| d.median_ns),
                    decode_ratio: row.decode_ratio(),
                    decode_path: row.decode_path(),
                    ours_owned_decode_ns: row.ours_owned_decode.map(|m| m.median_ns),
                    ours_owned_decode_allocs: row
                        .ours_owned_decode
                        .and_then(|m| m.allocs_per_op),
                    owned_decode_ratio: row.owned_decode_ratio(),
                    ours_encode_ns: row.ours_encode.median_ns,
                    ours_encode_mb_s: row.ours_encode_mb_s(),
                    ours_encode_allocs: row.ours_encode.allocs_per_op,
                    ref_encode_ns: row.reference.map(|(_, e)| e.median_ns),
                    encode_ratio: row.encode_ratio(),
                })
                .collect(),
        };
        json::to_document(&document)
    }

    /// The human-readable table.
    pub fn to_table(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "codec benchmark ({} run): median of {} rounds of ~{} ms after a {} ms warm-up ({} ms for Java)\n",
            self.mode,
            self.settings.rounds,
            self.settings.round.as_millis(),
            self.settings.warmup.as_millis(),
            self.settings.java_warmup.as_millis()
        );
        out += &format!(
            "machine: {} cores, {}, {}/{}, load {}, Rust {} build\n",
            m.cores,
            m.cpu.as_deref().unwrap_or("unknown CPU"),
            m.os,
            m.arch,
            m.load_1m.map_or("unknown".into(), |l| format!("{l:.2}")),
            m.rust_profile
        );
        match &self.reference {
            Some(r) => {
                out += &format!(
                    "reference: zookeeper-jute 3.8 on Java {} ({}; GC {}); cross-check: byte-identical\n",
                    r.info("java_version").unwrap_or("?"),
                    r.info("vm").unwrap_or("?"),
                    r.info("gc").unwrap_or("?")
                );
            }
            None => out += "reference: skipped (--no-java)\n",
        }
        out += "\n";
        out += &format!(
            "{:<34} {:>6} | {:>9} {:>8} {:>7} {:>9} {:>6} | {:>9} {:>8} {:>7} {:>9} {:>6}\n",
            "message",
            "bytes",
            "decode ns",
            "MB/s",
            "allocs",
            "ref ns",
            "ratio",
            "encode ns",
            "MB/s",
            "allocs",
            "ref ns",
            "ratio"
        );
        out += &format!("{}\n", "-".repeat(34 + 7 + 3 + 43 + 3 + 43));
        let opt = |v: Option<f64>, precision: usize| {
            v.map_or("-".to_owned(), |v| format!("{v:.precision$}"))
        };
        for row in &self.rows {
            out += &format!(
                "{:<34} {:>6} | {:>9.1} {:>8.0} {:>7} {:>9} {:>6} | {:>9.1} {:>8.0} {:>7} {:>9} {:>6}\n",
                row.case.label(),
                row.bytes,
                row.ours_decode.median_ns,
                row.ours_decode_mb_s(),
                opt(row.ours_decode.allocs_per_op, 1),
                opt(row.reference.map(|(d, _)| d.median_ns), 1),
                opt(row.decode_ratio(), 2),
                row.ours_encode.median_ns,
                row.ours_encode_mb_s(),
                opt(row.ours_encode.allocs_per_op, 1),
                opt(row.reference.map(|(_, e)| e.median_ns), 1),
                opt(row.encode_ratio(), 2),
            );
            if let Some(owned) = row.ours_owned_decode {
                out += &format!(
                    "{:<34} {:>6} | {:>9.1} {:>8.0} {:>7} {:>9} {:>6} |\n",
                    "  owned decode (above: view)",
                    "",
                    owned.median_ns,
                    mb_per_s(row.bytes, owned.median_ns),
                    opt(owned.allocs_per_op, 1),
                    opt(row.reference.map(|(d, _)| d.median_ns), 1),
                    opt(row.owned_decode_ratio(), 2),
                );
            }
        }
        out += "\nns = median nanoseconds per message; MB/s = 10^6 bytes/s of our codec; \
                allocs = our heap allocations per message; encode = into a reused buffer, as \
                the client writes a request into its connection's write buffer; \
                ratio = ours / reference (below 1: we are faster); a message decoded as a \
                borrowed view (its real path) shows its owned decode on the line below.\n";
        if m.rust_profile == "debug" {
            out += "warning: a debug build; run with --release for meaningful figures.\n";
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(reference: bool) -> Report {
        let m = |median_ns| Measurement {
            median_ns,
            iters_per_round: 10,
            allocs_per_op: None,
        };
        let java = JavaReport {
            info: vec![
                ("java_version".into(), "17.0.15".into()),
                ("vm".into(), "OpenJDK".into()),
                ("max_heap_mb".into(), "6028".into()),
            ],
            ..JavaReport::default()
        };
        Report {
            mode: "quick",
            settings: Settings::QUICK,
            machine: Machine {
                cores: 2,
                cpu: None,
                load_1m: Some(1.25),
                os: "linux",
                arch: "x86_64",
                rust_profile: "release",
            },
            reference: reference.then_some(java),
            rows: vec![Row {
                case: CaseId::WatcherEvent,
                bytes: 53,
                ours_decode: m(50.0),
                ours_owned_decode: Some(m(80.0)),
                ours_encode: m(25.0),
                reference: reference.then_some((m(100.0), m(f64::NAN))),
            }],
        }
    }

    #[test]
    fn json_has_the_documented_shape() {
        assert_eq!(
            report(true).to_json(),
            r#"{
  "benchmark": "codec",
  "mode": "quick",
  "settings": {"warmup_ms": 30, "java_warmup_ms": 150, "rounds": 5, "round_ms": 10},
  "machine": {"cores": 2, "cpu": null, "load_1m": 1.250, "os": "linux", "arch": "x86_64", "rust_profile": "release"},
  "reference": {"serializer": "org.apache.jute.BinaryInputArchive/BinaryOutputArchive (ZooKeeper 3.8)", "java_version": "17.0.15", "vm": "OpenJDK", "gc": null, "max_heap_mb": 6028, "cross_check": "passed"},
  "messages": [
    {"id": "watcher_event", "name": "watcher event notification", "bytes": 53, "cross_check": "passed", "ours_decode_ns": 50.000, "ours_decode_mb_s": 1060.000, "ours_decode_allocs": null, "ref_decode_ns": 100.000, "decode_ratio": 0.500, "decode_path": "view", "ours_owned_decode_ns": 80.000, "ours_owned_decode_allocs": null, "owned_decode_ratio": 0.800, "ours_encode_ns": 25.000, "ours_encode_mb_s": 2120.000, "ours_encode_allocs": null, "ref_encode_ns": null, "encode_ratio": null}
  ]
}
"#
        );
    }

    #[test]
    fn without_java_the_reference_fields_are_null() {
        let value: serde_json::Value =
            serde_json::from_str(&report(false).to_json()).expect("valid JSON");
        assert!(value["reference"].is_null());
        let message = &value["messages"][0];
        assert_eq!(message["cross_check"], "skipped");
        for key in [
            "ref_decode_ns",
            "decode_ratio",
            "owned_decode_ratio",
            "ref_encode_ns",
            "encode_ratio",
        ] {
            assert!(message[key].is_null(), "{key}");
        }
        let table = report(false).to_table();
        assert!(table.contains("reference: skipped (--no-java)"), "{table}");
        assert!(
            table.contains(&format!("{:<34} {:>6} |", "watcher event notification", 53)),
            "{table}"
        );
    }
}
