//! What the lock latency benchmark reports: a [`Metric`] per kind of operation, the
//! [`ratios`] between metrics, and the targets that are not ratios.

use std::time::Duration;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::json;

/// One reported figure: latency percentiles of one kind of operation, or a ratio.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metric {
    /// The metric name (`raw_pair`, `lock_cycle`, ...).
    pub name: String,
    /// How many operations were measured.
    pub n: Option<u64>,
    /// Median latency, microseconds.
    pub p50_us: Option<f64>,
    /// 90th percentile, microseconds.
    pub p90_us: Option<f64>,
    /// 99th percentile, microseconds.
    pub p99_us: Option<f64>,
    /// Slowest operation, microseconds.
    pub max_us: Option<f64>,
    /// Throughput where it means something (pipelined and contended workloads, codec).
    pub ops_per_s: Option<f64>,
    /// Mutual-exclusion violations seen (contended lock only).
    pub violations: Option<u64>,
    /// Packets the server(s) received per operation (`mntr` zk_packets_received).
    pub server_packets_per_op: Option<f64>,
    /// Transactions committed per operation (zxid difference from `srvr`).
    pub server_txns_per_op: Option<f64>,
    /// Client process CPU (user + system) per operation, microseconds.
    pub client_cpu_us_per_op: Option<f64>,
    /// Further keys of the JSON line, in order.
    pub extra: Vec<(&'static str, Value)>,
    /// The sorted samples in microseconds (for the plot; not printed).
    pub samples_us: Vec<f64>,
    /// The reference client that measured it (`java`, `curator`; the JSON's `client`), or
    /// `None` for ours (`rzk`).
    pub reference: Option<&'static str>,
}

impl Metric {
    /// A metric with percentiles over `samples` (nearest rank).
    pub fn from_samples(name: &str, samples: &[Duration]) -> Metric {
        Metric::from_samples_us(
            name,
            samples.iter().map(|d| d.as_secs_f64() * 1e6).collect(),
        )
    }

    /// A metric with percentiles over `us`, samples in microseconds (nearest rank).
    pub fn from_samples_us(name: &str, mut us: Vec<f64>) -> Metric {
        us.sort_by(f64::total_cmp);
        let pct = |p: f64| -> Option<f64> {
            if us.is_empty() {
                return None;
            }
            let rank = (p * us.len() as f64).ceil() as usize;
            Some(us[rank.clamp(1, us.len()) - 1])
        };
        Metric {
            name: name.to_owned(),
            n: Some(us.len() as u64),
            p50_us: pct(0.50),
            p90_us: pct(0.90),
            p99_us: pct(0.99),
            max_us: us.last().copied(),
            samples_us: us,
            ..Metric::default()
        }
    }

    /// One JSON object (one line, no newline; its keys are listed on the `Serialize` impl).
    pub fn to_json(&self) -> String {
        json::to_line(self)
    }

    /// The number `key` of [`Metric::extra`], if there is one.
    pub(super) fn extra_num(&self, key: &str) -> Option<f64> {
        self.extra_value(key).and_then(Value::as_f64)
    }

