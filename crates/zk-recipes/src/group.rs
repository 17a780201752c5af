//! Group membership: a member is an ephemeral node under the group's node, and a live view of
//! the members is a [`TreeCache`] of the group's children.
//!
//! ```text
//! /app/workers            (persistent, created on the first join)
//! /app/workers/worker-1   (ephemeral: the member's data; gone when its session ends)
//! ```
//!
//! A member that crashes leaves when the ensemble expires its session (after the session
//! timeout); one that [`leave`](Member::leave)s, or drops its [`Member`], leaves at once. A
//! member is a [`PersistentNode`]: while its process lives, a node deleted by someone else is
//! created again, and on a client that renews expired sessions
//! ([`renew_expired_sessions`](zk_proto::ClientBuilder::renew_expired_sessions)) the member
//! joins again in the new session.
//!
//! ```no_run
//! # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
//! use std::time::Duration;
//! use zk_recipes::group::{Group, MembershipEvent};
//!
//! let group = Group::new(&client, "/app/workers");
//! let me = group.join("worker-1", "10.0.0.1:8080", Some(Duration::from_secs(5))).await?;
//! let view = group.view(Some(Duration::from_secs(5))).await?;
//! let mut changes = view.events();
//! println!("members: {:?}", view.members().keys().collect::<Vec<_>>());
//! while let Ok(change) = changes.next().await {
//!     match change {
//!         MembershipEvent::Joined { name, .. } => println!("{name} joined"),
//!         MembershipEvent::Left { name } => println!("{name} left"),
//!         _ => {}
//!     }
//! }
//! me.leave().await?;
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use zk_proto::{Client, CreateOptions};

use crate::barrier::{ensure_path, join_path};
use crate::cache::{CacheEvent, CacheEvents, CacheNode, Depth, TreeCache};
use crate::deadline::{deadline_of, until};
use crate::persistent::PersistentNode;
use crate::{Error, Result};

/// A group: members join under its node, observers watch who is in.
#[derive(Debug, Clone)]
pub struct Group {
    client: Client,
    path: String,
}

impl Group {
    /// The group at `path` (its node is created on the first join).
    pub fn new(client: &Client, path: &str) -> Group {
        Group {
            client: client.clone(),
            path: path.trim_end_matches('/').to_owned(),
        }
    }

