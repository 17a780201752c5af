//! One acquire: the contender's node, the listing and the watches, and the clean-up of a
//! node whose acquire did not succeed.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use zk_proto::{
    Client, CreateMode, CreateOptions, EventType, OneshotWatcher, StringList, WatchedEvent,
};

use super::guard::LockGuard;
use super::node::OwnNode;
use super::rules::{Decision, Kind, Rule, decide};
use crate::cleanup::delete_retrying;
use crate::deadline::within;
use crate::sequential::{attempt_id, is_own_node, protected_name, sort_by_sequence};
use crate::{Error, Result};

/// A listing and, for the semaphore, its children watch.
pub(super) type Listing = (StringList, Option<OneshotWatcher>);

/// A watch on a contender's node, kept across listings.
pub(super) type WatchFuture = Pin<Box<dyn Future<Output = zk_proto::Result<WatchedEvent>> + Send>>;

/// The outcome of setting a watch on a contender's node.
pub(super) enum Watched {
    /// The watch is set.
    Armed(WatchFuture),
    /// The node is gone already.
    Gone,
    /// The call failed with a retryable error: list again.
    Retry,
}

/// A contender's node while it is being acquired: deleted when the acquire does not succeed.
pub(super) struct Attempt {
    pub(super) client: Client,
    pub(super) parent: String,
    pub(super) id: String,
    /// The node's full path, once known.
    pub(super) node: Option<String>,
    /// A create may have been applied without us knowing the node (reply lost or in flight).
    pub(super) unsure: bool,
    /// Whether the node must be deleted when this is dropped.
    pub(super) armed: bool,
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
pub(super) async fn cleanup(
    client: Client,
    parent: String,
    id: String,
    node: Option<String>,
    unsure: bool,
) {
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
pub(crate) async fn ensure_parents(client: &Client, path: &str) -> Result<()> {
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

/// The machinery shared by the three recipes: the contenders under one parent node, in
/// their queue.
#[derive(Debug, Clone)]
pub(super) struct Contenders {
    pub(super) client: Client,
    pub(super) parent: String,
    pub(super) kind: Kind,
}

impl Contenders {
    pub(super) fn new(client: Client, path: &str, kind: Kind) -> Self {
        let parent = path.trim_end_matches('/');
        let parent = if parent.is_empty() { "/" } else { parent };
        Contenders {
            client,
            parent: parent.to_owned(),
            kind,
        }
    }

    pub(super) fn child_path(&self, name: &str) -> String {
        if self.parent == "/" {
            format!("/{name}")
        } else {
            format!("{}/{name}", self.parent)
        }
    }

    /// Waits for the lock, at most `timeout`.
    pub(super) async fn acquire(&self, timeout: Option<Duration>) -> Result<LockGuard> {
        self.attempt(timeout, false, Bytes::new()).await
    }

    /// Takes the lock if it is free: the node is created and the children listed (one round
    /// trip), and the lock is taken if that listing grants it; else the node is withdrawn and
    /// the result is [`Error::Timeout`] (Curator's `acquire(0, unit)`).
    pub(super) async fn try_acquire(&self) -> Result<LockGuard> {
        self.attempt(None, true, Bytes::new()).await
    }

    /// One attempt at the lock, at most `timeout`, its node holding `data`; with `give_up`,
    /// only if the first listing grants it.
    pub(super) async fn attempt(
        &self,
        timeout: Option<Duration>,
        give_up: bool,
        data: Bytes,
    ) -> Result<LockGuard> {
        let mut attempt = Attempt {
            client: self.client.clone(),
            parent: self.parent.clone(),
            id: attempt_id(),
            node: None,
            unsure: false,
            armed: true,
        };
        let result = within(timeout, self.run(&mut attempt, data, give_up))
            .await
            .and_then(|acquired| acquired);
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

    /// Creates the node holding `data` (recovering a lost reply) and waits for the lock; with
    /// `give_up`, does not wait: [`Error::Timeout`] when the first listing does not grant it.
    async fn run(&self, attempt: &mut Attempt, data: Bytes, give_up: bool) -> Result<LockGuard> {
        let watch_children = matches!(self.kind.rule, Rule::Permits(_));
        // 1. Create and list in one round trip.
        let (own, mut children) = self.create_listed(attempt, data, watch_children).await?;
        let own_name = own.name();
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
            match decide(self.kind, &listing.iter().collect::<Vec<_>>(), &own_name)? {
                Decision::Acquired => return Ok(self.guard(own.clone())),
                Decision::Missing => return Err(Error::Lost),
                Decision::WatchChildren | Decision::Watch { .. } if give_up => {
                    return Err(Error::Timeout);
                }
                Decision::WatchChildren => {
                    if let Some(watch) = children_watch {
                        watch.changed().await.map_err(Error::from)?;
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
                            Watched::Gone if last => return Ok(self.guard(own.clone())),
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
                                return Ok(self.guard(own.clone()));
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

    /// Creates the attempt's node `<parent>/_c_<id>-<name><seq>` holding `data` (ephemeral,
    /// sequential), with the listing of the children (and a children watch when `watch`) sent
    /// right after it: one round trip. A missing parent is created (as containers); a create
    /// whose reply was lost is found again by the attempt's id (the listing is then `None`).
    /// Returns the node and the listing.
    pub(super) async fn create_listed(
        &self,
        attempt: &mut Attempt,
        data: Bytes,
        watch: bool,
    ) -> Result<(OwnNode, Option<Listing>)> {
        let prefix = self.child_path(&protected_name(&attempt.id, self.kind.name));
        let options = CreateOptions::new(CreateMode::EPHEMERAL_SEQUENTIAL);
        loop {
            attempt.unsure = true;
            let create = self.client.create(&prefix, data.clone(), &options);
            let list = self.listing(watch);
            match create.await {
                Ok((path, stat)) => {
                    attempt.unsure = false;
                    attempt.node = Some(path.clone());
                    // The listing was executed after the create: it holds our node.
                    return Ok((OwnNode::of(path, &stat), list.await.ok()));
                }
                Err(zk_proto::Error::NoNode) => {
                    // No parent (or its container was just removed): create it, retry.
                    attempt.unsure = false;
                    drop(list);
                    ensure_parents(&self.client, &self.parent).await?;
                }
                Err(e) if e.is_outcome_unknown() || e.is_retryable() => {
                    drop(list);
                    if let Some(own) = self.find_own(attempt).await? {
                        attempt.unsure = false;
                        attempt.node = Some(own.path.clone());
                        return Ok((own, None));
                    }
                    // Not applied: create again under the same id (a late duplicate would
                    // be found and deleted by `find_own`'s duplicate check below).
                }
                Err(e) => {
                    attempt.unsure = false;
                    return Err(e.into());
                }
            }
        }
    }

    /// Sets a watch on the contender `node` (`getData` + watch, as Curator does). The request
    /// is queued when this is called.
    pub(super) fn watch_node(
        &self,
        node: &str,
    ) -> Pin<Box<dyn Future<Output = Result<Watched>> + Send>> {
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
    pub(super) fn listing(
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
    pub(super) async fn find_own(&self, attempt: &Attempt) -> Result<Option<OwnNode>> {
        loop {
            // `sync` first, so that the server we list on has seen every committed create.
            let sync = self.client.sync(&self.parent);
            let list = self.client.get_children(&self.parent);
            let _ = sync.await;
            let listed = match list.await {
                Ok(listed) => listed,
                Err(zk_proto::Error::NoNode) => return Ok(None),
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e.into()),
            };
            let mut own: Vec<&str> = listed
                .iter()
                .filter(|c| is_own_node(c, &attempt.id))
                .collect();
            sort_by_sequence(&mut own);
            let Some(first) = own.first() else {
                return Ok(None);
            };
            let path = self.child_path(first);
            match self.client.get_data(&path).await {
                Ok((_, stat)) => return Ok(Some(OwnNode::of(path, &stat))),
                Err(zk_proto::Error::NoNode) => return Ok(None),
                Err(e) if e.is_retryable() => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Deletes any other node of the same attempt (a create applied twice after a lost reply).
    pub(super) async fn drop_duplicates(&self, listing: &StringList, id: &str, own: &str) {
        for child in listing.iter().filter(|c| is_own_node(c, id) && *c != own) {
            delete_retrying(&self.client, &self.child_path(child)).await;
        }
    }

    pub(super) fn guard(&self, own: OwnNode) -> LockGuard {
        LockGuard {
            client: self.client.clone(),
            node: Some(own.path),
            czxid: own.czxid,
            session: own.session,
            states: self.client.state_watcher(),
            owner: None,
            _quorum: self.client.quorum_check(),
        }
    }
}
