//! The watch handles a call returns: one-shot and persistent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::session::WatchedEvent;

/// A one-shot watch: fires once, or reports why it never will.
#[derive(Debug)]
#[must_use = "a watcher does nothing unless awaited"]
pub struct OneshotWatcher {
    pub(super) rx: oneshot::Receiver<Result<WatchedEvent>>,
}

impl OneshotWatcher {
    /// Waits for the event.
    ///
    /// # Errors
    ///
    /// [`Error::SessionExpired`], [`Error::AuthFailed`] or [`Error::Closed`] when the session
    /// ended before the watch fired: the watch is lost, never silently.
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future drops the watch (the server's one-shot watch stays until it fires
    /// and is then ignored).
    pub async fn changed(self) -> Result<WatchedEvent> {
        self.rx.await.unwrap_or(Err(Error::Closed))
    }
}

/// A persistent (or persistent recursive) watch: a stream of events until removed or lost.
///
/// Events are buffered up to the client's watch capacity
/// ([`ClientBuilder::watch_capacity`](crate::ClientBuilder::watch_capacity)); a consumer that falls further behind gets
/// [`Error::WatchOverflow`] and the stream ends, because the connection never waits for a
/// slow consumer.
#[derive(Debug)]
pub struct PersistentWatcher {
    pub(super) rx: mpsc::Receiver<Result<WatchedEvent>>,
    pub(super) overflowed: Arc<AtomicBool>,
    pub(super) capacity: usize,
}

impl PersistentWatcher {
    /// The next event. After an error, the watch is gone and every later call returns the
    /// same kind of error.
    ///
    /// # Errors
    ///
    /// [`Error::WatchOverflow`], or the reason the session ended.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: an event not yet taken stays in the buffer.
    pub async fn next(&mut self) -> Result<WatchedEvent> {
        match self.rx.recv().await {
            Some(event) => event,
            None if self.overflowed.load(Ordering::Acquire) => Err(Error::WatchOverflow {
                capacity: self.capacity,
            }),
            None => Err(Error::Closed),
        }
    }
}
