//! How a session ends: expiry fails everything and loses every watch; close is sent after
//! queued requests, bounded by its timeout, and answered once the session is closed.

use super::*;

#[test]
fn an_expired_session_fails_everything_and_reports_every_watch_lost() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.watch_data("/a", 2);
    let in_flight = h.submit(get_data("/b", false));
    h.sent();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let queued = h.submit(get_data("/c", false));
    h.events();
    h.connect();
    h.server_says(expired_answer());
    let events = h.events();
    assert!(replies(&events).contains(&(queued, Err(Error::SessionExpired))));
    assert!(events.contains(&SessionEvent::WatchLost {
        id: watch,
        error: Error::SessionExpired
    }));
    assert!(events.contains(&SessionEvent::State(SessionState::Expired)));
    assert_eq!(h.session.state(), SessionState::Expired);
    assert!(!h.session.wants_connection(), "no reconnect after expiry");
    assert_eq!(
        h.session.submit(get_data("/d", false), None),
        Err(Error::SessionExpired)
    );
    let _ = in_flight;
}

#[test]
fn close_sends_close_session_after_queued_requests_and_ends_closed() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.watch_data("/a", 2);
    let before = h.submit(get_data("/b", false));
    let close = h.session.close(h.now);
    assert_eq!(
        h.session.submit(get_data("/c", false), None),
        Err(Error::Closed)
    );
    let sent = h.sent();
    assert_eq!(
        sent.iter().map(|(h, _)| h.op_code).collect::<Vec<_>>(),
        [OpCode::GET_DATA, OpCode::CLOSE_SESSION]
    );
    h.answer_empty_data(sent[0].0.xid, 3);
    h.server_says(frame(ok(sent[1].0.xid, 4), ()));
    let events = h.events();
    assert!(replies(&events).contains(&(before, Ok(Response::GetData(empty_data())))));
    assert!(replies(&events).contains(&(close, Ok(Response::Empty))));
    assert!(events.contains(&SessionEvent::WatchLost {
        id: watch,
        error: Error::Closed
    }));
    assert_eq!(h.session.state(), SessionState::Closed);
}

#[test]
fn close_without_answer_gives_up_after_the_close_timeout() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let close = h.session.close(h.now);
    h.sent();
    h.advance(Duration::from_secs(2));
    assert_eq!(h.session.state(), SessionState::Closed);
    assert!(replies(&h.events()).contains(&(close, Ok(Response::Empty))));
}

#[test]
fn a_close_whose_connection_drops_in_flight_is_answered_ok_after_the_closed_state() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let other = h.submit(get_data("/a", false));
    let close = h.session.close(h.now);
    let sent = h.sent();
    assert_eq!(
        sent.last().map(|s| s.0.op_code),
        Some(OpCode::CLOSE_SESSION)
    );
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let events = h.events();
    // The request before it lost its connection; the close itself is done.
    assert!(replies(&events).contains(&(other, Err(Error::ConnectionLoss))));
    let to_closer: Vec<_> = replies(&events)
        .into_iter()
        .filter(|(id, _)| *id == close)
        .collect();
    assert_eq!(
        to_closer,
        [(close, Ok(Response::Empty))],
        "exactly one answer"
    );
    // The closed state comes before the closer's answer: the driver publishes it first.
    let state_at = events
        .iter()
        .position(|e| *e == SessionEvent::State(SessionState::Closed))
        .expect("a Closed state event");
    let close_at = events
        .iter()
        .position(|e| matches!(e, SessionEvent::Reply { id, .. } if *id == close))
        .expect("the closer's reply");
    assert!(state_at < close_at, "{events:?}");
    // Nothing more to do: no reconnection is wanted.
    assert_eq!(h.session.state(), SessionState::Closed);
    assert!(!h.session.wants_connection());
    assert_eq!(h.session.poll_connect(h.now), None);
}

#[test]
fn the_terminal_state_comes_before_the_calls_it_fails() {
    let mut h = Harness::connected();
    let sent = h.submit(get_data("/sent", false));
    h.sent();
    let queued = h.submit(get_data("/queued", false));
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.events();
    h.advance(Duration::from_secs(31));
    let events = h.events();
    let expired_at = events
        .iter()
        .position(|e| *e == SessionEvent::State(SessionState::Expired))
        .expect("an Expired state event");
    let failed_at = events
        .iter()
        .position(|e| matches!(e, SessionEvent::Reply { id, .. } if *id == queued))
        .expect("the queued call's reply");
    assert!(expired_at < failed_at, "{events:?}");
    assert!(replies(&events).contains(&(queued, Err(Error::SessionExpired))));
    // The call in flight had already failed with the connection.
    assert!(!replies(&events).iter().any(|(id, _)| *id == sent));
}

#[test]
fn a_second_close_is_answered_when_the_session_is_closed_not_before() {
    // Found by the session_script fuzz target: a close while closeSession was on its way was
    // answered at once, in a live state.
    let mut h = Harness::connected();
    let first = h.session.close(h.now);
    let second = h.session.close(h.now);
    let sent = h.sent();
    assert_eq!(
        sent.iter().map(|(h, _)| h.op_code).collect::<Vec<_>>(),
        [OpCode::CLOSE_SESSION],
        "one closeSession"
    );
    assert!(
        replies(&h.events()).is_empty(),
        "nobody answered before the close"
    );
    h.server_says(frame(ok(sent[0].0.xid, 5), ()));
    let events = h.events();
    let closed_at = events
        .iter()
        .position(|e| *e == SessionEvent::State(SessionState::Closed))
        .expect("closed");
    let answers: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, SessionEvent::Reply { .. }))
        .map(|(at, _)| at)
        .collect();
    assert!(answers.iter().all(|&at| at > closed_at), "{events:?}");
    assert_eq!(
        replies(&events),
        [(first, Ok(Response::Empty)), (second, Ok(Response::Empty))]
    );
    // After the end, a close is answered at once.
    let third = h.session.close(h.now);
    assert_eq!(replies(&h.events()), [(third, Ok(Response::Empty))]);
}
