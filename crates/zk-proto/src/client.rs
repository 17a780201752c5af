//! The public, cheaply cloneable client handle and its builder.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use jute::{
    Acl, AddWatchMode, ClientInfo, CreateMode, MultiResult, ReconfigRequest, Response, Stat,
    WatcherType,
};
use tokio::sync::{mpsc, oneshot, watch};

use crate::connect_string::ConnectString;
use crate::driver::{Command, Dialer, Driver, Published, ReplyResult, WatchSink, tcp_dialer};
use crate::error::{Error, ProtocolError, Result};
use crate::session::{MultiOperation, Op, Session, SessionConfig, SessionState, WatchedEvent};

/// How to create a node: mode, ACL and (for TTL modes) time to live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOptions {
    /// The create mode.
    pub mode: CreateMode,
    /// The ACL; [`acl::open_acl_unsafe`](crate::acl::open_acl_unsafe) by default.
    pub acl: Vec<Acl>,
    /// Time to live for the TTL modes.
    pub ttl: Option<Duration>,
}

impl CreateOptions {
    /// `mode` with the open ACL and no TTL.
    pub fn new(mode: CreateMode) -> Self {
        Self {
            mode,
            acl: crate::acl::open_acl_unsafe(),
            ttl: None,
        }
    }

    /// A persistent node with the open ACL.
    pub fn persistent() -> Self {
        Self::new(CreateMode::PERSISTENT)
    }

    /// An ephemeral node with the open ACL.
    pub fn ephemeral() -> Self {
        Self::new(CreateMode::EPHEMERAL)
    }

    /// Replaces the ACL.
    #[must_use]
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = acl;
        self
    }

    /// Sets the time to live (TTL modes only).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    fn ttl_ms(&self) -> Option<i64> {
        self.ttl
            .map(|ttl| i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
    }
}

/// The result of one operation of a [`Client::multi`] transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiItem {
    /// A node was created; the Stat comes from servers from 3.8.2 on (3.8.0 and 3.8.1 send
    /// none inside a multi).
    Created {
        /// The created path (with its sequence suffix, chroot stripped).
        path: String,
        /// The new node's Stat, when the server sends it.
        stat: Option<Stat>,
    },
    /// A node was deleted.
    Deleted,
    /// Data was set.
    DataSet {
        /// The node's new Stat.
        stat: Stat,
    },
    /// A version check passed.
    Checked,
    /// The operation failed, or (in a failed transaction) was rolled back: the failing
    /// operation carries its error, those after it [`Error::RuntimeInconsistency`], those
    /// before it `None`... see [`MultiItem::error`].
    Failed(Option<Error>),
}

impl MultiItem {
    /// The error of this operation, if it failed.
    pub fn error(&self) -> Option<&Error> {
        match self {
            MultiItem::Failed(error) => error.as_ref(),
            _ => None,
        }
    }
}

/// The result of one read of a [`Client::multi_read`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiReadItem {
    /// getChildren's result.
    Children(Vec<String>),
    /// getData's result.
    Data(Bytes, Stat),
}

/// A one-shot watch: fires once, or reports why it never will.
#[derive(Debug)]
#[must_use = "a watcher does nothing unless awaited"]
pub struct OneshotWatcher {
    rx: oneshot::Receiver<Result<WatchedEvent>>,
}

impl OneshotWatcher {
    /// Waits for the event.
    ///
    /// # Errors
    ///
    /// [`Error::SessionExpired`], [`Error::AuthFailed`] or [`Error::Closed`] when the session
    /// ended before the watch fired: the watch is lost, never silently.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future drops the watch (the server's one-shot watch stays until it fires
    /// and is then ignored).
    pub async fn changed(self) -> Result<WatchedEvent> {
        self.rx.await.unwrap_or(Err(Error::Closed))
    }
}

/// A persistent (or persistent recursive) watch: a stream of events until removed or lost.
///
/// Events are buffered up to the client's watch capacity
/// ([`ClientBuilder::watch_capacity`]); a consumer that falls further behind gets
/// [`Error::WatchOverflow`] and the stream ends, because the connection never waits for a
/// slow consumer.
#[derive(Debug)]
pub struct PersistentWatcher {
    rx: mpsc::Receiver<Result<WatchedEvent>>,
    overflowed: Arc<AtomicBool>,
    capacity: usize,
}

