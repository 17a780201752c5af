//! The linearizability checker on known histories: classic linearizable and
//! non-linearizable ones, for the register, the counter and the set, keyed partitioning,
//! the budget, malformed input, and JSON.

mod support;

use std::time::{Duration, Instant};

use support::{Builder, read, written};
use zk_history::models::{
    Counter, CounterOp, Register, RegisterOp, RegisterRet, SetModel, SetOp, SetRet,
};
use zk_history::{
    CheckError, CheckOptions, CheckResult, Entry, FaultEvent, FencedWrite, HeldInterval, History,
    HistoryError, Keyed, KeyedOp, Model, Outcome, Verdict, check,
};

type Reg = RegisterOp<i64>;
type Ret = RegisterRet<i64>;

fn register() -> Register<i64> {
    Register::new(0)
}

fn run<M: Model>(model: &M, history: &History<M::Input, M::Output>) -> CheckResult {
    let result = check(model, history, &CheckOptions::default()).expect("a well-formed history");
    // Every verdict prints and serializes.
    let _ = result.to_string();
    let line = result.to_json_line();
    let back: CheckResult = serde_json::from_str(&line).expect("JSON round trip");
    assert_eq!(back, result);
    result
}

fn assert_linearizable<M: Model>(model: &M, history: &History<M::Input, M::Output>) {
    let result = run(model, history);
    assert!(
        result.is_linearizable(),
        "expected linearizable, got {result}"
    );
}

/// Asserts a violation and returns it, checking that the op it blames is `blamed`.
fn assert_violation<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    blamed: u64,
) -> zk_history::Violation {
    assert_violation_blaming(model, history, &[blamed])
}

/// Asserts a violation that blames one of `blamed` (symmetric histories have several
/// equally good witnesses).
fn assert_violation_blaming<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    blamed: &[u64],
) -> zk_history::Violation {
    let result = run(model, history);
    match result.verdict {
        Verdict::NotLinearizable { violation } => {
            assert!(
                blamed.contains(&violation.op.id),
                "blamed the wrong op:\n{violation}"
            );
            *violation
        }
        other => panic!("expected a violation, got {other}"),
    }
}

// ---- register ----

#[test]
fn sequential_register_history_is_linearizable() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(1), RegisterOp::Read, read(0, 0))
        .op(1, 2, Some(3), RegisterOp::Write(7), written(1))
        .op(2, 4, Some(5), RegisterOp::Read, read(7, 1))
        .op(
            2,
            6,
            Some(7),
            RegisterOp::Cas {
                expected_version: 1,
                value: 8,
            },
            written(2),
        )
        .op(
            1,
            8,
            Some(9),
            RegisterOp::Cas {
                expected_version: 1,
                value: 9,
            },
            Outcome::Fail,
        )
        .op(3, 10, Some(11), RegisterOp::Read, read(8, 2))
        .build();
    assert_linearizable(&register(), &h);
}

#[test]
fn stale_read_after_a_completed_write_is_a_violation() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(1), written(1))
        .op(2, 20, Some(30), RegisterOp::Read, read(0, 0))
        .build();
    let v = assert_violation(&register(), &h, 1);
    assert_eq!(v.prefix_len, 1, "{v}");
    assert_eq!(v.state, "RegisterState { value: 1, version: 1 }");
    let text = v.to_string();
    assert!(text.contains("could not be linearized"), "{text}");
    assert!(
        text.contains("longest linearizable prefix: 1 ops"),
        "{text}"
    );
    println!("{text}");
}

#[test]
fn a_read_concurrent_with_a_write_may_see_either_value() {
    for seen in [read(0, 0), read(1, 1)] {
        let h = Builder::<Reg, Ret>::new()
            .op(1, 0, Some(10), RegisterOp::Write(1), written(1))
            .op(2, 5, Some(15), RegisterOp::Read, seen)
            .build();
        assert_linearizable(&register(), &h);
    }
}

