//! Distributed locks on ephemeral-sequential nodes: a mutex ([`Lock`]), a read-write lock
//! ([`ReadWriteLock`]) and a counting semaphore ([`Semaphore`]).
//!
//! **Curator compatibility.** The mutex and the read-write lock interoperate with Apache
//! Curator 5's `InterProcessMutex` and `InterProcessReadWriteLock` on the same path: the same
//! node names (`_c_<uuid>-lock-<seq>`; `_c_<uuid>-__READ__<seq>` and `_c_<uuid>-__WRIT__<seq>`),
//! the same order of the children and the same rule of who holds (see
//! [`sort_like_curator`](crate::sequential::sort_like_curator)). The [`Semaphore`] is this
//! crate's own design and is **not** compatible with Curator's semaphores.
//!
//! The design, the round-trip counts and the failure cases are described in
//! `docs/recipes-lock.md`. In short:
//!
//! - every contender creates `<path>/_c_<uuid>-<name><seq>` (ephemeral, sequential) and lists
//!   the children in the same round trip (the two requests are sent back to back);
//! - the children are ordered as Curator orders them: every child of the path, by the text
//!   after the lock name (for the recipes' nodes, the sequence number); a mutex or write-lock
//!   contender holds when it is first, a reader when no write node is before it;
//! - a waiter watches the node it waits for (its immediate predecessor; for a reader, the
//!   nearest write node before it), and when that node is the only one in its way, its
//!   deletion alone grants the lock (no new listing);
//! - when that node is not the only one in its way, the waiter also watches the node just
//!   before it: when that one goes, the waiter lists again while its predecessor takes the
//!   lock, so that it learns in time that its predecessor is the last node in its way and
//!   then takes the lock on the deletion alone. A deletion thus wakes at most two waiters;
//! - a lost create reply is recovered by finding the node by its per-attempt `<uuid>`;
//! - a cancelled, failed or timed-out acquire deletes its node;
//! - the held lock is a [`LockGuard`] that tells when the session (and so possibly the lock) is
//!   suspended or lost, and carries a fencing token (the node's czxid).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::sync::watch;
use zk_proto::{
    Client, CreateMode, CreateOptions, EventType, OneshotWatcher, SessionState, WatchedEvent,
};

/// A listing and, for the semaphore, its children watch.
type Listing = (Vec<String>, Option<OneshotWatcher>);

/// A watch on a contender's node, kept across listings.
type WatchFuture = Pin<Box<dyn Future<Output = zk_proto::Result<WatchedEvent>> + Send>>;

/// The outcome of setting a watch on a contender's node.
enum Watched {
    /// The watch is set.
    Armed(WatchFuture),
    /// The node is gone already.
    Gone,
    /// The call failed with a retryable error: list again.
    Retry,
}

use crate::cleanup::{delete_retrying, withdraw};
use crate::sequential::{
    attempt_id, curator_sort_key, is_own_node, protected_name, sequence_of, sort_by_sequence,
    sort_like_curator,
};

/// The node name Curator's `InterProcessMutex` uses (`LOCK_NAME`; `_c_<uuid>-lock-<seq>`).
pub const MUTEX_NAME: &str = "lock-";
/// The node name of the read side of Curator's `InterProcessReadWriteLock`
/// (`READ_LOCK_NAME`; `_c_<uuid>-__READ__<seq>`).
pub const READ_NAME: &str = "__READ__";
/// The node name of the write side of Curator's `InterProcessReadWriteLock`
/// (`WRITE_LOCK_NAME`; `_c_<uuid>-__WRIT__<seq>`: Curator keeps both names the same length).
pub const WRITE_NAME: &str = "__WRIT__";
/// The node name of this crate's [`Semaphore`] leases (not compatible with Curator's
/// semaphores).
pub const LEASE_NAME: &str = "lease-";

/// Why a lock operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// A ZooKeeper call failed (for example [`zk_proto::Error::SessionExpired`]).
    #[error(transparent)]
    Zk(#[from] zk_proto::Error),
    /// The acquire did not succeed within its timeout; its node was deleted.
    #[error("the lock was not acquired within the timeout")]
    Timeout,
    /// The lock (or the contender's node) is gone: the session ended, or the node was deleted
    /// by someone else.
    #[error("the lock was lost (session ended or node deleted)")]
    Lost,
    /// The parent's sequence counter wrapped past `i32::MAX`: the order of the contenders can
    /// no longer be told from their names. Recreate the lock's parent node.
    #[error("the sequence counter of the lock node wrapped (child {child})")]
    SequenceWrapped {
        /// The child whose sequence number could not be read.
        child: String,
    },
}

/// The result of the lock operations.
pub type Result<T, E = LockError> = std::result::Result<T, E>;

/// Which contenders stand in the way of which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// Every earlier contender blocks (mutex and write lock): one holder.
    Exclusive,
    /// Only earlier writers block (read lock).
    Read,
    /// Every earlier contender blocks, up to `n` holders (semaphore).
    Permits(usize),
}

/// One kind of contender: its node name, its rule, and which children form its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    name: &'static str,
    rule: Rule,
    /// The lock names stripped from a child's name to sort it (Curator's `fixForSorting`):
    /// the recipe's own, and for the read-write lock the names of both sides.
    sort_names: &'static [&'static str],
    /// Every child of the path is in the queue, as in Curator's recipes; otherwise only the
    /// children named `name` with a sequence number (this crate's semaphore).
    every_child: bool,
}

