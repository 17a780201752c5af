//! Running work while leading, and running work once.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use zk_proto::{Client, CreateOptions, Error, Result};

use super::{Leadership, child_path, ensure_path};
use crate::lock::Lock;

/// How [`run_while_leading`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome<T> {
    /// The task completed while leading, with its output.
    Completed(T),
    /// The leadership was lost first: the task was dropped (cancelled) at its next await.
    LeadershipLost,
}

/// Waits until the candidate leads, at most `timeout` (`None`: no limit), then runs `task` as
/// long as it leads: the task is dropped as soon as the leadership is lost (connection lost,
/// session ended, resigned).
///
/// The task is not polled before the leadership is acquired, and the timeout only bounds that
/// wait: a task once started runs until it completes or the leadership is lost. To keep
/// leading work running across losses, call this in a loop.
///
/// # Errors
///
/// [`crate::Error::Timeout`] when `timeout` passed before the candidate led (the task was not
/// run; the candidate stays in the election); the reason the election ended before the
/// candidate led (see [`Leadership::wait_leader`]).
///
/// # Cancellation safety
///
/// Dropping the future drops the task; the election goes on.
///
/// # Session loss
///
/// The task is cancelled when the client leaves the `Connected` state, before another
/// candidate can be told it leads.
pub async fn run_while_leading<F: Future>(
    leadership: &Leadership,
    task: F,
    timeout: Option<Duration>,
) -> crate::Result<RunOutcome<F::Output>> {
    leadership.wait_leader(timeout).await?;
    tokio::select! {
        biased;
        _ = leadership.wait_lost(None) => Ok(RunOutcome::LeadershipLost),
        output = task => Ok(RunOutcome::Completed(output)),
    }
}

/// How [`run_once`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOnceOutcome<T> {
    /// This candidate was recorded and ran the task, with its output.
    Ran(T),
    /// A candidate had already been recorded (this one or another): the task was not run.
    AlreadyRecorded {
        /// The recorded candidate's id.
        id: Bytes,
    },
}

/// Runs `task` only if no candidate has been recorded under `path` yet: takes the lock
/// `<path>/lock` ([`crate::lock::Lock`]), waiting for it at most `timeout` (`None`: no
/// limit), reads the record `<path>/leader`, and if there is none records `id` there (a
/// persistent node), releases the lock and runs the task. The timeout only bounds the wait
/// for the lock.
///
/// The record is made with a create, which is atomic: even a holder whose lock was lost in
/// the meantime (session expired while disconnected) cannot record a second candidate, so the
/// "once" does not depend on the lock's validity. The lock serializes the candidates so that
/// each one reads a settled record. Ids should be unique per candidate. Delete the record
/// to allow another run.
///
/// # Errors
///
/// [`crate::Error::Timeout`] when `timeout` passed before the lock was taken (nothing was
/// recorded, the task was not run); the errors of taking or releasing the lock
/// ([`Lock::acquire`], [`LockGuard::release`](crate::lock::LockGuard::release)), and the
/// ZooKeeper errors of the record (as [`crate::Error::Zk`]).
///
/// # Cancellation safety
///
/// Dropping the future before the record is made leaves nothing recorded (the lock guard
/// releases the lock); dropping it after leaves the record without the task having run.
///
/// # Session loss
///
/// The lock waits across reconnects and fails when the session ends; a lost connection
/// while recording is resolved by reading the record back.
pub async fn run_once<F: Future>(
    client: &Client,
    path: &str,
    id: impl Into<Bytes>,
    task: F,
    timeout: Option<Duration>,
) -> crate::Result<RunOnceOutcome<F::Output>> {
    let id = id.into();
    let guard = Lock::new(client, &child_path(path, "lock"))
        .acquire(timeout)
        .await?;
    let record = child_path(path, "leader");
    let recorded = record_once(client, path, &record, &id).await;
    guard.release().await?;
    match recorded? {
        None => Ok(RunOnceOutcome::Ran(task.await)),
        Some(id) => Ok(RunOnceOutcome::AlreadyRecorded { id }),
    }
}

/// Records `id` at `record` unless someone is recorded; returns the earlier record.
async fn record_once(
    client: &Client,
    path: &str,
    record: &str,
    id: &Bytes,
) -> Result<Option<Bytes>> {
    // Whether a create of ours may have been applied (its reply was lost).
    let mut maybe_created = false;
    loop {
        match client.get_data(record).await {
            Ok((recorded, _)) if maybe_created && recorded == *id => return Ok(None),
            Ok((recorded, _)) => return Ok(Some(recorded)),
            Err(Error::NoNode) => {}
            Err(error) if error.is_retryable() => continue,
            Err(error) => return Err(error),
        }
        match client
            .create(record, id.clone(), &CreateOptions::persistent())
            .await
        {
            Ok(_) => return Ok(None),
            Err(Error::NoNode) => ensure_path(client, path).await?,
            Err(Error::NodeExists) => {}
            Err(error) if error.is_outcome_unknown() => maybe_created = true,
            Err(error) => return Err(error),
        }
    }
}
