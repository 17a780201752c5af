//! A node the recipe keeps in place: [`PersistentNode`], as Curator's `PersistentNode`.
//!
//! A background task creates the node and watches it: a node deleted by someone else is
//! created again, with the latest data given to the recipe; an ephemeral node that went with
//! an expired session is created again in the next session, when the client renews expired
//! sessions ([`ClientBuilder::renew_expired_sessions`](zk_proto::ClientBuilder::renew_expired_sessions)).
//!
//! [`PersistentTtlNode`] keeps a node alive as long as its process touches it (Curator's
//! `PersistentTtlNode`: a container and a TTL child), whatever happens to its sessions.
//!
//! ```no_run
//! # async fn example() -> zk_recipes::Result<()> {
//! use std::time::Duration;
//! use zk_proto::Client;
//! use zk_recipes::persistent::PersistentNode;
//!
//! let client = Client::builder()
//!     .renew_expired_sessions(true)
//!     .connect("127.0.0.1:2181")
//!     .await?;
//! let node = PersistentNode::builder(&client, "/services/api/member-", "10.0.0.7:8080")
//!     .ephemeral()
//!     .sequential()
//!     .protected()
//!     .start();
//! let path = node.wait_created(Some(Duration::from_secs(10))).await?;
//! println!("registered as {path}");
//! node.set_data("10.0.0.7:8081").await?;
//! node.close().await?;
//! # Ok(())
//! # }
//! ```

mod keeper;
mod ttl;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{oneshot, watch};
use zk_proto::{Client, CreateMode};

use crate::deadline::within;
use crate::{Error, Result};
pub use ttl::{
    DEFAULT_TOUCH_SCHEDULE_FACTOR, PersistentTtlNode, PersistentTtlNodeBuilder, TTL_CHILD_NAME,
};

/// How to start a [`PersistentNode`]: by default a persistent (not ephemeral), not sequential,
/// unprotected node.
#[derive(Debug, Clone)]
#[must_use = "start() starts the node"]
pub struct PersistentNodeBuilder {
    client: Client,
    path: String,
    data: Bytes,
    ephemeral: bool,
    sequential: bool,
    protected: bool,
}

impl PersistentNodeBuilder {
    /// An ephemeral node: it lives with the session that created it, and is created again in
    /// the next session.
    pub fn ephemeral(mut self) -> Self {
        self.ephemeral = true;
        self
    }

    /// A sequential node: the server appends a sequence number to the path, so every
    /// creation gets a new name ([`PersistentNode::path`] tells the current one).
    pub fn sequential(mut self) -> Self {
        self.sequential = true;
        self
    }

    /// A protected node: its name starts with `_c_<uuid>-` (Curator's protection), so that
    /// a create whose reply was lost is found again instead of being made twice. Use it with
    /// sequential nodes: without it, such a create is sent again, and the first node may stay
    /// as a duplicate (until its session ends, if ephemeral).
    pub fn protected(mut self) -> Self {
        self.protected = true;
        self
    }

    /// Starts the background task that creates the node and keeps it.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> PersistentNode {
        let mode = match (self.ephemeral, self.sequential) {
            (true, true) => CreateMode::EPHEMERAL_SEQUENTIAL,
            (true, false) => CreateMode::EPHEMERAL,
            (false, true) => CreateMode::PERSISTENT_SEQUENTIAL,
            (false, false) => CreateMode::PERSISTENT,
        };
        let (path_tx, path) = watch::channel(None);
        let shared = Arc::new(Shared {
            client: self.client.clone(),
            data: Mutex::new((0, self.data)),
            path,
            ended: Mutex::new(None),
        });
        let (shutdown, shutdown_rx) = oneshot::channel();
        let spec = keeper::Spec::new(&self.path, mode, self.protected);
        let task = tokio::spawn(keeper::keep(shared.clone(), spec, path_tx, shutdown_rx));
        PersistentNode {
            shared,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }
}

/// What the handle and the keeper task share.
#[derive(Debug)]
struct Shared {
    client: Client,
    /// The data, with a version the keeper compares after a create (a change made while the
    /// create was in flight is written after it).
    data: Mutex<(u64, Bytes)>,
    /// The node's current path, while it exists (as far as the keeper knows).
    path: watch::Receiver<Option<String>>,
    /// Why the keeper stopped, when it stopped by itself.
    ended: Mutex<Option<Error>>,
}

