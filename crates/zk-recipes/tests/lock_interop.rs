//! The lock recipes and Apache Curator's on the same paths, against a real ZooKeeper 3.8
//! server: contenders of both libraries share one mutex, one re-entrant lock and one
//! read-write lock, and exclude each other.

mod curator_support;

use curator_support::{CuratorPeer, checked_critical_section, curator_program};
use std::time::{Duration, Instant};

use zk_recipes::Error;
use zk_recipes::lock::{Lock, ReadWriteLock};
use zk_testkit::client::{connect, poll_children, serial, start_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_contenders_share_one_lock() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let (path, marker, counter) = ("/interop/lock", "/interop/inside", "/interop/counter");
    client
        .create("/interop", "", &zk_proto::CreateOptions::persistent())
        .await
        .expect("create /interop");
    client
        .create(counter, "0", &zk_proto::CreateOptions::persistent())
        .await
        .expect("create counter");

    const JAVA_ROUNDS: usize = 150;
    const RUST_ROUNDS: usize = 150;
    const RUST_SESSIONS: usize = 2;
    let java = tokio::process::Command::from(curator_program("CuratorLock"))
        .arg(server.connect_string())
        .arg(path)
        .arg(marker)
        .arg(counter)
        .arg(JAVA_ROUNDS.to_string())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start java");
    // Let the JVM start and take part from the beginning.
    let java_started = Instant::now();
    while java_started.elapsed() < Duration::from_secs(20) {
        let children = client.get_children(path).await.unwrap_or_default();
        if !children.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut tasks = Vec::new();
    for _ in 0..RUST_SESSIONS {
        let client = connect(&server.connect_string()).await;
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(&client, path);
            let (mut violations, mut seen) = (0, Vec::new());
            for _ in 0..RUST_ROUNDS {
                let guard = lock.acquire(None).await.expect("acquire");
                let (v, value) = checked_critical_section(&client, marker, counter).await;
                violations += v;
                seen.push(value);
                guard.release().await.expect("release");
            }
            (violations, seen)
        }));
    }
    let (mut rust_violations, mut seen) = (0, Vec::new());
    for task in tasks {
        let (v, values) = task.await.expect("task");
        rust_violations += v;
        seen.extend(values);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), java.wait_with_output())
        .await
        .expect("java finishes")
        .expect("java output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "java failed: {stdout}");
    // Exclusion both ways: the Java side found no Rust holder inside when it entered (its
    // marker create met no NodeExists, its delete no NoNode), the Rust side found no Java
    // holder inside, and no update of the counter was lost.
    assert_eq!(stdout.trim(), "violations=0", "java side");
    assert_eq!(rust_violations, 0, "rust side");
    // The two sides really contended: the Rust sections are not one block before or after
    // the Java ones.
    let (min, max) = (seen.iter().min(), seen.iter().max());
    let span = max.zip(min).map(|(max, min)| max - min + 1).unwrap_or(0);
    eprintln!(
        "rust sections span {span} counter values for {} sections",
        seen.len()
    );
    assert!(
        span > seen.len() as u64,
        "no interleaving with the Java side"
    );
    let (data, _) = client.get_data(counter).await.expect("counter");
    assert_eq!(
        &data[..],
        (JAVA_ROUNDS + RUST_SESSIONS * RUST_ROUNDS)
            .to_string()
            .as_bytes()
    );
}

/// Creates `/<base>`, its `readers` child and its `counter` (0), for the critical sections of
/// the read-write interop tests.
async fn make_rw_base(client: &zk_proto::Client, base: &str) {
    let persistent = zk_proto::CreateOptions::persistent();
    for (path, data) in [
        (base.to_owned(), ""),
        (format!("{base}/readers"), ""),
        (format!("{base}/counter"), "0"),
    ] {
        client
            .create(&path, data, &persistent)
            .await
            .expect("create the checks' nodes");
    }
}

