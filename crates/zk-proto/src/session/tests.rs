//! The session driven by scripted server frames on a virtual clock: no sockets, no sleeps.

use std::time::{Duration, Instant};

use bytes::Bytes;
use jute::*;

use super::*;

/// The client side of a conversation: the session, a virtual clock, and what it sent.
pub(super) struct Harness {
    pub(super) session: Session,
    pub(super) now: Instant,
}

pub(super) fn config() -> SessionConfig {
    SessionConfig {
        session_timeout: Duration::from_secs(30),
        ..SessionConfig::default()
    }
}

pub(super) fn frame(header: ReplyHeader, body: impl Encode) -> Bytes {
    (header, body).to_bytes()
}

pub(super) fn ok(xid: i32, zxid: i64) -> ReplyHeader {
    ReplyHeader {
        xid,
        zxid,
        err: ErrorCode::OK,
    }
}

fn stat(version: i32) -> Stat {
    Stat {
        version,
        ..Stat::default()
    }
}

pub(super) fn notification(event_type: EventType, path: &str) -> Bytes {
    frame(
        ReplyHeader {
            xid: -1,
            zxid: -1,
            err: ErrorCode::OK,
        },
        WatcherEvent {
            event_type,
            state: KeeperState::SYNC_CONNECTED,
            path: Some(path.into()),
        },
    )
}

fn get_data(path: &str, watch: bool) -> Op {
    Op::GetData {
        path: path.into(),
        watch,
    }
}

impl Harness {
    pub(super) fn new(config: SessionConfig) -> Self {
        Self {
            session: Session::new(config),
            now: Instant::now(),
        }
    }

    /// Opens a connection and returns the ConnectRequest the session sent.
    pub(super) fn connect(&mut self) -> ConnectRequest {
        self.session.handle_connected(self.now);
        let frame = self
            .session
            .poll_transmit(self.now)
            .expect("a ConnectRequest");
        assert!(
            self.session.poll_transmit(self.now).is_none(),
            "nothing before the handshake"
        );
        decode_exact(frame).expect("a valid ConnectRequest")
    }

    /// Connects and accepts the session.
    pub(super) fn establish(&mut self, session_id: i64, timeout_ms: i32) -> ConnectRequest {
        self.establish_on(session_id, timeout_ms, false)
    }

    /// Connects and accepts the session, on a read-only server if `read_only_server`.
    pub(super) fn establish_on(
        &mut self,
        session_id: i64,
        timeout_ms: i32,
        read_only_server: bool,
    ) -> ConnectRequest {
        let request = self.connect();
        self.server_says(
            ConnectResponse {
                protocol_version: 0,
                time_out: timeout_ms,
                session_id,
                passwd: Some(Bytes::from_static(&[7; 16])),
                read_only: Some(read_only_server),
            }
            .to_bytes(),
        );
        request
    }

    pub(super) fn server_says(&mut self, frame: Bytes) {
        self.session.handle_frame(self.now, frame);
    }

    /// Every frame the session wants to send now, split into header and body.
    pub(super) fn sent(&mut self) -> Vec<(RequestHeader, Bytes)> {
        std::iter::from_fn(|| self.session.poll_transmit(self.now))
            .map(|frame| {
                let header = decode_exact::<RequestHeader>(frame.slice(..8)).expect("header");
                (header, frame.slice(8..))
            })
            .collect()
    }

    pub(super) fn events(&mut self) -> Vec<SessionEvent> {
        std::iter::from_fn(|| self.session.poll_event()).collect()
    }

    /// Moves the clock forward, firing timers as they come due.
    pub(super) fn advance(&mut self, by: Duration) {
        let until = self.now + by;
        while let Some(at) = self.session.poll_timeout() {
            if at > until {
                break;
            }
            self.now = self.now.max(at);
            self.session.handle_timeout(self.now);
        }
        self.now = until;
    }

    pub(super) fn submit(&mut self, op: Op) -> RequestId {
        self.session.submit(op, None).expect("a valid request")
    }
}

