//! Leader election recipes (see `docs/recipes-election.md`).
//!
//! - [`LeaderLatch`]: every candidate holds an ephemeral sequential node (Curator
//!   `LeaderLatch`-compatible names, `_c_<uuid>-latch-<seq>`); the lowest leads, each other
//!   candidate watches its predecessor and the node before that one, so that a deletion
//!   tells two candidates, never all (no herd effect). [`participants`] lists the
//!   candidates in order, leader first, with their ids.
//! - Every candidate's [`Leadership`] is a value to read or wait on, and a stream of its
//!   changes ([`Leadership::events`]).
//! - [`LeaderSelector`]: Curator's `LeaderSelector` (an `InterProcessMutex` queue whose nodes
//!   hold the candidates' ids): the holder runs a future while it leads, dropped when the
//!   connection is lost, then queues again.
//! - [`MasterElection`]: candidates race to create one ephemeral node holding their id; the
//!   losers watch it and race again when it goes, the previous master with a head start.
//! - [`elect_once`]: a one-shot election: every candidate creates a node, the lowest wins,
//!   the others remove theirs and leave.
//! - [`run_while_leading`] runs a future while a [`Leadership`] lasts and drops it when the
//!   leadership is lost; [`run_once`] runs a task only if no one has been recorded before.
//!
//! **Leadership and the session.** A leader reports the loss of its leadership as soon as
//! its client leaves the `Connected` state (`Disconnected`, `Expired`, `Closed`, …), not when
//! the session expires. Another candidate can only be told it leads after the leader's
//! ephemeral node is gone, that is after the server expired the session (a full session
//! timeout without the client), or after the leader gave up. The client notices a dead
//! connection at the latest after its read timeout (two thirds of the session timeout), so the
//! loss is reported before anyone else can lead. When the connection comes back with the
//! session intact, the node is still there and the leadership is reported again.
//!
//! **Errors.** The ZooKeeper errors these docs name ([`Error::Closed`],
//! [`Error::SessionExpired`], ...) come wrapped in [`crate::Error::Zk`]; a call's timeout is
//! [`crate::Error::Timeout`], after which the candidate is still in the election.

mod events;
mod latch;
mod master;
mod once;
mod run;
mod selector;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
// The candidates' machinery works with the client's errors (`Result` here is zk_proto's);
// the public calls return `crate::Result`.
use zk_proto::{Client, CreateOptions, Error, EventType, Result, SessionState, WatchedEvent};

use crate::deadline::within;

pub use events::{LeadershipEvent, LeadershipEvents};
pub use latch::{
    LATCH_NAME, LeaderLatch, LeaderLatchBuilder, Participant, current_leader, participants,
};
pub use master::{DEFAULT_HEAD_START, MasterElection, MasterElectionBuilder, current_master};
pub use once::{OneShotOutcome, elect_once, resign, wait_until_gone};
pub use run::{RunOnceOutcome, RunOutcome, run_once, run_while_leading};
pub use selector::{LeaderSelector, LeaderSelectorBuilder, Tenure, selector_participants};

/// A view of one candidate's leadership: whether it leads now, and its changes.
///
/// Cloning gives another independent view of the same candidate. When the election ends
/// (closed by the caller, or the session ended, or an unexpected server error), the
/// leadership is `false` for good and [`ended`](Self::ended) tells why.
#[derive(Debug, Clone)]
pub struct Leadership {
    rx: watch::Receiver<bool>,
    end: Arc<Mutex<Option<Error>>>,
}

impl Leadership {
    /// Whether the candidate leads now.
    pub fn is_leader(&self) -> bool {
        *self.rx.borrow()
    }

