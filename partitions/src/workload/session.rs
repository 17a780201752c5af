//! Session semantics: when side A's client learns that it may have lost its session, against
//! when the ensemble expires it.
//!
//! Side A's client holds an ephemeral node; a client of side B watches it. The client learns
//! when its state leaves `Connected` (a quorum check is held, as every recipe holds one while it
//! holds something). The ensemble's expiry is seen by side B as the node's deletion. The promise
//! (docs/partitions.md): the client learns first, whenever its session expires. A client whose
//! process is frozen cannot learn anything while frozen; that scenario reports the window.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_proto::{Client, CreateMode, CreateOptions, EventType, SessionState};

use super::{Finished, Window, Workload};
use crate::world::World;

const NODE: &str = "/partitions-session";

/// The times seen, on the run's clock.
#[derive(Default)]
struct Seen {
    /// Side A's client left `Connected` (first time after the fault).
    learned: Option<Duration>,
    /// Side B saw side A's ephemeral node deleted.
    expired: Option<Duration>,
    /// Side A's state changes, for the report.
    states: Vec<(Duration, SessionState)>,
    /// How side B saw the expiry.
    expiry_seen_by: &'static str,
}

/// The session workload.
#[derive(Default)]
pub struct SessionWorkload {
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<(&'static str, JoinHandle<Result<(), String>>)>,
    holder: Option<Client>,
}

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(|e| e.into_inner())
}

impl Workload for SessionWorkload {
    fn name(&self) -> &'static str {
        "session"
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        let holder = world.a().connect(&world.bed)?;
        let watcher = world.b().connect(&world.bed)?;
        let quorum = holder.quorum_check();
        let node = world.a().runtime.block_on({
            let holder = holder.clone();
            async move {
                holder
                    .create(
                        &format!("{NODE}-"),
                        "",
                        &CreateOptions::new(CreateMode::EPHEMERAL_SEQUENTIAL),
                    )
                    .await
                    .map(|(path, _)| path)
                    .map_err(|e| format!("the session's ephemeral node: {e}"))
            }
        })?;
        // Side A: every state change, with the run's clock.
        let start = world.start;
        let seen = self.seen.clone();
        let mut states = holder.state_watcher();
        let mut stopping = stop.clone();
        let a = world.a().runtime.spawn(async move {
            let _quorum = quorum;
            loop {
                tokio::select! {
                    changed = states.changed() => {
                        if changed.is_err() {
                            return Ok(());
                        }
                        let state = *states.borrow_and_update();
                        let mut seen = lock(&seen);
                        seen.states.push((start.elapsed(), state));
                        if state != SessionState::Connected && seen.learned.is_none() {
                            seen.learned = Some(start.elapsed());
                        }
                    }
                    _ = stopping.wait_for(|stop| *stop) => return Ok(()),
                }
            }
        });
        // Side B: the node's deletion. Side B's own session may be lost too (a fault that
        // takes the quorum away): then it watches again on its renewed session, and a node found
        // gone on that check dates the expiry no later than the check (`expiry_seen_by`).
        let seen = self.seen.clone();
        let mut stopping = stop;
        let b = world.b().runtime.spawn(async move {
            // Seen there once: side B's server may not have applied the create yet when the
            // watch is first set (reads are sequentially consistent, not linearizable), so
            // absence means expiry only after presence.
            let mut present = false;
            while !*stopping.borrow() {
                if watcher.sync(&node).await.is_err() {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
                let watch = match watcher.exists_watch(&node).await {
                    Ok((None, _)) if !present => {
                        return Err(format!(
                            "side B never saw side A's node {node} after a sync"
                        ));
                    }
                    Ok((None, _)) => {
                        let mut seen = lock(&seen);
                        seen.expired = Some(start.elapsed());
                        seen.expiry_seen_by = "a check after side B's own session came back";
                        break;
                    }
                    Ok((Some(_), watch)) => {
                        present = true;
                        watch
                    }
                    Err(_) => {
                        // Side B's session is away: try again when it can.
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        continue;
                    }
                };
                tokio::select! {
                    event = watch.changed() => {
                        if let Ok(event) = event
                            && event.event_type == EventType::NODE_DELETED
                        {
                            let mut seen = lock(&seen);
                            seen.expired = Some(start.elapsed());
                            seen.expiry_seen_by = "the deletion event";
                            break;
                        }
                    }
                    _ = stopping.wait_for(|stop| *stop) => break,
                }
            }
            drop(watcher);
            Ok(())
        });
        self.tasks = vec![("side A's states", a), ("side B's watch", b)];
        self.holder = Some(holder);
        Ok(())
    }

    fn finish(self: Box<Self>, world: &World, fault_at: Duration) -> Result<Finished, String> {
        for (what, task) in self.tasks {
            world
                .a()
                .runtime
                .block_on(task)
                .map_err(|e| format!("{what}: {e}"))??;
        }
        drop(self.holder);
        let seen = lock(&self.seen);
        let mut finished = Finished {
            operations: seen.states.len() as u64,
            ..Finished::default()
        };
        let learned = seen.learned.map(|at| at.saturating_sub(fault_at));
        let expired = seen.expired.map(|at| at.saturating_sub(fault_at));
        if let Some(learned) = learned {
            finished.learn_times.push(learned);
        }
        match (learned, expired) {
            (Some(learned), Some(expired)) if learned > expired => {
                finished.windows.push(Window {
                    length: learned - expired,
                    what: format!(
                        "side A learned {} ms after the fault, the ensemble had expired its \
                         session at {} ms",
                        learned.as_millis(),
                        expired.as_millis()
                    ),
                });
            }
            (None, Some(expired)) => {
                finished.violations.push(format!(
                    "the ensemble expired side A's session {} ms after the fault; side A never \
                     left Connected",
                    expired.as_millis()
                ));
            }
            _ => {}
        }
        finished.details = serde_json::json!({
            "learned_ms": learned.map(|d| d.as_millis() as u64),
            "expired_ms": expired.map(|d| d.as_millis() as u64),
            "expiry_seen_by": seen.expiry_seen_by,
            "states": seen
                .states
                .iter()
                .map(|(at, state)| serde_json::json!([at.as_millis() as u64, state.to_string()]))
                .collect::<Vec<_>>(),
        });
        Ok(finished)
    }
}
