//! A transaction (`multi`): several writes applied all together or not at all, and a batch of
//! reads (`multi_read`) in one round trip.
//!
//! ```sh
//! cargo run -p zk-recipes --example multi -- 127.0.0.1:2181
//! ```

use std::process::ExitCode;

use zk_recipes::zk_proto::{CreateOptions, Error, MultiItem, MultiOperation, MultiReadItem};

mod common;

#[tokio::main]
async fn main() -> ExitCode {
    common::exit(run(&common::connect_string()).await)
}

async fn run(connect: &str) -> common::Result<()> {
    let client = common::connect(connect).await?;
    let (config, ready) = ("/example-config", "/example-config-ready");

    // Both nodes are created, or neither is.
    let created = client
        .multi(vec![
            MultiOperation::create(config, "v1", &CreateOptions::ephemeral()),
            MultiOperation::create(ready, "", &CreateOptions::ephemeral()),
        ])
        .await?;
    println!("created {} nodes in one transaction", created.len());

    // A compare-and-set on the config that also checks `ready`'s version. The check fails
    // (`ready` is at version 0, not 7), so the config keeps "v1".
    let items = client
        .multi(vec![
            MultiOperation::set_data(config, "v2", Some(0)),
            MultiOperation::check(ready, Some(7)),
        ])
        .await?;
    let failure = items.iter().find_map(|item| match item {
        MultiItem::Failed(Some(error)) => Some(error.clone()),
        _ => None,
    });
    println!(
        "the transaction failed ({}), nothing applied",
        failure.map_or_else(|| "no cause given".to_owned(), |e: Error| e.to_string())
    );

    // Two reads in one round trip; each has its own result.
    let reads = client
        .multi_read(vec![
            MultiOperation::get_data(config),
            MultiOperation::get_children(ready),
        ])
        .await?;
    if let Some(Ok(MultiReadItem::Data(data, stat))) = reads.first() {
        println!(
            "{config} holds {:?} (version {})",
            String::from_utf8_lossy(data),
            stat.version
        );
    }
    if let Some(Ok(MultiReadItem::Children(children))) = reads.get(1) {
        println!("{ready} has {} children", children.len());
    }
    client.close().await?;
    Ok(())
}