#[test]
fn new_then_old_reads_by_two_readers_are_a_violation() {
    // The write is concurrent with both reads, but once a read saw the new value, a read
    // that starts after it completed cannot see the old one.
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(100), RegisterOp::Write(1), written(1))
        .op(2, 10, Some(20), RegisterOp::Read, read(1, 1))
        .op(3, 30, Some(40), RegisterOp::Read, read(0, 0))
        .build();
    let v = assert_violation(&register(), &h, 2);
    assert!(v.concurrent.iter().any(|c| c.id == 0), "{v}");
}

#[test]
fn two_concurrent_cas_with_the_same_expected_version_cannot_both_succeed() {
    let h = Builder::<Reg, Ret>::new()
        .op(
            1,
            0,
            Some(10),
            RegisterOp::Cas {
                expected_version: 0,
                value: 1,
            },
            written(1),
        )
        .op(
            2,
            1,
            Some(11),
            RegisterOp::Cas {
                expected_version: 0,
                value: 2,
            },
            written(1),
        )
        .build();
    let v = assert_violation_blaming(&register(), &h, &[0, 1]);
    assert_eq!(v.concurrent.len(), 1, "{v}");
    assert_eq!(v.concurrent[0].id, 1 - v.op.id);
    println!("{v}");
    // One of them with version 2 is no better: it expected 0.
    let h = Builder::<Reg, Ret>::new()
        .op(
            1,
            0,
            Some(10),
            RegisterOp::Cas {
                expected_version: 0,
                value: 1,
            },
            written(1),
        )
        .op(
            2,
            1,
            Some(11),
            RegisterOp::Cas {
                expected_version: 0,
                value: 2,
            },
            written(2),
        )
        .build();
    assert!(run(&register(), &h).verdict.violation().is_some());
    // One succeeding and the other failing with BadVersion is fine.
    let h = Builder::<Reg, Ret>::new()
        .op(
            1,
            0,
            Some(10),
            RegisterOp::Cas {
                expected_version: 0,
                value: 1,
            },
            written(1),
        )
        .op(
            2,
            1,
            Some(11),
            RegisterOp::Cas {
                expected_version: 0,
                value: 2,
            },
            Outcome::Fail,
        )
        .build();
    assert_linearizable(&register(), &h);
}

#[test]
fn a_read_of_a_value_never_written_is_a_violation() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(1), written(1))
        .op(2, 5, Some(15), RegisterOp::Read, read(99, 1))
        .build();
    assert_violation(&register(), &h, 1);
}

#[test]
fn an_unknown_write_observed_later_is_linearizable() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Unknown)
        .op(2, 50, Some(60), RegisterOp::Read, read(5, 1))
        .build();
    assert_linearizable(&register(), &h);
    // Even after reads that did not see it yet: it took effect late.
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Unknown)
        .op(2, 20, Some(30), RegisterOp::Read, read(0, 0))
        .op(2, 40, Some(50), RegisterOp::Read, read(5, 1))
        .build();
    assert_linearizable(&register(), &h);
    // And never completed at all (the process died).
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, None, RegisterOp::Write(5), Outcome::Unknown)
        .op(2, 40, Some(50), RegisterOp::Read, read(5, 1))
        .build();
    assert_linearizable(&register(), &h);
}

#[test]
fn an_unknown_write_observed_before_its_invocation_is_a_violation() {
    let h = Builder::<Reg, Ret>::new()
        .op(2, 0, Some(10), RegisterOp::Read, read(5, 1))
        .op(1, 20, Some(30), RegisterOp::Write(5), Outcome::Unknown)
        .build();
    assert_violation(&register(), &h, 0);
}

#[test]
fn unknown_operations_that_never_took_effect_are_fine() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Unknown)
        .op(
            2,
            0,
            Some(10),
            RegisterOp::Cas {
                expected_version: 0,
                value: 6,
            },
            Outcome::Unknown,
        )
        .op(3, 0, None, RegisterOp::Write(7), Outcome::Unknown)
        .op(4, 5, Some(8), RegisterOp::Read, Outcome::Unknown)
        .op(4, 20, Some(30), RegisterOp::Read, read(0, 0))
        .op(4, 40, Some(50), RegisterOp::Write(8), written(1))
        .op(4, 60, Some(70), RegisterOp::Read, read(8, 1))
        .build();
    assert_linearizable(&register(), &h);
}

