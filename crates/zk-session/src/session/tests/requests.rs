//! Requests out and replies in: the handshake, pipelining and the in-flight window, replies
//! matched in order, refusals, undecodable and oversized frames, and the chroot.

use super::*;

#[test]
fn handshake_sends_the_requested_timeout_and_read_only_flag() {
    let mut h = Harness::new(SessionConfig {
        read_only: true,
        ..config()
    });
    let request = h.establish(0x1234, 20_000);
    assert_eq!(request.time_out, 30_000);
    assert_eq!(request.session_id, 0);
    assert_eq!(request.last_zxid_seen, 0);
    assert!(request.read_only);
    assert_eq!(request.passwd.as_deref(), Some(&[0u8; 16][..]));
    assert_eq!(h.session.state(), SessionState::Connected);
    assert_eq!(h.session.session_id(), 0x1234);
    assert_eq!(
        h.session.negotiated_timeout(),
        Some(Duration::from_secs(20))
    );
    assert_eq!(h.events(), [SessionEvent::State(SessionState::Connected)]);
}

#[test]
fn nothing_but_the_connect_request_goes_before_the_handshake() {
    let mut h = Harness::new(config());
    let id = h.submit(get_data("/a", false));
    h.connect();
    assert!(h.sent().is_empty());
    h.server_says(accepted(1, 30_000, 1, None));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].0.op_code, OpCode::GET_DATA);
    h.server_says(frame(
        ok(sent[0].0.xid, 5),
        GetDataResponse {
            data: Some(Bytes::from_static(b"x")),
            stat: stat(1),
        },
    ));
    let events = h.events();
    assert!(matches!(replies(&events).as_slice(), [(r, Ok(Response::GetData(_)))] if *r == id));
}

#[test]
fn requests_are_pipelined_in_call_order_and_replies_match_in_fifo_order() {
    let mut h = Harness::connected();
    let ids: Vec<_> = (0..100)
        .map(|n| h.submit(get_data(&format!("/n{n}"), false)))
        .collect();
    let sent = h.sent();
    assert_eq!(sent.len(), 100, "all in flight at once");
    let xids: Vec<i32> = sent.iter().map(|(header, _)| header.xid).collect();
    assert!(
        xids.windows(2).all(|w| w[1] == w[0] + 1),
        "xids in call order: {xids:?}"
    );
    for (n, (header, body)) in sent.iter().enumerate() {
        let request: GetDataRequest = decode_exact(body.clone()).expect("GetDataRequest");
        assert_eq!(request.path, Some(format!("/n{n}")));
        h.server_says(frame(
            ok(header.xid, 10 + n as i64),
            GetDataResponse {
                data: None,
                stat: stat(n as i32),
            },
        ));
    }
    let got: Vec<RequestId> = replies(&h.events())
        .into_iter()
        .map(|(id, r)| {
            assert!(r.is_ok());
            id
        })
        .collect();
    assert_eq!(got, ids);
    assert_eq!(h.session.last_zxid(), 109);
}

#[test]
fn a_reply_out_of_order_drops_the_connection_and_fails_what_was_in_flight() {
    let mut h = Harness::connected();
    let first = h.submit(get_data("/a", false));
    let second = h.submit(get_data("/b", false));
    let sent = h.sent();
    h.answer_empty_data(sent[1].0.xid, 3);
    let events = h.events();
    assert_eq!(
        replies(&events),
        [
            (first, Err(Error::ConnectionLoss)),
            (second, Err(Error::ConnectionLoss))
        ]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::DropConnection(Error::Protocol(ProtocolError::XidOutOfOrder { .. }))
    )));
    assert!(events.contains(&SessionEvent::State(SessionState::Disconnected)));
    assert!(h.session.wants_connection());
    // The next connection resumes the session.
    let request = h.establish(1, 30_000);
    assert_eq!(request.session_id, 1);
    assert_eq!(request.passwd.as_deref(), Some(&[7u8; 16][..]));
}

