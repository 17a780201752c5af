//! The session's timers on the virtual clock: pings, the read and handshake timeouts, request
//! timeouts, local expiry and the reconnection backoff.

use super::*;

#[test]
fn a_ping_goes_out_after_a_third_of_the_timeout_without_sending() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.advance(Duration::from_millis(9_999));
    assert!(h.sent().is_empty());
    h.advance(Duration::from_millis(1));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].0,
        RequestHeader {
            xid: -2,
            op_code: OpCode::PING
        }
    );
    // The ping reply keeps the connection alive past the read timeout.
    h.server_says(frame(ok(-2, 9), ()));
    h.advance(Duration::from_secs(15));
    assert_eq!(h.session.state(), SessionState::Connected);
    assert_eq!(
        h.session.last_zxid(),
        0,
        "ping replies do not move the last zxid"
    );
}

#[test]
fn silence_for_the_read_timeout_drops_the_connection() {
    let mut h = Harness::connected();
    h.advance(Duration::from_millis(19_999));
    assert_eq!(h.session.state(), SessionState::Connected);
    h.advance(Duration::from_millis(1));
    let events = h.events();
    assert!(
        events.contains(&SessionEvent::State(SessionState::Disconnected)),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(Error::ConnectionLoss)))
    );
}

#[test]
fn a_handshake_without_answer_times_out_after_t_over_n() {
    let mut h = Harness::new(SessionConfig {
        hosts: (1..=3)
            .map(|p| crate::connect_string::HostAddr::new("h", p))
            .collect(),
        ..config()
    });
    h.connect();
    h.advance(Duration::from_millis(9_999));
    assert!(h.events().is_empty());
    h.advance(Duration::from_millis(1));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_)))
    );
    assert_eq!(h.session.state(), SessionState::Connecting);
    assert!(h.session.wants_connection());
}

#[test]
fn a_resumed_session_with_one_host_gives_up_a_silent_handshake_after_t_over_3() {
    let mut h = Harness::connected();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    // The server accepts the connection and never answers the handshake.
    h.connect();
    h.events();
    h.advance(Duration::from_millis(9_999));
    assert!(h.events().is_empty());
    h.advance(Duration::from_millis(1));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_)))
    );
    // Two thirds of the session are left for another attempt.
    assert_eq!(h.session.state(), SessionState::Disconnected);
    assert!(h.session.wants_connection());
}

#[test]
fn a_request_timeout_answers_the_caller_and_the_late_reply_is_discarded() {
    let mut h = Harness::connected();
    let deadline = h.now + Duration::from_secs(1);
    let slow = h
        .session
        .submit(get_data("/slow", true), Some(deadline))
        .expect("valid");
    let next = h.submit(get_data("/next", false));
    let sent = h.sent();
    h.advance(Duration::from_secs(1));
    assert_eq!(replies(&h.events()), [(slow, Err(Error::RequestTimeout))]);
    h.answer_empty_data(sent[0].0.xid, 2);
    h.answer_empty_data(sent[1].0.xid, 2);
    let events = h.events();
    assert!(
        matches!(replies(&events).as_slice(), [(id, Ok(_))] if *id == next),
        "{events:?}"
    );
    assert_eq!(
        h.session.watch_count(),
        0,
        "a timed-out call leaves no watch"
    );
    assert_eq!(h.session.state(), SessionState::Connected);
}

#[test]
fn a_request_timeout_while_disconnected_removes_it_from_the_queue() {
    let mut h = Harness::new(config());
    let id = h
        .session
        .submit(get_data("/a", false), Some(h.now + Duration::from_secs(2)))
        .expect("valid");
    h.advance(Duration::from_secs(2));
    assert_eq!(replies(&h.events()), [(id, Err(Error::RequestTimeout))]);
    assert_eq!(h.session.queued(), 0);
}

#[test]
fn no_server_for_a_whole_session_timeout_expires_the_session_locally() {
    let mut h = Harness::connected();
    h.advance(Duration::from_secs(5));
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    // Attempts that never complete a handshake.
    h.advance(Duration::from_secs(24));
    assert_eq!(h.session.state(), SessionState::Disconnected);
    h.advance(Duration::from_secs(1));
    assert_eq!(h.session.state(), SessionState::Expired);
}