#[test]
fn unknown_writes_may_take_effect_but_only_once() {
    // The write of 5 could explain one of the two version bumps, not both.
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Unknown)
        .op(2, 20, Some(30), RegisterOp::Read, read(5, 1))
        .op(2, 40, Some(50), RegisterOp::Read, read(5, 2))
        .build();
    assert_violation(&register(), &h, 2);
}

#[test]
fn a_failed_write_has_no_effect_and_a_failed_cas_saw_another_version() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Fail)
        .op(2, 20, Some(30), RegisterOp::Read, read(5, 1))
        .build();
    assert_violation(&register(), &h, 1);
    // BadVersion while the version was the expected one all along.
    let h = Builder::<Reg, Ret>::new()
        .op(
            1,
            0,
            Some(10),
            RegisterOp::Cas {
                expected_version: 0,
                value: 1,
            },
            Outcome::Fail,
        )
        .build();
    assert_violation(&register(), &h, 0);
    // ... unless failures are declared uninformative.
    assert_linearizable(&register().cas_failures_uninformative(), &h);
    // A failed read tells nothing.
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Read, Outcome::Fail)
        .build();
    assert_linearizable(&register(), &h);
}

#[test]
fn the_unknown_horizon_bounds_late_effects() {
    // The write must have taken effect after the first read, 490 ms after it completed.
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Unknown)
        .op(2, 500, Some(510), RegisterOp::Read, read(0, 0))
        .op(2, 1000, Some(1010), RegisterOp::Read, read(5, 1))
        .build();
    assert_linearizable(&register(), &h);
    let bounded = CheckOptions {
        unknown_horizon: Some(Duration::from_millis(100)),
        ..CheckOptions::default()
    };
    let result = check(&register(), &h, &bounded).unwrap();
    assert_eq!(
        result.verdict.violation().map(|v| v.op.id),
        Some(2),
        "{result}"
    );
    let generous = CheckOptions {
        unknown_horizon: Some(Duration::from_millis(495)),
        ..CheckOptions::default()
    };
    assert!(check(&register(), &h, &generous).unwrap().is_linearizable());
}

#[test]
fn the_unknown_horizon_does_not_let_no_ops_jump_ahead() {
    // The write of 5 must take effect by 110 ms; the compare-and-set that failed (invoked at
    // 200 ms, so after that) saw version 1 or 2, not 0; the read sees 5 at version 1. Only
    // "write, failed cas, read" explains it, and it respects the horizon.
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Write(5), Outcome::Unknown)
        .op(
            2,
            200,
            Some(210),
            RegisterOp::Cas {
                expected_version: 0,
                value: 9,
            },
            Outcome::Fail,
        )
        .op(3, 300, Some(310), RegisterOp::Read, read(5, 1))
        .build();
    let bounded = CheckOptions {
        unknown_horizon: Some(Duration::from_millis(100)),
        ..CheckOptions::default()
    };
    let result = check(&register(), &h, &bounded).unwrap();
    assert!(result.is_linearizable(), "{result}");
}

