//! The lock with fencing tokens (see [`super::fenced`]): each worker takes the lock, writes
//! with the guard's fencing token while the guard says the lock is held, and releases it.

use std::time::Duration;

use tokio::sync::watch;
use zk_proto::Client;
use zk_recipes::lock::Lock;

use super::Workload;
use super::fenced::{FencedWorkload, HeldTerm, Holder, WORK, Worker};

const PATH: &str = "/partitions-lock";

/// The lock workload.
pub fn workload() -> Box<dyn Workload> {
    Box::new(FencedWorkload::new("lock", worker::<Worker>))
}

/// One client's loop: acquire, write while held, release; until `stop`. Returns the holds.
pub async fn worker<H: Holder>(
    client: Client,
    me: H,
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
        for _ in 0..me.writes() {
            if !guard.is_valid() {
                by_guard = true;
                break;
            }
            term.write();
            tokio::select! {
                _ = guard.wait_lost(None) => {
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
