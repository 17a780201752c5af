//! A double barrier: three workers start together once all three have entered, and leave
//! together once all three are done.
//!
//! ```sh
//! cargo run -p zk-recipes --example barrier -- 127.0.0.1:2181
//! ```

use std::time::Duration;

use zk_recipes::barrier::DoubleBarrier;
use zk_recipes::zk_proto::Client;

const WORKERS: usize = 3;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let connect = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into());
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let client = Client::connect(&connect).await?;
        workers.push(tokio::spawn(async move {
            let barrier = DoubleBarrier::new(&client, "/example-barrier", WORKERS);
            // Everyone must enter (and leave) in time: a timeout is `zk_recipes::Error::Timeout`.
            let limit = Some(Duration::from_secs(30));
            barrier.enter(limit).await?;
            println!("worker {worker} entered: all {WORKERS} are in");
            // The work of this round.
            tokio::time::sleep(Duration::from_millis(20 * worker as u64)).await;
            barrier.leave(limit).await?;
            println!("worker {worker} left: all {WORKERS} are done");
            Ok::<_, zk_recipes::Error>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    println!("the round is over");
    Ok(())
}