/// A Rust holder of the Curator mutex excludes a Curator contender and the other way round;
/// each waits for the other's release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_mutex_holders_exclude_each_other() {
    let _serial = serial().await;
    let server = start_server().await;
    let mut java = CuratorPeer::start(&server.connect_string()).await;
    let client = connect(&server.connect_string()).await;
    let path = "/interop-mutex/lock";
    let lock = Lock::new(&client, path);

    // Rust holds: Curator waits, and gets it after the release.
    let guard = lock.acquire(None).await.expect("rust acquires");
    assert_eq!(java.call(&format!("a mutex {path} 300")).await, "timeout");
    java.call(&format!("a mutex-bg {path}")).await;
    poll_children(&client, path, Duration::from_secs(5), |c| c.len() == 2).await;
    assert_eq!(java.call("a held 200").await, "pending");
    guard.release().await.expect("release");
    assert_eq!(java.call("a held 5000").await, "acquired");

    // Curator holds: Rust waits, and gets it after the release.
    let refused = lock.acquire(Some(Duration::from_millis(300))).await;
    assert!(matches!(refused, Err(Error::Timeout)), "{refused:?}");
    let waiter = tokio::spawn({
        let lock = lock.clone();
        async move {
            let result = lock.acquire(None).await;
            (result, Instant::now())
        }
    });
    poll_children(&client, path, Duration::from_secs(5), |c| c.len() == 2).await;
    assert!(
        !waiter.is_finished(),
        "the Rust waiter got the lock Curator holds"
    );
    // No grant before Curator's release, checked on the events themselves (the grant's
    // instant against the release's) rather than on a window in which none must come.
    let releasing_at = Instant::now();
    java.call("a release").await;
    let (guard, granted_at) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("granted after Curator's release")
        .expect("task");
    let guard = guard.expect("acquire");
    assert!(
        granted_at >= releasing_at,
        "the Rust waiter got the lock Curator held, {:?} before its release",
        releasing_at - granted_at
    );
    guard.release().await.expect("release");
    java.quit().await;
}

/// A re-entrant Rust owner holding the lock twice excludes a Curator contender until its last
/// hold is given back, and waits while Curator holds it (`Lock::reentrant` shares the mutex's
/// nodes, and so Curator's `InterProcessMutex`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_a_reentrant_rust_owner_exclude_each_other() {
    let _serial = serial().await;
    let server = start_server().await;
    let mut java = CuratorPeer::start(&server.connect_string()).await;
    let client = connect(&server.connect_string()).await;
    let path = "/interop-reentrant/lock";
    let owner = Lock::reentrant(&client, path);

    let first = owner.acquire(None).await.expect("rust acquires");
    let second = owner.acquire(None).await.expect("rust re-enters");
    assert_eq!(owner.hold_count(), 2);
    assert_eq!(java.call(&format!("a mutex {path} 300")).await, "timeout");
    first.release().await.expect("release one hold");
    assert_eq!(
        java.call(&format!("a mutex {path} 300")).await,
        "timeout",
        "one hold is still there"
    );
    java.call(&format!("a mutex-bg {path}")).await;
    poll_children(&client, path, Duration::from_secs(5), |c| c.len() == 2).await;
    second.release().await.expect("release the last hold");
    assert_eq!(java.call("a held 5000").await, "acquired");

    let refused = owner.acquire(Some(Duration::from_millis(300))).await;
    assert!(matches!(refused, Err(Error::Timeout)), "{refused:?}");
    java.call("a release").await;
    let guard = owner
        .acquire(Some(Duration::from_secs(5)))
        .await
        .expect("granted after Curator's release");
    guard.release().await.expect("release");
    java.quit().await;
}

