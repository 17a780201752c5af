//! Runs the scale binaries (`idle_sessions`, `many_watches`, `lock_contenders`) once each,
//! tiny, with `--json` against their own local ZooKeeper, and checks what they report: every
//! session kept, every watch re-registered in frames under the limit and fired, no
//! mutual-exclusion violation and no herd. No timing thresholds.

mod support;

use support::{metric, number, run_json};

#[test]
fn idle_sessions_stay_alive_on_pings() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_idle_sessions"),
        &[
            "--json",
            "--sessions",
            "20",
            "--parallel",
            "4",
            "--hold",
            "1",
        ],
    );
    let memory = metric(&lines, "idle_sessions_memory");
    assert_eq!(number(memory, "n"), 20.0);
    for key in ["heap_bytes_per_session", "rss_bytes_per_session"] {
        assert!(number(memory, key) >= 0.0, "{key}");
    }
    let connect = metric(&lines, "idle_sessions_connect");
    assert!(number(connect, "p50_us") > 0.0);
    let hold = metric(&lines, "idle_sessions_hold");
    assert_eq!(number(hold, "sessions_lost"), 0.0);
    assert_eq!(number(hold, "failed_round_trips_after"), 0.0);
    assert_eq!(number(hold, "server_zxid_delta"), 0.0, "a session expired");
    assert!(number(hold, "server_packets_received") > 0.0, "no ping");
}

#[test]
fn many_watches_are_reregistered_in_frames_under_the_limit() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_many_watches"),
        &[
            "--json",
            "--watches",
            "3000",
            "--fanout",
            "100",
            "--create-batch",
            "500",
            "--sample",
            "20",
        ],
    );
    let set = metric(&lines, "watches_set");
    assert_eq!(number(set, "n"), 3000.0);
    assert_eq!(number(set, "server_watches"), 3000.0);
    assert!(number(set, "heap_bytes_per_watch") > 0.0);
    let again = metric(&lines, "watches_reregistered");
    assert_eq!(number(again, "server_watches_after"), 3000.0);
    assert_eq!(number(again, "reconnections"), 1.0);
    // 3,000 paths of about 30 bytes: under the 128 KiB the session puts in one frame.
    assert_eq!(number(again, "set_watches_frames"), 1.0);
    assert!(number(again, "largest_frame_bytes") <= number(again, "frame_limit_bytes"));
    assert_eq!(again.get("frames_under_limit"), Some(&true.into()));
    assert_eq!(number(metric(&lines, "watches_fire"), "fired"), 20.0);
}

#[test]
fn lock_contenders_hand_over_without_violation_or_herd() {
    let lines = run_json(
        env!("CARGO_BIN_EXE_lock_contenders"),
        &[
            "--json",
            "--contenders",
            "12",
            "--cycles",
            "2",
            "--baseline",
            "3",
        ],
    );
    for name in ["lock_contenders", "lock_contenders@3"] {
        let run = metric(&lines, name);
        assert_eq!(number(run, "n"), 24.0, "{name}");
        assert_eq!(number(run, "violations"), 0.0, "{name}");
        // A release wakes its successor and, by the recipe's design, at most one more.
        let woken = number(run, "watchers_woken_per_release");
        assert!(
            (0.5..=2.0).contains(&woken),
            "{name}: {woken} watchers per release"
        );
        assert_eq!(number(run, "children_watchers_woken"), 0.0, "{name}");
        assert!(number(run, "p50_us") > 0.0, "{name}");
    }
    assert!(number(metric(&lines, "lock_contenders_release"), "p50_us") > 0.0);
    assert!(number(metric(&lines, "handoff_p50/handoff_p50@3"), "ratio") > 0.0);
}
