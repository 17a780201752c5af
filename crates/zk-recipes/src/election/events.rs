//! A candidate's leadership as a stream of changes.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;
use tokio::sync::watch;

/// A change of a candidate's leadership, an item of [`LeadershipEvents`] (Curator's
/// `LeaderLatchListener.isLeader` and `notLeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeadershipEvent {
    /// The candidate leads now.
    Acquired,
    /// The candidate no longer leads (its node is no longer first, the connection was lost,
    /// the election ended).
    Lost,
}

/// A candidate's leadership changes as a [`Stream`] of [`LeadershipEvent`]s, from
/// [`Leadership::events`](super::Leadership::events) or
/// [`LeaderLatch::events`](super::LeaderLatch::events).
///
/// The items alternate, starting from "not leading": when the candidate leads at the time the
/// stream is made, the first item is [`Acquired`](LeadershipEvent::Acquired). No transition is
/// lost: when the leadership was lost and regained (or the other way round) between two polls,
/// both items come, in order. When the election ends the stream yields
/// [`Lost`](LeadershipEvent::Lost) if the last item was `Acquired`, then ends; the reason is
/// [`Leadership::ended`](super::Leadership::ended).
pub struct LeadershipEvents {
    inner: Pin<Box<dyn Stream<Item = LeadershipEvent> + Send>>,
}

impl std::fmt::Debug for LeadershipEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadershipEvents").finish_non_exhaustive()
    }
}

impl Stream for LeadershipEvents {
    type Item = LeadershipEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// The state behind [`LeadershipEvents`].
struct Following {
    rx: watch::Receiver<bool>,
    /// Whether the last item said leading.
    leading: bool,
    /// An item found with the previous one, to give next.
    pending: Option<LeadershipEvent>,
}

fn event(leading: bool) -> LeadershipEvent {
    if leading {
        LeadershipEvent::Acquired
    } else {
        LeadershipEvent::Lost
    }
}

impl LeadershipEvents {
    pub(super) fn new(mut rx: watch::Receiver<bool>) -> LeadershipEvents {
        let leading = *rx.borrow_and_update();
        let following = Following {
            rx,
            leading,
            pending: leading.then_some(LeadershipEvent::Acquired),
        };
        LeadershipEvents {
            inner: Box::pin(futures_util::stream::unfold(following, Following::next)),
        }
    }
}

impl Following {
    async fn next(mut self) -> Option<(LeadershipEvent, Following)> {
        if let Some(pending) = self.pending.take() {
            return Some((pending, self));
        }
        // Every new value of the channel is a transition (the reporter sends only changes), so
        // a new value equal to the last item means two (or an even number of) transitions.
        let closed = self.rx.changed().await.is_err();
        let leading = !closed && *self.rx.borrow_and_update();
        if closed && !self.leading {
            return None;
        }
        if leading == self.leading {
            self.pending = Some(event(leading));
            return Some((event(!leading), self));
        }
        self.leading = leading;
        Some((event(leading), self))
    }
}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    #[tokio::test]
    async fn transitions_come_in_order_and_none_is_lost() {
        let (tx, rx) = watch::channel(true);
        let mut events = LeadershipEvents::new(rx);
        assert_eq!(events.next().await, Some(LeadershipEvent::Acquired));
        // Lost and regained before the next poll: both come.
        tx.send(false).expect("send");
        tx.send(true).expect("send");
        assert_eq!(events.next().await, Some(LeadershipEvent::Lost));
        assert_eq!(events.next().await, Some(LeadershipEvent::Acquired));
        tx.send(false).expect("send");
        assert_eq!(events.next().await, Some(LeadershipEvent::Lost));
        tx.send(true).expect("send");
        // The election ends while leading: a last Lost, then the end.
        drop(tx);
        assert_eq!(events.next().await, Some(LeadershipEvent::Acquired));
        assert_eq!(events.next().await, Some(LeadershipEvent::Lost));
        assert_eq!(events.next().await, None);

        let (tx, rx) = watch::channel(false);
        let mut events = LeadershipEvents::new(rx);
        drop(tx);
        assert_eq!(events.next().await, None);
    }
}