pub(super) fn replies(events: &[SessionEvent]) -> Vec<(RequestId, Result<Response, Error>)> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Reply { id, result, .. } => Some((*id, result.clone())),
            _ => None,
        })
        .collect()
}

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
    h.server_says(
        ConnectResponse {
            protocol_version: 0,
            time_out: 30_000,
            session_id: 1,
            passwd: Some(Bytes::from_static(&[1; 16])),
            read_only: None,
        }
        .to_bytes(),
    );
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    let first = h.submit(get_data("/a", false));
    let second = h.submit(get_data("/b", false));
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[1].0.xid, 3),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
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
        ReplyHeader {
            xid: sent[1].0.xid,
            zxid: 5,
            err: ErrorCode::NOT_READ_ONLY,
        },
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
    h.server_says(frame(
        ok(read_xid, 5),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    let events = h.events();
    assert!(matches!(&replies(&events)[..], [(id, Ok(_))] if *id == read));
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    assert_eq!(h.session.watch_count(), 1, "the read armed its watch");
    // Only a refusal may overtake: any other reply out of order still drops the connection.
    let first = h.submit(get_data("/c", false));
    h.submit(get_data("/d", false));
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[1].0.xid, 6),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    h.server_says(frame(ok(42, 3), ()));
    let events = h.events();
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::DropConnection(Error::Protocol(ProtocolError::UnknownXid(42)))
    )));
}

#[test]
fn an_undecodable_reply_body_fails_only_its_call() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    let first = h.submit(get_data("/a", false));
    let second = h.submit(get_data("/b", false));
    let sent = h.sent();
    // The first reply's body is cut short; its header (and the frame boundary) is intact.
    let mut bad = frame(
        ok(sent[0].0.xid, 3),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    );
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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
fn reconnect_resumes_with_the_last_zxid_and_rearms_watches_first() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let data = h.submit(get_data("/d", true));
    let child = h.submit(Op::GetChildren {
        path: "/c".into(),
        watch: true,
    });
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 20),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    h.server_says(frame(
        ok(sent[1].0.xid, 21),
        GetChildrenResponse {
            children: Some(vec![]),
        },
    ));
    h.events();
    assert_eq!(h.session.watch_count(), 2);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let queued = h.submit(get_data("/later", false));
    let request = h.establish(1, 30_000);
    assert_eq!(request.last_zxid_seen, 21);
    assert_eq!(request.session_id, 1);
    let sent = h.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].0.op_code, OpCode::SET_WATCHES);
    let set: SetWatches = decode_exact(sent[0].1.clone()).expect("SetWatches");
    assert_eq!(set.relative_zxid, 21);
    assert_eq!(set.data_watches, Some(vec![Some("/d".into())]));
    assert_eq!(set.child_watches, Some(vec![Some("/c".into())]));
    assert_eq!(
        sent[1].0.op_code,
        OpCode::GET_DATA,
        "queued requests after the watches"
    );
    // The server fires a change made while we were away, then answers both.
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/d"));
    h.server_says(frame(ok(sent[0].0.xid, 22), ()));
    h.server_says(frame(
        ok(sent[1].0.xid, 22),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    let events = h.events();
    let watch_at = events.iter().position(|e| matches!(e, SessionEvent::Watch { id, event } if *id == data && event.event_type == EventType::NODE_DATA_CHANGED));
    let reply_at = events
        .iter()
        .position(|e| matches!(e, SessionEvent::Reply { id, .. } if *id == queued));
    assert!(watch_at.is_some() && watch_at < reply_at, "{events:?}");
    assert!(matches!(replies(&events).as_slice(), [(id, Ok(_))] if *id == queued));
    assert_eq!(h.session.watch_count(), 1);
    let _ = child;
}

#[test]
fn persistent_watches_are_rearmed_with_set_watches2() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.submit(Op::AddWatch {
        path: "/p".into(),
        mode: AddWatchMode::PERSISTENT_RECURSIVE,
    });
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 5),
        ErrorResponse { err: ErrorCode::OK },
    ));
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(1, 30_000);
    let sent = h.sent();
    assert_eq!(sent[0].0.op_code, OpCode::SET_WATCHES2);
    let set: SetWatches2 = decode_exact(sent[0].1.clone()).expect("SetWatches2");
    assert_eq!(
        set.persistent_recursive_watches,
        Some(vec![Some("/p".into())])
    );
}