/// A write and a read in flight on a session of the given kind; the server answers the write
/// with `NotReadOnly` first, as a read-only server does (its first processor refuses writes at
/// once, ahead of the reads queued before them).
fn refusal_overtakes_a_read(read_only_server: bool) -> (Harness, RequestId, RequestId) {
    let mut h = Harness::new(SessionConfig {
        read_only: true,
        ..config()
    });
    h.establish_on(9, 30_000, read_only_server);
    h.events();
    let read = h.submit(get_data("/a", true));
    let write = h.submit(Op::Create {
        path: "/b".into(),
        data: Bytes::new(),
        acl: vec![],
        mode: CreateMode::PERSISTENT,
        ttl: None,
    });
    let sent = h.sent();
    h.server_says(frame(
        failed(sent[1].0.xid, 5, ErrorCode::NOT_READ_ONLY),
        (),
    ));
    (h, read, write)
}

#[test]
fn a_read_only_server_refusing_a_write_ahead_of_a_read_keeps_the_connection() {
    let (mut h, read, write) = refusal_overtakes_a_read(true);
    assert_eq!(replies(&h.events()), [(write, Err(Error::NotReadOnly))]);
    let read_xid = h
        .session
        .pending
        .front()
        .expect("the read is in flight")
        .xid;
    h.answer_empty_data(read_xid, 5);
    let events = h.events();
    assert!(matches!(&replies(&events)[..], [(id, Ok(_))] if *id == read));
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    assert_eq!(h.session.watch_count(), 1, "the read armed its watch");
    // Only a refusal may overtake: any other reply out of order still drops the connection.
    let first = h.submit(get_data("/c", false));
    h.submit(get_data("/d", false));
    let sent = h.sent();
    h.answer_empty_data(sent[1].0.xid, 6);
    let events = h.events();
    assert!(replies(&events).contains(&(first, Err(Error::ConnectionLoss))));
    assert!(events.contains(&SessionEvent::State(SessionState::Disconnected)));
}

#[test]
fn a_read_write_server_refusing_out_of_order_drops_the_connection() {
    let (mut h, read, write) = refusal_overtakes_a_read(false);
    let events = h.events();
    assert_eq!(
        replies(&events),
        [
            (read, Err(Error::ConnectionLoss)),
            (write, Err(Error::ConnectionLoss))
        ]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::DropConnection(Error::Protocol(ProtocolError::XidOutOfOrder { .. }))
    )));
}

#[test]
fn a_reply_with_nothing_in_flight_is_a_protocol_error() {
    let mut h = Harness::connected();
    h.server_says(frame(ok(42, 3), ()));
    let events = h.events();
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::DropConnection(Error::Protocol(ProtocolError::UnknownXid(42)))
    )));
}

#[test]
fn an_undecodable_reply_body_fails_only_its_call() {
    let mut h = Harness::connected();
    let first = h.submit(get_data("/a", false));
    let second = h.submit(get_data("/b", false));
    let sent = h.sent();
    // The first reply's body is cut short; its header (and the frame boundary) is intact.
    let mut bad = frame(ok(sent[0].0.xid, 3), empty_data());
    bad.truncate(bad.len() - 1);
    h.server_says(bad);
    h.server_says(frame(
        ok(sent[1].0.xid, 4),
        GetDataResponse {
            data: Some(Bytes::from_static(b"b")),
            stat: stat(1),
        },
    ));
    let events = h.events();
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_))),
        "{events:?}"
    );
    let replies = replies(&events);
    assert_eq!(replies.len(), 2, "{events:?}");
    assert_eq!(replies[0].0, first);
    let error = replies[0]
        .1
        .as_ref()
        .expect_err("the undecodable reply fails");
    assert!(
        matches!(error, Error::Protocol(ProtocolError::Decode(_))),
        "{error:?}"
    );
    assert!(!error.is_retryable(), "the same reply would come again");
    assert_eq!(replies[1].0, second);
    assert!(replies[1].1.is_ok(), "{:?}", replies[1].1);
    assert_eq!(h.session.state(), SessionState::Connected);
}