    /// A `tokio::sync::watch` receiver of the leadership (`true` while leading); its
    /// `changed()` fails once the election has ended.
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.rx.clone()
    }

    /// The changes of the leadership from now on, as a stream of [`LeadershipEvent`]s (the
    /// first is [`Acquired`](LeadershipEvent::Acquired) if the candidate leads now). Each
    /// stream is independent of the others and of this view.
    pub fn events(&self) -> LeadershipEvents {
        LeadershipEvents::new(self.rx.clone())
    }

    /// Why the election ended, `None` while it runs: [`Error::Closed`] (as
    /// [`crate::Error::Zk`]) when it was closed by the caller, the session's end
    /// ([`Error::SessionExpired`], ...) or the unexpected server error that stopped it.
    pub fn ended(&self) -> Option<crate::Error> {
        self.end_cause().map(crate::Error::Zk)
    }

    /// Waits until the election ends, and returns why (as [`ended`](Self::ended)); at once
    /// when it has ended. Pending as long as the candidate runs.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> crate::Error {
        let mut rx = self.rx.clone();
        while rx.changed().await.is_ok() {}
        crate::Error::Zk(self.end_cause().unwrap_or(Error::Closed))
    }

    /// The client's error the election ended with, `None` while it runs.
    fn end_cause(&self) -> Option<Error> {
        self.end.lock().ok().and_then(|end| end.clone())
    }

    /// Waits until the candidate leads (at once if it does), at most `timeout` (`None`: no
    /// limit).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first: the candidate stays in the
    /// election. The reason the election ended ([`Error::Closed`] when it was closed by the
    /// caller, [`Error::SessionExpired`] …) if it ends before this candidate leads.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    ///
    /// # Session loss
    ///
    /// Leadership is never reported while the client is not `Connected`; this keeps waiting
    /// through a disconnection, and fails when the session ends.
    pub async fn wait_leader(&self, timeout: Option<Duration>) -> crate::Result<()> {
        let mut rx = self.rx.clone();
        let leading = within(timeout, rx.wait_for(|leading| *leading))
            .await?
            .is_ok();
        if leading {
            Ok(())
        } else {
            Err(self.end_cause().unwrap_or(Error::Closed).into())
        }
    }

    /// Waits until the candidate does not lead (at once if it does not), or the election
    /// ended; at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed while the candidate led (it still
    /// leads); no other: an ended election is a lost leadership.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    ///
    /// # Session loss
    ///
    /// Returns as soon as the client leaves the `Connected` state.
    pub async fn wait_lost(&self, timeout: Option<Duration>) -> crate::Result<()> {
        let mut rx = self.rx.clone();
        let _ = within(timeout, rx.wait_for(|leading| !*leading)).await?;
        Ok(())
    }

    /// Waits for the next change of the leadership, at most `timeout` (`None`: no limit),
    /// and returns the new value. Like a stream's `next`, it takes `&mut self`: this view
    /// remembers the last value it returned.
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed with no change; the reason the
    /// election ended, once it has.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: a change not yet seen is seen by the next call (also after a timeout).
    ///
    /// # Session loss
    ///
    /// The loss of the connection is a change to `false`.
    pub async fn changed(&mut self, timeout: Option<Duration>) -> crate::Result<bool> {
        match within(timeout, self.rx.changed()).await? {
            Ok(()) => Ok(*self.rx.borrow_and_update()),
            Err(_) => Err(self.end_cause().unwrap_or(Error::Closed).into()),
        }
    }
}

/// The sending side of a [`Leadership`], owned by a candidate's task.
#[derive(Debug)]
struct Reporter {
    tx: watch::Sender<bool>,
    end: Arc<Mutex<Option<Error>>>,
    /// The candidate's client (`None` in unit tests, which have no server).
    client: Option<Client>,
    /// The session's quorum check, held while leading: a server cut off from the leader is
    /// left before the ensemble could expire the session and elect another candidate.
    quorum: Mutex<Option<zk_proto::QuorumCheck>>,
}

impl Reporter {
    fn new(client: Option<&Client>) -> (Reporter, Leadership) {
        let (tx, rx) = watch::channel(false);
        let end = Arc::new(Mutex::new(None));
        (
            Reporter {
                tx,
                end: end.clone(),
                client: client.cloned(),
                quorum: Mutex::new(None),
            },
            Leadership { rx, end },
        )
    }

    fn set(&self, leading: bool) {
        if let (Some(client), Ok(mut quorum)) = (&self.client, self.quorum.lock()) {
            match (leading, quorum.is_some()) {
                (true, false) => *quorum = Some(client.quorum_check()),
                (false, true) => *quorum = None,
                _ => {}
            }
        }
        self.tx.send_if_modified(|current| {
            let changed = *current != leading;
            *current = leading;
            changed
        });
        if leading {
            tracing::debug!("leadership acquired");
        }
    }

    /// Ends the election: not leading, for good. The reason is stored before the channel
    /// closes, so a receiver that sees it closed finds the reason.
    fn end(self, reason: Error) {
        self.set(false);
        if let Ok(mut end) = self.end.lock() {
            *end = Some(reason);
        }
        drop(self.tx);
    }
}

