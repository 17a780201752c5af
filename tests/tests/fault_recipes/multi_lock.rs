//! The multi-lock under faults: a Curator process holding one of its locks, killed with
//! SIGKILL, is waited out (its session expires) and the multi-lock then holds all; a holder cut
//! off is told `Suspended` and, back in time, `Held` again; an expired holder is told `Lost`
//! and another multi-lock takes every lock. The semaphore mutex: a Curator holder of the same
//! one-lease semaphore killed with SIGKILL is waited out.

use std::path::Path;
use std::time::Duration;

use zk_proto::SessionState;
use zk_recipes::lock::{MultiLock, SemaphoreMutex, Validity};
use zk_testkit::client::{
    builder, connect_proxied, connect_with, expire_session, serial, wait_children, wait_for_state,
    within,
};
use zk_testkit::line_program::LineProgram;

use super::{RECIPE_TICK, WITHIN, server};

/// `crates/zk-recipes/tests/curator/CuratorPeer.java` (its comment lists the commands).
struct Peer {
    program: LineProgram,
}

impl Peer {
    async fn start(connect_string: &str) -> Peer {
        let classpath = zk_testkit::java::curator_classpath()
            .expect("Apache Curator is installed (scripts/install-curator.sh)");
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/zk-recipes/tests/curator/CuratorPeer.java");
        let mut command = zk_testkit::java::source_program(&classpath, &source).expect("java");
        command.arg(connect_string);
        let mut program = LineProgram::spawn(command, "the Curator peer", WITHIN * 2);
        assert_eq!(program.reply("start").await, "ready");
        Peer { program }
    }

    async fn call(&mut self, command: &str) -> String {
        self.program.call(command).await
    }

    /// SIGKILL, and waits for the process to be gone.
    async fn kill9(self) {
        self.program.kill9().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_curator_holder_of_one_lock_is_waited_out_then_all_are_held() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let client = connect_with(builder(), &server.connect_string()).await;
    let mut peer = Peer::start(&server.connect_string()).await;
    // Curator's session timeout is the server's maximum here (20 ticks: 2 s).
    assert_eq!(peer.call("1 mutex /fml1/b 10000").await, "acquired");
    let multi = MultiLock::new(&client, &["/fml1/a", "/fml1/b"]);
    let waiting = tokio::spawn({
        let multi = multi.clone();
        async move { multi.acquire(None).await }
    });
    wait_children(&client, "/fml1/b", WITHIN, "ours waits on b", |c| {
        c.len() == 2
    })
    .await;
    peer.kill9().await;
    let guard = within("all held", WITHIN, waiting)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(guard.validity(), Validity::Held);
    let b = client.get_children("/fml1/b").await.expect("list b");
    assert_eq!(b.len(), 1, "only ours is left on b: {b:?}");
    guard.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_holder_is_suspended_then_held_again() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    // A session that outlives the cut.
    let cut = connect_proxied(
        server.addr(),
        builder().session_timeout(Duration::from_secs(2)),
    )
    .await;
    let multi = MultiLock::new(&cut.client, &["/fml2/a", "/fml2/b"]);
    let guard = within("acquire", WITHIN, multi.acquire(None))
        .await
        .expect("acquire");
    cut.proxy.isolate();
    let lost = within("told", WITHIN, guard.wait_lost(None))
        .await
        .expect("wait_lost");
    assert_eq!(lost, Validity::Suspended);
    cut.proxy.restore();
    wait_for_state(&cut.client, SessionState::Connected, WITHIN).await;
    assert_eq!(guard.validity(), Validity::Held);
    guard.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_holder_is_told_lost_and_another_takes_every_lock() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let holder = connect_with(builder(), &server.connect_string()).await;
    let other = connect_with(builder(), &server.connect_string()).await;
    let guard = within(
        "acquire",
        WITHIN,
        MultiLock::new(&holder, &["/fml3/a", "/fml3/b"]).acquire(None),
    )
    .await
    .expect("acquire");
    let next = tokio::spawn({
        let multi = MultiLock::new(&other, &["/fml3/a", "/fml3/b"]);
        async move { multi.acquire(None).await }
    });
    wait_children(&other, "/fml3/a", WITHIN, "the other waits on a", |c| {
        c.len() == 2
    })
    .await;
    expire_session(&holder, &server.connect_string()).await;
    let lost = within("told", WITHIN, guard.wait_lost(None))
        .await
        .expect("wait_lost");
    assert!(matches!(lost, Validity::Suspended | Validity::Lost));
    wait_for_state(&holder, SessionState::Expired, WITHIN).await;
    assert_eq!(guard.validity(), Validity::Lost);
    let taken = within("the other takes both", WITHIN, next)
        .await
        .expect("task")
        .expect("acquire");
    assert_eq!(taken.guards().len(), 2);
    assert!(matches!(
        guard.release().await,
        Err(zk_recipes::Error::Lost)
    ));
    taken.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_curator_holder_of_the_semaphore_mutex_is_waited_out() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let client = connect_with(builder(), &server.connect_string()).await;
    let mut peer = Peer::start(&server.connect_string()).await;
    // Curator's InterProcessSemaphoreV2 of one lease: InterProcessSemaphoreMutex's layout.
    assert_eq!(peer.call("1 semaphore /fsm1 1 10000").await, "acquired");
    let mutex = SemaphoreMutex::new(&client, "/fsm1");
    assert!(mutex.try_acquire().await.expect("try").is_none());
    let waiting = tokio::spawn(async move { mutex.acquire(None).await });
    wait_children(
        &client,
        "/fsm1/leases",
        WITHIN,
        "ours waits for the lease",
        |c| c.len() == 2,
    )
    .await;
    peer.kill9().await;
    let guard = within("held", WITHIN, waiting)
        .await
        .expect("task")
        .expect("acquire");
    let leases = client.get_children("/fsm1/leases").await.expect("list");
    assert_eq!(leases.len(), 1, "only ours: {leases:?}");
    guard.release().await.expect("release");
}
