//! Where a raw request's time goes: for `raw_create_delete` and `raw_get`, the client's own
//! time per request (zk-proto's `request-timing`: call → bytes written, bytes read → caller
//! returned) beside the server's (`mntr` request latency over the workload), and what is left
//! of the round trip: the network, the kernel and waiting for a core.
//!
//! The server's figure is the difference of its cumulative latency sum and count read before
//! and after the workload, rather than a reset (`srst`) before it: the same figure, and a
//! server given with `--connect` keeps its statistics.
//!
//! Keys added to the metric's JSON line (microseconds per request; `raw_pair` counts its
//! create and its delete as two requests): `round_trip_mean_us`, `client_send_mean_us`,
//! `client_send_p50_us`, `client_receive_mean_us`, `client_receive_p50_us`, `server_mean_us`
//! and `rest_mean_us` (round trip − client send − client receive − server). The decomposition
//! uses means, since means add up and medians do not. The server's figure is `null` against
//! more than one server (its counters are per server) or when `mntr` does not answer.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::Value;
use zk_proto::{Client, RequestTiming};

use super::Metric;
use super::workloads::Context;

/// The keys this module adds, in order.
pub(crate) const KEYS: [&str; 7] = [
    "round_trip_mean_us",
    "client_send_mean_us",
    "client_send_p50_us",
    "client_receive_mean_us",
    "client_receive_p50_us",
    "server_mean_us",
    "rest_mean_us",
];

/// Which of the server's request latencies to read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ServerSide {
    /// `zk_sum_readlatency` / `zk_cnt_readlatency`.
    Reads,
    /// `zk_sum_updatelatency` / `zk_cnt_updatelatency`.
    Updates,
}

impl ServerSide {
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            ServerSide::Reads => ("zk_sum_readlatency", "zk_cnt_readlatency"),
            ServerSide::Updates => ("zk_sum_updatelatency", "zk_cnt_updatelatency"),
        }
    }
}

/// The start of a timed stretch: the server's latency sum and count so far, the client's
/// timings so far.
pub(crate) struct Breakdown {
    client: RequestTiming,
    server: Option<(f64, f64)>,
    side: ServerSide,
}

impl Breakdown {
    /// Takes the server's latency sum and count and the client's timings so far.
    pub(crate) fn start(ctx: &Context, client: &Client, side: ServerSide) -> Breakdown {
        Breakdown {
            client: client.request_timing(),
            server: server_latency(ctx, side),
            side,
        }
    }

    /// Adds the keys to `metric` for `round_trip_us`, the requests' round trips (µs) measured
    /// since [`start`](Self::start).
    pub(crate) fn finish(
        self,
        ctx: &Context,
        client: &Client,
        round_trip_us: &[f64],
        metric: &mut Metric,
    ) {
        let timing = client.request_timing().since(&self.client);
        let server =
            self.server
                .zip(server_latency(ctx, self.side))
                .and_then(|((sum0, n0), (sum1, n1))| {
                    // Milliseconds summed over requests, to µs per request.
                    (n1 > n0).then(|| (sum1 - sum0) * 1e3 / (n1 - n0))
                });
        let round_trip = mean(round_trip_us);
        let us = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e6);
        let send = us(timing.send.mean());
        let receive = us(timing.receive.mean());
        let rest = match (round_trip, send, receive, server) {
            (Some(r), Some(s), Some(c), Some(v)) => Some(r - s - c - v),
            _ => None,
        };
        let values = [
            round_trip,
            send,
            us(timing.send.percentile(0.5)),
            receive,
            us(timing.receive.percentile(0.5)),
            server,
            rest,
        ];
        for (key, value) in KEYS.into_iter().zip(values) {
            metric.extra.push((key, Value::from(value)));
        }
    }
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The server's request latency so far, `(sum in ms, count)`, from `mntr`: whole
/// milliseconds per request (ZooKeeper stamps requests with a millisecond clock, so over many
/// requests the mean is right while each one counts 0 or 1). `None` against more than one
/// server (each counts its own) or when `mntr` does not answer.
fn server_latency(ctx: &Context, side: ServerSide) -> Option<(f64, f64)> {
    let [addr] = ctx.addrs[..] else {
        return None;
    };
    let answer = zk_testkit::four_letter(addr, "mntr", Duration::from_secs(5)).ok()?;
    let (sum_key, count_key) = side.keys();
    let value = |key: &str| {
        answer.lines().find_map(|l| {
            let (k, v) = l.split_once('\t')?;
            (k.trim() == key).then(|| v.trim().parse::<f64>().ok())?
        })
    };
    Some((value(sum_key)?, value(count_key)?))
}

/// The server's update latency so far, `(sum in ms, count)` (as [`server_latency`]): read
/// around a failover round, the closeSession's.
pub(crate) fn server_update_latency(ctx: &Context) -> Option<(f64, f64)> {
    server_latency(ctx, ServerSide::Updates)
}

/// Pooled over blocks: the mean of each key's per-block values.
pub(crate) fn pool(same: &[&Metric]) -> Vec<(&'static str, Value)> {
    KEYS.into_iter()
        .filter(|key| same.iter().any(|m| m.extra_value(key).is_some()))
        .map(|key| {
            let values: Vec<f64> = same.iter().filter_map(|m| m.extra_num(key)).collect();
            (key, Value::from(mean(&values)))
        })
        .collect()
}

/// The table's section: one row per metric that has the keys; empty when none has.
pub(crate) fn table_section(metrics: &[Metric]) -> String {
    let rows: Vec<&Metric> = metrics
        .iter()
        .filter(|m| m.extra_value(KEYS[0]).is_some())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nwhere a raw request's time goes (mean us per request; p50 in brackets):"
    );
    let _ = writeln!(
        out,
        "  {:<18} {:>10} {:>17} {:>17} {:>12} {:>9}",
        "metric", "round trip", "client send", "client receive", "server mntr", "rest"
    );
    let cell = |m: &Metric, key: &str| {
        m.extra_num(key)
            .map_or("-".to_owned(), |v| format!("{v:.1}"))
    };
    for m in rows {
        let with_p50 = |mean: &str, p50: &str| format!("{} [{}]", cell(m, mean), cell(m, p50));
        let _ = writeln!(
            out,
            "  {:<18} {:>10} {:>17} {:>17} {:>12} {:>9}",
            m.name,
            cell(m, "round_trip_mean_us"),
            with_p50("client_send_mean_us", "client_send_p50_us"),
            with_p50("client_receive_mean_us", "client_receive_p50_us"),
            cell(m, "server_mean_us"),
            cell(m, "rest_mean_us"),
        );
    }
    let _ = writeln!(
        out,
        "  client send: call -> bytes written; client receive: bytes read -> caller returned; \
         server: mntr request latency; rest: network, kernel, waiting for a core. \
         raw_pair per request (create and delete)."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_keys_are_the_mean_of_the_blocks_and_the_table_shows_them() {
        let block = |send: f64| {
            let mut m = Metric::from_samples_us("raw_get", vec![50.0]);
            for key in KEYS {
                m.extra.push((key, Value::from(send)));
            }
            m
        };
        let (a, b) = (block(4.0), block(6.0));
        let pooled = pool(&[&a, &b]);
        assert_eq!(pooled.len(), KEYS.len());
        assert_eq!(pooled[1], ("client_send_mean_us", Value::from(5.0)));
        let mut m = Metric::from_samples_us("raw_get", vec![50.0]);
        m.extra = pooled;
        let table = table_section(&[m]);
        assert!(table.contains("5.0 [5.0]"), "{table}");
        assert_eq!(table_section(&[Metric::default()]), "");
    }
}