#[test]
fn persistent_watchers_are_told_when_the_connection_is_lost_and_ready_again() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    let persistent = persistent_watch(&mut h, "/p");
    let one_shot = h.submit(get_data("/d", true));
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    h.events();
    let marker = |state| SessionEvent::Watch {
        id: persistent,
        event: WatchedEvent {
            event_type: EventType::NONE,
            state,
            path: String::new(),
        },
    };
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert_eq!(
        h.events(),
        [
            SessionEvent::State(SessionState::Disconnected),
            marker(KeeperState::DISCONNECTED)
        ],
        "the one-shot watcher {one_shot:?} is not told"
    );
    // A failed attempt while disconnected tells nobody again.
    h.session.handle_connected(h.now);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert!(
        !h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::Watch { .. })),
        "no second marker"
    );
    h.establish(1, 30_000);
    assert_eq!(
        h.events(),
        [
            SessionEvent::State(SessionState::Connected),
            marker(KeeperState::SYNC_CONNECTED)
        ]
    );
    // Re-armed before anything else: the server's next event comes from the re-armed watch.
    assert_eq!(h.sent()[0].0.op_code, OpCode::SET_WATCHES2);
}

#[test]
fn queued_requests_survive_a_disconnect_but_sent_ones_fail() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let sent_one = h.submit(get_data("/a", false));
    h.sent();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let waiting = h.submit(get_data("/b", false));
    let events = h.events();
    assert_eq!(replies(&events), [(sent_one, Err(Error::ConnectionLoss))]);
    assert_eq!(h.session.queued(), 1);
    h.establish(1, 30_000);
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    assert!(matches!(replies(&h.events()).as_slice(), [(id, Ok(_))] if *id == waiting));
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
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    assert_eq!(h.sent().len(), 1);
}

#[test]
fn a_request_timeout_answers_the_caller_and_the_late_reply_is_discarded() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    let deadline = h.now + Duration::from_secs(1);
    let slow = h
        .session
        .submit(get_data("/slow", true), Some(deadline))
        .expect("valid");
    let next = h.submit(get_data("/next", false));
    let sent = h.sent();
    h.advance(Duration::from_secs(1));
    assert_eq!(replies(&h.events()), [(slow, Err(Error::RequestTimeout))]);
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    h.server_says(frame(
        ok(sent[1].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
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
fn a_watch_event_comes_before_the_reply_that_saw_its_change() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.submit(get_data("/a", true));
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    h.events();
    let write = h.submit(Op::SetData {
        path: "/a".into(),
        data: Bytes::from_static(b"v"),
        version: None,
    });
    let sent = h.sent();
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/a"));
    h.server_says(frame(
        ok(sent[0].0.xid, 3),
        SetDataResponse { stat: stat(1) },
    ));
    let events = h.events();
    assert!(matches!(&events[0], SessionEvent::Watch { id, .. } if *id == watch));
    assert!(matches!(&events[1], SessionEvent::Reply { id, .. } if *id == write));
    // One-shot: a second change does not fire it again.
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/a"));
    assert!(h.events().is_empty());
}

#[test]
fn exists_on_a_missing_node_still_arms_its_watch() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    let id = h.submit(Op::Exists {
        path: "/missing".into(),
        watch: true,
    });
    let sent = h.sent();
    h.server_says(frame(
        ReplyHeader {
            xid: sent[0].0.xid,
            zxid: 2,
            err: ErrorCode::NO_NODE,
        },
        (),
    ));
    let events = h.events();
    assert_eq!(
        events,
        [SessionEvent::Reply {
            id,
            result: Err(Error::NoNode),
            watch_armed: true
        }]
    );
    h.server_says(notification(EventType::NODE_CREATED, "/missing"));
    assert!(matches!(h.events().as_slice(), [SessionEvent::Watch { id: w, .. }] if *w == id));
}

#[test]
fn a_failed_get_data_arms_no_watch() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    h.submit(get_data("/missing", true));
    let sent = h.sent();
    h.server_says(frame(
        ReplyHeader {
            xid: sent[0].0.xid,
            zxid: 2,
            err: ErrorCode::NO_NODE,
        },
        (),
    ));
    assert!(matches!(
        h.events().as_slice(),
        [SessionEvent::Reply {
            watch_armed: false,
            result: Err(Error::NoNode),
            ..
        }]
    ));
    assert_eq!(h.session.watch_count(), 0);
}

#[test]
fn an_expired_session_fails_everything_and_reports_every_watch_lost() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.submit(get_data("/a", true));
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    let in_flight = h.submit(get_data("/b", false));
    h.sent();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let queued = h.submit(get_data("/c", false));
    h.events();
    h.connect();
    h.server_says(
        ConnectResponse {
            protocol_version: 0,
            time_out: 0,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
        }
        .to_bytes(),
    );
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
fn no_server_for_a_whole_session_timeout_expires_the_session_locally() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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
fn a_resumed_session_with_another_id_is_expired() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(2, 30_000);
    assert_eq!(h.session.state(), SessionState::Expired);
}

