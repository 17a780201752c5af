//! A local mirror of a subtree: [`TreeCache`], kept current with one persistent recursive
//! watch.
//!
//! ```no_run
//! # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
//! use std::time::Duration;
//! use zk_recipes::cache::{CacheEvent, Depth, TreeCache};
//!
//! let cache = TreeCache::builder(&client, "/services").depth(Depth::Subtree).start();
//! let mut events = cache.events();
//! cache.wait_initialized(Some(Duration::from_secs(10))).await?;
//! for node in cache.children("/services") {
//!     println!("{} = {:?}", node.path(), node.data());
//! }
//! loop {
//!     match events.next().await? {
//!         CacheEvent::Added(node) => println!("+ {}", node.path()),
//!         CacheEvent::Updated { new, .. } => println!("~ {}", new.path()),
//!         CacheEvent::Removed(node) => println!("- {}", node.path()),
//!         _ => {}
//!     }
//! }
//! # }
//! ```
//!
//! `docs/recipes-cache.md` describes the algorithm, what an observer may see and what it costs.

mod events;
mod scope;
mod sync;
mod tree;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use zk_proto::Client;

pub use events::CacheEvents;
pub use tree::{CacheEvent, CacheNode, Snapshot};

use crate::deadline::within;
use crate::{Error, Result};
use events::Subscriber;
use scope::Scope;
use tree::Map;

/// How deep below its root a [`TreeCache`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Depth {
    /// The root node alone (Curator's `NodeCache`).
    Node,
    /// The root and its children (Curator's `PathChildrenCache`, plus the root).
    Children,
    /// The root and every descendant (Curator's `TreeCache`).
    #[default]
    Subtree,
}

impl Depth {
    fn levels(self) -> usize {
        match self {
            Depth::Node => 0,
            Depth::Children => 1,
            Depth::Subtree => usize::MAX,
        }
    }
}

/// What a [`TreeCache`] keeps of a node, as its filter decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Keep {
    /// The node's data and Stat.
    Data,
    /// The node's Stat only (its data is never read: `exists` instead of `getData`).
    Stat,
    /// Nothing: neither the node nor anything below it is cached.
    Nothing,
}

/// The filter of a [`TreeCache`]: given a node's path, what to keep of it.
pub type Filter = Arc<dyn Fn(&str) -> Keep + Send + Sync>;

/// The settings of a [`TreeCache`], made by [`TreeCache::builder`]; [`start`](Self::start) starts
/// it.
#[must_use = "a tree cache does nothing until started"]
pub struct TreeCacheBuilder {
    client: Client,
    root: String,
    depth: Depth,
    keep: Keep,
    filter: Option<Filter>,
    max_in_flight: usize,
    read_batch: usize,
    event_capacity: usize,
}

impl fmt::Debug for TreeCacheBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TreeCacheBuilder")
            .field("root", &self.root)
            .field("depth", &self.depth)
            .field("keep", &self.keep)
            .field("filter", &self.filter.is_some())
            .field("max_in_flight", &self.max_in_flight)
            .field("read_batch", &self.read_batch)
            .field("event_capacity", &self.event_capacity)
            .finish()
    }
}

impl TreeCacheBuilder {
    /// How deep to go ([`Depth::Subtree`] by default).
    pub fn depth(mut self, depth: Depth) -> Self {
        self.depth = depth;
        self
    }

    /// Keep only the Stat of every node, not its data ([`Keep::Stat`]); a filter, when set,
    /// decides instead.
    pub fn stat_only(mut self) -> Self {
        self.keep = Keep::Stat;
        self
    }

    /// Decides, by path, what is kept of each node ([`Keep`]). A node the filter refuses is
    /// not cached and neither is anything below it. Called on the cache's task, often (on
    /// every event, for the path and its ancestors up to the root): keep it cheap, and give
    /// the same answer for the same path.
    pub fn filter(mut self, filter: impl Fn(&str) -> Keep + Send + Sync + 'static) -> Self {
        self.filter = Some(Arc::new(filter));
        self
    }

    /// The most reads in flight at once (512 by default): the loads and reconciliations are
    /// pipelined, never one round trip per node.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// The most nodes whose data one request of a load or reconciliation reads (64 by
    /// default; 1: one getData per node). Sibling nodes are read together in one
    /// `multiRead`, which spares the server its per-request work: a load is several times
    /// faster than with one request per node. A batch is sized as if each of its nodes held
    /// as much data as the largest read so far, to a sixteenth of the client's frame limit
    /// ([`Client::max_frame_len`](zk_proto::Client::max_frame_len); 64 KiB at most). Should
    /// one still exceed the limit (a node many times larger than every node before it, among
    /// small siblings), the client drops that connection (the session goes on) and this
    /// cache reads one node per request from then on.
    pub fn read_batch(mut self, max: usize) -> Self {
        self.read_batch = max.max(1);
        self
    }