impl PersistentWatcher {
    /// The next event. After an error, the watch is gone and every later call returns the
    /// same kind of error.
    ///
    /// # Errors
    ///
    /// [`Error::WatchOverflow`], or the reason the session ended.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: an event not yet taken stays in the buffer.
    pub async fn next(&mut self) -> Result<WatchedEvent> {
        match self.rx.recv().await {
            Some(event) => event,
            None if self.overflowed.load(Ordering::Acquire) => Err(Error::WatchOverflow {
                capacity: self.capacity,
            }),
            None => Err(Error::Closed),
        }
    }
}

/// Builds a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    session_timeout: Duration,
    read_only: bool,
    max_in_flight: usize,
    max_frame_len: usize,
    request_timeout: Option<Duration>,
    shuffle_hosts: bool,
    fail_fast: bool,
    /// `None`: the session timeout.
    connect_timeout: Option<Option<Duration>>,
    backoff: (Duration, Duration),
    close_timeout: Duration,
    watch_capacity: usize,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            session_timeout: Duration::from_secs(30),
            read_only: false,
            max_in_flight: 1024,
            max_frame_len: jute::DEFAULT_MAX_FRAME_LEN,
            request_timeout: None,
            shuffle_hosts: true,
            fail_fast: false,
            connect_timeout: None,
            backoff: (
                crate::session::DEFAULT_MIN_BACKOFF,
                crate::session::DEFAULT_MAX_BACKOFF,
            ),
            close_timeout: Duration::from_secs(2),
            watch_capacity: 1024,
        }
    }
}

impl ClientBuilder {
    /// The defaults: 30 s session timeout, 1,024 requests in flight, the 3.8 frame limit, no
    /// request timeout, shuffled hosts, no fail-fast, `connect` gives up after the session
    /// timeout, reconnect backoff from 20 ms to 1 s.
    pub fn new() -> Self {
        Self::default()
    }

    /// The session timeout to ask for (the server clamps it).
    #[must_use]
    pub fn session_timeout(mut self, timeout: Duration) -> Self {
        self.session_timeout = timeout;
        self
    }

    /// Accept read-only servers ([`SessionState::ConnectedReadOnly`]).
    #[must_use]
    pub fn read_only(mut self, allowed: bool) -> Self {
        self.read_only = allowed;
        self
    }

    /// The most requests in flight on the connection; the rest wait in order.
    #[must_use]
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// The largest frame sent or accepted (must match the server's `jute.maxbuffer`).
    #[must_use]
    pub fn max_frame_len(mut self, max: usize) -> Self {
        self.max_frame_len = max;
        self
    }

    /// The default timeout of every call ([`Error::RequestTimeout`]); `None` waits for the
    /// reply or the end of the session.
    #[must_use]
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Keep the hosts in the connect string's order instead of shuffling them.
    #[must_use]
    pub fn keep_host_order(mut self, keep: bool) -> Self {
        self.shuffle_hosts = !keep;
        self
    }

    /// Make [`connect`](Self::connect) fail with [`Error::NoServerReachable`] when one
    /// attempt on every host failed, instead of retrying until a server answers.
    #[must_use]
    pub fn fail_fast(mut self, fail_fast: bool) -> Self {
        self.fail_fast = fail_fast;
        self
    }

    /// How long [`connect`](Self::connect) tries before it fails with
    /// [`Error::NoServerReachable`] (naming the hosts tried and the last failure) when no
    /// server gives it a session. The default is the session timeout; `None` tries without
    /// bound. Once a session is established, reconnection is bounded by the session's expiry
    /// instead.
    #[must_use]
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// The reconnect backoff: `min` is its base (zero: reconnect at once), `max` its cap (never
    /// more than a sixth of the session timeout). Every reconnection waits: up to `min` after a
    /// connection that stayed up, then twice as long after each further failure in a row (with
    /// jitter), up to `max`. See [`Backoff`](crate::session::Backoff).
    #[must_use]
    pub fn reconnect_backoff(mut self, min: Duration, max: Duration) -> Self {
        self.backoff = (min, max.max(min));
        self
    }

