//! The task behind a [`PersistentNode`](super::PersistentNode): wait for a read/write
//! connection, create the node if it is missing, watch it, and start over when it goes.

use std::sync::{Arc, PoisonError};

use bytes::Bytes;
use tokio::sync::{oneshot, watch};
use zk_proto::{Client, CreateMode, CreateOptions, EventType, OneshotWatcher, SessionState};

use super::Shared;
use crate::Error;
use crate::cleanup::delete_retrying;
use crate::lock::ensure_parents;
use crate::sequential::{attempt_id, is_own_node, protected_name, sort_by_sequence};

/// What node to keep.
#[derive(Debug)]
pub(super) struct Spec {
    parent: String,
    /// The path to create (for a protected node, its name carries the protection prefix).
    create_path: String,
    mode: CreateMode,
    /// The protection id, for a protected node.
    protection: Option<String>,
}

impl Spec {
    pub(super) fn new(path: &str, mode: CreateMode, protected: bool) -> Spec {
        let (parent, name) = match path.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => ("", path),
        };
        let protection = protected.then(attempt_id);
        let name = match &protection {
            Some(id) => protected_name(id, name),
            None => name.to_owned(),
        };
        Spec {
            parent: if parent.is_empty() { "/" } else { parent }.to_owned(),
            create_path: format!("{parent}/{name}"),
            mode,
            protection,
        }
    }

    fn ephemeral(&self) -> bool {
        matches!(
            self.mode,
            CreateMode::EPHEMERAL | CreateMode::EPHEMERAL_SEQUENTIAL
        )
    }

    fn sequential(&self) -> bool {
        matches!(
            self.mode,
            CreateMode::EPHEMERAL_SEQUENTIAL | CreateMode::PERSISTENT_SEQUENTIAL
        )
    }
}

/// Why the keeper stopped waiting.
enum Stop {
    /// The handle asked it to stop (closed or dropped).
    Shutdown,
    /// It cannot go on: the client's session is over for good, or an error retrying cannot
    /// cure.
    Ended(Error),
}

/// The outcome of one attempt to create the node.
enum Created {
    /// The node is ours at this path.
    Ours(String),
    /// The path is held by another session's ephemeral node: wait for this watch.
    Taken(OneshotWatcher),
    /// Try again (after waiting for a connection).
    Again,
}

/// Keeps the node until told to stop or until it cannot go on; then deletes the node (when
/// told to stop) and records why it ended.
pub(super) async fn keep(
    shared: Arc<Shared>,
    spec: Spec,
    path: watch::Sender<Option<String>>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let keeper = Keeper {
        client: shared.client.clone(),
        shared: shared.clone(),
        spec,
        path,
    };
    let reason = match keeper.run(&mut shutdown).await {
        Stop::Shutdown => {
            if let Some(node) = keeper.path.send_replace(None) {
                delete_retrying(&keeper.client, &node).await;
            }
            Error::Zk(zk_proto::Error::Closed)
        }
        Stop::Ended(error) => {
            tracing::debug!(path = %keeper.spec.create_path, %error, "persistent node ended");
            keeper.path.send_replace(None);
            error
        }
    };
    *shared.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
}

struct Keeper {
    client: Client,
    shared: Arc<Shared>,
    spec: Spec,
    /// The node's path while it exists: read by the handle.
    path: watch::Sender<Option<String>>,
}

impl Keeper {
    async fn run(&self, shutdown: &mut oneshot::Receiver<()>) -> Stop {
        loop {
            if let Err(stop) = self.writable(shutdown).await {
                return stop;
            }
            let current = self.path.borrow().clone();
            let Some(node) = current else {
                // Not cancelled by a shutdown: a create in flight is awaited, so that the
                // node it may make is known and deleted.
                match self.create().await {
                    Ok(Created::Ours(node)) => {
                        self.path.send_replace(Some(node));
                    }
                    Ok(Created::Taken(watch)) => {
                        tokio::select! {
                            biased;
                            _ = &mut *shutdown => return Stop::Shutdown,
                            _ = watch.changed() => {}
                        }
                    }
                    Ok(Created::Again) => {}
                    Err(error) => return Stop::Ended(error),
                }
                continue;
            };
            match self.client.exists_watch(&node).await {
                Ok((Some(stat), watch)) => {
                    let ours =
                        !self.spec.ephemeral() || stat.ephemeral_owner == self.client.session_id();
                    if !ours {
                        // Gone and made again by another session (or ours expired): ours is
                        // to be created again.
                        self.path.send_replace(None);
                        continue;
                    }
                    tokio::select! {
                        biased;
                        _ = &mut *shutdown => return Stop::Shutdown,
                        event = watch.changed() => {
                            if event.is_ok_and(|e| e.event_type == EventType::NODE_DELETED) {
                                self.path.send_replace(None);
                            }
                            // Any other event or error: look again.
                        }
                    }
                }
                Ok((None, _)) => {
                    self.path.send_replace(None);
                }
                Err(zk_proto::Error::SessionExpired) => {
                    if self.spec.ephemeral() {
                        self.path.send_replace(None);
                    }
                }
                Err(e) if e.is_retryable() || e.is_terminal() => {}
                Err(e) => return Stop::Ended(e.into()),
            }
        }
    }