impl Shared {
    fn data(&self) -> (u64, Bytes) {
        self.data
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A node kept in place by a background task (see the [module](self) docs).
///
/// - Created at start, with its missing ancestors (as container nodes).
/// - Deleted by someone else: created again, with the latest data. Changed by someone else:
///   left as it is (as Curator does); [`set_data`](Self::set_data) writes it again.
/// - Ephemeral, and the session expired: created again once the client has a new session,
///   which needs a client that renews expired sessions; otherwise the recipe ends with
///   [`zk_proto::Error::SessionExpired`].
/// - A non-sequential path that already exists: a persistent node there is taken over (its
///   data replaced with ours, as Curator does); an ephemeral node of another session is
///   waited out, and the path taken once it is gone.
/// - [`close`](Self::close) (or dropping the handle) stops the task and deletes the node.
///
/// # Session loss
///
/// While the client is disconnected the node may or may not exist; it is checked again (and
/// created if missing) on the next connection.
#[derive(Debug)]
pub struct PersistentNode {
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl PersistentNode {
    /// A builder of a node at `path` holding `data` (for a sequential node, `path` is the
    /// prefix of the name, as for a sequential create).
    pub fn builder(client: &Client, path: &str, data: impl Into<Bytes>) -> PersistentNodeBuilder {
        PersistentNodeBuilder {
            client: client.clone(),
            path: path.to_owned(),
            data: data.into(),
            ephemeral: false,
            sequential: false,
            protected: false,
        }
    }

    /// The node's path while it exists, as far as the recipe knows (`None` before it is
    /// created, and between its deletion and its next creation).
    pub fn path(&self) -> Option<String> {
        self.shared.path.borrow().clone()
    }

    /// The data the node is kept with (the latest [`set_data`](Self::set_data)).
    pub fn data(&self) -> Bytes {
        self.shared.data().1
    }

    /// Waits until the node exists and returns its path; at most `timeout` (`None`: no
    /// limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`]; why the recipe stopped, when it did (the session's end without
    /// renewal, an error such as [`zk_proto::Error::NoAuth`]; [`zk_proto::Error::Closed`]
    /// once closed).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_created(&self, timeout: Option<Duration>) -> Result<String> {
        let mut path = self.shared.path.clone();
        let created = within(timeout, async {
            path.wait_for(Option::is_some)
                .await
                .map(|p| p.clone().unwrap_or_default())
        })
        .await?;
        created.map_err(|_| self.ended_or_closed())
    }

    /// Why the recipe stopped by itself, `None` while it keeps the node: the session's end on
    /// a client that does not renew expired sessions, or an error retrying cannot cure (such
    /// as [`zk_proto::Error::NoAuth`]).
    pub fn ended(&self) -> Option<Error> {
        self.shared
            .ended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until the recipe stops by itself, and returns why (as [`ended`](Self::ended));
    /// at once when it has. Pending as long as the node is kept (after
    /// [`close`](Self::close), which consumes the handle, it cannot be called any more).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> Error {
        let mut path = self.shared.path.clone();
        while path.changed().await.is_ok() {}
        self.ended_or_closed()
    }

    /// Sets the node's data: written now if the node exists, and used whenever it is created
    /// again.
    ///
    /// # Errors
    ///
    /// The ZooKeeper errors of the write other than a missing node (the recipe then creates
    /// it with this data); when the write fails, the data is still the one kept.
    pub async fn set_data(&self, data: impl Into<Bytes>) -> Result<()> {
        let data = data.into();
        {
            let mut kept = self
                .shared
                .data
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *kept = (kept.0 + 1, data.clone());
        }
        let Some(path) = self.path() else {
            return Ok(());
        };
        match self.shared.client.set_data(&path, data, None).await {
            Ok(_) | Err(zk_proto::Error::NoNode) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Stops keeping the node and deletes it (retried across reconnects until the session
    /// ends; a node already gone is fine).
    ///
    /// # Errors
    ///
    /// Why the recipe had stopped by itself, if it had (the node is then not deleted).
    pub async fn close(mut self) -> Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        match self.ended() {
            Some(Error::Zk(zk_proto::Error::Closed)) | None => Ok(()),
            Some(error) => Err(error),
        }
    }

    /// Why the recipe stopped, [`zk_proto::Error::Closed`] when that is not recorded.
    fn ended_or_closed(&self) -> Error {
        self.ended().unwrap_or(Error::Zk(zk_proto::Error::Closed))
    }
}

impl Drop for PersistentNode {
    /// Tells the task to stop; it deletes the node in the background.
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}
