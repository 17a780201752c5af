//! The connection task: moves frames between a byte stream and the [`Session`]. It makes no
//! protocol decision of its own: the session says which host to dial and when (its
//! reconnect backoff), what to write and when to give up on a connection.
//!
//! Reads, writes, commands and timers are events of one loop: a write that cannot complete
//! (the server stopped reading, a full TCP window during a partition) waits for the stream
//! to take more bytes in its own branch, so frames are still read, timers still fire (the
//! read timeout, the local expiry) and commands are still taken meanwhile. Frames are
//! encoded straight into the connection's write buffer; the session hands out more only
//! while that buffer has room, so requests that cannot be written stay queued in the
//! session (and go out on the next connection if this one is lost).
//!
//! While the session is read-only it also searches for a read/write server in the background
//! (see [`crate::read_only`]) and, when one answers, moves the session there.

use std::collections::HashMap;
use std::future::Future;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use jute::{FrameError, Response};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::connect_string::HostAddr;
use crate::path::Chroot;
use crate::read_only;
use crate::request_timing::{DecodedAt, Issued, SendStamps};
use crate::session::{
    Op, ProbeId, ProbeOutcome, RequestId, SaslDone, Session, SessionEvent, SessionState,
    WatchedEvent,
};
use crate::transport::{Connecting, Dialer, Transport};
use crate::{ConnectFailure, Error};
use connection::Connection;

/// What a request's caller gets back: the response (its body decoded by the op code sent).
pub(crate) type ReplyResult = Result<Response, Error>;

/// A reply on its way to its caller: the result, and (feature `request-timing`) when its frame
/// was read (zero-sized without the feature).
#[derive(Debug)]
pub(crate) struct Delivery {
    pub(crate) result: ReplyResult,
    pub(crate) decoded: DecodedAt,
}

impl From<ReplyResult> for Delivery {
    fn from(result: ReplyResult) -> Delivery {
        Delivery {
            result,
            decoded: Default::default(),
        }
    }
}

/// Where a watch's events go.
pub(crate) enum WatchSink {
    /// One event (or the loss), then done.
    Once(oneshot::Sender<Result<WatchedEvent, Error>>),
    /// Every event, bounded; `overflowed` is set when the consumer fell behind.
    Stream {
        tx: mpsc::Sender<Result<WatchedEvent, Error>>,
        overflowed: Arc<AtomicBool>,
    },
}

pub(crate) enum Command {
    Submit {
        op: Op,
        timeout: Option<Duration>,
        reply: oneshot::Sender<Delivery>,
        watch: Option<WatchSink>,
        /// When the call was made (feature `request-timing`; zero-sized without it).
        issued: Issued,
    },
    AddAuth {
        scheme: String,
        auth: Bytes,
        reply: oneshot::Sender<Delivery>,
    },
    Close {
        reply: oneshot::Sender<Delivery>,
    },
    /// Leave the session without closing it ([`Session::detach`]).
    Detach {
        reply: oneshot::Sender<()>,
    },
    /// A new host list ([`Session::update_hosts`]); the reply says whether the session moves.
    UpdateHosts {
        hosts: Vec<HostAddr>,
        chroot: Chroot,
        rebalance: bool,
        reply: oneshot::Sender<Result<bool, Error>>,
    },
    /// A persistent watcher was dropped: forget the watches whose consumer is gone.
    WatcherDropped,
    /// Take (`true`) or release (`false`) one hold of the quorum check
    /// ([`Session::hold_quorum_check`]).
    QuorumCheck(bool),
}

/// Hashes a [`RequestId`] for the maps of callers and watches: the ids come from one counter,
/// so one multiplication spreads them over the table (the default SipHash cost more than the
/// rest of a lookup, and there are two lookups per request). Ids are made here, not by a
/// peer, so there is nothing to randomize against.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A map keyed by request id.
pub(crate) type IdMap<V> = HashMap<RequestId, V, BuildHasherDefault<IdHasher>>;

