//! The persistent TTL node under faults, on a server with TTL nodes (container manager every
//! 100 ms): a process killed with SIGKILL, ours (this test binary as a child) or Curator's
//! `PersistentTtlNode`, leaves a node that outlived its TTL while the process lived and goes
//! no earlier than a TTL after its last touch; ours and Curator's keep one node together, so
//! it lives on when Curator's process dies; a cut longer than the TTL lets the node go and
//! the next touch after the reconnection makes it again; an expired session ends the recipe
//! on a plain client.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use zk_proto::{Client, EventType, SessionState};
use zk_recipes::Error as RecipeError;
use zk_recipes::persistent::PersistentTtlNode;
use zk_testkit::client::{
    builder, connect_proxied, connect_with, eventually, expire_session, serial, spawn_test_child,
    start_ttl_server, wait_child_line, wait_for_state, wall_clock_ms, within,
};

use super::WITHIN;

const TTL: Duration = Duration::from_secs(1);

/// Waits (on exists watches) until `path` exists (`true`) or is deleted (`false`); returns
/// the wall-clock time (ms) when that was seen.
async fn wait_exists_at(client: &Client, path: &str, present: bool) -> i64 {
    within("the node's change", WITHIN, async {
        loop {
            let (stat, watch) = client.exists_watch(path).await.expect("exists");
            if stat.is_some() == present {
                return wall_clock_ms();
            }
            let event = watch.changed().await.expect("event");
            let created = event.event_type == EventType::NODE_CREATED;
            if event.event_type == EventType::NODE_DELETED && !present || created && present {
                return wall_clock_ms();
            }
        }
    })
    .await
}

/// Waits until the child at `touch` has been touched for two TTLs since its creation: it
/// outlived its TTL.
async fn outlived_two_ttls(client: &Client, touch: &str) {
    wait_exists_at(client, touch, true).await;
    eventually("touched for two TTLs", WITHIN, || async {
        let (_, stat) = client.get_data(touch).await.expect("touch node");
        stat.mtime - stat.ctime >= 2 * 1000
    })
    .await;
}

/// Kills `child` with SIGKILL, then checks that `node`'s child goes no earlier than a TTL
/// after its last touch (the server and this test share a clock), and then `node` itself.
async fn killed_then_gone(client: &Client, mut child: tokio::process::Child, node: &str) {
    child.start_kill().expect("kill -9");
    let _ = child.wait().await;
    let touch = format!("{node}/touch");
    let last = match client.get_data(&touch).await {
        Ok((_, stat)) => stat.mtime,
        Err(e) => panic!("the touch node is gone at the kill already: {e}"),
    };
    let gone = wait_exists_at(client, &touch, false).await;
    assert!(
        gone >= last + 1000,
        "deleted {} ms after the last touch",
        gone - last
    );
    wait_exists_at(client, node, false).await;
}

/// The environment variable that turns [`ttl_child`] into the process of
/// [`a_killed_process_leaves_its_node_to_go_a_ttl_after_its_last_touch`]: the connect string.
const CHILD_ENV: &str = "ZK_TTL_FAULT_CHILD";

/// Not a test of its own: run by
/// [`a_killed_process_leaves_its_node_to_go_a_ttl_after_its_last_touch`] as a child process
/// (this test binary, filtered to this test, with [`CHILD_ENV`] set), it keeps a TTL node,
/// prints `child-touching`, and waits to be killed. Without the variable it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_child() {
    let Ok(connect_string) = std::env::var(CHILD_ENV) else {
        return;
    };
    let client = connect_with(builder(), &connect_string).await;
    let node = PersistentTtlNode::builder(&client, "/fttl1/node", TTL, "child").start();
    node.wait_created(Some(WITHIN)).await.expect("created");
    // libtest has printed "test ... " without a newline: this ends that line.
    println!("child-touching");
    // The child's lifetime: the parent kills it long before (a bound, should the parent die).
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(node);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_process_leaves_its_node_to_go_a_ttl_after_its_last_touch() {
    let _serial = serial().await;
    let server = start_ttl_server().await;
    let client = connect_with(builder(), &server.connect_string()).await;
    let mut child = spawn_test_child("ttl::ttl_child", CHILD_ENV, &server.connect_string());
    let _stdout = wait_child_line(&mut child, "child-touching", WITHIN * 2).await;
    outlived_two_ttls(&client, "/fttl1/node/touch").await;
    killed_then_gone(&client, child, "/fttl1/node").await;
}

