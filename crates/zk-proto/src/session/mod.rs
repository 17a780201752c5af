//! The session as a deterministic state machine: no sockets, no clock, no tasks.
//!
//! [`Session`] is driven by its inputs (`submit`, `handle_*`) with an explicit `now`, and
//! tells what to do through its outputs (`poll_*`). The [driver](crate::Client) moves the
//! bytes; every protocol decision is made here, so the tests of this module drive a whole
//! session with scripted server frames and a virtual clock.

mod reconnect;
mod request;
mod state;
mod timing;
mod watch;
mod xid;

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use jute::{
    AuthPacket, ConnectRequest, ConnectResponse, Decode, Encode, ErrorCode, EventType, KeeperState,
    MultiResponse, MultiResult, OpCode, Reader, ReplyHeader, Response, ServerMessage, decode_exact,
};

pub use reconnect::{Backoff, DEFAULT_MAX_BACKOFF, DEFAULT_MIN_BACKOFF, HostList};
pub use request::{MAX_TTL_MS, MultiOperation, Op};
pub use state::SessionState;
pub use timing::Timing;
pub use watch::WatchKind;

use crate::connect_string::HostAddr;
use crate::error::{ConnectFailure, Error, ProtocolError};
use crate::path::Chroot;
use jute::codes::xid as reserved;
use request::{AfterReply, Encoded};
use watch::{SetWatchesBatch, WatchRegistry};
use xid::XidAllocator;

/// Identifies a request (and the watch it may leave) for its whole life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

/// The settings a session runs with.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The session timeout asked for; the server clamps it to `[2, 20]` ticks by default.
    pub session_timeout: Duration,
    /// Accept read-only servers.
    pub read_only: bool,
    /// The most requests sent and not yet answered; more wait in the session's queue.
    pub max_in_flight: usize,
    /// The largest frame sent or accepted (`jute.maxbuffer`, 1,048,575 bytes by default).
    pub max_frame_len: usize,
    /// The chroot applied to every path.
    pub chroot: Chroot,
    /// The servers, from the connect string (never empty: an empty list is taken as
    /// `127.0.0.1:2181`). One attempt may take `T / hosts` (at most `T/3`).
    pub hosts: Vec<HostAddr>,
    /// Visit the hosts in a random order (shuffled once), not in the given one.
    pub shuffle_hosts: bool,
    /// Seeds the host shuffle and the backoff jitter (deterministic tests); `None` seeds from
    /// the system.
    pub rng_seed: Option<u64>,
    /// The reconnect backoff's base and cap (see [`Backoff`]).
    pub backoff: (Duration, Duration),
    /// Before the first session: give up ([`Error::NoServerReachable`]) once one attempt on
    /// every host failed.
    pub fail_fast: bool,
    /// Before the first session: give up ([`Error::NoServerReachable`]) when no session was
    /// established this long after the first attempt began; `None` tries without bound.
    pub connect_timeout: Option<Duration>,
    /// How long `close` waits for the server's reply.
    pub close_timeout: Duration,
    /// The cap on the encoded paths of one SetWatches request.
    pub set_watches_max_bytes: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(30),
            read_only: false,
            max_in_flight: 1024,
            max_frame_len: jute::DEFAULT_MAX_FRAME_LEN,
            chroot: Chroot::none(),
            hosts: Vec::new(),
            shuffle_hosts: true,
            rng_seed: None,
            backoff: (DEFAULT_MIN_BACKOFF, DEFAULT_MAX_BACKOFF),
            fail_fast: false,
            connect_timeout: Some(Duration::from_secs(30)),
            close_timeout: Duration::from_secs(2),
            set_watches_max_bytes: 128 * 1024,
        }
    }
}

/// A watch notification, with the path as the caller sees it (chroot stripped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedEvent {
    /// What happened (client-side types such as `DataWatchRemoved` when a watch is removed).
    pub event_type: EventType,
    /// The session state the server reported (always SyncConnected from a server).
    pub state: KeeperState,
    /// The node it happened to.
    pub path: String,
}

/// What the session tells its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent {
    /// A request completed.
    Reply {
        /// The request.
        id: RequestId,
        /// Its response (paths already stripped of the chroot) or its error.
        result: Result<Response, Error>,
        /// Whether the request armed its watch (on success; for exists also on NoNode).
        watch_armed: bool,
    },
    /// A watch fired. One-shot watches fire once; persistent ones many times.
    Watch {
        /// The request that set the watch.
        id: RequestId,
        /// The event.
        event: WatchedEvent,
    },
    /// A watch will never fire: the session ended.
    WatchLost {
        /// The request that set the watch.
        id: RequestId,
        /// Why: SessionExpired, AuthFailed or Closed.
        error: Error,
    },
    /// The session state changed.
    State(SessionState),
    /// The driver must drop the current connection (the session already counts it as
    /// gone). The reason is for diagnostics.
    DropConnection(Error),
    /// No session could be established (fail-fast, or the connect timeout): the session is
    /// over ([`SessionState::Closed`]); the error is [`Error::NoServerReachable`].
    GaveUp(Error),
}

#[derive(Debug, Clone, Copy)]
enum Link {
    /// No connection; the next attempt may begin at `retry_at` (`None`: at once).
    Down { retry_at: Option<Instant> },
    /// The driver is opening a TCP connection to host `host` (index in the host list); the
    /// attempt began at `since`.
    Dialing { since: Instant, host: usize },
    /// The ConnectRequest is (about to be) sent; waiting for the ConnectResponse. `since`: when
    /// the attempt began (one budget covers the TCP connect and the handshake).
    Handshaking { since: Instant, connected: Instant },
    /// The session is established on this connection, open since `connected`.
    Up {
        last_send: Instant,
        last_recv: Instant,
        connected: Instant,
    },
}

/// A frame waiting to be sent.
#[derive(Debug)]
enum Outgoing {
    /// Sent as is, with no entry in the FIFO of replies (connect, ping, auth).
    Raw(Bytes),
    /// A request: gets its xid when sent and a place in the FIFO of replies.
    Request {
        id: Option<RequestId>,
        encoded: Encoded,
    },
}

