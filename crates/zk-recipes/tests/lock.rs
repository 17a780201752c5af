//! The lock recipes against a real ZooKeeper 3.8 server: mutual exclusion, FIFO order and
//! fencing, cancellation, containers, the hand-over to a queued waiter (requests counted by a
//! proxy, no fault), the read-write lock and the semaphore. The interplay with Apache
//! Curator's locks is in `lock_interop.rs`; the lock under faults (expiry, lost replies, cuts,
//! freezes) in the workspace's `tests/tests/fault_lock/`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use zk_proto::jute::OpCode;
use zk_recipes::Error;
use zk_recipes::lock::{Lock, ReadWriteLock, Semaphore};
use zk_testkit::client::{builder, connect, connect_with, poll_children, serial, start_server};
use zk_testkit::fault::FaultProxy;

const SESSIONS: usize = 16;
const ROUNDS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_fifo_and_fencing_under_contention() {
    let _serial = serial().await;
    let server = start_server().await;
    let connect_string = server.connect_string();
    let inside = Arc::new(AtomicBool::new(false));
    let violations = Arc::new(AtomicUsize::new(0));
    // (sequence, fencing token) of every grant, in grant order.
    let grants = Arc::new(std::sync::Mutex::new(Vec::<(i64, i64)>::new()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let client = connect(&connect_string).await;
        let (inside, violations, grants) = (inside.clone(), violations.clone(), grants.clone());
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(&client, "/stress/lock");
            for _ in 0..ROUNDS {
                let guard = lock.acquire(None).await.expect("acquire");
                if inside.swap(true, Ordering::SeqCst) {
                    violations.fetch_add(1, Ordering::SeqCst);
                }
                assert!(guard.is_valid());
                grants
                    .lock()
                    .expect("grants")
                    .push((guard.sequence().expect("sequence"), guard.fencing_token()));
                tokio::task::yield_now().await;
                inside.store(false, Ordering::SeqCst);
                guard.release().await.expect("release");
            }
            client.close().await.expect("close");
        }));
    }
    for task in tasks {
        task.await.expect("contender");
    }
    let elapsed = started.elapsed();
    eprintln!("{SESSIONS} sessions x {ROUNDS} acquisitions: {elapsed:?}");
    assert_eq!(
        violations.load(Ordering::SeqCst),
        0,
        "mutual exclusion violated"
    );
    let grants = std::mem::take(&mut *grants.lock().expect("grants"));
    assert_eq!(grants.len(), SESSIONS * ROUNDS);
    for pair in grants.windows(2) {
        assert!(pair[0].0 < pair[1].0, "not FIFO: {pair:?}");
        assert!(
            pair[0].1 < pair[1].1,
            "fencing tokens not increasing: {pair:?}"
        );
    }
    let observer = connect(&connect_string).await;
    let path = "/stress/lock";
    assert!(
        poll_children(&observer, path, Duration::from_secs(5), |c| c.is_empty())
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_and_timed_out_acquires_leave_no_node() {
    let _serial = serial().await;
    let server = start_server().await;
    let holder_client = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let path = "/cancel/lock";
    let holder = Lock::new(&holder_client, path)
        .acquire(None)
        .await
        .expect("acquire");
    let lock = Lock::new(&other, path);

    // Timed out: the node is deleted before the error is returned.
    let started = Instant::now();
    let result = lock.acquire(Some(Duration::from_millis(300))).await;
    assert!(matches!(result, Err(Error::Timeout)), "{result:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(other.get_children(path).await.expect("list").len(), 1);

    // Cancelled while waiting (the future is dropped): deleted in the background.
    let cancelled = tokio::time::timeout(Duration::from_millis(300), lock.acquire(None)).await;
    assert!(cancelled.is_err());
    assert_eq!(
        poll_children(&other, path, Duration::from_secs(5), |c| c.len() == 1)
            .await
            .len(),
        1
    );

    // Cancelled while its create is in flight (the name is not known yet).
    for delay in [0u64, 1, 2, 5] {
        let lock = lock.clone();
        let task = tokio::spawn(async move { lock.acquire(None).await });
        tokio::time::sleep(Duration::from_millis(delay)).await;
        task.abort();
        let _ = task.await;
        assert_eq!(
            poll_children(&other, path, Duration::from_secs(5), |c| c.len() == 1)
                .await
                .len(),
            1,
            "an aborted acquire (after {delay} ms) left its node"
        );
    }

    // The lock still works, for the next one in line.
    let next = tokio::spawn({
        let lock = lock.clone();
        async move { lock.acquire(None).await }
    });
    // Its node is queued behind the holder's before the holder lets go.
    assert_eq!(
        poll_children(&other, path, Duration::from_secs(5), |c| c.len() == 2)
            .await
            .len(),
        2
    );
    holder.release().await.expect("release");
    let guard = next.await.expect("task").expect("acquire");
    assert_eq!(other.get_children(path).await.expect("list").len(), 1);
    drop(guard); // released in the background
    assert!(
        poll_children(&other, path, Duration::from_secs(5), |c| c.is_empty())
            .await
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_parents_are_created_as_containers() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let guard = Lock::new(&client, "/a/b/c/lock")
        .acquire(None)
        .await
        .expect("acquire");
    assert!(guard.node().starts_with("/a/b/c/lock/_c_"));
    assert!(guard.node().contains("-lock-"));
    let stat = client
        .exists("/a/b/c/lock")
        .await
        .expect("exists")
        .expect("parent");
    assert_eq!(stat.ephemeral_owner, 0);
    guard.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_excludes_writers() {
    let _serial = serial().await;
    let server = start_server().await;
    let readers = Arc::new(AtomicUsize::new(0));
    let writer = Arc::new(AtomicBool::new(false));
    let max_readers = Arc::new(AtomicUsize::new(0));
    let violations = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..6 {
        let client = connect(&server.connect_string()).await;
        let (readers, writer, max_readers, violations) = (
            readers.clone(),
            writer.clone(),
            max_readers.clone(),
            violations.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let rw = ReadWriteLock::new(&client, "/rw/lock");
            for _ in 0..20 {
                if i % 3 == 0 {
                    let guard = rw.write_lock().acquire(None).await.expect("write");
                    assert!(guard.node().contains("-__WRIT__"));
                    if writer.swap(true, Ordering::SeqCst) || readers.load(Ordering::SeqCst) > 0 {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    writer.store(false, Ordering::SeqCst);
                    guard.release().await.expect("release");
                } else {
                    let guard = rw.read_lock().acquire(None).await.expect("read");
                    assert!(guard.node().contains("__READ__"));
                    let now = readers.fetch_add(1, Ordering::SeqCst) + 1;
                    max_readers.fetch_max(now, Ordering::SeqCst);
                    if writer.load(Ordering::SeqCst) {
                        violations.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    readers.fetch_sub(1, Ordering::SeqCst);
                    guard.release().await.expect("release");
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    assert_eq!(violations.load(Ordering::SeqCst), 0);
    eprintln!(
        "max concurrent readers: {}",
        max_readers.load(Ordering::SeqCst)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_bounds_the_holders() {
    let _serial = serial().await;
    let server = start_server().await;
    let holders = Arc::new(AtomicUsize::new(0));
    let max_holders = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..6 {
        let client = connect(&server.connect_string()).await;
        let (holders, max_holders) = (holders.clone(), max_holders.clone());
        tasks.push(tokio::spawn(async move {
            let semaphore = Semaphore::new(&client, "/sem", 3);
            for _ in 0..15 {
                let lease = semaphore.acquire(None).await.expect("lease");
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                max_holders.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(3)).await;
                holders.fetch_sub(1, Ordering::SeqCst);
                lease.release().await.expect("release");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let max = max_holders.load(Ordering::SeqCst);
    assert!((1..=3).contains(&max), "max holders {max}");
}

/// A waiter whose predecessor was itself waiting behind an earlier node takes the lock on the
/// predecessor's deletion alone: it lists the children when it queues and again when the node
/// before its predecessor goes (while its predecessor takes the lock), never after the
/// predecessor's release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiter_behind_a_queued_holder_takes_the_lock_on_the_deletion_alone() {
    let _serial = serial().await;
    let server = start_server().await;
    let path = "/handoff/lock";
    let a = connect(&server.connect_string()).await;
    let b = connect(&server.connect_string()).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    // The proxy counts C's requests: no configuration read of its own among them.
    let c = connect_with(builder().follow_ensemble(false), &proxy.connect_string()).await;
    let lists = |proxy: &FaultProxy| {
        proxy.forwarded(OpCode::GET_CHILDREN) + proxy.forwarded(OpCode::GET_CHILDREN2)
    };

    let a_guard = Lock::new(&a, path).acquire(None).await.expect("a");
    let b_wait = tokio::spawn({
        let lock = Lock::new(&b, path);
        async move { lock.acquire(None).await }
    });
    assert_eq!(
        poll_children(&a, path, Duration::from_secs(5), |c| c.len() == 2)
            .await
            .len(),
        2
    );
    let c_wait = tokio::spawn({
        let lock = Lock::new(&c, path);
        async move { lock.acquire(None).await }
    });
    // C listed (A and B before it) and watches B and A.
    proxy.wait_forwarded(OpCode::GET_DATA, 2).await;
    c.sync("/").await.expect("a round trip behind C's watches");
    assert_eq!(lists(&proxy), 1);

    a_guard.release().await.expect("release a");
    let b_guard = b_wait.await.expect("task").expect("b acquires");
    // A's deletion makes C list again: B is now the only node in its way.
    proxy.wait_forwarded(OpCode::GET_CHILDREN, 2).await;
    c.sync("/").await.expect("a round trip behind C's listing");
    assert_eq!(lists(&proxy), 2);
    assert_eq!(proxy.forwarded(OpCode::GET_DATA), 2, "B's watch is kept");

    b_guard.release().await.expect("release b");
    let c_guard = tokio::time::timeout(Duration::from_secs(10), c_wait)
        .await
        .expect("c is granted")
        .expect("task")
        .expect("c acquires");
    assert!(c_guard.is_valid());
    assert_eq!(lists(&proxy), 2, "C listed the children after B's release");
    assert_eq!(a.get_children(path).await.expect("list").len(), 1);
    c_guard.release().await.expect("release c");
}