/// What the driver publishes for the handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Published {
    pub(crate) state: SessionState,
    pub(crate) session_id: i64,
    /// The session's password (for [`Client::session_password`](crate::Client)).
    pub(crate) password: crate::Secret,
    /// The servers the session may use (for [`Client::hosts`](crate::Client)).
    pub(crate) hosts: Arc<[HostAddr]>,
    /// The server of the current connection (for [`Client::server`](crate::Client)).
    pub(crate) server: Option<HostAddr>,
    pub(crate) negotiated_timeout: Option<Duration>,
    /// Why authentication failed, once the state is `AuthFailed`.
    pub(crate) auth_failure: Option<crate::AuthFailure>,
    /// Why the session gave up connecting, once the state is `Closed` for that reason.
    pub(crate) gave_up_with: Option<Error>,
}

/// The most commands taken from the queue in one turn of the loop before frames are written.
const MAX_COMMANDS_PER_TURN: usize = 256;

/// The most frames handled in one turn of the loop: those already read (or readable without
/// waiting) after the one that woke it, before the requests they unblock are written and
/// commands and timers are looked at again.
const MAX_FRAMES_PER_TURN: usize = 256;

/// The production dialer over plain TCP: resolves the host on every attempt (a changed DNS
/// entry is picked up on reconnect) and opens a TCP connection with Nagle off. The attempt's
/// budget is the session's.
#[cfg(test)]
pub(crate) fn tcp_dialer() -> Dialer {
    crate::transport::Transport::Tcp.dialer()
}

/// Starts each step of a blocking SASL mechanism the session handed out on a thread of its
/// own, whose result comes back on `done`. A plain thread, not the runtime's blocking pool:
/// a step stuck in a library call (a frozen KDC) must not hold up the runtime's shutdown, and
/// the session gives up on it after the attempt's budget anyway.
fn run_sasl_work(session: &mut Session, sasl: &mut Option<SaslChannel>) {
    while let Some(work) = session.poll_sasl_work() {
        let done = sasl.get_or_insert_with(mpsc::unbounded_channel).0.clone();
        let started = std::thread::Builder::new()
            .name("zk-sasl".into())
            .spawn(move || {
                let _ = done.send(work.run());
            });
        if let Err(error) = started {
            // The step's budget runs out and the attempt fails.
            tracing::warn!(%error, "cannot start a thread for a SASL step");
        }
    }
}

/// Where the steps of a blocking SASL mechanism come back from their threads: made for the
/// first step (a channel's first block is 2.5 KB, and only Kerberos ever needs one).
type SaslChannel = (
    mpsc::UnboundedSender<SaslDone>,
    mpsc::UnboundedReceiver<SaslDone>,
);

/// A probe of the search for a read/write server under way: its id and its I/O.
type Probing = (ProbeId, Pin<Box<dyn Future<Output = ProbeOutcome> + Send>>);

pub(crate) struct Driver {
    pub(crate) session: Session,
    pub(crate) dialer: Dialer,
    /// How the read-only search reaches the other hosts (TLS when the session's connections
    /// are).
    pub(crate) probes: Transport,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) published: watch::Sender<Published>,
    /// The state alone, for the handles' state watchers: they subscribe to it directly, so
    /// they see a change as soon as it is published and are woken by state changes only.
    pub(crate) states: watch::Sender<SessionState>,
    pub(crate) max_frame_len: usize,
    /// Told once: the first connection's outcome.
    pub(crate) first_connect: Option<oneshot::Sender<Result<(), Error>>>,
    pub(crate) replies: IdMap<oneshot::Sender<Delivery>>,
    pub(crate) watches: IdMap<WatchSink>,
    /// Request timing (feature `request-timing`; does nothing without it).
    pub(crate) stamps: SendStamps,
}

impl Driver {
    /// Why an attempt or a connection ended when a read failed: what the read said (a reset,
    /// a negative length prefix), so that `NoServerReachable` names it.
    fn read_failure(&self, error: &FrameError) -> ConnectFailure {
        match error {
            FrameError::Io(io) => match io.kind() {
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::UnexpectedEof => self.ended_failure(&io.to_string()),
                _ => ConnectFailure::from_io(io),
            },
            other => ConnectFailure::Protocol(crate::ProtocolError::Frame(other.to_string())),
        }
    }

