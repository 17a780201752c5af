//! Watch a whole subtree with one persistent recursive watch: every creation, change and
//! deletion under it arrives on one stream, with no re-registration after each event (one-shot
//! watches, as in `get_set_watch`, fire once).
//!
//! ```sh
//! cargo run -p zk-recipes --example persistent_watch -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;

use zk_recipes::zk_proto::{AddWatchMode, CreateOptions, Error, WatcherType};

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let client = common::connect(connect).await?;
    let root = "/example-tree";
    match client.create(root, "", &CreateOptions::persistent()).await {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(error) => return Err(error.into()),
    }
    let mut watcher = client
        .add_watch(root, AddWatchMode::PERSISTENT_RECURSIVE)
        .await?;
    println!("watching {root} and everything under it");

    // Three changes; the watch reports each one, in order, without being asked again.
    client
        .create(&format!("{root}/a"), "1", &CreateOptions::ephemeral())
        .await?;
    client.set_data(&format!("{root}/a"), "2", None).await?;
    client.delete(&format!("{root}/a"), None).await?;
    for _ in 0..3 {
        let event = watcher.next().await?;
        println!("{} on {}", event.event_type, event.path);
    }

    // A 3.8 server removes a persistent watch with the `ANY` watcher type.
    client.remove_watches(root, WatcherType::ANY).await?;
    client.delete(root, None).await?;
    println!("watch removed");
    Ok(())
}
