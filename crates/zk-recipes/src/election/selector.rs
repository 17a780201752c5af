//! [`LeaderSelector`]: leadership by a mutex in Curator's `LeaderSelector` layout, a user's
//! future run while leading, then the candidate queued again.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use tokio::sync::oneshot;
use zk_proto::{Client, Error, EventType, Result, SessionState};

use super::latch::{Participant, participants_named};
use super::{Leadership, Reporter, Running, terminal};
use crate::lock::{Lock, LockGuard, MUTEX_NAME, Validity};

/// One tenure of a [`LeaderSelector`]'s candidate: what the `take_leadership` closure is given
/// when the candidate starts to lead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenure {
    node: String,
    fencing_token: i64,
    number: u64,
}

impl Tenure {
    /// The full path of the lock node this tenure holds (`<path>/_c_<uuid>-lock-<seq>`).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// A fencing token: the zxid that created the lock node. It strictly increases from one
    /// leader to the next (see [`LockGuard::fencing_token`]).
    pub fn fencing_token(&self) -> i64 {
        self.fencing_token
    }

    /// How many tenures this selector had before this one (0 for its first).
    pub fn number(&self) -> u64 {
        self.number
    }
}

/// A candidate in an election decided by a mutex, compatible with Apache Curator's
/// `LeaderSelector` on the same path: every candidate queues an `InterProcessMutex` node
/// (`<path>/_c_<uuid>-lock-<seq>`, holding the candidate's id, in Curator's order), and the
/// holder of the mutex leads. Candidates of both libraries share one election.
///
/// While leading, the selector runs the future its `take_leadership` closure returns (Curator's
/// `LeaderSelectorListener.takeLeadership`). The leadership ends when that future returns: the
/// node is deleted, and the candidate queues again at the back
/// ([`auto_requeue`](LeaderSelectorBuilder::auto_requeue), on by default). The future is
/// **dropped** (cancelled, as Curator's default `ConnectionStateListener` interrupts
/// `takeLeadership`) as soon as the client leaves the `Connected` state (`Disconnected`: the
/// session may expire and another candidate lead; Curator's `SUSPENDED` and `LOST`), when the
/// lock node is deleted by someone else, or when the selector is closed; then the node's
/// delete is queued and the candidate queues again (it waits for the connection).
///
/// The future is dropped before the node's delete is queued: no other candidate can lead
/// while it runs, as long as the session lives (see the loss rules of `docs/recipes.md`).
///
/// Leadership is also reported through a [`Leadership`] ([`leadership`](Self::leadership)),
/// `true` from just after the closure returned its future until that future is dropped.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::election::LeaderSelector;
/// let selector = LeaderSelector::builder(&client, "/election/jobs", |tenure| async move {
///     // lead: this future is dropped if the connection is lost
///     let _ = tenure.fencing_token();
/// })
/// .id("worker-1")
/// .start();
/// selector.wait_leader(None).await?;
/// selector.close().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct LeaderSelector {
    client: Client,
    path: String,
    id: Bytes,
    leadership: Leadership,
    running: Running,
}

/// The settings of a [`LeaderSelector`], from [`LeaderSelector::builder`].
#[derive(Debug)]
pub struct LeaderSelectorBuilder<F> {
    client: Client,
    path: String,
    id: Bytes,
    auto_requeue: bool,
    take_leadership: F,
}

impl LeaderSelector {
    /// A selector under `path` (the mutex's path) that runs the future `take_leadership`
    /// returns each time it leads. Nothing is sent before [`start`](LeaderSelectorBuilder::start).
    pub fn builder<F, Fut>(
        client: &Client,
        path: &str,
        take_leadership: F,
    ) -> LeaderSelectorBuilder<F>
    where
        F: FnMut(Tenure) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let path = path.trim_end_matches('/');
        LeaderSelectorBuilder {
            client: client.clone(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
            id: Bytes::new(),
            auto_requeue: true,
            take_leadership,
        }
    }

    /// The election's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// This candidate's id (the data of its lock nodes).
    pub fn id(&self) -> &Bytes {
        &self.id
    }

    /// Whether this candidate leads now (its `take_leadership` future runs).
    pub fn is_leader(&self) -> bool {
        self.leadership.is_leader()
    }

    /// A view of this candidate's leadership: its changes, waits and events.
    pub fn leadership(&self) -> Leadership {
        self.leadership.clone()
    }

