//! Property tests: histories of a simulated real atomic register and counter (random
//! processes, timings, linearization points, unknown and failed outcomes) are always
//! linearizable; mutations that no execution explains are always caught.

mod support;

use proptest::prelude::*;
use proptest::sample::Index;
use support::{OpSpec, SimOptions, random_specs, simulate_counter, simulate_register, unkeyed};
use zk_history::models::{Counter, CounterOp, Register, RegisterRet};
use zk_history::{CheckOptions, Keyed, Model, Outcome, Verdict, check};

fn spec(processes: u64) -> impl Strategy<Value = OpSpec> {
    (
        0..processes,
        0u8..3,
        0u64..50,
        1u64..200,
        0u64..=1000,
        0u8..100,
        prop_oneof![Just(0i8), Just(0i8), Just(-1i8), Just(1i8)],
        any::<u8>(),
    )
        .prop_map(
            |(process, kind, gap, duration, lin, fate, skew, key)| OpSpec {
                process,
                kind,
                gap,
                duration,
                lin,
                fate,
                skew,
                key,
            },
        )
}

fn specs(max_processes: u64, max_ops: usize) -> impl Strategy<Value = Vec<OpSpec>> {
    (1..=max_processes).prop_flat_map(move |p| prop::collection::vec(spec(p), 0..max_ops))
}

fn verdict<M: Model>(model: &M, history: &zk_history::History<M::Input, M::Output>) -> Verdict {
    let options = CheckOptions {
        time_limit: None,
        ..CheckOptions::default()
    };
    check(model, history, &options)
        .expect("well-formed")
        .verdict
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn sequential_histories_are_linearizable(specs in specs(4, 60), unknown in 0u8..20) {
        let options = SimOptions { sequential: true, unknown_percent: unknown, keys: 1 };
        let history = unkeyed(&simulate_register(&specs, options));
        let v = verdict(&Register::new(0), &history);
        prop_assert!(v.is_linearizable(), "{}", v);
        let counter = simulate_counter(&specs, options);
        let v = verdict(&Counter::new(0), &counter);
        prop_assert!(v.is_linearizable(), "{}", v);
    }

    #[test]
    fn simulated_register_histories_are_linearizable(specs in specs(8, 80), unknown in 0u8..30) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys: 1 };
        let history = unkeyed(&simulate_register(&specs, options));
        let v = verdict(&Register::new(0), &history);
        prop_assert!(v.is_linearizable(), "{}", v);
    }

    #[test]
    fn simulated_keyed_histories_are_linearizable(
        specs in specs(8, 120), unknown in 0u8..30, keys in 1u8..5,
    ) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys };
        let history = simulate_register(&specs, options);
        let v = verdict(&Keyed::new(Register::new(0)), &history);
        prop_assert!(v.is_linearizable(), "{}", v);
    }

    #[test]
    fn simulated_counter_histories_are_linearizable(specs in specs(8, 80), unknown in 0u8..30) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys: 1 };
        let history = simulate_counter(&specs, options);
        let v = verdict(&Counter::new(0), &history);
        prop_assert!(v.is_linearizable(), "{}", v);
        let v = verdict(&Counter::new(0).increment_only(), &history);
        prop_assert!(v.is_linearizable(), "{}", v);
    }

    #[test]
    fn a_read_of_a_value_never_written_is_caught(
        specs in specs(8, 80), unknown in 0u8..30, which in any::<Index>(),
    ) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys: 1 };
        let mut history = unkeyed(&simulate_register(&specs, options));
        let reads: Vec<usize> = history.ops.iter().enumerate()
            .filter(|(_, op)| matches!(op.outcome, Outcome::Ok(RegisterRet::Read { .. })))
            .map(|(i, _)| i)
            .collect();
        prop_assume!(!reads.is_empty());
        let i = reads[which.index(reads.len())];
        if let Outcome::Ok(RegisterRet::Read { value, .. }) = &mut history.ops[i].outcome {
            *value = -1 - *value; // values written are 0 and up
        }
        match verdict(&Register::new(0), &history) {
            Verdict::NotLinearizable { violation } => {
                prop_assert_eq!(violation.op.id, history.ops[i].id, "{}", violation);
            }
            other => prop_assert!(false, "mutation not caught: {}", other),
        }
    }

    #[test]
    fn a_version_from_the_future_is_caught(
        specs in specs(8, 80), unknown in 0u8..30, which in any::<Index>(),
    ) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys: 1 };
        let mut history = unkeyed(&simulate_register(&specs, options));
        let definite: Vec<usize> = history.ops.iter().enumerate()
            .filter(|(_, op)| matches!(op.outcome, Outcome::Ok(_)))
            .map(|(i, _)| i)
            .collect();
        prop_assume!(!definite.is_empty());
        let i = definite[which.index(definite.len())];
        let too_far = history.ops.len() as i32 + 1;
        if let Outcome::Ok(RegisterRet::Read { version, .. } | RegisterRet::Written { version }) =
            &mut history.ops[i].outcome
        {
            *version = too_far;
        }
        let v = verdict(&Register::new(0), &history);
        prop_assert!(v.violation().is_some(), "mutation not caught: {}", v);
    }

    #[test]
    fn two_adds_returning_the_same_value_are_caught(
        specs in specs(8, 80), unknown in 0u8..30, a in any::<Index>(), b in any::<Index>(),
    ) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys: 1 };
        let mut history = simulate_counter(&specs, options);
        let adds: Vec<usize> = history.ops.iter().enumerate()
            .filter(|(_, op)| matches!(op.op, CounterOp::Add(_)) && matches!(op.outcome, Outcome::Ok(_)))
            .map(|(i, _)| i)
            .collect();
        prop_assume!(adds.len() >= 2);
        let (i, j) = (adds[a.index(adds.len())], adds[b.index(adds.len())]);
        prop_assume!(i != j);
        // Deltas are positive, so two successful adds never see the same value.
        history.ops[j].outcome = history.ops[i].outcome.clone();
        let v = verdict(&Counter::new(0).increment_only(), &history);
        prop_assert!(v.violation().is_some(), "mutation not caught: {}", v);
        let v = verdict(&Counter::new(0), &history);
        prop_assert!(v.violation().is_some(), "mutation not caught: {}", v);
    }

    #[test]
    fn json_lines_round_trip(specs in specs(4, 30), unknown in 0u8..50) {
        let options = SimOptions { sequential: false, unknown_percent: unknown, keys: 3 };
        let history = simulate_register(&specs, options);
        let text = history.to_json_lines().expect("serializes");
        let back = zk_history::History::from_json_lines(&text).expect("parses");
        prop_assert_eq!(back, history);
    }
}

/// A history of the size the partition suite records: prints what checking it costs (run
/// with `--nocapture`; `cargo run --release --example checker_perf` for more figures).
#[test]
fn a_generated_history_of_thousands_of_operations_is_checked_quickly() {
    for (ops, unknown_percent) in [(3000, 2), (3000, 5)] {
        let specs = random_specs(42, ops, 10);
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
        let result =
            check(&Register::new(0), &history, &CheckOptions::default()).expect("well-formed");
        println!("register: {ops} ops, 10 processes, {unknown} unknown outcomes: {result}");
        assert!(result.is_linearizable(), "{result}");
        let counter = simulate_counter(&specs, sim);
        let result = check(
            &Counter::new(0).increment_only(),
            &counter,
            &CheckOptions::default(),
        )
        .expect("well-formed");
        println!("counter (increment-only): {ops} ops, 10 processes: {result}");
        assert!(result.is_linearizable(), "{result}");
    }
}