    /// How long [`Client::close`] waits for the server's reply.
    #[must_use]
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// The buffer of each persistent watch stream (at least 1).
    #[must_use]
    pub fn watch_capacity(mut self, capacity: usize) -> Self {
        self.watch_capacity = capacity.max(1);
        self
    }

    /// Connects: spawns the connection task on the current tokio runtime and waits until a
    /// session is established.
    ///
    /// # Errors
    ///
    /// A malformed connect string; [`Error::NoServerReachable`] with fail-fast or when the
    /// connect timeout passed; the session's end (for example [`Error::AuthFailed`]) if it
    /// came first.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub async fn connect(self, connect_string: &str) -> Result<Client> {
        self.connect_with(connect_string, tcp_dialer()).await
    }

    /// [`connect`](Self::connect) over the streams `dialer` opens (tests: in-memory streams).
    pub(crate) async fn connect_with(self, connect_string: &str, dialer: Dialer) -> Result<Client> {
        let parsed: ConnectString = connect_string.parse()?;
        let (hosts, chroot) = parsed.into_parts();
        let session = Session::new(SessionConfig {
            session_timeout: self.session_timeout,
            read_only: self.read_only,
            max_in_flight: self.max_in_flight,
            max_frame_len: self.max_frame_len,
            chroot,
            hosts,
            shuffle_hosts: self.shuffle_hosts,
            rng_seed: None,
            backoff: self.backoff,
            fail_fast: self.fail_fast,
            connect_timeout: self.connect_timeout.unwrap_or(Some(self.session_timeout)),
            close_timeout: self.close_timeout,
            ..SessionConfig::default()
        });
        let (tx, commands) = mpsc::unbounded_channel();
        let (published_tx, published) = watch::channel(Published {
            state: SessionState::Connecting,
            session_id: 0,
            negotiated_timeout: None,
        });
        let (states_tx, states) = watch::channel(SessionState::Connecting);
        let (first_tx, first_rx) = oneshot::channel();
        let driver = Driver {
            session,
            dialer,
            commands,
            published: published_tx,
            states: states_tx,
            max_frame_len: self.max_frame_len,
            first_connect: Some(first_tx),
            replies: Default::default(),
            watches: Default::default(),
        };
        tokio::spawn(driver.run());
        let client = Client {
            shared: Arc::new(Shared {
                tx,
                published,
                states,
                watch_capacity: self.watch_capacity,
            }),
            request_timeout: self.request_timeout,
        };
        first_rx.await.unwrap_or(Err(Error::Closed))?;
        Ok(client)
    }
}

#[derive(Debug)]
struct Shared {
    tx: mpsc::UnboundedSender<Command>,
    published: watch::Receiver<Published>,
    states: watch::Receiver<SessionState>,
    watch_capacity: usize,
}

/// A ZooKeeper client: a cheap, cloneable handle on one session.
///
/// # Ordering
///
/// Every call is queued when it is made, not when its future is first polled: calls made
/// one after the other reach the server in that order, and their replies come back in that
/// order, whether or not their futures are awaited concurrently. A watch event is delivered
/// to its watcher before the reply of any later call that saw the change.
///
/// # Cancellation safety
///
/// Every returned future is cancel-safe in the sense that dropping it never desynchronizes
/// the connection: the request may still be sent and executed, and its reply is read and
/// discarded.
///
/// # Connection loss
///
/// A call in flight when the connection drops fails with [`Error::ConnectionLoss`]: it may
/// or may not have been applied. Calls made while disconnected wait for the next
/// connection (bounded by the request timeout and by the session's end).
///
/// # Futures borrow nothing
///
/// A call copies what it needs before returning, so its future is `Send + 'static` and keeps
/// no borrow of the client, the path or the options: it can be stored, spawned, or returned
/// from a wrapper of your own after its arguments are gone. (A generic `data` argument stays
/// in the future's type, so data borrowed for less than `'static` must be owned, e.g. a
/// `Vec<u8>`, for the future to be `'static`.)
///
/// ```rust,no_run
/// use std::future::Future;
/// use zk_proto::{Client, CreateOptions, Result, Stat};
///
/// struct Jobs {
///     client: Client,
/// }
///
/// impl Jobs {
///     fn add(&self, id: u32, payload: Vec<u8>) -> impl Future<Output = Result<(String, Stat)>> + 'static {
///         self.client.create(&format!("/jobs/{id}"), payload, &CreateOptions::persistent())
///     }
///
///     fn read(&self, id: u32) -> impl Future<Output = Result<(bytes::Bytes, Stat)>> + 'static {
///         self.client.get_data(&format!("/jobs/{id}"))
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    shared: Arc<Shared>,
    request_timeout: Option<Duration>,
}

