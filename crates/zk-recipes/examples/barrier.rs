//! A double barrier: three workers start together once all three have entered, and leave
//! together once all three are done.
//!
//! ```sh
//! cargo run -p zk-recipes --example barrier -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;
use std::time::Duration;

use zk_recipes::barrier::DoubleBarrier;

const WORKERS: u32 = 3;

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let mut workers = Vec::new();
    for worker in 0..WORKERS {
        let client = common::connect(connect).await?;
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