#[derive(Debug)]
struct Pending {
    xid: i32,
    /// `None` for the session's own requests, and for requests whose caller timed out.
    id: Option<RequestId>,
    op_code: OpCode,
    after: AfterReply,
    /// When it was handed to the connection: once answered, the server had heard from us by
    /// then (the local expiry counts from that, not from when the answer arrived).
    sent_at: Instant,
}

/// The session state machine.
///
/// Inputs: [`submit`](Self::submit), [`add_auth`](Self::add_auth), [`close`](Self::close),
/// [`handle_connected`](Self::handle_connected),
/// [`handle_connect_failed`](Self::handle_connect_failed), [`handle_frame`](Self::handle_frame),
/// [`handle_disconnected`](Self::handle_disconnected), [`handle_timeout`](Self::handle_timeout),
/// [`reconnect_to`](Self::reconnect_to), [`forget_watch`](Self::forget_watch). Outputs:
/// [`poll_connect`](Self::poll_connect) (the host to dial, when the backoff allows),
/// [`poll_transmit_into`](Self::poll_transmit_into) (one whole frame, length prefix included,
/// appended to the connection's write buffer), [`poll_timeout`](Self::poll_timeout) (when to
/// call `handle_timeout` next), [`poll_event`](Self::poll_event).
///
/// The session never reads the clock: every input carries `now`. It owns the host rotation and
/// the reconnect backoff (see [`Backoff`]): the driver dials what `poll_connect` hands out.
#[derive(Debug)]
pub struct Session {
    config: SessionConfig,
    timing: Timing,
    state: SessionState,
    link: Link,
    session_id: i64,
    passwd: Bytes,
    negotiated: Option<Duration>,
    /// Whether a read/write server ever accepted this session (Java's `seenRwServerBefore`):
    /// until then a reconnect asks for a new session.
    seen_rw_server: bool,
    /// Whether any server ever accepted this session.
    established: bool,
    last_zxid: i64,
    /// The send time of the latest request (or ping, or handshake) the server answered: the
    /// server had heard from us by then, so its expiry clock for the session started no
    /// earlier. The local expiry counts from here. Not from the last frame received: a watch
    /// event or a late reply says nothing about when the server last heard from us, and
    /// counting from it would report `Expired` after the server acted on the expiry.
    last_answered_send: Option<Instant>,
    /// Send times of the pings not answered yet, oldest first.
    pings_in_flight: VecDeque<Instant>,
    xids: XidAllocator,
    next_id: u64,
    /// The ConnectRequest, pings, auth and SetWatches: sent before `outbox`.
    control: VecDeque<Outgoing>,
    /// Callers' requests in call order, waiting for a connection or for room in flight.
    outbox: VecDeque<(RequestId, Encoded)>,
    /// Sent requests, oldest first: replies must match the head.
    pending: VecDeque<Pending>,
    /// Sent auth packets (xid -4) in order; `Some` when a caller waits.
    auth_pending: VecDeque<Option<RequestId>>,
    credentials: Vec<(String, Bytes)>,
    /// Callers of `add_auth` waiting for a connection: index into `credentials`.
    auth_waiting: Vec<(usize, RequestId)>,
    ping_queued: bool,
    watches: WatchRegistry,
    deadlines: BTreeSet<(Instant, RequestId)>,
    closing: Option<(RequestId, Instant)>,
    events: VecDeque<SessionEvent>,
    hosts: HostList,
    backoff: Backoff,
    rng: fastrand::Rng,
    /// Before the first session: when the first attempt began, the attempts that failed, the
    /// hosts they went to, and how the last one failed (for [`Error::NoServerReachable`]).
    first_attempt: Option<Instant>,
    /// The host of the current or last attempt.
    current_host: Option<usize>,
    failed_attempts: u32,
    tried: BTreeSet<usize>,
    last_failure: Option<ConnectFailure>,
}

const HEADER_LEN: usize = 8;

impl Session {
    /// A session that has not connected yet.
    pub fn new(mut config: SessionConfig) -> Self {
        if config.hosts.is_empty() {
            config.hosts.push(HostAddr::new(
                "127.0.0.1",
                crate::connect_string::DEFAULT_PORT,
            ));
        }
        let timing = Timing::new(config.session_timeout, config.hosts.len());
        let mut rng = match config.rng_seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        let hosts = HostList::new(config.hosts.clone(), config.shuffle_hosts, &mut rng)
            .unwrap_or_else(|_| unreachable!("the host list was made non-empty above"));
        let backoff = Backoff::new(config.backoff.0, config.backoff.1);
        Self {
            config,
            timing,
            state: SessionState::Connecting,
            link: Link::Down { retry_at: None },
            session_id: 0,
            passwd: Bytes::from_static(&[0; 16]),
            negotiated: None,
            seen_rw_server: false,
            established: false,
            last_zxid: 0,
            last_answered_send: None,
            pings_in_flight: VecDeque::new(),
            xids: XidAllocator::new(),
            next_id: 0,
            control: VecDeque::new(),
            outbox: VecDeque::new(),
            pending: VecDeque::new(),
            auth_pending: VecDeque::new(),
            credentials: Vec::new(),
            auth_waiting: Vec::new(),
            ping_queued: false,
            watches: WatchRegistry::default(),
            deadlines: BTreeSet::new(),
            closing: None,
            events: VecDeque::new(),
            hosts,
            backoff,
            rng,
            first_attempt: None,
            current_host: None,
            failed_attempts: 0,
            tried: BTreeSet::new(),
            last_failure: None,
        }
    }

    // ----- accessors -----

    /// The current state.
    pub fn state(&self) -> SessionState {
        self.state
    }

    /// The session id, 0 before the first connection.
    pub fn session_id(&self) -> i64 {
        self.session_id
    }

    /// The session password the server gave (opaque; 16 zero bytes before the first
    /// connection).
    pub fn password(&self) -> &Bytes {
        &self.passwd
    }

    /// The session timeout the server granted, `None` before the first connection.
    pub fn negotiated_timeout(&self) -> Option<Duration> {
        self.negotiated
    }

