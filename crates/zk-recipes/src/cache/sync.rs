//! The cache's task: one persistent (recursive) watch, and pipelined reads whose replies are
//! the only thing that changes the cached tree.
//!
//! Every change comes from a read reply, applied in the order the replies come (the order
//! the server executed the reads): each applied reply is at least as new as everything
//! applied before it. A watch event only queues a read of its node, so whatever the order
//! in which events and replies are taken, the last read of a node comes after its last
//! change. A traversal (the first load, and the reconciliation after a reconnection, an
//! overflow or a new session) reads every node again: a node's data with its Stat, then its
//! child list when the Stat says it has children; a child list removes the cached children it
//! does not name. See `docs/recipes-cache.md` for the argument in full.
//!
//! A traversal reads sibling nodes in batches (one `multiRead` of several getData): the server
//! runs a batch's reads one after the other in one request, so a batch is applied as that
//! many replies in a row and the argument above holds unchanged. What a batch saves is the
//! server's per-request pipeline, which bounds a load of one request per node.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLockWriteGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::{mpsc, oneshot, watch};
use zk_proto::jute::KeeperState;
use zk_proto::{
    AddWatchMode, Client, Error, EventType, MultiOperation, MultiReadItem, PersistentWatcher,
    ProtocolError, SessionState, Stat, StringList, WatchedEvent,
};

use super::scope::Scope;
use super::tree::{Applied, CacheEvent, Map, Writer, parent_path};
use super::{Keep, Shared, Status};
use crate::barrier::join_path;

/// A caller of [`TreeCache::sync`](super::TreeCache::sync), answered once the cache has
/// caught up.
pub(crate) type SyncWaiter = oneshot::Sender<Result<(), Error>>;

/// How many reads the task has in flight, and how many nodes one of them may read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadLimits {
    /// The most reads in flight.
    pub(crate) max_in_flight: usize,
    /// The most getData reads in one batch (1: no batches).
    pub(crate) read_batch: usize,
}

/// A read the task makes.
enum Read {
    /// A node's data (or Stat alone) and Stat. In a traversal (`sweep`), its child list is
    /// read next whenever it has children; otherwise only when the node is new.
    Data {
        path: String,
        sweep: bool,
        keep: Keep,
    },
    /// The data and Stat of several nodes of a traversal, in one `multiRead` (each as
    /// `Data { sweep: true, keep: Keep::Data }`).
    DataBatch(Vec<String>),
    /// A node's child list. In a traversal every child is read; otherwise the new ones.
    Children { path: String, sweep: bool },
    /// A caller's sync: first a round trip to the server (`sync`), after which the events of
    /// every change applied before are in.
    SyncCall(Vec<SyncWaiter>),
    /// Then the reads those events queued: reached when every read before it is applied.
    SyncMarker(Vec<SyncWaiter>),
}

/// A read's reply.
enum Reply {
    /// Data (when kept) and Stat; `None`: no such node.
    Data(Result<Option<(Option<Bytes>, Stat)>, Error>),
    /// One result per read of a batch, in its order.
    Batch(Result<Vec<zk_proto::Result<MultiReadItem>>, Error>),
    /// Child names and the node's Stat; `None`: no such node.
    Children(Result<Option<(StringList, Stat)>, Error>),
    Sync(Result<(), Error>),
    Marker,
}

type ReplyFuture = Pin<Box<dyn Future<Output = Reply> + Send>>;

/// What a batch's reply may take, by the largest data seen so far, at most: a sixteenth of
/// the client's frame limit (64 KiB of the default 1 MiB), so that a batch overflows the limit
/// only when one of its nodes is many times larger than every node read before.
const BATCH_REPLY_BUDGET: usize = 64 * 1024;

/// A getData result's bytes in a `multiRead` reply besides its data: the result's header,
/// the data's length and the Stat.
const BATCH_ITEM_OVERHEAD: usize = 96;

/// The capacity the read queue keeps once it is drained: a burst of events fits without growing
/// again.
const DRAINED_QUEUE_CAPACITY: usize = 64;

/// A read sent, in the order sent (which is the order of the replies).
struct InFlight {
    read: Read,
    generation: u64,
    reply: ReplyFuture,
}