    /// The group's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Joins as `name` with `data`: creates the ephemeral node `<path>/<name>` (and the
    /// group's node if missing). A create whose reply was lost is retried, and a node found
    /// with this session as its owner is taken as ours.
    ///
    /// # Errors
    ///
    /// [`zk_proto::Error::NodeExists`] when another session is a member under that name;
    /// [`Error::Timeout`]; the ZooKeeper errors.
    pub async fn join(
        &self,
        name: &str,
        data: impl Into<Bytes>,
        timeout: Option<Duration>,
    ) -> Result<Member> {
        let deadline = deadline_of(timeout);
        let data = data.into();
        let path = join_path(&self.path, name);
        until(deadline, ensure_path(&self.client, &self.path)).await??;
        loop {
            let create = self
                .client
                .create(&path, data.clone(), &CreateOptions::ephemeral());
            match until(deadline, create).await? {
                Ok(_) => break,
                Err(e) if e.is_retryable() => continue,
                Err(zk_proto::Error::NodeExists) => {
                    // Ours, if a create whose reply was lost made it.
                    let owner = until(deadline, self.client.exists(&path)).await?;
                    match owner {
                        Ok(Some(stat)) if stat.ephemeral_owner == self.client.session_id() => {
                            break;
                        }
                        Ok(None) => continue,
                        Ok(Some(_)) => return Err(zk_proto::Error::NodeExists.into()),
                        Err(e) if e.is_retryable() => continue,
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        // From now on the node is kept (it is ours: the keeper takes it as it is).
        let node = PersistentNode::builder(&self.client, &path, data)
            .ephemeral()
            .start();
        Ok(Member { path, node })
    }

    /// A live view of the members, once its first load is done.
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; the ZooKeeper errors of the first load.
    pub async fn view(&self, timeout: Option<Duration>) -> Result<GroupView> {
        let cache = TreeCache::builder(&self.client, &self.path)
            .depth(Depth::Children)
            .start();
        cache.wait_initialized(timeout).await?;
        Ok(GroupView { cache })
    }
}

/// This process's membership of a group, kept by a [`PersistentNode`] (see the
/// [module](self) docs). Dropping it leaves the group (the delete is sent in the background,
/// and retried while its outcome is unknown).
#[derive(Debug)]
pub struct Member {
    path: String,
    node: PersistentNode,
}

impl Member {
    /// The member's node.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The member's name in the group.
    pub fn name(&self) -> &str {
        self.path().rsplit('/').next().unwrap_or_default()
    }

    /// Replaces the member's data: written now if the member's node exists, and kept for
    /// when it joins again.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::set_data`].
    pub async fn set_data(&self, data: impl Into<Bytes>) -> Result<()> {
        self.node.set_data(data).await
    }

    /// Waits until the member's node exists (it may be missing for a moment after it was
    /// deleted, or after the session expired on a renewing client); at most `timeout`.
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::wait_created`].
    pub async fn wait_joined(&self, timeout: Option<Duration>) -> Result<()> {
        self.node.wait_created(timeout).await.map(drop)
    }

    /// Why the membership ended by itself, `None` while it is kept (see
    /// [`PersistentNode::ended`]).
    pub fn ended(&self) -> Option<Error> {
        self.node.ended()
    }

    /// Waits until the membership ends by itself, and returns why (see
    /// [`PersistentNode::wait_ended`]).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        self.node.wait_ended().await
    }

    /// Leaves the group: deletes the member's node (gone already is fine).
    ///
    /// # Errors
    ///
    /// As [`PersistentNode::close`]: why the membership had ended by itself (the session
    /// expired on a client that does not renew sessions).
    pub async fn leave(self) -> Result<()> {
        self.node.close().await
    }
}

/// A live view of a group's members (a [`TreeCache`] of the group's children): reads are
/// synchronous, changes come as [`MembershipEvent`]s.
#[derive(Debug)]
pub struct GroupView {
    cache: TreeCache,
}

impl GroupView {
    /// The members now: name to data.
    pub fn members(&self) -> BTreeMap<String, Bytes> {
        self.cache
            .children(self.cache.root())
            .into_iter()
            .map(|node| {
                let data = node.data().cloned().unwrap_or_default();
                (node.name().to_owned(), data)
            })
            .collect()
    }

    /// Whether `name` is a member now.
    pub fn contains(&self, name: &str) -> bool {
        self.cache
            .get(&join_path(self.cache.root(), name))
            .is_some()
    }

    /// The membership changes from now on.
    pub fn events(&self) -> MembershipEvents {
        MembershipEvents {
            events: self.cache.events(),
            root: self.cache.root().to_owned(),
        }
    }

    /// Waits until the view has caught up with the server (see [`TreeCache::sync`]).
    ///
    /// # Errors
    ///
    /// As [`TreeCache::sync`].
    pub async fn sync(&self, timeout: Option<Duration>) -> Result<()> {
        self.cache.sync(timeout).await
    }

    /// Why the view ended, `None` while it runs (see [`TreeCache::ended`]).
    pub fn ended(&self) -> Option<Error> {
        self.cache.ended()
    }

    /// Waits until the view ends, and returns why (see [`TreeCache::wait_ended`]).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        self.cache.wait_ended().await
    }

    /// The cache behind the view.
    pub fn cache(&self) -> &TreeCache {
        &self.cache
    }
}

/// A change of a group's membership.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MembershipEvent {
    /// A member joined.
    Joined {
        /// Its name.
        name: String,
        /// Its data.
        data: Bytes,
    },
    /// A member changed its data.
    Updated {
        /// Its name.
        name: String,
        /// Its new data.
        data: Bytes,
    },
    /// A member left (or its session ended).
    Left {
        /// Its name.
        name: String,
    },
}

/// The membership changes of a [`GroupView`] (its cache's events about members).
#[derive(Debug)]
pub struct MembershipEvents {
    events: CacheEvents,
    root: String,
}

impl MembershipEvents {
    /// The next change.
    ///
    /// # Errors
    ///
    /// As [`CacheEvents::next`].
    pub async fn next(&mut self) -> Result<MembershipEvent, Error> {
        loop {
            // Changes of the group's own node are not membership changes.
            let event = match self.events.next().await? {
                CacheEvent::Added(node) if self.is_member(&node) => MembershipEvent::Joined {
                    name: node.name().to_owned(),
                    data: node.data().cloned().unwrap_or_default(),
                },
                CacheEvent::Updated { new, .. } if self.is_member(&new) => {
                    MembershipEvent::Updated {
                        name: new.name().to_owned(),
                        data: new.data().cloned().unwrap_or_default(),
                    }
                }
                CacheEvent::Removed(node) if self.is_member(&node) => MembershipEvent::Left {
                    name: node.name().to_owned(),
                },
                _ => continue,
            };
            return Ok(event);
        }
    }

    fn is_member(&self, node: &CacheNode) -> bool {
        node.path().rsplit_once('/').map(|(parent, _)| parent) == Some(self.root.as_str())
            || (self.root == "/" && node.path() != "/")
    }
}
