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
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, StreamExt};
use jute::{FrameCodec, FrameError, Response};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use crate::connect_string::HostAddr;
use crate::error::{ConnectFailure, Error};
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
    /// A persistent watcher was dropped: forget the watches whose consumer is gone.
    WatcherDropped,
}

/// What the driver publishes for the handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    pub(crate) state: SessionState,
    pub(crate) session_id: i64,
    pub(crate) negotiated_timeout: Option<Duration>,
}

/// The most commands taken from the queue in one turn of the loop before frames are written.
const MAX_COMMANDS_PER_TURN: usize = 256;

/// The session hands out frames while the write buffer holds less than this (one frame may
/// go over it).
const WRITE_BUFFER_HIGH_WATER: usize = 64 * 1024;

/// The read side of a connection.
pub(crate) type ReadHalf = Box<dyn AsyncRead + Send + Unpin>;
/// The write side of a connection.
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;
/// A connection attempt in progress.
pub(crate) type Connecting =
    Pin<Box<dyn Future<Output = io::Result<(ReadHalf, WriteHalf)>> + Send>>;
/// Opens a connection to a host: TCP in production, an in-memory stream in tests.
pub(crate) type Dialer = Arc<dyn Fn(HostAddr) -> Connecting + Send + Sync>;

/// The production dialer: resolves the host on every attempt (a changed DNS entry is picked
/// up on reconnect) and opens a TCP connection with Nagle off. The attempt's budget is the
/// session's.
pub(crate) fn tcp_dialer() -> Dialer {
    Arc::new(|host: HostAddr| {
        Box::pin(async move {
            let addr = read_only::resolve(&host).await?;
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            let (read, write) = stream.into_split();
            Ok((Box::new(read) as ReadHalf, Box::new(write) as WriteHalf))
        }) as Connecting
    })
}

/// The search for a read/write server: completes with the first host (index in the host list)
/// that answers `isro` with `rw`.
type Searching = Pin<Box<dyn Future<Output = (usize, HostAddr)> + Send>>;

/// One open connection.
struct Connection {
    reader: FramedRead<ReadHalf, FrameCodec>,
    writer: WriteHalf,
    /// Frames encoded and not yet taken by the stream.
    out: BytesMut,
    /// Bytes were written since the last flush (a buffering transport needs one).
    unflushed: bool,
}

impl Connection {
    /// Takes frames from the session while the write buffer has room, and writes what the
    /// stream takes right now without waiting. `Err` if the stream failed.
    fn transmit(&mut self, session: &mut Session) -> io::Result<()> {
        let now = Instant::now().into_std();
        loop {
            while self.out.len() < WRITE_BUFFER_HIGH_WATER
                && session.poll_transmit_into(now, &mut self.out)
            {}
            if self.out.is_empty() {
                break;
            }
            match self.writer.write_buf(&mut self.out).now_or_never() {
                Some(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Some(Ok(_)) => self.unflushed = true,
                Some(Err(error)) => return Err(error),
                // The stream is full: the loop's write branch waits for room.
                None => return Ok(()),
            }
        }
        if self.unflushed {
            match self.writer.flush().now_or_never() {
                Some(Ok(())) => self.unflushed = false,
                Some(Err(error)) => return Err(error),
                None => {}
            }
        }
        Ok(())
    }

    /// Whether the loop must wait for the stream to take bytes (or a flush).
    fn wants_write(&self) -> bool {
        !self.out.is_empty() || self.unflushed
    }

    /// Writes (or flushes) once the stream has room; `Err` if the stream failed or takes no
    /// more bytes.
    async fn write_some(
        writer: &mut WriteHalf,
        out: &mut BytesMut,
        unflushed: &mut bool,
    ) -> io::Result<()> {
        if out.is_empty() {
            writer.flush().await?;
            *unflushed = false;
            return Ok(());
        }
        if writer.write_buf(out).await? == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        *unflushed = true;
        Ok(())
    }
}

pub(crate) struct Driver {
    pub(crate) session: Session,
    pub(crate) dialer: Dialer,
    pub(crate) commands: mpsc::UnboundedReceiver<Command>,
    pub(crate) published: watch::Sender<Published>,
    /// The state alone, for the handles' state watchers: they subscribe to it directly, so
    /// they see a change as soon as it is published and are woken by state changes only.
    pub(crate) states: watch::Sender<SessionState>,
    pub(crate) max_frame_len: usize,
    /// Told once: the first connection's outcome.
    pub(crate) first_connect: Option<oneshot::Sender<Result<(), Error>>>,
    pub(crate) replies: HashMap<RequestId, oneshot::Sender<ReplyResult>>,
    pub(crate) watches: HashMap<RequestId, WatchSink>,
}

impl Driver {
    /// The hosts to probe for a read/write server: every host but `current`, round-robin from
    /// the one after it.
    fn probe_targets(&self, current: Option<usize>) -> Vec<(usize, HostAddr)> {
        let hosts = self.session.hosts();
        let start = current.map_or(0, |c| c + 1);
        (0..hosts.len())
            .map(|k| (start + k) % hosts.len())
            .filter(|&i| Some(i) != current)
            .map(|i| (i, hosts[i].clone()))
            .collect()
    }

