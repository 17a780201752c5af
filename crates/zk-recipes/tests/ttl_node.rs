//! The persistent TTL node against a real ZooKeeper 3.8 server with TTL nodes enabled
//! (`zookeeper.extendedTypesEnabled=true`, the container manager every 100 ms): Curator's
//! layout (a container holding the data, a `touch` child with the TTL); the node outlives its
//! TTL while touched, where an untouched TTL node goes; after `close` it goes once its TTL
//! has passed, not before; an existing node is taken over; a server without TTL nodes ends the
//! recipe with `Unimplemented`. (The process killed with SIGKILL:
//! `tests/tests/fault_recipes/ttl.rs`.)

use std::time::Duration;

use zk_proto::{Client, CreateMode, CreateOptions, EventType};
use zk_recipes::Error;
use zk_recipes::persistent::PersistentTtlNode;
use zk_testkit::client::{
    connect, eventually, start_server, start_ttl_server, wall_clock_ms, within,
};

const LIMIT: Duration = Duration::from_secs(20);
const TTL: Duration = Duration::from_secs(1);

/// Waits for `path` to be deleted, on an exists watch, and returns the wall-clock time (ms)
/// when the deletion was seen.
async fn deleted_at(client: &Client, path: &str) -> i64 {
    within("deleted", LIMIT, async {
        loop {
            let (stat, watch) = client.exists_watch(path).await.expect("exists");
            if stat.is_none() {
                return wall_clock_ms();
            }
            let event = watch.changed().await.expect("event");
            if event.event_type == EventType::NODE_DELETED {
                return wall_clock_ms();
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_outlives_its_ttl_while_touched_and_goes_after_it_once_closed() {
    let server = start_ttl_server().await;
    let client = connect(&server.connect_string()).await;
    let node = PersistentTtlNode::builder(&client, "/ttl1/a/svc", TTL, "up").start();
    within("created", LIMIT, node.wait_created(None))
        .await
        .expect("created");
    assert_eq!(node.child_path(), "/ttl1/a/svc/touch");
    // Curator's layout: the node holds the data, its child `touch` is the TTL node. (The
    // server hides the container and TTL flags from a Stat's ephemeral owner: the modes show
    // in what the server does below, the child going after its TTL and the node with it.)
    let (data, _) = client.get_data("/ttl1/a/svc").await.expect("node");
    assert_eq!(&data[..], b"up");
    assert!(
        client
            .exists("/ttl1/a/svc/touch")
            .await
            .expect("child")
            .is_some()
    );
    // An untouched TTL node, created after ours, goes: the server expires TTL nodes...
    client
        .create(
            "/ttl1/control",
            "",
            &CreateOptions::new(CreateMode::PERSISTENT_WITH_TTL).with_ttl(TTL),
        )
        .await
        .expect("control node");
    deleted_at(&client, "/ttl1/control").await;
    // ... and ours, older, still lives, touched: it outlives two TTLs.
    eventually("touched for two TTLs", LIMIT, || async {
        let (_, stat) = client.get_data("/ttl1/a/svc/touch").await.expect("child");
        stat.mtime - stat.ctime >= 2 * 1000
    })
    .await;
    assert!(node.touches() >= 4, "{} touches", node.touches());
    assert!(node.ended().is_none());
    within("close", LIMIT, node.close()).await.expect("close");
    // Closed: no more touches; the child goes once its TTL passed after its last write (the
    // server and this test share a clock), then the empty container.
    let (_, last) = client.get_data("/ttl1/a/svc/touch").await.expect("child");
    let gone = deleted_at(&client, "/ttl1/a/svc/touch").await;
    assert!(
        gone >= last.mtime + 1000,
        "deleted {} ms after the last touch",
        gone - last.mtime
    );
    deleted_at(&client, "/ttl1/a/svc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_existing_node_is_taken_over_and_its_data_kept_current() {
    let server = start_ttl_server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/ttl2", "old", &CreateOptions::persistent())
        .await
        .expect("existing node");
    let node = PersistentTtlNode::builder(&client, "/ttl2", TTL, "ours")
        .touch_schedule_factor(4)
        .start();
    within("created", LIMIT, node.wait_created(None))
        .await
        .expect("created");
    let (data, _) = client.get_data("/ttl2").await.expect("node");
    assert_eq!(&data[..], b"ours");
    node.set_data("newer").await.expect("set");
    assert_eq!(&node.data()[..], b"newer");
    let (data, _) = client.get_data("/ttl2").await.expect("node");
    assert_eq!(&data[..], b"newer");
    // The child deleted by someone else is created again by the next touch.
    client
        .delete("/ttl2/touch", None)
        .await
        .expect("delete the child");
    eventually("the child is back", LIMIT, || async {
        client
            .exists("/ttl2/touch")
            .await
            .is_ok_and(|s| s.is_some())
    })
    .await;
    node.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_ttl_nodes_ends_the_recipe_with_unimplemented() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let node = PersistentTtlNode::builder(&client, "/ttl3", TTL, "").start();
    let created = within("refused", LIMIT, node.wait_created(None)).await;
    assert_eq!(created, Err(Error::Zk(zk_proto::Error::Unimplemented)));
    assert_eq!(
        within("ended", LIMIT, node.wait_ended()).await,
        Error::Zk(zk_proto::Error::Unimplemented)
    );
    assert_eq!(
        node.close().await,
        Err(Error::Zk(zk_proto::Error::Unimplemented))
    );
}