    /// A connection that ended (`cause`): before the session handshake's answer on a
    /// plaintext connection, with the hint that the port may speak TLS (a TLS port closes on
    /// a plaintext ConnectRequest without a word).
    fn ended_failure(&self, cause: &str) -> ConnectFailure {
        if self.session.is_handshaking() && !self.probes.is_tls() {
            ConnectFailure::Closed(format!(
                "{cause} before answering the session handshake (is this a TLS port? connect \
                 with TLS: zk+tls:// in the connect string, or ClientBuilder::tls)"
            ))
        } else {
            ConnectFailure::Closed(cause.to_owned())
        }
    }

    pub(crate) async fn run(mut self) {
        let mut conn: Option<Connection> = None;
        let mut connecting: Option<Connecting> = None;
        let mut handles_gone = false;
        // The probe of the search for a read/write server the session handed out (dropping it
        // cancels it).
        let mut probing: Option<Probing> = None;
        // Steps of a blocking SASL mechanism (Kerberos) come back here from their threads.
        let mut sasl: Option<SaslChannel> = None;
        // One timer for the whole life of the task, moved when the session's next deadline
        // moves (to a later one without touching the runtime's timer wheel), instead of a
        // timer registered and dropped on every turn.
        let timer = tokio::time::sleep_until(Instant::now());
        tokio::pin!(timer);
        let mut armed: Option<Instant> = None;
        loop {
            // An attempt the session no longer wants (its budget ran out, the session ended)
            // is dropped; a new one starts when the session's backoff allows.
            if connecting.is_some() && !self.session.is_dialing() {
                connecting = None;
            }
            if conn.is_none()
                && connecting.is_none()
                && let Some((_, host)) = self.session.poll_connect(Instant::now().into_std())
            {
                tracing::debug!(%host, "connecting");
                connecting = Some((self.dialer)(host));
            }
            // A probe the session no longer wants (its deadline passed, the session left the
            // read-only server) is dropped; the next one starts when the session says.
            if probing
                .as_ref()
                .is_some_and(|(id, _)| !self.session.is_probing(*id))
            {
                probing = None;
            }
            if probing.is_none()
                && let Some(probe) = self.session.poll_probe(Instant::now().into_std())
            {
                let io = read_only::probe(probe.host, self.probes.clone());
                probing = Some((probe.id, Box::pin(io)));
            }
            let next = self.session.poll_timeout().map(Instant::from_std);
            if next != armed {
                if let Some(at) = next {
                    timer.as_mut().reset(at);
                }
                armed = next;
            }
            let (reader, writer) = match conn.as_mut() {
                Some(c) => {
                    let wants_write = c.wants_write();
                    (
                        Some(&mut c.reader),
                        wants_write.then_some((&mut c.writer, &mut c.out, &mut c.unflushed)),
                    )
                }
                None => (None, None),
            };
            let has_reader = reader.is_some();
            let has_writer = writer.is_some();
            tokio::select! {
                command = self.commands.recv(), if !handles_gone => match command {
                    Some(command) => {
                        // One reading of the clock for the commands taken in this turn.
                        let now = Instant::now().into_std();
                        self.handle_command(now, command);
                        // Take whatever else is already queued, so that many requests go out
                        // in one write (bounded, so a flood cannot starve reads).
                        for _ in 0..MAX_COMMANDS_PER_TURN {
                            let Ok(command) = self.commands.try_recv() else { break };
                            self.handle_command(now, command);
                        }
                    }
                    None => {
                        // Every handle is gone: close the session politely.
                        handles_gone = true;
                        self.session.close(Instant::now().into_std());
                    }
                },
                result = async { connecting.as_mut().expect("guarded").await }, if connecting.is_some() => {
                    connecting = None;
                    let now = Instant::now().into_std();
                    match result {
                        // A connection that completes after the session gave up on it is
                        // just closed.
                        Ok((read, write)) if self.session.is_dialing() => {
                            conn = Some(Connection::new(read, write, self.max_frame_len));
                            self.session.handle_connected(now);
                        }
                        Ok(_) => {}
                        Err(error) => {
                            self.session.handle_connect_failed(now, ConnectFailure::from_io(&error));
                        }
                    }
                },
                frame = async { reader.expect("guarded").next().await }, if has_reader => {
                    // The frames already read (or readable at once) after this one are
                    // handled in the same turn, each with its events, and the requests they
                    // let through are written once for all of them.
                    let now = Instant::now().into_std();
                    let mut next = Some(frame);
                    let mut handled = 0;
                    while let Some(frame) = next.take() {
                        self.handle_read(now, &mut conn, frame);
                        handled += 1;
                        if handled < MAX_FRAMES_PER_TURN
                            && let Some(c) = conn.as_mut()
                        {
                            // Polled without the task's waker: a `None` here (nothing
                            // more to read yet) is looked at again by the next turn's
                            // `select!`, which registers the waker.
                            next = c.reader.next().now_or_never();
                        }
                    }
                },
                written = async {
                    let (writer, out, unflushed) = writer.expect("guarded");
                    Connection::write_some(writer, out, unflushed, &mut self.stamps).await
                }, if has_writer => {
                    if let Err(error) = written {
                        tracing::info!(%error, "writing to the server failed");
                        conn = None;
                        self.session.handle_connection_failed(
                            Instant::now().into_std(),
                            ConnectFailure::from_io(&error),
                        );
                    }
                },
                outcome = async { probing.as_mut().expect("guarded").1.as_mut().await }, if probing.is_some() => {
                    if let Some((id, _)) = probing.take() {
                        self.session.handle_probe_done(Instant::now().into_std(), id, outcome);
                    }
                },
                () = &mut timer, if armed.is_some() => {
                    self.session.handle_timeout(Instant::now().into_std());
                },
                Some(done) = async { sasl.as_mut().expect("guarded").1.recv().await }, if sasl.is_some() => {
                    self.session.handle_sasl_done(Instant::now().into_std(), done);
                },
            }
            run_sasl_work(&mut self.session, &mut sasl);
            // Tell the handles what happened (a dropped connection first), then write what
            // the session wants sent.
            self.dispatch_events(&mut conn);
            if let Some(c) = conn.as_mut()
                && let Err(error) = c
                    .transmit(&mut self.session, &mut self.stamps)
                    .and_then(|()| c.update_low_water(&self.session))
            {
                tracing::info!(%error, "the connection to the server failed");
                conn = None;
                self.session.handle_connection_failed(
                    Instant::now().into_std(),
                    ConnectFailure::from_io(&error),
                );
                while let Some(event) = self.session.poll_event() {
                    self.dispatch(event);
                }
            }
            match conn.as_ref() {
                Some(c) if !c.unflushed => self.stamps.settled(),
                Some(_) => {}
                None => self.stamps.connection_closed(),
            }
            self.publish();
            if self.session.state().is_terminal() {
                if let Some(tx) = self.first_connect.take() {
                    let _ = tx.send(Err(terminal_error(&self.session)));
                }
                if handles_gone && self.replies.is_empty() {
                    return;
                }
            }
        }
    }