type Reply = std::result::Result<ReplyResult, oneshot::error::RecvError>;

fn unexpected(what: &'static str) -> Error {
    Error::Protocol(ProtocolError::UnexpectedResponse(what))
}

impl Client {
    /// Connects with the default settings (see [`ClientBuilder`]).
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::connect`].
    pub async fn connect(connect_string: &str) -> Result<Client> {
        ClientBuilder::new().connect(connect_string).await
    }

    /// A builder for other settings.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// A handle on the same session whose calls time out after `timeout`
    /// ([`Error::RequestTimeout`]).
    #[must_use]
    pub fn with_request_timeout(&self, timeout: Duration) -> Client {
        Client {
            shared: self.shared.clone(),
            request_timeout: Some(timeout),
        }
    }

    /// The current session state.
    pub fn state(&self) -> SessionState {
        self.shared.published.borrow().state
    }

    /// A receiver of the session state: `changed().await` wakes on every change (a receiver
    /// that falls behind sees the latest state), and `borrow()` is always the state now, as
    /// [`state`](Self::state) is. The current state counts as seen. Once the client's task
    /// has ended, `changed()` fails and `borrow()` keeps the last state.
    pub fn state_watcher(&self) -> watch::Receiver<SessionState> {
        let mut states = self.shared.states.clone();
        states.borrow_and_update();
        states
    }

    /// The session id (0 before the first connection).
    pub fn session_id(&self) -> i64 {
        self.shared.published.borrow().session_id
    }

    /// The session timeout the server granted.
    pub fn negotiated_timeout(&self) -> Option<Duration> {
        self.shared.published.borrow().negotiated_timeout
    }

    fn send(
        &self,
        op: Op,
        watch: Option<WatchSink>,
    ) -> impl Future<Output = Reply> + Send + 'static + use<> {
        let (reply, rx) = oneshot::channel();
        let command = Command::Submit {
            op,
            timeout: self.request_timeout,
            reply,
            watch,
        };
        if let Err(mpsc::error::SendError(Command::Submit { reply, .. })) =
            self.shared.tx.send(command)
        {
            let _ = reply.send(Err(Error::Closed));
        }
        rx
    }

    fn call(&self, op: Op) -> impl Future<Output = Result<Response>> + Send + 'static + use<> {
        let reply = self.send(op, None);
        async move { Ok(reply.await.unwrap_or(Err(Error::Closed))?.0) }
    }

    fn call_watched(
        &self,
        op: Op,
    ) -> impl Future<Output = (Result<Response>, OneshotWatcher)> + Send + 'static + use<> {
        let (tx, rx) = oneshot::channel();
        let reply = self.send(op, Some(WatchSink::Once(tx)));
        async move {
            let result = reply.await.unwrap_or(Err(Error::Closed)).map(|(r, _)| r);
            (result, OneshotWatcher { rx })
        }
    }

    /// Creates a node; returns its path (with the sequence suffix for sequential modes) and
    /// its Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NodeExists`], [`Error::NoNode`] (no parent), [`Error::NoChildrenForEphemerals`],
    /// [`Error::InvalidAcl`], [`Error::InvalidPath`], [`Error::Unimplemented`] (TTL disabled on
    /// the server), and the connection errors.
    pub fn create<D: Into<Bytes>>(
        &self,
        path: &str,
        data: D,
        options: &CreateOptions,
    ) -> impl Future<Output = Result<(String, Stat)>> + Send + 'static + use<D> {
        let op = Op::Create {
            path: path.to_owned(),
            data: data.into(),
            acl: options.acl.clone(),
            mode: options.mode,
            ttl: options.ttl_ms(),
        };
        let reply = self.call(op);
        async move {
            match reply.await? {
                Response::Create2(r) => Ok((r.path.unwrap_or_default(), r.stat)),
                Response::Create(r) => Ok((r.path.unwrap_or_default(), Stat::default())),
                _ => Err(unexpected("create")),
            }
        }
    }

    /// Deletes a node at `version` (`None`: any version).
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::NotEmpty`], and the connection errors.
    pub fn delete(
        &self,
        path: &str,
        version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call(Op::Delete {
            path: path.to_owned(),
            version: version.unwrap_or(-1),
        });
        async move { reply.await.map(drop) }
    }

    /// The node's Stat, `None` if it does not exist.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn exists(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Option<Stat>>> + Send + 'static + use<> {
        let reply = self.call(Op::Exists {
            path: path.to_owned(),
            watch: false,
        });
        async move {
            match reply.await {
                Ok(Response::Exists(r)) => Ok(Some(r.stat)),
                Ok(_) => Err(unexpected("exists")),
                Err(Error::NoNode) => Ok(None),
                Err(e) => Err(e),
            }
        }
    }

    /// Like [`exists`](Self::exists), leaving a watch that fires on creation, data change or
    /// deletion (also when the node does not exist yet).
    ///
    /// # Errors
    ///
    /// The connection errors (then no watch is left).
    pub fn exists_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched(Op::Exists {
            path: path.to_owned(),
            watch: true,
        });
        async move {
            let (result, watcher) = reply.await;
            match result {
                Ok(Response::Exists(r)) => Ok((Some(r.stat), watcher)),
                Ok(_) => Err(unexpected("exists")),
                Err(Error::NoNode) => Ok((None, watcher)),
                Err(e) => Err(e),
            }
        }
    }

    /// The node's data and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::NoAuth`], and the connection errors.
    pub fn get_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<> {
        let reply = self.call(Op::GetData {
            path: path.to_owned(),
            watch: false,
        });
        async move {
            match reply.await? {
                Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
                _ => Err(unexpected("getData")),
            }
        }
    }

    /// Like [`get_data`](Self::get_data), leaving a watch that fires on data change or
    /// deletion.
    ///
    /// # Errors
    ///
    /// As [`get_data`](Self::get_data) (then no watch is left).
    pub fn get_data_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Bytes, Stat, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched(Op::GetData {
            path: path.to_owned(),
            watch: true,
        });
        async move {
            let (result, watcher) = reply.await;
            match result? {
                Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat, watcher)),
                _ => Err(unexpected("getData")),
            }
        }
    }

    /// Sets the node's data at `version` (`None`: any); returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::PacketTooLarge`], and the connection
    /// errors.
    pub fn set_data<D: Into<Bytes>>(
        &self,
        path: &str,
        data: D,
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static + use<D> {
        let reply = self.call(Op::SetData {
            path: path.to_owned(),
            data: data.into(),
            version: version.unwrap_or(-1),
        });
        async move {
            match reply.await? {
                Response::SetData(r) => Ok(r.stat),
                _ => Err(unexpected("setData")),
            }
        }
    }

    /// The node's ACL and Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_acl(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + 'static + use<> {
        let reply = self.call(Op::GetAcl {
            path: path.to_owned(),
        });
        async move {
            match reply.await? {
                Response::GetAcl(r) => Ok((r.acl.unwrap_or_default(), r.stat)),
                _ => Err(unexpected("getACL")),
            }
        }
    }

    /// Sets the node's ACL at ACL `version` (`None`: any); returns the new Stat.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], [`Error::BadVersion`], [`Error::InvalidAcl`], [`Error::NoAuth`], and
    /// the connection errors.
    pub fn set_acl(
        &self,
        path: &str,
        acl: Vec<Acl>,
        version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + 'static + use<> {
        let reply = self.call(Op::SetAcl {
            path: path.to_owned(),
            acl,
            version: version.unwrap_or(-1),
        });
        async move {
            match reply.await? {
                Response::SetAcl(r) => Ok(r.stat),
                _ => Err(unexpected("setACL")),
            }
        }
    }

    /// The names of the node's children (not sorted).
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'static + use<> {
        let reply = self.call(Op::GetChildren {
            path: path.to_owned(),
            watch: false,
        });
        async move {
            match reply.await? {
                Response::GetChildren(r) => Ok(names(r.children)),
                _ => Err(unexpected("getChildren")),
            }
        }
    }

    /// Like [`get_children`](Self::get_children), leaving a watch that fires when the child
    /// list changes or the node is deleted.
    ///
    /// # Errors
    ///
    /// As [`get_children`](Self::get_children) (then no watch is left).
    pub fn get_children_watch(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher)>> + Send + 'static + use<> {
        let reply = self.call_watched(Op::GetChildren {
            path: path.to_owned(),
            watch: true,
        });
        async move {
            let (result, watcher) = reply.await;
            match result? {
                Response::GetChildren(r) => Ok((names(r.children), watcher)),
                _ => Err(unexpected("getChildren")),
            }
        }
    }

    /// The children's names and the node's Stat (getChildren2).
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_children2(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send + 'static + use<> {
        let reply = self.call(Op::GetChildren2 {
            path: path.to_owned(),
            watch: false,
        });
        async move {
            match reply.await? {
                Response::GetChildren2(r) => Ok((names(r.children), r.stat)),
                _ => Err(unexpected("getChildren2")),
            }
        }
    }

    /// The number of all descendants of the node.
    ///
    /// # Errors
    ///
    /// [`Error::NoNode`], and the connection errors.
    pub fn get_all_children_number(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<i32>> + Send + 'static + use<> {
        let reply = self.call(Op::GetAllChildrenNumber {
            path: path.to_owned(),
        });
        async move {
            match reply.await? {
                Response::GetAllChildrenNumber(r) => Ok(r.total_number),
                _ => Err(unexpected("getAllChildrenNumber")),
            }
        }
    }

    /// The session's ephemeral nodes whose path starts with `prefix` (a raw string prefix;
    /// `"/"` for all), chroot applied and stripped.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn get_ephemerals(
        &self,
        prefix: &str,
    ) -> impl Future<Output = Result<Vec<String>>> + Send + 'static + use<> {
        let reply = self.call(Op::GetEphemerals {
            prefix: prefix.to_owned(),
        });
        async move {
            match reply.await? {
                Response::GetEphemerals(r) => Ok(names(r.ephemerals)),
                _ => Err(unexpected("getEphemerals")),
            }
        }
    }

    /// Waits until the server this session is connected to has caught up with the leader.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call(Op::Sync {
            path: path.to_owned(),
        });
        async move { reply.await.map(drop) }
    }

    /// Checks that the node has `version`. Sent as a one-operation multi, because a 3.8.0
    /// server never answers a standalone check that succeeds.
    ///
    /// # Errors
    ///
    /// [`Error::BadVersion`], [`Error::NoNode`], and the connection errors.
    pub fn check(
        &self,
        path: &str,
        version: i32,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.multi(vec![MultiOperation::Check {
            path: path.to_owned(),
            version,
        }]);
        async move {
            let items = reply.await?;
            match items.first().and_then(MultiItem::error) {
                Some(error) => Err(error.clone()),
                None => Ok(()),
            }
        }
    }

    /// Runs `ops` as one atomic transaction. When it fails nothing is applied, and every item
    /// is [`MultiItem::Failed`]: the failing operation carries its error.
    ///
    /// # Errors
    ///
    /// An invalid operation (nothing sent), and the connection errors.
    pub fn multi(
        &self,
        ops: Vec<MultiOperation>,
    ) -> impl Future<Output = Result<Vec<MultiItem>>> + Send + 'static + use<> {
        let reply = self.call(Op::Multi(ops));
        async move {
            let Response::Multi(response) = reply.await? else {
                return Err(unexpected("multi"));
            };
            Ok(response
                .results
                .into_iter()
                .map(|result| match result {
                    MultiResult::Create(r) => MultiItem::Created {
                        path: r.path.unwrap_or_default(),
                        stat: None,
                    },
                    MultiResult::Create2(r) => MultiItem::Created {
                        path: r.path.unwrap_or_default(),
                        stat: Some(r.stat),
                    },
                    MultiResult::Delete => MultiItem::Deleted,
                    MultiResult::SetData(r) => MultiItem::DataSet { stat: r.stat },
                    MultiResult::Check => MultiItem::Checked,
                    MultiResult::Error(code) => MultiItem::Failed(Error::from_code(code)),
                    MultiResult::GetChildren(_) | MultiResult::GetData(_) => {
                        MultiItem::Failed(Some(unexpected("read result in multi")))
                    }
                })
                .collect())
        }
    }

    /// Runs independent reads (getChildren, getData) in one round trip; each has its own
    /// result.
    ///
    /// # Errors
    ///
    /// An invalid operation (nothing sent), and the connection errors.
    pub fn multi_read(
        &self,
        ops: Vec<MultiOperation>,
    ) -> impl Future<Output = Result<Vec<Result<MultiReadItem>>>> + Send + 'static + use<> {
        let reply = self.call(Op::MultiRead(ops));
        async move {
            let Response::Multi(response) = reply.await? else {
                return Err(unexpected("multiRead"));
            };
            Ok(response
                .results
                .into_iter()
                .map(|result| match result {
                    MultiResult::GetChildren(r) => Ok(MultiReadItem::Children(names(r.children))),
                    MultiResult::GetData(r) => {
                        Ok(MultiReadItem::Data(r.data.unwrap_or_default(), r.stat))
                    }
                    MultiResult::Error(code) => {
                        Err(Error::from_code(code).unwrap_or(unexpected("OK error result")))
                    }
                    _ => Err(unexpected("write result in multiRead")),
                })
                .collect())
        }
    }

    /// Adds a persistent watch on `path` (with `AddWatchMode::PERSISTENT_RECURSIVE`, on its
    /// whole subtree; child-list changes are not reported by a recursive watch). It stays
    /// until removed with [`remove_watches`](Self::remove_watches) or the session ends, and is
    /// re-registered after every reconnect; changes made while disconnected are not replayed
    /// for persistent watches (a server limitation).
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn add_watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + 'static + use<> {
        let capacity = self.shared.watch_capacity;
        let (tx, rx) = mpsc::channel(capacity);
        let overflowed = Arc::new(AtomicBool::new(false));
        let sink = WatchSink::Stream {
            tx,
            overflowed: overflowed.clone(),
        };
        let reply = self.send(
            Op::AddWatch {
                path: path.to_owned(),
                mode,
            },
            Some(sink),
        );
        async move {
            reply.await.unwrap_or(Err(Error::Closed))?;
            Ok(PersistentWatcher {
                rx,
                overflowed,
                capacity,
            })
        }
    }

    /// Removes this session's watches of `watcher_type` on `path`; each removed watcher gets
    /// a `*WatchRemoved` event. On 3.8 servers only `CHILDREN`, `DATA` and `ANY` exist
    /// (`PERSISTENT*` types come with 3.9 and get [`Error::MarshallingError`]); use `ANY` to
    /// remove a persistent watch there.
    ///
    /// # Errors
    ///
    /// [`Error::NoWatcher`], and the connection errors.
    pub fn remove_watches(
        &self,
        path: &str,
        watcher_type: WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call(Op::RemoveWatches {
            path: path.to_owned(),
            watcher_type,
        });
        async move { reply.await.map(drop) }
    }

    /// Checks that this session has watches of `watcher_type` on `path`.
    ///
    /// # Errors
    ///
    /// [`Error::NoWatcher`], and the connection errors.
    pub fn check_watches(
        &self,
        path: &str,
        watcher_type: WatcherType,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = self.call(Op::CheckWatches {
            path: path.to_owned(),
            watcher_type,
        });
        async move { reply.await.map(drop) }
    }

    /// Adds credentials to the session (sent again after every reconnect).
    ///
    /// # Errors
    ///
    /// [`Error::AuthFailed`] (terminal) for a scheme the server rejects, and the connection
    /// errors.
    pub fn add_auth<D: Into<Bytes>>(
        &self,
        scheme: &str,
        auth: D,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<D> {
        let rx = self.send_auth(scheme.to_owned(), auth.into());
        async move { rx.await.unwrap_or(Err(Error::Closed)).map(drop) }
    }

    /// Adds `digest` credentials `user:password` (see
    /// [`acl::digest_acl`](crate::acl::digest_acl) for the matching ACL).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for a user name with `:`; as [`add_auth`](Self::add_auth).
    pub fn add_digest_auth(
        &self,
        user: &str,
        password: &str,
    ) -> impl Future<Output = Result<()>> + Send + 'static + use<> {
        let reply = match crate::acl::digest_auth(user, password) {
            Ok((scheme, auth)) => Ok(self.send_auth(scheme, auth)),
            Err(e) => Err(Error::InvalidArgument(e.to_string())),
        };
        async move { reply?.await.unwrap_or(Err(Error::Closed)).map(drop) }
    }

    fn send_auth(&self, scheme: String, auth: Bytes) -> oneshot::Receiver<ReplyResult> {
        let (reply, rx) = oneshot::channel();
        let command = Command::AddAuth {
            scheme,
            auth,
            reply,
        };
        if let Err(mpsc::error::SendError(Command::AddAuth { reply, .. })) =
            self.shared.tx.send(command)
        {
            let _ = reply.send(Err(Error::Closed));
        }
        rx
    }

    /// Changes the ensemble's membership; returns the new configuration and the Stat of
    /// `/zookeeper/config`.
    ///
    /// # Errors
    ///
    /// [`Error::ReconfigDisabled`], [`Error::NewConfigNoQuorum`],
    /// [`Error::ReconfigInProgress`], [`Error::BadVersion`], and the connection errors.
    pub fn reconfig(
        &self,
        request: ReconfigRequest,
    ) -> impl Future<Output = Result<(Bytes, Stat)>> + Send + 'static + use<> {
        let reply = self.call(Op::Reconfig(request));
        async move {
            match reply.await? {
                Response::GetData(r) => Ok((r.data.unwrap_or_default(), r.stat)),
                _ => Err(unexpected("reconfig")),
            }
        }
    }

    /// The identities this session is authenticated as.
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub fn who_am_i(
        &self,
    ) -> impl Future<Output = Result<Vec<ClientInfo>>> + Send + 'static + use<> {
        let reply = self.call(Op::WhoAmI);
        async move {
            match reply.await? {
                Response::WhoAmI(r) => Ok(r.client_info.unwrap_or_default()),
                _ => Err(unexpected("whoAmI")),
            }
        }
    }

    /// Closes the session: queued calls go first, then closeSession; waits (at most the close
    /// timeout) for the reply. The session's ephemeral nodes are deleted by the server at
    /// once; every watch is reported lost with [`Error::Closed`]. Idempotent.
    ///
    /// Returns `Ok` once the session is closed or known to be gone: also when the connection
    /// drops while closeSession is in flight (the server closes the session, or expires it),
    /// when no reply comes within the close timeout, and when the session had already ended.
    /// When it returns, [`state`](Self::state) reads [`SessionState::Closed`] (or the terminal
    /// state the session had reached before).
    ///
    /// # Errors
    ///
    /// None in practice; the signature leaves room for it.
    pub async fn close(&self) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        if self.shared.tx.send(Command::Close { reply }).is_err() {
            return Ok(());
        }
        match rx.await {
            Ok(Ok(_)) | Err(_) => Ok(()),
            Ok(Err(e)) => Err(e),
        }
    }
}

fn names(list: Option<Vec<Option<String>>>) -> Vec<String> {
    list.unwrap_or_default().into_iter().flatten().collect()
}