    /// The events buffered for each subscriber (1,024 by default); a subscriber that falls
    /// further behind gets [`zk_proto::Error::WatchOverflow`] and its stream ends (the cache
    /// itself goes on).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity.max(1);
        self
    }

    /// Starts the cache on the current tokio runtime: it adds its watch and loads the
    /// subtree in the background. Wait for the first full view with
    /// [`TreeCache::wait_initialized`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> TreeCache {
        let (status_tx, status) = watch::channel(Status::default());
        let shared = Arc::new(Shared {
            map: RwLock::new(Arc::new(Map::new())),
            subscribers: Mutex::new(Vec::new()),
            end: Mutex::new(None),
            capacity: self.event_capacity,
        });
        let scope = Scope::new(
            &self.root,
            self.depth.levels(),
            self.keep,
            self.filter.clone(),
        );
        let (syncs, sync_requests) = mpsc::unbounded_channel();
        let quorum = self.client.quorum_check();
        let client = self.client.clone();
        let task = sync::Task::new(
            self.client,
            scope,
            sync::ReadLimits {
                max_in_flight: self.max_in_flight,
                read_batch: self.read_batch,
            },
            shared.clone(),
            status_tx,
            sync_requests,
        );
        let handle = tokio::spawn(task.run());
        TreeCache {
            shared,
            status,
            syncs,
            root: self.root,
            task: handle,
            client,
            _quorum: quorum,
        }
    }
}

/// What the cache's task tells the handle.
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    /// The first full load is done.
    pub(crate) initialized: bool,
    /// Why the cache ended, once it has.
    pub(crate) ended: Option<zk_proto::Error>,
}

/// What the handle and the task share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) map: RwLock<Arc<Map>>,
    pub(crate) subscribers: Mutex<Vec<Subscriber>>,
    /// Why the cache ended, once it has (read by subscribers whose stream ended).
    pub(crate) end: Mutex<Option<zk_proto::Error>>,
    pub(crate) capacity: usize,
}