    /// Hands what a read gave (a frame, an error, the end of the stream) to the session, then
    /// its events to the handles: each frame's replies are on their way before the next frame
    /// is looked at, and a frame that makes the session drop the connection is the last one
    /// read from it.
    fn handle_read(
        &mut self,
        now: std::time::Instant,
        conn: &mut Option<Connection>,
        frame: Option<Result<Bytes, FrameError>>,
    ) {
        match frame {
            Some(Ok(frame)) => {
                self.stamps.frame_read();
                self.session.handle_frame(now, frame);
            }
            Some(Err(FrameError::TooLong { len, max, xid })) => {
                tracing::info!(
                    len,
                    max,
                    ?xid,
                    "frame over the limit; dropping the connection"
                );
                *conn = None;
                self.session.handle_oversized_frame(now, len, xid);
            }
            Some(Err(FrameError::Io(error)))
                if matches!(ConnectFailure::from_io(&error), ConnectFailure::Tls(_)) =>
            {
                // A TLS alert: during the session handshake it says why the attempt failed (a
                // client certificate refused, with TLS 1.3).
                tracing::info!(%error, "connection failed");
                *conn = None;
                self.session
                    .handle_connection_failed(now, ConnectFailure::from_io(&error));
            }
            Some(Err(error)) => {
                tracing::info!(%error, "connection failed");
                *conn = None;
                let failure = self.read_failure(&error);
                self.session.handle_connection_failed(now, failure);
            }
            None => {
                tracing::info!("the server closed the connection");
                *conn = None;
                let failure = self.ended_failure("the server closed the connection");
                self.session.handle_connection_failed(now, failure);
            }
        }
        self.dispatch_events(conn);
    }

