//! The connection task: moves frames between a TCP stream and the [`Session`]. It makes no
//! protocol decision of its own.
//!
//! While the session is read-only it also searches for a read/write server in the background
//! (see [`crate::read_only`]) and, when one answers, drops the read-only connection and dials
//! that server next.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{BufMut, Bytes};
use futures_util::{SinkExt, StreamExt};
use jute::{Encode, FrameCodec, FrameError, Response};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::Framed;

use crate::connect_string::{HostAddr, HostList};
use crate::error::Error;
use crate::read_only;
use crate::session::{Op, RequestId, Session, SessionEvent, SessionState, WatchedEvent};

/// What a request's caller gets back: the response, and whether its watch was armed.
pub(crate) type ReplyResult = Result<(Response, bool), Error>;

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
        reply: oneshot::Sender<ReplyResult>,
        watch: Option<WatchSink>,
    },
    AddAuth {
        scheme: String,
        auth: Bytes,
        reply: oneshot::Sender<ReplyResult>,
    },
    Close {
        reply: oneshot::Sender<ReplyResult>,
    },
}

/// What the driver publishes for the handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    pub(crate) state: SessionState,
    pub(crate) session_id: i64,
    pub(crate) negotiated_timeout: Option<Duration>,
}

/// A frame body already encoded by the session.
struct Raw(Bytes);

impl Encode for Raw {
    fn encoded_len(&self) -> usize {
        self.0.len()
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_slice(&self.0);
    }
}

/// The most commands taken from the queue in one turn of the loop before frames are written.
const MAX_COMMANDS_PER_TURN: usize = 256;

type Connecting = Pin<Box<dyn Future<Output = std::io::Result<TcpStream>> + Send>>;

/// The search for a read/write server: completes with the first host (index in the host list)
/// that answers `isro` with `rw`.
type Searching = Pin<Box<dyn Future<Output = (usize, HostAddr)> + Send>>;

pub(crate) struct Driver {
    pub(crate) session: Session,
    pub(crate) hosts: HostList,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) published: watch::Sender<Published>,
    /// The state alone, for the handles' state watchers: they subscribe to it directly, so
    /// they see a change as soon as it is published and are woken by state changes only.
    pub(crate) states: watch::Sender<SessionState>,
    pub(crate) max_frame_len: usize,
    pub(crate) fail_fast: bool,
    /// Told once: the first connection's outcome (for fail-fast connect).
    pub(crate) first_connect: Option<oneshot::Sender<Result<(), Error>>>,
    pub(crate) replies: HashMap<RequestId, oneshot::Sender<ReplyResult>>,
    pub(crate) watches: HashMap<RequestId, WatchSink>,
    pub(crate) attempts: u32,
}

