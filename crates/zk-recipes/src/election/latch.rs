//! The leader latch: the lowest ephemeral sequential node leads.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use zk_proto::{
    Client, CreateMode, CreateOptions, Error, EventType, Result, StringList, WatchedEvent,
};

use super::{
    Candidate, CandidateSession, Leadership, LeadershipEvents, Reporter, Running, child_path,
    ensure_path, name_of, run_candidate,
};
use crate::sequential::{attempt_id, is_own_node, protected_name, sort_like_curator};

/// The name Curator's `LeaderLatch` gives its nodes (`LOCK_NAME`, after the protected prefix
/// `_c_<uuid>-`).
pub const LATCH_NAME: &str = "latch-";

/// A candidate in a leader election where the lowest sequential node leads.
///
/// Once [started](LeaderLatchBuilder::start), a latch's task creates an ephemeral sequential
/// node `<path>/_c_<uuid>-latch-<seq>` holding the candidate's id, and watches the node just
/// before its own and the one before that (when the latter goes, the candidate lists again
/// before its turn, so that it then leads on its predecessor's deletion alone). It is compatible with Apache Curator's `LeaderLatch` on the same path: the
/// same names and data (the participant id), and Curator's order (every child of the path, sorted
/// by the text after `latch-`; the first leads), so Rust and Java candidates share one
/// election. The candidate leads while its node is the lowest **and** its client is
/// `Connected`: leadership is reported lost as soon as the connection is lost (see the
/// [module documentation](super)), and again when the connection is back with the session.
///
/// Giving up is [`close`](Self::close) (or dropping the latch): the node is deleted and the
/// next candidate leads. When the session ends (expired, closed) the election ends for this
/// candidate: a new session needs a new latch ([`ended`](Self::ended) tells why it ended).
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::election::LeaderLatch;
///
/// let latch = LeaderLatch::builder(&client, "/app/leader", "worker-1").start();
/// latch.wait_leader(None).await?;
/// // ... lead, until latch.leadership().wait_lost(None) returns ...
/// latch.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct LeaderLatch {
    leadership: Leadership,
    running: Running,
    attempt: String,
    client: Client,
    path: String,
}

/// How to start a [`LeaderLatch`], made by [`LeaderLatch::builder`]; [`start`](Self::start)
/// joins the election.
#[derive(Debug, Clone)]
#[must_use = "a latch joins the election only when started"]
pub struct LeaderLatchBuilder {
    client: Client,
    path: String,
    id: Bytes,
}

impl LeaderLatchBuilder {
    /// Joins the election: spawns the candidate's task, which creates its node.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> LeaderLatch {
        let (reporter, leadership) = Reporter::new(Some(&self.client));
        let attempt = attempt_id();
        let candidate = LatchCandidate {
            session: CandidateSession::new(self.client.clone()),
            path: self.path.clone(),
            attempt: attempt.clone(),
            data: self.id,
            own: None,
        };
        LeaderLatch {
            leadership,
            running: Running::spawn(|shutdown| run_candidate(candidate, reporter, shutdown)),
            attempt,
            client: self.client,
            path: self.path,
        }
    }
}

impl LeaderLatch {
    /// A candidate of the election under `path` (created with its ancestors if missing) with
    /// the candidate id `id` (the node's data, as Curator's participant id); nothing is sent
    /// before [`start`](LeaderLatchBuilder::start).
    pub fn builder(client: &Client, path: &str, id: impl Into<Bytes>) -> LeaderLatchBuilder {
        LeaderLatchBuilder {
            client: client.clone(),
            path: path.to_owned(),
            id: id.into(),
        }
    }

    /// Whether this candidate leads now.
    pub fn is_leader(&self) -> bool {
        self.leadership.is_leader()
    }

