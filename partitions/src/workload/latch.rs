//! The leader latch with fencing tokens (see [`super::fenced`]): each worker stands in one
//! election; once it leads, it reads its fencing token and writes with it while the latch says
//! it leads; after a term of writes it leaves the election and stands again (so the leadership
//! goes round).

use std::time::Duration;

use tokio::sync::watch;
use zk_proto::Client;
use zk_recipes::election::LeaderLatch;

use super::Workload;
use super::fenced::{FencedWorkload, Worker, lead_term};

const PATH: &str = "/partitions-latch";

/// The leader-latch workload.
pub fn workload() -> Box<dyn Workload> {
    Box::new(FencedWorkload::new("latch", worker))
}

/// One client's loop: stand, lead for a term, leave; until `stop`. Returns the terms led.
async fn worker(
    client: Client,
    me: Worker,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, String> {
    let mut terms = 0;
    while !*stop.borrow() {
        let latch = LeaderLatch::builder(&client, PATH, me.process.to_string()).start();
        let led = tokio::select! {
            led = latch.wait_leader(Some(Duration::from_secs(10))) => led.is_ok(),
            _ = stop.wait_for(|stop| *stop) => false,
        };
        // The token is read once leading; a leader that cannot read it does not act.
        let token = match led {
            true => latch.fencing_token().await.ok().flatten(),
            false => None,
        };
        if let Some(token) = token {
            terms += 1;
            lead_term(&me, token, latch.leadership()).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), latch.close()).await;
        if token.is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    drop(client);
    Ok(terms)
}
