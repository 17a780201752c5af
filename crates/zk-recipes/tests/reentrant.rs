//! The re-entrant mutex against a real ZooKeeper 3.8 server: an owner (a `Lock` value and its
//! clones) holds one node however many times it acquires; other owners wait for its last
//! release.

use std::time::Duration;

use zk_recipes::Error;
use zk_recipes::lock::Lock;
use zk_testkit::client::{children, connect, start_server};

const WITHIN: Duration = Duration::from_secs(10);
/// How long an acquire that must not succeed is given before it times out.
const REFUSED_WITHIN: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_reenters_and_others_wait_for_its_last_release() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let other_client = connect(&server.connect_string()).await;
    let path = "/reentrant/lock";
    let owner = Lock::reentrant(&client, path);
    assert!(owner.is_reentrant());
    assert!(!Lock::new(&client, path).is_reentrant());

    let first = owner.acquire(Some(WITHIN)).await.expect("first hold");
    // A clone is the same owner: it re-enters at once, on the same node.
    let second = owner
        .clone()
        .acquire(Some(WITHIN))
        .await
        .expect("second hold");
    let third = owner.acquire(Some(WITHIN)).await.expect("third hold");
    assert_eq!(owner.hold_count(), 3);
    assert_eq!(second.node(), first.node());
    assert_eq!(third.fencing_token(), first.fencing_token());
    assert_eq!(children(&client, path).await.len(), 1, "one node per owner");

    // Another owner, in the same session or another, and a plain mutex, are excluded.
    let same_session = Lock::reentrant(&client, path);
    assert_eq!(
        same_session.acquire(Some(REFUSED_WITHIN)).await.err(),
        Some(Error::Timeout)
    );
    assert_eq!(
        Lock::new(&client, path)
            .acquire(Some(REFUSED_WITHIN))
            .await
            .err(),
        Some(Error::Timeout)
    );
    let waiter = {
        let lock = Lock::reentrant(&other_client, path);
        tokio::spawn(async move { lock.acquire(None).await })
    };

    // Giving back holds but the last keeps the node (a release and a drop count alike).
    let node = first.node().to_owned();
    first.release().await.expect("release one hold");
    drop(third);
    assert_eq!(owner.hold_count(), 1);
    assert!(client.exists(&node).await.expect("exists").is_some());
    assert!(!waiter.is_finished());
    assert_eq!(
        Lock::new(&other_client, path)
            .acquire(Some(REFUSED_WITHIN))
            .await
            .err(),
        Some(Error::Timeout)
    );

    // The last hold deletes the node: the waiter gets the lock.
    second.release().await.expect("release the last hold");
    assert_eq!(owner.hold_count(), 0);
    let granted = tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("the waiter is granted")
        .expect("task")
        .expect("acquire");
    assert!(client.exists(&node).await.expect("exists").is_none());
    assert!(granted.fencing_token() > 0);

    // The owner now waits like anyone else, then holds a new node.
    let again = {
        let owner = owner.clone();
        tokio::spawn(async move { owner.acquire(None).await })
    };
    granted.release().await.expect("release");
    let again = tokio::time::timeout(WITHIN, again)
        .await
        .expect("granted")
        .expect("task")
        .expect("acquire");
    assert_ne!(again.node(), node);
    assert_eq!(owner.hold_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_acquires_of_one_owner_queue_one_node() {
    const CLONES: usize = 5;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let holder_client = connect(&server.connect_string()).await;
    let path = "/reentrant/concurrent";
    let holder = Lock::new(&holder_client, path)
        .acquire(Some(WITHIN))
        .await
        .expect("holder");
    let owner = Lock::reentrant(&client, path);
    let tasks: Vec<_> = (0..CLONES)
        .map(|_| {
            let owner = owner.clone();
            tokio::spawn(async move { owner.acquire(None).await })
        })
        .collect();
    // The owner queues one node behind the holder, however many of its clones wait.
    zk_testkit::client::eventually("the owner's node is queued", WITHIN, || async {
        children(&client, path).await.len() == 2
    })
    .await;
    holder.release().await.expect("release");
    let mut guards = Vec::new();
    for task in tasks {
        let guard = tokio::time::timeout(WITHIN, task)
            .await
            .expect("granted")
            .expect("task")
            .expect("acquire");
        guards.push(guard);
    }
    assert_eq!(owner.hold_count(), CLONES);
    assert_eq!(children(&client, path).await.len(), 1);
    assert!(guards.iter().all(|g| g.node() == guards[0].node()));
    let node = guards[0].node().to_owned();
    drop(guards);
    assert_eq!(owner.hold_count(), 0);
    zk_testkit::client::eventually("the node is deleted", WITHIN, || async {
        client.exists(&node).await.ok().flatten().is_none()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_does_not_reenter_after_its_session_ended() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let owner = Lock::reentrant(&client, "/reentrant/closed");
    let guard = owner.acquire(Some(WITHIN)).await.expect("hold");
    client.close().await.expect("close");
    assert_eq!(owner.acquire(Some(WITHIN)).await.err(), Some(Error::Lost));
    assert_eq!(owner.hold_count(), 1);
    assert_eq!(guard.release().await, Err(Error::Lost));
    assert_eq!(owner.hold_count(), 0);
}