    pub(crate) async fn run(mut self) {
        let mut conn: Option<Connection> = None;
        let mut connecting: Option<Connecting> = None;
        let mut handles_gone = false;
        // A close was asked for: no more searching for a read/write server.
        let mut closing = false;
        // The search for a read/write server: runs while the session is read-only, and only
        // then (dropping it cancels it).
        let mut searching: Option<Searching> = None;
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
            let is_read_only =
                self.session.state() == SessionState::ConnectedReadOnly && conn.is_some();
            if !is_read_only || closing {
                searching = None;
            } else if searching.is_none() {
                // With a single host there is nothing to probe: the search never completes.
                let targets = self.probe_targets(self.session.current_host());
                tracing::debug!(hosts = targets.len(), "searching for a read/write server");
                searching = Some(Box::pin(read_only::search(targets)));
            }
            let timer = self.session.poll_timeout().map(Instant::from_std);
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
                    let now = Instant::now().into_std();
                    match result {
                        // A connection that completes after the session gave up on it is
                        // just closed.
                        Ok((read, write)) if self.session.is_dialing() => {
                            let codec = FrameCodec::with_max_frame_len(self.max_frame_len);
                            conn = Some(Connection {
                                reader: FramedRead::new(read, codec),
                                writer: write,
                                out: BytesMut::new(),
                                unflushed: false,
                            });
                            self.session.handle_connected(now);
                        }
                        Ok(_) => {}
                        Err(error) => {
                            self.session.handle_connect_failed(now, ConnectFailure::from_io(&error));
                        }
                    }
                },
                frame = async { reader.expect("guarded").next().await }, if has_reader => {
                    let now = Instant::now().into_std();
                    match frame {
                        Some(Ok(frame)) => self.session.handle_frame(now, frame),
                        Some(Err(FrameError::TooLong { len, max })) => {
                            // Refused from its length prefix, before any buffer was reserved.
                            // The bytes after the prefix may already be in, naming the request
                            // the reply belongs to: that request gets `ReplyTooLarge`.
                            let xid = conn
                                .as_ref()
                                .and_then(|c| c.reader.read_buffer().get(4..8))
                                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                            tracing::info!(len, max, ?xid, "frame over the limit; dropping the connection");
                            conn = None;
                            self.session.handle_oversized_frame(now, len, xid);
                        }
                        Some(Err(error)) => {
                            tracing::info!(%error, "connection failed");
                            conn = None;
                            self.session.handle_disconnected(now, Error::ConnectionLoss);
                        }
                        None => {
                            tracing::info!("the server closed the connection");
                            conn = None;
                            self.session.handle_disconnected(now, Error::ConnectionLoss);
                        }
                    }
                },
                written = async {
                    let (writer, out, unflushed) = writer.expect("guarded");
                    Connection::write_some(writer, out, unflushed).await
                }, if has_writer => {
                    if let Err(error) = written {
                        tracing::info!(%error, "writing to the server failed");
                        conn = None;
                        self.session
                            .handle_disconnected(Instant::now().into_std(), Error::ConnectionLoss);
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
                    self.session.reconnect_to(Instant::now().into_std(), index);
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
            // Tell the handles what happened (a dropped connection first), then write what
            // the session wants sent.
            while let Some(event) = self.session.poll_event() {
                if let SessionEvent::DropConnection(reason) = &event {
                    tracing::debug!(%reason, "dropping the connection");
                    conn = None;
                }
                self.dispatch(event);
            }
            if let Some(c) = conn.as_mut()
                && let Err(error) = c.transmit(&mut self.session)
            {
                tracing::info!(%error, "writing to the server failed");
                conn = None;
                self.session
                    .handle_disconnected(Instant::now().into_std(), Error::ConnectionLoss);
                while let Some(event) = self.session.poll_event() {
                    self.dispatch(event);
                }
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
                    self.watches.remove(&id);
                    self.session.forget_watch(id);
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
    use futures_util::SinkExt;
    use jute::{Encode, ReplyHeader, WatcherEvent};
    use tokio::io::DuplexStream;
    use tokio_util::codec::Framed;

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
            session: Session::new(SessionConfig {
                hosts,
                shuffle_hosts: false,
                ..SessionConfig::default()
            }),
            dialer: tcp_dialer(),
            commands,
            published,
            states,
            max_frame_len: jute::DEFAULT_MAX_FRAME_LEN,
            first_connect: None,
            replies: HashMap::new(),
            watches: HashMap::new(),
        }
    }

    fn connect_response(timeout_ms: i32, session_id: i64) -> ConnectResponse {
        ConnectResponse {
            protocol_version: 0,
            time_out: timeout_ms,
            session_id,
            passwd: Some(Bytes::from_static(&[2; 16])),
            read_only: Some(false),
        }
    }

    use jute::ConnectResponse;

    /// A frame body sent as is (to send malformed ones).
    #[derive(Clone)]
    struct RawFrame(Bytes);

    impl Encode for RawFrame {
        fn encoded_len(&self) -> usize {
            self.0.len()
        }
        fn encode<B: bytes::BufMut>(&self, buf: &mut B) {
            buf.put_slice(&self.0);
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
        d.session
            .handle_frame(now, connect_response(30_000, 0x55).to_bytes());
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

    /// A dialer of in-memory streams of `capacity` bytes each way: the test gets the server
    /// end of every connection the client opens, and the connections are counted.
    fn duplex_dialer(
        capacity: usize,
    ) -> (
        Dialer,
        mpsc::UnboundedReceiver<Framed<DuplexStream, FrameCodec>>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let dialer: Dialer = Arc::new(move |_host: HostAddr| {
            let (client, server) = tokio::io::duplex(capacity);
            let _ = tx.send(Framed::new(server, FrameCodec::new()));
            Box::pin(async move {
                let (read, write) = tokio::io::split(client);
                Ok((Box::new(read) as ReadHalf, Box::new(write) as WriteHalf))
            }) as Connecting
        });
        (dialer, rx)
    }

    /// Reads the ConnectRequest on `server` and answers it with a session.
    async fn handshake(server: &mut Framed<DuplexStream, FrameCodec>, timeout_ms: i32) {
        let request = server
            .next()
            .await
            .expect("a ConnectRequest")
            .expect("a frame");
        let request: jute::ConnectRequest = jute::decode_exact(request).expect("decodes");
        let session_id = if request.session_id == 0 {
            0x66
        } else {
            request.session_id
        };
        server
            .send(connect_response(timeout_ms, session_id))
            .await
            .expect("send");
    }

    /// Waits (on the paused clock) until the client's state is `state`; fails after a
    /// minute of virtual time instead of hanging.
    async fn wait_state(client: &crate::Client, state: SessionState) -> Instant {
        let mut states = client.state_watcher();
        tokio::time::timeout(Duration::from_secs(60), states.wait_for(|s| *s == state))
            .await
            .unwrap_or_else(|_| panic!("never {state}; still {}", client.state()))
            .expect("client alive");
        Instant::now()
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_server_never_takes_does_not_stop_the_session_clock() {
        // A server that completes the handshake, then never reads: the client's writes
        // fill the 1 KiB stream and stay pending.
        let (dialer, mut accepted) = duplex_dialer(1024);
        let connecting = tokio::spawn(
            crate::Client::builder()
                .session_timeout(Duration::from_secs(3))
                .connect_with("127.0.0.1:2181", dialer),
        );
        let mut server = accepted.recv().await.expect("a connection");
        let handshake_sent = Instant::now();
        handshake(&mut server, 3_000).await;
        let client = connecting.await.expect("task").expect("connected");
        let calls: Vec<_> = (0..60)
            .map(|_| client.set_data("/n", vec![7u8; 900_000], None))
            .collect();
        // Read timeout 2T/3 after the last frame received (the handshake reply): the
        // connection is dropped although a write is still pending.
        let disconnected = wait_state(&client, SessionState::Disconnected).await;
        assert_eq!(
            disconnected - handshake_sent,
            Duration::from_secs(2),
            "the read timeout fired on time"
        );
        // Nothing answers the reconnection's handshakes: expired T after the handshake was
        // sent, the last thing the server answered.
        let expired = wait_state(&client, SessionState::Expired).await;
        assert_eq!(expired - handshake_sent, Duration::from_secs(3));
        // Every call got a definite answer: the one being written lost its connection, the
        // ones never written failed with the session.
        let mut lost = 0;
        for call in calls {
            match call.await {
                Err(Error::ConnectionLoss) => lost += 1,
                Err(Error::SessionExpired) => {}
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        assert!(
            lost >= 1,
            "the request being written failed with ConnectionLoss"
        );
        drop(server);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_breaks_every_connection_gets_a_handful_of_attempts_per_second() {
        let (dialer, mut accepted) = duplex_dialer(64 * 1024);
        let connecting = tokio::spawn(
            crate::Client::builder()
                .session_timeout(Duration::from_secs(30))
                .connect_with("127.0.0.1:2181", dialer),
        );
        let mut server = accepted.recv().await.expect("a connection");
        handshake(&mut server, 30_000).await;
        let client = connecting.await.expect("task").expect("connected");
        let session_id = client.session_id();
        // From now on: every connection gets its session back, then a malformed watch event.
        let started = Instant::now();
        let malformed = (
            ReplyHeader {
                xid: -1,
                zxid: 0,
                err: jute::ErrorCode::OK,
            },
            WatcherEvent {
                event_type: jute::EventType(1),
                state: jute::KeeperState(3),
                path: Some("/a".into()),
            },
        )
            .to_bytes();
        let malformed = RawFrame(malformed.slice(..malformed.len() - 2));
        let mut connections = 0u32;
        let _ = server.send(malformed.clone()).await;
        drop(server);
        while started.elapsed() < Duration::from_secs(10) {
            let Ok(Some(mut server)) =
                tokio::time::timeout(Duration::from_secs(10), accepted.recv()).await
            else {
                break;
            };
            connections += 1;
            handshake(&mut server, 30_000).await;
            let _ = server.send(malformed.clone()).await;
        }
        // Doubling from 40 ms to the 1 s cap: about 8 attempts in the first 2 s, then at
        // most 2 per second (without the backoff: thousands per second).
        assert!(
            (8..=22).contains(&connections),
            "{connections} connections in 10 s"
        );
        // The server behaves again: the same session resumes.
        let mut server = accepted.recv().await.expect("a connection");
        handshake(&mut server, 30_000).await;
        wait_state(&client, SessionState::Connected).await;
        assert_eq!(client.session_id(), session_id);
        drop(server);
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
                let _ = framed.send(connect_response(timeout_ms, 0x66)).await;
            }
        });
        (addr, accepted)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_session_abandons_the_attempt_waiting_for_its_backoff() {
        // A 1 s session: local expiry 1 s after the loss, while the client backs off
        // (an attempt is always pending then).
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
        // Longer than the largest backoff (T/6): a window of observation.
        tokio::time::sleep(Duration::from_millis(1_000)).await;
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
}