#[test]
fn frames_without_a_readable_header_or_event_drop_the_connection() {
    let mut h = Harness::connected();
    // No room for a reply header: the stream cannot be trusted.
    h.server_says(Bytes::from_static(b"\x00\x01"));
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(Error::Protocol(_))))
    );
    // A notification cut short: an event may be lost, so the connection is dropped (the
    // watches are re-registered on the next one).
    h.advance(Duration::from_secs(2));
    h.establish(1, 30_000);
    h.events();
    let mut bad = notification(EventType::NODE_DATA_CHANGED, "/a");
    bad.truncate(bad.len() - 1);
    h.server_says(bad);
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(Error::Protocol(_))))
    );
}

#[test]
fn the_in_flight_window_holds_back_the_rest() {
    let mut h = Harness::new(SessionConfig {
        max_in_flight: 3,
        ..config()
    });
    h.establish(1, 30_000);
    for n in 0..5 {
        h.submit(get_data(&format!("/{n}"), false));
    }
    let sent = h.sent();
    assert_eq!(sent.len(), 3);
    assert_eq!((h.session.in_flight(), h.session.queued()), (3, 2));
    h.answer_empty_data(sent[0].0.xid, 2);
    assert_eq!(h.sent().len(), 1);
}

/// Fills the server's backlog: `BACKLOG_HOLD` requests sent and not answered yet.
fn with_a_backlog() -> (Harness, Vec<(RequestHeader, Bytes)>) {
    let mut h = Harness::connected();
    for n in 0..super::super::BACKLOG_HOLD {
        h.submit(get_data(&format!("/{n}"), false));
    }
    let sent = h.sent();
    assert_eq!(
        sent.len(),
        super::super::BACKLOG_HOLD,
        "below the backlog: written at once"
    );
    (h, sent)
}

#[test]
fn requests_behind_a_backlog_wait_for_a_reply_or_a_batch() {
    let (mut h, backlog) = with_a_backlog();
    h.submit(get_data("/late", false));
    assert!(
        h.sent().is_empty(),
        "held while the server has its backlog to answer"
    );
    assert_eq!((h.session.in_flight(), h.session.queued()), (64, 1));
    // One reply: the backlog is below the mark, and the held request goes.
    h.answer_empty_data(backlog[0].0.xid, 2);
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    let request: GetDataRequest = decode_exact(sent[0].1.clone()).expect("GetDataRequest");
    assert_eq!(request.path.as_deref(), Some("/late"));
}

#[test]
fn a_full_batch_behind_a_backlog_is_written_whole() {
    let (mut h, _) = with_a_backlog();
    for n in 1..super::super::BACKLOG_BATCH {
        h.submit(get_data(&format!("/b{n}"), false));
        assert!(h.sent().is_empty(), "{n} queued: still held");
    }
    h.submit(get_data("/last", false));
    let sent = h.sent();
    assert_eq!(
        sent.len(),
        super::super::BACKLOG_BATCH,
        "the batch, in one go"
    );
    let paths: Vec<String> = sent
        .iter()
        .map(|(_, body)| {
            let r: GetDataRequest = decode_exact(body.clone()).expect("GetDataRequest");
            r.path.unwrap_or_default()
        })
        .collect();
    assert_eq!(
        paths.first().map(String::as_str),
        Some("/b1"),
        "in call order"
    );
    assert_eq!(paths.last().map(String::as_str), Some("/last"));
    // The next request waits for a batch of its own.
    h.submit(get_data("/next", false));
    assert!(h.sent().is_empty());
}

#[test]
fn requests_held_behind_a_backlog_go_out_on_the_next_connection() {
    let (mut h, _) = with_a_backlog();
    let held = h.submit(get_data("/held", false));
    assert!(h.sent().is_empty());
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let lost = replies(&h.events());
    assert!(
        lost.iter().all(|(id, _)| *id != held),
        "the held request was never sent, so it is not lost with the connection"
    );
    h.advance(Duration::from_secs(2));
    h.establish(1, 30_000);
    let sent = h.sent();
    assert!(
        sent.iter()
            .any(|(_, body)| decode_exact::<GetDataRequest>(body.clone())
                .is_ok_and(|r| r.path.as_deref() == Some("/held"))),
        "written on the new connection"
    );
}