impl Shared {
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Arc<Map>> {
        self.map.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn subscribers(&self) -> MutexGuard<'_, Vec<Subscriber>> {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn end(&self) -> MutexGuard<'_, Option<zk_proto::Error>> {
        self.end.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A local mirror of the subtree under a root: the data and Stat of every node (or only what
/// its [`Keep`] filter selects), kept current with one persistent recursive watch.
///
/// Reads ([`get`](Self::get), [`children`](Self::children), [`snapshot`](Self::snapshot))
/// are synchronous and never wait for the server. Changes come as [`CacheEvent`]s on
/// [`events`](Self::events). After a reconnection the cache re-reads the subtree and reports
/// exactly what changed meanwhile. After a session expiry it does the same in the client's
/// next session when the client renews expired sessions
/// ([`renew_expired_sessions`](zk_proto::ClientBuilder::renew_expired_sessions)); otherwise
/// the expiry ends it (the events then end with [`zk_proto::Error::SessionExpired`]).
/// `docs/recipes-cache.md` states what an observer may see.
///
/// Dropping the cache stops it and removes its watch; [`close`](Self::close) does the same and
/// returns once the server has removed the watch.
#[derive(Debug)]
pub struct TreeCache {
    shared: Arc<Shared>,
    status: watch::Receiver<Status>,
    /// Asks the task for a [`sync`](TreeCache::sync).
    syncs: mpsc::UnboundedSender<sync::SyncWaiter>,
    root: String,
    task: JoinHandle<()>,
    /// For the round trips that confirm the watch's removal at [`close`](Self::close).
    client: Client,
    /// The session's quorum check, held while the cache lives: it never serves data from a
    /// server cut off from the leader for longer than the check's bound.
    _quorum: zk_proto::QuorumCheck,
}

impl TreeCache {
    /// The settings of a cache of the subtree at `root` (see [`TreeCacheBuilder`]).
    pub fn builder(client: &Client, root: &str) -> TreeCacheBuilder {
        TreeCacheBuilder {
            client: client.clone(),
            root: root.to_owned(),
            depth: Depth::default(),
            keep: Keep::Data,
            filter: None,
            max_in_flight: 512,
            read_batch: 64,
            event_capacity: 1024,
        }
    }

    /// The cache's root path.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The cached node at `path`.
    pub fn get(&self, path: &str) -> Option<Arc<CacheNode>> {
        self.shared
            .read()
            .get(tree::key(path).as_str())
            .map(|slot| slot.node.clone())
    }

    /// The cached children of `path`, ordered by name.
    pub fn children(&self, path: &str) -> Vec<Arc<CacheNode>> {
        let map = self.shared.read().clone();
        Snapshot { map }.children(path).cloned().collect()
    }

    /// The whole cached tree, as it is now (O(1); it never changes afterwards).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            map: self.shared.read().clone(),
        }
    }

    /// A new subscriber to the cache's events, from now on. [`CacheEvent::Initialized`]
    /// comes first if the first load is not done yet; otherwise read the state with
    /// [`snapshot`](Self::snapshot) (or use [`subscribe`](Self::subscribe)).
    pub fn events(&self) -> CacheEvents {
        self.subscribe().1
    }

    /// A snapshot and a subscriber to every change after it, taken together: applying the
    /// events to the snapshot gives the cache's later states.
    pub fn subscribe(&self) -> (Snapshot, CacheEvents) {
        // The task applies a change and queues its events under the map's write lock; holding
        // the read lock here puts the subscription between two changes.
        let map = self.shared.read();
        let (subscriber, events) = events::channel(&self.shared);
        self.shared.subscribers().push(subscriber);
        (Snapshot { map: map.clone() }, events)
    }

    /// Whether the first full load is done.
    pub fn is_initialized(&self) -> bool {
        self.status.borrow().initialized
    }

    /// Why the cache ended, `None` while it runs: [`Error::Zk`] with the session's end (it
    /// expired on a client that does not renew sessions, or the client was closed).
    pub fn ended(&self) -> Option<Error> {
        self.status.borrow().ended.clone().map(Error::Zk)
    }

    /// Waits until the cache ends, and returns why (as [`ended`](Self::ended)); at once when
    /// it has. Pending as long as the cache runs.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        let mut status = self.status.clone();
        let ended = match status.wait_for(|s| s.ended.is_some()).await {
            Ok(status) => status.ended.clone(),
            Err(_) => None,
        };
        Error::Zk(ended.unwrap_or(zk_proto::Error::Closed))
    }

    /// Waits until the first full load is done.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; [`Error::Zk`] with the reason the cache ended before.
    pub async fn wait_initialized(&self, timeout: Option<Duration>) -> Result<()> {
        let mut status = self.status.clone();
        let done = within(
            timeout,
            status.wait_for(|s| s.initialized || s.ended.is_some()),
        )
        .await?
        .map_err(|_| Error::Zk(zk_proto::Error::Closed))?
        .clone();
        match done.ended {
            Some(error) if !done.initialized => Err(Error::Zk(error)),
            _ => Ok(()),
        }
    }

    /// Waits until the cache has caught up with the server: every change the server had
    /// applied when this was called (its connected server; call `Client::sync` before for the
    /// leader's latest) is in the cache, and no reconciliation is under way. A barrier for
    /// tests and for read-your-writes: `client.set_data(..).await?; cache.sync(..).await?`
    /// then `cache.get(..)` sees the write.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; [`Error::Zk`] with the reason the cache ended.
    pub async fn sync(&self, timeout: Option<Duration>) -> Result<()> {
        let (tx, rx) = oneshot::channel();
        if let Some(error) = self.ended() {
            return Err(error);
        }
        // A task that is gone drops the request, which ends the wait below.
        let _ = self.syncs.send(tx);
        match within(timeout, rx).await? {
            Ok(result) => result.map_err(Error::Zk),
            Err(_) => Err(self.ended().unwrap_or(Error::Zk(zk_proto::Error::Closed))),
        }
    }
}

impl TreeCache {
    /// Stops the cache and returns once the server has removed its watch (unless another
    /// watcher of the client is on the root, as for any dropped
    /// [`PersistentWatcher`](zk_proto::PersistentWatcher)): after it, no event of the subtree
    /// reaches the session for this cache. Its event streams end with
    /// [`Closed`](zk_proto::Error::Closed).
    ///
    /// # Errors
    ///
    /// Why the cache had ended by itself, if it had (its watch went with the session); the
    /// connection error of a round trip that confirms the removal (the watch is then gone
    /// with that connection: it is not set again on the next). None when the session is
    /// over: its watches are too.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future still stops the cache, as dropping the cache does.
    pub async fn close(mut self) -> Result<()> {
        match self.ended() {
            Some(Error::Zk(zk_proto::Error::Closed)) | None => {}
            Some(error) => return Err(error),
        }
        self.task.abort();
        // Resolves once the task's future, and the watcher in it, is dropped: the removal is
        // then queued, or (while the watch's addWatch is in flight) due when its reply comes.
        let _ = (&mut self.task).await;
        // Calls are answered in the order made. The first answer comes after the addWatch's
        // reply, if one was in flight, so the removal is queued by then; the second comes after
        // the removal's.
        for _ in 0..2 {
            match self.client.exists(&self.root).await {
                Ok(_) => {}
                // The session is over: so are its watches.
                Err(error) if error.is_terminal() => return Ok(()),
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }
}

impl Drop for TreeCache {
    fn drop(&mut self) {
        self.task.abort();
        // The subscribers' streams end (with `Closed`) rather than wait for a task that is
        // gone.
        self.shared.end().get_or_insert(zk_proto::Error::Closed);
        self.shared.subscribers().clear();
    }
}
