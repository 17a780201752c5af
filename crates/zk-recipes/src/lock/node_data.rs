//! A mutex contender whose node holds data: Curator's `InterProcessMutex.getLockNodeBytes`,
//! which its `LeaderSelector` overrides to store the participant id in the lock node.

use std::time::Duration;

use bytes::Bytes;

use zk_proto::EventType;

use super::Lock;
use super::attempt::{Attempt, Contenders, WatchFuture, Watched};
use super::guard::LockGuard;
use super::rules::{Decision, decide};
use crate::deadline::within;
use crate::sequential::attempt_id;
use crate::{Error, Result};

impl Lock {
    /// As [`Lock::acquire`] (for a lock that is not re-entrant), with `data` in the
    /// contender's node from its create on, so that every reader of the queue sees it (a
    /// leader selector's participant id).
    ///
    /// The node is created with its data and the children listed in one round trip; then the
    /// contender waits as [`Lock::acquire`] does (the same queue, rules and watches: the
    /// waiting loop is the lock's own, started from this create's listing).
    pub(crate) async fn acquire_holding(
        &self,
        data: Bytes,
        timeout: Option<Duration>,
    ) -> Result<LockGuard> {
        let contenders = &self.contenders;
        let mut attempt = Attempt {
            client: contenders.client.clone(),
            parent: contenders.parent.clone(),
            id: attempt_id(),
            node: None,
            unsure: false,
            armed: true,
        };
        let result = within(timeout, contenders.run_holding(&mut attempt, data)).await;
        match result.and_then(|acquired| acquired) {
            Ok(guard) => {
                attempt.armed = false;
                Ok(guard)
            }
            Err(e) => {
                // As in `Contenders::attempt`: dropping the armed attempt queues the delete.
                drop(attempt);
                Err::<LockGuard, Error>(e)
            }
        }
    }
}

impl Contenders {
    /// `Contenders::run` of a mutex whose node holds `data`: the same steps (create and list
    /// in one round trip, then wait on the predecessor and the node before it), with the
    /// data given to the create. `attempt.rs`'s `run` creates empty nodes only; this copy
    /// goes once `run` takes the node's data.
    async fn run_holding(&self, attempt: &mut Attempt, data: Bytes) -> Result<LockGuard> {
        let (own, mut children) = self.create_listed(attempt, data, false).await?;
        let own_name = own.name();
        let mut predecessor: Option<(String, WatchFuture)> = None;
        loop {
            let (listing, _) = match children.take() {
                Some(listing) => listing,
                None => match self.listing(false).await {
                    Ok(listing) => listing,
                    Err(e) if e.is_retryable() => continue,
                    Err(e) => return Err(e.into()),
                },
            };
            self.drop_duplicates(&listing, &attempt.id, &own_name).await;
            match decide(self.kind, &listing.iter().collect::<Vec<_>>(), &own_name)? {
                Decision::Acquired => return Ok(self.guard(own.clone())),
                Decision::Missing => return Err(Error::Lost),
                // A mutex never waits on the children (that is the semaphore's rule): list
                // again.
                Decision::WatchChildren => {}
                Decision::Watch { node, last, before } => {
                    let renew = predecessor
                        .as_ref()
                        .is_none_or(|(watched, _)| *watched != node);
                    let on_node = renew.then(|| self.watch_node(&node));
                    let on_before = before.as_ref().map(|before| self.watch_node(before));
                    if let Some(on_node) = on_node {
                        predecessor = match on_node.await? {
                            Watched::Armed(watch) => Some((node.clone(), watch)),
                            Watched::Gone if last => return Ok(self.guard(own.clone())),
                            Watched::Gone | Watched::Retry => continue,
                        };
                    }
                    let Some((_, watch)) = predecessor.as_mut() else {
                        continue;
                    };
                    let ahead = match on_before {
                        Some(on_before) => match on_before.await? {
                            Watched::Armed(watch) => Some(watch),
                            Watched::Gone | Watched::Retry => continue,
                        },
                        None => None,
                    };
                    let ahead = async move {
                        match ahead {
                            Some(watch) => watch.await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        event = watch => {
                            predecessor = None;
                            if last && event?.event_type == EventType::NODE_DELETED {
                                return Ok(self.guard(own.clone()));
                            }
                        }
                        event = ahead => {
                            event?;
                        }
                    }
                }
            }
        }
    }
}
