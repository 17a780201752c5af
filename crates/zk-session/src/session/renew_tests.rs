//! Renewal of an expired session (`SessionConfig::renew_expired`), scripted: the expiry is
//! reported first and in full, then a new session starts on the same state machine.

use std::time::Duration;

use jute::*;

use super::tests::{Harness, accepted, config, expired_answer, get_data, replies};
use super::*;

fn renewing() -> SessionConfig {
    SessionConfig {
        renew_expired: true,
        ..config()
    }
}

/// Session 1 established, one watch armed and a reply that carried zxid 0x42 read; then the
/// connection is lost and the server says the session expired.
fn expire_after_a_watch(h: &mut Harness) -> RequestId {
    h.establish(1, 30_000);
    let watch = h.watch_data("/a", 0x42);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.events();
    h.connect();
    h.server_says(expired_answer());
    watch
}

#[test]
fn an_expired_session_is_reported_in_full_before_the_new_one_starts() {
    let mut h = Harness::new(renewing());
    let watch = expire_after_a_watch(&mut h);
    assert_eq!(h.session.state(), SessionState::Expired);
    assert_eq!(
        h.session.submit(get_data("/b", false), None),
        Err(Error::SessionExpired),
        "nothing is queued on the expired session"
    );
    // The expiry, as without renewal (the state, the lost watch), then the new session: it
    // starts only once the expiry's events were all handed out.
    let events = h.events();
    let at = |wanted: &SessionEvent| events.iter().position(|e| e == wanted);
    let expired = at(&SessionEvent::State(SessionState::Expired)).expect("Expired told");
    let lost = at(&SessionEvent::WatchLost {
        id: watch,
        error: Error::SessionExpired,
    })
    .expect("the watch reported lost");
    assert_eq!(
        events.last(),
        Some(&SessionEvent::State(SessionState::Connecting)),
        "the renewal comes last"
    );
    assert!(expired < events.len() - 1 && lost < events.len() - 1);
    assert_eq!(h.session.session_id(), 0);
    assert!(h.session.wants_connection());
    let queued = h.submit(get_data("/c", false));
    let request = h.connect();
    assert_eq!(request.session_id, 0, "a new session is asked for");
    assert_eq!(request.passwd.as_deref(), Some(&[0u8; 16][..]));
    assert_eq!(
        request.last_zxid_seen, 0x42,
        "never a server behind what the client saw"
    );
    h.server_says(accepted(2, 20_000, 9, Some(false)));
    assert_eq!(h.session.state(), SessionState::Connected);
    assert_eq!(h.session.session_id(), 2);
    // No SetWatches: the old session's watches are gone. The queued call goes out.
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0.op_code, OpCode::GET_DATA);
    h.answer_empty_data(sent[0].0.xid, 0x43);
    assert!(
        replies(&h.events())
            .iter()
            .any(|(id, result)| *id == queued && result.is_ok())
    );
}

#[test]
fn without_renewal_an_expired_session_stays_expired() {
    let mut h = Harness::new(config());
    expire_after_a_watch(&mut h);
    assert!(
        !h.events()
            .contains(&SessionEvent::State(SessionState::Connecting))
    );
    assert_eq!(h.session.state(), SessionState::Expired);
    assert!(!h.session.wants_connection());
}

#[test]
fn a_session_that_never_was_established_is_not_renewed() {
    let mut h = Harness::new(SessionConfig {
        resume: Some((7, crate::Secret::new(vec![1; 16]))),
        ..renewing()
    });
    h.connect();
    h.server_says(expired_answer());
    h.events();
    assert_eq!(
        h.session.state(),
        SessionState::Expired,
        "resuming an expired session fails connect"
    );
}

#[test]
fn a_closed_or_refused_session_is_never_renewed() {
    let mut h = Harness::new(renewing());
    h.establish(1, 30_000);
    h.session.detach();
    h.events();
    assert_eq!(h.session.state(), SessionState::Closed);
}

#[test]
fn a_locally_expired_session_is_renewed_and_the_new_one_never_gives_up() {
    let mut h = Harness::new(SessionConfig {
        connect_timeout: Some(Duration::from_secs(5)),
        ..renewing()
    });
    h.establish(1, 30_000);
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    // No server answers for the whole session timeout.
    h.advance(Duration::from_secs(31));
    assert_eq!(h.session.state(), SessionState::Expired);
    assert!(
        h.events()
            .ends_with(&[SessionEvent::State(SessionState::Connecting)])
    );
    // Hours of failed attempts: the new session is still being looked for, past the connect
    // timeout that bounds a client's first session.
    for _ in 0..400 {
        h.advance(Duration::from_secs(10));
        if h.session.poll_connect(h.now).is_some() {
            h.session.handle_connect_failed(
                h.now,
                ConnectFailure::Io {
                    kind: std::io::ErrorKind::ConnectionRefused,
                    message: "refused".into(),
                },
            );
        }
    }
    assert_eq!(h.session.state(), SessionState::Connecting);
    assert!(!h.events().iter().any(|e| matches!(
        e,
        SessionEvent::GaveUp(_) | SessionEvent::State(SessionState::Closed)
    )));
    let request = h.connect();
    assert_eq!(request.session_id, 0);
}

#[test]
fn a_close_between_the_expiry_and_the_renewal_ends_the_client() {
    let mut h = Harness::new(renewing());
    expire_after_a_watch(&mut h);
    // The driver takes a close in the same turn as the expiry, before it hands the expiry's
    // events on (when the renewal would start).
    let close = h.session.close(h.now);
    let events = h.events();
    assert!(replies(&events).contains(&(close, Ok(Response::Empty))));
    assert!(
        !events.contains(&SessionEvent::State(SessionState::Connecting)),
        "the caller asked for the end"
    );
    assert_eq!(h.session.state(), SessionState::Expired);
    assert!(!h.session.wants_connection());
}