    /// The timer intervals in force.
    pub fn timing(&self) -> Timing {
        self.timing
    }

    /// The last zxid seen in a reply.
    pub fn last_zxid(&self) -> i64 {
        self.last_zxid
    }

    /// Whether the session wants a connection (it has none and is not over).
    pub fn wants_connection(&self) -> bool {
        matches!(self.link, Link::Down { .. })
            && !self.state.is_terminal()
            && self.closing.is_none()
    }

    /// Whether a connection attempt handed out by [`poll_connect`](Self::poll_connect) is
    /// still wanted: when it is not (it timed out, the session ended), the driver drops it.
    pub fn is_dialing(&self) -> bool {
        matches!(self.link, Link::Dialing { .. })
    }

    /// The hosts, in visiting order.
    pub fn hosts(&self) -> &[HostAddr] {
        self.hosts.hosts()
    }

    /// The index (in [`hosts`](Self::hosts)) of the host of the current or last connection
    /// attempt.
    pub fn current_host(&self) -> Option<usize> {
        match self.link {
            Link::Dialing { host, .. } => Some(host),
            _ => self.current_host,
        }
    }

    /// Failed connection attempts in a row (the reconnect backoff grows with them).
    pub fn consecutive_failures(&self) -> u32 {
        self.backoff.failures()
    }

    /// Requests sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Requests waiting to be sent.
    pub fn queued(&self) -> usize {
        self.outbox.len()
    }

    /// Live watches.
    pub fn watch_count(&self) -> usize {
        self.watches.len()
    }