    /// A fencing token for this candidate's leadership: the creation zxid (czxid) of its node,
    /// `None` when it has no node now. Read it once leading and pass it with every action taken
    /// as leader. It strictly increases from one leader to the next: the candidates lead in
    /// the order of their nodes' sequence numbers, a node is created with a larger sequence
    /// number and zxid than every node before it, and a candidate that stands again creates a
    /// new node. (The lock's token, [`LockGuard::fencing_token`], is the same.)
    ///
    /// [`LockGuard::fencing_token`]: crate::lock::LockGuard::fencing_token
    ///
    /// # Errors
    ///
    /// The client's errors (a listing and an `exists`: two round trips).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn fencing_token(&self) -> crate::Result<Option<i64>> {
        let children = match self.client.get_children(&self.path).await {
            Ok(children) => children,
            Err(Error::NoNode) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        let Some(own) = children.iter().find(|c| is_own_node(c, &self.attempt)) else {
            return Ok(None);
        };
        let stat = self.client.exists(&child_path(&self.path, own)).await?;
        Ok(stat.map(|stat| stat.czxid))
    }

    /// The leadership of this candidate: its current value and a stream of its changes.
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// The changes of this candidate's leadership as a stream: became leader, lost the
    /// leadership (see [`LeadershipEvents`]; the same as `self.leadership().events()`).
    pub fn events(&self) -> LeadershipEvents {
        self.leadership.events()
    }

    /// The candidates of this latch's election in order, leader first (see
    /// [`participants`]).
    ///
    /// # Errors
    ///
    /// As [`participants`].
    pub async fn participants(&self) -> crate::Result<Vec<Participant>> {
        participants(&self.client, &self.path).await
    }

    /// The per-latch id in the node name (`_c_<id>-latch-<seq>`).
    pub fn attempt_id(&self) -> &str {
        &self.attempt
    }

    /// Waits until this candidate leads, at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first: the candidate stays in the
    /// election, in its place. The reason the election ended before
    /// ([`Error::SessionExpired`], [`Error::Closed`], or the unexpected server error that
    /// stopped it).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes; the candidate stays in the election.
    ///
    /// # Session loss
    ///
    /// Keeps waiting while disconnected; fails when the session ends.
    pub async fn wait_leader(&self, timeout: Option<Duration>) -> crate::Result<()> {
        self.leadership.wait_leader(timeout).await
    }

    /// Why the election ended for this candidate, `None` while it runs (see
    /// [`Leadership::ended`]).
    pub fn ended(&self) -> Option<crate::Error> {
        self.leadership.ended()
    }

    /// Waits until the election ends for this candidate, and returns why (see
    /// [`Leadership::wait_ended`]).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> crate::Error {
        self.leadership.wait_ended().await
    }

    /// Leaves the election: leadership is reported lost at once, then the candidate's node
    /// is deleted (so the next candidate leads) and the task ends.
    ///
    /// # Errors
    ///
    /// The error that deleting the node met (the node then stays until the session ends),
    /// or the reason the election had already ended with ([`Error::SessionExpired`] …).
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future still leaves the election: the task deletes the node in the
    /// background.
    ///
    /// # Session loss
    ///
    /// While disconnected, the delete waits for the connection (bounded by the client's
    /// request timeout and by the session's end); after expiry there is nothing to delete.
    pub async fn close(mut self) -> crate::Result<()> {
        Ok(self.running.stop().await?)
    }
}

/// The task behind a [`LeaderLatch`].
#[derive(Debug)]
struct LatchCandidate {
    session: CandidateSession,
    path: String,
    attempt: String,
    data: Bytes,
    own: Option<String>,
}

impl Candidate for LatchCandidate {
    const NAME: &'static str = "leader latch";

    fn session(&mut self) -> &mut CandidateSession {
        &mut self.session
    }

    fn path(&self) -> &str {
        &self.path
    }

