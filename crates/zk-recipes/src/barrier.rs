//! Barriers: a simple [`Barrier`] (a node whose presence blocks), the classic ZooKeeper
//! [`DoubleBarrier`] (enter when N have joined, leave when all have left) and the
//! "queue start" pattern, [`StartGate`] (N participants join, the start node is created
//! exactly once and every participant is told through a watch on it).
//!
//! See `docs/recipes-barrier-queue.md` for the node layouts, round trips and failure
//! behaviour.
//!
//! The ZooKeeper errors these docs name ([`Error::NoAuth`], [`Error::SessionExpired`], ...)
//! come wrapped in [`crate::Error::Zk`]; a timeout is [`crate::Error::Timeout`].

use std::time::Duration;

use zk_proto::{Client, CreateOptions, Error, EventType, StringList};

use crate::cleanup::withdraw;
use crate::deadline::within;
use crate::{Result, as_len};

/// The name of the node a [`DoubleBarrier`] creates when enough participants have entered.
pub const READY_NODE: &str = "ready";

/// The name of the node a [`StartGate`] creates when enough participants have joined.
pub const START_NODE: &str = "start";

/// The prefix of a [`StartGate`] member node (`member-<uuid>`).
pub const MEMBER_PREFIX: &str = "member-";

/// `parent/name`, also for the root.
pub(crate) fn join_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Creates `path` and every missing ancestor as empty persistent nodes. All the creates are
/// queued back to back, so this is one round trip whatever the depth.
///
/// # Errors
///
/// The first error other than [`Error::NodeExists`] (e.g. [`Error::NoAuth`],
/// [`Error::NoChildrenForEphemerals`], the connection errors).
pub(crate) async fn ensure_path(client: &Client, path: &str) -> Result<()> {
    let options = CreateOptions::persistent();
    let mut pending = Vec::new();
    for (i, _) in path.match_indices('/').skip(1) {
        pending.push(client.create(&path[..i], "", &options));
    }
    if path != "/" {
        pending.push(client.create(path, "", &options));
    }
    let mut first_error = None;
    for reply in pending {
        match reply.await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    first_error.map_or(Ok(()), |error| Err(error.into()))
}

/// A barrier: while its node exists, [`wait`](Barrier::wait) blocks; removing the node
/// releases every waiter at once.
///
/// ```text
/// /app/barrier      (persistent; present = closed)
/// ```
#[derive(Debug, Clone)]
pub struct Barrier {
    client: Client,
    path: String,
}

impl Barrier {
    /// A barrier on the node `path` (nothing is sent).
    pub fn new(client: &Client, path: &str) -> Self {
        Self {
            client: client.clone(),
            path: path.to_owned(),
        }
    }

    /// The barrier node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Closes the barrier: creates its node (persistent), and any missing ancestors. Returns
    /// `false` when the node already existed.
    ///
    /// Round trips: 1 (2 more when ancestors are missing).
    ///
    /// # Errors
    ///
    /// [`Error::NoAuth`], [`Error::InvalidPath`] and the connection errors. After
    /// [`Error::ConnectionLoss`] the node may have been created; calling `set` again is safe.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe in the sense that dropping it leaves at worst a created node, which is the
    /// effect asked for; `set` is idempotent.
    ///
    /// # Session loss
    ///
    /// The node is persistent: it survives the session that created it.
    pub async fn set(&self) -> Result<bool> {
        let options = CreateOptions::persistent();
        match self.client.create(&self.path, "", &options).await {
            Ok(_) => Ok(true),
            Err(Error::NodeExists) => Ok(false),
            Err(Error::NoNode) => {
                ensure_parent(&self.client, &self.path).await?;
                match self.client.create(&self.path, "", &options).await {
                    Ok(_) => Ok(true),
                    Err(Error::NodeExists) => Ok(false),
                    Err(error) => Err(error.into()),
                }
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Opens the barrier: deletes its node, releasing every waiter. Returns `false` when the
    /// node did not exist.
    ///
    /// Round trips: 1.
    ///
    /// # Errors
    ///
    /// [`Error::NotEmpty`] (the node has children), [`Error::NoAuth`] and the connection
    /// errors. `remove` is idempotent: call it again after [`Error::ConnectionLoss`].
    ///
    /// # Cancellation safety
    ///
    /// Dropping it may or may not remove the node; `remove` is idempotent.
    ///
    /// # Session loss
    ///
    /// Not affected beyond the call failing.
    pub async fn remove(&self) -> Result<bool> {
        match self.client.delete(&self.path, None).await {
            Ok(()) => Ok(true),
            Err(Error::NoNode) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Waits until the barrier node does not exist, at most `timeout` (`None`: no limit).
    /// Returns `Ok(())` when the barrier is open. The timeout bounds the whole call, its round
    /// trips included, so a zero timeout is no way to ask whether the barrier is open.
    ///
    /// Round trips: 1 (an `exists` with a watch), plus 1 per change of the node seen while
    /// waiting (a data change re-arms the watch).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first (also while no server answers);
    /// the connection errors of the `exists` calls; while waiting on the watch a
    /// disconnection is not an error (the client re-registers the watch on reconnect).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only reads.
    ///
    /// # Session loss
    ///
    /// [`Error::SessionExpired`] (or [`Error::Closed`]) when the session ends while waiting.
    pub async fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        within(timeout, self.wait_open()).await?
    }

    /// Waits, without a deadline, until the node does not exist.
    async fn wait_open(&self) -> Result<()> {
        loop {
            let (stat, watch) = self.client.exists_watch(&self.path).await?;
            if stat.is_none() {
                return Ok(());
            }
            if watch.changed().await?.event_type == EventType::NODE_DELETED {
                return Ok(());
            }
        }
    }
}

async fn ensure_parent(client: &Client, path: &str) -> Result<()> {
    match path.rfind('/') {
        Some(0) | None => Ok(()),
        Some(i) => ensure_path(client, &path[..i]).await,
    }
}

/// Whether `name` is a participant of a [`DoubleBarrier`] (anything but the ready node).
fn is_participant(name: &str) -> bool {
    name != READY_NODE
}

/// The classic ZooKeeper double barrier: [`enter`](DoubleBarrier::enter) returns when
/// `count` participants have entered, [`leave`](DoubleBarrier::leave) when all of them have
/// left.
///
/// ```text
/// /app/dbarrier                 (persistent, created on demand)
/// /app/dbarrier/<uuid>          (ephemeral, one per participant)
/// /app/dbarrier/ready           (persistent, created once `count` have entered)
/// ```
///
/// Entering watches the `ready` node (every participant needs that one event, so it is no
/// herd). Leaving avoids the herd as the ZooKeeper recipe describes: the lowest participant
/// watches the highest, every other deletes its node and watches the lowest, so each
/// departure wakes at most one or two waiters.
///
/// A `DoubleBarrier` is one participant: create one per participant (one per session or per
/// task), each gets its own node name.
#[derive(Debug, Clone)]
pub struct DoubleBarrier {
    client: Client,
    path: String,
    count: u32,
    name: String,
}

impl DoubleBarrier {
    /// A participant of the double barrier at `path` for `count` participants (nothing is
    /// sent; the node name is a fresh UUID).
    pub fn new(client: &Client, path: &str, count: u32) -> Self {
        Self {
            client: client.clone(),
            path: path.to_owned(),
            count,
            name: crate::sequential::attempt_id(),
        }
    }

    /// The barrier's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// This participant's node path.
    pub fn node_path(&self) -> String {
        join_path(&self.path, &self.name)
    }

    /// Enters the barrier and waits, at most `timeout` (`None`: no limit), until `count`
    /// participants have entered. Returns `Ok(())` once entered.
    ///
    /// Round trips: 1 (exists-with-watch on `ready`, create of the own ephemeral node and
    /// getChildren are queued back to back), plus 1 for the participant that creates `ready`,
    /// plus 1 per extra check if the watch fires for anything but the creation. 2 more when
    /// the barrier node is missing.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first, also while no server answers:
    /// this participant's node is then deleted again, so it no longer counts (the delete is
    /// queued before `enter` returns and retried in the background, so the caller never waits
    /// for a server past the deadline). A timeout that passes while this participant's create
    /// of `ready` is in flight may let the others enter with it counted.
    ///
    /// [`Error::NoAuth`] and the connection errors. `enter` is idempotent for this
    /// participant (its node name is fixed), so it can be called again after
    /// [`Error::ConnectionLoss`].
    ///
    /// # Cancellation safety
    ///
    /// Dropping it may leave this participant's node behind (it counts as entered); call
    /// [`leave`](Self::leave) or let the session end to remove it.
    ///
    /// # Session loss
    ///
    /// The participant's node is ephemeral: when the session expires it disappears and the
    /// call fails with [`Error::SessionExpired`]; others then never count it.
    pub async fn enter(&self, timeout: Option<Duration>) -> Result<()> {
        within(timeout, self.enter_and_wait())
            .await
            .inspect_err(|_| withdraw(&self.client, self.node_path()))?
    }

    /// Enters and waits, without a deadline, until `ready` exists.
    async fn enter_and_wait(&self) -> Result<()> {
        let ready = join_path(&self.path, READY_NODE);
        let node = self.node_path();
        // Watch first, then create, then count: one round trip, and no window in which the
        // ready node could be created unseen.
        let watched = self.client.exists_watch(&ready);
        let created = self.client.create(&node, "", &CreateOptions::ephemeral());
        let listed = self.client.get_children(&self.path);
        let (exists, watch) = watched.await?;
        match created.await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(Error::NoNode) => {
                ensure_path(&self.client, &self.path).await?;
                return Box::pin(self.enter_and_wait()).await;
            }
            Err(error) => return Err(error.into()),
        }
        let children = listed.await?;
        if exists.is_some() {
            return Ok(());
        }
        if children.iter().filter(|c| is_participant(c)).count() >= as_len(self.count) {
            return match self
                .client
                .create(&ready, "", &CreateOptions::persistent())
                .await
            {
                Ok(_) | Err(Error::NodeExists) => Ok(()),
                Err(error) => Err(error.into()),
            };
        }
        let mut watch = watch;
        loop {
            if watch.changed().await?.event_type == EventType::NODE_CREATED {
                return Ok(());
            }
            let (exists, next) = self.client.exists_watch(&ready).await?;
            if exists.is_some() {
                return Ok(());
            }
            watch = next;
        }
    }

    /// Leaves the barrier and waits, at most `timeout` (`None`: no limit), until every
    /// participant has left. Returns `Ok(())` when all have left (the last step deletes
    /// `ready`, so the barrier can be used for another round).
    ///
    /// Round trips: 1 getChildren per wake-up, plus a delete and an exists-with-watch
    /// (queued back to back) per wake-up; at the end 1 delete of `ready`.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first, also while no server answers
    /// (this participant's node may already be deleted); [`Error::NoAuth`] and the connection
    /// errors. `leave` can be called again after any of them.
    ///
    /// # Cancellation safety
    ///
    /// Dropping it may leave this participant's node deleted or not; calling `leave` again
    /// is safe.
    ///
    /// # Session loss
    ///
    /// When the session expires this participant's node disappears (which is a departure
    /// for the others) and the call fails with [`Error::SessionExpired`].
    pub async fn leave(&self, timeout: Option<Duration>) -> Result<()> {
        within(timeout, self.leave_and_wait()).await?
    }

    /// Leaves and waits, without a deadline, until every participant has left.
    async fn leave_and_wait(&self) -> Result<()> {
        let node = self.node_path();
        loop {
            let listed = match self.client.get_children(&self.path).await {
                Ok(listed) => listed,
                Err(Error::NoNode) => StringList::new(),
                Err(error) => return Err(error.into()),
            };
            let mut children: Vec<&str> = listed.iter().filter(|c| is_participant(c)).collect();
            children.sort_unstable();
            let Some(lowest) = children.first().copied() else {
                break;
            };
            let ours = children.contains(&self.name.as_str());
            if ours && children.len() == 1 {
                match self.client.delete(&node, None).await {
                    Ok(()) | Err(Error::NoNode) => {}
                    Err(error) => return Err(error.into()),
                }
                break;
            }
            let watched = if ours && lowest == self.name {
                // The lowest waits for the highest; it deletes its own node last.
                let highest = children.last().copied().unwrap_or_default();
                self.client
                    .exists_watch(&join_path(&self.path, highest))
                    .await?
            } else {
                let deleted = ours.then(|| self.client.delete(&node, None));
                let watched = self.client.exists_watch(&join_path(&self.path, lowest));
                if let Some(deleted) = deleted {
                    match deleted.await {
                        Ok(()) | Err(Error::NoNode) => {}
                        Err(error) => return Err(error.into()),
                    }
                }
                watched.await?
            };
            if let (Some(_), watch) = watched {
                watch.changed().await?;
            }
        }
        match self
            .client
            .delete(&join_path(&self.path, READY_NODE), None)
            .await
        {
            Ok(()) | Err(Error::NoNode) => Ok(()),
            Err(error) => Err(error.into()),
        }
    }
}

/// The "queue start" pattern: participants join under a node; when `count` have joined, the
/// `start` node is created exactly once (by whichever participant first sees the count
/// reached; the others' creates fail with [`Error::NodeExists`]) and every participant is
/// told through its exists-watch on `start`.
///
/// ```text
/// /app/gate                       (persistent, created on demand)
/// /app/gate/member-<uuid>         (ephemeral, one per participant)
/// /app/gate/start                 (persistent, created once)
/// ```
///
/// One `StartGate` is one participant. Unlike [`DoubleBarrier`] there is no leave phase: the
/// `start` node stays until [`reset`](StartGate::reset).
///
/// # Crashed members
///
/// A member that crashed still counts until its session expires: its member node is
/// ephemeral, and the server deletes it only when the session ends, which for a crash is the
/// session timeout. Until then the gate can open with fewer live members than `count`.
/// ZooKeeper cannot know sooner (a member that stopped answering may only be paused). The
/// bound is the members' session timeout (plus one server tick); to narrow it, give members a
/// short [`session_timeout`](zk_proto::ClientBuilder::session_timeout), make members that leave
/// on purpose call [`leave`](StartGate::leave) or [`Client::close`], and check the members again
/// after the gate opens if the work needs every one of them alive.
#[derive(Debug, Clone)]
pub struct StartGate {
    client: Client,
    path: String,
    count: u32,
    name: String,
}

/// How a participant learned that the gate started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    /// Whether this participant's create of the start node is the one that succeeded.
    pub created_start: bool,
    /// Whether this participant was told by its watch on the start node (`false` when the
    /// start node already existed when it joined).
    pub notified_by_watch: bool,
}

impl StartGate {
    /// A participant of the gate at `path` for `count` participants (nothing is sent).
    pub fn new(client: &Client, path: &str, count: u32) -> Self {
        Self {
            client: client.clone(),
            path: path.to_owned(),
            count,
            name: format!("{MEMBER_PREFIX}{}", crate::sequential::attempt_id()),
        }
    }

    /// This participant's member node path.
    pub fn node_path(&self) -> String {
        join_path(&self.path, &self.name)
    }

    /// Joins and waits, at most `timeout` (`None`: no limit), for the start.
    ///
    /// Round trips: 1 (exists-with-watch on `start`, create of the member node and
    /// getChildren are queued back to back), plus 1 for every participant that sees the
    /// count reached (its create of `start`), then the wait for the watch event. 2 more when
    /// the gate node is missing.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first, also while no server answers:
    /// the member node is then deleted, so it no longer counts (the delete is queued before
    /// `join` returns and retried in the background). A timeout that passes while this
    /// participant's create of `start` is in flight may start the others with it counted.
    ///
    /// [`Error::NoAuth`] and the connection errors. `join` is idempotent for this
    /// participant, so it can be called again after [`Error::ConnectionLoss`].
    ///
    /// # Cancellation safety
    ///
    /// Dropping it may leave the member node behind (it still counts); call
    /// [`leave`](Self::leave) or let the session end.
    ///
    /// # Session loss
    ///
    /// The member node is ephemeral and disappears with the session; the call fails with
    /// [`Error::SessionExpired`]. A start already created stays.
    pub async fn join(&self, timeout: Option<Duration>) -> Result<Started> {
        within(timeout, self.join_and_wait())
            .await
            .inspect_err(|_| withdraw(&self.client, self.node_path()))?
    }

    /// Joins and waits, without a deadline, for the start node.
    async fn join_and_wait(&self) -> Result<Started> {
        let start = join_path(&self.path, START_NODE);
        let node = self.node_path();
        let watched = self.client.exists_watch(&start);
        let created = self.client.create(&node, "", &CreateOptions::ephemeral());
        let listed = self.client.get_children(&self.path);
        let (exists, mut watch) = watched.await?;
        match created.await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(Error::NoNode) => {
                ensure_path(&self.client, &self.path).await?;
                return Box::pin(self.join_and_wait()).await;
            }
            Err(error) => return Err(error.into()),
        }
        let children = listed.await?;
        if exists.is_some() {
            return Ok(Started {
                created_start: false,
                notified_by_watch: false,
            });
        }
        let members = children
            .iter()
            .filter(|c| c.starts_with(MEMBER_PREFIX))
            .count();
        let mut created_start = false;
        if members >= as_len(self.count) {
            match self
                .client
                .create(&start, "", &CreateOptions::persistent())
                .await
            {
                Ok(_) => created_start = true,
                Err(Error::NodeExists) => {}
                Err(error) => return Err(error.into()),
            }
        }
        loop {
            if watch.changed().await?.event_type == EventType::NODE_CREATED {
                return Ok(Started {
                    created_start,
                    notified_by_watch: true,
                });
            }
            let (exists, next) = self.client.exists_watch(&start).await?;
            if exists.is_some() {
                return Ok(Started {
                    created_start,
                    notified_by_watch: false,
                });
            }
            watch = next;
        }
    }

    /// Deletes this participant's member node (`false` if it did not exist).
    ///
    /// Round trips: 1.
    ///
    /// # Errors
    ///
    /// The connection errors; `leave` is idempotent.
    ///
    /// # Cancellation safety
    ///
    /// Dropping it may or may not delete the node; call it again.
    ///
    /// # Session loss
    ///
    /// The node is ephemeral: it is gone with the session anyway.
    pub async fn leave(&self) -> Result<bool> {
        match self.client.delete(&self.node_path(), None).await {
            Ok(()) => Ok(true),
            Err(Error::NoNode) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }

    /// Deletes the start node so the gate can be used again (`false` if it did not exist).
    /// Participants still joined keep counting.
    ///
    /// Round trips: 1.
    ///
    /// # Errors
    ///
    /// The connection errors; `reset` is idempotent.
    ///
    /// # Cancellation safety
    ///
    /// Dropping it may or may not delete the node; call it again.
    ///
    /// # Session loss
    ///
    /// Not affected beyond the call failing.
    pub async fn reset(&self) -> Result<bool> {
        match self
            .client
            .delete(&join_path(&self.path, START_NODE), None)
            .await
        {
            Ok(()) => Ok(true),
            Err(Error::NoNode) => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}