impl Driver {
    /// Starts the next connection attempt: to `preferred` (an index in the host list) at once
    /// if given, else to the host list's next host after its delay. Returns the host's index.
    fn connect_next(&mut self, preferred: Option<usize>) -> (usize, Connecting) {
        let (index, host, delay) = match preferred {
            Some(preferred) => self.advance_to(preferred),
            None => {
                let (index, host, delay) = self.hosts.next();
                (index, host.clone(), delay)
            }
        };
        let timeout = self.session.timing().connect_timeout;
        let connecting = Box::pin(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            let connect = async {
                // Resolved on every attempt, so a changed DNS entry is picked up on reconnect.
                let addr = read_only::resolve(&host).await?;
                let stream = TcpStream::connect(addr).await?;
                stream.set_nodelay(true)?;
                Ok(stream)
            };
            match tokio::time::timeout(timeout, connect).await {
                Ok(result) => result,
                Err(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "connect timed out",
                )),
            }
        });
        (index, connecting)
    }

    /// Moves the host list's round-robin on to host `target` and returns it, with no delay: the
    /// list then counts it as the host dialed (for `mark_connected` and the next cycle). It is
    /// called right after a connection, when the list is at the start of a cycle, so it stays
    /// within that cycle; the hosts stepped over count as tried in it.
    fn advance_to(&mut self, target: usize) -> (usize, HostAddr, Option<Duration>) {
        for _ in 0..self.hosts.hosts().len() {
            let (index, host, _) = self.hosts.next();
            if index == target {
                return (index, host.clone(), None);
            }
        }
        (target, self.hosts.hosts()[target].clone(), None)
    }

    /// The hosts to probe for a read/write server: every host but `current`, round-robin from
    /// the one after it.
    fn probe_targets(&self, current: Option<usize>) -> Vec<(usize, HostAddr)> {
        let hosts = self.hosts.hosts();
        let start = current.map_or(0, |c| c + 1);
        (0..hosts.len())
            .map(|k| (start + k) % hosts.len())
            .filter(|&i| Some(i) != current)
            .map(|i| (i, hosts[i].clone()))
            .collect()
    }

    pub(crate) async fn run(mut self) {
        let mut conn: Option<Framed<TcpStream, FrameCodec>> = None;
        let mut connecting: Option<Connecting> = None;
        let mut handles_gone = false;
        // A close was asked for: no more searching for a read/write server.
        let mut closing = false;
        // The index in the host list of the host of the current (or last) connection.
        let mut current: Option<usize> = None;
        // A read/write server found while read-only: dialed next, once.
        let mut preferred: Option<usize> = None;
        // The search for a read/write server: runs while the session is read-only, and only
        // then (dropping it cancels it).
        let mut searching: Option<Searching> = None;
        loop {
            // A session that ended (expired, closed) dials no more: drop an attempt still
            // waiting out its backoff or its TCP connect, or it would connect once more
            // after the end (and, with handles alive, keep the host busy for nothing).
            if connecting.is_some() && !self.session.wants_connection() {
                connecting = None;
            }
            if conn.is_none() && connecting.is_none() && self.session.wants_connection() {
                let (index, attempt) = self.connect_next(preferred.take());
                current = Some(index);
                connecting = Some(attempt);
            }
            let is_read_only =
                self.session.state() == SessionState::ConnectedReadOnly && conn.is_some();
            if !is_read_only || closing {
                searching = None;
            } else if searching.is_none() {
                // With a single host there is nothing to probe: the search never completes.
                let targets = self.probe_targets(current);
                tracing::debug!(hosts = targets.len(), "searching for a read/write server");
                searching = Some(Box::pin(read_only::search(targets)));
            }
            let timer = self.session.poll_timeout().map(Instant::from_std);
            tokio::select! {
                command = self.commands.recv(), if !handles_gone => match command {
                    Some(command) => {
                        closing |= matches!(command, Command::Close { .. });
                        self.handle_command(command);
                        // Take whatever else is already queued, so that many requests go out
                        // in one write (bounded, so a flood cannot starve reads).
                        for _ in 0..MAX_COMMANDS_PER_TURN {
                            let Ok(command) = self.commands.try_recv() else { break };
                            closing |= matches!(command, Command::Close { .. });
                            self.handle_command(command);
                        }
                    }
                    None => {
                        // Every handle is gone: close the session politely.
                        handles_gone = true;
                        closing = true;
                        self.session.close(Instant::now().into_std());
                    }
                },
                result = async { connecting.as_mut().expect("guarded").await }, if connecting.is_some() => {
                    connecting = None;
                    match result {
                        // A connection that completes after the session ended is just closed.
                        Ok(stream) if self.session.wants_connection() => {
                            let codec = FrameCodec::with_max_frame_len(self.max_frame_len);
                            conn = Some(Framed::new(stream, codec));
                            self.session.handle_connected(Instant::now().into_std());
                        }
                        Ok(_) => {}
                        Err(error) => self.attempt_failed(&error),
                    }
                },
                frame = async { conn.as_mut().expect("guarded").next().await }, if conn.is_some() => {
                    let now = Instant::now().into_std();
                    match frame {
                        Some(Ok(frame)) => self.session.handle_frame(now, frame),
                        Some(Err(FrameError::TooLong { len, max })) => {
                            // Refused from its length prefix, before any buffer was reserved.
                            // The bytes after the prefix may already be in, naming the request
                            // the reply belongs to: that request gets `ReplyTooLarge`.
                            let xid = conn
                                .as_ref()
                                .and_then(|framed| framed.read_buffer().get(4..8))
                                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                            tracing::info!(len, max, ?xid, "frame over the limit; dropping the connection");
                            conn = None;
                            self.session.handle_oversized_frame(now, len, xid);
                            self.lost_before_session(&format_args!(
                                "frame of {len} bytes exceeds the maximum of {max}"
                            ));
                        }
                        Some(Err(error)) => {
                            tracing::info!(%error, "connection failed");
                            conn = None;
                            self.session.handle_disconnected(now, Error::ConnectionLoss);
                            self.lost_before_session(&error);
                        }
                        None => {
                            tracing::info!("the server closed the connection");
                            conn = None;
                            self.session.handle_disconnected(now, Error::ConnectionLoss);
                            self.lost_before_session(&"the server closed the connection");
                        }
                    }
                },
                (index, host) = async { searching.as_mut().expect("guarded").await }, if searching.is_some() => {
                    // Still read-only: the search is dropped as soon as the state changes.
                    searching = None;
                    tracing::info!(
                        %host,
                        session_id = format_args!("{:#x}", self.session.session_id()),
                        "found a read/write server; leaving the read-only server for it"
                    );
                    conn = None;
                    preferred = Some(index);
                    self.session
                        .handle_disconnected(Instant::now().into_std(), Error::ConnectionLoss);
                },
                () = async {
                    match timer {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    self.session.handle_timeout(Instant::now().into_std());
                },
            }
            // Send what the session wants sent, then tell the handles what happened.
            if let Some(framed) = conn.as_mut() {
                let now = Instant::now().into_std();
                let mut wrote = false;
                let mut failed = false;
                while let Some(frame) = self.session.poll_transmit(now) {
                    wrote = true;
                    if framed.feed(Raw(frame)).await.is_err() {
                        failed = true;
                        break;
                    }
                }
                if wrote && !failed && SinkExt::<Raw>::flush(framed).await.is_err() {
                    failed = true;
                }
                if failed {
                    conn = None;
                    self.session
                        .handle_disconnected(Instant::now().into_std(), Error::ConnectionLoss);
                    self.lost_before_session(&"writing to the server failed");
                }
            }
            while let Some(event) = self.session.poll_event() {
                if let SessionEvent::DropConnection(reason) = &event {
                    tracing::debug!(%reason, "dropping the connection");
                    conn = None;
                    self.lost_before_session(reason);
                }
                self.dispatch(event);
            }
            self.publish();
            if self.session.state().is_terminal() {
                if let Some(tx) = self.first_connect.take() {
                    let _ = tx.send(Err(terminal_error(self.session.state())));
                }
                if handles_gone && self.replies.is_empty() {
                    return;
                }
            }
        }
    }

    /// Tells the handles the session's state, id and timeout (if they changed).
    fn publish(&self) {
        let published = Published {
            state: self.session.state(),
            session_id: self.session.session_id(),
            negotiated_timeout: self.session.negotiated_timeout(),
        };
        self.published.send_if_modified(|current| {
            let changed = *current != published;
            *current = published;
            changed
        });
        self.states.send_if_modified(|current| {
            std::mem::replace(current, published.state) != published.state
        });
    }

    /// A connection attempt failed. With fail-fast, before any session, one failed attempt
    /// per host ends the client.
    fn attempt_failed(&mut self, error: &dyn fmt::Display) {
        self.attempts += 1;
        tracing::debug!(%error, "connection attempt failed");
        if self.fail_fast
            && self.attempts as usize >= self.hosts.hosts().len()
            && self.session.state() == SessionState::Connecting
        {
            self.give_up(error);
        }
    }

    /// A connection ended. Before the first session, that is a failed attempt: the server
    /// refused the handshake (for example a read-only server refusing a client that does not
    /// accept read-only mode, or a server that is not serving), or it did not answer in time.
    fn lost_before_session(&mut self, reason: &dyn fmt::Display) {
        if self.session.state() == SessionState::Connecting {
            self.attempt_failed(&format_args!(
                "the connection ended before a session was established: {reason}"
            ));
        }
    }

    fn give_up(&mut self, error: &dyn fmt::Display) {
        let error = Error::NoServerReachable {
            attempts: self.attempts,
            last_error: error.to_string(),
        };
        if let Some(tx) = self.first_connect.take() {
            let _ = tx.send(Err(error));
        }
        self.session.close(Instant::now().into_std());
    }

    fn handle_command(&mut self, command: Command) {
        let now = Instant::now().into_std();
        match command {
            Command::Submit {
                op,
                timeout,
                reply,
                watch,
            } => match self.session.submit(op, timeout.map(|t| now + t)) {
                Ok(id) => {
                    self.replies.insert(id, reply);
                    if let Some(sink) = watch {
                        self.watches.insert(id, sink);
                    }
                }
                Err(error) => {
                    let _ = reply.send(Err(error));
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
                    let _ = reply.send(Err(error));
                }
            },
            Command::Close { reply } => {
                let id = self.session.close(now);
                self.replies.insert(id, reply);
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
                if !watch_armed {
                    self.watches.remove(&id);
                }
                if let Some(reply) = self.replies.remove(&id) {
                    // A dropped caller is fine: the reply was read, nothing desynchronizes.
                    let _ = reply.send(result.map(|response| (response, watch_armed)));
                }
            }
            SessionEvent::Watch { id, event } => self.deliver(id, Ok(event)),
            SessionEvent::WatchLost { id, error } => self.deliver(id, Err(error)),
            SessionEvent::State(state) => {
                tracing::debug!(%state, "session state");
                if state.is_connected() {
                    self.hosts.mark_connected();
                    self.attempts = 0;
                    if let Some(tx) = self.first_connect.take() {
                        // Publish first: `connect` returns as soon as this is sent, and on a
                        // multi-threaded runtime its caller could otherwise still read
                        // `Connecting` and session id 0 from the handle it just got.
                        self.publish();
                        let _ = tx.send(Ok(()));
                    }
                }
            }
            SessionEvent::DropConnection(_) => {}
        }
    }

    fn deliver(&mut self, id: RequestId, event: Result<WatchedEvent, Error>) {
        let last = event.is_err()
            || event.as_ref().is_ok_and(|e| {
                matches!(
                    e.event_type,
                    jute::EventType::DATA_WATCH_REMOVED
                        | jute::EventType::CHILD_WATCH_REMOVED
                        | jute::EventType::PERSISTENT_WATCH_REMOVED
                )
            });
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
                        self.watches.remove(&id);
                        self.session.forget_watch(id);
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        self.watches.remove(&id);
                        self.session.forget_watch(id);
                    }
                }
            }
        }
    }
}

