//! The quorum check on a virtual clock: a `sync` every `T/16` while held, a connection
//! dropped when one is not answered within `T/2`, nothing of it while the check is off.

use std::time::Duration;

use bytes::Bytes;
use jute::*;

use super::tests::{Harness, config, frame, notification, ok};
use super::*;

/// A 4 s session: checks every 250 ms, each answered within 2 s.
const TIMEOUT_MS: i32 = 4_000;
const INTERVAL: Duration = Duration::from_millis(250);
const BOUND: Duration = Duration::from_millis(2_000);

fn established(config: SessionConfig) -> Harness {
    let mut h = Harness::new(config);
    h.establish(1, TIMEOUT_MS);
    h.events();
    h
}

/// The syncs among `sent`, by xid.
fn syncs(sent: &[(RequestHeader, Bytes)]) -> Vec<i32> {
    sent.iter()
        .filter(|(header, _)| header.op_code == OpCode::SYNC)
        .map(|(header, _)| header.xid)
        .collect()
}

fn sync_reply(xid: i32) -> Bytes {
    frame(
        ok(xid, 5),
        SyncResponse {
            path: Some("/".into()),
        },
    )
}

fn dropped(events: &[SessionEvent]) -> bool {
    events
        .iter()
        .any(|e| matches!(e, SessionEvent::DropConnection(Error::ConnectionLoss)))
        && events.contains(&SessionEvent::State(SessionState::Disconnected))
}

#[test]
fn off_by_default_no_sync_is_sent() {
    let mut h = established(config());
    assert!(!h.session.quorum_check_enabled());
    h.advance(Duration::from_millis(1_400));
    let sent = h.sent();
    assert!(syncs(&sent).is_empty(), "{sent:?}");
    assert_eq!(sent.len(), 1, "one ping after T/3: {sent:?}");
}

#[test]
fn held_a_sync_goes_at_once_then_every_sixteenth_of_the_timeout_while_answered() {
    let mut h = established(config());
    h.session.hold_quorum_check();
    h.advance(Duration::ZERO);
    let first = syncs(&h.sent());
    assert_eq!(first.len(), 1, "a check at once");
    let mut last = first[0];
    h.server_says(sync_reply(last));
    for _ in 0..40 {
        h.advance(INTERVAL - Duration::from_millis(1));
        assert!(syncs(&h.sent()).is_empty(), "not before the interval");
        h.advance(Duration::from_millis(1));
        let sent = h.sent();
        assert_eq!(syncs(&sent).len(), 1, "{sent:?}");
        assert_eq!(sent.len(), 1, "no ping while checks go out: {sent:?}");
        last = syncs(&sent)[0];
        h.server_says(sync_reply(last));
    }
    assert!(!dropped(&h.events()));
    assert_eq!(h.session.state(), SessionState::Connected);
}

/// A cut-off follower: frames keep arriving (here notifications), but the sync, which only
/// the leader completes, does not. The connection goes `T/2` after the sync was sent, sooner
/// than the read timeout (`2T/3` of silence) would have, and whatever else arrives.
#[test]
fn a_sync_unanswered_for_half_the_timeout_drops_the_connection_though_frames_arrive() {
    let mut h = established(config());
    h.session.hold_quorum_check();
    h.advance(Duration::ZERO);
    let first = syncs(&h.sent());
    assert_eq!(first.len(), 1);
    let sent_at = h.now;
    // More checks go out meanwhile, every interval; none is answered.
    let mut step = Duration::ZERO;
    while step + INTERVAL < BOUND {
        h.advance(INTERVAL);
        step += INTERVAL;
        h.server_says(notification(EventType::NODE_DATA_CHANGED, "/x"));
        assert_eq!(syncs(&h.sent()).len(), 1);
        assert!(!dropped(&h.events()), "not before the bound ({step:?})");
    }
    h.advance(sent_at + BOUND - Duration::from_millis(1) - h.now);
    assert!(!dropped(&h.events()));
    h.advance(Duration::from_millis(1));
    assert!(
        dropped(&h.events()),
        "dropped T/2 after the first unanswered check"
    );
    assert_eq!(h.session.state(), SessionState::Disconnected);
}

#[test]
fn an_answered_check_does_not_count_for_a_later_one() {
    let mut h = established(config());
    h.session.hold_quorum_check();
    h.advance(Duration::ZERO);
    let first = syncs(&h.sent())[0];
    h.server_says(sync_reply(first));
    h.advance(INTERVAL);
    assert_eq!(syncs(&h.sent()).len(), 1);
    let second_sent = h.now;
    h.advance(BOUND - Duration::from_millis(1));
    h.events();
    h.advance(Duration::from_millis(1));
    assert!(dropped(&h.events()));
    assert_eq!(h.now, second_sent + BOUND);
}

#[test]
fn an_error_reply_still_answers_the_check() {
    let mut h = established(config());
    h.session.hold_quorum_check();
    h.advance(Duration::ZERO);
    let xid = syncs(&h.sent())[0];
    h.server_says(frame(
        ReplyHeader {
            xid,
            zxid: 5,
            err: ErrorCode::NO_NODE,
        },
        (),
    ));
    h.advance(BOUND);
    assert!(!dropped(&h.events()));
}

#[test]
fn released_no_more_checks_and_an_unanswered_one_is_no_longer_held_against_the_server() {
    let mut h = established(config());
    h.session.hold_quorum_check();
    h.session.hold_quorum_check();
    h.advance(Duration::ZERO);
    assert_eq!(syncs(&h.sent()).len(), 1);
    h.session.release_quorum_check();
    assert!(h.session.quorum_check_enabled(), "holds are counted");
    h.session.release_quorum_check();
    assert!(!h.session.quorum_check_enabled());
    // Past the bound of the unanswered check, short of the read timeout (2T/3).
    h.advance(BOUND + Duration::from_millis(100));
    let sent = h.sent();
    assert!(syncs(&sent).is_empty(), "{sent:?}");
    assert!(!dropped(&h.events()));
}

#[test]
fn configured_on_it_runs_without_a_hold_and_again_on_each_new_connection() {
    let mut h = established(SessionConfig {
        quorum_check: true,
        ..config()
    });
    h.advance(Duration::ZERO);
    assert_eq!(syncs(&h.sent()).len(), 1);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.events();
    h.advance(Duration::from_secs(1));
    h.establish(1, TIMEOUT_MS);
    h.advance(Duration::ZERO);
    let sent = h.sent();
    assert_eq!(
        syncs(&sent).len(),
        1,
        "a check at once on the new connection"
    );
    h.advance(BOUND);
    assert!(dropped(&h.events()));
}

#[test]
fn no_check_on_a_read_only_server() {
    let mut h = Harness::new(SessionConfig {
        read_only: true,
        quorum_check: true,
        ..config()
    });
    h.establish_on(9, TIMEOUT_MS, true);
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    h.advance(BOUND);
    let sent = h.sent();
    assert!(syncs(&sent).is_empty(), "{sent:?}");
}
