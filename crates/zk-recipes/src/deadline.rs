//! Deadlines of the recipes' calls that take a timeout: every step of such a call, not only
//! its waits on a watch, ends at the deadline. A request made while no server answers waits
//! for the next connection, which may be as late as the session's end.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use zk_proto::{OneshotWatcher, WatchedEvent};

use crate::{Error, Result};

/// The deadline of an optional timeout.
pub(crate) fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|timeout| Instant::now() + timeout)
}

/// Runs `step` until `deadline` (`None`: no limit); [`Error::Timeout`] when the deadline
/// passed first.
pub(crate) async fn until<T>(
    deadline: Option<Instant>,
    step: impl Future<Output = T>,
) -> Result<T> {
    match deadline {
        None => Ok(step.await),
        Some(deadline) => tokio::time::timeout_at(deadline, step)
            .await
            .map_err(|_| Error::Timeout),
    }
}

/// Runs `step` for at most `timeout` (`None`: no limit); [`Error::Timeout`] when it passed
/// first.
pub(crate) async fn within<T>(
    timeout: Option<Duration>,
    step: impl Future<Output = T>,
) -> Result<T> {
    until(deadline_of(timeout), step).await
}

/// Waits for a one-shot watch until `deadline`; [`Error::Timeout`] when the deadline passed
/// first.
pub(crate) async fn wait_watch(
    watch: OneshotWatcher,
    deadline: Option<Instant>,
) -> Result<WatchedEvent> {
    Ok(until(deadline, watch.changed()).await??)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_step_ends_at_the_deadline_and_not_before() {
        let deadline = deadline_of(Some(Duration::from_secs(2)));
        let slow = tokio::time::sleep(Duration::from_secs(3));
        let started = Instant::now();
        assert_eq!(until(deadline, slow).await, Err(Error::Timeout));
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        let quick = async { 7 };
        assert_eq!(within(Some(Duration::from_secs(1)), quick).await, Ok(7));
        assert_eq!(until(None, async { 8 }).await, Ok(8));
    }
}