fn terminal_error(state: SessionState) -> Error {
    match state {
        SessionState::Expired => Error::SessionExpired,
        SessionState::AuthFailed => Error::AuthFailed,
        _ => Error::Closed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionConfig;

    fn driver(hosts: u16) -> Driver {
        let hosts = (1..=hosts).map(|port| HostAddr::new("h", port)).collect();
        let (_, commands) = mpsc::unbounded_channel();
        let (published, _) = watch::channel(Published {
            state: SessionState::Connecting,
            session_id: 0,
            negotiated_timeout: None,
        });
        let (states, _) = watch::channel(SessionState::Connecting);
        Driver {
            session: Session::new(SessionConfig::default()),
            hosts: HostList::new(hosts, false, Some(1)).expect("hosts"),
            commands,
            published,
            states,
            max_frame_len: jute::DEFAULT_MAX_FRAME_LEN,
            fail_fast: false,
            first_connect: None,
            replies: HashMap::new(),
            watches: HashMap::new(),
            attempts: 0,
        }
    }

    #[test]
    fn the_session_is_published_before_connect_returns() {
        let mut d = driver(1);
        let (tx, mut first) = oneshot::channel();
        d.first_connect = Some(tx);
        let mut states = d.states.subscribe();
        let now = Instant::now().into_std();
        d.session.handle_connected(now);
        assert!(d.session.poll_transmit(now).is_some(), "a ConnectRequest");
        let response = jute::ConnectResponse {
            protocol_version: 0,
            time_out: 30_000,
            session_id: 0x55,
            passwd: Some(Bytes::from_static(&[1; 16])),
            read_only: Some(false),
        };
        d.session.handle_frame(now, response.to_bytes());
        while let Some(event) = d.session.poll_event() {
            d.dispatch(event);
            if first.try_recv().is_ok() {
                // The moment `connect` may return, the handle already sees the session.
                let published = *d.published.borrow();
                assert_eq!(published.session_id, 0x55);
                assert_eq!(published.state, SessionState::Connected);
                assert_eq!(published.negotiated_timeout, Some(Duration::from_secs(30)));
                // So do the state watchers (a lock guard's validity), with no task between.
                assert!(states.has_changed().expect("driver alive"));
                assert_eq!(*states.borrow_and_update(), SessionState::Connected);
                return;
            }
        }
        panic!("connect was never told");
    }

    /// A scripted server: the first connection gets a session (timeout `timeout_ms`) and
    /// is closed; every later one is accepted and closed at once. Counts the connections.
    async fn flaky_server(timeout_ms: i32) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::AtomicUsize;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                if count.fetch_add(1, Ordering::SeqCst) > 0 {
                    continue;
                }
                let mut framed = Framed::new(stream, FrameCodec::new());
                let _ = framed.next().await;
                let response = jute::ConnectResponse {
                    protocol_version: 0,
                    time_out: timeout_ms,
                    session_id: 0x66,
                    passwd: Some(Bytes::from_static(&[2; 16])),
                    read_only: Some(false),
                };
                let _ = framed.send(response).await;
            }
        });
        (addr, accepted)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_session_abandons_the_attempt_waiting_for_its_backoff() {
        // A 1 s session: local expiry 1 s after the loss, while the client backs off
        // (0, 100, 200, 400, 800 ms...: an attempt is always pending then).
        let (addr, accepted) = flaky_server(1_000).await;
        let client = crate::Client::builder()
            .session_timeout(Duration::from_secs(1))
            .connect(&addr)
            .await
            .expect("connect");
        let mut states = client.state_watcher();
        tokio::time::timeout(
            Duration::from_secs(10),
            states.wait_for(|s| *s == SessionState::Expired),
        )
        .await
        .expect("expired in time")
        .expect("client alive");
        let at_expiry = accepted.load(Ordering::SeqCst);
        assert!(at_expiry >= 2, "it tried to reconnect");
        // Longer than the largest backoff (1 s + 50% jitter): a window of observation.
        tokio::time::sleep(Duration::from_millis(1_700)).await;
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            at_expiry,
            "no connection after the session expired"
        );
    }

    fn indices(targets: Vec<(usize, HostAddr)>) -> Vec<usize> {
        targets.into_iter().map(|(index, _)| index).collect()
    }

    #[test]
    fn probes_every_other_host_starting_after_the_current_one() {
        let d = driver(4);
        assert_eq!(indices(d.probe_targets(Some(2))), [3, 0, 1]);
        assert_eq!(indices(d.probe_targets(Some(0))), [1, 2, 3]);
        assert_eq!(d.probe_targets(Some(1))[0].1, HostAddr::new("h", 3));
        assert!(driver(1).probe_targets(Some(0)).is_empty());
    }

    #[test]
    fn the_read_write_server_found_is_dialed_next_then_the_round_robin_goes_on() {
        let mut d = driver(4);
        // Connected (read-only) to host 1.
        assert_eq!(d.connect_next(None).0, 0);
        assert_eq!(d.connect_next(None).0, 1);
        d.hosts.mark_connected();
        // Host 3 answered `rw`: dialed at once, not host 2.
        assert_eq!(d.connect_next(Some(3)).0, 3);
        d.hosts.mark_connected();
        assert_eq!(d.hosts.last_connected(), Some(&HostAddr::new("h", 4)));
        assert_eq!(d.connect_next(None).0, 0);
        // Even when stepping there crosses into a new cycle, the found server is not delayed.
        assert_eq!(d.advance_to(0), (0, HostAddr::new("h", 1), None));
    }
}