/// Curator's `InterProcessReadWriteLock` and ours on one path, in every direction: a writer of
/// either library excludes the writers and readers of the other, readers of both share, and a
/// reader queued behind the other library's writer waits for it (the order is the same).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_read_write_locks_exclude_each_other() {
    let _serial = serial().await;
    let server = start_server().await;
    let mut java = CuratorPeer::start(&server.connect_string()).await;
    let r1 = connect(&server.connect_string()).await;
    let r2 = connect(&server.connect_string()).await;
    let path = "/interop-rw/lock";
    let (rw1, rw2) = (ReadWriteLock::new(&r1, path), ReadWriteLock::new(&r2, path));
    let refused = |result: zk_recipes::Result<zk_recipes::lock::LockGuard>, what: &str| {
        assert!(
            matches!(result, Err(Error::Timeout)),
            "{what} was not excluded: {result:?}"
        );
    };
    let short = Duration::from_millis(300);
    let long = Duration::from_secs(5);

    // 1. A Rust writer excludes Curator's writers and readers.
    let writer = rw1.write_lock().acquire(None).await.expect("rust writer");
    assert!(writer.node().contains("-__WRIT__"), "{}", writer.node());
    assert_eq!(java.call(&format!("a write {path} 300")).await, "timeout");
    assert_eq!(java.call(&format!("a read {path} 300")).await, "timeout");
    writer.release().await.expect("release");

    // 2. Readers of both libraries share; a Rust writer waits for a Curator reader.
    assert_eq!(java.call(&format!("a read {path} 5000")).await, "acquired");
    let reader = rw1
        .read_lock()
        .acquire(Some(long))
        .await
        .expect("rust reader shares");
    refused(rw2.write_lock().acquire(Some(short)).await, "a Rust writer");
    reader.release().await.expect("release");
    java.call("a release").await;

    // 3. A Curator writer excludes Rust writers and readers.
    assert_eq!(java.call(&format!("a write {path} 5000")).await, "acquired");
    refused(rw1.write_lock().acquire(Some(short)).await, "a Rust writer");
    refused(rw1.read_lock().acquire(Some(short)).await, "a Rust reader");
    java.call("a release").await;
    // Readers share the other way round too.
    let reader = rw1
        .read_lock()
        .acquire(Some(long))
        .await
        .expect("rust reader");
    assert_eq!(java.call(&format!("b read {path} 5000")).await, "acquired");
    java.call("b release").await;

    // 4. A Rust writer queued behind a Rust reader: a later Curator reader waits for it.
    let writer = tokio::spawn({
        let rw = rw2.clone();
        async move { rw.write_lock().acquire(None).await }
    });
    poll_children(&r1, path, long, |c| c.len() == 2).await;
    assert_eq!(java.call(&format!("b read {path} 300")).await, "timeout");
    reader.release().await.expect("release");
    let writer = tokio::time::timeout(long, writer)
        .await
        .expect("the queued writer is granted")
        .expect("task")
        .expect("acquire");
    assert_eq!(java.call(&format!("b read {path} 300")).await, "timeout");
    writer.release().await.expect("release");
    assert_eq!(java.call(&format!("b read {path} 5000")).await, "acquired");
    java.call("b release").await;

    // 5. A Curator writer queued behind a Rust reader: a later Rust reader waits for it.
    let reader = rw1.read_lock().acquire(None).await.expect("rust reader");
    java.call(&format!("a write-bg {path}")).await;
    poll_children(&r1, path, long, |c| c.len() == 2).await;
    refused(
        rw2.read_lock().acquire(Some(short)).await,
        "a Rust reader behind a Curator writer",
    );
    assert_eq!(java.call("a held 100").await, "pending");
    reader.release().await.expect("release");
    assert_eq!(java.call("a held 5000").await, "acquired");
    refused(rw2.read_lock().acquire(Some(short)).await, "a Rust reader");
    java.call("a release").await;
    let reader = rw2
        .read_lock()
        .acquire(Some(long))
        .await
        .expect("rust reader");
    reader.release().await.expect("release");

    assert!(
        poll_children(&r1, path, long, |c| c.is_empty())
            .await
            .is_empty()
    );
    java.quit().await;
}

/// Curator's writers and readers (one thread each) and ours (one task each) on one
/// read-write lock, each checking the exclusion inside its critical section (the checks of
/// `CuratorPeer.java`'s `rw-stress`): no overlap is seen from either side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_read_write_locks_under_mixed_contention() {
    const JAVA_WRITES: usize = 50;
    const JAVA_READS: usize = 50;
    const RUST_WRITES: usize = 50;
    const RUST_READS: usize = 50;
    let _serial = serial().await;
    let server = start_server().await;
    let mut java = CuratorPeer::start(&server.connect_string()).await;
    let client = connect(&server.connect_string()).await;
    let (path, base) = ("/interop-rw-mix/lock", "/interop-rw-mix-checks");
    make_rw_base(&client, base).await;

    let rust_writer = {
        let client = connect(&server.connect_string()).await;
        tokio::spawn(async move {
            wait_for_java_sections(&client, base).await;
            let rw = ReadWriteLock::new(&client, path);
            let (mut violations, mut seen) = (0, Vec::new());
            for _ in 0..RUST_WRITES {
                let guard = rw.write_lock().acquire(None).await.expect("write");
                let (v, value) = rw_writer_section(&client, base).await;
                violations += v;
                seen.push(value);
                guard.release().await.expect("release");
            }
            (violations, seen)
        })
    };
    let rust_reader = {
        let client = connect(&server.connect_string()).await;
        tokio::spawn(async move {
            wait_for_java_sections(&client, base).await;
            let rw = ReadWriteLock::new(&client, path);
            let mut violations = 0;
            for i in 0..RUST_READS {
                let guard = rw.read_lock().acquire(None).await.expect("read");
                violations += rw_reader_section(&client, base, &format!("rust-{i}")).await;
                guard.release().await.expect("release");
            }
            violations
        })
    };
    let java_reply = java
        .call(&format!(
            "- rw-stress {path} {base} {JAVA_WRITES} {JAVA_READS}"
        ))
        .await;
    let (writer_violations, seen) = rust_writer.await.expect("rust writer");
    let reader_violations = rust_reader.await.expect("rust reader");
    // Exclusion both ways: the Java sections saw no Rust writer or reader inside, the Rust
    // sections no Java one.
    assert!(
        java_reply == format!("violations=0 writes={JAVA_WRITES} reads={JAVA_READS}")
            && writer_violations == 0
            && reader_violations == 0,
        "overlaps: java side {java_reply}; rust writer {writer_violations}, rust reader \
         {reader_violations}"
    );
    let (data, _) = client
        .get_data(&format!("{base}/counter"))
        .await
        .expect("counter");
    assert_eq!(
        &data[..],
        (JAVA_WRITES + RUST_WRITES).to_string().as_bytes(),
        "a write was lost"
    );
    // The Rust writes were interleaved with the Java ones.
    let span = seen
        .iter()
        .max()
        .zip(seen.iter().min())
        .map(|(max, min)| max - min + 1);
    assert!(
        span.unwrap_or(0) > seen.len() as u64,
        "no interleaving with the Java writer"
    );
    java.quit().await;
}

