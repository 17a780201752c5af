//! Client-level helpers for async integration tests (feature `client`): the one copy of what the
//! tests of `zk-proto`, `zk-recipes` and this crate share, on the model of h2's `h2-support`.
//!
//! - Servers: [`start_server`] and [`start_server_with`] ([`server_builder`] is the kit's
//!   configuration, `tickTime` [`TICK`]), [`start_ensemble`] ([`read_only_ensemble`] sets an
//!   ensemble up for read-only mode, [`wait_for_mode`] waits for a server's; [`start_ttl_server`]
//!   has TTL nodes, [`wall_clock_ms`] is the clock its Stats read); they start the JVMs on a blocking
//!   thread ([`blocking`]), not on the runtime's, and fail a test with one line that says how to
//!   install ZooKeeper when it is missing ([`started`]).
//! - Sessions: [`builder`] ([`SESSION_TIMEOUT`], [`REQUEST_TIMEOUT`]), [`connect`],
//!   [`connect_with`] and [`sessions`], each connect bounded by [`CONNECT_LIMIT`];
//!   [`connect_proxied`] puts a session behind its own [`FaultProxy`] ([`Proxied`]), and
//!   [`proxied_sessions`] does so for `n` sessions; [`expire_session`] expires one.
//! - Bounded waits, which panic with what they waited for: [`within`] (a future), [`join`] (a
//!   task), [`eventually`] (a polled condition), [`wait_for_state`] and [`wait_state`] (the
//!   session state), [`wait_children`] and [`poll_children`] (a listing); [`StateLog`] records
//!   every state a session goes through; [`next_change`] is a persistent watch's next event
//!   that is not a connection marker.
//! - Connection attempts: [`largest_reconnect_wait`] (the reconnect backoff's cap) and
//!   [`assert_dials_no_more`], a window of observation bounded by it.
//! - Nodes: [`children`], [`mkdirs`], [`create_node`], [`set_node`] and [`read_tree`] (a whole
//!   subtree); a cache is compared with the server as [`NodeSeen`]s ([`node_seen`],
//!   [`tree_seen`]).
//! - Dynamic reconfiguration, on a [`DynamicEnsemble`](crate::DynamicEnsemble) from [`start_dynamic_ensemble`]:
//!   [`add_member`], [`remove_member`] and [`replace_member`] change the membership with
//!   `reconfig` and wait, at most [`RECONFIG_LIMIT`], through the leader's documented
//!   transient answers and lost replies; [`reconfig`] sends any request that way and returns
//!   the server's answer; [`read_config`] reads the committed configuration.
//! - [`serial`]: one test at a time in a test binary, for tests that start JVMs.
//! - A process of the test's own to kill: [`spawn_test_child`] runs this test binary again as
//!   a child, [`wait_child_line`] waits for the line it prints when ready.
//!
//! Every helper panics on failure (these are test helpers): a test fails with a message instead
//! of hanging. [`reconfig`] alone returns the server's error, for tests that expect one.
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_testkit::client::{connect, serial, start_server, wait_for_state, within};
//!
//! # async fn example() {
//! let _serial = serial().await;
//! let server = start_server().await;
//! let client = connect(&server.connect_string()).await;
//! within("getChildren", Duration::from_secs(10), client.get_children("/"))
//!     .await
//!     .expect("list");
//! wait_for_state(&client, zk_proto::SessionState::Connected, Duration::from_secs(1)).await;
//! # }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::MutexGuard;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_proto::session::Backoff;
use zk_proto::{
    Client, ClientBuilder, CreateOptions, EventType, PersistentWatcher, SessionState, Stat,
};

use crate::fault::FaultProxy;
use crate::{Ensemble, EnsembleBuilder, Mode, ZkServer, ZkServerBuilder, started};

mod child;
mod reconfig;

pub use child::{spawn_test_child, wait_child_line};
pub use reconfig::{
    CONFIG_NODE, RECONFIG_LIMIT, add_member, read_config, reconfig, remove_member, replace_member,
    start_dynamic_ensemble,
};

/// The `tickTime` of [`server_builder`] and [`start_server`]: session timeouts from 1 s (two
/// ticks) up to 10 s (twenty ticks).
pub const TICK: Duration = Duration::from_millis(500);

