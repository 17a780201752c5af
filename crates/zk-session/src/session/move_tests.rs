//! Moves the client makes itself (a new host list, a read/write server found): the state stays
//! `Connected` for the move's grace (`T/3` after the last answered request), so that nothing
//! that watches the state takes a move for a lost session; persistent watchers are told of the
//! connection all the same.

use std::time::Duration;

use jute::{AddWatchMode, KeeperState};

use super::hosts_tests::{host, on_first_of_three_with};
use super::tests::{Harness, config, frame, ok};
use super::*;
use crate::path::Chroot;

/// A 3 s session (grace 1 s) on host 1 of hosts 1, 2, 3, established at `h.now`.
fn on_first_of_three() -> Harness {
    on_first_of_three_with(config(), 3_000)
}

/// Moves the session off host 1 (removed from the list).
fn move_off(h: &mut Harness) {
    let moving = h
        .session
        .update_hosts(h.now, vec![host(2), host(3)], &Chroot::none(), true);
    assert_eq!(moving, Ok(true));
}

fn states(events: &[SessionEvent]) -> Vec<SessionState> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::State(s) => Some(*s),
            _ => None,
        })
        .collect()
}

#[test]
fn a_move_that_ends_within_the_grace_changes_no_state() {
    let mut h = on_first_of_three();
    h.advance(Duration::from_millis(100));
    move_off(&mut h);
    h.advance(Duration::from_millis(800));
    assert_eq!(h.session.state(), SessionState::Connected);
    assert!(h.session.poll_connect(h.now).is_some());
    h.establish(0x77, 3_000);
    assert_eq!(states(&h.events()), []);
    // The grace is over with the move: a later loss is a loss at once.
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert_eq!(states(&h.events()), [SessionState::Disconnected]);
}

#[test]
fn a_move_not_done_within_the_grace_is_a_disconnection_then() {
    let mut h = on_first_of_three();
    let established = h.now;
    move_off(&mut h);
    // The handshake was the last answered send: the grace ends 1 s after it.
    h.advance(Duration::from_millis(999));
    assert_eq!(states(&h.events()), []);
    h.advance(Duration::from_millis(1));
    assert_eq!(h.now, established + Duration::from_secs(1));
    assert_eq!(states(&h.events()), [SessionState::Disconnected]);
    assert!(h.session.poll_connect(h.now).is_some());
    h.establish(0x77, 3_000);
    assert_eq!(states(&h.events()), [SessionState::Connected]);
}

#[test]
fn no_grace_when_the_last_answer_is_older_than_it() {
    let mut h = on_first_of_three();
    // Nothing answered for longer than the grace (the pings went unanswered).
    h.advance(Duration::from_millis(1_500));
    move_off(&mut h);
    assert_eq!(states(&h.events()), [SessionState::Disconnected]);
}

#[test]
fn persistent_watchers_are_told_of_the_move_though_the_state_stays() {
    let mut h = on_first_of_three();
    let id = h
        .session
        .submit(
            Op::AddWatch {
                path: "/p".into(),
                mode: AddWatchMode::PERSISTENT,
            },
            None,
        )
        .expect("addWatch");
    let xid = h.sent()[0].0.xid;
    h.server_says(frame(
        ok(xid, 3),
        jute::ErrorResponse {
            err: jute::ErrorCode::OK,
        },
    ));
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::Reply { id: r, result: Ok(_), .. } if *r == id)),
        "{events:?}"
    );
    move_off(&mut h);
    let markers = |events: &[SessionEvent]| -> Vec<KeeperState> {
        events
            .iter()
            .filter_map(|e| match e {
                SessionEvent::Watch { id: w, event, .. } if *w == id => Some(event.state),
                _ => None,
            })
            .collect()
    };
    assert_eq!(markers(&h.events()), [KeeperState::DISCONNECTED]);
    assert!(h.session.poll_connect(h.now).is_some());
    h.establish(0x77, 3_000);
    assert_eq!(markers(&h.events()), [KeeperState::SYNC_CONNECTED]);
}

#[test]
fn a_loss_that_the_client_did_not_choose_is_a_disconnection_at_once() {
    let mut h = on_first_of_three();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert_eq!(states(&h.events()), [SessionState::Disconnected]);
}

#[test]
fn a_move_that_lands_on_a_read_only_server_goes_through_disconnected() {
    let mut h = on_first_of_three_with(
        SessionConfig {
            read_only: true,
            ..config()
        },
        3_000,
    );
    move_off(&mut h);
    assert_eq!(states(&h.events()), []);
    assert!(h.session.poll_connect(h.now).is_some());
    h.establish_on(0x77, 3_000, true);
    assert_eq!(
        states(&h.events()),
        [SessionState::Disconnected, SessionState::ConnectedReadOnly]
    );
}