#[test]
fn a_new_session_that_never_connected_does_not_expire_locally() {
    let mut h = Harness::new(config());
    h.advance(Duration::from_secs(3600));
    assert_eq!(h.session.state(), SessionState::Connecting);
    assert!(h.session.wants_connection());
}

#[test]
fn every_reconnection_waits_a_backoff_that_grows_with_failures_in_a_row() {
    let mut h = Harness::new(SessionConfig {
        rng_seed: Some(7),
        ..config()
    });
    // The very first attempt goes at once.
    let start = h.now;
    assert_eq!(dial_when_allowed(&mut h), start);
    h.session.handle_connected(h.now);
    h.sent();
    h.server_says(accepted(1, 30_000, 7, Some(false)));
    assert_eq!(h.session.state(), SessionState::Connected);
    h.advance(Duration::from_secs(5));
    // A loss after a healthy connection: a short wait (at most the 20 ms base).
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let lost = h.now;
    let waited = dial_when_allowed(&mut h) - lost;
    assert!(waited <= Duration::from_millis(20), "{waited:?}");
    // Then every failure in a row doubles the nominal wait (jitter: half of it to all of it),
    // whatever the failure: a refused connect, a connection that closes at once.
    let mut nominal = Duration::from_millis(40);
    for round in 0..8 {
        let failed = h.now;
        if round % 2 == 0 {
            h.session.handle_connect_failed(
                h.now,
                ConnectFailure::Io {
                    kind: std::io::ErrorKind::ConnectionRefused,
                    message: "refused".into(),
                },
            );
        } else {
            h.session.handle_connected(h.now);
            h.session.handle_disconnected(h.now, Error::ConnectionLoss);
        }
        assert_eq!(h.session.consecutive_failures(), round + 1);
        let waited = dial_when_allowed(&mut h) - failed;
        assert!(
            waited >= nominal / 2 && waited <= nominal,
            "round {round}: waited {waited:?}, nominal {nominal:?}"
        );
        // Capped at 1 s (T/6 = 5 s is larger).
        nominal = (nominal * 2).min(Duration::from_secs(1));
    }
    assert_eq!(h.session.state(), SessionState::Disconnected);
}

#[test]
fn local_expiry_counts_from_the_last_answered_send_not_from_a_watch_event() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let _watch = h.submit(get_data("/a", true));
    let sent = h.sent();
    let t0 = h.now;
    h.answer_empty_data(sent[0].0.xid, 2);
    h.events();
    // Nine seconds later the watch fires: the server sent it unprompted, so it says nothing
    // about when the server last heard from us.
    h.advance(Duration::from_secs(9));
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/a"));
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.events();
    // The server's clock for the session started at t0 at the latest: expired at t0 + T.
    let until_expiry = t0 + Duration::from_secs(30) - h.now;
    h.advance(until_expiry - Duration::from_millis(1));
    assert_eq!(h.session.state(), SessionState::Disconnected);
    h.advance(Duration::from_millis(1));
    assert_eq!(h.session.state(), SessionState::Expired);
}

#[test]
fn an_answered_ping_moves_the_local_expiry_to_its_send_time() {
    let mut h = Harness::connected();
    // A third of the timeout without sending: a ping goes out.
    h.advance(Duration::from_secs(10));
    let pinged = h.now;
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "one ping");
    assert_eq!(sent[0].0.op_code, OpCode::PING);
    // Its answer arrives late; the expiry counts from when it was sent.
    h.advance(Duration::from_secs(2));
    h.server_says(frame(ok(-2, 0), ()));
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.events();
    let until_expiry = pinged + Duration::from_secs(30) - h.now;
    h.advance(until_expiry - Duration::from_millis(1));
    assert_eq!(h.session.state(), SessionState::Disconnected);
    h.advance(Duration::from_millis(1));
    assert_eq!(h.session.state(), SessionState::Expired);
}