/// The session timeout of [`builder`] and [`connect`].
pub const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// The request timeout of [`builder`] and [`connect`]: a request that gets no reply fails the
/// test instead of hanging it.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`connect`], [`connect_with`], [`connect_proxied`] and [`sessions`] wait for a
/// session before they fail the test.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// How long one call of [`children`] or [`mkdirs`] may take.
const CALL_LIMIT: Duration = Duration::from_secs(10);

/// The pause between two polls of [`eventually`] and [`poll_children`].
const POLL: Duration = Duration::from_millis(10);

// ----- servers -----

/// The kit's standalone server configuration: `tickTime` [`TICK`], the rest as
/// [`ZkServer::builder`]. Add options and pass it to [`start_server_with`].
pub fn server_builder() -> ZkServerBuilder {
    ZkServer::builder().tick_time(TICK)
}

/// Starts a standalone server ([`server_builder`]) on a blocking thread and waits until it
/// serves.
///
/// # Panics
///
/// When the server does not start; when Java or ZooKeeper is missing, with one line that says
/// to run `scripts/install-deps.sh` (see [`started`]).
pub async fn start_server() -> ZkServer {
    start_server_with(server_builder()).await
}

/// Starts the standalone server `builder` describes on a blocking thread and waits until it
/// serves.
///
/// # Panics
///
/// As [`start_server`].
pub async fn start_server_with(builder: ZkServerBuilder) -> ZkServer {
    started(blocking(move || builder.start()).await)
}

/// Starts a standalone server ([`server_builder`]) with TTL nodes (`extendedTypesEnabled`)
/// whose container manager runs every 100 ms, so that an expired TTL node goes soon after its
/// TTL.
///
/// # Panics
///
/// As [`start_server`].
pub async fn start_ttl_server() -> ZkServer {
    start_server_with(
        server_builder()
            .extended_types(true)
            .system_property("znode.container.checkIntervalMs", 100),
    )
    .await
}

/// The wall clock in milliseconds since the Unix epoch, as a Stat's `mtime` and `ctime` read
/// it (the kit's servers run on this machine's clock).
pub fn wall_clock_ms() -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    i64::try_from(now.as_millis()).expect("ms fit")
}

/// Starts the ensemble `builder` describes on a blocking thread and waits until every server
/// serves and one leads ([`Ensemble::start`]). Shared, so that blocking calls on it (kill,
/// restart, leader lookup) can go to [`blocking`].
///
/// # Panics
///
/// As [`start_server`].
pub async fn start_ensemble(builder: EnsembleBuilder) -> Arc<Ensemble> {
    Arc::new(started(blocking(move || builder.start()).await))
}

/// `builder` with read-only mode on (`readonlymode.enabled`): a server that lost its quorum
/// serves read-only clients. Local sessions too: since ZOOKEEPER-3863/3864 (3.7) a read-only
/// server creates local sessions only, and without them a session request waits for ever for
/// a global session.
pub fn read_only_ensemble(builder: EnsembleBuilder) -> EnsembleBuilder {
    builder
        .system_property("readonlymode.enabled", true)
        .config("localSessionsEnabled", true)
        .config("localSessionsUpgradingEnabled", true)
}

/// Polls (every 50 ms, on a blocking thread: a four-letter command) until server `i` of
/// `ensemble` reports `mode`, at most `limit`.
///
/// # Panics
///
/// When it does not in time (the message names the mode it reports).
pub async fn wait_for_mode(ensemble: &Arc<Ensemble>, i: usize, mode: Mode, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let e = ensemble.clone();
        let now = blocking(move || e.server(i).mode()).await;
        if now.as_ref().is_ok_and(|m| *m == mode) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "server {i} not {mode} within {limit:?}; now {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs a blocking call (a start, a kill, a restart, a four-letter command) on tokio's
/// blocking threads and returns its value. A panic of `f` resumes on the caller's task, with
/// its own message.
pub async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(f).await {
        Ok(value) => value,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => panic!("a blocking test-kit call did not run: {e}"),
    }
}

// ----- sessions -----

/// The client builder of the tests: session timeout [`SESSION_TIMEOUT`], request timeout
/// [`REQUEST_TIMEOUT`]. Change either before [`connect_with`] where a test needs to.
pub fn builder() -> ClientBuilder {
    Client::builder()
        .session_timeout(SESSION_TIMEOUT)
        .request_timeout(Some(REQUEST_TIMEOUT))
}

