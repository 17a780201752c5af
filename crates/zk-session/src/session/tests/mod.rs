//! The session driven by scripted server frames on a virtual clock: no sockets, no sleeps.
//!
//! This module is the harness the scripted session tests share ([`Harness`], the frame
//! builders); the tests are in its submodules, one subject each.

mod auth;
mod connect_failures;
mod ending;
mod gather;
mod reconnect;
mod requests;
mod timers;
mod watches;

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

/// The reply header of a request the server failed with `err`.
pub(super) fn failed(xid: i32, zxid: i64, err: ErrorCode) -> ReplyHeader {
    ReplyHeader { xid, zxid, err }
}

/// The server's answer to a ConnectRequest: session `session_id` with timeout `timeout_ms`,
/// a password of 16 bytes `passwd`, and the read-only flag `read_only`.
pub(super) fn accepted(
    session_id: i64,
    timeout_ms: i32,
    passwd: u8,
    read_only: Option<bool>,
) -> Bytes {
    ConnectResponse {
        protocol_version: 0,
        time_out: timeout_ms,
        session_id,
        passwd: Some(Bytes::copy_from_slice(&[passwd; 16])),
        read_only,
    }
    .to_bytes()
}

/// The server's answer to a ConnectRequest for a session it no longer has.
pub(super) fn expired_answer() -> Bytes {
    accepted(0, 0, 0, Some(false))
}

pub(super) fn ok(xid: i32, zxid: i64) -> ReplyHeader {
    ReplyHeader {
        xid,
        zxid,
        err: ErrorCode::OK,
    }
}

pub(super) fn stat(version: i32) -> Stat {
    Stat {
        version,
        ..Stat::default()
    }
}

/// An empty getData reply: no data, version 0.
pub(super) fn empty_data() -> GetDataResponse {
    GetDataResponse {
        data: None,
        stat: stat(0),
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

pub(super) fn get_data(path: &str, watch: bool) -> Op {
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

    /// A session with the default [`config`], established (session 1, 30 s), its events
    /// taken.
    pub(super) fn connected() -> Self {
        let mut h = Self::new(config());
        h.establish(1, 30_000);
        h.events();
        h
    }

    /// Arms a one-shot data watch on `path` (getData answered at `zxid` with
    /// [`empty_data`]); returns its id.
    pub(super) fn watch_data(&mut self, path: &str, zxid: i64) -> RequestId {
        let id = self.submit(get_data(path, true));
        let sent = self.sent();
        self.answer_empty_data(sent[0].0.xid, zxid);
        id
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
        self.server_says(accepted(session_id, timeout_ms, 7, Some(read_only_server)));
        request
    }

    pub(super) fn server_says(&mut self, frame: Bytes) {
        self.session.handle_frame(self.now, frame);
    }

    /// The server answers request `xid` with an empty getData reply ([`empty_data`]) at
    /// `zxid`.
    pub(super) fn answer_empty_data(&mut self, xid: i32, zxid: i64) {
        self.server_says(frame(ok(xid, zxid), empty_data()));
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
