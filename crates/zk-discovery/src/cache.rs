//! A live view of one service's instances: [`ServiceCache`], a [`TreeCache`] of the service's
//! node and its children, whose data is read as [`ServiceInstance`]s.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use zk_proto::Client;
use zk_recipes::cache::{CacheEvent, CacheEvents, CacheNode, Depth, Snapshot, TreeCache};

use crate::layout::{Skipped, join};
use crate::{Error, Result, ServiceInstance};

/// The settings of a [`ServiceCache`]; [`start`](Self::start) starts it.
#[derive(Debug, Clone)]
#[must_use = "a service cache does nothing until started"]
pub struct ServiceCacheBuilder {
    client: Client,
    path: String,
    event_capacity: usize,
}

impl ServiceCacheBuilder {
    /// A cache of the instances under `service_path` (`<base>/<name>`; see
    /// [`ServiceDiscovery::cache`](crate::ServiceDiscovery::cache)).
    pub fn new(client: &Client, service_path: &str) -> ServiceCacheBuilder {
        ServiceCacheBuilder {
            client: client.clone(),
            path: service_path.to_owned(),
            event_capacity: 1024,
        }
    }

    /// The events buffered for each subscriber (1,024 by default; see
    /// [`TreeCacheBuilder::event_capacity`](zk_recipes::cache::TreeCacheBuilder::event_capacity)).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity;
        self
    }

    /// Starts the cache on the current tokio runtime. Wait for its first full view with
    /// [`ServiceCache::wait_initialized`].
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> ServiceCache {
        let cache = TreeCache::builder(&self.client, &self.path)
            .depth(Depth::Children)
            .event_capacity(self.event_capacity)
            .start();
        ServiceCache {
            cache,
            memo: Arc::new(Memo::default()),
        }
    }
}

/// The instances parsed so far, by node path and data version: each node's data is parsed
/// once, whoever reads it.
#[derive(Debug, Default)]
struct Memo {
    parsed: Mutex<HashMap<String, Parsed>>,
}

#[derive(Debug, Clone)]
struct Parsed {
    czxid: i64,
    mzxid: i64,
    instance: std::result::Result<Arc<ServiceInstance>, String>,
}

impl Memo {
    fn parse(&self, node: &CacheNode) -> std::result::Result<Arc<ServiceInstance>, String> {
        let stat = node.stat();
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = parsed.get(node.path())
            && known.czxid == stat.czxid
            && known.mzxid == stat.mzxid
        {
            return known.instance.clone();
        }
        let data = node.data().map(|d| &d[..]).unwrap_or_default();
        let instance = ServiceInstance::from_json(data).map(Arc::new);
        if let Err(reason) = &instance {
            tracing::warn!(
                path = node.path(),
                reason,
                "skipping a node that is not a service instance"
            );
        }
        parsed.insert(
            node.path().to_owned(),
            Parsed {
                czxid: stat.czxid,
                mzxid: stat.mzxid,
                instance: instance.clone(),
            },
        );
        instance
    }

    /// Forgets the nodes no longer cached, once the memo holds more than `live` of them.
    fn prune(&self, snapshot: &Snapshot, root: &str, live: usize) {
        let mut parsed = self.parsed.lock().unwrap_or_else(PoisonError::into_inner);
        if parsed.len() > live {
            let present: std::collections::HashSet<&str> =
                snapshot.children(root).map(|n| n.path()).collect();
            parsed.retain(|path, _| present.contains(path.as_str()));
        }
    }
}

/// A live view of a service's instances (Curator's `ServiceCache`): a [`TreeCache`] of the
/// service's node and its children, kept current with one persistent recursive watch, its
/// nodes' data read as [`ServiceInstance`]s (a node whose data is not one is left out and
/// reported: [`skipped`](Self::skipped), [`ServiceEvent::Malformed`]).
///
/// Reads are synchronous and never wait for the server. Changes come as [`ServiceEvent`]s.
/// After a reconnection, or an expiry on a client that renews expired sessions, the cache
/// reports exactly what changed meanwhile; an expiry on any other client ends it
/// ([`ended`](Self::ended)). The service need not exist yet: its instances appear when it
/// does. Dropping the cache stops it.
#[derive(Debug)]
pub struct ServiceCache {
    cache: TreeCache,
    memo: Arc<Memo>,
}

impl ServiceCache {
    /// The service's node.
    pub fn path(&self) -> &str {
        self.cache.root()
    }

    /// The instances now, ordered by node name.
    pub fn instances(&self) -> Vec<Arc<ServiceInstance>> {
        let snapshot = self.cache.snapshot();
        self.instances_of(&snapshot)
    }

    fn instances_of(&self, snapshot: &Snapshot) -> Vec<Arc<ServiceInstance>> {
        let root = self.cache.root();
        let mut live = 0;
        let instances = snapshot
            .children(root)
            .inspect(|_| live += 1)
            .filter_map(|node| self.memo.parse(node).ok())
            .collect();
        self.memo.prune(snapshot, root, live);
        instances
    }

    /// The instance whose node is named `id`, if cached and well formed.
    pub fn get(&self, id: &str) -> Option<Arc<ServiceInstance>> {
        let path = join(self.cache.root(), id);
        let node = self.cache.get(&path)?;
        self.memo.parse(&node).ok()
    }