/// Connects a session made by [`builder`] to `connect_string`, at most [`CONNECT_LIMIT`].
///
/// # Panics
///
/// When the connect fails or takes longer.
pub async fn connect(connect_string: &str) -> Client {
    connect_with(builder(), connect_string).await
}

/// Connects a session made by `builder` to `connect_string`, at most [`CONNECT_LIMIT`].
///
/// # Panics
///
/// When the connect fails or takes longer.
pub async fn connect_with(builder: ClientBuilder, connect_string: &str) -> Client {
    within("connect", CONNECT_LIMIT, builder.connect(connect_string))
        .await
        .unwrap_or_else(|e| panic!("connect to {connect_string}: {e}"))
}

/// `n` sessions made by `builder`, connected concurrently (each as [`connect_with`]).
pub async fn sessions(builder: ClientBuilder, connect_string: &str, n: usize) -> Vec<Client> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (builder, connect_string) = (builder.clone(), connect_string.to_owned());
            tokio::spawn(async move { connect_with(builder, &connect_string).await })
        })
        .collect();
    let mut clients = Vec::with_capacity(n);
    for task in tasks {
        clients.push(join("connect", CONNECT_LIMIT, task).await);
    }
    clients
}

/// A session behind its own [`FaultProxy`], so that it alone can be cut off, frozen or
/// delayed.
pub struct Proxied {
    /// The proxy between the session and the server.
    pub proxy: FaultProxy,
    /// The session, connected through [`Proxied::proxy`].
    pub client: Client,
}

/// Starts a [`FaultProxy`] to `target` and connects a session made by `builder` through it
/// (as [`connect_with`]).
pub async fn connect_proxied(target: SocketAddr, builder: ClientBuilder) -> Proxied {
    let proxy = FaultProxy::start(target)
        .await
        .unwrap_or_else(|e| panic!("start a fault proxy to {target}: {e}"));
    let client = connect_with(builder, &proxy.connect_string()).await;
    Proxied { proxy, client }
}

/// `n` sessions made by `builder`, each behind its own [`FaultProxy`] to `target` (as
/// [`connect_proxied`], one after the other), so that each alone can be cut off.
pub async fn proxied_sessions(
    target: SocketAddr,
    builder: ClientBuilder,
    n: usize,
) -> Vec<Proxied> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(connect_proxied(target, builder.clone()).await);
    }
    all
}

/// Expires the session of `client` on the server now, as a session timeout would: another
/// connection takes the session over (its id and password, which makes the server drop
/// `client`'s connection) and closes it. `client` is told `Expired` when it reconnects.
///
/// # Panics
///
/// When the takeover or the close fails.
pub async fn expire_session(client: &Client, connect_string: &str) {
    let thief = builder()
        .resume(client.session_id(), client.session_password())
        .connect(connect_string)
        .await
        .unwrap_or_else(|e| panic!("take over session {:#x}: {e}", client.session_id()));
    thief
        .close()
        .await
        .unwrap_or_else(|e| panic!("close the taken-over session: {e}"));
}

// ----- bounded waits -----

/// Awaits `future`, panicking with `what` when it takes longer than `limit`: no call hangs.
pub async fn within<F: Future>(what: &str, limit: Duration, future: F) -> F::Output {
    match tokio::time::timeout(limit, future).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: not done within {limit:?}"),
    }
}

/// Awaits `task` at most `limit`, panicking with `what` when it takes longer or when it
/// panicked or was cancelled.
pub async fn join<T>(what: &str, limit: Duration, task: JoinHandle<T>) -> T {
    within(what, limit, task)
        .await
        .unwrap_or_else(|e| panic!("{what}: the task failed: {e}"))
}

