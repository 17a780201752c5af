//! The session as a deterministic state machine: no sockets, no clock, no tasks.
//!
//! [`Session`] is driven by its inputs (`submit`, `handle_*`) with an explicit `now`, and
//! tells what to do through its outputs (`poll_*`). The driver (zk-proto's [`Client`]) moves
//! the bytes; every protocol decision is made here, so the tests of this module drive a whole
//! session with scripted server frames and a virtual clock.
//!
//! [`Client`]: https://docs.rs/zk-proto/latest/zk_proto/struct.Client.html

mod config;
mod create_options;
mod deadlines;
mod ending;
mod gather;
mod handshake;
mod inbound;
mod inspect;
mod modes;
mod quorum;
mod read_only_search;
mod rebalance;
mod reconnect;
mod request;
mod sasl;
mod state;
mod timers;
mod timing;
mod watch;
mod xid;

#[cfg(test)]
mod hosts_tests;
#[cfg(test)]
mod move_tests;
#[cfg(test)]
mod quorum_tests;
#[cfg(test)]
mod read_only_search_tests;
#[cfg(test)]
mod renew_tests;
#[cfg(test)]
mod sasl_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_mode_tests;

use std::collections::{BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use jute::{Encode, EventType, KeeperState, OpCode, Response};

pub use config::SessionConfig;
pub use create_options::CreateOptions;
pub use read_only_search::{
    PROBE_MAX_INTERVAL, PROBE_MIN_INTERVAL, PROBE_TIMEOUT, Probe, ProbeId, ProbeOutcome,
};
pub use reconnect::{Backoff, DEFAULT_MAX_BACKOFF, DEFAULT_MIN_BACKOFF, HostList};
pub use request::{MAX_TTL_MS, MultiOperation, Op};
pub use state::SessionState;
pub use timing::Timing;
pub use watch::WatchKind;

use crate::connect_string::HostAddr;
use crate::error::{ConnectFailure, Error, ProtocolError};
use crate::secret::Secret;
use deadlines::Deadlines;
use jute::codes::xid as reserved;
use modes::{ModeChange, ServerModes};
use quorum::QuorumCheck;
use read_only_search::ReadOnlySearch;
use request::{AfterReply, Encoded};
pub use sasl::{SaslDone, SaslWork};
use sasl::{SaslJobs, SaslRun};
use watch::WatchRegistry;
use xid::XidAllocator;

/// Identifies a request (and the watch it may leave) for its whole life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RequestId(pub u64);

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
    /// A watch fired. One-shot watches fire once; persistent ones many times, until removed.
    Watch {
        /// The request that set the watch.
        id: RequestId,
        /// The event.
        event: WatchedEvent,
        /// The watch is gone after this event: a one-shot watch's event, or the removal of a
        /// watch (`DataWatchRemoved`, `ChildWatchRemoved`, `PersistentWatchRemoved`). Nothing
        /// more comes for `id`; a stream of its events ends here.
        last: bool,
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
    /// No session could be established (fail-fast, the connect timeout, or a permanent
    /// failure on every host): the session is over ([`SessionState::Closed`]); the error is [`Error::NoServerReachable`].
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
        /// The gathering of replies ([`Session::read_low_water`]) ran out of time since the
        /// last frame: until the next one, every byte is read as it comes.
        gather_lapsed: bool,
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
    /// What it changes in the watch modes the server holds, once run successfully.
    change: ModeChange,
    /// When it was handed to the connection: once answered, the server had heard from us by
    /// then (the local expiry counts from that, not from when the answer arrived).
    sent_at: Instant,
}

/// The session state machine.
///
/// Inputs: [`submit`](Self::submit), [`add_auth`](Self::add_auth), [`close`](Self::close),
/// [`handle_connected`](Self::handle_connected),
/// [`handle_connect_failed`](Self::handle_connect_failed),
/// [`handle_connection_failed`](Self::handle_connection_failed), [`handle_frame`](Self::handle_frame),
/// [`handle_disconnected`](Self::handle_disconnected), [`handle_timeout`](Self::handle_timeout),
/// [`reconnect_to`](Self::reconnect_to), [`forget_watch`](Self::forget_watch),
/// [`handle_probe_done`](Self::handle_probe_done). Outputs:
/// [`poll_connect`](Self::poll_connect) (the host to dial, when the backoff allows),
/// [`poll_probe`](Self::poll_probe) (a host to ask whether it serves read/write, while
/// read-only),
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
    passwd: Secret,
    negotiated: Option<Duration>,
    /// Whether a read/write server ever accepted this session (Java's `seenRwServerBefore`):
    /// until then a reconnect asks for a new session.
    seen_rw_server: bool,
    /// Whether any server ever accepted a session of this client (a renewed session keeps
    /// it: it retries as an established one does, with no connect timeout).
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
    /// Callers' requests (and the session's own, without an id) in call order.
    outbox: VecDeque<(Option<RequestId>, Encoded)>,
    /// Sent requests, oldest first: replies must match the head.
    pending: VecDeque<Pending>,
    /// Whether the outbox is being written out ([`Session::hold_for_backlog`]).
    flushing_outbox: bool,
    /// Sent auth packets (xid -4) in order; `Some` when a caller waits.
    auth_pending: VecDeque<Option<RequestId>>,
    credentials: Vec<(String, Secret)>,
    /// Callers of `add_auth` waiting for a connection: index into `credentials`.
    auth_waiting: Vec<(usize, RequestId)>,
    ping_queued: bool,
    watches: WatchRegistry,
    /// The watch modes the server holds for this connection, path by path ([`modes`]).
    server_modes: ServerModes,
    deadlines: Deadlines,
    /// The `close` that began the closing, and when it gives up waiting for the reply.
    closing: Option<(RequestId, Instant)>,
    /// Callers of `close` while it was under way: answered with the first, once closed.
    later_closers: Vec<RequestId>,
    /// `close` was called: a session that expires meanwhile is not renewed.
    close_requested: bool,
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
    /// The SASL exchange under way on this connection, if any.
    sasl: Option<SaslRun>,
    /// Steps of a blocking SASL mechanism for the driver to run ([`Session::poll_sasl_work`]).
    sasl_jobs: SaslJobs,
    /// The session was ready once (handshake and SASL done): until then the connect timeout
    /// applies, SASL included.
    ready_once: bool,
    /// Why authentication failed, once it has (for every later call's error).
    auth_failure: Option<crate::AuthFailure>,
    /// The error the session ended with when it gave up connecting
    /// ([`Error::NoServerReachable`]); every later call gets it.
    gave_up_with: Option<Error>,
    /// The hosts whose attempts failed permanently since the last transient failure.
    permanent_failures: BTreeSet<usize>,
    /// The quorum check ([`quorum`]): who wants it, and this connection's checks.
    quorum: QuorumCheck,
    /// A move the client made itself is under way: the state stays `Connected` until the
    /// session is established on the new server or this instant passes
    /// ([`Timing::move_grace`]).
    moving: Option<Instant>,
    /// The search for a read/write server while read-only ([`read_only_search`]).
    read_only_search: Option<ReadOnlySearch>,
    /// The last [`ProbeId`] handed out.
    next_probe: u64,
}

