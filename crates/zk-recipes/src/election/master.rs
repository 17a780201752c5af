//! The "master node" election: candidates race to create one ephemeral node.

use std::time::Duration;

use bytes::Bytes;
use zk_proto::{Client, CreateOptions, Error, EventType, Result};

use super::{
    Candidate, CandidateSession, Leadership, Reporter, Running, ensure_path, parent_of,
    run_candidate,
};

/// The head start of the previous master by default.
pub const DEFAULT_HEAD_START: Duration = Duration::from_secs(5);

/// A candidate in a "master node" election.
///
/// Candidates race to create one ephemeral node (`path`) holding their id; the one whose
/// session owns the node is the master (while its client is `Connected`, see the
/// [module documentation](super)). The others watch the node and race again when it is
/// deleted. A candidate that sees the node of *another* id deleted first waits for the head
/// start ([`MasterElectionBuilder::head_start`]), so that a master whose session expired in
/// a network blip and that comes back (with a new session, a new `MasterElection` with the
/// same id) takes the node again instead of moving the mastership. A candidate that sees a
/// node holding its own id deleted races at once.
///
/// Ids should be unique per candidate; they are compared to find the previous master.
///
/// Leaving is [`close`](Self::close); dropping the `MasterElection` leaves in the background.
#[derive(Debug)]
pub struct MasterElection {
    leadership: Leadership,
    running: Running,
}

/// How to start a [`MasterElection`], made by [`MasterElection::builder`];
/// [`start`](Self::start) joins the election.
#[derive(Debug, Clone)]
#[must_use = "a candidate joins the election only when started"]
pub struct MasterElectionBuilder {
    client: Client,
    path: String,
    id: Bytes,
    head_start: Duration,
}

impl MasterElectionBuilder {
    /// How long a candidate waits before racing after another candidate's node was deleted
    /// ([`DEFAULT_HEAD_START`] by default). Zero disables the head start.
    pub fn head_start(mut self, head_start: Duration) -> Self {
        self.head_start = head_start;
        self
    }

    /// Joins the election: spawns the candidate's task.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> MasterElection {
        let (reporter, leadership) = Reporter::new(Some(&self.client));
        let candidate = MasterCandidate {
            session: CandidateSession::new(self.client),
            path: self.path,
            id: self.id,
            head_start: self.head_start,
        };
        MasterElection {
            leadership,
            running: Running::spawn(|shutdown| run_candidate(candidate, reporter, shutdown)),
        }
    }
}

impl MasterElection {
    /// A candidate with the id `id` racing for the node `path` (its parent is created if
    /// missing); nothing is sent before [`start`](MasterElectionBuilder::start).
    pub fn builder(client: &Client, path: &str, id: impl Into<Bytes>) -> MasterElectionBuilder {
        MasterElectionBuilder {
            client: client.clone(),
            path: path.to_owned(),
            id: id.into(),
            head_start: DEFAULT_HEAD_START,
        }
    }

    /// Whether this candidate is the master now.
    pub fn is_leader(&self) -> bool {
        self.leadership.is_leader()
    }

    /// This candidate's mastership: its current value and a stream of its changes.
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// Waits until this candidate is the master, at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first: the candidate stays in the
    /// race. The reason the election ended before ([`Error::SessionExpired`],
    /// [`Error::Closed`], or the unexpected server error that stopped it).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
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

    /// Leaves the election: mastership is reported lost at once, then the master node is
    /// deleted if this session owns it, and the task ends.
    ///
    /// # Errors
    ///
    /// The error that deleting the node met (it then stays until the session ends), or the
    /// reason the election had already ended with.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future still leaves the election in the background.
    ///
    /// # Session loss
    ///
    /// While disconnected, the delete waits for the connection (bounded by the client's
    /// request timeout and by the session's end).
    pub async fn close(mut self) -> crate::Result<()> {
        Ok(self.running.stop().await?)
    }
}

/// The id held by the master node `path`, `None` when there is no master.
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
/// The read waits for the connection (bounded by the request timeout and the session's end).
pub async fn current_master(client: &Client, path: &str) -> crate::Result<Option<Bytes>> {
    match client.get_data(path).await {
        Ok((data, _)) => Ok(Some(data)),
        Err(Error::NoNode) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// The task behind a [`MasterElection`].
#[derive(Debug)]
struct MasterCandidate {
    session: CandidateSession,
    path: String,
    id: Bytes,
    head_start: Duration,
}

impl Candidate for MasterCandidate {
    const NAME: &'static str = "master election";

    fn session(&mut self) -> &mut CandidateSession {
        &mut self.session
    }

    fn path(&self) -> &str {
        &self.path
    }

    /// One race: create the node (or find it taken), then lead or watch until something
    /// changes.
    async fn step(&mut self, reporter: &Reporter) -> Result<()> {
        let client = self.session.client.clone();
        // A create whose reply was lost is found below by the owner of the node.
        match client
            .create(&self.path, self.id.clone(), &CreateOptions::ephemeral())
            .await
        {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(Error::NoNode) => return ensure_path(&client, parent_of(&self.path)).await,
            Err(error) => return Err(error),
        }
        let (data, stat, watch) = match client.get_data_watch(&self.path).await {
            Ok(found) => found,
            Err(Error::NoNode) => return Ok(()),
            Err(error) => return Err(error),
        };
        if stat.ephemeral_owner == client.session_id() {
            self.session
                .lead_until_changed(reporter, watch.changed())
                .await
                .map(drop)
        } else {
            reporter.set(false);
            tokio::select! {
                changed = self.session.changed() => changed,
                event = watch.changed() => {
                    if event?.event_type == EventType::NODE_DELETED
                        && data != self.id
                        && !self.head_start.is_zero()
                    {
                        tracing::debug!(path = %self.path, "master gone; head start for it");
                        tokio::time::sleep(self.head_start).await;
                    }
                    Ok(())
                }
            }
        }
    }

    /// Deletes the master node if this session owns it.
    async fn remove_own(&mut self) -> Result<()> {
        let client = &self.session.client;
        match client.exists(&self.path).await? {
            Some(stat) if stat.ephemeral_owner == client.session_id() => {
                match client.delete(&self.path, Some(stat.version)).await {
                    Ok(()) | Err(Error::NoNode | Error::BadVersion) => Ok(()),
                    Err(error) => Err(error),
                }
            }
            _ => Ok(()),
        }
    }
}
