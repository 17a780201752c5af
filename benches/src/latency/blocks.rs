//! Measuring in blocks: each workload's counts split into blocks run one after the other
//! (with `--tls`, alternating plaintext and TLS), so that drift during the run (the server's
//! JIT warming up, the machine's other load) hits every side alike. A block's metrics are
//! pooled into one metric per name, and a ratio is judged on the median of its per-block
//! values ([`super::metric::ratios`]).

use serde_json::Value;

use super::Metric;

/// One metric per name from the same metric of every block (`blocks[i]`: block `i`'s list):
/// percentiles over the pooled samples, `n` and `violations` summed, throughput the median
/// of the blocks', per-operation costs (client CPU, server packets and transactions) their
/// mean, the other keys from the first block. Names keep the first block's order.
pub(crate) fn pool(blocks: &[Vec<Metric>]) -> Vec<Metric> {
    let Some(first) = blocks.first() else {
        return Vec::new();
    };
    if blocks.len() == 1 {
        return first.clone();
    }
    first
        .iter()
        .map(|m| {
            let same: Vec<&Metric> = blocks
                .iter()
                .filter_map(|block| block.iter().find(|x| x.name == m.name))
                .collect();
            pool_one(&same)
        })
        .collect()
}

fn pool_one(same: &[&Metric]) -> Metric {
    let first = same[0];
    let samples: Vec<f64> = same
        .iter()
        .flat_map(|m| m.samples_us.iter().copied())
        .collect();
    let mut pooled = if samples.is_empty() {
        Metric {
            name: first.name.clone(),
            ..Metric::default()
        }
    } else {
        Metric::from_samples_us(&first.name, samples)
    };
    pooled.n = sum(same.iter().map(|m| m.n));
    pooled.violations = sum(same.iter().map(|m| m.violations));
    pooled.ops_per_s = median(same.iter().filter_map(|m| m.ops_per_s).collect());
    pooled.client_cpu_us_per_op = mean(same.iter().filter_map(|m| m.client_cpu_us_per_op));
    pooled.server_packets_per_op = mean(same.iter().filter_map(|m| m.server_packets_per_op));
    pooled.server_txns_per_op = mean(same.iter().filter_map(|m| m.server_txns_per_op));
    pooled.extra = first.extra.clone();
    // The request breakdown's figures: the mean over the blocks, not the first block's.
    for (key, value) in super::breakdown::pool(same) {
        if let Some(slot) = pooled.extra.iter_mut().find(|(k, _)| *k == key) {
            slot.1 = value;
        }
    }
    pooled.extra.push(("blocks", Value::from(same.len())));
    pooled
}

fn sum(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values.flatten().reduce(|a, b| a + b)
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let values: Vec<f64> = values.collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The median (the mean of the middle two for an even count); `None` when empty.
pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(p50s: &[(&str, f64)], ops: Option<f64>) -> Vec<Metric> {
        p50s.iter()
            .map(|&(name, us)| Metric {
                n: Some(2),
                ops_per_s: ops,
                client_cpu_us_per_op: Some(us / 10.0),
                ..Metric::from_samples_us(name, vec![us, us + 1.0])
            })
            .collect()
    }

    #[test]
    fn pooled_percentiles_come_from_every_block_and_throughput_is_the_median() {
        let blocks = [
            block(&[("a", 100.0), ("b", 10.0)], Some(1.0)),
            block(&[("a", 300.0), ("b", 30.0)], Some(5.0)),
            block(&[("a", 200.0), ("b", 20.0)], Some(2.0)),
        ];
        let pooled = pool(&blocks);
        assert_eq!(
            pooled.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let a = &pooled[0];
        assert_eq!(a.n, Some(6));
        assert_eq!(a.samples_us.len(), 6);
        assert_eq!(a.p50_us, Some(200.0));
        assert_eq!(a.max_us, Some(301.0));
        assert_eq!(a.ops_per_s, Some(2.0));
        assert_eq!(a.client_cpu_us_per_op, Some(20.0));
        assert_eq!(a.extra_num("blocks"), Some(3.0));
    }

    #[test]
    fn one_block_is_left_as_it_is() {
        let blocks = [block(&[("a", 100.0)], None)];
        let pooled = pool(&blocks);
        assert_eq!(pooled[0].extra_num("blocks"), None);
        assert_eq!(pooled[0].p50_us, Some(100.0));
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![f64::NAN]), None);
        assert_eq!(median(Vec::new()), None);
    }
}