const HEADER_LEN: usize = 8;

/// Requests in flight from which new ones are held for a batch ([`Session::hold_for_backlog`]).
const BACKLOG_HOLD: usize = 64;

/// Requests queued that end a hold ([`Session::hold_for_backlog`]).
const BACKLOG_BATCH: usize = 32;

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
        let resume = config.resume.take();
        let resumed = resume.is_some();
        let quorum = QuorumCheck::new(config.quorum_check);
        Self {
            config,
            timing,
            state: SessionState::Connecting,
            link: Link::Down { retry_at: None },
            session_id: resume.as_ref().map_or(0, |(id, _)| *id),
            passwd: resume.map_or_else(|| Secret::new(vec![0; 16]), |(_, p)| p),
            negotiated: None,
            // A resumed session was served by a read/write server: ask for it by id.
            seen_rw_server: resumed,
            established: false,
            last_zxid: 0,
            last_answered_send: None,
            pings_in_flight: VecDeque::new(),
            xids: XidAllocator::new(),
            next_id: 0,
            // One slot each to begin with: most sessions rarely hold more than one frame or
            // request at a time, and a `VecDeque`'s first growth would reserve four
            // (docs/performance.md, "Where an idle session's memory goes").
            control: VecDeque::with_capacity(1),
            outbox: VecDeque::with_capacity(1),
            pending: VecDeque::with_capacity(1),
            flushing_outbox: false,
            auth_pending: VecDeque::new(),
            credentials: Vec::new(),
            auth_waiting: Vec::new(),
            ping_queued: false,
            watches: WatchRegistry::default(),
            server_modes: ServerModes::default(),
            deadlines: Deadlines::default(),
            closing: None,
            later_closers: Vec::new(),
            close_requested: false,
            events: VecDeque::with_capacity(1),
            hosts,
            backoff,
            rng,
            first_attempt: None,
            current_host: None,
            failed_attempts: 0,
            tried: BTreeSet::new(),
            sasl: None,
            sasl_jobs: SaslJobs::default(),
            ready_once: false,
            auth_failure: None,
            gave_up_with: None,
            last_failure: None,
            permanent_failures: BTreeSet::new(),
            quorum,
            moving: None,
            read_only_search: None,
            next_probe: 0,
        }
    }

    fn new_id(&mut self) -> RequestId {
        self.next_id += 1;
        RequestId(self.next_id)
    }

    /// Why authentication failed, once it has (the state is then `AuthFailed`).
    pub fn auth_failure(&self) -> Option<&crate::AuthFailure> {
        self.auth_failure.as_ref()
    }

    /// The error the session ended with when it gave up connecting
    /// ([`Error::NoServerReachable`], with the hosts tried and the last failure).
    pub fn gave_up_with(&self) -> Option<&Error> {
        self.gave_up_with.as_ref()
    }

    /// The error every call gets once the session is over (or closing); `None` while it runs.
    pub fn ended_with(&self) -> Option<Error> {
        self.terminal_error()
    }

    fn terminal_error(&self) -> Option<Error> {
        match self.state {
            SessionState::Expired => Some(Error::SessionExpired),
            SessionState::AuthFailed => Some(Error::AuthFailed(
                self.auth_failure
                    .clone()
                    .unwrap_or_else(crate::AuthFailure::refused_by_server),
            )),
            SessionState::Closed => Some(self.gave_up_with.clone().unwrap_or(Error::Closed)),
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
        self.refuse_mixed_persistent_kinds(&encoded)?;
        let len = HEADER_LEN + encoded.body.encoded_len();
        if len > self.config.max_frame_len {
            return Err(Error::PacketTooLarge {
                len,
                max: self.config.max_frame_len,
            });
        }
        let id = self.new_id();
        self.outbox.push_back((Some(id), encoded));
        if let Some(deadline) = deadline {
            self.deadlines.insert(deadline, id);
        }
        Ok(id)
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
                ref mut last_recv,
                ref mut gather_lapsed,
                ..
            } => {
                *last_recv = now;
                *gather_lapsed = false;
                if let Err(error) = self.handle_message(frame) {
                    tracing::warn!(%error, "protocol violation; dropping the connection");
                    self.lose_connection(now, Error::Protocol(error), true);
                }
            }
        }
    }

    /// The caller of a watch is gone: do not deliver or re-register it any more.
    pub fn forget_watch(&mut self, id: RequestId) {
        let Some(forgotten) = self.watches.forget(id) else {
            return;
        };
        // A persistent watch fires until removed: remove it on the server too, unless another
        // watcher of this session is (or is about to be) on the path. On 3.8 only `ANY`
        // removes a persistent watch, and it removes every watch of the session on the path.
        if forgotten.kind.is_persistent()
            && forgotten.path_is_free
            && !self.watch_requested_on(&forgotten.path)
            && !self.state.is_terminal()
            && self.closing.is_none()
        {
            let body = jute::RemoveWatchesRequest {
                path: Some(forgotten.path),
                watcher_type: jute::WatcherType::ANY,
            };
            // In the outbox, after every request made before: a watch asked for earlier on the
            // path is in `watch_requested_on`'s view, one asked for later comes after. No
            // caller: its reply resolves nothing.
            self.outbox.push_back((
                None,
                Encoded {
                    op_code: OpCode::REMOVE_WATCHES,
                    body: body.into(),
                    after: AfterReply::Nothing,
                },
            ));
        }
    }

    /// Whether a request that arms a watch on `server_path` is queued or in flight.
    fn watch_requested_on(&self, server_path: &str) -> bool {
        let on_path =
            |after: &AfterReply| matches!(after, AfterReply::Watch(p, _) if p == server_path);
        self.pending.iter().any(|p| on_path(&p.after))
            || self.outbox.iter().any(|(_, e)| on_path(&e.after))
    }

    // ----- outputs -----

    /// Appends the next frame to send, length prefix included, to `buf` (the connection's
    /// write buffer). A request is kept as its checked record until then and encoded once,
    /// here, straight into `buf`, with its watch flag as sent. Returns whether it appended one.
    ///
    /// A request counts as sent from this call on: the driver should take frames only while
    /// its buffer has room, so that requests it cannot write yet stay queued here (and are
    /// sent on the next connection if this one is lost).
    pub fn poll_transmit_into(&mut self, now: Instant, buf: &mut BytesMut) -> bool {
        self.transmit_next(now, buf).is_some()
    }

    /// As [`poll_transmit_into`](Self::poll_transmit_into), telling which request the frame
    /// carries: `None` when it appended no frame, `Some(Some(id))` for the caller's request
    /// `id`, `Some(None)` for a frame of the session's own (the handshake, a ping, auth,
    /// SetWatches). For a driver that times requests from the call to the bytes written.
    pub fn transmit_next(&mut self, now: Instant, buf: &mut BytesMut) -> Option<Option<RequestId>> {
        let mut sent = None;
        match self.link {
            Link::Down { .. } | Link::Dialing { .. } => return None,
            Link::Handshaking { .. } => match self.control.front() {
                Some(Outgoing::Raw(_)) => {
                    if let Some(Outgoing::Raw(frame)) = self.control.pop_front() {
                        put_frame(buf, &frame);
                    }
                }
                _ => return None,
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
                            sent = id;
                            self.send_request(now, id, encoded, buf);
                        }
                    }
                } else if self.pending.len() < self.config.max_in_flight
                    && !self.authenticating()
                    && !self.hold_for_backlog()
                    && let Some((id, encoded)) = self.outbox.pop_front()
                {
                    sent = id;
                    self.send_request(now, id, encoded, buf);
                } else {
                    return None;
                }
            }
        }
        if let Link::Up { last_send, .. } = &mut self.link {
            *last_send = now;
        }
        Some(sent)
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

    /// The next thing the driver must know.
    ///
    /// An expired session is renewed here, when the configuration asks for it
    /// ([`SessionConfig::renew_expired`]): once every event of the expiry was handed out (every
    /// request and watch of the expired session answered, `Expired` told), the next call
    /// starts the new session and returns its `Connecting`.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        if self.events.is_empty() {
            self.renew_expired();
        }
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

    /// Whether the outbox's requests wait for more company before they are written.
    ///
    /// The server answers a session's requests one after the other, in order. While
    /// [`BACKLOG_HOLD`] of ours are in flight it has that many to answer first, and a new
    /// request would only queue behind them there: writing it at once gains nothing, and
    /// writing requests a few at a time costs a write here, a read on the server and a
    /// wake-up on each side for every few. So new requests are held until [`BACKLOG_BATCH`]
    /// are queued (or the backlog shrinks: each reply is a turn that looks again), then
    /// written together; once a batch starts, the whole outbox goes.
    fn hold_for_backlog(&mut self) -> bool {
        if self.outbox.is_empty() {
            self.flushing_outbox = false;
            return false;
        }
        if self.flushing_outbox {
            return false;
        }
        if self.pending.len() >= BACKLOG_HOLD && self.outbox.len() < BACKLOG_BATCH {
            return true;
        }
        self.flushing_outbox = true;
        false
    }

    fn send_request(
        &mut self,
        now: Instant,
        id: Option<RequestId>,
        encoded: Encoded,
        buf: &mut BytesMut,
    ) {
        let xid = self.xids.next();
        if encoded.after == AfterReply::QuorumCheck {
            self.quorum_check_sent(now);
        }
        let (op_code, clear_watch_flag, change) = self.as_sent(&encoded);
        let mut body = encoded.body;
        if clear_watch_flag {
            body.clear_watch_flag();
        }
        let len = HEADER_LEN + body.encoded_len();
        buf.reserve(4 + len);
        // Checked against the frame limit at submit; SetWatches batches are capped below it.
        buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
        buf.put_i32(xid);
        buf.put_i32(op_code.0);
        // The one copy of the request: the record, encoded into the connection's buffer.
        body.encode(buf);
        self.pending.push_back(Pending {
            xid,
            id,
            op_code,
            after: encoded.after,
            change,
            sent_at: now,
        });
    }

    fn reply(&mut self, id: RequestId, result: Result<Response, Error>, watch_armed: bool) {
        self.deadlines.remove(id);
        self.events.push_back(SessionEvent::Reply {
            id,
            result,
            watch_armed,
        });
    }

    fn time_out_request(&mut self, id: RequestId) {
        if let Some(at) = self
            .outbox
            .iter()
            .position(|(queued, _)| *queued == Some(id))
        {
            self.outbox.remove(at);
        } else if let Some(pending) = self.pending.iter_mut().find(|p| p.id == Some(id)) {
            // Its reply still comes, in order; it is then read and discarded. A removal of
            // watches still removes them when it succeeds: its watchers are told then.
            pending.id = None;
            if !matches!(pending.after, AfterReply::RemoveWatches(..)) {
                pending.after = AfterReply::Nothing;
            }
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