#[test]
fn close_sends_close_session_after_queued_requests_and_ends_closed() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.submit(get_data("/a", true));
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
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
    h.server_says(frame(
        ok(sent[0].0.xid, 3),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    h.server_says(frame(ok(sent[1].0.xid, 4), ()));
    let events = h.events();
    assert!(replies(&events).contains(&(
        before,
        Ok(Response::GetData(GetDataResponse {
            data: None,
            stat: stat(0)
        }))
    )));
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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

/// Dials through `poll_connect` at the first moment the session allows; returns that moment.
fn dial_when_allowed(h: &mut Harness) -> Instant {
    loop {
        if h.session.poll_connect(h.now).is_some() {
            return h.now;
        }
        let at = h
            .session
            .poll_timeout()
            .expect("a timer while waiting to reconnect");
        assert!(at > h.now, "a timer in the past");
        h.advance(at - h.now);
    }
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
    h.server_says(
        ConnectResponse {
            protocol_version: 0,
            time_out: 30_000,
            session_id: 1,
            passwd: Some(Bytes::from_static(&[7; 16])),
            read_only: Some(false),
        }
        .to_bytes(),
    );
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
fn an_undecodable_auth_reply_still_answers_its_caller() {
    // Found by the session_script fuzz target: the waiter was taken off the queue before the
    // reply was decoded, so the dropped connection never answered it.
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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
fn a_second_close_is_answered_when_the_session_is_closed_not_before() {
    // Found by the session_script fuzz target: a close while closeSession was on its way was
    // answered at once, in a live state.
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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

/// Arms a persistent watch on `path` (addWatch answered OK); returns its id.
fn persistent_watch(h: &mut Harness, path: &str) -> RequestId {
    let id = h.submit(Op::AddWatch {
        path: path.into(),
        mode: AddWatchMode::PERSISTENT,
    });
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 1),
        ErrorResponse { err: ErrorCode::OK },
    ));
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::Reply { id: r, watch_armed: true, .. } if *r == id)),
        "{sent:?} {events:?}"
    );
    id
}