/// What ended the watch, to be handled before anything else.
enum Rewatch {
    /// The watch is gone (overflow, removed by someone, the session expired on a client
    /// that renews sessions): add it again and reconcile.
    Again,
    /// The session ended.
    Ended(Error),
}

pub(crate) struct Task {
    client: Client,
    scope: Scope,
    max_in_flight: usize,
    /// The most getData reads in one batch (1: no batches).
    read_batch: usize,
    /// The largest data length read so far: a batch's size is bounded by it.
    largest_data: usize,
    shared: Arc<Shared>,
    status: watch::Sender<Status>,
    syncs: mpsc::UnboundedReceiver<SyncWaiter>,
    /// Reads to send, with their traversal's generation (0: none).
    queue: VecDeque<(Read, u64)>,
    in_flight: VecDeque<InFlight>,
    /// The current traversal (0 before the first).
    generation: u64,
    /// A traversal is under way.
    traversing: bool,
    /// Reads of the current traversal not yet applied.
    outstanding: usize,
    /// A read failed (its outcome unknown): a traversal must run again.
    need_traversal: bool,
    /// The connection is up, as last told.
    link_up: bool,
    /// A traversal started since the connection was last lost (its reads run on the next
    /// connection, after the watch is re-armed, so a reconnection needs no other).
    traversal_since_lost: bool,
    initialized: bool,
    /// Syncs waiting for a traversal to complete.
    parked: Vec<SyncWaiter>,
    /// Set while applying replies: ends the cache.
    fatal: Option<Error>,
    rewatch: Option<Rewatch>,
    /// The events of the change being applied.
    out: Vec<CacheEvent>,
}

impl Task {
    pub(crate) fn new(
        client: Client,
        scope: Scope,
        limits: ReadLimits,
        shared: Arc<Shared>,
        status: watch::Sender<Status>,
        syncs: mpsc::UnboundedReceiver<SyncWaiter>,
    ) -> Task {
        Task {
            client,
            scope,
            max_in_flight: limits.max_in_flight,
            read_batch: limits.read_batch,
            largest_data: 0,
            shared,
            status,
            syncs,
            queue: VecDeque::new(),
            in_flight: VecDeque::new(),
            generation: 0,
            traversing: false,
            outstanding: 0,
            need_traversal: false,
            link_up: true,
            traversal_since_lost: false,
            initialized: false,
            parked: Vec::new(),
            fatal: None,
            rewatch: None,
            out: Vec::new(),
        }
    }

    pub(crate) async fn run(mut self) {
        let error = self.serve().await;
        tracing::debug!(root = self.scope.root(), %error, "tree cache ended");
        // Told before the subscribers' streams end, so that a subscriber that sees its end
        // finds the reason in `TreeCache::ended`.
        self.status.send_modify(|s| s.ended = Some(error.clone()));
        *self.shared.end() = Some(error.clone());
        self.shared.subscribers().clear();
        let waiters = self.queue.drain(..).map(|(read, _)| read);
        let waiters = waiters.chain(self.in_flight.drain(..).map(|f| f.read));
        for read in waiters {
            if let Read::SyncCall(w) | Read::SyncMarker(w) = read {
                answer(w, Err(error.clone()));
            }
        }
        answer(std::mem::take(&mut self.parked), Err(error.clone()));
        self.syncs.close();
        while let Ok(waiter) = self.syncs.try_recv() {
            let _ = waiter.send(Err(error.clone()));
        }
    }

    /// Runs the cache until it ends; returns why.
    async fn serve(&mut self) -> Error {
        let mut states = self.client.state_watcher();
        let mut watcher = match self.add_watch(&mut states).await {
            Ok(watcher) => watcher,
            Err(error) => return error,
        };
        self.start_traversal();
        loop {
            if let Some(error) = self.fatal.take() {
                return error;
            }
            if let Some(rewatch) = self.rewatch.take() {
                // The old watch goes first: dropping it queues its removal before the new one.
                drop(watcher);
                // The watch ended with the client's last session (closed, authentication
                // failed, expired on a client that does not renew sessions): so does the
                // cache.
                if let Rewatch::Ended(error) = rewatch {
                    return error;
                }
                watcher = match self.add_watch(&mut states).await {
                    Ok(watcher) => watcher,
                    Err(error) => return error,
                };
                self.start_traversal();
            }
            if self.need_traversal && self.link_up && !self.traversing {
                self.start_traversal();
            }
            if self.traversing && self.outstanding == 0 {
                self.traversal_done();
            }
            self.send_reads();
            tokio::select! {
                biased;
                reply = front(&mut self.in_flight), if !self.in_flight.is_empty() => {
                    let Some(sent) = self.in_flight.pop_front() else { continue };
                    // Events already buffered go first (they only queue reads).
                    self.drain(&mut watcher);
                    self.apply(sent.read, sent.generation, reply);
                }
                event = watcher.next() => match event {
                    Ok(event) => self.on_event(&event),
                    Err(error) => self.on_watch_error(error),
                },
                Some(waiter) = self.syncs.recv() => {
                    self.queue.push_back((Read::SyncCall(vec![waiter]), 0));
                }
            }
        }
    }