    fn new_id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId(self.next_id)
    }

    fn terminal_error(&self) -> Option<Error> {
        match self.state {
            SessionState::Expired => Some(Error::SessionExpired),
            SessionState::AuthFailed => Some(Error::AuthFailed),
            SessionState::Closed => Some(Error::Closed),
            _ if self.closing.is_some() => Some(Error::Closed),
            _ => None,
        }
    }

    // ----- inputs -----

    /// Queues a request. It is sent in call order once connected and when fewer than
    /// `max_in_flight` requests are in flight; `deadline`, if any, bounds its wait for the
    /// reply ([`Error::RequestTimeout`]).
    ///
    /// # Errors
    ///
    /// Checked before anything is queued: an invalid path or argument, a request over the
    /// frame limit, or a session that is over.
    pub fn submit(&mut self, op: Op, deadline: Option<Instant>) -> Result<RequestId, Error> {
        if let Some(error) = self.terminal_error() {
            return Err(error);
        }
        let encoded = op.encode(&self.config.chroot)?;
        let len = HEADER_LEN + encoded.body.len();
        if len > self.config.max_frame_len {
            return Err(Error::PacketTooLarge {
                len,
                max: self.config.max_frame_len,
            });
        }
        let id = self.new_id();
        self.outbox.push_back((id, encoded));
        if let Some(deadline) = deadline {
            self.deadlines.insert((deadline, id));
        }
        Ok(id)
    }

    /// Adds credentials (for example `digest`, `user:password`). They are sent now if
    /// connected and again after every reconnect. The returned request completes with the
    /// server's answer to the first sending.
    ///
    /// # Errors
    ///
    /// A session that is over.
    pub fn add_auth(&mut self, scheme: String, auth: Bytes) -> Result<RequestId, Error> {
        if let Some(error) = self.terminal_error() {
            return Err(error);
        }
        let id = self.new_id();
        self.credentials.push((scheme, auth));
        let index = self.credentials.len() - 1;
        if matches!(self.link, Link::Up { .. }) {
            self.control
                .push_back(Outgoing::Raw(self.auth_frame(index)));
            self.auth_pending.push_back(Some(id));
        } else {
            self.auth_waiting.push((index, id));
        }
        Ok(id)
    }

    /// Closes the session: sends closeSession after everything queued before it and waits
    /// (at most `close_timeout`) for the reply, then reports [`SessionState::Closed`]. The
    /// returned request completes when the session is closed.
    pub fn close(&mut self, now: Instant) -> RequestId {
        let id = self.new_id();
        if self.state.is_terminal() || self.closing.is_some() {
            self.events.push_back(SessionEvent::Reply {
                id,
                result: Ok(Response::Empty),
                watch_armed: false,
            });
            return id;
        }
        self.closing = Some((id, now + self.config.close_timeout));
        if matches!(self.link, Link::Up { .. }) {
            // Sent after everything queued before it.
            let encoded = Encoded {
                op_code: OpCode::CLOSE_SESSION,
                body: Bytes::new(),
                after: AfterReply::Nothing,
            };
            self.outbox.push_back((id, encoded));
        } else {
            self.finish_close();
        }
        id
    }

    /// The host to dial now, with its index in [`hosts`](Self::hosts), if the session wants a
    /// connection and the reconnect backoff has passed ([`poll_timeout`](Self::poll_timeout)
    /// includes that moment). The attempt then runs until
    /// [`handle_connected`](Self::handle_connected) or
    /// [`handle_connect_failed`](Self::handle_connect_failed), or until its budget (the
    /// connect timeout of [`Timing`]) runs out in [`handle_timeout`](Self::handle_timeout);
    /// [`is_dialing`](Self::is_dialing) then turns false and the driver drops it.
    pub fn poll_connect(&mut self, now: Instant) -> Option<(usize, HostAddr)> {
        let Link::Down { retry_at } = self.link else {
            return None;
        };
        if !self.wants_connection() || retry_at.is_some_and(|at| now < at) {
            return None;
        }
        let (index, host) = self.hosts.next();
        let host = host.clone();
        self.first_attempt.get_or_insert(now);
        self.current_host = Some(index);
        self.link = Link::Dialing {
            since: now,
            host: index,
        };
        Some((index, host))
    }

    /// The attempt handed out by [`poll_connect`](Self::poll_connect) failed before a
    /// connection was open (resolution, refusal, unreachable host, its budget).
    pub fn handle_connect_failed(&mut self, now: Instant, failure: ConnectFailure) {
        if matches!(self.link, Link::Dialing { .. }) {
            tracing::debug!(%failure, "connection attempt failed");
            self.attempt_ended(now, None, Some(failure));
        }
    }

    /// A connection to a server is open: the session queues its ConnectRequest. Normally the
    /// answer to [`poll_connect`](Self::poll_connect); also taken while the session wants a
    /// connection without having handed one out (scripted tests).
    pub fn handle_connected(&mut self, now: Instant) {
        let since = match self.link {
            Link::Dialing { since, .. } => since,
            Link::Down { .. } if self.wants_connection() => {
                self.first_attempt.get_or_insert(now);
                now
            }
            _ => return,
        };
        self.link = Link::Handshaking {
            since,
            connected: now,
        };
        self.control.clear();
        self.ping_queued = false;
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: duration_ms(self.config.session_timeout),
            session_id: if self.seen_rw_server {
                self.session_id
            } else {
                0
            },
            passwd: Some(self.passwd.clone()),
            read_only: self.config.read_only,
        };
        self.control.push_back(Outgoing::Raw(request.to_bytes()));
    }

    /// The connection was lost (closed by the server, an I/O error, or a frame error).
    pub fn handle_disconnected(&mut self, now: Instant, cause: Error) {
        match self.link {
            Link::Down { .. } => {}
            Link::Dialing { .. } => {
                self.attempt_ended(now, None, Some(ConnectFailure::from_error(&cause)));
            }
            Link::Handshaking { .. } | Link::Up { .. } => {
                self.lose_connection(now, cause, false);
            }
        }
    }

    /// Leaves the current server for host `index` (a read/write server found while
    /// read-only): the connection is dropped ([`SessionEvent::DropConnection`]) and that host
    /// is dialed next, at once.
    pub fn reconnect_to(&mut self, now: Instant, index: usize) {
        if matches!(self.link, Link::Up { .. }) {
            self.lose_connection(now, Error::ConnectionLoss, true);
            self.hosts.prefer(index);
            if let Link::Down { retry_at } = &mut self.link {
                *retry_at = None;
            }
        }
    }

    /// A frame longer than `max_frame_len` arrived: its length prefix said `len`, and `xid`
    /// is its xid when the 4 bytes after the prefix were already received. Its body is never
    /// read, so the connection is lost (the driver drops it).
    ///
    /// When `xid` is the oldest request in flight, that request fails with
    /// [`Error::ReplyTooLarge`] instead of [`Error::ConnectionLoss`]: its reply exists and
    /// will be just as large next time, so a caller that retried on ConnectionLoss (as
    /// retryable) would make the client drop and re-establish the connection forever. The
    /// other requests in flight fail with ConnectionLoss, as on any connection loss.
    pub fn handle_oversized_frame(&mut self, now: Instant, len: usize, xid: Option<i32>) {
        if matches!(self.link, Link::Up { .. })
            && let Some(xid) = xid
            && self
                .pending
                .front()
                .is_some_and(|head| head.xid == xid && head.op_code != OpCode::CLOSE_SESSION)
            && let Some(head) = self.pending.pop_front()
            && let Some(id) = head.id
        {
            let max = self.config.max_frame_len;
            self.reply(id, Err(Error::ReplyTooLarge { len, max }), false);
        }
        let reason = format!(
            "frame of {len} bytes exceeds the maximum of {}",
            self.config.max_frame_len
        );
        self.handle_disconnected(now, Error::Protocol(ProtocolError::Frame(reason)));
    }

    /// A frame arrived (its body, without the length prefix).
    pub fn handle_frame(&mut self, now: Instant, frame: Bytes) {
        match self.link {
            Link::Down { .. } | Link::Dialing { .. } => {}
            Link::Handshaking { .. } => self.handle_connect_response(now, frame),
            Link::Up {
                last_send,
                connected,
                ..
            } => {
                self.link = Link::Up {
                    last_send,
                    last_recv: now,
                    connected,
                };
                if let Err(error) = self.handle_message(frame) {
                    tracing::warn!(%error, "protocol violation; dropping the connection");
                    self.lose_connection(now, Error::Protocol(error), true);
                }
            }
        }
    }

    /// Time has passed: fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(deadline, id)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            self.time_out_request(id);
        }
        if let Some((_, deadline)) = self.closing
            && deadline <= now
        {
            tracing::debug!("no reply to closeSession in time; closing anyway");
            self.finish_close();
            return;
        }
        if !self.established
            && let (Some(first), Some(limit)) = (self.first_attempt, self.config.connect_timeout)
            && now >= first + limit
            && !self.state.is_terminal()
            && self.closing.is_none()
        {
            self.give_up(now);
            return;
        }
        let budget = self.timing.connect_timeout;
        match self.link {
            Link::Dialing { since, .. } if now >= since + budget => {
                let failure = ConnectFailure::ConnectTimedOut(budget);
                self.attempt_ended(now, None, Some(failure));
            }
            Link::Handshaking { since, .. } if now >= since + budget => {
                self.handshake_failed(now, ConnectFailure::HandshakeTimedOut(budget));
            }
            Link::Up {
                last_send,
                last_recv,
                ..
            } => {
                if now >= last_recv + self.timing.read_timeout {
                    tracing::info!(
                        session_id = format_args!("{:#x}", self.session_id),
                        "nothing heard from the server for the read timeout; reconnecting"
                    );
                    self.lose_connection(now, Error::ConnectionLoss, true);
                } else if !self.ping_queued && now >= last_send + self.timing.ping_interval {
                    let ping = (
                        jute::RequestHeader {
                            xid: reserved::PING,
                            op_code: OpCode::PING,
                        },
                        (),
                    );
                    self.control.push_back(Outgoing::Raw(ping.to_bytes()));
                    self.ping_queued = true;
                }
            }
            // The backoff is over: the next attempt may begin at once (and the timer, having
            // fired, is no longer asked for).
            Link::Down { retry_at: Some(at) } if now >= at => {
                self.link = Link::Down { retry_at: None }
            }
            _ => {}
        }
        if !matches!(self.link, Link::Up { .. })
            && let Some(expiry) = self.local_expiry()
            && now >= expiry
        {
            tracing::warn!(
                session_id = format_args!("{:#x}", self.session_id),
                "no server answered for a whole session timeout; the session is expired"
            );
            self.terminate(SessionState::Expired, Error::SessionExpired);
        }
    }

    /// The caller of a watch is gone: do not deliver or re-register it any more.
    pub fn forget_watch(&mut self, id: RequestId) {
        self.watches.forget(id);
    }

    // ----- outputs -----

    /// Appends the next frame to send, length prefix included, to `buf` (the connection's
    /// write buffer: the body is written there directly, with no intermediate copy). Returns
    /// whether it appended one.
    ///
    /// A request counts as sent from this call on: the driver should take frames only while
    /// its buffer has room, so that requests it cannot write yet stay queued here (and are
    /// sent on the next connection if this one is lost).
    pub fn poll_transmit_into(&mut self, now: Instant, buf: &mut BytesMut) -> bool {
        match self.link {
            Link::Down { .. } | Link::Dialing { .. } => return false,
            Link::Handshaking { .. } => match self.control.front() {
                Some(Outgoing::Raw(_)) => {
                    if let Some(Outgoing::Raw(frame)) = self.control.pop_front() {
                        put_frame(buf, &frame);
                    }
                }
                _ => return false,
            },
            Link::Up { .. } => {
                if let Some(outgoing) = self.control.pop_front() {
                    match outgoing {
                        Outgoing::Raw(frame) => {
                            if is_ping(&frame) {
                                self.ping_queued = false;
                                self.pings_in_flight.push_back(now);
                            }
                            put_frame(buf, &frame);
                        }
                        Outgoing::Request { id, encoded } => {
                            self.send_request(now, id, encoded, buf);
                        }
                    }
                } else if self.pending.len() < self.config.max_in_flight
                    && let Some((id, encoded)) = self.outbox.pop_front()
                {
                    self.send_request(now, Some(id), encoded, buf);
                } else {
                    return false;
                }
            }
        }
        if let Link::Up {
            last_recv,
            connected,
            ..
        } = self.link
        {
            self.link = Link::Up {
                last_send: now,
                last_recv,
                connected,
            };
        }
        true
    }

    /// The next frame body to send, if any, without its length prefix: a convenience over
    /// [`poll_transmit_into`](Self::poll_transmit_into) for scripted tests and tools.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Bytes> {
        let mut buf = BytesMut::new();
        if !self.poll_transmit_into(now, &mut buf) {
            return None;
        }
        Some(buf.split_off(4).freeze())
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut next = self.deadlines.first().map(|&(deadline, _)| deadline);
        let mut consider = |at: Instant| next = Some(next.map_or(at, |n: Instant| n.min(at)));
        if let Some((_, deadline)) = self.closing {
            consider(deadline);
        }
        match self.link {
            Link::Dialing { since, .. } | Link::Handshaking { since, .. } => {
                consider(since + self.timing.connect_timeout);
            }
            Link::Up {
                last_send,
                last_recv,
                ..
            } => {
                consider(last_recv + self.timing.read_timeout);
                if !self.ping_queued {
                    consider(last_send + self.timing.ping_interval);
                }
            }
            Link::Down { retry_at } => {
                if let Some(at) = retry_at
                    && self.wants_connection()
                {
                    consider(at);
                }
            }
        }
        if !self.established
            && !self.state.is_terminal()
            && self.closing.is_none()
            && let (Some(first), Some(limit)) = (self.first_attempt, self.config.connect_timeout)
        {
            consider(first + limit);
        }
        if !matches!(self.link, Link::Up { .. })
            && let Some(expiry) = self.local_expiry()
        {
            consider(expiry);
        }
        next
    }

    /// The next thing the driver must know.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }

    // ----- internals -----

    fn local_expiry(&self) -> Option<Instant> {
        // A session only ever held by a read-only server is not resumed (the next connection
        // asks for a new one), so there is nothing to expire.
        if !self.established || !self.seen_rw_server || self.state.is_terminal() {
            return None;
        }
        Some(self.last_answered_send? + self.timing.local_expiry)
    }

    fn set_state(&mut self, state: SessionState) {
        if self.state != state && !self.state.is_terminal() {
            self.state = state;
            self.events.push_back(SessionEvent::State(state));
        }
    }

    fn auth_frame(&self, index: usize) -> Bytes {
        let (scheme, auth) = &self.credentials[index];
        (
            jute::RequestHeader {
                xid: reserved::AUTH,
                op_code: OpCode::AUTH,
            },
            AuthPacket {
                auth_type: 0,
                scheme: Some(scheme.clone()),
                auth: Some(auth.clone()),
            },
        )
            .to_bytes()
    }

    fn send_request(
        &mut self,
        now: Instant,
        id: Option<RequestId>,
        encoded: Encoded,
        buf: &mut BytesMut,
    ) {
        let xid = self.xids.next();
        let len = HEADER_LEN + encoded.body.len();
        buf.reserve(4 + len);
        // Checked against the frame limit at submit; SetWatches batches are capped below it.
        buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
        buf.put_i32(xid);
        buf.put_i32(encoded.op_code.0);
        buf.put_slice(&encoded.body);
        self.pending.push_back(Pending {
            xid,
            id,
            op_code: encoded.op_code,
            after: encoded.after,
            sent_at: now,
        });
    }

    fn reply(&mut self, id: RequestId, result: Result<Response, Error>, watch_armed: bool) {
        self.deadlines.retain(|&(_, d)| d != id);
        self.events.push_back(SessionEvent::Reply {
            id,
            result,
            watch_armed,
        });
    }

    fn time_out_request(&mut self, id: RequestId) {
        if let Some(at) = self.outbox.iter().position(|(queued, _)| *queued == id) {
            self.outbox.remove(at);
        } else if let Some(pending) = self.pending.iter_mut().find(|p| p.id == Some(id)) {
            // Its reply still comes, in order; it is then read and discarded.
            pending.id = None;
            pending.after = AfterReply::Nothing;
        } else if let Some(slot) = self.auth_pending.iter_mut().find(|p| **p == Some(id)) {
            *slot = None;
        } else if let Some(at) = self.auth_waiting.iter().position(|&(_, w)| w == id) {
            self.auth_waiting.remove(at);
        } else {
            return;
        }
        self.events.push_back(SessionEvent::Reply {
            id,
            result: Err(Error::RequestTimeout),
            watch_armed: false,
        });
    }

    fn handle_connect_response(&mut self, now: Instant, frame: Bytes) {
        let response: ConnectResponse = match decode_exact(frame) {
            Ok(response) => response,
            Err(error) => {
                self.handshake_failed(now, ConnectFailure::Protocol(ProtocolError::Decode(error)));
                return;
            }
        };
        let asked = if self.seen_rw_server {
            self.session_id
        } else {
            0
        };
        if response.time_out <= 0 {
            tracing::warn!(
                session_id = format_args!("{:#x}", self.session_id),
                "the server says the session expired"
            );
            self.terminate(SessionState::Expired, Error::SessionExpired);
            return;
        }
        if asked != 0 && response.session_id != asked {
            tracing::warn!(
                asked = format_args!("{asked:#x}"),
                got = format_args!("{:#x}", response.session_id),
                "the server resumed another session; the old one is gone"
            );
            self.terminate(SessionState::Expired, Error::SessionExpired);
            return;
        }
        let read_only = response.read_only == Some(true);
        let negotiated = Duration::from_millis(u64::try_from(response.time_out).unwrap_or(0));
        self.session_id = response.session_id;
        self.passwd = response.passwd.unwrap_or_default();
        self.negotiated = Some(negotiated);
        self.timing = Timing::new(negotiated, self.config.hosts.len());
        self.established = true;
        self.seen_rw_server |= !read_only;
        // The ConnectRequest went out when the connection opened.
        let handshake_sent = match self.link {
            Link::Handshaking { connected, .. } => connected,
            _ => now,
        };
        self.answered(handshake_sent);
        self.link = Link::Up {
            last_send: now,
            last_recv: now,
            connected: handshake_sent,
        };
        self.hosts.mark_connected();
        tracing::debug!(
            session_id = format_args!("{:#x}", self.session_id),
            timeout_ms = response.time_out,
            read_only,
            "session established"
        );
        // Replay credentials, then re-arm watches, before any queued request.
        for index in 0..self.credentials.len() {
            let waiter = self
                .auth_waiting
                .iter()
                .position(|&(i, _)| i == index)
                .map(|at| self.auth_waiting.remove(at).1);
            self.control
                .push_back(Outgoing::Raw(self.auth_frame(index)));
            self.auth_pending.push_back(waiter);
        }
        let max = self
            .config
            .set_watches_max_bytes
            .min(self.config.max_frame_len.saturating_sub(64));
        for batch in self.watches.set_watches(self.last_zxid, max) {
            let (op_code, body) = match batch {
                SetWatchesBatch::V1(batch) => (OpCode::SET_WATCHES, batch.to_bytes()),
                SetWatchesBatch::V2(batch) => (OpCode::SET_WATCHES2, batch.to_bytes()),
            };
            self.control.push_back(Outgoing::Request {
                id: None,
                encoded: Encoded {
                    op_code,
                    body,
                    after: AfterReply::Nothing,
                },
            });
        }
        self.set_state(if read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        });
    }

    fn handle_message(&mut self, frame: Bytes) -> Result<(), ProtocolError> {
        let xid = match frame.get(..4) {
            Some(&[a, b, c, d]) => i32::from_be_bytes([a, b, c, d]),
            _ => {
                // Too short for a header: let the decoder name the problem.
                ServerMessage::decode(frame, |_| OpCode::PING)?;
                return Err(ProtocolError::UnexpectedResponse(
                    "frame shorter than a header",
                ));
            }
        };
        match xid {
            reserved::NOTIFICATION => {
                let ServerMessage::Notification(_, event) =
                    ServerMessage::decode(frame, |_| OpCode::NOTIFICATION)?
                else {
                    return Err(ProtocolError::UnexpectedResponse("notification"));
                };
                self.handle_notification(event);
                Ok(())
            }
            reserved::PING => {
                ServerMessage::decode(frame, |_| OpCode::PING)?;
                if let Some(sent) = self.pings_in_flight.pop_front() {
                    self.answered(sent);
                }
                Ok(())
            }
            reserved::AUTH => {
                let waiter = self
                    .auth_pending
                    .pop_front()
                    .ok_or(ProtocolError::UnknownXid(xid))?;
                let ServerMessage::Reply { header, .. } =
                    ServerMessage::decode(frame, |_| OpCode::AUTH)?
                else {
                    return Err(ProtocolError::UnexpectedResponse("auth"));
                };
                if header.err == ErrorCode::AUTH_FAILED {
                    if let Some(id) = waiter {
                        self.reply(id, Err(Error::AuthFailed), false);
                    }
                    self.terminate(SessionState::AuthFailed, Error::AuthFailed);
                } else if let Some(id) = waiter {
                    let result = match Error::from_code(header.err) {
                        None => Ok(Response::Empty),
                        Some(error) => Err(error),
                    };
                    self.reply(id, result, false);
                }
                Ok(())
            }
            _ => {
                let head = self.pending.front().ok_or(ProtocolError::UnknownXid(xid))?;
                if head.xid != xid {
                    return Err(ProtocolError::XidOutOfOrder {
                        expected: head.xid,
                        got: xid,
                    });
                }
                let op_code = head.op_code;
                let mut reader = Reader::new(frame);
                let header = ReplyHeader::decode(&mut reader)?;
                let Some(pending) = self.pending.pop_front() else {
                    return Err(ProtocolError::UnknownXid(xid));
                };
                if header.zxid > 0 {
                    self.last_zxid = header.zxid;
                }
                self.answered(pending.sent_at);
                if header.err != ErrorCode::OK {
                    // No body then; whatever bytes follow are ignored, as Java does.
                    self.complete(pending, header.err, None);
                    return Ok(());
                }
                match Response::decode(op_code, reader.into_rest()) {
                    Ok(body) => self.complete(pending, header.err, Some(body)),
                    Err(error) => {
                        // The frame boundary is intact: only this call failed. It fails with
                        // a non-retryable error (the same reply would come again), and the
                        // connection and the other requests are not touched.
                        tracing::warn!(op = %op_code, %error, "undecodable reply body");
                        self.failed_reply(pending, ProtocolError::Decode(error));
                    }
                }
                Ok(())
            }
        }
    }

    /// The server answered something we sent at `sent`.
    fn answered(&mut self, sent: Instant) {
        if self.last_answered_send.is_none_or(|last| sent > last) {
            self.last_answered_send = Some(sent);
        }
    }

    /// A reply whose body could not be decoded: its caller gets the error; a closeSession
    /// still closes.
    fn failed_reply(&mut self, pending: Pending, error: ProtocolError) {
        if pending.op_code == OpCode::CLOSE_SESSION {
            self.finish_close();
        } else if let Some(id) = pending.id {
            self.reply(id, Err(Error::Protocol(error)), false);
        }
    }

    fn complete(&mut self, pending: Pending, err: ErrorCode, body: Option<Response>) {
        let error = Error::from_code(err);
        if pending.op_code == OpCode::CLOSE_SESSION {
            self.finish_close();
            return;
        }
        let Some(id) = pending.id else {
            if let Some(error) = error {
                tracing::warn!(op = %pending.op_code, %error, "internal request failed");
            }
            return;
        };
        let mut watch_armed = false;
        match pending.after {
            AfterReply::Watch(path, kind)
                if error.is_none()
                    || (kind == WatchKind::Exist && error == Some(Error::NoNode)) =>
            {
                self.watches.add(path, kind, id);
                watch_armed = true;
            }
            AfterReply::RemoveWatches(path, kinds) if error.is_none() => {
                let client_path = self.config.chroot.strip(&path).into_owned();
                for (watcher, kind) in self.watches.remove(&path, kinds) {
                    let event_type = match kind {
                        WatchKind::Data | WatchKind::Exist => EventType::DATA_WATCH_REMOVED,
                        WatchKind::Child => EventType::CHILD_WATCH_REMOVED,
                        WatchKind::Persistent | WatchKind::PersistentRecursive => {
                            EventType::PERSISTENT_WATCH_REMOVED
                        }
                    };
                    self.events.push_back(SessionEvent::Watch {
                        id: watcher,
                        event: WatchedEvent {
                            event_type,
                            state: KeeperState::SYNC_CONNECTED,
                            path: client_path.clone(),
                        },
                    });
                }
            }
            _ => {}
        }
        let result = match error {
            Some(error) => Err(error),
            None => Ok(self.strip_chroot(body.unwrap_or(Response::Empty))),
        };
        self.reply(id, result, watch_armed);
    }

    fn strip_chroot(&self, response: Response) -> Response {
        let chroot = &self.config.chroot;
        if chroot.is_none() {
            return response;
        }
        let strip = |path: Option<String>| path.map(|p| chroot.strip(&p).into_owned());
        match response {
            Response::Create(mut r) => {
                r.path = strip(r.path);
                Response::Create(r)
            }
            Response::Create2(mut r) => {
                r.path = strip(r.path);
                Response::Create2(r)
            }
            Response::Sync(mut r) => {
                r.path = strip(r.path);
                Response::Sync(r)
            }
            Response::GetEphemerals(mut r) => {
                let root = chroot.as_str().unwrap_or("");
                r.ephemerals = r.ephemerals.map(|paths| {
                    paths
                        .into_iter()
                        .flatten()
                        .filter(|p| p == root || p.starts_with(&format!("{root}/")))
                        .map(|p| Some(chroot.strip(&p).into_owned()))
                        .collect()
                });
                Response::GetEphemerals(r)
            }
            Response::Multi(MultiResponse { results }) => Response::Multi(MultiResponse {
                results: results
                    .into_iter()
                    .map(|result| match result {
                        MultiResult::Create(mut r) => {
                            r.path = strip(r.path);
                            MultiResult::Create(r)
                        }
                        MultiResult::Create2(mut r) => {
                            r.path = strip(r.path);
                            MultiResult::Create2(r)
                        }
                        other => other,
                    })
                    .collect(),
            }),
            other => other,
        }
    }

    fn handle_notification(&mut self, event: jute::WatcherEvent) {
        let server_path = event.path.unwrap_or_default();
        let path = self.config.chroot.strip(&server_path).into_owned();
        for id in self.watches.fire(event.event_type, &server_path) {
            self.events.push_back(SessionEvent::Watch {
                id,
                event: WatchedEvent {
                    event_type: event.event_type,
                    state: event.state,
                    path: path.clone(),
                },
            });
        }
    }

    /// The handshake failed (timed out, or its reply was malformed).
    fn handshake_failed(&mut self, now: Instant, failure: ConnectFailure) {
        let cause = match &failure {
            ConnectFailure::Protocol(error) => Error::Protocol(error.clone()),
            _ => Error::ConnectionLoss,
        };
        tracing::debug!(%failure, "handshake failed");
        self.lose_connection_with(now, cause, true, Some(failure));
    }

    /// The connection is gone: everything in flight fails with ConnectionLoss (it may or
    /// may not have been applied); queued requests wait for the next connection, which the
    /// backoff schedules.
    fn lose_connection(&mut self, now: Instant, cause: Error, tell_driver: bool) {
        self.lose_connection_with(now, cause, tell_driver, None);
    }

    fn lose_connection_with(
        &mut self,
        now: Instant,
        cause: Error,
        tell_driver: bool,
        failure: Option<ConnectFailure>,
    ) {
        let (lasted, failure) = match self.link {
            Link::Up { connected, .. } => (Some(now.saturating_duration_since(connected)), None),
            Link::Handshaking { .. } => (
                None,
                Some(failure.unwrap_or_else(|| ConnectFailure::from_error(&cause))),
            ),
            Link::Dialing { .. } | Link::Down { .. } => (None, failure),
        };
        self.link = Link::Down { retry_at: None };
        self.control.clear();
        self.ping_queued = false;
        self.pings_in_flight.clear();
        // The closeSession in flight is not failed: a session whose close was sent is
        // closed (or expires) whatever its reply; `finish_close` answers the closer.
        let closer = self.closing.map(|(id, _)| id);
        for pending in std::mem::take(&mut self.pending) {
            if let Some(id) = pending.id
                && Some(id) != closer
            {
                self.reply(id, Err(Error::ConnectionLoss), false);
            }
        }
        for waiter in std::mem::take(&mut self.auth_pending).into_iter().flatten() {
            self.reply(waiter, Err(Error::ConnectionLoss), false);
        }
        if tell_driver {
            self.events.push_back(SessionEvent::DropConnection(cause));
        }
        if self.closing.is_some() {
            self.finish_close();
            return;
        } else if self.state.is_connected() {
            self.set_state(SessionState::Disconnected);
        }
        self.attempt_ended(now, lasted, failure);
    }

    /// A connection attempt or a connection ended (`lasted`: how long the connection was up,
    /// `None` if it never got a session): schedules the next attempt after the backoff and,
    /// before the first session, counts the failure (and gives up with fail-fast once every
    /// host failed).
    fn attempt_ended(
        &mut self,
        now: Instant,
        lasted: Option<Duration>,
        failure: Option<ConnectFailure>,
    ) {
        let session_timeout = self.negotiated.unwrap_or(self.config.session_timeout);
        self.backoff
            .ended(lasted.unwrap_or(Duration::ZERO), session_timeout);
        let delay = self.backoff.delay(session_timeout, &mut self.rng);
        self.link = Link::Down {
            retry_at: Some(now + delay),
        };
        if self.established || lasted.is_some() {
            return;
        }
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        if let Some(host) = self.current_host {
            self.tried.insert(host);
        }
        if failure.is_some() {
            self.last_failure = failure;
        }
        if self.config.fail_fast
            && self.failed_attempts as usize >= self.hosts.hosts().len()
            && !self.state.is_terminal()
            && self.closing.is_none()
        {
            self.give_up(now);
        }
    }

    /// No session could be established in time: the session ends with
    /// [`Error::NoServerReachable`], naming the hosts tried and the last failure.
    fn give_up(&mut self, now: Instant) {
        // An attempt still running counts, with how long it ran.
        match self.link {
            Link::Dialing { since, host } => {
                self.failed_attempts = self.failed_attempts.saturating_add(1);
                self.tried.insert(host);
                self.last_failure = Some(ConnectFailure::ConnectTimedOut(now - since));
            }
            Link::Handshaking { since, .. } => {
                self.failed_attempts = self.failed_attempts.saturating_add(1);
                if let Some(host) = self.current_host {
                    self.tried.insert(host);
                }
                self.last_failure = Some(ConnectFailure::HandshakeTimedOut(now - since));
            }
            _ => {}
        }
        let hosts = self.hosts.hosts();
        let error = Error::NoServerReachable {
            attempts: self.failed_attempts,
            hosts: self.tried.iter().map(|&i| hosts[i].to_string()).collect(),
            last_error: self
                .last_failure
                .clone()
                .unwrap_or(ConnectFailure::NotAttempted),
        };
        tracing::info!(%error, "giving up connecting");
        self.events.push_back(SessionEvent::GaveUp(error.clone()));
        self.terminate(SessionState::Closed, error);
    }

    fn finish_close(&mut self) {
        let closer = self.closing.take().map(|(id, _)| id);
        self.terminate_except(SessionState::Closed, Error::Closed, closer);
        if let Some(id) = closer {
            self.reply(id, Ok(Response::Empty), false);
        }
    }

    /// Ends the session for good: every request fails with `error`, every watch is lost.
    fn terminate(&mut self, state: SessionState, error: Error) {
        let closer = self.closing.take().map(|(id, _)| id);
        self.terminate_except(state, error, closer);
        if let Some(id) = closer {
            // The close is done, whatever ended the session (after the state event, so that
            // the closer sees the final state when it is answered).
            self.reply(id, Ok(Response::Empty), false);
        }
    }

    fn terminate_except(&mut self, state: SessionState, error: Error, closer: Option<RequestId>) {
        if self.state.is_terminal() {
            return;
        }
        let was_linked = !matches!(self.link, Link::Down { .. });
        self.link = Link::Down { retry_at: None };
        self.control.clear();
        // The state first: a caller woken by the error below reads the state that caused it.
        self.set_state(state);
        let mut failed: Vec<RequestId> = Vec::new();
        failed.extend(
            std::mem::take(&mut self.pending)
                .into_iter()
                .filter_map(|p| p.id),
        );
        failed.extend(std::mem::take(&mut self.auth_pending).into_iter().flatten());
        failed.extend(
            std::mem::take(&mut self.auth_waiting)
                .into_iter()
                .map(|(_, id)| id),
        );
        failed.extend(
            std::mem::take(&mut self.outbox)
                .into_iter()
                .map(|(id, _)| id),
        );
        for id in failed {
            if Some(id) != closer {
                self.reply(id, Err(error.clone()), false);
            }
        }
        for id in self.watches.drain() {
            self.events.push_back(SessionEvent::WatchLost {
                id,
                error: error.clone(),
            });
        }
        self.deadlines.clear();
        if was_linked {
            self.events.push_back(SessionEvent::DropConnection(error));
        }
    }
}

/// Appends `body` to `buf` as one frame (4-byte big-endian length, then the body).
fn put_frame(buf: &mut BytesMut, body: &[u8]) {
    buf.reserve(4 + body.len());
    buf.put_u32(u32::try_from(body.len()).unwrap_or(u32::MAX));
    buf.put_slice(body);
}

fn is_ping(frame: &Bytes) -> bool {
    frame.len() == HEADER_LEN && frame[..4] == reserved::PING.to_be_bytes()
}

fn duration_ms(duration: Duration) -> i32 {
    i32::try_from(duration.as_millis()).unwrap_or(i32::MAX)
}
