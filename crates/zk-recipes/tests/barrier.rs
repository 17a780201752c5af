//! Barrier, double barrier and "queue start" against a real server, with several sessions
//! taking part concurrently.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use zk_recipes::Error;
use zk_recipes::barrier::{Barrier, DoubleBarrier, START_NODE, StartGate};
use zk_testkit::client::{builder, eventually, join, sessions, start_server};

const WITHIN: Duration = Duration::from_secs(20);
/// The session timeout of every session here.
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);

/// The participant count of a barrier for `clients` sessions.
fn count(clients: usize) -> u32 {
    u32::try_from(clients).expect("a few sessions")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn barriers_and_start_gate_with_concurrent_sessions() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let session = builder().session_timeout(SESSION_TIMEOUT);
    let clients = sessions(session, &connect_string, 8).await;

    barrier_releases_every_waiter(&clients).await;
    double_barrier_enters_together_and_leaves_together(&clients[..6]).await;
    start_gate_starts_exactly_once(&clients).await;
    start_gate_under_contention(&clients).await;
    start_gate_timeout_withdraws(&clients[0]).await;
    expired_participant_counts_as_left(&connect_string).await;

    for client in clients {
        client.close().await.expect("close");
    }
}

async fn barrier_releases_every_waiter(clients: &[zk_proto::Client]) {
    let control = Barrier::new(&clients[0], "/barriers/simple/gate");
    assert!(control.set().await.expect("set"), "created with its parent");
    assert!(!control.set().await.expect("set again"), "already set");
    // A closed barrier blocks until the timeout.
    let closed = control.wait(Some(Duration::from_millis(200))).await;
    assert!(matches!(closed, Err(Error::Timeout)), "{closed:?}");

    let removed = Arc::new(AtomicBool::new(false));
    let mut waiters = Vec::new();
    for client in &clients[1..] {
        let barrier = Barrier::new(client, control.path());
        let removed = removed.clone();
        waiters.push(tokio::spawn(async move {
            barrier
                .wait(Some(WITHIN))
                .await
                .expect("released, not timed out");
            assert!(
                removed.load(Ordering::SeqCst),
                "released only by the removal"
            );
        }));
    }
    // A data change fires the waiters' watches; they must keep waiting.
    clients[0]
        .set_data(control.path(), "still closed", None)
        .await
        .expect("set_data");
    let closed = control.wait(Some(Duration::from_millis(100))).await;
    assert!(matches!(closed, Err(Error::Timeout)), "{closed:?}");
    removed.store(true, Ordering::SeqCst);
    assert!(control.remove().await.expect("remove"));
    assert!(!control.remove().await.expect("remove again"));
    for waiter in waiters {
        join("a barrier waiter", WITHIN, waiter).await;
    }
    // An open barrier does not block: one round trip says so. (Not with a zero timeout: the
    // timeout bounds the whole call, that round trip included.)
    control.wait(Some(WITHIN)).await.expect("wait");
}

async fn double_barrier_enters_together_and_leaves_together(clients: &[zk_proto::Client]) {
    let path = "/barriers/double";
    let n = clients.len();
    let entering = Arc::new(AtomicUsize::new(0));
    let entered = Arc::new(AtomicUsize::new(0));
    let leaving = Arc::new(AtomicUsize::new(0));

    let spawn = |client: zk_proto::Client| {
        let (entering, entered, leaving) = (entering.clone(), entered.clone(), leaving.clone());
        tokio::spawn(async move {
            let barrier = DoubleBarrier::new(&client, path, count(n));
            entering.fetch_add(1, Ordering::SeqCst);
            barrier.enter(Some(WITHIN)).await.expect("enter");
            assert_eq!(
                entering.load(Ordering::SeqCst),
                n,
                "entered before all joined"
            );
            entered.fetch_add(1, Ordering::SeqCst);
            leaving.fetch_add(1, Ordering::SeqCst);
            barrier.leave(Some(WITHIN)).await.expect("leave");
            assert_eq!(leaving.load(Ordering::SeqCst), n, "left before all left");
        })
    };

    // All but the last join; nobody may get through while one is missing.
    let mut tasks: Vec<_> = clients[..n - 1].iter().cloned().map(spawn).collect();
    let observer = clients[0].clone();
    eventually("n - 1 participants joined", WITHIN, || {
        let observer = observer.clone();
        async move {
            observer
                .get_children(path)
                .await
                .is_ok_and(|children| children.len() == n - 1)
        }
    })
    .await;
    assert_eq!(entered.load(Ordering::SeqCst), 0, "nobody entered early");
    tasks.push(spawn(clients[n - 1].clone()));
    for task in tasks {
        join("a double-barrier participant", WITHIN, task).await;
    }
    assert_eq!(entered.load(Ordering::SeqCst), n);
    let left = observer.get_children(path).await.expect("children");
    assert!(
        left.is_empty(),
        "every node and the ready node are gone: {left:?}"
    );
}

