//! Two sessions take the same lock in turn; each holder fences its work with the lock's
//! fencing token, which grows with every grant.
//!
//! ```sh
//! cargo run -p zk-recipes --example lock -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;

use zk_recipes::lock::Lock;

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let alice = common::connect(connect).await?;
    let bob = common::connect(connect).await?;
    let path = "/example-lock";

    let held = Lock::new(&alice, path).acquire(None).await?;
    println!(
        "alice holds the lock, fencing token {}",
        held.fencing_token()
    );

    // Bob queues behind Alice.
    let waiting = tokio::spawn(async move { Lock::new(&bob, path).acquire(None).await });

    // Alice's protected work would pass the token to the resource it writes, which rejects
    // any token lower than the highest it has seen.
    let alice_token = held.fencing_token();
    held.release().await?;
    println!("alice released");

    let held = waiting.await??;
    println!("bob holds the lock, fencing token {}", held.fencing_token());
    assert!(
        held.fencing_token() > alice_token,
        "tokens grow with every grant"
    );
    held.release().await?;
    println!("bob released; tokens increased");
    Ok(())
}