const MUTEX: Kind = Kind {
    name: MUTEX_NAME,
    rule: Rule::Exclusive,
    sort_names: &[MUTEX_NAME],
    every_child: true,
};
const READ: Kind = Kind {
    name: READ_NAME,
    rule: Rule::Read,
    sort_names: &[READ_NAME, WRITE_NAME],
    every_child: true,
};
const WRITE: Kind = Kind {
    name: WRITE_NAME,
    rule: Rule::Exclusive,
    sort_names: &[READ_NAME, WRITE_NAME],
    every_child: true,
};

/// What a contender does after a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    /// It holds the lock.
    Acquired,
    /// It waits for `node` to go: its immediate predecessor (mutex, write lock) or the
    /// nearest write node before it (read lock). `last`: that node is the only one in its way,
    /// so its deletion grants the lock (sequence numbers only grow, so no node created later
    /// sorts before ours). `before`: the child just before `node` in the queue (any kind),
    /// watched too when `node` is not the last, because its deletion may make `node` the last.
    Watch {
        node: String,
        last: bool,
        before: Option<String>,
    },
    /// It waits for any change of the children (semaphore).
    WatchChildren,
    /// Its own node is not among the children.
    Missing,
}

/// Whether the sort key of a recipe's node (the text after its name) is a sequence number
/// the server formatted after the parent's counter wrapped: a negative number (`-000000005`,
/// `-2147483648`), or ten digits above `i32::MAX`.
fn is_wrapped(key: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match key.strip_prefix('-') {
        Some(rest) => matches!(rest.len(), 9 | 10) && digits(rest),
        None => {
            key.len() == 10
                && digits(key)
                && key.parse::<i64>().is_ok_and(|v| v > i64::from(i32::MAX))
        }
    }
}

/// The queue of a listing, in order.
///
/// For the Curator recipes this is Curator's own order: every child, sorted by
/// [`sort_like_curator`] with the kind's lock names. For the semaphore, only the children
/// named [`LEASE_NAME`] with a sequence number, by that number. A node with a recipe's name
/// and a wrapped sequence number stops the decision ([`LockError::SequenceWrapped`]).
fn queue_of(kind: Kind, children: &[String]) -> Result<Vec<&String>> {
    let mut queue: Vec<&String> = Vec::with_capacity(children.len());
    for child in children {
        let key = curator_sort_key(child, kind.sort_names);
        if kind.sort_names.iter().any(|name| child.contains(name)) && is_wrapped(key) {
            return Err(LockError::SequenceWrapped {
                child: child.clone(),
            });
        }
        let sequential = key.len() == 10 && key.bytes().all(|b| b.is_ascii_digit());
        if kind.every_child || (child.contains(kind.name) && sequential) {
            queue.push(child);
        }
    }
    sort_like_curator(&mut queue, kind.sort_names);
    Ok(queue)
}

/// Decides from a listing. `own` is the contender's node name (without the parent).
///
/// The rules are Curator's (`StandardLockInternalsDriver.getsTheLock` and the read predicate
/// of `InterProcessReadWriteLock`): a mutex or write-lock contender holds when it is first in
/// the queue; a reader holds when no child whose name contains [`WRITE_NAME`] is before it; a
/// semaphore contender holds when fewer than `permits` nodes are before it.
fn decide(kind: Kind, children: &[String], own: &str) -> Result<Decision> {
    let queue = queue_of(kind, children)?;
    let Some(index) = queue.iter().position(|c| c.as_str() == own) else {
        return Ok(Decision::Missing);
    };
    let before = &queue[..index];
    // The node just before `node` in the queue, if `node` is not the last one in the way.
    let before_of = |node: &str, last: bool| {
        let at = before.iter().position(|c| c.as_str() == node)?;
        (!last && at > 0).then(|| before[at - 1].to_string())
    };
    match kind.rule {
        Rule::Exclusive => Ok(match before.last() {
            None => Decision::Acquired,
            Some(node) => {
                let last = before.len() == 1;
                Decision::Watch {
                    node: node.to_string(),
                    last,
                    before: before_of(node, last),
                }
            }
        }),
        Rule::Read => {
            // Any write node before ours blocks; we watch the nearest one (Curator watches
            // the first, and lists again at each deletion).
            let mut writers = before.iter().filter(|c| c.contains(WRITE_NAME));
            let nearest = writers.next_back();
            Ok(match nearest {
                None => Decision::Acquired,
                Some(node) => {
                    let last = writers.next().is_none();
                    Decision::Watch {
                        node: node.to_string(),
                        last,
                        before: before_of(node, last),
                    }
                }
            })
        }
        Rule::Permits(n) if before.len() < n => Ok(Decision::Acquired),
        Rule::Permits(_) => Ok(Decision::WatchChildren),
    }
}

/// A contender's node while it is being acquired: deleted when the acquire does not succeed.
struct Attempt {
    client: Client,
    parent: String,
    id: String,
    /// The node's full path, once known.
    node: Option<String>,
    /// A create may have been applied without us knowing the node (reply lost or in flight).
    unsure: bool,
    /// Whether the node must be deleted when this is dropped.
    armed: bool,
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Cancellation: the delete of a known node is queued right now (zk_proto queues a
        // call when it is made), so it is sent even without a runtime to drive a task.
        let node = self.node.take();
        let first = node.as_ref().map(|n| self.client.delete(n, None));
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (client, parent, id, unsure) = (
            self.client.clone(),
            std::mem::take(&mut self.parent),
            std::mem::take(&mut self.id),
            self.unsure,
        );
        handle.spawn(async move {
            // Delete the known node again only if the first delete's outcome is unknown.
            let node = match first {
                Some(first) => match first.await {
                    Err(e) if e.is_retryable() => node,
                    _ => None,
                },
                None => None,
            };
            cleanup(client, parent, id, node, unsure).await;
        });
    }
}

