//! `SemaphoreV2` against a real ZooKeeper 3.8 server, alone and with Curator's
//! `InterProcessSemaphoreV2` on the same path: Curator's layout, one shared maximum.

mod curator_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use curator_support::CuratorPeer;
use zk_proto::{Client, CreateOptions};
use zk_recipes::Error;
use zk_recipes::counter::SharedCount;
use zk_recipes::lock::{LockGuard, SemaphoreV2};
use zk_testkit::client::{connect, eventually, serial, start_server};

const WITHIN: Duration = Duration::from_secs(10);
/// How long an acquire that must not succeed is given before it times out.
const REFUSED_WITHIN: Duration = Duration::from_millis(300);

/// Whether `name` is a protected lease name as Curator makes it: `_c_<uuid>-lease-<seq>`.
fn is_curator_lease_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("_c_") else {
        return false;
    };
    let Some((uuid, seq)) = rest.split_at_checked(36) else {
        return false;
    };
    uuid.bytes().filter(|b| *b == b'-').count() == 4
        && seq
            .strip_prefix("-lease-")
            .is_some_and(|seq| seq.len() == 10 && seq.bytes().all(|b| b.is_ascii_digit()))
}

async fn spawn_acquire(
    semaphore: &SemaphoreV2,
) -> tokio::task::JoinHandle<zk_recipes::Result<LockGuard>> {
    let semaphore = semaphore.clone();
    tokio::spawn(async move { semaphore.acquire(None).await })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_are_bounded_and_a_shared_maximum_can_be_raised() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let max = SharedCount::new(&client, "/sv2/max", 1);
    let semaphore =
        SemaphoreV2::with_shared_count(&client, "/sv2/sem", max.clone()).with_node_data("rust");
    let first = semaphore.acquire(Some(WITHIN)).await.expect("first lease");
    let node = first.node().rsplit('/').next().expect("name").to_owned();
    assert!(is_curator_lease_name(&node), "{node}");
    assert!(first.node().starts_with("/sv2/sem/leases/"));
    let (data, _) = client.get_data(first.node()).await.expect("lease node");
    assert_eq!(&data[..], b"rust");
    // The mutex is released once the lease is taken: its parent is `locks`, empty now.
    assert_eq!(
        client.get_children("/sv2/sem/locks").await.expect("locks"),
        Vec::<String>::new()
    );

    // Full: another contender waits (holding the mutex, as Curator's does), a third times out
    // while queued on the mutex, and leaves nothing behind.
    let other_semaphore = SemaphoreV2::with_shared_count(&other, "/sv2/sem", max.clone());
    let waiter = spawn_acquire(&other_semaphore).await;
    eventually("the waiter's lease node", WITHIN, || async {
        semaphore
            .participant_nodes()
            .await
            .unwrap_or_default()
            .len()
            == 2
    })
    .await;
    assert_eq!(
        semaphore.acquire(Some(REFUSED_WITHIN)).await.err(),
        Some(Error::Timeout)
    );
    assert_eq!(semaphore.participant_nodes().await.expect("nodes").len(), 2);
    assert!(!waiter.is_finished());

    // Raising the shared maximum lets the waiter in, without any release.
    max.set(2).await.expect("raise");
    let second = tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("granted on the new maximum")
        .expect("task")
        .expect("lease");
    assert_eq!(semaphore.participant_nodes().await.expect("nodes").len(), 2);

    // Releasing lets the next one in; acquire_many takes several or none.
    first.release().await.expect("release");
    let many = semaphore
        .acquire_many(1, Some(WITHIN))
        .await
        .expect("one more");
    assert_eq!(many.len(), 1);
    assert_eq!(
        semaphore.acquire_many(2, Some(REFUSED_WITHIN)).await.err(),
        Some(Error::Timeout)
    );
    drop(many);
    second.release().await.expect("release");
    eventually("every lease node is gone", WITHIN, || async {
        semaphore
            .participant_nodes()
            .await
            .is_ok_and(|n| n.is_empty())
    })
    .await;

    // A shared maximum that is not a 4-byte count is refused.
    client
        .set_data("/sv2/max", vec![1u8], None)
        .await
        .expect("corrupt");
    assert!(matches!(
        semaphore.acquire(Some(WITHIN)).await,
        Err(Error::BadValue { found: 1, .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_leases_share_one_maximum() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let mut java = CuratorPeer::start(&server.connect_string()).await;
    let path = "/interop/sv2";
    let semaphore = SemaphoreV2::new(&client, path, 2);

    // Curator holds one lease and we hold the other: both sides are full.
    assert_eq!(
        java.call(&format!("a semaphore {path} 2 10000")).await,
        "acquired"
    );
    let ours = semaphore.acquire(Some(WITHIN)).await.expect("our lease");
    let leases = semaphore.participant_nodes().await.expect("leases");
    assert_eq!(leases.len(), 2);
    assert!(
        leases.iter().all(|l| is_curator_lease_name(l)),
        "{leases:?}"
    );
    assert_eq!(
        semaphore.acquire(Some(REFUSED_WITHIN)).await.err(),
        Some(Error::Timeout)
    );
    assert_eq!(
        java.call(&format!("b semaphore {path} 2 300")).await,
        "timeout"
    );

    // Curator's release lets our waiter in; ours lets Curator's in.
    let waiter = spawn_acquire(&semaphore).await;
    eventually("our waiter's lease node", WITHIN, || async {
        semaphore
            .participant_nodes()
            .await
            .unwrap_or_default()
            .len()
            == 3
    })
    .await;
    assert_eq!(java.call("a return").await, "returned");
    let granted = tokio::time::timeout(WITHIN, waiter)
        .await
        .expect("granted after Curator's release")
        .expect("task")
        .expect("lease");
    ours.release().await.expect("release");
    assert_eq!(
        java.call(&format!("b semaphore {path} 2 10000")).await,
        "acquired"
    );
    assert_eq!(
        semaphore.acquire(Some(REFUSED_WITHIN)).await.err(),
        Some(Error::Timeout)
    );
    assert_eq!(java.call("b return").await, "returned");
    granted.release().await.expect("release");
    java.quit().await;
}

/// Inside a lease (as `CuratorPeer.java`'s `sem-stress` does): creates `<base>/holders/<name>`,
/// counts the holders, deletes the node. Returns the count and whether a Curator holder was in.
async fn count_holders(client: &Client, base: &str, name: &str) -> (usize, bool) {
    let own = format!("{base}/holders/{name}");
    client
        .create(&own, "", &CreateOptions::ephemeral())
        .await
        .expect("holder node");
    let holders = client
        .get_children(&format!("{base}/holders"))
        .await
        .expect("holders");
    tokio::time::sleep(Duration::from_millis(2)).await;
    client.delete(&own, None).await.expect("delete holder node");
    let curator_in = holders.iter().any(|h| h.starts_with("java-"));
    (holders.len(), curator_in)
}

/// Curator's threads and our tasks take leases of one semaphore at once: the holders counted
/// from either side never exceed the maximum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_holders_never_exceed_the_maximum() {
    const MAX: usize = 3;
    const RUST_TASKS: usize = 3;
    const JAVA_THREADS: usize = 3;
    const JAVA_ROUNDS: usize = 30;
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let (path, base) = ("/interop/sv2-stress", "/interop/sv2-check");
    for node in ["/interop", base, &format!("{base}/holders")] {
        client
            .create(node, "", &CreateOptions::persistent())
            .await
            .expect("base nodes");
    }
    let mut java = CuratorPeer::start(&server.connect_string()).await;

    // Our tasks take leases until Curator's run is over (so the two overlap throughout).
    let stop = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for t in 0..RUST_TASKS {
        let client = connect(&server.connect_string()).await;
        let (stop, most) = (stop.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            let semaphore = SemaphoreV2::new(&client, path, MAX as u32);
            let (mut rounds, mut violations, mut saw_curator) = (0, 0, false);
            while !stop.load(Ordering::SeqCst) || rounds < 10 {
                let lease = semaphore.acquire(Some(WITHIN)).await.expect("lease");
                let (inside, curator_in) =
                    count_holders(&client, base, &format!("rust-{t}-{rounds}")).await;
                most.fetch_max(inside, Ordering::SeqCst);
                violations += usize::from(inside > MAX);
                saw_curator |= curator_in;
                lease.release().await.expect("release");
                rounds += 1;
            }
            (rounds, violations, saw_curator)
        }));
    }
    let reply = java
        .call(&format!(
            "- sem-stress {path} {MAX} {base} {JAVA_THREADS} {JAVA_ROUNDS}"
        ))
        .await;
    stop.store(true, Ordering::SeqCst);
    let (mut rounds, mut violations, mut saw_curator) = (0, 0, false);
    for task in tasks {
        let (r, v, s) = task.await.expect("task");
        rounds += r;
        violations += v;
        saw_curator |= s;
    }
    java.quit().await;
    eprintln!("curator: {reply}; rust: {rounds} leases, most {most:?}");
    let leases = JAVA_THREADS * JAVA_ROUNDS;
    assert!(
        reply.starts_with("violations=0 ") && reply.ends_with(&format!(" leases={leases}")),
        "curator side: {reply}"
    );
    assert_eq!(violations, 0, "rust side");
    assert!(most.load(Ordering::SeqCst) <= MAX);
    // The two libraries held leases at the same time.
    assert!(
        saw_curator,
        "no Rust holder ever saw a Curator holder inside"
    );
}