#[test]
fn a_result_of_the_wrong_kind_is_an_error_not_a_verdict() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(10), RegisterOp::Read, written(1))
        .build();
    match check(&register(), &h, &CheckOptions::default()) {
        Err(CheckError::BadOutput { id: 0, reason }) => assert!(reason.contains("Read")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn malformed_histories_are_typed_errors() {
    let h = Builder::<Reg, Ret>::new()
        .op(1, 10, Some(5), RegisterOp::Read, read(0, 0))
        .build();
    assert!(matches!(
        check(&register(), &h, &CheckOptions::default()),
        Err(CheckError::History(HistoryError::CompletedBeforeInvoked {
            id: 0,
            ..
        }))
    ));
    let h = Builder::<Reg, Ret>::new()
        .op(1, 10, None, RegisterOp::Read, read(0, 0))
        .build();
    assert!(matches!(
        check(&register(), &h, &CheckOptions::default()),
        Err(CheckError::History(HistoryError::MissingCompletion {
            id: 0
        }))
    ));
    let mut h = Builder::<Reg, Ret>::new()
        .op(1, 0, Some(1), RegisterOp::Read, read(0, 0))
        .op(1, 2, Some(3), RegisterOp::Read, read(0, 0))
        .build();
    h.ops[1].id = 0;
    assert!(matches!(
        check(&register(), &h, &CheckOptions::default()),
        Err(CheckError::History(HistoryError::DuplicateId { id: 0 }))
    ));
    // Extreme values do not panic.
    let h = Builder::<Reg, Ret>::new()
        .op(
            1,
            0,
            Some(u64::MAX / 2_000_000),
            RegisterOp::Write(1),
            written(i32::MIN),
        )
        .op(2, 0, None, RegisterOp::Write(2), Outcome::Unknown)
        .build();
    let _ = check(
        &register().with_version(i32::MAX),
        &h,
        &CheckOptions::default(),
    )
    .unwrap();
    // An empty history is linearizable.
    assert_linearizable(&register(), &History::new());
}

// ---- counter ----

#[test]
fn counter_lost_update_is_a_violation() {
    let h = Builder::<CounterOp, i64>::new()
        .op(1, 0, Some(10), CounterOp::Add(1), Outcome::Ok(1))
        .op(2, 20, Some(30), CounterOp::Add(1), Outcome::Ok(2))
        .op(3, 40, Some(50), CounterOp::Get, Outcome::Ok(1))
        .build();
    assert_violation(&Counter::new(0), &h, 2);
}

#[test]
fn counter_duplicate_results_of_concurrent_adds_are_a_violation() {
    let h = Builder::<CounterOp, i64>::new()
        .op(1, 0, Some(10), CounterOp::Add(1), Outcome::Ok(1))
        .op(2, 1, Some(11), CounterOp::Add(1), Outcome::Ok(1))
        .build();
    let v = assert_violation_blaming(&Counter::new(0), &h, &[0, 1]);
    println!("{v}");
    // Distinct results in either order are fine.
    let h = Builder::<CounterOp, i64>::new()
        .op(1, 0, Some(10), CounterOp::Add(1), Outcome::Ok(2))
        .op(2, 1, Some(11), CounterOp::Add(1), Outcome::Ok(1))
        .op(3, 20, Some(30), CounterOp::Get, Outcome::Ok(2))
        .build();
    assert_linearizable(&Counter::new(0), &h);
    assert_linearizable(&Counter::new(0).increment_only(), &h);
}

#[test]
fn counter_unknown_and_failed_adds() {
    // An add of unknown outcome that took effect, seen later.
    let h = Builder::<CounterOp, i64>::new()
        .op(1, 0, Some(10), CounterOp::Add(5), Outcome::Unknown)
        .op(2, 20, Some(30), CounterOp::Get, Outcome::Ok(0))
        .op(2, 40, Some(50), CounterOp::Add(1), Outcome::Ok(6))
        .build();
    assert_linearizable(&Counter::new(0), &h);
    assert_linearizable(&Counter::new(0).increment_only(), &h);
    // A failed add (out of retries) has no effect.
    let h = Builder::<CounterOp, i64>::new()
        .op(1, 0, Some(10), CounterOp::Add(5), Outcome::Fail)
        .op(2, 20, Some(30), CounterOp::Get, Outcome::Ok(5))
        .build();
    assert_violation(&Counter::new(0), &h, 1);
    // Increment-only refuses negative deltas.
    let h = Builder::<CounterOp, i64>::new()
        .op(1, 0, Some(10), CounterOp::Add(-1), Outcome::Ok(-1))
        .build();
    assert!(matches!(
        check(
            &Counter::new(0).increment_only(),
            &h,
            &CheckOptions::default()
        ),
        Err(CheckError::BadOutput { id: 0, .. })
    ));
    assert_linearizable(&Counter::new(0), &h);
}

// ---- set ----

#[test]
fn set_membership() {
    let members = |m: &[u32]| Outcome::Ok(SetRet::Members(m.iter().copied().collect()));
    let h = Builder::<SetOp<u32>, SetRet<u32>>::new()
        .op(1, 0, Some(10), SetOp::Add(1), Outcome::Ok(SetRet::Done))
        .op(2, 0, Some(10), SetOp::Add(2), Outcome::Ok(SetRet::Done))
        .op(3, 5, Some(8), SetOp::Read, members(&[2]))
        .op(3, 20, Some(30), SetOp::Read, members(&[1, 2]))
        .op(1, 40, Some(50), SetOp::Remove(1), Outcome::Ok(SetRet::Done))
        .op(3, 60, Some(70), SetOp::Read, members(&[2]))
        .build();
    assert_linearizable(&SetModel::new(), &h);
    let mut stale = h.clone();
    stale.ops[5].outcome = members(&[1, 2]);
    assert_violation(&SetModel::new(), &stale, 5);
}

// ---- keyed ----

#[test]
fn keyed_models_check_each_key_alone() {
    let k = |key: &str, op| KeyedOp::new(key, op);
    let h = Builder::<KeyedOp<String, Reg>, Ret>::new()
        .op(1, 0, Some(10), k("/a", RegisterOp::Write(1)), written(1))
        .op(2, 20, Some(30), k("/b", RegisterOp::Read), read(0, 0))
        .op(2, 40, Some(50), k("/a", RegisterOp::Read), read(1, 1))
        .build();
    let keyed = Keyed::new(register());
    let result = run(&keyed, &h);
    assert!(result.is_linearizable(), "{result}");
    assert_eq!(result.stats.partitions, 2);
    // The same operations on one register are not linearizable.
    let mut single: History<Reg, Ret> = History::new();
    for op in &h.ops {
        single.ops.push(zk_history::Operation {
            id: op.id,
            process: op.process,
            invoke: op.invoke,
            complete: op.complete,
            op: op.op.op.clone(),
            outcome: op.outcome.clone(),
        });
    }
    assert!(run(&register(), &single).verdict.violation().is_some());
    // A violation names its key.
    let mut bad = h.clone();
    bad.ops[2].outcome = read(0, 0);
    let v = assert_violation(&keyed, &bad, 2);
    assert_eq!(v.partition.as_deref(), Some("\"/a\""));
    assert!(v.to_string().contains("key \"/a\""));
}

// ---- budget ----

/// Many concurrent adds of unknown outcome, with distinct powers of two, then a read that
/// no subset explains: the search must try every subset (2^n), so only the budget stops it.
fn pathological(n: u32) -> History<CounterOp, i64> {
    let mut b = Builder::<CounterOp, i64>::new();
    for i in 0..n {
        b.op(
            u64::from(i),
            0,
            Some(10),
            CounterOp::Add(1 << i),
            Outcome::Unknown,
        );
    }
    b.op(99, 20, Some(30), CounterOp::Get, Outcome::Ok(-1));
    b.build()
}

#[test]
fn the_step_budget_gives_unknown_instead_of_hanging() {
    let h = pathological(30);
    let options = CheckOptions {
        max_steps: 50_000,
        time_limit: None,
        ..CheckOptions::default()
    };
    let started = Instant::now();
    let result = check(&Counter::new(0), &h, &options).unwrap();
    match &result.verdict {
        Verdict::Unknown { reason } => assert!(reason.contains("step budget"), "{reason}"),
        other => panic!("{other}"),
    }
    assert_eq!(result.stats.steps, 50_000);
    assert!(started.elapsed() < Duration::from_secs(10));
    // A small instance of the same shape is decided.
    let small = check(&Counter::new(0), &pathological(8), &CheckOptions::default()).unwrap();
    assert!(small.verdict.violation().is_some(), "{small}");
}

#[test]
fn the_time_limit_gives_unknown_instead_of_hanging() {
    let h = pathological(40);
    let options = CheckOptions {
        max_steps: u64::MAX,
        time_limit: Some(Duration::from_millis(100)),
        ..CheckOptions::default()
    };
    let started = Instant::now();
    let result = check(&Counter::new(0), &h, &options).unwrap();
    let elapsed = started.elapsed();
    match &result.verdict {
        Verdict::Unknown { reason } => assert!(reason.contains("time limit"), "{reason}"),
        other => panic!("{other}"),
    }
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    println!("gave up after {elapsed:?}, {} steps", result.stats.steps);
}

#[test]
fn increment_only_counters_prune_unknown_adds() {
    // Thirty adds of unknown outcome that never took effect: without knowing that the value
    // never decreases, refuting each subset of them costs 2^30; with it, nothing.
    let mut b = Builder::<CounterOp, i64>::new();
    for i in 0..30u32 {
        b.op(
            u64::from(i),
            0,
            Some(10),
            CounterOp::Add(1 << i),
            Outcome::Unknown,
        );
    }
    for t in [20, 40, 60] {
        b.op(99, t, Some(t + 10), CounterOp::Get, Outcome::Ok(0));
    }
    let h = b.build();
    let result = check(
        &Counter::new(0).increment_only(),
        &h,
        &CheckOptions::default(),
    )
    .unwrap();
    assert!(result.is_linearizable(), "{result}");
    assert!(result.stats.steps < 10_000, "{result}");
    let small_budget = CheckOptions {
        max_steps: 100_000,
        ..CheckOptions::default()
    };
    let result = check(&Counter::new(0), &h, &small_budget).unwrap();
    assert!(
        matches!(result.verdict, Verdict::Unknown { .. }),
        "{result}"
    );
}

// ---- JSON ----

#[test]
fn a_history_round_trips_through_json_lines() {
    let mut h = Builder::<KeyedOp<String, Reg>, Ret>::new()
        .op(
            1,
            0,
            Some(10),
            KeyedOp::new("/a", RegisterOp::Write(1)),
            written(1),
        )
        .op(
            2,
            5,
            None,
            KeyedOp::new(
                "/a",
                RegisterOp::Cas {
                    expected_version: 3,
                    value: 4,
                },
            ),
            Outcome::Unknown,
        )
        .op(
            3,
            6,
            Some(9),
            KeyedOp::new("/b", RegisterOp::Read),
            read(0, 0),
        )
        .op(
            3,
            11,
            Some(12),
            KeyedOp::new("/b", RegisterOp::Write(2)),
            Outcome::Fail,
        )
        .build();
    h.faults.push(FaultEvent {
        at: Duration::from_nanos(7),
        description: "partition {1} | {2,3}".into(),
    });
    h.held.push(HeldInterval {
        process: 1,
        token: Some(42),
        from: Duration::from_nanos(1),
        to: None,
    });
    h.fenced_writes.push(FencedWrite {
        seq: 0,
        at: Duration::from_nanos(3),
        process: 1,
        token: 42,
        accepted: true,
    });
    let text = h.to_json_lines().unwrap();
    assert_eq!(text.lines().count(), 7);
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        r#"{"kind":"op","id":0,"process":1,"invoke_ns":0,"complete_ns":10000000,"op":{"key":"/a","op":{"write":1}},"outcome":{"ok":{"written":{"version":1}}}}"#
    );
    let back = History::from_json_lines(&text).unwrap();
    assert_eq!(back, h);
    // Entries one by one, and the whole history as one JSON document.
    let entries: Vec<Entry<_, _>> = h.entries().collect();
    assert_eq!(entries.len(), 7);
    let doc = serde_json::to_string(&h).unwrap();
    assert_eq!(
        serde_json::from_str::<History<KeyedOp<String, Reg>, Ret>>(&doc).unwrap(),
        h
    );
    // Re-checked after the round trip.
    assert!(run(&Keyed::new(register()), &back).is_linearizable());
}