    /// Hands the session's events to the handles; drops the connection when the session says
    /// so.
    fn dispatch_events(&mut self, conn: &mut Option<Connection>) {
        while let Some(event) = self.session.poll_event() {
            if let SessionEvent::DropConnection(reason) = &event {
                tracing::debug!(%reason, "dropping the connection");
                *conn = None;
            }
            self.dispatch(event);
        }
        self.stamps.frame_done();
    }

    /// Tells the handles the session's state, id and timeout (if they changed).
    fn publish(&self) {
        let state = self.session.state();
        self.published.send_if_modified(|current| {
            let hosts = self.session.hosts();
            let changed = current.state != state
                || current.session_id != self.session.session_id()
                || current.password != *self.session.password()
                || current.negotiated_timeout != self.session.negotiated_timeout()
                || *current.hosts != *hosts
                || current.server.as_ref() != self.session.connected_server()
                || current.auth_failure.as_ref() != self.session.auth_failure()
                || current.gave_up_with.as_ref() != self.session.gave_up_with();
            if changed {
                *current = Published {
                    state,
                    session_id: self.session.session_id(),
                    password: self.session.password().clone(),
                    negotiated_timeout: self.session.negotiated_timeout(),
                    // A new list only when it changed: no allocation on every turn.
                    hosts: if *current.hosts == *hosts {
                        current.hosts.clone()
                    } else {
                        hosts.into()
                    },
                    server: self.session.connected_server().cloned(),
                    auth_failure: self.session.auth_failure().cloned(),
                    gave_up_with: self.session.gave_up_with().cloned(),
                };
            }
            changed
        });
        self.states
            .send_if_modified(|current| std::mem::replace(current, state) != state);
    }

    fn handle_command(&mut self, now: std::time::Instant, command: Command) {
        match command {
            Command::Submit {
                op,
                timeout,
                reply,
                watch,
                issued,
            } => match self.session.submit(op, timeout.map(|t| now + t)) {
                Ok(id) => {
                    self.stamps.submitted(id, issued);
                    self.replies.insert(id, reply);
                    if let Some(sink) = watch {
                        self.watches.insert(id, sink);
                    }
                }
                Err(error) => {
                    let _ = reply.send(Err(error).into());
                }
            },
            Command::AddAuth {
                scheme,
                auth,
                reply,
            } => match self.session.add_auth(scheme, auth) {
                Ok(id) => {
                    self.replies.insert(id, reply);
                }
                Err(error) => {
                    let _ = reply.send(Err(error).into());
                }
            },
            Command::Close { reply } => {
                let id = self.session.close(now);
                self.replies.insert(id, reply);
            }
            Command::Detach { reply } => {
                self.session.detach();
                // Published before the caller resumes: right after `detach().await` the state
                // reads `Closed`, never the `Connected` of before.
                while let Some(event) = self.session.poll_event() {
                    self.dispatch(event);
                }
                self.publish();
                let _ = reply.send(());
            }
            Command::UpdateHosts {
                hosts,
                chroot,
                rebalance,
                reply,
            } => {
                let _ = reply.send(self.session.update_hosts(now, hosts, &chroot, rebalance));
            }
            Command::QuorumCheck(true) => self.session.hold_quorum_check(),
            Command::QuorumCheck(false) => self.session.release_quorum_check(),
            Command::WatcherDropped => {
                let gone: Vec<RequestId> = self
                    .watches
                    .iter()
                    .filter(
                        |(_, sink)| matches!(sink, WatchSink::Stream { tx, .. } if tx.is_closed()),
                    )
                    .map(|(&id, _)| id)
                    .collect();
                for id in gone {
                    self.drop_watch(id);
                }
            }
        }
    }