    /// The cached nodes whose data is not a service instance, with why.
    pub fn skipped(&self) -> Vec<Skipped> {
        self.cache
            .children(self.cache.root())
            .iter()
            .filter_map(|node| {
                self.memo.parse(node).err().map(|reason| Skipped {
                    path: node.path().to_owned(),
                    reason,
                })
            })
            .collect()
    }

    /// A new subscriber to the cache's changes, from now on ([`ServiceEvent::Initialized`]
    /// first if the first load is not done yet).
    pub fn events(&self) -> ServiceEvents {
        self.subscribe().1
    }

    /// The instances and a subscriber to every change after them, taken together.
    pub fn subscribe(&self) -> (Vec<Arc<ServiceInstance>>, ServiceEvents) {
        let (snapshot, events) = self.cache.subscribe();
        let instances = self.instances_of(&snapshot);
        let events = ServiceEvents {
            events,
            root: self.cache.root().to_owned(),
            memo: self.memo.clone(),
        };
        (instances, events)
    }

    /// Waits until the first full load is done; at most `timeout`.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; why the cache ended before.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_initialized(&self, timeout: Option<Duration>) -> Result<()> {
        Ok(self.cache.wait_initialized(timeout).await?)
    }

    /// Waits until the cache has caught up with the server (see [`TreeCache::sync`]): a
    /// change the server had applied when this was called is then in
    /// [`instances`](Self::instances).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; why the cache ended.
    pub async fn sync(&self, timeout: Option<Duration>) -> Result<()> {
        Ok(self.cache.sync(timeout).await?)
    }

    /// Why the cache ended, `None` while it runs (see [`TreeCache::ended`]).
    pub fn ended(&self) -> Option<Error> {
        self.cache.ended().map(Error::from)
    }

    /// Waits until the cache ends, and returns why.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        self.cache.wait_ended().await.into()
    }

    /// The tree cache behind this one.
    pub fn tree_cache(&self) -> &TreeCache {
        &self.cache
    }
}

/// A change of a service's instances.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ServiceEvent {
    /// The first full load is done (sent once, first, to a subscriber that came before it).
    Initialized,
    /// An instance appeared (registered, or found by a reconciliation, or a malformed node
    /// now holds an instance).
    Added(Arc<ServiceInstance>),
    /// An instance's data changed.
    Updated {
        /// As it was.
        old: Arc<ServiceInstance>,
        /// As it is now.
        new: Arc<ServiceInstance>,
    },
    /// An instance's node is gone.
    Removed {
        /// The node's name (the instance id).
        id: String,
        /// The instance as last cached, if its data was one.
        last: Option<Arc<ServiceInstance>>,
    },
    /// A node under the service now holds data that is not an instance: it is not among the
    /// instances (if it held one before, that instance is gone from them).
    Malformed(Skipped),
}

/// The changes of a [`ServiceCache`]: read with [`next`](Self::next) or as a [`Stream`].
#[derive(Debug)]
pub struct ServiceEvents {
    events: CacheEvents,
    root: String,
    memo: Arc<Memo>,
}

impl ServiceEvents {
    /// The next change.
    ///
    /// # Errors
    ///
    /// Once the stream has ended, as [`CacheEvents::next`]:
    /// [`zk_proto::Error::WatchOverflow`] when this subscriber fell behind, or why the cache
    /// ended.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: a change not yet taken stays buffered.
    pub async fn next(&mut self) -> Result<ServiceEvent> {
        loop {
            let event = self.events.next().await?;
            if let Some(event) = self.map(event) {
                return Ok(event);
            }
        }
    }

    fn is_instance(&self, node: &CacheNode) -> bool {
        node.path() != self.root
    }

    fn map(&self, event: CacheEvent) -> Option<ServiceEvent> {
        let malformed = |node: &CacheNode, reason| {
            ServiceEvent::Malformed(Skipped {
                path: node.path().to_owned(),
                reason,
            })
        };
        Some(match event {
            CacheEvent::Initialized => ServiceEvent::Initialized,
            CacheEvent::Added(node) if self.is_instance(&node) => match self.memo.parse(&node) {
                Ok(instance) => ServiceEvent::Added(instance),
                Err(reason) => malformed(&node, reason),
            },
            CacheEvent::Updated { old, new } if self.is_instance(&new) => {
                match (self.memo.parse(&old), self.memo.parse(&new)) {
                    (Ok(old), Ok(new)) => ServiceEvent::Updated { old, new },
                    (Err(_), Ok(new)) => ServiceEvent::Added(new),
                    (_, Err(reason)) => malformed(&new, reason),
                }
            }
            CacheEvent::Removed(node) if self.is_instance(&node) => ServiceEvent::Removed {
                id: node.name().to_owned(),
                last: self.memo.parse(&node).ok(),
            },
            _ => return None,
        })
    }
}

impl Stream for ServiceEvents {
    type Item = Result<ServiceEvent>;

    /// The changes, then the error that ended the stream, then the end.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match Pin::new(&mut self.events).poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    if let Some(event) = self.map(event) {
                        return Poll::Ready(Some(Ok(event)));
                    }
                }
                Poll::Ready(Some(Err(error))) => return Poll::Ready(Some(Err(error.into()))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
