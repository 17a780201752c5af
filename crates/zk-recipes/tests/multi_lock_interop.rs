//! The multi-lock and the semaphore mutex with Apache Curator's on the same paths, against a
//! real ZooKeeper 3.8 server: a multi-lock never overlaps a Curator holder of any of its
//! locks, waits for a Curator holder and releases what it took when it gives up; our
//! semaphore mutex and Curator's `InterProcessSemaphoreMutex` alternate without overlap.

mod curator_support;

use std::process::Stdio;
use std::time::Duration;

use curator_support::{CuratorPeer, checked_critical_section, curator_program};
use zk_recipes::Error;
use zk_recipes::lock::{MultiLock, SemaphoreMutex};
use zk_testkit::client::{connect, mkdirs, serial, start_server, within};

const LIMIT: Duration = Duration::from_secs(120);

/// Starts `tests/curator/<program>.java` on `path` with its marker and counter, for `rounds`.
fn start_java(
    program: &str,
    connect_string: &str,
    path: &str,
    marker: &str,
    counter: &str,
    rounds: usize,
) -> tokio::process::Child {
    tokio::process::Command::from(curator_program(program))
        .args([connect_string, path, marker, counter, &rounds.to_string()])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start java")
}

/// Waits for a Java contender and checks that it saw no violation.
async fn java_done(java: tokio::process::Child) {
    let output = within("java finishes", LIMIT, java.wait_with_output())
        .await
        .expect("java output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "java failed: {stdout}");
    assert_eq!(stdout.trim(), "violations=0", "java side");
}

async fn counter_value(client: &zk_proto::Client, counter: &str) -> u64 {
    let (data, _) = client.get_data(counter).await.expect("counter");
    std::str::from_utf8(&data)
        .expect("utf-8")
        .parse()
        .expect("number")
}

/// Waits until a Java contender did its first section (`counter` is above 0): the JVM's
/// start is over, and from then on both sides contend.
async fn started(client: &zk_proto::Client, counter: &str) {
    zk_testkit::client::eventually("the Java contender started", LIMIT, || async {
        counter_value(client, counter).await > 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_never_overlaps_curator_holders_of_any_of_its_locks() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    mkdirs(&client, "/mli").await;
    for counter in ["/mli/count-a", "/mli/count-b"] {
        client
            .create(counter, "0", &zk_proto::CreateOptions::persistent())
            .await
            .expect("create counter");
    }
    const JAVA_ROUNDS: usize = 100;
    const RUST_ROUNDS: usize = 100;
    // One Curator InterProcessMutex contender on each of the multi-lock's paths.
    let java_a = start_java(
        "CuratorLock",
        &server.connect_string(),
        "/mli/a",
        "/mli/in-a",
        "/mli/count-a",
        JAVA_ROUNDS,
    );
    let java_b = start_java(
        "CuratorLock",
        &server.connect_string(),
        "/mli/b",
        "/mli/in-b",
        "/mli/count-b",
        JAVA_ROUNDS,
    );
    // Both JVMs are in (each did a section) before ours starts to contend.
    started(&client, "/mli/count-a").await;
    started(&client, "/mli/count-b").await;
    let multi = MultiLock::new(&client, &["/mli/a", "/mli/b"]);
    let (mut violations, mut seen_a) = (0, Vec::new());
    for _ in 0..RUST_ROUNDS {
        let guard = within("multi acquire", LIMIT, multi.acquire(None))
            .await
            .expect("acquire");
        let (va, value) = checked_critical_section(&client, "/mli/in-a", "/mli/count-a").await;
        let (vb, _) = checked_critical_section(&client, "/mli/in-b", "/mli/count-b").await;
        violations += va + vb;
        seen_a.push(value);
        guard.release().await.expect("release");
    }
    java_done(java_a).await;
    java_done(java_b).await;
    assert_eq!(violations, 0, "rust side");
    for counter in ["/mli/count-a", "/mli/count-b"] {
        assert_eq!(
            counter_value(&client, counter).await,
            (JAVA_ROUNDS + RUST_ROUNDS) as u64,
            "{counter}: no lost update"
        );
    }
    // The sides contended: ours are not one block before or after Curator's.
    let span = seen_a
        .iter()
        .max()
        .zip(seen_a.iter().min())
        .map_or(0, |(max, min)| max - min + 1);
    eprintln!("multi-lock sections span {span} values of a's counter for {RUST_ROUNDS}");
    assert!(span > RUST_ROUNDS as u64, "no interleaving with Curator");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_waits_for_a_curator_holder_and_gives_back_what_it_took() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let mut curator = CuratorPeer::start(&server.connect_string()).await;
    assert_eq!(curator.call("1 mutex /mlw/b 10000").await, "acquired");
    let multi = MultiLock::new(&client, &["/mlw/a", "/mlw/b"]);
    let timed_out = multi.acquire(Some(Duration::from_millis(500))).await;
    assert!(matches!(timed_out, Err(Error::Timeout)), "{timed_out:?}");
    // It gave a back: Curator takes a at once.
    assert_eq!(curator.call("2 mutex /mlw/a 0").await, "acquired");
    assert_eq!(curator.call("2 release").await, "released");
    // It waits for Curator's holder of b, then holds both; Curator's try of either fails.
    let waiting = tokio::spawn({
        let multi = multi.clone();
        async move { multi.acquire(None).await }
    });
    zk_testkit::client::wait_children(&client, "/mlw/b", LIMIT, "our contender on b", |c| {
        c.len() == 2
    })
    .await;
    assert_eq!(curator.call("1 release").await, "released");
    let guard = within("acquired", LIMIT, waiting)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(curator.call("2 mutex /mlw/a 0").await, "timeout");
    assert_eq!(curator.call("3 mutex /mlw/b 0").await, "timeout");
    guard.release().await.expect("release");
    assert_eq!(curator.call("3 mutex /mlw/b 0").await, "acquired");
    assert_eq!(curator.call("3 release").await, "released");
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_semaphore_mutexes_alternate_without_overlap() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    mkdirs(&client, "/smi").await;
    client
        .create("/smi/count", "0", &zk_proto::CreateOptions::persistent())
        .await
        .expect("create counter");
    const JAVA_ROUNDS: usize = 100;
    const RUST_ROUNDS: usize = 100;
    const RUST_SESSIONS: usize = 2;
    let java = start_java(
        "CuratorSemaphoreMutex",
        &server.connect_string(),
        "/smi/mutex",
        "/smi/in",
        "/smi/count",
        JAVA_ROUNDS,
    );
    // The JVM is in (it did a section) before ours start to contend.
    started(&client, "/smi/count").await;
    let mut tasks = Vec::new();
    for _ in 0..RUST_SESSIONS {
        let client = connect(&server.connect_string()).await;
        tasks.push(tokio::spawn(async move {
            let mutex = SemaphoreMutex::new(&client, "/smi/mutex");
            let (mut violations, mut seen) = (0, Vec::new());
            for _ in 0..RUST_ROUNDS {
                let guard = mutex.acquire(None).await.expect("acquire");
                let (v, value) = checked_critical_section(&client, "/smi/in", "/smi/count").await;
                violations += v;
                seen.push(value);
                guard.release().await.expect("release");
            }
            (violations, seen)
        }));
    }
    let (mut violations, mut seen) = (0, Vec::new());
    for task in tasks {
        let (v, values) = within("rust contender", LIMIT, task).await.expect("task");
        violations += v;
        seen.extend(values);
    }
    java_done(java).await;
    assert_eq!(violations, 0, "rust side");
    assert_eq!(
        counter_value(&client, "/smi/count").await,
        (JAVA_ROUNDS + RUST_SESSIONS * RUST_ROUNDS) as u64
    );
    let span = seen
        .iter()
        .max()
        .zip(seen.iter().min())
        .map_or(0, |(max, min)| max - min + 1);
    eprintln!(
        "rust sections span {span} counter values for {}",
        seen.len()
    );
    assert!(span > seen.len() as u64, "no interleaving with Curator");
}
