//! The multi-lock and the semaphore mutex against a real ZooKeeper 3.8 server: a multi-lock
//! takes all of its locks or none (a timeout, a try or a cancellation releases the ones it
//! held), releases them all; the semaphore mutex excludes and keeps Curator's
//! `InterProcessSemaphoreV2` layout. (Curator interop: `multi_lock_interop.rs`.)

use std::time::Duration;

use zk_recipes::Error;
use zk_recipes::lock::{Lock, MultiLock, SemaphoreMutex, Validity};
use zk_testkit::client::{connect, eventually, start_server, within};

const LIMIT: Duration = Duration::from_secs(20);

async fn children(client: &zk_proto::Client, path: &str) -> Vec<String> {
    match client.get_children(path).await {
        Ok(children) => children.to_vec(),
        Err(zk_proto::Error::NoNode) => Vec::new(),
        Err(e) => panic!("list {path}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_holds_every_lock_and_releases_them_all() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let multi = MultiLock::new(&client, &["/ml1/a", "/ml1/b", "/ml1/c"]);
    assert_eq!(multi.locks().len(), 3);
    let guard = within("acquire", LIMIT, multi.acquire(None))
        .await
        .expect("acquire");
    let nodes: Vec<&str> = guard.guards().iter().map(|g| g.node()).collect();
    assert!(nodes[0].starts_with("/ml1/a/_c_") && nodes[0].contains("-lock-"));
    assert!(nodes[1].starts_with("/ml1/b/_c_") && nodes[2].starts_with("/ml1/c/_c_"));
    assert_eq!(guard.validity(), Validity::Held);
    for path in ["/ml1/a", "/ml1/b", "/ml1/c"] {
        let taken = Lock::new(&other, path).try_acquire().await.expect("try");
        assert!(taken.is_none(), "{path} is held by the multi-lock");
    }
    // Another multi-lock on some of the same paths cannot take them either.
    let second = MultiLock::new(&other, &["/ml1/b", "/ml1/c"]);
    assert!(second.try_acquire().await.expect("try").is_none());
    // The tries' nodes were withdrawn (their deletes queued on `other` before they
    // returned, so `other`'s listing sees them gone).
    assert_eq!(children(&other, "/ml1/b").await.len(), 1);
    guard.release().await.expect("release");
    for path in ["/ml1/a", "/ml1/b", "/ml1/c"] {
        assert!(children(&client, path).await.is_empty(), "{path} released");
    }
    let taken = second.try_acquire().await.expect("try").expect("free now");
    taken.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_that_cannot_take_one_lock_releases_the_others() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let holder = connect(&server.connect_string()).await;
    let held_b = Lock::new(&holder, "/ml2/b")
        .acquire(None)
        .await
        .expect("hold b");
    let multi = MultiLock::new(&client, &["/ml2/a", "/ml2/b"]);
    // A timeout: a was taken, b was not; a is released again (its delete queued before the
    // error is returned, so this client's next listing sees it gone).
    let timed_out = multi.acquire(Some(Duration::from_millis(300))).await;
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    assert!(children(&client, "/ml2/a").await.is_empty());
    assert_eq!(
        children(&client, "/ml2/b").await.len(),
        1,
        "only b's holder"
    );
    // A try: the same.
    assert!(multi.try_acquire().await.expect("try").is_none());
    assert!(children(&client, "/ml2/a").await.is_empty());
    assert_eq!(children(&client, "/ml2/b").await.len(), 1);
    // A cancellation while waiting for b: a is released, b's contender withdrawn.
    let waiting = tokio::spawn({
        let multi = multi.clone();
        async move { multi.acquire(None).await }
    });
    eventually("waiting for b", LIMIT, || async {
        children(&client, "/ml2/b").await.len() == 2
    })
    .await;
    assert_eq!(children(&client, "/ml2/a").await.len(), 1);
    waiting.abort();
    let _ = waiting.await;
    eventually("a and b's contender withdrawn", LIMIT, || async {
        children(&client, "/ml2/a").await.is_empty() && children(&client, "/ml2/b").await.len() == 1
    })
    .await;
    // Once b is free, the multi-lock takes both.
    let waiting = tokio::spawn({
        let multi = multi.clone();
        async move { multi.acquire(None).await }
    });
    eventually("waiting for b again", LIMIT, || async {
        children(&client, "/ml2/b").await.len() == 2
    })
    .await;
    held_b.release().await.expect("release b");
    let guard = within("acquired", LIMIT, waiting)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(guard.guards().len(), 2);
    drop(guard);
    eventually("a dropped guard releases both", LIMIT, || async {
        children(&client, "/ml2/a").await.is_empty() && children(&client, "/ml2/b").await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_mutex_excludes_in_curators_semaphore_layout() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let mutex = SemaphoreMutex::new(&client, "/sm1");
    let guard = within("acquire", LIMIT, mutex.acquire(None))
        .await
        .expect("acquire");
    // The lease is held under leases/, the semaphore's lock node is gone again.
    assert!(guard.node().starts_with("/sm1/leases/_c_") && guard.node().contains("-lease-"));
    assert!(children(&client, "/sm1/locks").await.is_empty());
    // Not re-entrant: the same value, and another contender, wait.
    assert!(mutex.try_acquire().await.expect("try").is_none());
    let contender = SemaphoreMutex::new(&other, "/sm1");
    let timed_out = contender.acquire(Some(Duration::from_millis(300))).await;
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    // Its lease node was withdrawn (queued on `other` before the timeout was returned).
    assert_eq!(children(&other, "/sm1/leases").await.len(), 1);
    let waiting = tokio::spawn(async move { contender.acquire(None).await });
    eventually("the contender waits", LIMIT, || async {
        children(&client, "/sm1/leases").await.len() == 2
    })
    .await;
    guard.release().await.expect("release");
    let next = within("the contender takes it", LIMIT, waiting)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(children(&client, "/sm1/leases").await.len(), 1);
    next.release().await.expect("release");
}