    /// Adds the watch, waiting for a connection while the outcome is unknown.
    async fn add_watch(
        &mut self,
        states: &mut watch::Receiver<SessionState>,
    ) -> Result<PersistentWatcher, Error> {
        loop {
            // Recursive at every depth, events below the depth dropped unread: a 3.8 server
            // keeps one watch mode per session and path, so a plain persistent watch added
            // after a recursive one on the same root (another cache of the same client) would
            // end the recursive one's events below the root (docs/client.md).
            let mode = AddWatchMode::PERSISTENT_RECURSIVE;
            match self.client.add_watch(self.scope.root(), mode).await {
                Ok(watcher) => {
                    self.link_up = true;
                    return Ok(watcher);
                }
                Err(error) if error.is_retryable() || self.renewed_after(&error) => {
                    if states.wait_for(|s| s.is_connected()).await.is_err() {
                        return Err(Error::Closed);
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Whether the client goes on with a new session after `error`: the watch is added
    /// again in it, and a traversal reconciles the cache with the tree as it is then.
    fn renewed_after(&self, error: &Error) -> bool {
        *error == Error::SessionExpired && self.client.renews_expired_sessions()
    }

    fn on_watch_error(&mut self, error: Error) {
        self.rewatch = Some(match error {
            Error::WatchOverflow { .. } => Rewatch::Again,
            error if self.renewed_after(&error) => {
                // Nothing is heard of the tree until the watch is added in the new session.
                self.lost();
                Rewatch::Again
            }
            error => Rewatch::Ended(error),
        });
    }

    fn lost(&mut self) {
        self.link_up = false;
        self.traversal_since_lost = false;
    }

    fn restored(&mut self) {
        self.link_up = true;
        if !self.traversal_since_lost || self.need_traversal {
            self.start_traversal();
        }
    }

    fn on_event(&mut self, event: &WatchedEvent) {
        match event.event_type {
            EventType::NONE => match event.state {
                // The client tells the watch when the connection is lost and when the next one
                // of the session is ready (watch re-armed): events may have been missed.
                KeeperState::DISCONNECTED => self.lost(),
                KeeperState::SYNC_CONNECTED | KeeperState::CONNECTED_READ_ONLY => self.restored(),
                _ => {}
            },
            EventType::NODE_CREATED | EventType::NODE_DELETED | EventType::NODE_DATA_CHANGED => {
                let keep = self.scope.keep_event(&event.path);
                if keep != Keep::Nothing {
                    let read = Read::Data {
                        path: event.path.clone(),
                        sweep: false,
                        keep,
                    };
                    self.queue.push_back((read, 0));
                }
            }
            EventType::PERSISTENT_WATCH_REMOVED => self.rewatch = Some(Rewatch::Again),
            _ => {}
        }
    }

    /// Takes the events already buffered in the watcher (connection markers included),
    /// without waiting.
    fn drain(&mut self, watcher: &mut PersistentWatcher) {
        let mut cx = Context::from_waker(Waker::noop());
        while self.rewatch.is_none() {
            match Pin::new(&mut *watcher).poll_next(&mut cx) {
                Poll::Ready(Some(Ok(event))) => self.on_event(&event),
                Poll::Ready(Some(Err(error))) => self.on_watch_error(error),
                Poll::Ready(None) => self.on_watch_error(Error::Closed),
                Poll::Pending => break,
            }
        }
    }

    /// Starts reading the whole subtree again; reads queued and not sent are dropped (the
    /// traversal reads their nodes after them).
    fn start_traversal(&mut self) {
        self.generation += 1;
        self.traversing = true;
        self.need_traversal = false;
        self.traversal_since_lost = true;
        self.outstanding = 0;
        self.queue
            .retain(|(read, _)| matches!(read, Read::SyncCall(_) | Read::SyncMarker(_)));
        let root = self.scope.root().to_owned();
        let keep = self.scope.keep_event(&root);
        if keep != Keep::Nothing {
            self.push(
                Read::Data {
                    path: root,
                    sweep: true,
                    keep,
                },
                self.generation,
            );
        }
    }

    /// A traversal's last read is applied.
    fn traversal_done(&mut self) {
        self.traversing = false;
        if self.need_traversal {
            return;
        }
        if !self.initialized {
            self.initialized = true;
            {
                let _map = write(&self.shared);
                deliver(&self.shared, &[CacheEvent::Initialized]);
            }
            self.status.send_modify(|s| s.initialized = true);
        }
        answer(std::mem::take(&mut self.parked), Ok(()));
    }

    fn push(&mut self, read: Read, generation: u64) {
        if generation == self.generation && self.traversing {
            self.outstanding += 1;
        }
        self.queue.push_back((read, generation));
    }

    /// Sends queued reads while fewer than the limit are in flight.
    fn send_reads(&mut self) {
        while self.in_flight.len() < self.max_in_flight {
            let Some((read, generation)) = self.next_read() else {
                return;
            };
            let reply = self.call(&read);
            self.in_flight.push_back(InFlight {
                read,
                generation,
                reply,
            });
        }
    }

    /// The next read to send: a traversal's data reads of queued nodes are taken together
    /// into one batch, as many as [`batch_limit`](Self::batch_limit) allows.
    fn next_read(&mut self) -> Option<(Read, u64)> {
        let Some((read, generation)) = self.queue.pop_front() else {
            // The initial load queues a read per node of the tree (42 B each at a million
            // nodes): once drained, that peak is given back rather than kept for the cache's
            // life.
            if self.queue.capacity() > DRAINED_QUEUE_CAPACITY {
                self.queue.shrink_to(DRAINED_QUEUE_CAPACITY);
            }
            return None;
        };
        let limit = self.batch_limit();
        let batchable = |read: &Read| {
            matches!(
                read,
                Read::Data {
                    sweep: true,
                    keep: Keep::Data,
                    ..
                }
            )
        };
        if limit < 2
            || !batchable(&read)
            || !self
                .queue
                .front()
                .is_some_and(|(r, g)| *g == generation && batchable(r))
        {
            return Some((read, generation));
        }
        let mut paths = Vec::with_capacity(limit.min(self.queue.len() + 1));
        let mut next = Some(read);
        while let Some(Read::Data { path, .. }) = next.take() {
            paths.push(path);
            if paths.len() < limit
                && self
                    .queue
                    .front()
                    .is_some_and(|(r, g)| *g == generation && batchable(r))
            {
                next = self.queue.pop_front().map(|(read, _)| read);
            }
        }
        Some((Read::DataBatch(paths), generation))
    }

    /// The most nodes one batch may read: the configured limit, lowered so that the batch's
    /// reply would stay within [`BATCH_REPLY_BUDGET`] (or a sixteenth of the client's frame
    /// limit, if smaller) if each node had as much data as the largest read so far.
    fn batch_limit(&self) -> usize {
        let budget = BATCH_REPLY_BUDGET.min(self.client.max_frame_len() / 16);
        let per_node = self.largest_data.saturating_add(BATCH_ITEM_OVERHEAD);
        (budget / per_node).clamp(1, self.read_batch.max(1))
    }

    /// Sends `read` (the client queues it now) and returns its reply.
    fn call(&self, read: &Read) -> ReplyFuture {
        match read {
            Read::Data {
                path,
                keep: Keep::Stat,
                ..
            } => {
                let reply = self.client.exists(path);
                Box::pin(async move { Reply::Data(reply.await.map(|s| s.map(|s| (None, s)))) })
            }
            Read::Data { path, .. } => {
                let reply = self.client.get_data(path);
                Box::pin(async move {
                    Reply::Data(match reply.await {
                        Ok((data, stat)) => Ok(Some((Some(data), stat))),
                        Err(Error::NoNode) => Ok(None),
                        Err(e) => Err(e),
                    })
                })
            }
            Read::DataBatch(paths) => {
                let ops = paths.iter().map(MultiOperation::get_data).collect();
                let reply = self.client.multi_read(ops);
                Box::pin(async move { Reply::Batch(reply.await) })
            }
            Read::Children { path, .. } => {
                let reply = self.client.get_children2(path);
                Box::pin(async move {
                    Reply::Children(match reply.await {
                        Ok(listed) => Ok(Some(listed)),
                        Err(Error::NoNode) => Ok(None),
                        Err(e) => Err(e),
                    })
                })
            }
            Read::SyncCall(_) => {
                let reply = self.client.sync(self.scope.root());
                Box::pin(async move {
                    Reply::Sync(match reply.await {
                        Err(Error::NoNode) => Ok(()),
                        other => other,
                    })
                })
            }
            Read::SyncMarker(_) => Box::pin(std::future::ready(Reply::Marker)),
        }
    }

    /// Applies one reply.
    fn apply(&mut self, read: Read, generation: u64, reply: Reply) {
        if generation == self.generation && self.traversing {
            let reads = match &read {
                Read::DataBatch(paths) => paths.len(),
                _ => 1,
            };
            self.outstanding = self.outstanding.saturating_sub(reads);
        }
        match (read, reply) {
            (Read::Data { path, sweep, .. }, Reply::Data(result)) => match result {
                Ok(found) => self.apply_data(&path, sweep, generation, found),
                Err(error) => self.failed(error),
            },
            (Read::DataBatch(paths), Reply::Batch(result)) => {
                self.apply_batch(paths, generation, result);
            }
            (Read::Children { path, sweep }, Reply::Children(result)) => match result {
                Ok(found) => self.apply_children(&path, sweep, generation, found),
                Err(error) => self.failed(error),
            },
            (Read::SyncCall(waiters), Reply::Sync(result)) => match result {
                Ok(()) => self.queue.push_back((Read::SyncMarker(waiters), 0)),
                Err(error) if error.is_retryable() => {
                    self.queue.push_back((Read::SyncCall(waiters), 0));
                }
                Err(error) => answer(waiters, Err(error)),
            },
            (Read::SyncMarker(waiters), Reply::Marker) => {
                if self.traversing || self.need_traversal {
                    self.parked.extend(waiters);
                } else {
                    answer(waiters, Ok(()));
                }
            }
            _ => self.fatal = Some(Error::Closed),
        }
    }

    /// Applies a batch's results in order, each as the reply of a single read.
    fn apply_batch(
        &mut self,
        paths: Vec<String>,
        generation: u64,
        result: Result<Vec<zk_proto::Result<MultiReadItem>>, Error>,
    ) {
        let items = match result {
            Ok(items) if items.len() == paths.len() => items,
            Ok(_) => {
                let unexpected = "a multiRead with another number of results than reads";
                return self.failed(Error::Protocol(ProtocolError::UnexpectedResponse(
                    unexpected,
                )));
            }
            Err(error @ Error::ReplyTooLarge { .. }) => {
                // A node far larger than any before it (the client dropped the connection
                // for the oversized reply; the session goes on): read one node at a time
                // from now on, which gets each node that fits the frame limit.
                tracing::warn!(
                    root = self.scope.root(),
                    %error,
                    "a tree cache batch exceeded the frame limit; reading one node per request"
                );
                self.read_batch = 1;
                self.need_traversal = true;
                return;
            }
            Err(error) => return self.failed(error),
        };
        for (path, item) in paths.iter().zip(items) {
            match item {
                Ok(MultiReadItem::Data(data, stat)) => {
                    // A copy: the reply's slice would keep the whole batch's frame alive as
                    // long as any one of its nodes keeps this data.
                    let data = Bytes::copy_from_slice(&data);
                    self.apply_data(path, true, generation, Some((Some(data), stat)));
                }
                Err(Error::NoNode) => self.apply_data(path, true, generation, None),
                Err(error) => self.failed(error),
                Ok(_) => {
                    let unexpected = "a child list for a getData in a multiRead";
                    self.failed(Error::Protocol(ProtocolError::UnexpectedResponse(
                        unexpected,
                    )));
                }
            }
        }
    }

    fn apply_data(
        &mut self,
        path: &str,
        sweep: bool,
        generation: u64,
        found: Option<(Option<Bytes>, Stat)>,
    ) {
        let root = path == self.scope.root();
        let lists = self.scope.lists_children(path);
        if let Some((_, stat)) = &found {
            let data_length = usize::try_from(stat.data_length).unwrap_or(0);
            self.largest_data = self.largest_data.max(data_length);
        }
        let next = self.change(|writer, _| {
            let (data, stat) = match found {
                None => {
                    writer.remove(path);
                    return None;
                }
                Some(found) => found,
            };
            // A node whose parent is not cached yet is found again when the parent is added
            // (its child list is read then).
            if !root && !parent_path(path).is_some_and(|p| writer.contains(p)) {
                return None;
            }
            let (children, czxid, pzxid) = (stat.num_children, stat.czxid, stat.pzxid);
            let applied = writer.put(path, data, stat);
            if lists && children == 0 {
                writer.retain_children(path, czxid, pzxid, &StringList::new());
            } else if lists && (sweep || applied == Applied::Added) {
                return Some(Read::Children {
                    path: path.to_owned(),
                    sweep,
                });
            }
            None
        });
        if let Some(read) = next {
            self.push(read, generation);
        }
    }

    fn apply_children(
        &mut self,
        path: &str,
        sweep: bool,
        generation: u64,
        found: Option<(StringList, Stat)>,
    ) {
        let next = self.change(|writer, scope| {
            let mut next = Vec::new();
            let Some((names, stat)) = found else {
                writer.remove(path);
                return next;
            };
            if writer.retain_children(path, stat.czxid, stat.pzxid, &names) {
                for name in &names {
                    let child = join_path(path, name);
                    let keep = scope.keep(&child);
                    if keep != Keep::Nothing && (sweep || !writer.contains(&child)) {
                        next.push(Read::Data {
                            path: child,
                            sweep,
                            keep,
                        });
                    }
                }
            }
            next
        });
        for read in next {
            self.push(read, generation);
        }
    }

    /// Changes the map under its write lock, then hands the change's events to the
    /// subscribers (under the same lock, so that a new subscription falls between two
    /// changes).
    fn change<R>(&mut self, f: impl FnOnce(&mut Writer<'_>, &Scope) -> R) -> R {
        let mut map = write(&self.shared);
        let mut writer = Writer {
            map: Arc::make_mut(&mut map),
            out: &mut self.out,
        };
        let result = f(&mut writer, &self.scope);
        if self.initialized && !self.out.is_empty() {
            deliver(&self.shared, &self.out);
        }
        self.out.clear();
        result
    }

    /// A read failed.
    fn failed(&mut self, error: Error) {
        if error.is_retryable() {
            // Its outcome is unknown: a change may be missed, so read everything again.
            self.need_traversal = true;
        } else if !error.is_terminal() {
            // NoAuth on a node, a child list over the frame limit, a reply that does not
            // decode: the cache cannot hold the subtree.
            tracing::warn!(root = self.scope.root(), %error, "a tree cache read failed");
            self.fatal = Some(error);
        }
        // A terminal error: the watch reports the session's end.
    }
}

/// The write lock of the map.
fn write(shared: &Shared) -> RwLockWriteGuard<'_, Arc<Map>> {
    shared.map.write().unwrap_or_else(PoisonError::into_inner)
}

/// Sends `events` to every subscriber, dropping those that are gone or fell behind.
fn deliver(shared: &Shared, events: &[CacheEvent]) {
    shared
        .subscribers()
        .retain(|subscriber| events.iter().all(|event| subscriber.send(event)));
}

fn answer(waiters: Vec<SyncWaiter>, result: Result<(), Error>) {
    for waiter in waiters {
        let _ = waiter.send(result.clone());
    }
}

/// The reply of the oldest read in flight.
async fn front(in_flight: &mut VecDeque<InFlight>) -> Reply {
    std::future::poll_fn(|cx| match in_flight.front_mut() {
        Some(sent) => sent.reply.as_mut().poll(cx),
        None => Poll::Pending,
    })
    .await
}