#[test]
fn the_chroot_is_applied_out_and_stripped_in() {
    let mut h = Harness::new(SessionConfig {
        chroot: crate::path::Chroot::new("/app").expect("valid"),
        ..config()
    });
    h.establish(1, 30_000);
    let create = h.submit(Op::Create {
        path: "/n-".into(),
        data: Bytes::new(),
        acl: vec![],
        mode: CreateMode::PERSISTENT_SEQUENTIAL,
        ttl: None,
    });
    let watch = h.submit(get_data("/w", true));
    let sent = h.sent();
    let request: CreateRequest = decode_exact(sent[0].1.clone()).expect("CreateRequest");
    assert_eq!(request.path.as_deref(), Some("/app/n-"));
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        Create2Response {
            path: Some("/app/n-0000000001".into()),
            stat: stat(0),
        },
    ));
    h.answer_empty_data(sent[1].0.xid, 2);
    h.server_says(notification(EventType::NODE_DELETED, "/app/w"));
    let events = h.events();
    assert!(
        matches!(&replies(&events)[0], (id, Ok(Response::Create2(r))) if *id == create && r.path.as_deref() == Some("/n-0000000001"))
    );
    assert!(events.iter().any(
        |e| matches!(e, SessionEvent::Watch { id, event, .. } if *id == watch && event.path == "/w")
    ));
}

#[test]
fn a_request_over_the_frame_limit_is_refused_before_sending() {
    let mut h = Harness::new(config());
    let data = Bytes::from(vec![0u8; 2 << 20]);
    let result = h.session.submit(
        Op::SetData {
            path: "/big".into(),
            data,
            version: None,
        },
        None,
    );
    assert!(
        matches!(result, Err(Error::PacketTooLarge { max: 1_048_575, .. })),
        "{result:?}"
    );
}

#[test]
fn a_reply_over_the_frame_limit_fails_its_request_as_too_large_and_the_session_resumes() {
    // Before: the request got ConnectionLoss, which is retryable, so a caller retrying it
    // (the lock recipe retries getChildren) made the client reconnect forever.
    let mut h = Harness::new(SessionConfig {
        max_frame_len: 65_536,
        ..config()
    });
    h.establish(1, 30_000);
    h.events();
    let children = h.submit(Op::GetChildren {
        path: "/big".into(),
        watch: false,
    });
    let behind = h.submit(get_data("/b", false));
    let sent = h.sent();
    h.session
        .handle_oversized_frame(h.now, 70_000, Some(sent[0].0.xid));
    let events = h.events();
    assert_eq!(
        replies(&events),
        [
            (
                children,
                Err(Error::ReplyTooLarge {
                    len: 70_000,
                    max: 65_536
                })
            ),
            (behind, Err(Error::ConnectionLoss)),
        ]
    );
    assert!(events.contains(&SessionEvent::State(SessionState::Disconnected)));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_))),
        "the driver already dropped the connection"
    );
    assert!(h.session.wants_connection());
    let request = h.establish(1, 30_000);
    assert_eq!(request.session_id, 1, "the session is resumed");
    assert_eq!(h.session.state(), SessionState::Connected);
}

#[test]
fn an_oversized_frame_that_names_no_request_in_flight_is_a_plain_connection_loss() {
    let mut h = Harness::connected();
    // The xid not received yet, or not the oldest request's: nothing is blamed on a request.
    for wrong_xid in [false, true] {
        let request = h.submit(get_data("/a", false));
        let sent = h.sent();
        let xid = wrong_xid.then_some(sent[0].0.xid + 1);
        h.session.handle_oversized_frame(h.now, 1 << 30, xid);
        let events = h.events();
        assert_eq!(replies(&events), [(request, Err(Error::ConnectionLoss))]);
        assert!(h.session.wants_connection());
        h.establish(1, 30_000);
        h.events();
    }
}
