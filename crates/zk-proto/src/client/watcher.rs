//! The watch handles a call returns: one-shot and persistent.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::sync::{mpsc, oneshot};

use crate::driver::Command;
use crate::session::WatchedEvent;
use crate::{Error, Result};

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
/// Read it with [`next`](Self::next), or as a [`Stream`] of `Result<WatchedEvent>` (which ends
/// after the error that ends the watch).
///
/// The connection's ups and downs come in the stream too, as events of type
/// [`EventType::NONE`](crate::EventType::NONE) with an empty path:
/// [`KeeperState::DISCONNECTED`](crate::KeeperState::DISCONNECTED) when the connection is lost
/// (changes from then on may be missed: the server does not replay them), then
/// [`KeeperState::SYNC_CONNECTED`](crate::KeeperState::SYNC_CONNECTED) (or
/// `CONNECTED_READ_ONLY`) when the same session is connected again and the watch re-armed.
///
/// Events are buffered up to the client's watch capacity
/// ([`ClientBuilder::watch_capacity`](crate::ClientBuilder::watch_capacity)); a consumer that
/// falls further behind gets [`Error::WatchOverflow`] and the stream ends, because the
/// connection never waits for a slow consumer.
///
/// Dropping it removes the watch on the server too (`removeWatches`, queued after the calls
/// made before the drop), unless another watcher of this client is on the same path: on 3.8
/// servers a persistent watch can only be removed with every other watch of the session on
/// its path, so then it stays armed on the server and its events are dropped by the client.
#[derive(Debug)]
pub struct PersistentWatcher {
    pub(super) rx: mpsc::Receiver<Result<WatchedEvent>>,
    pub(super) overflowed: Arc<AtomicBool>,
    pub(super) capacity: usize,
    /// Tells the connection task that this watcher is gone (on drop). Weak: a watcher does
    /// not keep the session open once every `Client` handle is dropped.
    pub(super) commands: mpsc::WeakUnboundedSender<Command>,
    /// The overflow error was handed out (the stream then ends).
    pub(super) ended: bool,
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
            None => Err(self.end_error()),
        }
    }

    /// Why the channel closed: the consumer fell behind, or the client is gone.
    fn end_error(&self) -> Error {
        if self.overflowed.load(Ordering::Acquire) {
            Error::WatchOverflow {
                capacity: self.capacity,
            }
        } else {
            Error::Closed
        }
    }
}

impl Stream for PersistentWatcher {
    type Item = Result<WatchedEvent>;

    /// The events, then the error that ended the watch (the session's end, an overflow), then
    /// the end of the stream.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Ok(event))) => Poll::Ready(Some(Ok(event))),
            Poll::Ready(Some(Err(error))) => {
                self.ended = true;
                Poll::Ready(Some(Err(error)))
            }
            Poll::Ready(None) => {
                self.ended = true;
                let overflowed = self.overflowed.load(Ordering::Acquire);
                Poll::Ready(overflowed.then(|| Err(self.end_error())))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for PersistentWatcher {
    fn drop(&mut self) {
        // Closed first, so that the connection task finds it closed when told.
        self.rx.close();
        if let Some(commands) = self.commands.upgrade() {
            let _ = commands.send(Command::WatcherDropped);
        }
    }
}