#[test]
fn forgetting_the_last_persistent_watcher_on_a_path_removes_it_on_the_server() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
    let first = persistent_watch(&mut h, "/p");
    h.session.forget_watch(first);
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "one removeWatches");
    assert_eq!(sent[0].0.op_code, OpCode::REMOVE_WATCHES);
    let request: RemoveWatchesRequest = decode_exact(sent[0].1.clone()).expect("decodes");
    assert_eq!(request.path.as_deref(), Some("/p"));
    assert_eq!(request.watcher_type, WatcherType::ANY);
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    assert_eq!(h.session.state(), SessionState::Connected);
    h.events();

    // With another watch asked for on the path (queued, not answered yet), nothing is removed:
    // ANY would remove it too.
    let second = persistent_watch(&mut h, "/p");
    let _third = h.submit(Op::AddWatch {
        path: "/p".into(),
        mode: AddWatchMode::PERSISTENT,
    });
    h.session.forget_watch(second);
    let sent = h.sent();
    assert_eq!(
        sent.iter().map(|s| s.0.op_code).collect::<Vec<_>>(),
        [OpCode::ADD_WATCH],
        "only the queued addWatch goes out"
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
    h.server_says(frame(
        ReplyHeader {
            xid: -4,
            zxid: 0,
            err: ErrorCode::OK,
        },
        (),
    ));
    assert_eq!(replies(&h.events()), [(auth, Ok(Response::Empty))]);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(1, 30_000);
    let sent = h.sent();
    let packet: AuthPacket = decode_exact(sent[0].1.clone()).expect("AuthPacket");
    assert_eq!(packet.scheme.as_deref(), Some("digest"));
    h.server_says(frame(
        ReplyHeader {
            xid: -4,
            zxid: 0,
            err: ErrorCode::AUTH_FAILED,
        },
        (),
    ));
    assert_eq!(h.session.state(), SessionState::AuthFailed);
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
    h.server_says(frame(
        ok(sent[1].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
    h.server_says(notification(EventType::NODE_DELETED, "/app/w"));
    let events = h.events();
    assert!(
        matches!(&replies(&events)[0], (id, Ok(Response::Create2(r))) if *id == create && r.path.as_deref() == Some("/n-0000000001"))
    );
    assert!(events.iter().any(
        |e| matches!(e, SessionEvent::Watch { id, event } if *id == watch && event.path == "/w")
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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

#[test]
fn a_read_only_server_gives_connected_read_only_and_no_session_to_resume() {
    let mut h = Harness::new(SessionConfig {
        read_only: true,
        ..config()
    });
    h.establish_on(9, 30_000, true);
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let request = h.connect();
    assert_eq!(
        request.session_id, 0,
        "never seen a read/write server: ask for a new session"
    );
}

#[test]
fn removing_watches_tells_each_watcher() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.submit(Op::GetChildren {
        path: "/a".into(),
        watch: true,
    });
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetChildrenResponse {
            children: Some(vec![]),
        },
    ));
    h.events();
    h.submit(Op::RemoveWatches {
        path: "/a".into(),
        watcher_type: WatcherType::ANY,
    });
    let sent = h.sent();
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    let events = h.events();
    assert!(
        matches!(&events[0], SessionEvent::Watch { id, event } if *id == watch && event.event_type == EventType::CHILD_WATCH_REMOVED)
    );
    assert_eq!(h.session.watch_count(), 0);
}

#[test]
fn local_expiry_counts_from_the_last_answered_send_not_from_a_watch_event() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let _watch = h.submit(get_data("/a", true));
    let sent = h.sent();
    let t0 = h.now;
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetDataResponse {
            data: None,
            stat: stat(0),
        },
    ));
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
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.events();
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

fn hosts(n: u16) -> Vec<crate::connect_string::HostAddr> {
    (1..=n)
        .map(|p| crate::connect_string::HostAddr::new("h", p))
        .collect()
}

fn untrusted() -> ConnectFailure {
    ConnectFailure::Tls(crate::TlsFailure::UntrustedCertificate {
        detail: "UnknownIssuer".into(),
    })
}

fn refused() -> ConnectFailure {
    ConnectFailure::Io {
        kind: std::io::ErrorKind::ConnectionRefused,
        message: "refused".into(),
    }
}

/// Dials when the backoff allows and fails the attempt with `failure`; returns the host.
fn fail_next_attempt(h: &mut Harness, failure: ConnectFailure) -> usize {
    dial_when_allowed(h);
    let host = h.session.current_host().expect("dialing a host");
    h.session.handle_connect_failed(h.now, failure);
    host
}

fn gave_up(events: &[SessionEvent]) -> Option<&Error> {
    events.iter().find_map(|e| match e {
        SessionEvent::GaveUp(error) => Some(error),
        _ => None,
    })
}

#[test]
fn a_permanent_failure_on_every_host_gives_up_at_once_with_it() {
    let mut h = Harness::new(SessionConfig {
        hosts: hosts(3),
        shuffle_hosts: false,
        rng_seed: Some(3),
        ..config()
    });
    let start = h.now;
    let mut dialed = Vec::new();
    for _ in 0..2 {
        dialed.push(fail_next_attempt(&mut h, untrusted()));
        assert_eq!(gave_up(&h.events()), None, "a host is left to try");
    }
    dialed.push(fail_next_attempt(&mut h, untrusted()));
    assert_eq!(dialed, [0, 1, 2], "each host once");
    let events = h.events();
    let error = gave_up(&events).expect("gave up after one attempt per host");
    assert_eq!(
        *error,
        Error::NoServerReachable {
            attempts: 3,
            hosts: vec!["h:1".into(), "h:2".into(), "h:3".into()],
            last_error: untrusted(),
        }
    );
    assert!(error.tls_failure().is_some());
    assert_eq!(h.session.state(), SessionState::Closed);
    // Long before the connect timeout (30 s): only the two backoffs (at most 40 + 80 ms).
    assert!(
        h.now - start <= Duration::from_millis(120),
        "{:?}",
        h.now - start
    );
    h.advance(Duration::from_secs(60));
    assert_eq!(h.session.poll_connect(h.now), None, "no more attempts");
}

#[test]
fn a_transient_failure_starts_the_count_of_permanent_ones_again() {
    let mut h = Harness::new(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(4),
        ..config()
    });
    fail_next_attempt(&mut h, untrusted());
    // The second host is down for now (refused): not a verdict on the settings.
    fail_next_attempt(&mut h, refused());
    fail_next_attempt(&mut h, untrusted());
    assert_eq!(
        gave_up(&h.events()),
        None,
        "one host failed for good in a row"
    );
    assert!(h.session.wants_connection() || h.session.poll_timeout().is_some());
    fail_next_attempt(&mut h, untrusted());
    let events = h.events();
    assert!(
        matches!(
            gave_up(&events),
            Some(Error::NoServerReachable { attempts: 4, last_error, .. }) if *last_error == untrusted()
        ),
        "{events:?}"
    );
}