/// Waits (bounded) until a Java writer or reader has been in its critical section, so that
/// the Rust side contends with it from its start (the Java threads connect their own
/// sessions first).
async fn wait_for_java_sections(client: &zk_proto::Client, base: &str) {
    let (counter, readers) = (format!("{base}/counter"), format!("{base}/readers"));
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline {
        let (data, _) = client.get_data(&counter).await.expect("read counter");
        let children = client.get_children(&readers).await.expect("list readers");
        if &data[..] != b"0" || children.iter().any(|c| c.starts_with("java-")) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("the Java side never entered its critical section");
}

/// The writer's checks (as `CuratorPeer.java`'s `writerSection`): returns the violations
/// and the counter's value read.
async fn rw_writer_section(client: &zk_proto::Client, base: &str) -> (usize, u64) {
    let mut violations = 0;
    let marker = format!("{base}/writer");
    match client
        .create(&marker, "", &zk_proto::CreateOptions::ephemeral())
        .await
    {
        Ok(_) => {}
        Err(zk_proto::Error::NodeExists) => violations += 1,
        Err(e) => panic!("create the writer marker: {e}"),
    }
    let readers = client
        .get_children(&format!("{base}/readers"))
        .await
        .expect("list readers");
    if !readers.is_empty() {
        violations += 1;
    }
    let counter = format!("{base}/counter");
    let (data, _) = client.get_data(&counter).await.expect("read counter");
    let value: u64 = std::str::from_utf8(&data)
        .expect("utf-8")
        .parse()
        .expect("number");
    tokio::time::sleep(Duration::from_millis(2)).await;
    client
        .set_data(&counter, (value + 1).to_string(), None)
        .await
        .expect("write counter");
    match client.delete(&marker, None).await {
        Ok(()) => {}
        Err(zk_proto::Error::NoNode) => violations += 1,
        Err(e) => panic!("delete the writer marker: {e}"),
    }
    (violations, value)
}

/// The reader's checks (as `CuratorPeer.java`'s `readerSection`): returns the violations.
async fn rw_reader_section(client: &zk_proto::Client, base: &str, name: &str) -> usize {
    let mut violations = 0;
    let own = format!("{base}/readers/{name}");
    let (writer, counter) = (format!("{base}/writer"), format!("{base}/counter"));
    client
        .create(&own, "", &zk_proto::CreateOptions::ephemeral())
        .await
        .expect("create the reader marker");
    if client.exists(&writer).await.expect("exists").is_some() {
        violations += 1;
    }
    let (before, _) = client.get_data(&counter).await.expect("read counter");
    tokio::time::sleep(Duration::from_millis(3)).await;
    let (after, _) = client.get_data(&counter).await.expect("read counter");
    if before != after {
        violations += 1;
    }
    if client.exists(&writer).await.expect("exists").is_some() {
        violations += 1;
    }
    client
        .delete(&own, None)
        .await
        .expect("delete the reader marker");
    violations
}
