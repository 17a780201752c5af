//! Timing one operation: a warm-up that sizes the rounds, then the median of timed rounds.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::Settings;

/// One measurement: the median over rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Median nanoseconds per operation.
    pub median_ns: f64,
    /// Operations per timed round.
    pub iters_per_round: u64,
    /// Heap allocations per operation (reallocations included), counted over one more round;
    /// `None` when they were not counted (the reference, or no counting allocator).
    pub allocs_per_op: Option<f64>,
}

/// Times `op`: a warm-up of `settings.warmup` in doubling batches (which also sizes the rounds),
/// then `settings.rounds` rounds of about `settings.round` each. Every result goes through
/// [`black_box`] and is dropped inside the timed loop.
pub fn measure<R>(settings: &Settings, mut op: impl FnMut() -> R) -> Measurement {
    const MIN_BATCH: Duration = Duration::from_millis(1);
    let deadline = Instant::now() + settings.warmup;
    let mut batch: u64 = 1;
    let batch_time = loop {
        let start = Instant::now();
        for _ in 0..batch {
            black_box(op());
        }
        let elapsed = start.elapsed();
        if Instant::now() >= deadline && elapsed >= MIN_BATCH {
            break elapsed;
        }
        if elapsed < MIN_BATCH {
            batch = batch.saturating_mul(2);
        }
    };
    let per_op = batch_time.as_secs_f64() / batch as f64;
    let iters = ((settings.round.as_secs_f64() / per_op) as u64).max(1);
    let mut samples: Vec<f64> = (0..settings.rounds.max(1))
        .map(|_| {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(op());
            }
            start.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    // One more round, counted: the allocations of the operation itself (its result is
    // dropped inside the loop, as in the timed rounds).
    let before = super::allocations::count();
    for _ in 0..iters {
        black_box(op());
    }
    let allocs_per_op = before
        .zip(super::allocations::count())
        .map(|(before, after)| (after - before) as f64 / iters as f64);
    Measurement {
        median_ns: median(&mut samples),
        iters_per_round: iters,
        allocs_per_op,
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => samples[n / 2],
        _ => (samples[n / 2 - 1] + samples[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }

    #[test]
    fn measure_runs_the_rounds_asked_for() {
        let settings = Settings {
            warmup: Duration::ZERO,
            java_warmup: Duration::ZERO,
            rounds: 3,
            round: Duration::from_micros(100),
        };
        let mut calls = 0_u64;
        let m = measure(&settings, || calls += 1);
        assert!(m.iters_per_round >= 1);
        assert!(calls >= 3 * m.iters_per_round, "{calls} calls, {m:?}");
        assert!(m.median_ns.is_finite() && m.median_ns >= 0.0);
    }
}