/// Deletes `node` (if known) and, when a create's outcome is unknown, every node of the
/// attempt `id`. Retries the retryable errors; gives up when the session is over (its
/// ephemeral nodes are then gone anyway).
async fn cleanup(client: Client, parent: String, id: String, node: Option<String>, unsure: bool) {
    if let Some(node) = node {
        delete_retrying(&client, &node).await;
    }
    if !unsure {
        return;
    }
    loop {
        match client.get_children(&parent).await {
            Ok(children) => {
                for child in children.iter().filter(|c| is_own_node(c, &id)) {
                    delete_retrying(&client, &format!("{parent}/{child}")).await;
                }
                return;
            }
            Err(e) if e.is_retryable() => continue,
            Err(_) => return,
        }
    }
}

/// Creates `path` and its missing ancestors as container nodes.
async fn ensure_parents(client: &Client, path: &str) -> Result<()> {
    let mut missing = vec![path.to_owned()];
    while let Some(path) = missing.last().cloned() {
        match client
            .create(&path, "", &CreateOptions::new(CreateMode::CONTAINER))
            .await
        {
            Ok(_) | Err(zk_proto::Error::NodeExists) => {
                missing.pop();
            }
            Err(zk_proto::Error::NoNode) => match path.rsplit_once('/') {
                Some((parent, _)) if !parent.is_empty() => missing.push(parent.to_owned()),
                _ => return Err(zk_proto::Error::NoNode.into()),
            },
            Err(e) if e.is_retryable() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The machinery shared by the three recipes: one queue of contenders under a parent node.
#[derive(Debug, Clone)]
struct Queue {
    client: Client,
    parent: String,
    kind: Kind,
}

impl Queue {
    fn new(client: Client, path: &str, kind: Kind) -> Self {
        let parent = path.trim_end_matches('/');
        let parent = if parent.is_empty() { "/" } else { parent };
        Queue {
            client,
            parent: parent.to_owned(),
            kind,
        }
    }

    fn child_path(&self, name: &str) -> String {
        if self.parent == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.parent)
        }
    }

    async fn acquire(&self, timeout: Option<Duration>) -> Result<LockGuard> {
        let mut attempt = Attempt {
            client: self.client.clone(),
            parent: self.parent.clone(),
            id: attempt_id(),
            node: None,
            unsure: false,
            armed: true,
        };
        let result = match timeout {
            None => self.run(&mut attempt).await,
            Some(timeout) => tokio::time::timeout(timeout, self.run(&mut attempt))
                .await
                .unwrap_or(Err(LockError::Timeout)),
        };
        match result {
            Ok(guard) => {
                attempt.armed = false;
                Ok(guard)
            }
            Err(e) => {
                // Not awaited: with no server reachable the cleanup would wait for the next
                // connection and the acquire would overrun its deadline. Dropping the armed
                // attempt queues the delete of a known node now (so every later call of this
                // client sees it gone) and leaves the rest to a background task.
                drop(attempt);
                Err(e)
            }
        }
    }

    /// Creates the node (recovering a lost reply) and waits for the lock.
    async fn run(&self, attempt: &mut Attempt) -> Result<LockGuard> {
        let prefix = self.child_path(&protected_name(&attempt.id, self.kind.name));
        let options = CreateOptions::new(CreateMode::EPHEMERAL_SEQUENTIAL);
        let watch_children = matches!(self.kind.rule, Rule::Permits(_));
        // 1. Create and list in one round trip.
        let (own, czxid, mut children) = loop {
            attempt.unsure = true;
            let create = self.client.create(&prefix, "", &options);
            let list = self.listing(watch_children);
            match create.await {
                Ok((path, stat)) => {
                    attempt.unsure = false;
                    attempt.node = Some(path.clone());
                    // The listing was executed after the create: it holds our node.
                    break (path, stat.czxid, list.await.ok());
                }
                Err(zk_proto::Error::NoNode) => {
                    // No parent (or its container was just removed): create it, retry.
                    attempt.unsure = false;
                    drop(list);
                    ensure_parents(&self.client, &self.parent).await?;
                }
                Err(e) if e.is_outcome_unknown() || e.is_retryable() => {
                    drop(list);
                    if let Some((path, czxid)) = self.find_own(attempt).await? {
                        attempt.unsure = false;
                        attempt.node = Some(path.clone());
                        break (path, czxid, None);
                    }
                    // Not applied: create again under the same id (a late duplicate would
                    // be found and deleted by `find_own`'s duplicate check below).
                }
                Err(e) => {
                    attempt.unsure = false;
                    return Err(e.into());
                }
            }
        };
        let own_name = own.rsplit('/').next().unwrap_or(&own).to_owned();
        // 2. Wait for our turn. The watch on the predecessor is kept across listings as long
        // as the predecessor stays the same.
        let mut predecessor: Option<(String, WatchFuture)> = None;
        loop {
            let (listing, children_watch) = match children.take() {
                Some(listing) => listing,
                None => match self.listing(watch_children).await {
                    Ok(listing) => listing,
                    Err(e) if e.is_retryable() => continue,
                    Err(e) => return Err(e.into()),
                },
            };
            self.drop_duplicates(&listing, &attempt.id, &own_name).await;
            match decide(self.kind, &listing, &own_name)? {
                Decision::Acquired => return Ok(self.guard(own, czxid)),
                Decision::Missing => return Err(LockError::Lost),
                Decision::WatchChildren => {
                    if let Some(watch) = children_watch {
                        watch.changed().await.map_err(LockError::from)?;
                    }
                }
                Decision::Watch { node, last, before } => {
                    // Both watches are requested back to back (one round trip).
                    let renew = predecessor
                        .as_ref()
                        .is_none_or(|(watched, _)| *watched != node);
                    let on_node = renew.then(|| self.watch_node(&node));
                    let on_before = before.as_ref().map(|before| self.watch_node(before));
                    if let Some(on_node) = on_node {
                        predecessor = match on_node.await? {
                            Watched::Armed(watch) => Some((node.clone(), watch)),
                            Watched::Gone if last => return Ok(self.guard(own, czxid)),
                            Watched::Gone | Watched::Retry => continue,
                        };
                    }
                    let Some((_, watch)) = predecessor.as_mut() else {
                        continue;
                    };
                    let ahead = match on_before {
                        Some(on_before) => match on_before.await? {
                            Watched::Armed(watch) => Some(watch),
                            // Gone already: list again at once.
                            Watched::Gone | Watched::Retry => continue,
                        },
                        None => None,
                    };
                    let ahead = async move {
                        match ahead {
                            Some(watch) => watch.await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        event = watch => {
                            predecessor = None;
                            if last && event?.event_type == EventType::NODE_DELETED {
                                return Ok(self.guard(own, czxid));
                            }
                        }
                        // The node before the predecessor changed: list again (the
                        // predecessor may now be the last node in the way). The predecessor's
                        // watch is kept.
                        event = ahead => {
                            event?;
                        }
                    }
                }
            }
        }
    }

    /// Sets a watch on the contender `node` (`getData` + watch, as Curator does). The request
    /// is queued when this is called.
    fn watch_node(&self, node: &str) -> Pin<Box<dyn Future<Output = Result<Watched>> + Send>> {
        let call = self.client.get_data_watch(&self.child_path(node));
        Box::pin(async move {
            match call.await {
                Ok((_, _, watch)) => Ok(Watched::Armed(Box::pin(watch.changed()))),
                Err(zk_proto::Error::NoNode) => Ok(Watched::Gone),
                Err(e) if e.is_retryable() => Ok(Watched::Retry),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// Lists the children (queued now), with a children watch for the semaphore.
    fn listing(
        &self,
        watch: bool,
    ) -> Pin<Box<dyn Future<Output = zk_proto::Result<Listing>> + Send + 'static>> {
        if watch {
            let list = self.client.get_children_watch(&self.parent);
            Box::pin(async move { list.await.map(|(c, w)| (c, Some(w))) })
        } else {
            let list = self.client.get_children(&self.parent);
            Box::pin(async move { list.await.map(|c| (c, None)) })
        }
    }

    /// After a create with an unknown outcome: looks for the attempt's node.
    async fn find_own(&self, attempt: &Attempt) -> Result<Option<(String, i64)>> {
        loop {
            // `sync` first, so that the server we list on has seen every committed create.
            let sync = self.client.sync(&self.parent);
            let list = self.client.get_children(&self.parent);
            let _ = sync.await;
            let mut own: Vec<String> = match list.await {
                Ok(children) => children
                    .into_iter()
                    .filter(|c| is_own_node(c, &attempt.id))
                    .collect(),
                Err(zk_proto::Error::NoNode) => return Ok(None),
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e.into()),
            };
            sort_by_sequence(&mut own);
            let Some(first) = own.first() else {
                return Ok(None);
            };
            let path = self.child_path(first);
            match self.client.get_data(&path).await {
                Ok((_, stat)) => return Ok(Some((path, stat.czxid))),
                Err(zk_proto::Error::NoNode) => return Ok(None),
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Deletes any other node of the same attempt (a create applied twice after a lost reply).
    async fn drop_duplicates(&self, listing: &[String], id: &str, own: &str) {
        for child in listing.iter().filter(|c| is_own_node(c, id) && *c != own) {
            delete_retrying(&self.client, &self.child_path(child)).await;
        }
    }

    fn guard(&self, node: String, czxid: i64) -> LockGuard {
        LockGuard {
            client: self.client.clone(),
            node: Some(node),
            czxid,
            states: self.client.state_watcher(),
        }
    }
}

/// Whether a held lock can still be trusted, from the session's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Validity {
    /// Connected: the lock is held.
    Held,
    /// The connection is lost (or the client is on a read-only server): the session, and
    /// the lock with it, may still be alive, or may expire at any moment. Stop the work
    /// that needs the lock until it is [`Held`](Validity::Held) again.
    Suspended,
    /// The session is over (expired, closed, authentication failed): the lock is gone.
    Lost,
}

impl Validity {
    fn of(state: SessionState) -> Validity {
        match state {
            SessionState::Connected => Validity::Held,
            SessionState::Expired | SessionState::AuthFailed | SessionState::Closed => {
                Validity::Lost
            }
            _ => Validity::Suspended,
        }
    }
}

/// A held lock (or read lock, write lock, semaphore lease).
///
/// Released by [`release`](LockGuard::release), or when dropped: the delete is then queued at
/// once (`zk_proto` queues a call when it is made) and retried in a background task if its
/// connection drops (when a tokio runtime is available).
///
/// # Session loss
///
/// The lock is an ephemeral node: it lives as long as the session. While the client is
/// disconnected, the session may expire on the server without the client knowing yet, so
/// [`validity`](LockGuard::validity) is [`Validity::Suspended`]; after expiry it is
/// [`Validity::Lost`]. Await [`lost`](LockGuard::lost) next to the protected work to stop it,
/// and pass the [`fencing_token`](LockGuard::fencing_token) to the protected resource so that
/// it can refuse a late writer.
#[derive(Debug)]
#[must_use = "the lock is released when the guard is dropped"]
pub struct LockGuard {
    client: Client,
    node: Option<String>,
    czxid: i64,
    states: watch::Receiver<SessionState>,
}

impl LockGuard {
    /// The full path of the lock node.
    pub fn node(&self) -> &str {
        self.node.as_deref().unwrap_or_default()
    }

    /// The node's sequence number (the holders' order).
    pub fn sequence(&self) -> Option<i64> {
        sequence_of(self.node())
    }

    /// A fencing token: the zxid that created the lock node. It strictly increases from one
    /// holder of the lock to the next (the nodes are granted in creation order).
    pub fn fencing_token(&self) -> i64 {
        self.czxid
    }

    /// Whether the lock can still be trusted (see [`Validity`]).
    pub fn validity(&self) -> Validity {
        Validity::of(*self.states.borrow())
    }

    /// Whether the lock is held and the session connected.
    pub fn is_valid(&self) -> bool {
        self.validity() == Validity::Held
    }

    /// Resolves when the lock may no longer be held: the session is
    /// [`Suspended`](Validity::Suspended) (disconnected; it may come back) or
    /// [`Lost`](Validity::Lost). Returns that validity at once if it is not held now.
    ///
    /// # Errors
    ///
    /// None: the returned validity is the answer.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only watches the session state.
    ///
    /// # Session loss
    ///
    /// This is how session loss is reported.
    pub async fn lost(&self) -> Validity {
        let mut states = self.states.clone();
        match states
            .wait_for(|s| Validity::of(*s) != Validity::Held)
            .await
        {
            Ok(state) => Validity::of(*state),
            // The client is gone: so is the session.
            Err(_) => Validity::Lost,
        }
    }

    /// Releases the lock (deletes its node) and waits for it.
    ///
    /// # Errors
    ///
    /// [`LockError::Lost`] when the session ended (the lock was lost before the release, and
    /// the work it protected may have overlapped with another holder's), or when the node was
    /// already deleted by someone else; other ZooKeeper errors as they come.
    ///
    /// # Cancellation safety
    ///
    /// The delete is queued when this is called; dropping the future leaves it to be sent
    /// (the guard is consumed either way).
    ///
    /// # Session loss
    ///
    /// Retried across reconnects until the session ends (then `Lost`).
    pub async fn release(mut self) -> Result<()> {
        let Some(node) = self.node.take() else {
            return Ok(());
        };
        // After a delete whose outcome is unknown (connection lost before its reply), a
        // missing node means that delete was applied: released, not lost.
        let mut maybe_deleted = false;
        loop {
            match self.client.delete(&node, None).await {
                Ok(()) => return Ok(()),
                Err(e) if e.is_retryable() => {
                    maybe_deleted |= e.is_outcome_unknown();
                    continue;
                }
                Err(zk_proto::Error::NoNode) if maybe_deleted => return Ok(()),
                Err(zk_proto::Error::NoNode) => return Err(LockError::Lost),
                Err(e) if e.is_terminal() => return Err(LockError::Lost),
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(node) = self.node.take() else {
            return;
        };
        withdraw(&self.client, node);
    }
}

/// A distributed mutex, compatible with Apache Curator's `InterProcessMutex` on the same
/// path: `<path>/_c_<uuid>-lock-<seq>` nodes in Curator's order (every child of the path,
/// sorted by the text after `lock-`); the first holds the lock.
///
/// Not re-entrant: a second acquire from the same process waits behind the first like any
/// other contender. The lock's parent node is created as a container node when missing.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::lock::Result<()> {
/// let lock = zk_recipes::lock::Lock::new(client, "/locks/jobs");
/// let guard = lock.acquire().await?;
/// tokio::select! {
///     _ = guard.lost() => { /* stop: the lock may be gone */ }
///     _ = async { /* the protected work, fenced with guard.fencing_token() */ } => {}
/// }
/// guard.release().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Lock {
    queue: Queue,
}

impl Lock {
    /// A mutex under `path` (the parent of the contenders' nodes).
    pub fn new(client: Client, path: &str) -> Lock {
        Lock {
            queue: Queue::new(client, path, MUTEX),
        }
    }

    /// The lock's parent path.
    pub fn path(&self) -> &str {
        &self.queue.parent
    }

    /// Waits for the lock.
    ///
    /// Uncontended, this is one round trip (create and listing sent back to back).
    ///
    /// # Errors
    ///
    /// [`LockError::Zk`] with the session's end ([`zk_proto::Error::SessionExpired`], ...) or
    /// another refusal (ACL); [`LockError::Lost`] when the contender's node was deleted by
    /// someone else; [`LockError::SequenceWrapped`]. Before the error is returned, the delete of
    /// the contender's node is queued (so any later call of this client sees it gone); a node
    /// whose name is not known yet (its create's reply was lost) is found and deleted by a
    /// background task. Nothing waits for a server: the error comes at once even when none
    /// is reachable.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future withdraws from the queue: the delete of the node is queued at once
    /// from `Drop` (and sent even if nothing polls it), and when the node's name is not known
    /// yet (create in flight or its reply lost) a background task finds it by its attempt id
    /// and deletes it (this needs a tokio runtime; without one the node stays until the
    /// session ends).
    ///
    /// # Session loss
    ///
    /// A disconnection while waiting is survived (watches are re-registered, a lost create
    /// reply is recovered). Session expiry fails the acquire.
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.queue.acquire(None).await
    }

    /// As [`acquire`](Lock::acquire), giving up after `timeout`.
    ///
    /// # Errors
    ///
    /// [`LockError::Timeout`] after `timeout`, even with no server reachable (the node's
    /// delete is queued before it returns, as for the other errors), and
    /// those of [`acquire`](Lock::acquire).
    ///
    /// # Cancellation safety
    ///
    /// As [`acquire`](Lock::acquire).
    ///
    /// # Session loss
    ///
    /// As [`acquire`](Lock::acquire).
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.queue.acquire(Some(timeout)).await
    }
}

/// A distributed read-write lock, compatible with Apache Curator's
/// `InterProcessReadWriteLock` on the same path: `_c_<uuid>-__READ__<seq>` and
/// `_c_<uuid>-__WRIT__<seq>` nodes under one path, in Curator's order (every child of the
/// path, sorted by the text after `__READ__` / `__WRIT__`).
///
/// A reader holds the lock when no write node (a child whose name contains `__WRIT__`, of
/// either library) is before it, so readers share the lock and a reader queued behind a
/// writer waits for it (writers do not starve); a writer holds it when it is first among all
/// the children. Grants are in node order. Unlike Curator's, the lock is not re-entrant (a
/// holder of the write lock does not get the read lock for free).
#[derive(Debug, Clone)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl ReadWriteLock {
    /// A read-write lock under `path`.
    pub fn new(client: Client, path: &str) -> ReadWriteLock {
        ReadWriteLock {
            read: Lock {
                queue: Queue::new(client.clone(), path, READ),
            },
            write: Lock {
                queue: Queue::new(client, path, WRITE),
            },
        }
    }

    /// The shared side: [`Lock::acquire`] on it takes a read lock.
    pub fn read_lock(&self) -> &Lock {
        &self.read
    }

    /// The exclusive side: [`Lock::acquire`] on it takes the write lock.
    pub fn write_lock(&self) -> &Lock {
        &self.write
    }
}

/// A counting semaphore: at most `permits` leases at a time, granted in node order
/// (`<path>/_c_<uuid>-lease-<seq>`; the first `permits` nodes hold a lease).
///
/// **Not compatible with Apache Curator**: this is this crate's own design, simpler than
/// Curator's `InterProcessSemaphoreV2` (a lock plus lease nodes, under `locks/` and `leases/`)
/// and `InterProcessSemaphoreMutex`; a Curator semaphore and this one on the same path do not
/// see each other. All contenders must agree on `permits`. A waiter watches the children (so
/// every release wakes every waiter: fine for the small queues semaphores usually have).
#[derive(Debug, Clone)]
pub struct Semaphore {
    lock: Lock,
}

impl Semaphore {
    /// A semaphore with `permits` leases (at least 1) under `path`.
    pub fn new(client: Client, path: &str, permits: usize) -> Semaphore {
        let kind = Kind {
            name: LEASE_NAME,
            rule: Rule::Permits(permits.max(1)),
            sort_names: &[LEASE_NAME],
            every_child: false,
        };
        Semaphore {
            lock: Lock {
                queue: Queue::new(client, path, kind),
            },
        }
    }

    /// Waits for a lease.
    ///
    /// # Errors
    ///
    /// As [`Lock::acquire`].
    ///
    /// # Cancellation safety
    ///
    /// As [`Lock::acquire`].
    ///
    /// # Session loss
    ///
    /// As [`Lock::acquire`].
    pub async fn acquire(&self) -> Result<LockGuard> {
        self.lock.acquire().await
    }

    /// Waits for a lease at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`Lock::acquire_timeout`].
    ///
    /// # Cancellation safety
    ///
    /// As [`Lock::acquire`].
    ///
    /// # Session loss
    ///
    /// As [`Lock::acquire`].
    pub async fn acquire_timeout(&self, timeout: Duration) -> Result<LockGuard> {
        self.lock.acquire_timeout(timeout).await
    }
}

/// The Curator programs' runner of the interop tests, for the ordering oracle below.
#[cfg(test)]
#[path = "../tests/curator_support/java.rs"]
mod curator_java;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn mutex_waits_for_its_immediate_predecessor() {
        let children = names(&[
            "_c_b-lock-0000000003",
            "_c_a-lock-0000000001",
            "_c_c-lock-0000000002",
            "other",
        ]);
        assert_eq!(
            decide(MUTEX, &children, "_c_a-lock-0000000001"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            decide(MUTEX, &children, "_c_c-lock-0000000002"),
            Ok(Decision::Watch {
                node: "_c_a-lock-0000000001".into(),
                last: true,
                before: None,
            })
        );
        assert_eq!(
            decide(MUTEX, &children, "_c_b-lock-0000000003"),
            Ok(Decision::Watch {
                node: "_c_c-lock-0000000002".into(),
                last: false,
                before: Some("_c_a-lock-0000000001".into()),
            })
        );
        assert_eq!(
            decide(MUTEX, &children, "_c_d-lock-0000000004"),
            Ok(Decision::Missing)
        );
    }

    #[test]
    fn wrapped_sequences_are_refused() {
        for wrapped in [
            "_c_b-lock--2147483648",
            "_c_b-lock--000000005",
            "lock-4294967295",
        ] {
            let children = names(&["_c_a-lock-2147483647", wrapped]);
            assert!(
                matches!(
                    decide(MUTEX, &children, "_c_a-lock-2147483647"),
                    Err(LockError::SequenceWrapped { .. })
                ),
                "{wrapped}"
            );
        }
        // A name without a sequence number is not a contender.
        let children = names(&["_c_a-lock-0000000002", "my-lock-notes"]);
        assert_eq!(
            decide(MUTEX, &children, "_c_a-lock-0000000002"),
            Ok(Decision::Acquired)
        );
    }

    #[test]
    fn readers_wait_only_for_writers() {
        let children = names(&[
            "_c_a-__READ__0000000001",
            "_c_b-__WRIT__0000000002",
            "_c_c-__READ__0000000003",
            "_c_d-__WRIT__0000000004",
            "_c_e-__READ__0000000005",
        ]);
        assert_eq!(
            decide(READ, &children, "_c_a-__READ__0000000001"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            decide(WRITE, &children, "_c_b-__WRIT__0000000002"),
            Ok(Decision::Watch {
                node: "_c_a-__READ__0000000001".into(),
                last: true,
                before: None,
            })
        );
        assert_eq!(
            decide(READ, &children, "_c_c-__READ__0000000003"),
            Ok(Decision::Watch {
                node: "_c_b-__WRIT__0000000002".into(),
                last: true,
                before: None,
            })
        );
        assert_eq!(
            decide(READ, &children, "_c_e-__READ__0000000005"),
            Ok(Decision::Watch {
                node: "_c_d-__WRIT__0000000004".into(),
                last: false,
                before: Some("_c_c-__READ__0000000003".into()),
            })
        );
    }

    /// A node name as Curator 5's `withProtection()` creates it: `_c_<uuid>-<name><seq>`.
    fn curator(uuid_tail: u32, name: &str, seq: u32) -> String {
        format!("_c_2f1c4a9e-6b1d-4f3a-9c2e-{uuid_tail:012x}-{name}{seq:010}")
    }

    fn watch(node: &str, last: bool, before: Option<&str>) -> Result<Decision> {
        Ok(Decision::Watch {
            node: node.to_owned(),
            last,
            before: before.map(str::to_owned),
        })
    }

    #[test]
    fn node_names_are_curators() {
        // InterProcessMutex.LOCK_NAME, InterProcessReadWriteLock.READ_LOCK_NAME and
        // WRITE_LOCK_NAME (Curator 5.4).
        assert_eq!(MUTEX_NAME, "lock-");
        assert_eq!(READ_NAME, "__READ__");
        assert_eq!(WRITE_NAME, "__WRIT__");
    }

    #[test]
    fn a_curator_writer_blocks_our_readers_and_writers() {
        let (reader, writer) = (curator(1, "__READ__", 1), curator(2, "__WRIT__", 2));
        let (our_reader, our_writer) = (curator(3, READ_NAME, 3), curator(4, WRITE_NAME, 4));
        let children = vec![
            our_writer.clone(),
            reader.clone(),
            our_reader.clone(),
            writer.clone(),
        ];
        // A reader is blocked by any writer before it (InterProcessReadWriteLock's read
        // predicate), whichever library created it.
        assert_eq!(
            decide(READ, &children, &our_reader),
            watch(&writer, true, None)
        );
        // A writer holds only at index 0 of all the sorted children.
        assert_eq!(
            decide(WRITE, &children, &our_writer),
            watch(&our_reader, false, Some(&writer))
        );
        assert_eq!(decide(READ, &children, &reader), Ok(Decision::Acquired));
    }

    #[test]
    fn our_writer_blocks_curator_readers_queued_after_it() {
        // Curator sorts by the text after `__READ__` / `__WRIT__`: our writer must sort by its
        // sequence number among Curator's nodes, so that a Curator reader after it waits.
        let our_writer = curator(1, WRITE_NAME, 7);
        let reader = curator(2, "__READ__", 8);
        let mut children = vec![reader.clone(), our_writer.clone()];
        sort_like_curator(&mut children, &[READ_NAME, WRITE_NAME]);
        assert_eq!(children, [our_writer.clone(), reader.clone()]);
        assert_eq!(
            decide(READ, &children, &reader),
            watch(&our_writer, true, None)
        );
    }

    #[test]
    fn every_child_takes_part_in_curators_order() {
        // LockInternals.getSortedChildren sorts every child by the text after the last
        // occurrence of the lock name (the whole name when it has none), as Java strings.
        let (a, b) = (curator(1, "lock-", 5), "lock-0000000003".to_owned());
        let children = names(&["zz-notes", &a, "0000000004", &b]);
        let mut sorted = children.clone();
        sort_like_curator(&mut sorted, &[MUTEX_NAME]);
        assert_eq!(sorted, names(&[&b, "0000000004", &a, "zz-notes"]));
        // The foreign "0000000004" sorts before `a` and is in its way, as for Curator.
        assert_eq!(
            decide(MUTEX, &children, &a),
            watch("0000000004", false, Some(&b))
        );
        // A child named just "lock-" sorts first (empty key) and blocks everyone.
        let children = names(&[&a, "lock-"]);
        assert_eq!(decide(MUTEX, &children, &a), watch("lock-", true, None));
    }

    #[test]
    fn read_write_order_strips_both_names() {
        // SortingLockInternalsDriver strips `__READ__`, then `__WRIT__`: readers and writers
        // sort together by number; the old `__WRITE__` name matches neither and sorts after
        // every number, and it is not a writer.
        let legacy = curator(1, "__WRITE__", 1);
        let reader = curator(2, READ_NAME, 2);
        let writer = curator(3, WRITE_NAME, 3);
        let foreign = "0000000000".to_owned();
        let children = vec![
            legacy.clone(),
            writer.clone(),
            reader.clone(),
            foreign.clone(),
        ];
        let mut sorted = children.clone();
        sort_like_curator(&mut sorted, &[READ_NAME, WRITE_NAME]);
        assert_eq!(
            sorted,
            [
                foreign.clone(),
                reader.clone(),
                writer.clone(),
                legacy.clone()
            ]
        );
        // The foreign node is not a writer: the reader holds; the writer waits for both.
        assert_eq!(decide(READ, &children, &reader), Ok(Decision::Acquired));
        assert_eq!(
            decide(WRITE, &children, &writer),
            watch(&reader, false, Some(&foreign))
        );
    }

    #[test]
    fn semaphore_grants_the_first_permits() {
        let kind = Kind {
            name: LEASE_NAME,
            rule: Rule::Permits(2),
            sort_names: &[LEASE_NAME],
            every_child: false,
        };
        let children = names(&[
            "_c_a-lease-0000000001",
            "_c_b-lease-0000000002",
            "_c_c-lease-0000000003",
        ]);
        assert_eq!(
            decide(kind, &children, "_c_b-lease-0000000002"),
            Ok(Decision::Acquired)
        );
        assert_eq!(
            decide(kind, &children, "_c_c-lease-0000000003"),
            Ok(Decision::WatchChildren)
        );
    }

    /// One random listing for the oracle: Curator's and our nodes of every recipe, with and
    /// without the protected prefix, and foreign children sorting before, between and after
    /// them. Returns the own node of `recipe` and the children (distinct names).
    fn random_listing(rng: &mut fastrand::Rng, recipe: &str) -> (String, Vec<String>) {
        const FOREIGN: &[&str] = &[
            "junk",
            "lock-",
            "__READ__",
            "__WRIT__",
            "latch-",
            "0",
            "0000000004",
            "00000000005",
            "-000000003",
            "9",
            "leader",
            "Zebra",
            "my-lock-notes",
            "x__WRIT__y",
            "\u{e9}-lock-9",
            "\u{1F600}",
            "\u{FFFD}",
        ];
        let own_name = match recipe {
            "mutex" => MUTEX_NAME,
            "read" => READ_NAME,
            "write" => WRITE_NAME,
            _ => crate::election::LATCH_NAME,
        };
        let node_names = [
            MUTEX_NAME,
            READ_NAME,
            WRITE_NAME,
            crate::election::LATCH_NAME,
            "__WRITE__",
        ];
        let mut seqs = std::collections::HashSet::new();
        let mut node = |rng: &mut fastrand::Rng, name: &str| {
            let seq = loop {
                // Small numbers too, so that the foreign digit names fall in between.
                let seq = if rng.bool() {
                    rng.u32(0..20)
                } else {
                    rng.u32(0..=i32::MAX as u32)
                };
                if seqs.insert(seq) {
                    break seq;
                }
            };
            if rng.u8(0..4) == 0 {
                format!("{name}{seq:010}")
            } else {
                format!("{}{seq:010}", protected_name(&attempt_id(), name))
            }
        };
        let own = node(rng, own_name);
        let mut children = vec![own.clone()];
        for _ in 0..rng.usize(0..12) {
            let child = if rng.u8(0..4) == 0 {
                FOREIGN[rng.usize(..FOREIGN.len())].to_owned()
            } else if rng.bool() {
                node(rng, own_name)
            } else {
                let name = node_names[rng.usize(..node_names.len())];
                node(rng, name)
            };
            if !children.contains(&child) {
                children.push(child);
            }
        }
        rng.shuffle(&mut children);
        (own, children)
    }

    /// The order and the grants of random listings equal those of Curator 5's own code
    /// (`tests/curator/CuratorOrder.java` runs `LockInternals.getSortedChildren` and the
    /// drivers' `getsTheLock` on the same listings): for the mutex, both sides of the
    /// read-write lock and the leader latch.
    #[test]
    fn ordering_and_grants_equal_curators() {
        use std::io::Write as _;

        const CASES: usize = 600;
        let mut rng = fastrand::Rng::with_seed(0x5eed_c0de);
        let recipes = ["mutex", "read", "write", "latch"];
        let cases: Vec<(&str, String, Vec<String>)> = (0..CASES)
            .map(|i| {
                let recipe = recipes[i % recipes.len()];
                let (own, children) = random_listing(&mut rng, recipe);
                (recipe, own, children)
            })
            .collect();
        let mut input = String::new();
        for (recipe, own, children) in &cases {
            input.push_str(&format!("{recipe}\t{own}\t{}\n", children.join("\t")));
        }
        let mut java = curator_java::curator_program("CuratorOrder")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start java CuratorOrder");
        java.stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write the cases");
        let output = java.wait_with_output().expect("java output");
        assert!(output.status.success(), "java CuratorOrder failed");
        let stdout = String::from_utf8(output.stdout).expect("utf-8");
        let replies: Vec<&str> = stdout.lines().collect();
        assert_eq!(replies.len(), CASES);

        for ((recipe, own, children), reply) in cases.iter().zip(replies) {
            let (sorted, verdict) = reply.split_once("\t|\t").expect("reply");
            let curator_order: Vec<&str> = sorted.split('\t').collect();
            let (holds, watch) = verdict.split_once('\t').expect("verdict");
            let holds = holds == "true";
            let context = format!("{recipe} {own} in {children:?}");
            if *recipe == "latch" {
                let mut ours = children.clone();
                sort_like_curator(&mut ours, &[crate::election::LATCH_NAME]);
                assert_eq!(ours, curator_order, "latch order: {context}");
                continue;
            }
            let kind = match *recipe {
                "mutex" => MUTEX,
                "read" => READ,
                _ => WRITE,
            };
            let ours = queue_of(kind, children).expect("no wrapped sequence");
            assert_eq!(ours, curator_order, "order: {context}");
            match decide(kind, children, own).expect("decide") {
                Decision::Acquired => assert!(holds, "we hold, Curator does not: {context}"),
                Decision::Watch { node, .. } => {
                    assert!(!holds, "Curator holds, we wait: {context}");
                    if kind.rule == Rule::Exclusive {
                        // Both watch the immediate predecessor.
                        assert_eq!(node, watch, "watched node: {context}");
                    } else {
                        // We watch the nearest writer before us, Curator the first one.
                        assert!(node.contains(WRITE_NAME) && watch.contains(WRITE_NAME));
                    }
                }
                other => panic!("{other:?}: {context}"),
            }
        }
    }
}