    /// Waits until this candidate leads (at once if it does), at most `timeout` (`None`: no
    /// limit).
    ///
    /// # Errors
    ///
    /// [`crate::Error::Timeout`] when `timeout` passed first (the candidate stays queued); why
    /// the selector ended, if it ends first.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_leader(&self, timeout: Option<Duration>) -> crate::Result<()> {
        self.leadership.wait_leader(timeout).await
    }

    /// Why the selector ended, `None` while it runs (see [`Leadership::ended`]).
    pub fn ended(&self) -> Option<crate::Error> {
        self.leadership.ended()
    }

    /// Waits until the selector ends, and returns why (see [`Leadership::wait_ended`]).
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only observes.
    pub async fn wait_ended(&self) -> crate::Error {
        self.leadership.wait_ended().await
    }

    /// The candidates in the order they lead, the leader first (Curator's
    /// `LeaderSelector.getParticipants`): every child of the path in Curator's order, each
    /// with its data as its id; a child deleted between the listing and its read is left
    /// out. One round trip for the listing, one for all the reads.
    ///
    /// # Errors
    ///
    /// The connection errors.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn participants(&self) -> crate::Result<Vec<Participant>> {
        selector_participants(&self.client, &self.path).await
    }

    /// The leader now, `None` when no candidate is queued (Curator's `getLeader`, which gives
    /// a participant with an empty id instead).
    ///
    /// # Errors
    ///
    /// The connection errors.
    pub async fn leader(&self) -> crate::Result<Option<Participant>> {
        Ok(self.participants().await?.into_iter().next())
    }

    /// Leaves the election: a running `take_leadership` future is dropped, the leadership is
    /// reported lost, the node is deleted and the task ends.
    ///
    /// # Errors
    ///
    /// Why the selector had already ended ([`Error::SessionExpired`], ...), if it had.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future (or the selector) still leaves the election: the task drops the
    /// node in the background.
    pub async fn close(mut self) -> crate::Result<()> {
        self.running.stop().await.map_err(crate::Error::from)
    }
}

impl<F, Fut> LeaderSelectorBuilder<F>
where
    F: FnMut(Tenure) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    /// The candidate's id, stored as the data of its lock nodes (Curator's `setId`; empty by
    /// default, where Curator stores its client's default data, the local address).
    #[must_use]
    pub fn id(mut self, id: impl Into<Bytes>) -> Self {
        self.id = id.into();
        self
    }

    /// Whether the candidate queues again after each tenure (the default). With `false` it
    /// leads once (Curator's default, without `autoRequeue()`), then the selector ends with
    /// [`Error::Closed`].
    #[must_use]
    pub fn auto_requeue(mut self, requeue: bool) -> Self {
        self.auto_requeue = requeue;
        self
    }

    /// Starts the candidate's task (inside a tokio runtime).
    pub fn start(self) -> LeaderSelector {
        let (reporter, leadership) = Reporter::new(Some(&self.client));
        let task = SelectorTask {
            lock: Lock::new(&self.client, &self.path),
            client: self.client.clone(),
            path: self.path.clone(),
            id: self.id.clone(),
            auto_requeue: self.auto_requeue,
            take_leadership: self.take_leadership,
            tenures: 0,
        };
        let running = Running::spawn(move |shutdown| task.run(reporter, shutdown));
        LeaderSelector {
            client: self.client,
            path: self.path,
            id: self.id,
            leadership,
            running,
        }
    }
}

/// The candidates of the selector election under `path`, leader first (see
/// [`LeaderSelector::participants`]); for an observer that is not a candidate.
///
/// # Errors
///
/// The connection errors.
///
/// # Cancellation safety
///
/// Cancel-safe: it only reads.
pub async fn selector_participants(client: &Client, path: &str) -> crate::Result<Vec<Participant>> {
    participants_named(client, path, MUTEX_NAME).await
}

/// How a tenure ended.
enum TenureEnd {
    /// The future returned.
    Returned,
    /// The connection (or the session) was lost, or the node deleted: the future was dropped.
    Interrupted,
    /// The selector was closed: the future was dropped.
    Shutdown,
    /// The session ended (expired, closed; on a client that renews expired sessions, the
    /// client went on with another): the future was dropped, and the selector ends.
    SessionEnded(Error),
}

/// The selector's background task.
struct SelectorTask<F> {
    client: Client,
    lock: Lock,
    path: String,
    id: Bytes,
    auto_requeue: bool,
    take_leadership: F,
    tenures: u64,
}

