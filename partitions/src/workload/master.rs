//! The "master node" election with fencing tokens (see [`super::fenced`]): each worker stands
//! in one `MasterElection`; once master, it reads its token (the creation zxid of the master
//! node, checked to be owned by its session) and writes with it while the election says it is
//! master; after a term of writes it leaves and stands again.

use std::time::Duration;

use tokio::sync::watch;
use zk_proto::Client;
use zk_recipes::election::MasterElection;

use super::Workload;
use super::fenced::{FencedWorkload, Worker, lead_term};

const PATH: &str = "/partitions-master/node";

/// The master-election workload.
pub fn workload() -> Box<dyn Workload> {
    Box::new(FencedWorkload::new("master", worker))
}

/// The master node's creation zxid, when this client's session owns it.
async fn token(client: &Client) -> Option<i64> {
    let stat = client.exists(PATH).await.ok().flatten()?;
    (stat.ephemeral_owner == client.session_id()).then_some(stat.czxid)
}

/// One client's loop: stand, be master for a term, leave; until `stop`. Returns the terms.
async fn worker(
    client: Client,
    me: Worker,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, String> {
    let mut terms = 0;
    while !*stop.borrow() {
        // No head start: the previous master of these runs leaves on purpose.
        let election = MasterElection::builder(&client, PATH, me.process.to_string())
            .head_start(Duration::ZERO)
            .start();
        let led = tokio::select! {
            led = election.wait_leader(Some(Duration::from_secs(10))) => led.is_ok(),
            _ = stop.wait_for(|stop| *stop) => false,
        };
        let token = match led {
            true => token(&client).await,
            false => None,
        };
        if let Some(token) = token {
            terms += 1;
            lead_term(&me, token, election.leadership()).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), election.close()).await;
        if token.is_none() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    drop(client);
    Ok(terms)
}
