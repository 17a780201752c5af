//! The fenced store and its checker: token order, shared tokens, and unsafe windows
//! measured exactly with their fault annotations.

use std::sync::Arc;
use std::time::Duration;

use zk_history::{
    Clock, FaultEvent, FenceReport, FenceViolation, FencedStore, FencedWrite, HeldInterval,
    History, HistoryError, Recorder, check_fenced, check_fenced_history,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn write(seq: u64, process: u64, token: i64, accepted: bool) -> FencedWrite {
    FencedWrite {
        seq,
        at: ms(seq),
        process,
        token,
        accepted,
    }
}

fn held(process: u64, token: i64, from: u64, to: Option<u64>) -> HeldInterval {
    HeldInterval {
        process,
        token: Some(token),
        from: ms(from),
        to: to.map(ms),
    }
}

fn fault(at: u64, description: &str) -> FaultEvent {
    FaultEvent {
        at: ms(at),
        description: description.to_owned(),
    }
}

#[test]
fn the_store_refuses_lower_tokens_and_logs_every_write() {
    let store = FencedStore::new(Clock::new());
    assert_eq!(store.write(1, 10), Ok(0));
    assert_eq!(store.write(1, 10), Ok(1)); // the same holder again
    assert_eq!(store.write(2, 12), Ok(2)); // a newer holder
    let refused = store.write(1, 10).unwrap_err();
    assert_eq!((refused.token, refused.highest, refused.seq), (10, 12, 3));
    assert!(refused.to_string().contains("refused"));
    assert_eq!(store.highest_token(), Some(12));
    let log = store.log();
    assert_eq!(
        log.iter().map(|w| w.accepted).collect::<Vec<_>>(),
        [true, true, true, false]
    );
    // What the store did is safe.
    let report = check_fenced(&log, &[], &[], None).unwrap();
    assert!(report.is_safe(), "{report}");
    assert_eq!((report.writes, report.accepted), (4, 3));
}

#[test]
fn a_history_claiming_an_out_of_order_write_was_accepted_is_flagged() {
    let writes = [
        write(0, 1, 10, true),
        write(1, 2, 12, true),
        // A broken store (or a forged log) accepted the old holder's write.
        write(2, 1, 10, true),
        write(3, 2, 13, true),
    ];
    let report = check_fenced(&writes, &[], &[], None).unwrap();
    assert_eq!(report.violations.len(), 1, "{report}");
    match &report.violations[0] {
        FenceViolation::OutOfOrder { write, highest } => {
            assert_eq!((write.seq, write.token), (2, 10));
            assert_eq!((highest.seq, highest.token), (1, 12));
        }
        other => panic!("{other}"),
    }
    assert!(
        report
            .to_string()
            .contains("out-of-order write: write #2 by p1 with token 10")
    );
    // The log's order is the store's sequence, whatever the slice order.
    let mut shuffled = writes.to_vec();
    shuffled.reverse();
    assert_eq!(
        check_fenced(&shuffled, &[], &[], None).unwrap().violations,
        report.violations
    );
}

#[test]
fn two_processes_with_one_token_are_two_leaders_in_one_term() {
    let writes = [
        write(0, 1, 7, true),
        write(1, 2, 7, true),
        write(2, 2, 7, true), // reported once per process
        write(3, 3, 8, true),
        write(4, 4, 8, false),
    ];
    let report = check_fenced(&writes, &[], &[], None).unwrap();
    let shared: Vec<_> = report
        .violations
        .iter()
        .map(|v| match v {
            FenceViolation::SharedToken {
                token,
                first,
                second,
            } => (*token, first.process, second.process),
            other => panic!("{other}"),
        })
        .collect();
    assert_eq!(shared, [(7, 1, 2), (8, 3, 4)]);
}

#[test]
fn unsafe_windows_are_measured_exactly_with_their_faults() {
    let beliefs = [
        held(1, 10, 100, Some(400)),
        held(2, 11, 250, Some(600)),
        // Still held at the end of the run (700 ms).
        held(3, 12, 550, None),
        // p1 again, after it learned: no overlap with itself counts.
        held(1, 13, 650, Some(660)),
    ];
    let faults = [
        fault(200, "partition {1} | {2,3,leader}"),
        fault(300, "heal"),
        fault(580, "kill server 2"),
    ];
    let report = check_fenced(&[], &beliefs, &faults, Some(ms(700))).unwrap();
    let windows = &report.unsafe_windows;
    assert_eq!(windows.len(), 3, "{report}");

    // p1 and p2: from p2's acquire to p1 learning it lost the lock.
    let w = &windows[0];
    assert_eq!((w.first, w.second), (1, 2));
    assert_eq!((w.first_token, w.second_token), (Some(10), Some(11)));
    assert_eq!((w.from, w.to, w.length()), (ms(250), ms(400), ms(150)));
    assert_eq!(
        w.active_fault.as_ref().map(|f| f.description.as_str()),
        Some("partition {1} | {2,3,leader}")
    );
    assert_eq!(w.faults_during, [fault(300, "heal")]);

    // p2 and p3: p3's open interval lasts to the end of the run.
    let w = &windows[1];
    assert_eq!((w.first, w.second, w.from, w.to), (2, 3, ms(550), ms(600)));
    assert_eq!(w.active_fault.as_ref().map(|f| f.at), Some(ms(300)));
    assert_eq!(w.faults_during, [fault(580, "kill server 2")]);

    // p3 and p1's second tenure, p1 nested in p3.
    let w = &windows[2];
    assert_eq!((w.first, w.second, w.from, w.to), (3, 1, ms(650), ms(660)));
    assert_eq!(w.active_fault.as_ref().map(|f| f.at), Some(ms(580)));

    let stats = report.window_stats();
    assert_eq!((stats.count, stats.max, stats.total), (3, ms(150), ms(210)));
    let text = report.to_string();
    assert!(text.contains("p1 (token 10) and p2 (token 11) both held it for 150ms, from 250ms to 400ms; fault: partition {1} | {2,3,leader} (at 200ms); then heal (at 300ms)"), "{text}");
    let back: FenceReport = serde_json::from_str(&report.to_json_line()).unwrap();
    assert_eq!(back, report);
}

#[test]
fn windows_without_faults_and_touching_intervals() {
    let touching = [
        held(1, 1, 0, Some(100)),
        held(2, 2, 100, Some(200)),
        held(3, 3, 150, Some(150)),
    ];
    let report = check_fenced(&[], &touching, &[], None).unwrap();
    // Touching intervals (a release, then an acquire at the same instant) and an empty one
    // are not overlaps.
    assert!(report.unsafe_windows.is_empty(), "{report}");
    let overlapping = [held(1, 1, 0, Some(100)), held(2, 2, 99, Some(200))];
    let report = check_fenced(&[], &overlapping, &[], None).unwrap();
    assert_eq!(report.unsafe_windows.len(), 1);
    assert!(report.unsafe_windows[0].active_fault.is_none());
    assert!(report.to_string().contains("no fault before it"));
}

#[test]
fn malformed_fence_input_is_a_typed_error() {
    let bad = [held(1, 1, 10, Some(5))];
    assert!(matches!(
        check_fenced(&[], &bad, &[], None),
        Err(HistoryError::HeldEndsBeforeStart { process: 1, .. })
    ));
    let dup = [write(0, 1, 1, true), write(0, 2, 2, true)];
    assert!(matches!(
        check_fenced(&dup, &[], &[], None),
        Err(HistoryError::DuplicateSeq { seq: 0 })
    ));
}

#[test]
fn concurrent_holders_through_the_recorder_and_the_store() {
    // Eight threads take turns with increasing tokens (a perfect lock), writing as they go.
    let recorder: Recorder<(), ()> = Recorder::new();
    let store = Arc::new(FencedStore::new(recorder.clock()));
    let turn = Arc::new(std::sync::Mutex::new(0i64));
    let threads: Vec<_> = (0..8u64)
        .map(|p| {
            let (recorder, store, turn) = (recorder.clone(), Arc::clone(&store), Arc::clone(&turn));
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let mut token = turn.lock().unwrap();
                    *token += 1;
                    let held = recorder.held(p, Some(*token));
                    assert!(store.write(p, *token).is_ok());
                    held.end();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    recorder.record_fenced_writes(store.log());
    recorder.fault("none really");
    let history: History<(), ()> = recorder.take();
    history.validate().unwrap();
    let report = check_fenced_history(&history).unwrap();
    assert!(report.is_safe(), "{report}");
    assert_eq!(report.accepted, 400);
    assert!(report.unsafe_windows.is_empty(), "{report}");

    // A stale holder racing a new one: the store fences it off; the windows show the race.
    let recorder: Recorder<(), ()> = Recorder::new();
    let store = FencedStore::new(recorder.clock());
    let old = recorder.held(1, Some(5));
    assert!(store.write(1, 5).is_ok());
    recorder.fault("partition p1");
    std::thread::sleep(ms(2));
    let new = recorder.held(2, Some(6));
    assert!(store.write(2, 6).is_ok());
    assert!(store.write(1, 5).is_err());
    std::thread::sleep(ms(2));
    old.end();
    new.end();
    recorder.record_fenced_writes(store.log());
    let report = check_fenced_history(&recorder.take()).unwrap();
    assert!(report.is_safe(), "{report}");
    assert_eq!(report.unsafe_windows.len(), 1);
    assert!(report.unsafe_windows[0].length() >= ms(2));
    assert_eq!(
        report.unsafe_windows[0]
            .active_fault
            .as_ref()
            .map(|f| f.description.as_str()),
        Some("partition p1")
    );
}
