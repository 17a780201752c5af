//! The readable report of the lock latency benchmark.

use std::fmt::Write as _;

use serde_json::Value;

use super::metric::{Metric, other_targets};

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// The readable report: one row per metric, then the ratios and targets.
pub fn to_table(target: &str, metrics: &[Metric]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "lock_latency (client rzk) against {target}");
    let _ = writeln!(
        out,
        "{:<34} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>7} {:>6} {:>5} {:>7} {:>10} {:>11}",
        "metric",
        "n",
        "p50 us",
        "p90 us",
        "p99 us",
        "max us",
        "ops/s",
        "cpu us",
        "pkts",
        "txns",
        "viol",
        "vs Java",
        "vs Curator",
        "spread"
    );
    for m in metrics.iter().filter(|m| m.extra_num("ratio").is_none()) {
        let (vs_java, vs_curator, spread) = versus(m);
        let _ = writeln!(
            out,
            "{:<34} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>7} {:>6} {:>5} {:>7} {:>10} {:>11}",
            m.name,
            m.n.map_or("-".into(), |n| n.to_string()),
            cell(m.p50_us, if m.name.starts_with("codec_") { 3 } else { 1 }),
            cell(m.p90_us, 1),
            cell(m.p99_us, 1),
            cell(m.max_us, 1),
            cell(m.ops_per_s, 0),
            cell(m.client_cpu_us_per_op, 1),
            cell(m.server_packets_per_op, 3),
            cell(m.server_txns_per_op, 3),
            m.violations.map_or("-".into(), |v| v.to_string()),
            vs_java,
            vs_curator,
            spread,
        );
    }
    let _ = writeln!(
        out,
        "\ncpu us: client process CPU (user+system) per op; pkts: packets received by the \
         server(s) per op (mntr); txns: transactions committed per op (zxid); viol: \
         mutual-exclusion violations. lock_contended percentiles are the handoff latency. \
         Rows @java and @curator: the reference clients, measured in the same run in \
         alternating blocks; vs Java / vs Curator: our p50 over theirs, the median of the \
         per-block ratios (below 1: we are faster), spread: the smallest and largest block's. \
         codec p50 is the median time per op over rounds, vs Java its ratio to the Java \
         serializer."
    );
    out.push_str(&super::breakdown::table_section(metrics));
    out.push_str(&super::election::table_section(metrics));
    let ratio_rows: Vec<&Metric> = metrics
        .iter()
        .filter(|m| m.extra_num("ratio").is_some())
        .collect();
    let others = other_targets(metrics);
    if !ratio_rows.is_empty() || !others.is_empty() {
        let _ = writeln!(out, "\ntargets (figures, not tests):");
        for m in ratio_rows {
            let verdict = match (m.extra_value("target"), m.extra_value("target_met")) {
                (Some(Value::String(target)), Some(met)) => format!(
                    "target {target:<8} {}",
                    if met.as_bool() == Some(true) {
                        "met"
                    } else {
                        "MISSED"
                    }
                ),
                _ => "(no target)".to_owned(),
            };
            // Measured in blocks: the median's spread over the blocks.
            let spread = match m.extra_value("ratio_spread").and_then(Value::as_array) {
                Some(range) if range.len() == 2 => format!(
                    "  [{:.3}-{:.3} over {} blocks]",
                    range[0].as_f64().unwrap_or(f64::NAN),
                    range[1].as_f64().unwrap_or(f64::NAN),
                    m.extra_num("blocks").unwrap_or(f64::NAN)
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<40} {:>8.3}  {verdict}{spread}",
                m.name,
                m.extra_num("ratio").unwrap_or(f64::NAN),
            );
        }
        for (what, value, met) in others {
            let _ = writeln!(
                out,
                "  {:<49} {:>8.3}  {}",
                what,
                value,
                if met { "met" } else { "MISSED" }
            );
        }
    }
    out
}

/// The `vs Java`, `vs Curator` and `spread` cells of `m`.
fn versus(m: &Metric) -> (String, String, String) {
    let none = || "-".to_owned();
    if let Some(r) = m.extra_num("ratio_vs_reference") {
        // The codec's reference is the Java serializer, timed without blocks.
        return (format!("{r:.3}"), none(), none());
    }
    let Some(ratio) = m.extra_num("ratio_to_ref") else {
        return (none(), none(), none());
    };
    let spread = match m.extra_value("ratio_spread").and_then(Value::as_array) {
        Some(range) if range.len() == 2 => format!(
            "{:.2}-{:.2}",
            range[0].as_f64().unwrap_or(f64::NAN),
            range[1].as_f64().unwrap_or(f64::NAN)
        ),
        _ => none(),
    };
    let cell = format!("{ratio:.3}");
    match m.extra_value("ref_client").and_then(Value::as_str) {
        Some("curator") => (none(), cell, spread),
        _ => (cell, none(), spread),
    }
}

#[cfg(test)]
mod tests {
    use super::super::metric::ratios;
    use super::*;

    #[test]
    fn ratios_show_their_verdict_or_no_target() {
        let metric = |name: &str, p50: f64| Metric {
            name: name.to_owned(),
            p50_us: Some(p50),
            ..Metric::default()
        };
        let metrics = [
            metric("raw_delete", 100.0),
            metric("lock_contended", 300.0),
            metric("lock_contended_release", 250.0),
        ];
        let all: Vec<Metric> = metrics
            .iter()
            .cloned()
            .chain(ratios(&metrics, &[]))
            .collect();
        let table = to_table("test", &all);
        assert!(
            table.contains(
                "  handoff_p50/contended_release_p50           1.200  target <= 1.1   MISSED\n"
            ),
            "{table}"
        );
        assert!(
            table.contains("  handoff_p50/raw_delete_p50                  3.000  (no target)\n"),
            "{table}"
        );
        // Ratios are not rows of the metric table.
        assert!(!table.contains("\nhandoff_p50"), "{table}");
    }

    #[test]
    fn the_reference_ratio_goes_in_its_client_column() {
        let mut lock = Metric {
            name: "lock_cycle".to_owned(),
            p50_us: Some(200.0),
            ..Metric::default()
        };
        lock.extra.push(("ref_client", Value::from("curator")));
        lock.extra.push(("ratio_to_ref", Value::from(0.4)));
        lock.extra
            .push(("ratio_spread", Value::from(vec![0.35, 0.5])));
        let (java, curator, spread) = versus(&lock);
        assert_eq!((java.as_str(), curator.as_str()), ("-", "0.400"));
        assert_eq!(spread, "0.35-0.50");
        let table = to_table("test", &[lock]);
        assert!(table.contains("vs Java vs Curator"), "{table}");
    }
}