    /// Waits until the client is connected to a read/write server.
    async fn writable(&self, shutdown: &mut oneshot::Receiver<()>) -> Result<(), Stop> {
        let mut states = self.client.state_watcher();
        loop {
            let state = *states.borrow_and_update();
            match state {
                SessionState::Connected => return Ok(()),
                // The old session's ephemeral node is gone with it.
                SessionState::Expired
                    if self.client.renews_expired_sessions() && self.spec.ephemeral() =>
                {
                    self.path.send_replace(None);
                }
                SessionState::Expired if self.client.renews_expired_sessions() => {}
                SessionState::Expired => {
                    return Err(Stop::Ended(zk_proto::Error::SessionExpired.into()));
                }
                SessionState::AuthFailed => {
                    let error = self.client.ended_with().unwrap_or(zk_proto::Error::Closed);
                    return Err(Stop::Ended(error.into()));
                }
                SessionState::Closed => return Err(Stop::Ended(zk_proto::Error::Closed.into())),
                _ => {}
            }
            tokio::select! {
                biased;
                _ = &mut *shutdown => return Err(Stop::Shutdown),
                changed = states.changed() => {
                    if changed.is_err() {
                        return Err(Stop::Ended(zk_proto::Error::Closed.into()));
                    }
                }
            }
        }
    }

    /// One attempt to create the node (with its ancestors, and finding a create whose reply
    /// was lost). The data written after a create that raced with `set_data` is the latest.
    async fn create(&self) -> Result<Created, Error> {
        let (version, data) = self.shared.data();
        let options = CreateOptions::new(self.spec.mode);
        let created = match self
            .client
            .create(&self.spec.create_path, data.clone(), &options)
            .await
        {
            Ok((node, _)) => node,
            Err(zk_proto::Error::NoNode) => {
                ensure_parents(&self.client, &self.spec.parent).await?;
                return Ok(Created::Again);
            }
            Err(zk_proto::Error::NodeExists) => return self.existing(&data).await,
            Err(e) if e.is_outcome_unknown() && self.spec.protection.is_some() => {
                return match self.find_own().await? {
                    Some(node) => self.adopted(node, version).await,
                    None => Ok(Created::Again),
                };
            }
            Err(e) if e.is_retryable() || e.is_terminal() => return Ok(Created::Again),
            Err(e) => return Err(e.into()),
        };
        self.adopted(created, version).await
    }

    /// The node is ours: writes the data again if it changed since `version` was read.
    async fn adopted(&self, node: String, version: u64) -> Result<Created, Error> {
        let (now, data) = self.shared.data();
        if now != version {
            match self.client.set_data(&node, data, None).await {
                Ok(_) => {}
                Err(zk_proto::Error::NoNode) => return Ok(Created::Again),
                Err(e) if e.is_retryable() || e.is_terminal() => {
                    // Written again on the next look, or the node goes with the session.
                    return Ok(Created::Again);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Created::Ours(node))
    }

    /// The non-sequential path exists: ours (a create whose reply was lost), a persistent
    /// node to take over, or another session's ephemeral node to wait out.
    async fn existing(&self, data: &Bytes) -> Result<Created, Error> {
        let path = &self.spec.create_path;
        let (stat, watch) = match self.client.exists_watch(path).await {
            Ok((Some(stat), watch)) => (stat, watch),
            Ok((None, _)) => return Ok(Created::Again),
            Err(e) if e.is_retryable() || e.is_terminal() => return Ok(Created::Again),
            Err(e) => return Err(e.into()),
        };
        if stat.ephemeral_owner == 0 && !self.spec.ephemeral() {
            // A persistent node: taken over with our data, as Curator does.
            return match self.client.set_data(path, data.clone(), None).await {
                Ok(_) => Ok(Created::Ours(path.clone())),
                Err(e) if e.is_retryable() || e.is_terminal() => Ok(Created::Again),
                Err(zk_proto::Error::NoNode) => Ok(Created::Again),
                Err(e) => Err(e.into()),
            };
        }
        if stat.ephemeral_owner != 0 && stat.ephemeral_owner == self.client.session_id() {
            return Ok(Created::Ours(path.clone()));
        }
        // Another session's node (or a persistent node where an ephemeral one is wanted):
        // the path is free once it is deleted.
        Ok(Created::Taken(watch))
    }

    /// After a protected create with an unknown outcome: our node, if the create was applied.
    async fn find_own(&self) -> Result<Option<String>, Error> {
        let Some(id) = &self.spec.protection else {
            return Ok(None);
        };
        let parent = &self.spec.parent;
        loop {
            // `sync` first, so that the server we list on has seen every committed create.
            let sync = self.client.sync(parent);
            let list = self.client.get_children(parent);
            let _ = sync.await;
            let listed = match list.await {
                Ok(listed) => listed,
                Err(zk_proto::Error::NoNode) => return Ok(None),
                Err(e) if e.is_retryable() => continue,
                Err(e) if e.is_terminal() => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            let mut own: Vec<&str> = listed.iter().filter(|c| is_own_node(c, id)).collect();
            sort_by_sequence(&mut own);
            // A node of an earlier creation (deleted since) is not listed: the first one is
            // this create's. Any later duplicate is deleted.
            let mut own = own.into_iter().map(|name| child_path(parent, name));
            let first = own.next();
            for duplicate in own {
                delete_retrying(&self.client, &duplicate).await;
            }
            if self.spec.sequential() || first.is_none() {
                return Ok(first);
            }
            return Ok(first.filter(|node| *node == self.spec.create_path));
        }
    }
}

fn child_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}
