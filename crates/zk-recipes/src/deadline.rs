//! Deadlines of the recipes' calls that take a timeout: every step of such a call, not only
//! its waits on a watch, ends at the deadline. A request made while no server answers waits
//! for the next connection, which may be as late as the session's end.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use zk_proto::{OneshotWatcher, Result, WatchedEvent};

/// The deadline of an optional timeout.
pub(crate) fn deadline_of(timeout: Option<Duration>) -> Option<Instant> {
    timeout.map(|timeout| Instant::now() + timeout)
}

/// Runs `step` until `deadline` (`None`: no limit); `None` when the deadline passed first.
pub(crate) async fn until<T>(
    deadline: Option<Instant>,
    step: impl Future<Output = T>,
) -> Option<T> {
    match deadline {
        None => Some(step.await),
        Some(deadline) => tokio::time::timeout_at(deadline, step).await.ok(),
    }
}

/// Waits for a one-shot watch until `deadline`; `Ok(None)` when the deadline passed first.
pub(crate) async fn wait_watch(
    watch: OneshotWatcher,
    deadline: Option<Instant>,
) -> Result<Option<WatchedEvent>> {
    until(deadline, watch.changed()).await.transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_step_ends_at_the_deadline_and_not_before() {
        let deadline = deadline_of(Some(Duration::from_secs(2)));
        let slow = tokio::time::sleep(Duration::from_secs(3));
        let started = Instant::now();
        assert_eq!(until(deadline, slow).await, None);
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        let quick = async { 7 };
        assert_eq!(
            until(deadline_of(Some(Duration::from_secs(1))), quick).await,
            Some(7)
        );
        assert_eq!(until(None, async { 8 }).await, Some(8));
    }
}
