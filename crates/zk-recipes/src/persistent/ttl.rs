//! [`PersistentTtlNode`]: a node that lives as long as its process touches it, in Curator's
//! `PersistentTtlNode` layout.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{oneshot, watch};
use zk_proto::{Client, CreateMode, CreateOptions, SessionState};

use crate::deadline::within;
use crate::lock::ensure_parents;
use crate::{Error, Result};

/// The name of the child that keeps a [`PersistentTtlNode`] alive (Curator's
/// `PersistentTtlNode.DEFAULT_CHILD_NODE_NAME`).
pub const TTL_CHILD_NAME: &str = "touch";

/// How many touches per time to live (Curator's `DEFAULT_TOUCH_SCHEDULE_FACTOR`): the child is
/// touched every `ttl / 2`.
pub const DEFAULT_TOUCH_SCHEDULE_FACTOR: u32 = 2;

/// A node that lives as long as its process does, and goes a time to live after the process
/// stops (or dies), whatever happens to its sessions: Apache Curator's `PersistentTtlNode`, on
/// the same nodes.
///
/// - `<path>` is a **container** node holding the data (created at start, with its missing
///   ancestors as containers; when it exists already, its data is replaced, as Curator's
///   `PersistentNode` does; created again, by the next touch, when deleted).
/// - `<path>/touch` is a **TTL** node (`PERSISTENT_WITH_TTL`, empty) that the recipe
///   **touches** (writes) every `ttl / factor`: created at start, then written, and created
///   again when missing. The server deletes a TTL node that has no children and was not
///   written for its TTL; then it deletes the container, which has no child any more.
/// - [`close`](Self::close) (or dropping the handle) stops the touches and deletes nothing
///   (as Curator's): the node goes a TTL later. A process killed with SIGKILL stops touching
///   the same way.
///
/// **The server** must allow TTL nodes (`zookeeper.extendedTypesEnabled=true`; otherwise the
/// first create fails with [`zk_proto::Error::Unimplemented`] and the recipe ends with it).
/// It removes expired TTL nodes and empty containers on its container manager's schedule
/// (`znode.container.checkIntervalMs`, every 60 s by default), so a node goes between its TTL
/// and its TTL plus that interval after the last touch.
///
/// Touches are writes of the child, not of the session: a disconnection delays them (they are
/// sent on the next connection; keep the TTL well above the time a reconnection takes), and
/// a session's expiry stops them only on a client that does not renew expired sessions (the
/// recipe then ends with [`zk_proto::Error::SessionExpired`]).
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use std::time::Duration;
/// use zk_recipes::persistent::PersistentTtlNode;
/// let node = PersistentTtlNode::builder(&client, "/workers/w1", Duration::from_secs(30), "up")
///     .start();
/// node.wait_created(Some(Duration::from_secs(10))).await?;
/// // ... the node lives while this process runs ...
/// node.close().await?; // gone 30 s (and at most one container check) later
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct PersistentTtlNode {
    shared: Arc<TtlShared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

/// The settings of a [`PersistentTtlNode`], from [`PersistentTtlNode::builder`].
#[derive(Debug, Clone)]
#[must_use = "start() starts the node"]
pub struct PersistentTtlNodeBuilder {
    client: Client,
    path: String,
    ttl: Duration,
    data: Bytes,
    child_name: String,
    factor: u32,
}

/// What the handle and the task share.
#[derive(Debug)]
struct TtlShared {
    client: Client,
    path: String,
    child: String,
    data: Mutex<Bytes>,
    /// How many touches succeeded (0 until the node is first in place).
    touches: watch::Sender<u64>,
    ended: Mutex<Option<Error>>,
}

impl PersistentTtlNode {
    /// A node at `path` holding `data`, kept alive by a child with time to live `ttl`.
    /// Nothing is sent before [`start`](PersistentTtlNodeBuilder::start).
    pub fn builder(
        client: &Client,
        path: &str,
        ttl: Duration,
        data: impl Into<Bytes>,
    ) -> PersistentTtlNodeBuilder {
        PersistentTtlNodeBuilder {
            client: client.clone(),
            path: path.trim_end_matches('/').to_owned(),
            ttl,
            data: data.into(),
            child_name: TTL_CHILD_NAME.to_owned(),
            factor: DEFAULT_TOUCH_SCHEDULE_FACTOR,
        }
    }

    /// The node's path (the container).
    pub fn path(&self) -> &str {
        &self.shared.path
    }

    /// The path of the child that is touched (`<path>/touch`).
    pub fn child_path(&self) -> &str {
        &self.shared.child
    }

    /// The node's data, as last given.
    pub fn data(&self) -> Bytes {
        self.shared
            .data
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many touches have succeeded so far (the first creates the nodes).
    pub fn touches(&self) -> u64 {
        *self.shared.touches.borrow()
    }

    /// Waits until the node and its child are in place (the first touch succeeded; at once
    /// afterwards), at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed first; why the recipe ended, if it ended
    /// first ([`zk_proto::Error::Unimplemented`] from a server without TTL nodes).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_created(&self, timeout: Option<Duration>) -> Result<()> {
        let mut touches = self.shared.touches.subscribe();
        // The task's last send (when it stops) wakes this too.
        let created = within(
            timeout,
            touches.wait_for(|n| *n > 0 || self.ended().is_some()),
        )
        .await?;
        match created {
            Ok(n) if *n > 0 => Ok(()),
            _ => Err(self.ended_or_closed()),
        }
    }

    /// Sets the node's data: written now, and used whenever the node is created again.
    ///
    /// # Errors
    ///
    /// The ZooKeeper errors of the write other than a missing node (the next touch then
    /// creates it with this data).
    pub async fn set_data(&self, data: impl Into<Bytes>) -> Result<()> {
        let data = data.into();
        *self
            .shared
            .data
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = data.clone();
        match self
            .shared
            .client
            .set_data(&self.shared.path, data, None)
            .await
        {
            Ok(_) | Err(zk_proto::Error::NoNode) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Why the recipe stopped by itself, `None` while it touches the node: the client's end
    /// (an expired session on a client that does not renew it, closed), or a refusal that
    /// retrying cannot cure ([`zk_proto::Error::Unimplemented`], `NoAuth`).
    pub fn ended(&self) -> Option<Error> {
        self.shared
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until the recipe stops by itself, and returns why (as [`ended`](Self::ended)).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        // Subscribed before the check: the task's last send, after it records why it ended,
        // is seen.
        let mut touches = self.shared.touches.subscribe();
        loop {
            if let Some(error) = self.ended() {
                return error;
            }
            if touches.changed().await.is_err() {
                return self.ended_or_closed();
            }
        }
    }

    /// Stops touching the node. Nothing is deleted: the node goes once its child's time to
    /// live has passed (as Curator's `close`).
    ///
    /// # Errors
    ///
    /// Why the recipe had stopped by itself, if it had.
    pub async fn close(mut self) -> Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        match self.ended() {
            None => Ok(()),
            Some(error) => Err(error),
        }
    }

    fn ended_or_closed(&self) -> Error {
        self.ended().unwrap_or(Error::Zk(zk_proto::Error::Closed))
    }
}

impl Drop for PersistentTtlNode {
    /// Stops the touches.
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

impl PersistentTtlNodeBuilder {
    /// The name of the touched child (Curator's `childNodeName`; `touch` by default).
    pub fn child_name(mut self, name: &str) -> Self {
        self.child_name = name.to_owned();
        self
    }

    /// Touches per time to live (Curator's `touchScheduleFactor`; 2 by default, at least 1):
    /// the child is touched every `ttl / factor`.
    pub fn touch_schedule_factor(mut self, factor: u32) -> Self {
        self.factor = factor.max(1);
        self
    }

    /// Starts the task that creates the nodes and then touches the child (inside a tokio
    /// runtime).
    pub fn start(self) -> PersistentTtlNode {
        let child = if self.path.is_empty() {
            format!("/{}", self.child_name)
        } else {
            format!("{}/{}", self.path, self.child_name)
        };
        let (touches, _) = watch::channel(0);
        let shared = Arc::new(TtlShared {
            client: self.client,
            path: self.path,
            child,
            data: Mutex::new(self.data),
            touches,
            ended: Mutex::new(None),
        });
        let (shutdown, shutdown_rx) = oneshot::channel();
        let every = self.ttl / self.factor;
        let task = tokio::spawn(touch_loop(shared.clone(), self.ttl, every, shutdown_rx));
        PersistentTtlNode {
            shared,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }
}

/// Touches the child now and then every `every`, until shut down or until an error that
/// retrying cannot cure.
async fn touch_loop(
    shared: Arc<TtlShared>,
    ttl: Duration,
    every: Duration,
    mut shutdown: oneshot::Receiver<()>,
) {
    let mut first = true;
    let mut ticks = tokio::time::interval(every.max(Duration::from_millis(1)));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ended = loop {
        tokio::select! {
            biased;
            _ = &mut shutdown => break None,
            _ = ticks.tick() => {}
        }
        let touched = tokio::select! {
            biased;
            _ = &mut shutdown => break None,
            touched = touch(&shared, ttl, first) => touched,
        };
        match touched {
            Ok(()) => {
                first = false;
                shared.touches.send_modify(|n| *n += 1);
            }
            // Disconnected: the next tick tries again (a request waits for the connection).
            Err(e) if e.is_retryable() => {}
            Err(e) => match terminal(&shared.client) {
                Some(end) => break Some(end),
                None if is_refusal(&e) => break Some(e),
                None => {}
            },
        }
    };
    if let Some(error) = ended {
        tracing::debug!(path = %shared.path, %error, "persistent TTL node ended");
        *shared.ended.lock().unwrap_or_else(PoisonError::into_inner) = Some(Error::Zk(error));
    }
    // The handle keeps the sender alive: a last send wakes the waiters, which then find why
    // it ended.
    shared.touches.send_modify(|_| {});
}

/// The client's terminal error, if its session is over.
fn terminal(client: &Client) -> Option<zk_proto::Error> {
    match client.state() {
        SessionState::Expired => Some(zk_proto::Error::SessionExpired),
        SessionState::AuthFailed | SessionState::Closed => {
            Some(client.ended_with().unwrap_or(zk_proto::Error::Closed))
        }
        _ => None,
    }
}

/// A refusal that the next touch would meet again.
fn is_refusal(error: &zk_proto::Error) -> bool {
    matches!(
        error,
        zk_proto::Error::Unimplemented
            | zk_proto::Error::NoAuth
            | zk_proto::Error::BadArguments
            | zk_proto::Error::InvalidAcl
            | zk_proto::Error::NoChildrenForEphemerals
    )
}

/// One touch: the child is written; when missing, the container is made (or taken over, on
/// the `first` touch) and the child created with the TTL.
async fn touch(shared: &TtlShared, ttl: Duration, first: bool) -> zk_proto::Result<()> {
    let client = &shared.client;
    if !first {
        match client.set_data(&shared.child, Bytes::new(), None).await {
            Ok(_) => return Ok(()),
            Err(zk_proto::Error::NoNode) => {}
            Err(e) => return Err(e),
        }
    }
    let data = shared
        .data
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let container = CreateOptions::new(CreateMode::CONTAINER);
    let mut made_parents = false;
    loop {
        match client.create(&shared.path, data.clone(), &container).await {
            Ok(_) => break,
            Err(zk_proto::Error::NodeExists) => {
                if first {
                    // Taken over: our data replaces what is there (Curator's PersistentNode).
                    match client.set_data(&shared.path, data, None).await {
                        Ok(_) | Err(zk_proto::Error::NoNode) => {}
                        Err(e) => return Err(e),
                    }
                }
                break;
            }
            Err(zk_proto::Error::NoNode) if !made_parents => {
                made_parents = true;
                if let Some((parent, _)) = shared.path.rsplit_once('/')
                    && !parent.is_empty()
                {
                    ensure_parents(client, parent).await.map_err(|e| match e {
                        Error::Zk(e) => e,
                        _ => zk_proto::Error::NoNode,
                    })?;
                }
            }
            Err(e) => return Err(e),
        }
    }
    let options = CreateOptions::new(CreateMode::PERSISTENT_WITH_TTL).with_ttl(ttl);
    match client.create(&shared.child, Bytes::new(), &options).await {
        Ok(_) => Ok(()),
        Err(zk_proto::Error::NodeExists) => client
            .set_data(&shared.child, Bytes::new(), None)
            .await
            .map(drop),
        Err(e) => Err(e),
    }
}