/// `tests/curator/CuratorTtlNode.java` keeping `path` with `TTL`.
fn curator_ttl_node(connect_string: &str, path: &str) -> tokio::process::Child {
    let classpath = zk_testkit::java::curator_classpath()
        .expect("Apache Curator is installed (scripts/install-curator.sh)");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/zk-recipes/tests/curator/CuratorTtlNode.java");
    let ttl_ms = TTL.as_millis().to_string();
    tokio::process::Command::from(
        zk_testkit::java::source_program(&classpath, &source).expect("java"),
    )
    .args([connect_string, path, &ttl_ms, "curator"])
    .stdout(Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .expect("start java")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_curator_process_leaves_its_node_to_go_a_ttl_after_its_last_touch() {
    let _serial = serial().await;
    let server = start_ttl_server().await;
    let client = connect_with(builder(), &server.connect_string()).await;
    let mut java = curator_ttl_node(&server.connect_string(), "/fttl2/node");
    let _stdout = wait_child_line(&mut java, "started", WITHIN * 2).await;
    // Curator's layout, as ours: the node with the data and its `touch` child.
    outlived_two_ttls(&client, "/fttl2/node/touch").await;
    let (data, _) = client.get_data("/fttl2/node").await.expect("node");
    assert_eq!(&data[..], b"curator");
    killed_then_gone(&client, java, "/fttl2/node").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ours_and_curators_keep_one_node_which_lives_on_when_curators_process_dies() {
    let _serial = serial().await;
    let server = start_ttl_server().await;
    let client = connect_with(builder(), &server.connect_string()).await;
    let mut java = curator_ttl_node(&server.connect_string(), "/fttl3/node");
    let _stdout = wait_child_line(&mut java, "started", WITHIN * 2).await;
    let ours = PersistentTtlNode::builder(&client, "/fttl3/node", TTL, "ours").start();
    within("ours created", WITHIN, ours.wait_created(None))
        .await
        .expect("created");
    java.start_kill().expect("kill -9");
    let _ = java.wait().await;
    // Curator's touches stopped with its process; ours keep the same child alive.
    let killed = wall_clock_ms();
    eventually("touched for two TTLs after the kill", WITHIN, || async {
        let (_, stat) = client
            .get_data("/fttl3/node/touch")
            .await
            .expect("touch node");
        stat.mtime >= killed + 2 * 1000
    })
    .await;
    ours.close().await.expect("close");
    wait_exists_at(&client, "/fttl3/node/touch", false).await;
    wait_exists_at(&client, "/fttl3/node", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_longer_than_the_ttl_lets_the_node_go_and_the_next_touch_makes_it_again() {
    let _serial = serial().await;
    let server = start_ttl_server().await;
    let observer = connect_with(builder(), &server.connect_string()).await;
    // The session outlives the cut (10 s); the node's TTL (1 s) does not.
    let cut = connect_proxied(
        server.addr(),
        builder().session_timeout(Duration::from_secs(10)),
    )
    .await;
    let node = PersistentTtlNode::builder(&cut.client, "/fttl4/node", TTL, "").start();
    within("created", WITHIN, node.wait_created(None))
        .await
        .expect("created");
    cut.proxy.isolate();
    wait_exists_at(&observer, "/fttl4/node/touch", false).await;
    wait_exists_at(&observer, "/fttl4/node", false).await;
    let touches = node.touches();
    cut.proxy.restore();
    wait_for_state(&cut.client, SessionState::Connected, WITHIN).await;
    wait_exists_at(&observer, "/fttl4/node/touch", true).await;
    eventually("a touch after the reconnection", WITHIN, || async {
        node.touches() > touches
    })
    .await;
    assert!(node.ended().is_none());
    node.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_ends_the_recipe_and_the_node_goes_after_its_ttl() {
    let _serial = serial().await;
    let server = start_ttl_server().await;
    let observer = connect_with(builder(), &server.connect_string()).await;
    let client = connect_with(builder(), &server.connect_string()).await;
    let node = PersistentTtlNode::builder(&client, "/fttl5/node", TTL, "").start();
    within("created", WITHIN, node.wait_created(None))
        .await
        .expect("created");
    expire_session(&client, &server.connect_string()).await;
    let ended = within("ended", WITHIN, node.wait_ended()).await;
    assert_eq!(ended, RecipeError::Zk(zk_proto::Error::SessionExpired));
    let (_, last) = observer
        .get_data("/fttl5/node/touch")
        .await
        .expect("the child outlives the session");
    let gone = wait_exists_at(&observer, "/fttl5/node/touch", false).await;
    assert!(gone >= last.mtime + 1000);
    wait_exists_at(&observer, "/fttl5/node", false).await;
}