    /// One look at the election: makes sure our node exists, leads or watches the
    /// predecessor, and returns when something changed.
    async fn step(&mut self, reporter: &Reporter) -> Result<()> {
        let client = self.session.client.clone();
        let own = match self.own.clone() {
            Some(own) => own,
            None => {
                let own = self.create().await?;
                self.own = Some(own.clone());
                own
            }
        };
        // The listing and a watch on our own node (in case someone else deletes it, and to
        // know when we lead) are queued back to back: one round trip.
        let listing = client.get_children(&self.path);
        let own_exists = client.exists_watch(&own);
        let listed = match listing.await {
            Ok(listed) => listed,
            Err(Error::NoNode) => StringList::new(),
            Err(error) => return Err(error),
        };
        let (own_stat, own_watch) = own_exists.await?;
        let mut children: Vec<&str> = listed.iter().collect();
        sort_like_curator(&mut children, &[LATCH_NAME]);
        let position = children.iter().position(|c| *c == name_of(&own));
        let (Some(position), Some(_)) = (position, own_stat) else {
            // Our node is gone (deleted by someone else): take a new place.
            reporter.set(false);
            self.own = None;
            return Ok(());
        };
        let own_changed = own_watch.changed();
        tokio::pin!(own_changed);
        if position == 0 {
            return self.lead(reporter, own_changed).await;
        }
        reporter.set(false);
        // Watch the predecessor (our own node is watched already) and, further back, the
        // node before it (queued back to back: one round trip). When that one goes (the
        // leader, most often, while the predecessor takes over), this candidate lists again
        // although it does not lead: it is then next in line with a listing that says so, and
        // leads on its predecessor's deletion alone when its turn comes. Two candidates are
        // told of a deletion, never more: no herd.
        let predecessor = client.exists_watch(&child_path(&self.path, children[position - 1]));
        let further = position
            .checked_sub(2)
            .map(|i| client.exists_watch(&child_path(&self.path, children[i])));
        let (stat, watch) = predecessor.await?;
        let further = match further {
            Some(exists) => Some(exists.await?),
            None => None,
        };
        if stat.is_none() {
            return Ok(());
        }
        let further_changed = async move {
            match further {
                // Any event of that node: look again.
                Some((Some(_), watch)) => watch.changed().await.map(drop),
                // Gone already: look again at once (the predecessor is still there).
                Some((None, _)) => Ok(()),
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            biased;
            event = &mut own_changed => {
                if event?.event_type == EventType::NODE_DELETED {
                    self.own = None;
                }
                Next::Look
            }
            changed = self.session.changed() => {
                changed?;
                Next::Look
            }
            changed = further_changed => {
                changed?;
                Next::Look
            }
            event = watch.changed() => {
                // Next in line when the listing was read: the predecessor led, and every node
                // created since sorts after ours (sequence numbers only grow), so once it is
                // gone ours is the first. Leading on the notification alone spares the listing
                // a round trip on every failover; a later step lists again as usual.
                if event?.event_type == EventType::NODE_DELETED && position == 1 {
                    Next::Lead
                } else {
                    Next::Look
                }
            }
        };
        match next {
            Next::Lead => self.lead(reporter, own_changed).await,
            Next::Look => Ok(()),
        }
    }

    /// Deletes our nodes. Listed after any create still queued, so a create whose reply was
    /// never read is found too.
    async fn remove_own(&mut self) -> Result<()> {
        self.own = None;
        for node in self.find_own().await? {
            match self.session.client.delete(&node, None).await {
                Ok(()) | Err(Error::NoNode) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// What a candidate behind another does once something changed.
enum Next {
    /// Look at the election again (list it).
    Look,
    /// Lead: the node before ours, the first, is gone.
    Lead,
}

impl LatchCandidate {
    /// Leads while the connection and our node last (`own_changed`: the watch on our node).
    async fn lead(
        &mut self,
        reporter: &Reporter,
        own_changed: Pin<&mut impl Future<Output = Result<WatchedEvent>>>,
    ) -> Result<()> {
        if self
            .session
            .lead_until_changed(reporter, own_changed)
            .await?
        {
            self.own = None;
        }
        Ok(())
    }

    /// Creates our node, finding it again when the reply was lost.
    async fn create(&mut self) -> Result<String> {
        let client = self.session.client.clone();
        let prefix = child_path(&self.path, &protected_name(&self.attempt, LATCH_NAME));
        let options = CreateOptions::new(CreateMode::EPHEMERAL_SEQUENTIAL);
        loop {
            match client.create(&prefix, self.data.clone(), &options).await {
                Ok((path, _)) => return Ok(path),
                Err(Error::NoNode) => ensure_path(&client, &self.path).await?,
                Err(error) if error.is_outcome_unknown() => {
                    self.session.wait_connected().await?;
                    if let Some(found) = self.find_own().await?.into_iter().next() {
                        return Ok(found);
                    }
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Our nodes (full paths), normally none or one.
    async fn find_own(&self) -> Result<Vec<String>> {
        let children = match self.session.client.get_children(&self.path).await {
            Ok(children) => children,
            Err(Error::NoNode) => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        Ok(children
            .iter()
            .filter(|child| is_own_node(child, &self.attempt))
            .map(|child| child_path(&self.path, child))
            .collect())
    }
}

/// The current leader of the latch election under `path`: its node name and its id (the
/// node's data); `None` when there is no candidate. The first child in Curator's order, as
/// Curator's `LeaderLatch.getLeader` reads it.
///
/// # Errors
///
/// The connection errors.
///
/// # Cancellation safety
///
/// Cancel-safe: it only reads.
///
/// # Session loss
///
/// Reads wait for the connection (bounded by the request timeout and the session's end).
pub async fn current_leader(client: &Client, path: &str) -> crate::Result<Option<(String, Bytes)>> {
    loop {
        let listed = match client.get_children(path).await {
            Ok(listed) => listed,
            Err(Error::NoNode) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        let mut children: Vec<&str> = listed.iter().collect();
        sort_like_curator(&mut children, &[LATCH_NAME]);
        let Some(first) = children.first().copied() else {
            return Ok(None);
        };
        match client.get_data(&child_path(path, first)).await {
            Ok((data, _)) => return Ok(Some((first.to_owned(), data))),
            // Gone in between: look again.
            Err(Error::NoNode) => {}
            Err(error) => return Err(error.into()),
        }
    }
}

/// One candidate of a latch election, an item of [`participants`] (Curator's `Participant`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Participant {
    /// The candidate's node name (without the election's path).
    pub node: String,
    /// The candidate's id: the node's data (Curator's participant id, as UTF-8 bytes).
    pub id: Bytes,
    /// Whether this candidate is the leader: the first participant (the first node in
    /// Curator's order that still existed when read).
    pub is_leader: bool,
}

/// The candidates of the latch election under `path`, in the order they lead: the leader
/// first, then the one that leads when it goes, and so on (Curator's
/// `LeaderLatch.getParticipants`). Every child is listed in Curator's order, then all their
/// data is read at once (two round trips); a candidate whose node went in between is left
/// out, so the first of the list is the leader at the time of the reads. Empty when there is
/// no candidate (or no election node).
///
/// As with any read, the answer may be stale by the time it is used: the leader itself
/// should rely on its [`Leadership`], not on this list.
///
/// # Errors
///
/// The connection errors.
///
/// # Cancellation safety
///
/// Cancel-safe: it only reads.
pub async fn participants(client: &Client, path: &str) -> crate::Result<Vec<Participant>> {
    participants_named(client, path, LATCH_NAME).await
}

/// The participants under `path` whose nodes are named `..<name><sequence>` (Curator's
/// latch or mutex naming), leader (the first in Curator's order) first, each with the id its
/// node holds.
pub(super) async fn participants_named(
    client: &Client,
    path: &str,
    name: &str,
) -> crate::Result<Vec<Participant>> {
    let listed = match client.get_children(path).await {
        Ok(listed) => listed,
        Err(Error::NoNode) => return Ok(Vec::new()),
        Err(error) => return Err(error.into()),
    };
    let mut children: Vec<&str> = listed.iter().collect();
    sort_like_curator(&mut children, &[name]);
    // Every read is queued before the first is awaited: one round trip for all.
    let reads: Vec<_> = children
        .iter()
        .map(|child| client.get_data(&child_path(path, child)))
        .collect();
    let mut participants = Vec::with_capacity(children.len());
    for (node, read) in children.into_iter().zip(reads) {
        match read.await {
            Ok((id, _)) => participants.push(Participant {
                node: node.to_owned(),
                id,
                is_leader: participants.is_empty(),
            }),
            Err(Error::NoNode) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(participants)
}
