//! The tree cache against a real server: the first load, the exact events of changes made by
//! another session, the depth, filter and Stat-only options, a root that comes and goes, a
//! subscriber that falls behind, and what dropping the cache does. The faults (reconnection,
//! expiry, ensembles) are in the workspace's `tests/tests/fault_cache.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use zk_proto::jute::OpCode;
use zk_proto::{Client, CreateOptions, WatcherType};
use zk_recipes::Error;
use zk_recipes::cache::{CacheEvent, CacheEvents, Depth, Keep, Snapshot, TreeCache};
use zk_testkit::client::{
    NodeSeen, builder, connect, connect_with, create_node, eventually, mkdirs, node_seen,
    start_server, tree_seen, within,
};
use zk_testkit::fault::FaultProxy;

const WITHIN: Duration = Duration::from_secs(20);

fn from_snapshot(snapshot: &Snapshot) -> BTreeMap<String, NodeSeen> {
    snapshot
        .nodes()
        .map(|n| (n.path().to_owned(), node_seen(n.data().cloned(), n.stat())))
        .collect()
}

/// Asserts that the cache holds exactly the server's subtree at `root` (with data when
/// `data`).
async fn assert_mirrors(cache: &TreeCache, client: &Client, root: &str, data: bool) {
    within("cache sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    let server = tree_seen(client, root, data).await;
    assert_eq!(from_snapshot(&cache.snapshot()), server);
}

/// The events already delivered (after a `sync`, every event of the changes before it).
async fn delivered(events: &mut CacheEvents) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(next) = tokio::time::timeout(Duration::ZERO, events.next()).await {
        out.push(describe(&next.expect("event")));
    }
    out
}

fn describe(event: &CacheEvent) -> String {
    let text = |d: Option<&Bytes>| String::from_utf8_lossy(d.map_or(&b"-"[..], |d| d)).into_owned();
    match event {
        CacheEvent::Added(n) => format!("+{} {}", n.path(), text(n.data())),
        CacheEvent::Updated { old, new } => {
            format!("~{} {}>{}", new.path(), text(old.data()), text(new.data()))
        }
        CacheEvent::Removed(n) => format!("-{}", n.path()),
        CacheEvent::Initialized => "initialized".to_owned(),
        other => format!("{other:?}"),
    }
}

async fn set(client: &Client, path: &str, data: &str) {
    within("set", WITHIN, client.set_data(path, data.to_owned(), None))
        .await
        .unwrap_or_else(|e| panic!("set {path}: {e}"));
}

