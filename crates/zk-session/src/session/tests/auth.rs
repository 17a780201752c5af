//! Authentication packets: an undecodable auth reply still answers its caller; auth is
//! replayed on reconnect and its failure is terminal.

use super::*;

#[test]
fn an_undecodable_auth_reply_still_answers_its_caller() {
    // Found by the session_script fuzz target: the waiter was taken off the queue before the
    // reply was decoded, so the dropped connection never answered it.
    let mut h = Harness::connected();
    let auth = h
        .session
        .add_auth("digest".into(), Bytes::from_static(b"u:p"))
        .expect("open");
    h.sent();
    // xid -4, then half a zxid: not a reply header.
    h.server_says(Bytes::from_static(b"\xff\xff\xff\xfc\x00\x00\x00\x00"));
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(Error::Protocol(_)))),
        "{events:?}"
    );
    assert_eq!(
        replies(&events),
        [(auth, Err(Error::ConnectionLoss))],
        "exactly one answer"
    );
}

#[test]
fn auth_is_replayed_on_reconnect_and_a_failure_is_terminal() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let auth = h
        .session
        .add_auth("digest".into(), Bytes::from_static(b"u:p"))
        .expect("open");
    let sent = h.sent();
    assert_eq!(
        sent[0].0,
        RequestHeader {
            xid: -4,
            op_code: OpCode::AUTH
        }
    );
    h.server_says(frame(failed(-4, 0, ErrorCode::OK), ()));
    assert_eq!(replies(&h.events()), [(auth, Ok(Response::Empty))]);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(1, 30_000);
    let sent = h.sent();
    let packet: AuthPacket = decode_exact(sent[0].1.clone()).expect("AuthPacket");
    assert_eq!(packet.scheme.as_deref(), Some("digest"));
    h.server_says(frame(failed(-4, 0, ErrorCode::AUTH_FAILED), ()));
    assert_eq!(h.session.state(), SessionState::AuthFailed);
}
