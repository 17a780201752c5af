//! Performance figures of the linearizability checker on generated histories: a simulated
//! atomic register and counter with ten processes, random timings and interleavings, some
//! unknown outcomes; then the same histories with one read mutated to a value never written
//! (the checker must refute them, which means exhausting the search).
//!
//! `cargo run --release -p zk-history --example checker_perf`

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use support::{SimOptions, random_specs, simulate_counter, simulate_register, unkeyed};
use zk_history::models::{Counter, Register, RegisterRet};
use zk_history::{CheckOptions, CheckResult, Keyed, Outcome, Verdict, check};

fn line(what: &str, ops: usize, unknown: usize, result: &CheckResult) {
    let verdict = match &result.verdict {
        Verdict::Linearizable => "linearizable".to_owned(),
        Verdict::NotLinearizable { violation } => format!("violation at op #{}", violation.op.id),
        Verdict::Unknown { reason } => format!("unknown: {reason}"),
    };
    println!(
        "{what:<34} {ops:>6} ops {unknown:>4} unknown {:>3} keys {:>9} steps {:>9} memo {:>10.1?}  {verdict}",
        result.stats.partitions,
        result.stats.steps,
        result.stats.memo_entries,
        result.stats.elapsed,
    );
}

fn main() {
    let processes = 10;
    let options = CheckOptions::default();
    println!("{processes} processes; times are the checker's alone");
    for &(n, unknown_percent) in &[(1000, 0u8), (3000, 1), (3000, 5), (5000, 2), (10_000, 2)] {
        for seed in 1..=3u64 {
            let specs = random_specs(seed * 7919 + n as u64, n, processes);
            let sim = SimOptions {
                sequential: false,
                unknown_percent,
                keys: 1,
            };
            let history = unkeyed(&simulate_register(&specs, sim));
            let unknown = history
                .ops
                .iter()
                .filter(|o| !o.outcome.is_definite())
                .count();
            let started = Instant::now();
            let result = check(&Register::new(0), &history, &options).expect("well-formed");
            assert!(started.elapsed() >= result.stats.elapsed);
            line(&format!("register, seed {seed}"), n, unknown, &result);

            // One read changed to a value never written.
            let mut mutated = history.clone();
            if let Some(op) = mutated
                .ops
                .iter_mut()
                .rev()
                .find(|o| matches!(o.outcome, Outcome::Ok(RegisterRet::Read { .. })))
                && let Outcome::Ok(RegisterRet::Read { value, .. }) = &mut op.outcome
            {
                *value = -1 - *value;
            }
            let result = check(&Register::new(0), &mutated, &options).expect("well-formed");
            line(
                &format!("register, seed {seed}, mutated read"),
                n,
                unknown,
                &result,
            );

            let keyed = simulate_register(&specs, SimOptions { keys: 10, ..sim });
            let result =
                check(&Keyed::new(Register::new(0)), &keyed, &options).expect("well-formed");
            line(
                &format!("register x10 keys, seed {seed}"),
                n,
                unknown,
                &result,
            );

            let counter = simulate_counter(&specs, sim);
            let result = check(&Counter::new(0), &counter, &options).expect("well-formed");
            line(&format!("counter, seed {seed}"), n, unknown, &result);
            let result =
                check(&Counter::new(0).increment_only(), &counter, &options).expect("well-formed");
            line(
                &format!("counter (increment-only), seed {seed}"),
                n,
                unknown,
                &result,
            );
        }
    }
}
