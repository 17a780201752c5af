//! Measuring in blocks: each workload's counts split into blocks run one after the other, and
//! in each block every side of the comparison (ours; ours over TLS with `--tls`; the reference
//! clients with `--compare`) runs a workload right after the other sides ran it
//! ([`run_interleaved`]), so that drift during the run (the server's JIT warming up, the
//! machine's other load) hits every side alike. A block's metrics are pooled into one metric
//! per name ([`pool`]), and a ratio is judged on the median of its per-block values
//! ([`super::metric::ratios`], [`super::metric::ratios_to_ref`]).

use serde_json::Value;
use tokio::runtime::Runtime;

use super::reference::{RefClient, RefProcess};
use super::workloads::{self, Context};
use super::{BoxError, Metric, Workload};

/// One side of the comparison.
#[derive(Debug)]
pub(crate) enum Side {
    /// Our client, its metric names ending with `suffix` (`""`, `"@tls"`).
    Ours {
        /// Where and how much.
        ctx: Context,
        /// The names' suffix.
        suffix: &'static str,
    },
    /// The reference program, for the workloads of `clients` ([`RefClient::for_workload`]).
    Reference {
        /// Where and how much; its base node is created once for the whole run.
        ctx: Context,
        /// The running program.
        process: RefProcess,
        /// The clients it compares.
        clients: Vec<RefClient>,
    },
}

impl Side {
    fn measures(&self, w: Workload) -> bool {
        match self {
            Side::Ours { .. } => true,
            Side::Reference { clients, .. } => {
                RefClient::for_workload(w).is_some_and(|c| clients.contains(&c))
            }
        }
    }

    fn run(&mut self, runtime: &Runtime, w: Workload) -> Result<Vec<Metric>, BoxError> {
        match self {
            Side::Ours { ctx, suffix } => {
                let mut measured = runtime.block_on(workloads::run_all(ctx, &[w]))?;
                for m in &mut measured {
                    m.name.push_str(suffix);
                }
                Ok(measured)
            }
            Side::Reference { ctx, process, .. } => {
                let client = RefClient::for_workload(w).ok_or("no reference client")?;
                let measured = process.run(ctx, w, client)?;
                if ctx.progress {
                    eprintln!("  {:<20} done with {}", w.name(), client.name());
                }
                Ok(measured)
            }
        }
    }
}

/// The order of block `block`'s workloads: `raw_create_delete` and `lock_uncontended` first,
/// one right after the other, the first of them in turns (raw first in even blocks, the lock
/// in odd ones), so that the raw pair and the lock cycle that the lock is judged against are
/// measured side by side; then the others in report order.
pub(crate) fn block_order(workloads: &[Workload], block: usize) -> Vec<Workload> {
    let mut pair = [Workload::RawCreateDelete, Workload::LockUncontended];
    if block % 2 == 1 {
        pair.reverse();
    }
    let first = pair.into_iter().filter(|w| workloads.contains(w));
    let rest = workloads.iter().copied().filter(|w| !pair.contains(w));
    first.chain(rest).collect()
}

/// Runs `blocks` blocks of `workloads` on every side: in each block, each workload in
/// [`block_order`], run by every side that measures it, one right after the other, the sides
/// in turns (in order in even blocks, reversed in odd ones). Returns, per side, its metrics
/// per block in report order (`[side][block]`).
///
/// # Errors
///
/// The first workload that fails.
pub(crate) fn run_interleaved(
    runtime: &Runtime,
    sides: &mut [Side],
    workloads: &[Workload],
    blocks: usize,
    progress: bool,
) -> Result<Vec<Vec<Vec<Metric>>>, BoxError> {
    for side in sides.iter() {
        if let Side::Reference { ctx, .. } = side {
            runtime.block_on(workloads::create_base(ctx))?;
        }
    }
    let result = run_blocks(runtime, sides, workloads, blocks, progress);
    for side in sides.iter() {
        if let Side::Reference { ctx, .. } = side {
            runtime.block_on(workloads::remove_base(ctx));
        }
    }
    result
}

fn run_blocks(
    runtime: &Runtime,
    sides: &mut [Side],
    workloads: &[Workload],
    blocks: usize,
    progress: bool,
) -> Result<Vec<Vec<Vec<Metric>>>, BoxError> {
    // `[block][side]`: each side's metrics of the block, per workload.
    let mut measured: Vec<Vec<Block>> = Vec::with_capacity(blocks);
    for block in 0..blocks {
        if blocks > 1 && progress {
            eprintln!("lock_latency: block {} of {blocks}", block + 1);
        }
        let mut this: Vec<Block> = vec![Vec::new(); sides.len()];
        for w in block_order(workloads, block) {
            let mut order: Vec<usize> = (0..sides.len()).collect();
            if block % 2 == 1 {
                order.reverse();
            }
            for i in order {
                if sides[i].measures(w) {
                    let metrics = sides[i].run(runtime, w)?;
                    this[i].push((w, metrics));
                }
            }
        }
        measured.push(this);
    }
    let report_index = |w: &Workload| Workload::ALL.iter().position(|x| x == w);
    let in_report_order = |mut block: Block| -> Vec<Metric> {
        block.sort_by_key(|(w, _)| report_index(w));
        block.into_iter().flat_map(|(_, m)| m).collect()
    };
    let mut per_side: Vec<Vec<Vec<Metric>>> = vec![Vec::with_capacity(blocks); sides.len()];
    for block in measured {
        for (side, metrics) in per_side.iter_mut().zip(block) {
            side.push(in_report_order(metrics));
        }
    }
    Ok(per_side)
}

/// One side's metrics of one block, per workload in the order they ran.
type Block = Vec<(Workload, Vec<Metric>)>;

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
    pooled.reference = first.reference;
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
        assert_eq!(a.reference, None);
        let java: Vec<Vec<Metric>> = blocks
            .iter()
            .map(|b| {
                b.iter()
                    .map(|m| Metric {
                        reference: Some("java"),
                        ..m.clone()
                    })
                    .collect()
            })
            .collect();
        assert_eq!(pool(&java)[0].reference, Some("java"));
    }

    #[test]
    fn one_block_is_left_as_it_is() {
        let blocks = [block(&[("a", 100.0)], None)];
        let pooled = pool(&blocks);
        assert_eq!(pooled[0].extra_num("blocks"), None);
        assert_eq!(pooled[0].p50_us, Some(100.0));
    }

    #[test]
    fn raw_pair_and_lock_cycle_run_side_by_side_in_turns() {
        use Workload::*;
        let all = [
            RawCreateDelete,
            RawGet,
            PipelinedGet,
            LockUncontended,
            LockContended,
        ];
        assert_eq!(
            block_order(&all, 0),
            [
                RawCreateDelete,
                LockUncontended,
                RawGet,
                PipelinedGet,
                LockContended
            ]
        );
        assert_eq!(
            block_order(&all, 1),
            [
                LockUncontended,
                RawCreateDelete,
                RawGet,
                PipelinedGet,
                LockContended
            ]
        );
        assert_eq!(
            block_order(&[RawGet, LockUncontended], 1),
            [LockUncontended, RawGet]
        );
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![f64::NAN]), None);
        assert_eq!(median(Vec::new()), None);
    }
}
