//! A new host list for a running session, scripted: who moves, at once, and what is kept.

use std::time::Duration;

use super::tests::{Harness, config};
use super::*;
use crate::path::Chroot;

pub(super) fn host(port: u16) -> HostAddr {
    HostAddr::new("h", port)
}

/// A session on host 1 of hosts 1, 2, 3 (in that order), established.
fn on_first_of_three() -> Harness {
    on_first_of_three_with(config(), 30_000)
}

/// As [`on_first_of_three`], with `config` (its hosts and order replaced) and the session
/// timeout `timeout_ms` granted.
pub(super) fn on_first_of_three_with(config: SessionConfig, timeout_ms: i32) -> Harness {
    let mut h = Harness::new(SessionConfig {
        hosts: vec![host(1), host(2), host(3)],
        shuffle_hosts: false,
        rng_seed: Some(7),
        ..config
    });
    assert_eq!(h.session.poll_connect(h.now), Some((0, host(1))));
    h.establish(0x77, timeout_ms);
    h.events();
    h
}

#[test]
fn a_session_whose_server_is_removed_moves_at_once_to_the_added_one() {
    let mut h = on_first_of_three();
    let moving = h.session.update_hosts(
        h.now,
        vec![host(2), host(3), host(4)],
        &Chroot::none(),
        true,
    );
    assert_eq!(moving, Ok(true));
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_))),
        "{events:?}"
    );
    // A move the client makes itself: the state stays for the move's grace.
    assert_eq!(h.session.state(), SessionState::Connected);
    // At once, and to the added server.
    assert_eq!(h.session.poll_connect(h.now), Some((2, host(4))));
    let request = h.establish(0x77, 30_000);
    assert_eq!(request.session_id, 0x77, "the same session, resumed");
    assert_eq!(h.session.state(), SessionState::Connected);
    let events = h.events();
    assert!(
        !events.iter().any(|e| matches!(e, SessionEvent::State(_))),
        "no state change for a quick move: {events:?}"
    );
}

#[test]
fn a_session_whose_server_stays_in_a_smaller_list_stays_connected() {
    let mut h = on_first_of_three();
    let moving = h
        .session
        .update_hosts(h.now, vec![host(1), host(3)], &Chroot::none(), true);
    assert_eq!(moving, Ok(false));
    assert!(h.events().is_empty());
    assert_eq!(h.session.hosts(), [host(1), host(3)]);
    // A later loss goes on with the new list.
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.advance(Duration::from_secs(1));
    assert_eq!(h.session.poll_connect(h.now), Some((1, host(3))));
}

#[test]
fn another_chroot_or_an_empty_list_is_refused_and_changes_nothing() {
    let mut h = on_first_of_three();
    let other = Chroot::new("/other").expect("a chroot");
    assert!(matches!(
        h.session.update_hosts(h.now, vec![host(9)], &other, true),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        h.session
            .update_hosts(h.now, Vec::new(), &Chroot::none(), true),
        Err(Error::InvalidArgument(_))
    ));
    assert_eq!(h.session.hosts(), [host(1), host(2), host(3)]);
    assert_eq!(h.session.state(), SessionState::Connected);
}

#[test]
fn a_detached_session_is_over_here_without_a_close_request() {
    let mut h = on_first_of_three();
    let pending = h.submit(Op::Sync { path: "/".into() });
    h.sent();
    h.session.detach();
    assert!(h.sent().is_empty(), "no closeSession");
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::Reply { id, result: Err(Error::Closed), .. } if *id == pending)),
        "{events:?}"
    );
    assert_eq!(h.session.state(), SessionState::Closed);
}

#[test]
fn a_resumed_session_asks_for_its_id_and_password() {
    let mut h = Harness::new(SessionConfig {
        resume: Some((0x99, crate::Secret::from(&b"0123456789abcdef"[..]))),
        ..config()
    });
    let request = h.connect();
    assert_eq!(request.session_id, 0x99);
    assert_eq!(request.passwd.as_deref(), Some(&b"0123456789abcdef"[..]));
}