#[test]
fn a_tls_alert_during_the_session_handshake_is_the_attempts_permanent_failure() {
    // TLS 1.3: the server judges the client certificate after the client's handshake is
    // done, so its alert arrives while the ConnectRequest waits for an answer.
    let mut h = Harness::new(config());
    let required = ConnectFailure::Tls(crate::TlsFailure::ClientCertificateRequired {
        alert: "CertificateRequired".into(),
    });
    dial_when_allowed(&mut h);
    h.connect();
    h.session.handle_connection_failed(h.now, required.clone());
    let events = h.events();
    assert!(
        matches!(
            gave_up(&events),
            Some(Error::NoServerReachable { attempts: 1, last_error, .. }) if *last_error == required
        ),
        "{events:?}"
    );
    assert_eq!(h.session.state(), SessionState::Closed);
}

#[test]
fn once_a_session_exists_permanent_failures_are_retried_until_it_expires_and_then_named() {
    let mut h = Harness::new(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(5),
        ..config()
    });
    dial_when_allowed(&mut h);
    h.establish(9, 30_000);
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let lost = h.now;
    // The servers came back with a certificate the client does not trust (a rotation gone
    // wrong, fixed by the operator while the session is still alive): keep trying, with the
    // backoff, as for any failure.
    let mut attempts = 0u32;
    while h.session.state() == SessionState::Disconnected {
        if h.session.poll_connect(h.now).is_some() {
            h.session.handle_connect_failed(h.now, untrusted());
            attempts += 1;
            assert!(
                gave_up(&h.events()).is_none(),
                "no giving up with a session"
            );
        }
        let Some(at) = h.session.poll_timeout() else {
            break;
        };
        h.advance(at.saturating_duration_since(h.now));
    }
    // Ended at the local expiry (T after the last answered send), not before, and with the
    // cause: every server refused the client's TLS, which an expiry would hide.
    assert_eq!(h.session.state(), SessionState::Closed);
    assert!(
        h.now - lost >= Duration::from_secs(29),
        "{:?}",
        h.now - lost
    );
    let events = h.events();
    match gave_up(&events) {
        Some(
            error @ Error::NoServerReachable {
                attempts: counted,
                hosts,
                last_error,
            },
        ) => {
            assert_eq!(*last_error, untrusted());
            assert_eq!(
                *counted, attempts,
                "the attempts since the connection was lost"
            );
            assert_eq!(*hosts, vec!["h:1".to_owned(), "h:2".to_owned()]);
            assert!(error.is_terminal());
            assert!(error.tls_failure().is_some());
        }
        other => panic!("expected NoServerReachable naming the TLS failure: {other:?}"),
    }
    // The backoff held the attempts to a handful per second (capped at 1 s, 500 ms at least).
    assert!((20..=80).contains(&attempts), "{attempts} attempts in 30 s");
}

#[test]
fn a_session_whose_reconnections_failed_transiently_on_some_host_just_expires() {
    let mut h = Harness::new(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(6),
        ..config()
    });
    dial_when_allowed(&mut h);
    h.establish(9, 30_000);
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    // One server refuses the certificate, the other is down: the TLS failure is not the
    // whole story, so the expiry is the news.
    while !h.session.state().is_terminal() {
        match h.session.poll_connect(h.now) {
            Some((0, _)) => h.session.handle_connect_failed(h.now, untrusted()),
            Some(_) => h.session.handle_connect_failed(h.now, refused()),
            None => {}
        }
        let Some(at) = h.session.poll_timeout() else {
            break;
        };
        h.advance(at.saturating_duration_since(h.now));
    }
    assert_eq!(h.session.state(), SessionState::Expired);
    assert_eq!(gave_up(&h.events()), None);
}