/// Reports the leadership lost whenever the client leaves the `Connected` state, whatever the
/// candidate is awaiting at that moment (a request queued while disconnected waits for the
/// next connection). Never completes. Runs in the candidate's task, so it cannot interleave
/// with the candidate's synchronous "connected? then leading" check.
async fn loss_guard(client: &Client, reporter: &Reporter) {
    let mut states = client.state_watcher();
    // The session last seen connected: a renewed session may come back as `Connected`
    // without the states between being seen, and leads nothing of the old one's.
    let mut seen = None;
    while states.changed().await.is_ok() {
        let state = *states.borrow_and_update();
        let session = client.session_id();
        if state != SessionState::Connected || seen.is_some_and(|s| s != session) {
            reporter.set(false);
        }
        if state == SessionState::Connected {
            seen = Some(session);
        }
    }
    std::future::pending::<()>().await;
}

/// How long a candidate waits before retrying after a retryable error other than a
/// connection loss (which waits for the reconnection instead).
const RETRY_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// A candidate's background task: what the leader latch and the master election differ in.
/// [`run_candidate`] is the loop they share.
trait Candidate {
    /// The recipe's name, for diagnostics.
    const NAME: &'static str;

    /// The candidate's session.
    fn session(&mut self) -> &mut CandidateSession;

    /// The election's path, for diagnostics.
    fn path(&self) -> &str;

    /// One look at the election; returns when something changed.
    async fn step(&mut self, reporter: &Reporter) -> Result<()>;

    /// Withdraws: deletes this candidate's node(s).
    async fn remove_own(&mut self) -> Result<()>;
}

/// A candidate's task, spawned by [`Running::spawn`]: stopping it withdraws the candidate.
/// Dropped, it tells the task to withdraw in the background.
#[derive(Debug)]
struct Running {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<()>>>,
}

