//! Create a node, read it with a watch, change it, and see the watch fire.
//!
//! ```sh
//! cargo run -p zk-recipes --example get_set_watch -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;

use zk_recipes::zk_proto::{CreateOptions, Error};

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let client = common::connect(connect).await?;
    println!("connected: session {:#x}", client.session_id());

    let path = "/example-greeting";
    match client
        .create(path, "hello", &CreateOptions::ephemeral())
        .await
    {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(error) => return Err(error.into()),
    }
    let (data, stat, watch) = client.get_data_watch(path).await?;
    println!(
        "read {:?} (version {})",
        String::from_utf8_lossy(&data),
        stat.version
    );

    client.set_data(path, "hi", None).await?;
    let event = watch.changed().await?;
    println!("watch fired: {} on {}", event.event_type, event.path);

    let (data, stat) = client.get_data(path).await?;
    println!(
        "read {:?} (version {})",
        String::from_utf8_lossy(&data),
        stat.version
    );
    client.close().await?;
    println!("closed");
    Ok(())
}
