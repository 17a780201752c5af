//! Two candidates join one election; the leader runs its work while it leads, then steps
//! down, and the other candidate takes over.
//!
//! ```sh
//! cargo run -p zk-recipes --example leader_latch -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;
use std::time::Duration;

use zk_recipes::election::{LeaderLatch, RunOutcome, run_while_leading};

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let path = "/example-election";
    let first = LeaderLatch::builder(&common::connect(connect).await?, path, "first").start();
    first.wait_leader(None).await?;
    // Joins after `first` leads: it waits in line.
    let second = LeaderLatch::builder(&common::connect(connect).await?, path, "second").start();

    for (name, latch) in [("first", first), ("second", second)] {
        let work = async {
            for step in 1..=3 {
                println!("{name} leads: step {step}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        match run_while_leading(&latch.leadership(), work, None).await? {
            RunOutcome::Completed(()) => println!("{name} finished its work; stepping down"),
            RunOutcome::LeadershipLost => println!("{name} lost the leadership mid-work"),
        }
        latch.close().await?;
    }
    Ok(())
}