/// Polls `condition` (every 10 ms) until it holds, panicking with `what` when it still does
/// not after `limit`. A plain condition is written `|| async { cond }`.
pub async fn eventually<F, Fut>(what: &str, limit: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !condition().await {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// Waits until `client` reports `state`, at most `limit`.
///
/// # Panics
///
/// When the state is not reached in time (the message names the state it is in).
pub async fn wait_for_state(client: &Client, state: SessionState, limit: Duration) {
    let mut states = client.state_watcher();
    let reached = tokio::time::timeout(limit, states.wait_for(|s| *s == state)).await;
    assert!(
        matches!(reached, Ok(Ok(_))),
        "state {state:?} not reached within {limit:?}; now {:?}",
        client.state()
    );
}

/// Waits until the state of `client` satisfies `done`, at most `limit`, and returns that state.
///
/// # Panics
///
/// When no such state comes in time.
pub async fn wait_state(
    client: &Client,
    limit: Duration,
    done: impl Fn(SessionState) -> bool,
) -> SessionState {
    let mut states = client.state_watcher();
    let state = within("session state", limit, states.wait_for(|s| done(*s)))
        .await
        .map(|s| *s);
    state.unwrap_or_else(|_| panic!("the client is gone; state {:?}", client.state()))
}

/// The next event of the persistent watch `watch` that is not a connection marker (the
/// `NONE` events that say the connection went or came back), as (type, path), at most 10 s.
///
/// # Panics
///
/// When the watch ends or no such event comes in time.
pub async fn next_change(watch: &mut PersistentWatcher) -> (EventType, String) {
    loop {
        let event = within("a persistent watch's event", CALL_LIMIT, watch.next())
            .await
            .unwrap_or_else(|e| panic!("the persistent watch ended: {e}"));
        if event.event_type != EventType::NONE {
            return (event.event_type, event.path);
        }
    }
}

/// Every state a client goes through, with the instant it was seen (recorded by a task that
/// ends with the client's last state: a terminal one, but for `Expired` when the client
/// renews expired sessions).
#[derive(Clone, Default)]
pub struct StateLog {
    seen: Arc<Mutex<Vec<(SessionState, Instant)>>>,
}

impl StateLog {
    /// Starts recording the states of `client`, the current one first.
    pub fn record(client: &Client) -> StateLog {
        let log = StateLog::default();
        let mut states = client.state_watcher();
        let seen = log.seen.clone();
        let renews = client.renews_expired_sessions();
        seen.lock()
            .expect("log")
            .push((*states.borrow_and_update(), Instant::now()));
        tokio::spawn(async move {
            while states.changed().await.is_ok() {
                let state = *states.borrow_and_update();
                seen.lock().expect("log").push((state, Instant::now()));
                if state.is_terminal() && !(renews && state == SessionState::Expired) {
                    return;
                }
            }
        });
        log
    }

    /// The states seen so far, in order.
    pub fn states(&self) -> Vec<SessionState> {
        self.seen.lock().expect("log").iter().map(|s| s.0).collect()
    }

    /// When `state` was first seen.
    pub fn first(&self, state: SessionState) -> Option<Instant> {
        self.seen
            .lock()
            .expect("log")
            .iter()
            .find(|s| s.0 == state)
            .map(|s| s.1)
    }
}

// ----- connection attempts -----

/// The longest a client with the default reconnect backoff ([`Backoff::default`], the
/// builder's) waits between two connection attempts, for session timeout `session_timeout`:
/// the backoff's cap ([`Backoff::cap`]).
pub fn largest_reconnect_wait(session_timeout: Duration) -> Duration {
    Backoff::default().cap(session_timeout)
}

/// Asserts that a client whose session has ended (session timeout `session_timeout`, the
/// default backoff) dials no more: `attempts` (a count of its connection attempts, such as
/// [`FaultProxy::accepted`]) does not grow over a window of observation of two
/// [`largest_reconnect_wait`]s. The window is bounded by the client's own timer: a client that
/// still dialed would dial within one of them. A negative window, not a wait for an event.
///
/// # Panics
///
/// When `attempts` grew.
pub async fn assert_dials_no_more(session_timeout: Duration, attempts: impl Fn() -> u64) {
    let before = attempts();
    tokio::time::sleep(2 * largest_reconnect_wait(session_timeout)).await;
    let after = attempts();
    assert_eq!(
        after,
        before,
        "{} connection attempts after the session ended",
        after - before
    );
}

// ----- nodes -----

/// The children of `path`, sorted; none when `path` does not exist.
///
/// # Panics
///
/// On any other error, or when the call takes more than 10 s.
pub async fn children(client: &Client, path: &str) -> Vec<String> {
    match within("list", CALL_LIMIT, client.get_children(path)).await {
        Ok(children) => {
            let mut children = children.to_vec();
            children.sort();
            children
        }
        Err(zk_proto::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

/// Polls the [`children`] of `path` (every 10 ms) until `done` holds or `limit` has passed,
/// and returns the last listing either way: the caller checks it.
pub async fn poll_children(
    client: &Client,
    path: &str,
    limit: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let listing = children(client, path).await;
        if done(&listing) || Instant::now() >= deadline {
            return listing;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Polls the [`children`] of `path` until `done` holds, at most `limit`, and returns that
/// listing.
///
/// # Panics
///
/// With `what` and the last listing when `done` never held.
pub async fn wait_children(
    client: &Client,
    path: &str,
    limit: Duration,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let listing = poll_children(client, path, limit, &done).await;
    assert!(
        done(&listing),
        "{what}: not reached within {limit:?}; children of {path}: {listing:?}"
    );
    listing
}

/// Creates `path` and its ancestors as persistent nodes (existing ones are fine).
///
/// # Panics
///
/// On any other error, or when a create takes more than 10 s.
pub async fn mkdirs(client: &Client, path: &str) {
    let mut at = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        at.push('/');
        at.push_str(part);
        match within(
            "create",
            CALL_LIMIT,
            client.create(&at, "", &CreateOptions::persistent()),
        )
        .await
        {
            Ok(_) | Err(zk_proto::Error::NodeExists) => {}
            Err(e) => panic!("create {at}: {e}"),
        }
    }
}

/// Creates the persistent node `path` with `data`.
///
/// # Panics
///
/// On any error, or when the create takes more than 10 s.
pub async fn create_node(client: &Client, path: &str, data: &str) {
    let create = client.create(path, data.to_owned(), &CreateOptions::persistent());
    within("create", CALL_LIMIT, create)
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
}

/// Sets the data of `path` to `data`, whatever its version.
///
/// # Panics
///
/// On any error, or when the call takes more than 10 s.
pub async fn set_node(client: &Client, path: &str, data: &str) {
    let set = client.set_data(path, data.to_owned(), None);
    within("setData", CALL_LIMIT, set)
        .await
        .unwrap_or_else(|e| panic!("set {path}: {e}"));
}

/// Every node of the subtree at `root` with its data and Stat, read one node at a time (none
/// when `root` does not exist). A node deleted while it is read is left out; call it when
/// nothing changes the subtree, after `sync` for the leader's latest.
///
/// # Panics
///
/// On any error but `NoNode`, or when a call takes more than 10 s.
pub async fn read_tree(
    client: &Client,
    root: &str,
) -> std::collections::BTreeMap<String, (Bytes, Stat)> {
    let mut tree = std::collections::BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let read = within("getData", CALL_LIMIT, client.get_data(&path)).await;
        match read {
            Ok(found) => {
                tree.insert(path.clone(), found);
            }
            Err(zk_proto::Error::NoNode) => continue,
            Err(e) => panic!("read {path}: {e}"),
        }
        for child in children(client, &path).await {
            pending.push(if path == "/" {
                format!("/{child}")
            } else {
                format!("{path}/{child}")
            });
        }
    }
    tree
}

/// A node as a cache is compared with the server: its data (none where not kept), czxid,
/// mzxid, version and ephemeral owner: what a cache keeps current.
pub type NodeSeen = (Option<Bytes>, i64, i64, i32, i64);

/// The [`NodeSeen`] of a node with `data` and `stat`.
pub fn node_seen(data: Option<Bytes>, stat: &Stat) -> NodeSeen {
    (
        data,
        stat.czxid,
        stat.mzxid,
        stat.version,
        stat.ephemeral_owner,
    )
}

/// The subtree at `root` as the leader has it (`sync` first, then [`read_tree`]), each node
/// as a [`NodeSeen`], with its data when `data`.
///
/// # Panics
///
/// As [`read_tree`], or when the sync fails or takes more than 10 s.
pub async fn tree_seen(
    client: &Client,
    root: &str,
    data: bool,
) -> std::collections::BTreeMap<String, NodeSeen> {
    within("sync", CALL_LIMIT, client.sync(root))
        .await
        .unwrap_or_else(|e| panic!("sync {root}: {e}"));
    read_tree(client, root)
        .await
        .into_iter()
        .map(|(path, (bytes, stat))| (path, node_seen(data.then_some(bytes), &stat)))
        .collect()
}

// ----- one at a time -----

/// The lock behind [`serial`]: one per test binary (each binary links its own kit).
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Takes the test binary's serial lock and holds it until the guard is dropped: tests that
/// take it run one at a time. For tests that start JVMs (the machines are small), or that
/// measure time.
///
/// ```no_run
/// # async fn example() {
/// let _serial = zk_testkit::client::serial().await;
/// # }
/// ```
pub async fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().await
}