async fn delete(client: &Client, path: &str) {
    within("delete", WITHIN, client.delete(path, None))
        .await
        .unwrap_or_else(|e| panic!("delete {path}: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree_cache_loads_a_subtree_and_reports_each_change_once() {
    let server = start_server().await;
    let writer = connect(&server.connect_string()).await;
    let reader = connect(&server.connect_string()).await;
    mkdirs(&writer, "/t/b/x").await;
    create_node(&writer, "/t/b/x/y", "y").await;
    create_node(&writer, "/t/a", "a").await;
    for i in 1..=5 {
        create_node(&writer, &format!("/t/a/{i}"), &format!("a{i}")).await;
    }
    create_node(&writer, "/t/c", "c1").await;

    let cache = TreeCache::builder(&reader, "/t").start();
    let mut events = cache.events();
    within("initialized", WITHIN, cache.wait_initialized(None))
        .await
        .expect("initialized");
    assert_eq!(
        describe(&events.next().await.expect("event")),
        "initialized"
    );
    assert_mirrors(&cache, &writer, "/t", true).await;
    let names: Vec<_> = cache
        .children("/t/a")
        .iter()
        .map(|n| n.name().to_owned())
        .collect();
    assert_eq!(names, ["1", "2", "3", "4", "5"]);
    assert_eq!(
        cache.get("/t/c").and_then(|n| n.data().cloned()),
        Some(Bytes::from("c1"))
    );

    create_node(&writer, "/t/a/6", "a6").await;
    set(&writer, "/t/c", "c2").await;
    delete(&writer, "/t/a/1").await;
    create_node(&writer, "/t/new", "n").await;
    create_node(&writer, "/t/new/deep", "d").await;
    within("sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    assert_eq!(
        delivered(&mut events).await,
        [
            "+/t/a/6 a6",
            "~/t/c c1>c2",
            "-/t/a/1",
            "+/t/new n",
            "+/t/new/deep d"
        ]
    );
    // Read-your-writes through sync.
    assert_eq!(
        cache.get("/t/c").and_then(|n| n.data().cloned()),
        Some(Bytes::from("c2"))
    );

    // A snapshot does not change, whatever happens after it.
    let before = cache.snapshot();
    for path in ["/t/b/x/y", "/t/b/x", "/t/b"] {
        delete(&writer, path).await;
    }
    within("sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    assert_eq!(
        delivered(&mut events).await,
        ["-/t/b/x/y", "-/t/b/x", "-/t/b"]
    );
    assert!(before.get("/t/b/x/y").is_some());
    assert!(cache.get("/t/b").is_none());
    assert_mirrors(&cache, &writer, "/t", true).await;

    // The root goes, and comes back.
    for path in ["/t/new/deep", "/t/new", "/t/c"] {
        delete(&writer, path).await;
    }
    for i in 2..=6 {
        delete(&writer, &format!("/t/a/{i}")).await;
    }
    delete(&writer, "/t/a").await;
    delete(&writer, "/t").await;
    within("sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    assert!(cache.snapshot().is_empty());
    assert_eq!(delivered(&mut events).await.len(), 10);
    create_node(&writer, "/t", "again").await;
    create_node(&writer, "/t/z", "z").await;
    within("sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    assert_eq!(delivered(&mut events).await, ["+/t again", "+/t/z z"]);
    assert_mirrors(&cache, &writer, "/t", true).await;

    // Dropping the cache ends its events and removes its watch.
    drop(cache);
    assert_eq!(events.next().await, Err(Error::Zk(zk_proto::Error::Closed)));
    eventually("the watch removed", WITHIN, || async {
        reader.check_watches("/t", WatcherType::ANY).await == Err(zk_proto::Error::NoWatcher)
    })
    .await;
}

/// Closes `cache` (of `/c`) and checks, with no wait, that the server holds no watch there.
async fn close_leaving_no_watch(client: &Client, cache: TreeCache) {
    within("close", WITHIN, cache.close())
        .await
        .expect("closed");
    assert_eq!(
        client.check_watches("/c", WatcherType::ANY).await,
        Err(zk_proto::Error::NoWatcher)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_returns_once_the_server_has_removed_the_watch() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    create_node(&client, "/c", "").await;
    let cache = TreeCache::builder(&client, "/c").start();
    within("load", WITHIN, cache.wait_initialized(None))
        .await
        .expect("loaded");
    client
        .check_watches("/c", WatcherType::ANY)
        .await
        .expect("the cache's watch on the server");
    let mut events = cache.events();
    close_leaving_no_watch(&client, cache).await;
    assert_eq!(events.next().await, Err(Error::Zk(zk_proto::Error::Closed)));

    // Closed as soon as started: its addWatch not sent yet, in flight, or answered.
    for _ in 0..20 {
        close_leaving_no_watch(&client, TreeCache::builder(&client, "/c").start()).await;
    }

    // A cache whose session ended closes without error: the watch went with the session.
    let cache = TreeCache::builder(&client, "/c").start();
    within("load", WITHIN, cache.wait_initialized(None))
        .await
        .expect("loaded");
    client.close().await.expect("closed the session");
    within("close", WITHIN, cache.close())
        .await
        .expect("the session's end took the watch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_filter_and_stat_only_select_what_is_cached() {
    let server = start_server().await;
    let writer = connect(&server.connect_string()).await;
    let reader = connect(&server.connect_string()).await;
    mkdirs(&writer, "/d/a/deep").await;
    mkdirs(&writer, "/d/secret/inner").await;
    create_node(&writer, "/d/big", "large data").await;
    set(&writer, "/d", "root").await;

    // One node.
    let node = TreeCache::builder(&reader, "/d").depth(Depth::Node).start();
    // The root and its children.
    let children = TreeCache::builder(&reader, "/d")
        .depth(Depth::Children)
        .start();
    // A filter: a subtree left out, a node's Stat only.
    let filtered = TreeCache::builder(&reader, "/d")
        .filter(|path| match path {
            "/d/secret" => Keep::Nothing,
            "/d/big" => Keep::Stat,
            _ => Keep::Data,
        })
        .start();
    let stat_only = TreeCache::builder(&reader, "/d").stat_only().start();
    // A root that does not exist yet.
    let missing = TreeCache::builder(&reader, "/later").start();
    let mut node_events = node.events();
    let mut missing_events = missing.events();
    for cache in [&node, &children, &filtered, &stat_only, &missing] {
        within("initialized", WITHIN, cache.wait_initialized(None))
            .await
            .expect("initialized");
    }
    let paths = |cache: &TreeCache| -> Vec<String> {
        cache
            .snapshot()
            .nodes()
            .map(|n| n.path().to_owned())
            .collect()
    };
    assert_eq!(paths(&node), ["/d"]);
    assert_eq!(paths(&children), ["/d", "/d/a", "/d/big", "/d/secret"]);
    assert_eq!(paths(&filtered), ["/d", "/d/a", "/d/big", "/d/a/deep"]);
    assert_eq!(
        filtered.get("/d/big").map(|n| n.data().is_none()),
        Some(true)
    );
    assert_eq!(
        filtered.get("/d").and_then(|n| n.data().cloned()),
        Some(Bytes::from("root"))
    );
    assert_eq!(stat_only.snapshot().len(), 6);
    assert!(stat_only.snapshot().nodes().all(|n| n.data().is_none()));
    assert!(missing.snapshot().is_empty());

    create_node(&writer, "/d/a/deep/deeper", "x").await;
    create_node(&writer, "/d/secret/inner/hidden", "x").await;
    set(&writer, "/d/big", "larger data").await;
    set(&writer, "/d", "root2").await;
    create_node(&writer, "/later", "now").await;
    for cache in [&node, &children, &filtered, &stat_only, &missing] {
        within("sync", WITHIN, cache.sync(None))
            .await
            .expect("sync");
    }
    assert_eq!(
        delivered(&mut node_events).await,
        ["initialized", "~/d root>root2"]
    );
    assert_eq!(
        delivered(&mut missing_events).await,
        ["initialized", "+/later now"]
    );
    assert_eq!(paths(&node), ["/d"]);
    assert_eq!(children.snapshot().len(), 4);
    assert!(filtered.get("/d/a/deep/deeper").is_some());
    assert!(filtered.get("/d/secret/inner/hidden").is_none());
    assert_eq!(filtered.get("/d/big").map(|n| n.stat().version), Some(1));
    assert_mirrors(&stat_only, &writer, "/d", false).await;
    assert_mirrors(&missing, &writer, "/later", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_is_told_and_the_cache_goes_on() {
    let server = start_server().await;
    let writer = connect(&server.connect_string()).await;
    let reader = connect(&server.connect_string()).await;
    mkdirs(&writer, "/o").await;
    let cache = TreeCache::builder(&reader, "/o").event_capacity(4).start();
    within("initialized", WITHIN, cache.wait_initialized(None))
        .await
        .expect("initialized");
    let mut slow = cache.events();
    for i in 0..10 {
        create_node(&writer, &format!("/o/{i}"), "x").await;
    }
    within("sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    for _ in 0..4 {
        assert!(matches!(slow.next().await, Ok(CacheEvent::Added(_))));
    }
    assert_eq!(
        slow.next().await,
        Err(Error::Zk(zk_proto::Error::WatchOverflow { capacity: 4 }))
    );
    assert_eq!(cache.children("/o").len(), 10);
    // A new subscription starts from a snapshot, and misses nothing after it.
    let (snapshot, mut events) = cache.subscribe();
    assert_eq!(snapshot.children("/o").count(), 10);
    delete(&writer, "/o/3").await;
    within("sync", WITHIN, cache.sync(None))
        .await
        .expect("sync");
    assert_eq!(delivered(&mut events).await, ["-/o/3"]);
    assert_mirrors(&cache, &writer, "/o", true).await;
}

/// Writes `count` children of `parent`, each with `size` bytes of data, pipelined.
async fn create_children(client: &Client, parent: &str, count: usize, size: usize) {
    let creates: Vec<_> = (0..count)
        .map(|i| {
            let data = vec![b'0' + (i % 10) as u8; size];
            client.create(
                &format!("{parent}/n{i:03}"),
                data,
                &CreateOptions::persistent(),
            )
        })
        .collect();
    for create in creates {
        within("create", WITHIN, create).await.expect("create");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_reads_sibling_nodes_in_batches() {
    let server = start_server().await;
    let writer = connect(&server.connect_string()).await;
    mkdirs(&writer, "/batch/sub").await;
    create_children(&writer, "/batch", 200, 10).await;
    create_children(&writer, "/batch/sub", 30, 10).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    // The proxy counts the cache's reads: no configuration read of the client's among them.
    let reader = connect_with(builder().follow_ensemble(false), &proxy.connect_string()).await;
    let cache = TreeCache::builder(&reader, "/batch").start();
    within("initialized", WITHIN, cache.wait_initialized(None))
        .await
        .expect("initialized");
    assert_mirrors(&cache, &writer, "/batch", true).await;
    // 232 nodes: the root alone, then /batch's 201 children in 4 batches of at most 64 and
    // /sub's 30 in one; only the two nodes with children are listed.
    let batches = proxy.forwarded(OpCode::MULTI_READ);
    let single = proxy.forwarded(OpCode::GET_DATA);
    assert_eq!(batches, 5);
    assert_eq!(single, 1, "only the root is read alone");
    assert_eq!(proxy.forwarded(OpCode::GET_CHILDREN2), 2);
    assert_eq!(proxy.accepted(), 1);

    // One request per node when asked.
    let unbatched = TreeCache::builder(&reader, "/batch").read_batch(1).start();
    within("initialized", WITHIN, unbatched.wait_initialized(None))
        .await
        .expect("initialized");
    assert_eq!(proxy.forwarded(OpCode::MULTI_READ), batches);
    assert_eq!(proxy.forwarded(OpCode::GET_DATA), single + 232);
    assert_mirrors(&unbatched, &writer, "/batch", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_over_the_frame_limit_costs_one_reconnection_and_the_load_completes() {
    let server = start_server().await;
    let writer = connect(&server.connect_string()).await;
    mkdirs(&writer, "/huge").await;
    // With a 16 KiB frame limit a batch may take 1 KiB, 9 nodes as small as the (empty) root:
    // the first batch of these 3 KB nodes is some 27 KB, which the client refuses.
    create_children(&writer, "/huge", 20, 3_000).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let reader = connect_with(
        builder().max_frame_len(16 * 1024).follow_ensemble(false),
        &proxy.connect_string(),
    )
    .await;
    let session = reader.session_id();
    let cache = TreeCache::builder(&reader, "/huge").start();
    within("initialized", WITHIN, cache.wait_initialized(None))
        .await
        .expect("initialized");
    assert_mirrors(&cache, &writer, "/huge", true).await;
    // Two batches of 10 went out together; the first overflowed, and the second was lost with
    // the connection that cost. That connection was re-established in the same session, and
    // every node was then read alone (each fits the limit): no batch again.
    assert_eq!(proxy.forwarded(OpCode::MULTI_READ), 2);
    assert_eq!(proxy.accepted(), 2);
    assert_eq!(reader.session_id(), session);
    assert!(proxy.forwarded(OpCode::GET_DATA) >= 21);
    assert!(cache.ended().is_none());
}