impl Running {
    /// Spawns `run` (a [`run_candidate`] call) with the receiver that tells it to stop.
    fn spawn<F>(run: impl FnOnce(tokio::sync::oneshot::Receiver<()>) -> F) -> Running
    where
        F: std::future::Future<Output = Result<()>> + Send + 'static,
    {
        let (shutdown, shutdown_rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(run(shutdown_rx));
        Running {
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// Tells the task to withdraw and waits for it: what withdrawing met, or why the task
    /// had already ended.
    async fn stop(&mut self) -> Result<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        match self.task.take() {
            Some(task) => task.await.unwrap_or(Err(Error::Closed)),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Runs a candidate until shut down or until an error that retrying cannot cure, reporting
/// the leadership lost whenever the session leaves `Connected`; withdraws at the end.
async fn run_candidate<C: Candidate>(
    mut candidate: C,
    reporter: Reporter,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) -> Result<()> {
    let client = candidate.session().client.clone();
    let ended = tokio::select! {
        biased;
        _ = &mut shutdown => None,
        error = drive(&mut candidate, &reporter) => Some(error),
        () = loss_guard(&client, &reporter) => None,
    };
    reporter.set(false);
    match ended {
        None => {
            let removed = candidate.remove_own().await;
            reporter.end(Error::Closed);
            removed
        }
        Some(error) => {
            tracing::debug!(path = %candidate.path(), %error, "{} ended", C::NAME);
            if !error.is_terminal() {
                let _ = candidate.remove_own().await;
            }
            reporter.end(error.clone());
            Err(error)
        }
    }
}

/// Runs the candidate's steps until an error that retrying cannot cure.
async fn drive<C: Candidate>(candidate: &mut C, reporter: &Reporter) -> Error {
    loop {
        let step = async {
            candidate.session().wait_connected().await?;
            candidate.step(reporter).await
        };
        match step.await {
            Ok(()) => {}
            Err(error) if error.is_retryable() => {
                reporter.set(false);
                if !matches!(error, Error::ConnectionLoss) {
                    tokio::time::sleep(RETRY_DELAY).await;
                }
            }
            Err(error) => return error,
        }
    }
}

/// The error that a terminal session state stands for (with the client's cause of an
/// authentication failure).
fn terminal(client: &Client, state: SessionState) -> Option<Error> {
    match state {
        SessionState::Expired => Some(Error::SessionExpired),
        SessionState::AuthFailed | SessionState::Closed => {
            Some(client.ended_with().unwrap_or(Error::Closed))
        }
        _ => None,
    }
}

/// The session as a candidate sees it.
#[derive(Debug)]
struct CandidateSession {
    client: Client,
    states: watch::Receiver<SessionState>,
    /// The session the candidate runs in, once connected: a client that renews expired
    /// sessions goes on with another, and the candidate's node went with the old one.
    id: Option<i64>,
}

impl CandidateSession {
    fn new(client: Client) -> CandidateSession {
        let states = client.state_watcher();
        CandidateSession {
            client,
            states,
            id: None,
        }
    }

    /// Whether the client is connected to a read/write server right now (marks the state
    /// seen, so that [`changed`](Self::changed) wakes on the next change).
    ///
    /// A read-only server has lost its quorum, which may expire our session: no leadership
    /// there.
    fn connected_now(&mut self) -> Result<bool> {
        let seen = *self.states.borrow_and_update();
        let now = self.client.state();
        if let Some(error) = terminal(&self.client, now).or_else(|| terminal(&self.client, seen)) {
            return Err(error);
        }
        let connected = seen == SessionState::Connected && now == SessionState::Connected;
        if connected {
            let current = self.client.session_id();
            match self.id {
                Some(id) if id != current => return Err(Error::SessionExpired),
                _ => self.id = Some(current),
            }
        }
        Ok(connected)
    }

    /// Waits until connected to a read/write server.
    async fn wait_connected(&mut self) -> Result<()> {
        while !self.connected_now()? {
            self.changed().await?;
        }
        Ok(())
    }

    /// Leads while the connection lasts and `node_changed` (the watch on the candidate's
    /// node) has not fired: reports the leadership, then its loss when the session's state
    /// changes (whatever the new state, it is not the connection it led on) or the node is
    /// deleted. Returns whether the node was deleted.
    async fn lead_until_changed(
        &mut self,
        reporter: &Reporter,
        node_changed: impl Future<Output = Result<WatchedEvent>>,
    ) -> Result<bool> {
        if !self.connected_now()? {
            reporter.set(false);
            return Ok(false);
        }
        reporter.set(true);
        tokio::select! {
            changed = self.changed() => {
                reporter.set(false);
                changed.map(|()| false)
            }
            event = node_changed => {
                let deleted = event?.event_type == EventType::NODE_DELETED;
                if deleted {
                    reporter.set(false);
                }
                Ok(deleted)
            }
        }
    }

    /// Waits for the next change of the session state.
    async fn changed(&mut self) -> Result<()> {
        if self.states.changed().await.is_err() {
            return Err(terminal(&self.client, self.client.state()).unwrap_or(Error::Closed));
        }
        Ok(())
    }
}

/// Creates `path` and its missing ancestors as persistent nodes (existing ones are fine).
async fn ensure_path(client: &Client, path: &str) -> Result<()> {
    if path == "/" {
        return Ok(());
    }
    let mut end = 0;
    let options = CreateOptions::persistent();
    while end < path.len() {
        end = path[end + 1..]
            .find('/')
            .map_or(path.len(), |i| end + 1 + i);
        match client.create(&path[..end], Vec::new(), &options).await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The parent of an absolute path (`/` for a top-level node).
fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last component of a path.
fn name_of(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `parent/child` (with a single `/` when the parent is the root).
fn child_path(parent: &str, child: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{child}")
    } else {
        format!("{parent}/{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_and_join() {
        assert_eq!(parent_of("/a/b/c"), "/a/b");
        assert_eq!(parent_of("/a"), "/");
        assert_eq!(name_of("/a/b/c"), "c");
        assert_eq!(child_path("/", "x"), "/x");
        assert_eq!(child_path("/a", "x"), "/a/x");
    }

    #[test]
    fn an_ended_leadership_tells_why() {
        let (reporter, leadership) = Reporter::new(None);
        reporter.set(true);
        assert!(leadership.is_leader());
        reporter.end(Error::SessionExpired);
        assert!(!leadership.is_leader());
        assert_eq!(
            leadership.ended(),
            Some(crate::Error::Zk(Error::SessionExpired))
        );
    }

    #[tokio::test]
    async fn waiting_for_the_end_gives_the_reason_once_ended() {
        let (reporter, leadership) = Reporter::new(None);
        let waiting = tokio::spawn({
            let leadership = leadership.clone();
            async move { leadership.wait_ended().await }
        });
        assert_eq!(leadership.ended(), None);
        reporter.end(Error::SessionExpired);
        let reason = waiting.await.expect("the waiter does not panic");
        assert_eq!(reason, crate::Error::Zk(Error::SessionExpired));
        assert_eq!(leadership.wait_ended().await, reason);
    }
}