impl<F, Fut> SelectorTask<F>
where
    F: FnMut(Tenure) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    /// Queues, leads, queues again, until closed or until the session ends.
    async fn run(mut self, reporter: Reporter, mut shutdown: oneshot::Receiver<()>) -> Result<()> {
        let ended = loop {
            let guard = tokio::select! {
                biased;
                _ = &mut shutdown => break None,
                acquired = self.queue() => match acquired {
                    Ok(guard) => guard,
                    Err(error) => break Some(error),
                },
            };
            match self.lead(guard, &reporter, &mut shutdown).await {
                TenureEnd::Shutdown => break None,
                TenureEnd::SessionEnded(error) => break Some(error),
                TenureEnd::Returned if !self.auto_requeue => break None,
                TenureEnd::Returned | TenureEnd::Interrupted => {}
            }
        };
        reporter.set(false);
        match ended {
            None => {
                reporter.end(Error::Closed);
                Ok(())
            }
            Some(error) => {
                tracing::debug!(path = %self.path, %error, "leader selector ended");
                reporter.end(error.clone());
                Err(error)
            }
        }
    }

    /// Waits for a connection, then for the mutex; retries what can be retried. An error is
    /// the end of the selector (the session's end, a refusal).
    async fn queue(&mut self) -> Result<LockGuard> {
        let mut states = self.client.state_watcher();
        loop {
            loop {
                let state = *states.borrow_and_update();
                if let Some(error) = terminal(&self.client, state) {
                    return Err(error);
                }
                if state == SessionState::Connected {
                    break;
                }
                if states.changed().await.is_err() {
                    let state = self.client.state();
                    return Err(terminal(&self.client, state).unwrap_or(Error::Closed));
                }
            }
            match self.lock.acquire_holding(self.id.clone(), None).await {
                Ok(guard) => return Ok(guard),
                // The node was deleted by someone else while queued: queue again.
                Err(crate::Error::Lost) => {}
                Err(crate::Error::Zk(Error::ConnectionLoss)) => {}
                Err(crate::Error::Zk(error)) if error.is_retryable() => {
                    tokio::time::sleep(super::RETRY_DELAY).await;
                }
                Err(crate::Error::Zk(error)) => return Err(error),
                Err(error) => {
                    // A wrapped sequence counter (no timeout is asked): try again later.
                    tracing::debug!(path = %self.path, %error, "leader selector: queue again");
                    tokio::time::sleep(super::RETRY_DELAY).await;
                }
            }
        }
    }

    /// Leads with `guard` until the future returns, the connection or the node is lost, or
    /// the selector is closed; then deletes the node.
    async fn lead(
        &mut self,
        guard: LockGuard,
        reporter: &Reporter,
        shutdown: &mut oneshot::Receiver<()>,
    ) -> TenureEnd {
        match guard.validity() {
            Validity::Held => {}
            // Suspended between the grant and now: give the node back, queue again.
            Validity::Suspended => return TenureEnd::Interrupted,
            _ => {
                let state = self.client.state();
                return TenureEnd::SessionEnded(
                    terminal(&self.client, state).unwrap_or(Error::SessionExpired),
                );
            }
        }
        let tenure = Tenure {
            node: guard.node().to_owned(),
            fencing_token: guard.fencing_token(),
            number: self.tenures,
        };
        self.tenures += 1;
        // The watch on the own node is asked before the future starts: its deletion by someone
        // else ends the tenure.
        let node_watch = self.client.get_data_watch(guard.node());
        let node = guard.node().to_owned();
        let client = self.client.clone();
        let node_gone = async move {
            let mut watch = node_watch;
            loop {
                match watch.await {
                    Ok((_, _, watcher)) => match watcher.changed().await {
                        Ok(event) if event.event_type == EventType::NODE_DELETED => return,
                        // Its data changed, or the watch was cut with the connection (then
                        // `wait_lost` below ends the tenure): watch again.
                        _ => {}
                    },
                    Err(Error::NoNode) => return,
                    // A connection error: `wait_lost` ends the tenure.
                    Err(_) => std::future::pending::<()>().await,
                }
                watch = client.get_data_watch(&node);
            }
        };
        // The closure is called first, then the leadership reported, then the future polled:
        // whatever the closure does before returning its future happens before anyone sees
        // this candidate lead.
        let work = (self.take_leadership)(tenure);
        reporter.set(true);
        let end = tokio::select! {
            biased;
            _ = &mut *shutdown => TenureEnd::Shutdown,
            lost = guard.wait_lost(None) => match lost {
                Ok(Validity::Lost) => TenureEnd::SessionEnded(
                    terminal(&self.client, self.client.state()).unwrap_or(Error::SessionExpired),
                ),
                _ => TenureEnd::Interrupted,
            },
            () = node_gone => TenureEnd::Interrupted,
            // A panic ends the tenure like a return (Curator catches what `takeLeadership`
            // throws, and requeues).
            outcome = AssertUnwindSafe(work).catch_unwind() => {
                if outcome.is_err() {
                    tracing::warn!(path = %self.path, "take_leadership panicked");
                }
                TenureEnd::Returned
            }
        };
        // The future is dropped (the select above ended); only now is the leadership
        // reported lost and the node's delete queued.
        reporter.set(false);
        drop(guard);
        end
    }
}
