//! Trying a lock without waiting (`try_acquire`, and `acquire(Some(Duration::ZERO))`), beside
//! Apache Curator's `acquire(0, MILLISECONDS)` on the same paths (a real Curator process,
//! `tests/curator/CuratorPeer.java`): with the lock free both take it, held by the other
//! library both give up, and a try that gives up leaves no node. For the mutex, both sides of
//! the read-write lock, `SemaphoreV2`, and (ours only) the re-entrant lock and `Semaphore`.

mod curator_support;

use std::time::Duration;

use curator_support::CuratorPeer;
use zk_proto::Client;
use zk_recipes::Error;
use zk_recipes::lock::{Lock, ReadWriteLock, Semaphore, SemaphoreV2};
use zk_testkit::client::{children, connect, serial, start_server};

/// The contenders' nodes under `path` (a try that gave up leaves none of its own).
async fn nodes(client: &Client, path: &str) -> usize {
    children(client, path).await.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_takes_a_free_lock_and_gives_up_on_a_held_one_as_curators_does() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let mut curator = CuratorPeer::start(&server.connect_string()).await;

    // The mutex. Free: both take it.
    let lock = Lock::new(&client, "/try/mutex");
    let guard = lock.try_acquire().await.expect("try").expect("free: taken");
    guard.release().await.expect("release");
    let guard = lock
        .acquire(Some(Duration::ZERO))
        .await
        .expect("a zero timeout takes a free lock");
    guard.release().await.expect("release");
    assert_eq!(curator.call("a mutex /try/mutex 0").await, "acquired");
    // Held by Curator: ours gives up, both ways, and leaves nothing.
    assert!(lock.try_acquire().await.expect("try").is_none());
    assert_eq!(
        lock.acquire(Some(Duration::ZERO)).await.err(),
        Some(Error::Timeout)
    );
    assert_eq!(nodes(&client, "/try/mutex").await, 1, "only Curator's node");
    assert_eq!(curator.call("a release").await, "released");
    // Held by ours: Curator gives up.
    let guard = lock.try_acquire().await.expect("try").expect("free again");
    assert_eq!(curator.call("b mutex /try/mutex 0").await, "timeout");
    assert_eq!(nodes(&client, "/try/mutex").await, 1, "only our node");
    guard.release().await.expect("release");

    // The read-write lock: Curator's writer excludes our reader and writer; our reader lets
    // Curator's reader in and keeps its writer out.
    let rw = ReadWriteLock::new(&client, "/try/rw");
    assert_eq!(curator.call("a write /try/rw 0").await, "acquired");
    assert!(rw.write_lock().try_acquire().await.expect("try").is_none());
    assert!(rw.read_lock().try_acquire().await.expect("try").is_none());
    assert_eq!(curator.call("a release").await, "released");
    let read = rw
        .read_lock()
        .try_acquire()
        .await
        .expect("try")
        .expect("free: read");
    assert_eq!(curator.call("b read /try/rw 0").await, "acquired");
    assert_eq!(curator.call("c write /try/rw 0").await, "timeout");
    assert_eq!(curator.call("b release").await, "released");
    read.release().await.expect("release");
    assert_eq!(nodes(&client, "/try/rw").await, 0);

    // SemaphoreV2 with one lease: the same both ways.
    let semaphore = SemaphoreV2::new(&client, "/try/sem", 1);
    assert_eq!(curator.call("a semaphore /try/sem 1 0").await, "acquired");
    assert!(semaphore.try_acquire().await.expect("try").is_none());
    assert_eq!(
        semaphore.acquire(Some(Duration::ZERO)).await.err(),
        Some(Error::Timeout)
    );
    assert_eq!(curator.call("a return").await, "returned");
    let lease = semaphore
        .try_acquire()
        .await
        .expect("try")
        .expect("free: a lease");
    assert_eq!(curator.call("b semaphore /try/sem 1 0").await, "timeout");
    lease.release().await.expect("release");
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_try_of_a_reentrant_owner_re_enters_and_another_contender_gives_up() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let owner = Lock::reentrant(&client, "/try/re");
    let first = owner.try_acquire().await.expect("try").expect("free");
    let second = owner
        .try_acquire()
        .await
        .expect("try")
        .expect("the owner holds: a new hold");
    assert_eq!(owner.hold_count(), 2);
    assert_eq!(first.node(), second.node());
    let other = Lock::new(&client, "/try/re");
    assert!(other.try_acquire().await.expect("try").is_none());
    drop(second);
    first.release().await.expect("release");
    assert!(other.try_acquire().await.expect("try").is_some());

    let semaphore = Semaphore::new(&client, "/try/permits", 1);
    let lease = semaphore.try_acquire().await.expect("try").expect("free");
    assert!(semaphore.try_acquire().await.expect("try").is_none());
    drop(lease);
}
