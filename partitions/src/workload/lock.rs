//! The lock with fencing tokens (see [`super::fenced`]): each worker takes the lock, writes
//! with the guard's fencing token while the guard says the lock is held, and releases it.

use std::time::Duration;

use tokio::sync::watch;
use zk_proto::Client;
use zk_recipes::lock::Lock;

use super::fenced::{FencedRun, WORK, Worker};
use super::{Finished, Workload};
use crate::world::World;

const PATH: &str = "/partitions-lock";

/// The lock workload.
#[derive(Default)]
pub struct LockWorkload {
    run: Option<FencedRun>,
}

impl Workload for LockWorkload {
    fn name(&self) -> &'static str {
        "lock"
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        self.run = Some(FencedRun::start(world, &stop, worker)?);
        Ok(())
    }

    fn ready_for_fault(&self) -> bool {
        self.run.as_ref().is_none_or(FencedRun::side_a_holds)
    }

    fn finish(self: Box<Self>, world: &World, fault_at: Duration) -> Result<Finished, String> {
        self.run.ok_or("not started")?.finish(world, fault_at)
    }
}

/// One client's loop: acquire, write while held, release; until `stop`. Returns the holds.
async fn worker(
    client: Client,
    me: Worker,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, String> {
    let lock = Lock::new(&client, PATH);
    let mut holds = 0;
    while !*stop.borrow() {
        let guard = tokio::select! {
            acquired = lock.acquire(Some(Duration::from_secs(2))) => acquired,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        let Ok(guard) = guard else {
            // Timed out in line, or the session is away: try again (a renewed session stands
            // in line anew).
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        holds += 1;
        let term = me.begin(guard.fencing_token());
        let mut by_guard = false;
        for _ in 0..me.writes {
            if !guard.is_valid() {
                by_guard = true;
                break;
            }
            term.write();
            tokio::select! {
                _ = guard.lost(None) => {
                    by_guard = true;
                    break;
                }
                _ = tokio::time::sleep(WORK) => {}
            }
        }
        // The belief ends when the guard says so or at the release, whichever is first.
        term.end(by_guard);
        let _ = tokio::time::timeout(Duration::from_secs(5), guard.release()).await;
    }
    drop(client);
    Ok(holds)
}
