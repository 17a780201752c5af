//! The counters against a real ZooKeeper 3.8 server: Curator's semantics and encodings,
//! exact totals under contention from many sessions, and with Curator's own counters
//! updating the same node.

mod curator_support;

use std::time::Duration;

use curator_support::curator_program;
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use zk_recipes::Error;
use zk_recipes::counter::{AtomicLong, RetryPolicy, SharedCount, VersionedCount};
use zk_testkit::client::{connect, serial, start_server};

const SESSIONS: usize = 8;
const WITHIN: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_reads_sets_and_refuses_bad_data() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let count = SharedCount::new(&client, "/app/counts/workers", 7);

    // The first read creates the node with the seed, as 4 big-endian bytes, its parents as
    // containers.
    let seed = count.get().await.expect("get");
    assert_eq!(
        seed,
        VersionedCount {
            value: 7,
            version: 0
        }
    );
    let (data, _) = client.get_data("/app/counts/workers").await.expect("node");
    assert_eq!(&data[..], &[0, 0, 0, 7]);

    // A versioned set wins once; the same version then loses (not an error).
    assert!(count.set_if_version(8, 0).await.expect("set at 0"));
    assert!(!count.set_if_version(9, 0).await.expect("stale set"));
    assert!(
        !count
            .set_if_version(9, -1)
            .await
            .expect("any-version refused")
    );
    assert_eq!(
        count.get().await.expect("get"),
        VersionedCount {
            value: 8,
            version: 1
        }
    );

    // An unconditional set, and an add that wraps like Java's int.
    let set = count.set(i32::MAX).await.expect("set");
    assert_eq!(
        set,
        VersionedCount {
            value: i32::MAX,
            version: 2
        }
    );
    let added = count.add(1, Some(WITHIN)).await.expect("add");
    assert_eq!(
        added,
        VersionedCount {
            value: i32::MIN,
            version: 3
        }
    );

    // A node whose data is not 4 bytes is a typed error, for reads and adds alike.
    client
        .set_data("/app/counts/workers", vec![1u8, 2, 3], None)
        .await
        .expect("corrupt");
    let bad = Error::BadValue {
        path: "/app/counts/workers".into(),
        expected: 4,
        found: 3,
    };
    assert_eq!(count.get().await, Err(bad.clone()));
    assert_eq!(count.add(1, Some(WITHIN)).await, Err(bad));

    // A set on a missing node creates it.
    client
        .delete("/app/counts/workers", None)
        .await
        .expect("delete");
    assert_eq!(
        count.set(3).await.expect("set creates"),
        VersionedCount {
            value: 3,
            version: 0
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_adds_from_many_sessions_are_exact() {
    const ADDS: i32 = 25;
    let server = start_server().await;
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let client = connect(&server.connect_string()).await;
        tasks.push(tokio::spawn(async move {
            let count = SharedCount::new(&client, "/contended/count", 100);
            let mut seen = Vec::new();
            for _ in 0..ADDS {
                seen.push(count.add(1, None).await.expect("add").value);
            }
            seen
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.expect("task"));
    }
    // Every add won exactly once: each resulting value was produced by one add only.
    all.sort_unstable();
    let expected: Vec<i32> = (101..=100 + ADDS * SESSIONS as i32).collect();
    assert_eq!(all, expected);
    let client = connect(&server.connect_string()).await;
    let count = SharedCount::new(&client, "/contended/count", 0);
    assert_eq!(
        count.get().await.expect("get").value,
        100 + ADDS * SESSIONS as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_count_watch_yields_the_current_value_and_never_ends_behind() {
    let server = start_server().await;
    let watcher_client = connect(&server.connect_string()).await;
    let writer_client = connect(&server.connect_string()).await;
    let path = "/watched/count";
    let mut changes = SharedCount::new(&watcher_client, path, 0).watch();
    let writer = SharedCount::new(&writer_client, path, 0);

    // No node yet: the stream waits for it, and its first item is the value it finds.
    let first = tokio::spawn(async move {
        let first = changes.changed(Some(WITHIN)).await;
        (changes, first)
    });
    writer.set(5).await.expect("create");
    let (mut changes, first) = first.await.expect("task");
    assert_eq!(
        first,
        Ok(VersionedCount {
            value: 5,
            version: 0
        })
    );

    // A burst of writes: items come in order, possibly skipping some, and the last item is the
    // last value written.
    for value in 6..=40 {
        writer.set(value).await.expect("set");
    }
    let mut last = 5;
    while last != 40 {
        let item = changes.changed(Some(WITHIN)).await.expect("change");
        assert!(item.value > last, "{} after {last}", item.value);
        assert_eq!(item.version, item.value - 5);
        last = item.value;
    }

    // Deleted and created again: the new node is seen (version 0 again).
    writer_client.delete(path, None).await.expect("delete");
    writer.set(41).await.expect("recreate");
    assert_eq!(
        changes.changed(Some(WITHIN)).await,
        Ok(VersionedCount {
            value: 41,
            version: 0
        })
    );

    // Wrong-length data is an error item, and the stream goes on.
    writer_client
        .set_data(path, vec![9u8; 8], None)
        .await
        .expect("corrupt");
    assert!(matches!(
        changes.changed(Some(WITHIN)).await,
        Err(Error::BadValue { found: 8, .. })
    ));
    writer.set(42).await.expect("set");
    assert_eq!(changes.changed(Some(WITHIN)).await.map(|c| c.value), Ok(42));

    // Nothing new: a timeout, not an item; the session's end is the last item.
    assert_eq!(
        changes.changed(Some(Duration::from_millis(200))).await,
        Err(Error::Timeout)
    );
    watcher_client.close().await.expect("close");
    assert!(matches!(
        changes.next().await,
        Some(Err(Error::Zk(zk_proto::Error::Closed)))
    ));
    assert!(changes.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_long_has_curators_semantics() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let path = "/atomic/long";
    let long = AtomicLong::new(&client, path, RetryPolicy::default());

    // Missing: reads as 0; a compare-and-set never matches it; initialize creates it once.
    let got = long.get().await.expect("get");
    assert!(got.succeeded);
    assert_eq!((got.pre_value, got.post_value), (0, 0));
    assert!(!long.compare_and_set(0, 5).await.expect("cas").succeeded);
    assert!(long.initialize(10).await.expect("initialize"));
    assert!(!long.initialize(11).await.expect("again"));
    let (data, _) = client.get_data(path).await.expect("node");
    assert_eq!(&data[..], &10i64.to_be_bytes());

    let inc = long.increment().await.expect("increment");
    assert!(inc.succeeded);
    assert_eq!((inc.pre_value, inc.post_value), (10, 11));
    assert_eq!(inc.stats.optimistic_tries, 1);
    let dec = long.decrement().await.expect("decrement");
    assert_eq!((dec.pre_value, dec.post_value), (11, 10));
    let add = long.add(-30).await.expect("add");
    assert_eq!((add.pre_value, add.post_value), (10, -20));
    let sub = long.subtract(-25).await.expect("subtract");
    assert_eq!((sub.pre_value, sub.post_value), (-20, 5));

    let lost = long.compare_and_set(4, 9).await.expect("cas");
    assert!(!lost.succeeded);
    assert_eq!((lost.pre_value, lost.post_value), (5, 5));
    let won = long.compare_and_set(5, 9).await.expect("cas");
    assert!(won.succeeded);
    assert_eq!((won.pre_value, won.post_value), (5, 9));

    let set = long.try_set(i64::MAX).await.expect("try_set");
    assert_eq!((set.pre_value, set.post_value), (9, i64::MAX));
    let wrapped = long.increment().await.expect("increment");
    assert_eq!(wrapped.post_value, i64::MIN);
    long.force_set(3).await.expect("force_set");
    assert_eq!(long.get().await.expect("get").post_value, 3);

    // An empty node reads as 0 (Curator's "never set"); another length is a typed error.
    client
        .set_data(path, Vec::new(), None)
        .await
        .expect("empty");
    assert_eq!(long.increment().await.expect("from empty").post_value, 1);
    client
        .set_data(path, vec![0u8; 4], None)
        .await
        .expect("corrupt");
    let bad = Error::BadValue {
        path: path.into(),
        expected: 8,
        found: 4,
    };
    assert_eq!(long.get().await, Err(bad.clone()));
    assert_eq!(long.increment().await, Err(bad));

    // force_set creates a missing node, parents included.
    let deep = AtomicLong::new(&client, "/atomic/a/b/c", RetryPolicy::never());
    deep.force_set(-1).await.expect("force_set creates");
    assert_eq!(deep.get().await.expect("get").pre_value, -1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_long_increments_from_many_sessions_sum_to_the_successes() {
    const INCREMENTS: usize = 40;
    let server = start_server().await;
    let mut tasks = Vec::new();
    for _ in 0..SESSIONS {
        let client = connect(&server.connect_string()).await;
        tasks.push(tokio::spawn(async move {
            // Few retries, so that under this contention some increments give up.
            let long = AtomicLong::new(
                &client,
                "/contended/long",
                RetryPolicy::n_times(2, Duration::from_millis(1)),
            );
            let mut won = Vec::new();
            let mut gave_up = 0;
            for _ in 0..INCREMENTS {
                let result = long.increment().await.expect("increment");
                if result.succeeded {
                    assert_eq!(result.post_value, result.pre_value + 1);
                    won.push(result.post_value);
                } else {
                    assert_eq!(result.stats.optimistic_tries, 3);
                    gave_up += 1;
                }
            }
            (won, gave_up)
        }));
    }
    let (mut won, mut gave_up) = (Vec::new(), 0);
    for task in tasks {
        let (w, g) = task.await.expect("task");
        won.extend(w);
        gave_up += g;
    }
    eprintln!("{} increments won, {gave_up} gave up", won.len());
    assert_eq!(won.len() + gave_up, SESSIONS * INCREMENTS);
    // Exactly the successful increments were applied, each once.
    won.sort_unstable();
    let expected: Vec<i64> = (1..=won.len() as i64).collect();
    assert_eq!(won, expected);
    let client = connect(&server.connect_string()).await;
    let long = AtomicLong::new(&client, "/contended/long", RetryPolicy::never());
    assert_eq!(long.get().await.expect("get").post_value, won.len() as i64);
}

/// How many Rust sessions update the node beside Curator in the interop tests.
const RUST_SESSIONS: usize = 4;

/// Runs `tests/curator/CuratorCounter.java` (`kind`, `rounds` updates of `path`) and `update`
/// in each of [`RUST_SESSIONS`] sessions of ours, started together once the JVM is ready.
/// Returns the values our updates produced and Curator's count of successful updates.
async fn race_with_curator<F, Fut>(
    connect_string: &str,
    kind: &str,
    path: &str,
    rounds: usize,
    update: F,
) -> (Vec<i64>, i64)
where
    F: Fn(zk_proto::Client) -> Fut,
    Fut: std::future::Future<Output = Vec<i64>> + Send + 'static,
{
    let mut java = tokio::process::Command::from(curator_program("CuratorCounter"))
        .args([connect_string, kind, path, &rounds.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start java CuratorCounter");
    let mut stdin = java.stdin.take().expect("stdin");
    let mut lines = BufReader::new(java.stdout.take().expect("stdout")).lines();
    let mut next_line = async || {
        tokio::time::timeout(Duration::from_secs(120), lines.next_line())
            .await
            .expect("a line from java in time")
            .expect("read java's output")
            .expect("a line from java")
    };
    assert_eq!(next_line().await, "ready");
    let mut clients = Vec::new();
    for _ in 0..RUST_SESSIONS {
        clients.push(connect(connect_string).await);
    }
    stdin.write_all(b"go\n").await.expect("go");
    stdin.flush().await.expect("flush");
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|c| tokio::spawn(update(c)))
        .collect();
    let mut ours = Vec::new();
    for task in tasks {
        ours.extend(task.await.expect("task"));
    }
    let line = next_line().await;
    let status = java.wait().await.expect("java exit");
    assert!(status.success(), "java failed: {line}");
    let curator = line
        .strip_prefix("succeeded=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("java replied {line}"));
    (ours, curator)
}

/// Checks that Curator's updates fell between ours: our values are not one block.
fn assert_interleaved(ours: &[i64]) {
    let (min, max) = (ours.iter().min(), ours.iter().max());
    let span = max.zip(min).map_or(0, |(max, min)| max - min + 1);
    assert!(
        span > ours.len() as i64,
        "no interleaving with the Java side"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_increment_one_atomic_long() {
    const JAVA_ROUNDS: usize = 300;
    const RUST_ROUNDS: usize = 60;
    let _serial = serial().await;
    let server = start_server().await;
    let path = "/interop/atomic";
    let (won, java_won) = race_with_curator(
        &server.connect_string(),
        "atomic",
        path,
        JAVA_ROUNDS,
        |client| async move {
            let long = AtomicLong::new(
                &client,
                path,
                RetryPolicy::n_times(3, Duration::from_millis(1)),
            );
            let mut won = Vec::new();
            for _ in 0..RUST_ROUNDS {
                let result = long.increment().await.expect("increment");
                if result.succeeded {
                    won.push(result.post_value);
                }
            }
            won
        },
    )
    .await;
    eprintln!("rust won {}, curator won {java_won}", won.len());
    let client = connect(&server.connect_string()).await;
    let long = AtomicLong::new(&client, path, RetryPolicy::never());
    assert_eq!(
        long.get().await.expect("get").post_value,
        java_won + won.len() as i64,
        "lost or doubled increments"
    );
    assert_interleaved(&won);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_add_to_one_shared_count() {
    const JAVA_ROUNDS: usize = 200;
    const RUST_ROUNDS: usize = 50;
    let _serial = serial().await;
    let server = start_server().await;
    let path = "/interop/shared";
    let (seen, java_won) = race_with_curator(
        &server.connect_string(),
        "shared",
        path,
        JAVA_ROUNDS,
        |client| async move {
            let count = SharedCount::new(&client, path, 0);
            let mut seen = Vec::new();
            for _ in 0..RUST_ROUNDS {
                seen.push(i64::from(
                    count.add(1, Some(WITHIN)).await.expect("add").value,
                ));
            }
            seen
        },
    )
    .await;
    assert_eq!(java_won, JAVA_ROUNDS as i64);
    let total = (JAVA_ROUNDS + RUST_ROUNDS * RUST_SESSIONS) as i32;
    let client = connect(&server.connect_string()).await;
    let count = SharedCount::new(&client, path, 0);
    assert_eq!(count.get().await.expect("get").value, total);
    let (data, _) = client.get_data(path).await.expect("node");
    assert_eq!(&data[..], &total.to_be_bytes(), "Curator's encoding");
    assert_interleaved(&seen);
}