    fn dispatch(&mut self, event: SessionEvent) {
        match event {
            SessionEvent::Reply {
                id,
                result,
                watch_armed,
            } => {
                if watch_armed {
                    self.forget_if_abandoned(id);
                } else if !self.watches.is_empty() {
                    self.watches.remove(&id);
                }
                let decoded = self.stamps.replied(id);
                if let Some(reply) = self.replies.remove(&id) {
                    // A dropped caller is fine: the reply was read, nothing desynchronizes.
                    let _ = reply.send(Delivery { result, decoded });
                }
            }
            SessionEvent::Watch { id, event, last } => self.deliver(id, Ok(event), last),
            SessionEvent::WatchLost { id, error } => self.deliver(id, Err(error), true),
            SessionEvent::State(state) => {
                tracing::debug!(%state, "session state");
                // Published before any reply that follows it is sent: a caller woken by
                // its reply (`close`, a call failed by the session's end) reads the state it
                // caused.
                self.publish();
                // (`connect` returns as soon as it is told, and on a multi-threaded runtime
                // its caller could otherwise still read `Connecting` and session id 0.)
                if state.is_connected()
                    && let Some(tx) = self.first_connect.take()
                {
                    let _ = tx.send(Ok(()));
                }
            }
            SessionEvent::GaveUp(error) => {
                if let Some(tx) = self.first_connect.take() {
                    let _ = tx.send(Err(error));
                }
            }
            SessionEvent::DropConnection(_) => {}
            // An event of a newer zk-session this driver does not know: nothing to deliver.
            other => tracing::debug!(?other, "session event not handled"),
        }
    }

    /// A watch the server just armed whose watcher was dropped while its request was in
    /// flight (a cancelled `add_watch`): its sink is closed, or already swept by
    /// `WatcherDropped`. Forgotten now, so the session removes it on the server, instead of
    /// holding it until its first event.
    fn forget_if_abandoned(&mut self, id: RequestId) {
        let abandoned = match self.watches.get(&id) {
            None => true,
            Some(WatchSink::Stream { tx, .. }) => tx.is_closed(),
            Some(WatchSink::Once(_)) => false,
        };
        if abandoned {
            self.drop_watch(id);
        }
    }

    /// Drops a watch whose sink will take no more events: the session forgets it (and
    /// removes a persistent one on the server).
    fn drop_watch(&mut self, id: RequestId) {
        self.watches.remove(&id);
        self.session.forget_watch(id);
    }

    /// Hands a watch's event to its sink; `last`: the session says the watch ends with it.
    fn deliver(&mut self, id: RequestId, event: Result<WatchedEvent, Error>, last: bool) {
        let Some(sink) = self.watches.get(&id) else {
            return;
        };
        match sink {
            WatchSink::Once(_) => {
                if let Some(WatchSink::Once(tx)) = self.watches.remove(&id) {
                    let _ = tx.send(event);
                }
            }
            WatchSink::Stream { tx, overflowed } => {
                match tx.try_send(event) {
                    Ok(()) if !last => {}
                    Ok(()) => {
                        self.watches.remove(&id);
                    }
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        // Never block the connection: the stream ends with an overflow error.
                        overflowed.store(true, Ordering::Release);
                        self.drop_watch(id);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => self.drop_watch(id),
                }
            }
        }
    }
}

fn terminal_error(session: &Session) -> Error {
    session.ended_with().unwrap_or(Error::Closed)
}

mod connection;

#[cfg(test)]
mod tests;

#[cfg(all(test, target_os = "linux"))]
mod gather_tests;
