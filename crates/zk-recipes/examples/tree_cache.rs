//! A tree cache: a local copy of a subtree, loaded once and kept up to date by watches, read
//! without a round trip, with a stream of what changed.
//!
//! ```sh
//! cargo run -p zk-recipes --example tree_cache -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;
use std::time::Duration;

use zk_recipes::cache::{CacheEvent, TreeCache};
use zk_recipes::zk_proto::{CreateOptions, Error};

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let client = common::connect(connect).await?;
    let root = "/example-services";
    for (path, data) in [(root, ""), ("/example-services/db", "10.0.0.5:5432")] {
        match client
            .create(path, data, &CreateOptions::persistent())
            .await
        {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(error) => return Err(error.into()),
        }
    }

    let cache = TreeCache::builder(&client, root).start();
    cache
        .wait_initialized(Some(Duration::from_secs(10)))
        .await?;
    let (snapshot, mut events) = cache.subscribe();
    println!("loaded {} nodes", snapshot.len());
    if let Some(node) = cache.get("/example-services/db") {
        let data = node.data().map(|d| String::from_utf8_lossy(d).into_owned());
        println!(
            "db is at {} (read from the cache)",
            data.unwrap_or_default()
        );
    }

    // A change on the server reaches the cache, and its stream says what changed.
    client
        .create(
            "/example-services/api",
            "10.0.0.7:8080",
            &CreateOptions::persistent(),
        )
        .await?;
    loop {
        if let CacheEvent::Added(node) = events.next().await? {
            println!("added {}", node.path());
            break;
        }
    }

    // Dropping the cache stops its watches.
    drop(cache);
    for path in ["/example-services/api", "/example-services/db", root] {
        client.delete(path, None).await?;
    }
    println!("done");
    Ok(())
}
