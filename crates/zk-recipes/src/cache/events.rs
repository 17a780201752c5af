//! The cache's event streams: one bounded channel per subscriber. The cache never waits for a
//! subscriber: one that falls behind by more than the capacity is dropped and told so.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::sync::mpsc;

use super::{CacheEvent, Shared};
use crate::{Error, Result};

/// The task's end of a subscription.
#[derive(Debug)]
pub(crate) struct Subscriber {
    tx: mpsc::Sender<CacheEvent>,
    overflowed: Arc<AtomicBool>,
}

impl Subscriber {
    /// Queues `event`; `false` when the subscriber is gone or fell behind (it is then to be
    /// dropped: its stream ends after what it has buffered, with the overflow error).
    pub(crate) fn send(&self, event: &CacheEvent) -> bool {
        match self.tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.overflowed.store(true, Ordering::Release);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

/// A new subscription of `shared`'s cache.
pub(crate) fn channel(shared: &Arc<Shared>) -> (Subscriber, CacheEvents) {
    let (tx, rx) = mpsc::channel(shared.capacity);
    let overflowed = Arc::new(AtomicBool::new(false));
    let subscriber = Subscriber {
        tx,
        overflowed: overflowed.clone(),
    };
    let events = CacheEvents {
        rx,
        overflowed,
        shared: shared.clone(),
        ended: false,
    };
    (subscriber, events)
}

/// The events of a [`TreeCache`](super::TreeCache), in the order the cache applied them:
/// read with [`next`](Self::next) or as a [`Stream`] of `Result<CacheEvent>`.
///
/// When an event comes, the cache already holds its change (or a later state). A subscriber
/// that falls more than the cache's event capacity behind gets
/// [`zk_proto::Error::WatchOverflow`] and its stream ends: the cache never waits for a
/// subscriber (take a new [`subscribe`](super::TreeCache::subscribe) to start over from a
/// snapshot).
#[derive(Debug)]
pub struct CacheEvents {
    rx: mpsc::Receiver<CacheEvent>,
    overflowed: Arc<AtomicBool>,
    shared: Arc<Shared>,
    /// The error that ends the stream was handed out.
    ended: bool,
}

impl CacheEvents {
    /// The next event.
    ///
    /// # Errors
    ///
    /// Once the stream has ended: [`zk_proto::Error::WatchOverflow`] when this subscriber
    /// fell behind, the reason the cache ended ([`zk_proto::Error::SessionExpired`],
    /// [`zk_proto::Error::Closed`]), or `Closed` when
    /// the cache was dropped.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: an event not yet taken stays buffered.
    pub async fn next(&mut self) -> Result<CacheEvent> {
        match self.rx.recv().await {
            Some(event) => Ok(event),
            None => Err(self.end_error()),
        }
    }

    fn end_error(&self) -> Error {
        if self.overflowed.load(Ordering::Acquire) {
            return Error::Zk(zk_proto::Error::WatchOverflow {
                capacity: self.shared.capacity,
            });
        }
        Error::Zk(self.shared.end().clone().unwrap_or(zk_proto::Error::Closed))
    }
}

impl Stream for CacheEvents {
    type Item = Result<CacheEvent>;

    /// The events, then the error that ended the stream, then the end.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(event)) => Poll::Ready(Some(Ok(event))),
            Poll::Ready(None) => {
                self.ended = true;
                Poll::Ready(Some(Err(self.end_error())))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