async fn start_gate_starts_exactly_once(clients: &[zk_proto::Client]) {
    let path = "/queue-start/staggered";
    let n = clients.len();
    let spawn = |client: zk_proto::Client| {
        tokio::spawn(async move {
            let gate = StartGate::new(&client, path, count(n));
            gate.join(Some(WITHIN)).await.expect("started")
        })
    };
    let mut tasks: Vec<_> = clients[..n - 1].iter().cloned().map(spawn).collect();
    let observer = clients[0].clone();
    eventually("n - 1 members joined", WITHIN, || {
        let observer = observer.clone();
        async move {
            observer
                .get_children(path)
                .await
                .is_ok_and(|children| children.len() == n - 1)
        }
    })
    .await;
    assert!(
        tasks.iter().all(|task| !task.is_finished()),
        "started early"
    );
    assert!(
        observer
            .exists(&format!("{path}/{START_NODE}"))
            .await
            .expect("exists")
            .is_none()
    );
    tasks.push(spawn(clients[n - 1].clone()));
    let mut creators = 0;
    for task in tasks {
        let started = join("a start-gate member", WITHIN, task).await;
        assert!(started.notified_by_watch, "told by the watch on start");
        creators += usize::from(started.created_start);
    }
    assert_eq!(creators, 1, "the start node is created exactly once");
}

async fn start_gate_under_contention(clients: &[zk_proto::Client]) {
    let path = "/queue-start/contended";
    let n = clients.len();
    let tasks: Vec<_> = clients
        .iter()
        .cloned()
        .map(|client| {
            tokio::spawn(async move {
                StartGate::new(&client, path, count(n))
                    .join(Some(WITHIN))
                    .await
                    .expect("started")
            })
        })
        .collect();
    let mut creators = 0;
    for task in tasks {
        creators += usize::from(
            join("a contending start-gate member", WITHIN, task)
                .await
                .created_start,
        );
    }
    assert_eq!(creators, 1, "the start node is created exactly once");

    // A participant arriving after the start learns it at once.
    let late = StartGate::new(&clients[0], path, count(n));
    let started = late.join(Some(WITHIN)).await.expect("started");
    assert!(!started.created_start && !started.notified_by_watch);
    assert!(late.reset().await.expect("reset"));
}

async fn start_gate_timeout_withdraws(client: &zk_proto::Client) {
    let path = "/queue-start/alone";
    let gate = StartGate::new(client, path, 3);
    let started = gate.join(Some(Duration::from_millis(200))).await;
    assert!(
        matches!(started, Err(Error::Timeout)),
        "times out alone: {started:?}"
    );
    let members = client.get_children(path).await.expect("children");
    assert!(
        members.is_empty(),
        "the member node was withdrawn: {members:?}"
    );
}

async fn expired_participant_counts_as_left(connect_string: &str) {
    let path = "/barriers/session-loss";
    let session = builder().session_timeout(SESSION_TIMEOUT);
    let clients = sessions(session, connect_string, 3).await;
    let barriers: Vec<_> = clients
        .iter()
        .map(|client| DoubleBarrier::new(client, path, 3))
        .collect();
    let entering: Vec<_> = barriers
        .iter()
        .cloned()
        .map(|barrier| tokio::spawn(async move { barrier.enter(Some(WITHIN)).await }))
        .collect();
    for task in entering {
        join("enter", WITHIN, task).await.expect("enter");
    }
    let leaving: Vec<_> = barriers[..2]
        .iter()
        .cloned()
        .map(|barrier| tokio::spawn(async move { barrier.leave(Some(WITHIN)).await }))
        .collect();
    // The third never leaves: its session ends, its ephemeral node goes, the others get out.
    let observer = clients[0].clone();
    let third = barriers[2].node_path();
    assert!(observer.exists(&third).await.expect("exists").is_some());
    assert!(leaving.iter().all(|task| !task.is_finished()), "left early");
    clients[2].close().await.expect("close");
    for task in leaving {
        join("leave", WITHIN, task).await.expect("leave");
    }
    assert!(observer.exists(&third).await.expect("exists").is_none());
    for client in &clients[..2] {
        client.close().await.expect("close");
    }
}