    /// The value `key` of [`Metric::extra`].
    pub(super) fn extra_value(&self, key: &str) -> Option<&Value> {
        self.extra.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

/// One JSON line: `client` (`"rzk"`, or the reference client's name), `metric`, `n`, `p50_us`, `p90_us`, `p99_us`, `max_us`,
/// `ops_per_s` and `client_cpu_us_per_op` (`null` when absent), then `violations`,
/// `server_packets_per_op` and `server_txns_per_op` when present, then [`Metric::extra`] in
/// order (`docs/performance.md`).
impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("client", self.reference.unwrap_or("rzk"))?;
        map.serialize_entry("metric", &self.name)?;
        map.serialize_entry("n", &self.n)?;
        map.serialize_entry("p50_us", &self.p50_us)?;
        map.serialize_entry("p90_us", &self.p90_us)?;
        map.serialize_entry("p99_us", &self.p99_us)?;
        map.serialize_entry("max_us", &self.max_us)?;
        map.serialize_entry("ops_per_s", &self.ops_per_s)?;
        map.serialize_entry("client_cpu_us_per_op", &self.client_cpu_us_per_op)?;
        if let Some(v) = self.violations {
            map.serialize_entry("violations", &v)?;
        }
        if let Some(p) = self.server_packets_per_op {
            map.serialize_entry("server_packets_per_op", &p)?;
        }
        if let Some(t) = self.server_txns_per_op {
            map.serialize_entry("server_txns_per_op", &t)?;
        }
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// A ratio between two metrics, most with a target set by the issue.
#[derive(Debug, Clone, Copy)]
struct RatioSpec {
    name: &'static str,
    numerator: (&'static str, Field),
    denominator: (&'static str, Field),
    /// `Some((limit, true))`: at most; `Some((limit, false))`: at least; `None`: a figure to
    /// read beside the others, with no target.
    target: Option<(f64, bool)>,
}

#[derive(Debug, Clone, Copy)]
enum Field {
    P50,
    OpsPerS,
}

const RATIOS: [RatioSpec; 19] = [
    RatioSpec {
        name: "lock_cycle_p50/raw_pair_p50",
        numerator: ("lock_cycle", Field::P50),
        denominator: ("raw_pair", Field::P50),
        target: Some((1.10, true)),
    },
    RatioSpec {
        name: "handoff_p50/raw_delete_p50",
        numerator: ("lock_contended", Field::P50),
        denominator: ("raw_delete", Field::P50),
        target: None,
    },
    // The handoff against the delete round trip measured in the same contended run: how
    // much of the handoff is the delete itself under that load (the waiter acting on the
    // notification alone puts it near 1), whatever the load does to the delete.
    RatioSpec {
        name: "handoff_p50/contended_release_p50",
        numerator: ("lock_contended", Field::P50),
        denominator: ("lock_contended_release", Field::P50),
        target: Some((1.10, true)),
    },
    // The failover against its limit measured in the same rounds: a plain watcher (a session
    // with nothing else to do) seeing the leader's node gone (`election.rs`).
    RatioSpec {
        name: "failover_p50/limit_p50",
        numerator: ("election_failover", Field::P50),
        denominator: ("election_failover_limit", Field::P50),
        target: Some((1.2, true)),
    },
    RatioSpec {
        name: "crash_failover_p50/crash_limit_p50",
        numerator: ("election_crash", Field::P50),
        denominator: ("election_crash_limit", Field::P50),
        target: Some((1.2, true)),
    },
    // The limit itself (the closeSession's commit and one notification) against a raw delete
    // (a commit and its reply).
    RatioSpec {
        name: "failover_limit_p50/raw_delete_p50",
        numerator: ("election_failover_limit", Field::P50),
        denominator: ("raw_delete", Field::P50),
        target: None,
    },
    RatioSpec {
        name: "pipelined_get_ops/raw_get_ops",
        numerator: ("pipelined_get", Field::OpsPerS),
        denominator: ("raw_get", Field::OpsPerS),
        target: Some((4.0, false)),
    },
    // `--tls`: the cost of encryption, each workload over TLS against itself in plaintext,
    // measured in the same run against the same server.
    RatioSpec {
        name: "raw_pair_p50@tls/raw_pair_p50",
        numerator: ("raw_pair@tls", Field::P50),
        denominator: ("raw_pair", Field::P50),
        target: None,
    },
    RatioSpec {
        name: "lock_cycle_p50@tls/lock_cycle_p50",
        numerator: ("lock_cycle@tls", Field::P50),
        denominator: ("lock_cycle", Field::P50),
        target: Some((1.15, true)),
    },
    RatioSpec {
        name: "handoff_p50@tls/handoff_p50",
        numerator: ("lock_contended@tls", Field::P50),
        denominator: ("lock_contended", Field::P50),
        target: None,
    },
    RatioSpec {
        name: "pipelined_get_ops@tls/pipelined_get_ops",
        numerator: ("pipelined_get@tls", Field::OpsPerS),
        denominator: ("pipelined_get", Field::OpsPerS),
        target: Some((0.70, false)),
    },
    // `--compare`: ours against the reference clients, each block's two sides measured one
    // right after the other against the same server.
    RatioSpec {
        name: "raw_create_p50/raw_create_p50@java",
        numerator: ("raw_create", Field::P50),
        denominator: ("raw_create@java", Field::P50),
        target: Some((1.0, true)),
    },
    RatioSpec {
        name: "raw_delete_p50/raw_delete_p50@java",
        numerator: ("raw_delete", Field::P50),
        denominator: ("raw_delete@java", Field::P50),
        target: Some((1.0, true)),
    },
    RatioSpec {
        name: "raw_get_p50/raw_get_p50@java",
        numerator: ("raw_get", Field::P50),
        denominator: ("raw_get@java", Field::P50),
        target: Some((1.0, true)),
    },
    RatioSpec {
        name: "pipelined_get_ops/pipelined_get_ops@java",
        numerator: ("pipelined_get", Field::OpsPerS),
        denominator: ("pipelined_get@java", Field::OpsPerS),
        target: Some((2.5, false)),
    },
    RatioSpec {
        name: "lock_cycle_p50/lock_cycle_p50@curator",
        numerator: ("lock_cycle", Field::P50),
        denominator: ("lock_cycle@curator", Field::P50),
        target: Some((0.5, true)),
    },
    RatioSpec {
        name: "handoff_p50/handoff_p50@curator",
        numerator: ("lock_contended", Field::P50),
        denominator: ("lock_contended@curator", Field::P50),
        target: Some((0.5, true)),
    },
    RatioSpec {
        name: "contended_ops/contended_ops@curator",
        numerator: ("lock_contended", Field::OpsPerS),
        denominator: ("lock_contended@curator", Field::OpsPerS),
        target: Some((3.0, false)),
    },
    RatioSpec {
        name: "failover_p50/failover_p50@curator",
        numerator: ("election_failover", Field::P50),
        denominator: ("election_failover@curator", Field::P50),
        target: Some((0.25, true)),
    },
];

/// The ratios between metrics (as metrics named like `lock_cycle_p50/raw_pair_p50` with the
/// keys `ratio`, `target` and `target_met`), for those whose both sides were measured.
///
/// `blocks` holds each block's metrics when the run was measured in blocks (see
/// `blocks.rs`; empty or one block otherwise): a ratio is then the median of its per-block
/// ratios (each side of a block measured next to the other), with `ratio_spread` (the
/// smallest and largest block's) and `pooled_ratio` (between the pooled metrics) beside it,
/// and its target is judged on that median.
pub fn ratios(metrics: &[Metric], blocks: &[Vec<Metric>]) -> Vec<Metric> {
    let find = |metrics: &[Metric], (name, field): (&str, Field)| {
        let m = metrics.iter().find(|m| m.name == name)?;
        match field {
            Field::P50 => m.p50_us,
            Field::OpsPerS => m.ops_per_s,
        }
    };
    RATIOS
        .iter()
        .filter_map(|spec| {
            let of = |metrics: &[Metric]| {
                Some(find(metrics, spec.numerator)? / find(metrics, spec.denominator)?)
            };
            let pooled = of(metrics)?;
            let per_block: Vec<f64> = if blocks.len() > 1 {
                blocks.iter().filter_map(|b| of(b)).collect()
            } else {
                Vec::new()
            };
            let median = super::blocks::median(per_block.clone());
            let ratio = median.unwrap_or(pooled);
            let (target, met) = match spec.target {
                Some((limit, at_most)) => {
                    let met = if at_most {
                        ratio <= limit
                    } else {
                        ratio >= limit
                    };
                    let bound = if at_most { "<=" } else { ">=" };
                    (Value::from(format!("{bound} {limit}")), Value::Bool(met))
                }
                None => (Value::Null, Value::Null),
            };
            let mut extra = vec![
                // NaN or infinity: null (and no ratio row in the table).
                ("ratio", Value::from(ratio)),
                ("target", target),
                ("target_met", met),
            ];
            if median.is_some() {
                let (lo, hi) = spread(&per_block);
                extra.push(("ratio_spread", Value::from(vec![lo, hi])));
                extra.push(("pooled_ratio", Value::from(pooled)));
                extra.push(("blocks", Value::from(per_block.len())));
            }
            Some(Metric {
                name: spec.name.to_owned(),
                extra,
                ..Metric::default()
            })
        })
        .collect()
}

/// `--compare`: each of our metrics that a reference client measured too (`raw_pair` and
/// `raw_pair@java`) gets the keys `ref_client` (`java`, `curator`), `ratio_to_ref` (our p50
/// over the reference's: below 1, ours is faster) and `ratio_spread` (`[smallest, largest]`).
/// Measured in blocks (`blocks`, as for [`ratios`]), the ratio is the median of the per-block
/// ratios and the spread theirs; else both come from the pooled metrics.
pub fn ratios_to_ref(metrics: &mut [Metric], blocks: &[Vec<Metric>]) {
    let p50 = |metrics: &[Metric], name: &str| {
        metrics
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.p50_us)
    };
    let pooled: Vec<Metric> = metrics.to_vec();
    for m in metrics.iter_mut().filter(|m| m.reference.is_none()) {
        let Some(reference) = pooled.iter().find(|r| {
            r.reference
                .is_some_and(|client| r.name == format!("{}@{client}", m.name))
        }) else {
            continue;
        };
        let of = |metrics: &[Metric]| Some(p50(metrics, &m.name)? / p50(metrics, &reference.name)?);
        let per_block: Vec<f64> = if blocks.len() > 1 {
            blocks
                .iter()
                .filter_map(|b| of(b))
                .filter(|r| r.is_finite())
                .collect()
        } else {
            of(&pooled).into_iter().filter(|r| r.is_finite()).collect()
        };
        let Some(ratio) = super::blocks::median(per_block.clone()) else {
            continue;
        };
        let (lo, hi) = spread(&per_block);
        m.extra
            .push(("ref_client", Value::from(reference.reference)));
        m.extra.push(("ratio_to_ref", Value::from(ratio)));
        m.extra.push(("ratio_spread", Value::from(vec![lo, hi])));
    }
}

/// The smallest and largest of `values`.
fn spread(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        })
}

/// The targets of the issue that are not ratios, checked against `metrics`: `(description,
/// measured, met)`.
pub(super) fn other_targets(metrics: &[Metric]) -> Vec<(String, f64, bool)> {
    let mut out = Vec::new();
    let get = |name: &str| metrics.iter().find(|m| m.name == name);
    // An earlier issue's 3 (create, listing, delete), plus the `sync` of the quorum check that
    // a guard starts at its grant (docs/client.md, "The quorum check"): a cut-off follower must
    // not let a holder go on believing it holds.
    if let Some(p) = get("lock_cycle").and_then(|m| m.server_packets_per_op) {
        out.push((
            "packets per uncontended lock cycle <= 3 + 1 quorum-check sync".into(),
            p,
            p <= 4.0,
        ));
    }
    // Issue 28's target (an earlier issue's was 2 µs).
    if let Some(c) = get("pipelined_get").and_then(|m| m.client_cpu_us_per_op) {
        out.push(("pipelined_get client CPU <= 1.5 us/op".into(), c, c <= 1.5));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metric(name: &str, p50: f64) -> Metric {
        Metric {
            name: name.to_owned(),
            p50_us: Some(p50),
            ..Metric::default()
        }
    }

    #[test]
    fn ratios_carry_their_target_or_none() {
        let metrics = [
            metric("raw_delete", 100.0),
            metric("lock_contended", 300.0),
            metric("lock_contended_release", 250.0),
        ];
        let out = ratios(&metrics, &[]);
        let find = |name: &str| {
            out.iter()
                .find(|m| m.name == name)
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let handoff = find("handoff_p50/raw_delete_p50");
        assert_eq!(handoff.extra_num("ratio"), Some(3.0));
        assert_eq!(handoff.extra_value("target"), Some(&Value::Null));
        assert_eq!(handoff.extra_value("target_met"), Some(&Value::Null));
        let same_run = find("handoff_p50/contended_release_p50");
        assert_eq!(same_run.extra_num("ratio"), Some(1.2));
        assert_eq!(same_run.extra_value("target"), Some(&Value::from("<= 1.1")));
        assert_eq!(
            same_run.extra_value("target_met"),
            Some(&Value::Bool(false))
        );
        // Ratios whose metrics were not measured are left out.
        assert_eq!(out.len(), 2);
        assert_eq!(
            same_run.to_json(),
            "{\"client\":\"rzk\",\"metric\":\"handoff_p50/contended_release_p50\",\"n\":null,\
             \"p50_us\":null,\"p90_us\":null,\"p99_us\":null,\"max_us\":null,\"ops_per_s\":null,\
             \"client_cpu_us_per_op\":null,\"ratio\":1.200,\"target\":\"<= 1.1\",\"target_met\":false}"
        );
    }

    #[test]
    fn failovers_are_judged_against_their_limits_of_the_same_run() {
        let metrics = [
            metric("raw_delete", 100.0),
            metric("election_failover", 600.0),
            metric("election_failover_limit", 500.0),
            metric("election_crash", 4_100_000.0),
            metric("election_crash_limit", 4_000_000.0),
        ];
        let out = ratios(&metrics, &[]);
        let find = |name: &str| {
            out.iter()
                .find(|m| m.name == name)
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let close = find("failover_p50/limit_p50");
        assert_eq!(close.extra_num("ratio"), Some(1.2));
        assert_eq!(close.extra_value("target"), Some(&Value::from("<= 1.2")));
        assert_eq!(close.extra_value("target_met"), Some(&Value::Bool(true)));
        let crash = find("crash_failover_p50/crash_limit_p50");
        assert_eq!(crash.extra_num("ratio"), Some(1.025));
        assert_eq!(
            find("failover_limit_p50/raw_delete_p50").extra_num("ratio"),
            Some(5.0)
        );
    }

    #[test]
    fn ratios_to_the_reference_are_the_median_of_the_blocks() {
        let ours = |p50: f64| metric("raw_pair", p50);
        let java = |p50: f64| Metric {
            reference: Some("java"),
            ..metric("raw_pair@java", p50)
        };
        let blocks = [
            vec![ours(100.0), java(200.0)],
            vec![ours(300.0), java(200.0)],
            vec![ours(150.0), java(200.0)],
        ];
        let mut pooled = vec![ours(150.0), java(200.0), metric("raw_get", 50.0)];
        ratios_to_ref(&mut pooled, &blocks);
        assert_eq!(
            pooled[0].extra_value("ref_client"),
            Some(&Value::from("java"))
        );
        assert_eq!(pooled[0].extra_num("ratio_to_ref"), Some(0.75));
        assert_eq!(
            pooled[0].extra_value("ratio_spread"),
            Some(&Value::from(vec![0.5, 1.5]))
        );
        // The reference's own line and a metric with no reference get nothing.
        assert_eq!(pooled[1].extra_value("ratio_to_ref"), None);
        assert_eq!(pooled[2].extra_value("ratio_to_ref"), None);
        let v: Value = serde_json::from_str(&pooled[1].to_json()).expect("valid JSON");
        assert_eq!(v["client"], "java");
        // One block: the pooled metrics' ratio.
        let mut one = vec![ours(100.0), java(200.0)];
        ratios_to_ref(&mut one, &[]);
        assert_eq!(one[0].extra_num("ratio_to_ref"), Some(0.5));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        let m = Metric::from_samples("x", &samples);
        assert_eq!(m.p50_us, Some(50.0));
        assert_eq!(m.p90_us, Some(90.0));
        assert_eq!(m.p99_us, Some(99.0));
        assert_eq!(m.max_us, Some(100.0));
        let v: Value = serde_json::from_str(&m.to_json()).expect("valid JSON");
        assert_eq!(v["client"], "rzk");
        assert_eq!(v["n"], 100);
    }

    #[test]
    fn optional_keys_and_extras_follow_the_fixed_ones() {
        let m = Metric {
            name: "lock_contended".into(),
            n: Some(3),
            violations: Some(0),
            server_packets_per_op: Some(4.5),
            extra: vec![
                ("sessions", Value::from(8_usize)),
                ("in_flight", Value::from(32.0)),
            ],
            ..Metric::default()
        };
        assert_eq!(
            m.to_json(),
            "{\"client\":\"rzk\",\"metric\":\"lock_contended\",\"n\":3,\"p50_us\":null,\
             \"p90_us\":null,\"p99_us\":null,\"max_us\":null,\"ops_per_s\":null,\
             \"client_cpu_us_per_op\":null,\"violations\":0,\"server_packets_per_op\":4.500,\
             \"sessions\":8,\"in_flight\":32.000}"
        );
    }
}
