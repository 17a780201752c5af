//! The lock recipe (`zk_recipes::lock::Lock`) under faults, against real ZooKeeper 3.8 servers
//! and ensembles: a killed leader, a killed server, lost replies, frozen and cut connections,
//! cancellation, panics and real session expiry.
//!
//! Every wait is bounded; the only sleeps are the durations of faults (how long a proxy stays
//! frozen or cut off) or the schedule of a fault, never a stand-in for an event.

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jute::OpCode;
use tokio::time::Instant;
use zk_proto::{Client, CreateMode, CreateOptions, Error, SessionState};
use zk_recipes::lock::{Lock, LockGuard, Validity};
use zk_testkit::Ensemble;
use zk_testkit::client::{
    SESSION_TIMEOUT, StateLog, blocking, builder, children, connect, connect_with, mkdirs, serial,
    start_ensemble, start_server, wait_children, wait_state, within,
};
use zk_testkit::fault::FaultProxy;

/// A bound for a single acquire or release that must succeed.
const CALL: Duration = Duration::from_secs(30);

/// The session timeout every client asks for (the kit's; the servers grant it as is).
const SESSION: Duration = SESSION_TIMEOUT;

/// The client's read timeout for [`SESSION`] (`2T/3`, `zk_proto::session::timing`).
const READ_TIMEOUT: Duration = Duration::from_millis(4000 * 2 / 3);

/// The children of `path` with their ephemeral owner (a child deleted meanwhile is left out).
async fn owners(client: &Client, path: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for child in children(client, path).await {
        let full = format!("{path}/{child}");
        match within("stat", Duration::from_secs(10), client.exists(&full)).await {
            Ok(Some(stat)) => out.push((child, stat.ephemeral_owner)),
            Ok(None) => {}
            Err(e) => panic!("stat {full}: {e}"),
        }
    }
    out
}

/// An in-process check of mutual exclusion: the critical section of every holder.
#[derive(Clone, Default)]
struct Exclusion {
    inside: Arc<AtomicBool>,
    violations: Arc<AtomicUsize>,
    entries: Arc<AtomicUsize>,
}

impl Exclusion {
    /// Enters the critical section (counting a violation if someone else is inside), yields,
    /// and leaves.
    async fn critical_section(&self) {
        if self.inside.swap(true, Ordering::SeqCst) {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.entries.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        self.inside.store(false, Ordering::SeqCst);
    }

    fn violations(&self) -> usize {
        self.violations.load(Ordering::SeqCst)
    }
}

/// The name of a node (the last path segment).
fn name(node: &str) -> String {
    node.rsplit('/').next().unwrap_or(node).to_owned()
}

/// Takes the lock at `path`, bounded, expecting success.
async fn acquire(client: &Client, path: &str) -> LockGuard {
    within("acquire", CALL, Lock::new(client, path).acquire(None))
        .await
        .expect("acquire")
}

/// Releases a guard, bounded, expecting success.
async fn release(guard: LockGuard) {
    within("release", CALL, guard.release())
        .await
        .expect("release");
}

/// Spawns `lock.acquire(Some(limit))`; the task returns the result and when it came.
fn spawn_acquire(
    lock: &Lock,
    limit: Duration,
) -> tokio::task::JoinHandle<(zk_recipes::Result<LockGuard>, Instant)> {
    let lock = lock.clone();
    tokio::spawn(async move {
        let result = lock.acquire(Some(limit)).await;
        (result, Instant::now())
    })
}

/// Waits (at most 2 s) until the guard reports `validity`: the guard follows the client's
/// state through its own watch, a task hop behind the client's state.
async fn wait_validity(guard: &LockGuard, validity: Validity) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while guard.validity() != validity {
        assert!(
            Instant::now() < deadline,
            "the guard stays {:?}, not {validity:?}",
            guard.validity()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Scenario 1: 8 sessions × 200 lock cycles on a 3-server ensemble; the leader is killed
/// (SIGKILL) mid-run and restarted. Never two holders (an in-process flag checked inside the
/// critical section), fencing tokens (and sequence numbers) increase in grant order, every
/// cycle completes, and the lock path is empty at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cycles_on_an_ensemble_survive_a_killed_leader() {
    const SESSIONS: usize = 8;
    const CYCLES: usize = 200;
    const TOTAL: usize = SESSIONS * CYCLES;
    let _serial = serial().await;
    let ensemble = start_ensemble(Ensemble::builder(3)).await;
    let connect_string = ensemble.connect_string();
    let path = "/fault/cycles";
    let exclusion = Exclusion::default();
    // (sequence, fencing token) of every grant, pushed inside the critical section.
    let grants = Arc::new(Mutex::new(Vec::<(i64, i64)>::with_capacity(TOTAL)));
    let (progress, mut progress_rx) = tokio::sync::watch::channel(0usize);
    let progress = Arc::new(progress);
    let started = Instant::now();
    let mut logs = Vec::new();
    let mut tasks = Vec::new();
    // Sessions that outlive an election on a loaded 2-core machine: the kit's 4 s timeout
    // expired them on CI while the new leader was being elected and eight sessions came back.
    let patient = builder().session_timeout(Duration::from_secs(10));
    for _ in 0..SESSIONS {
        let client = connect_with(patient.clone(), &connect_string).await;
        logs.push(StateLog::record(&client));
        let (exclusion, grants, progress) = (exclusion.clone(), grants.clone(), progress.clone());
        tasks.push(tokio::spawn(async move {
            let lock = Lock::new(&client, path);
            for _ in 0..CYCLES {
                let guard = within("acquire", CALL, lock.acquire(None))
                    .await
                    .expect("acquire");
                if exclusion.inside.swap(true, Ordering::SeqCst) {
                    exclusion.violations.fetch_add(1, Ordering::SeqCst);
                }
                grants
                    .lock()
                    .expect("grants")
                    .push((guard.sequence().expect("sequence"), guard.fencing_token()));
                tokio::task::yield_now().await;
                exclusion.inside.store(false, Ordering::SeqCst);
                progress.send_modify(|n| *n += 1);
                release(guard).await;
            }
            client.close().await.expect("close");
        }));
    }

    // The fault: kill -9 the leader a quarter into the run, then bring it back.
    within(
        "a quarter of the cycles",
        Duration::from_secs(60),
        progress_rx.wait_for(|n| *n >= TOTAL / 4),
    )
    .await
    .expect("progress");
    let leader = blocking({
        let ensemble = ensemble.clone();
        move || ensemble.wait_for_leader().expect("leader")
    })
    .await;
    let at_kill = *progress_rx.borrow();
    let killed_at = Instant::now();
    blocking({
        let ensemble = ensemble.clone();
        move || ensemble.kill(leader)
    })
    .await;
    let new_leader = blocking({
        let ensemble = ensemble.clone();
        move || ensemble.wait_for_leader().expect("a new leader")
    })
    .await;
    assert_ne!(new_leader, leader);
    let elected_after = killed_at.elapsed();
    blocking({
        let ensemble = ensemble.clone();
        move || ensemble.restart(leader).expect("restart the old leader")
    })
    .await;
    let at_restart = *progress_rx.borrow();

    for task in tasks {
        within("contender", Duration::from_secs(120), task)
            .await
            .expect("contender task");
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{SESSIONS} sessions x {CYCLES} cycles: {elapsed:?}; leader killed after {at_kill} \
         grants, re-elected in {elected_after:?}, restarted after {at_restart} grants"
    );
    assert!(
        at_kill < TOTAL,
        "the leader was killed after the run ended: the fault hit nothing"
    );
    let disconnected = logs
        .iter()
        .filter(|log| log.states().contains(&SessionState::Disconnected))
        .count();
    assert!(disconnected > 0, "no session noticed the leader's death");
    for log in &logs {
        assert!(
            !log.states().contains(&SessionState::Expired),
            "a session expired: {:?}",
            log.states()
        );
    }
    assert_eq!(exclusion.violations(), 0, "two holders at once");
    let grants = std::mem::take(&mut *grants.lock().expect("grants"));
    assert_eq!(grants.len(), TOTAL);
    for pair in grants.windows(2) {
        assert!(pair[0].0 < pair[1].0, "not granted in node order: {pair:?}");
        assert!(
            pair[0].1 < pair[1].1,
            "fencing tokens not increasing in grant order: {pair:?}"
        );
    }
    let observer = connect(&connect_string).await;
    wait_children(&observer, path, Duration::from_secs(5), "empty lock", |c| {
        c.is_empty()
    })
    .await;
}

/// Whether server `i` of `ensemble` serves the session `sid` (from `cons`).
async fn serves(ensemble: &Arc<zk_testkit::Ensemble>, i: usize, sid: i64) -> bool {
    let ensemble = ensemble.clone();
    blocking(move || {
        ensemble
            .server(i)
            .four_letter("cons")
            .is_ok_and(|cons| cons.contains(&format!("sid={sid:#x}")))
    })
    .await
}

/// Scenario 2: the holder and a waiter on different servers of an ensemble; the holder's
/// server is killed. The holder keeps its session and its lock (it moves to another server
/// and its guard is valid again), the waiter is not granted meanwhile, and is granted exactly
/// once, after the holder releases. Every call is bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_server_dies_keeps_the_lock_and_the_waiter_waits() {
    let _serial = serial().await;
    let ensemble = start_ensemble(Ensemble::builder(3)).await;
    let leader = blocking({
        let ensemble = ensemble.clone();
        move || ensemble.wait_for_leader().expect("leader")
    })
    .await;
    // The holder starts on a follower (so killing it leaves the quorum and the leader alone);
    // the waiter talks to the other follower only.
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let (holder_server, waiter_server) = (followers[0], followers[1]);
    let address = |i: usize| ensemble.server(i).connect_string();
    let holder_client = within(
        "connect the holder",
        Duration::from_secs(20),
        builder().keep_host_order(true).connect(&format!(
            "{},{},{}",
            address(holder_server),
            address(leader),
            address(waiter_server)
        )),
    )
    .await
    .expect("connect");
    let waiter_client = connect(&address(waiter_server)).await;
    let holder_sid = holder_client.session_id();
    assert!(serves(&ensemble, holder_server, holder_sid).await);
    let path = "/fault/moving";
    let holder = acquire(&holder_client, path).await;
    let holder_node = holder.node().to_owned();
    let waiter_states = StateLog::record(&waiter_client);
    let waiter = spawn_acquire(&Lock::new(&waiter_client, path), CALL);
    let listing = wait_children(
        &waiter_client,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    let holder_name = name(&holder_node);
    let waiter_name = listing
        .into_iter()
        .find(|c| *c != holder_name)
        .expect("the waiter's node");

    let holder_states = StateLog::record(&holder_client);
    // The guard's loss report is awaited while the server dies: the reconnection to another
    // server is quick, and the report must not be missed.
    let (suspended, ()) = tokio::join!(
        within(
            "the holder's suspension",
            Duration::from_secs(5),
            holder.lost(None)
        ),
        blocking({
            let ensemble = ensemble.clone();
            move || ensemble.kill(holder_server)
        })
    );
    assert_eq!(suspended, Ok(Validity::Suspended));
    wait_state(&holder_client, Duration::from_secs(10), |s| {
        s == SessionState::Connected
    })
    .await;
    assert_eq!(holder_client.session_id(), holder_sid, "a new session");
    wait_validity(&holder, Validity::Held).await;
    assert!(
        !holder_states.states().contains(&SessionState::Expired),
        "{:?}",
        holder_states.states()
    );
    let elsewhere = serves(&ensemble, leader, holder_sid).await
        || serves(&ensemble, waiter_server, holder_sid).await;
    assert!(elsewhere, "the holder did not move to a live server");
    // The node is still the holder's, on every server (sync: the waiter's server is current).
    within("sync", CALL, waiter_client.sync(path))
        .await
        .expect("sync");
    let stat = within("exists", CALL, waiter_client.exists(&holder_node))
        .await
        .expect("exists")
        .expect("the holder's node survived the move");
    assert_eq!(stat.ephemeral_owner, holder_sid);
    assert!(
        !waiter.is_finished(),
        "the waiter was granted while the lock was held"
    );

    let released_at = Instant::now();
    release(holder).await;
    let (granted, granted_at) = within("the waiter's grant", Duration::from_secs(10), waiter)
        .await
        .expect("waiter task");
    let granted = granted.expect("the waiter acquires");
    assert!(granted_at >= released_at);
    assert!(granted.is_valid());
    // Granted once, on the node it queued with: its watch fired once, for the release.
    assert_eq!(name(granted.node()), waiter_name, "the waiter queued again");
    let listing = children(&waiter_client, path).await;
    assert_eq!(listing, vec![waiter_name], "exactly one holder");
    assert_eq!(
        waiter_states.states(),
        vec![SessionState::Connected],
        "the waiter's session was disturbed"
    );
    release(granted).await;
    assert!(children(&waiter_client, path).await.is_empty());
}

/// Scenario 3: a proxy cuts the connection right after the lock's create request
/// (`CREATE2`: an ephemeral-sequential create) reached the server, before its reply. The
/// acquire ends with our real node (the guard's node is the one the server has) or with our
/// node removed; there are never two nodes of our session, and none is left afterwards.
/// Rounds: the lock free; the lock held by another session; held, with an acquire timeout
/// that runs out while the client is cut off (the node must then be removed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_create_reply_ends_with_our_node_or_none() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    let observer = connect(&server.connect_string()).await;
    let path = "/fault/lost-create";
    mkdirs(&observer, path).await;
    let sid = client.session_id();
    let lock = Lock::new(&client, path);
    for round in 0..6 {
        let contended = round % 3 != 0;
        let short = round % 3 == 2;
        let holder = if contended {
            Some(
                within("acquire", CALL, Lock::new(&observer, path).acquire(None))
                    .await
                    .expect("the other session holds"),
            )
        } else {
            None
        };
        // Count our session's nodes while the acquire runs.
        let stop = Arc::new(AtomicBool::new(false));
        let monitor = tokio::spawn({
            let (observer, stop) = (observer.clone(), stop.clone());
            async move {
                let mut most = 0;
                while !stop.load(Ordering::SeqCst) {
                    let ours = owners(&observer, path)
                        .await
                        .iter()
                        .filter(|(_, owner)| *owner == sid)
                        .count();
                    most = most.max(ours);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                most
            }
        });
        let accepted = proxy.accepted();
        let armed = proxy.cut_after_request(OpCode::CREATE2);
        let limit = if short {
            Duration::from_millis(500)
        } else {
            CALL
        };
        let acquire = spawn_acquire(&lock, limit);
        within(
            "the cut after the create",
            Duration::from_secs(10),
            armed.fired(),
        )
        .await;
        if short {
            // Keep the client cut off past its acquire timeout (the fault's duration).
            proxy.isolate();
            tokio::time::sleep(Duration::from_millis(1000)).await;
            proxy.restore();
        }
        if let Some(holder) = holder {
            // The acquire waits behind the holder, on its recovered node.
            if !short {
                wait_children(
                    &observer,
                    path,
                    Duration::from_secs(10),
                    "the recovered waiter",
                    |c| c.len() == 2 && proxy.accepted() > accepted,
                )
                .await;
            }
            release(holder).await;
        }
        let (result, _) = within("the acquire", Duration::from_secs(30), acquire)
            .await
            .expect("acquire task");
        stop.store(true, Ordering::SeqCst);
        let most = within("monitor", Duration::from_secs(10), monitor)
            .await
            .expect("monitor");
        let ours: Vec<String> = owners(&observer, path)
            .await
            .into_iter()
            .filter(|(_, owner)| *owner == sid)
            .map(|(child, _)| child)
            .collect();
        eprintln!(
            "round {round}: {:?}, at most {most} node(s) of ours",
            result.as_ref().map(LockGuard::node)
        );
        assert!(most <= 1, "round {round}: two nodes of ours at once");
        match result {
            Ok(guard) => {
                assert_eq!(ours, vec![name(guard.node())], "round {round}");
                assert!(guard.is_valid());
                release(guard).await;
            }
            Err(zk_recipes::Error::Timeout) if short => {
                // The timed-out acquire returns at once; its node, whose create reply was
                // lost, is found and deleted in the background: at most that one is left
                // now, and none after the wait below.
                assert!(ours.len() <= 1, "round {round}: left {ours:?}");
            }
            Err(e) => panic!("round {round}: {e}"),
        }
        assert!(armed.has_fired());
        assert!(proxy.accepted() > accepted, "round {round}: no reconnect");
        wait_children(
            &observer,
            path,
            Duration::from_secs(2),
            "no node left",
            |c| c.is_empty(),
        )
        .await;
    }
    assert_eq!(client.session_id(), sid);
    assert_eq!(client.state(), SessionState::Connected);
}

/// Scenario 4: the holder is behind a proxy frozen for 1.5 × the session timeout; a rival
/// (another session, direct) waits. The holder's guard reports `Suspended` within the read
/// timeout (2T/3) and `Lost` before the rival is granted; its late release (after the thaw)
/// fails with `Lost` and does not delete the rival's node.
///
/// Caveat (see `a_watch_event_must_not_extend_the_holders_local_expiry`): the client anchors
/// its local expiry on the last frame *received*; the server on the last request it
/// *received*. With pings only, the two differ by the ping's reply latency, and the server
/// rounds its expiry up to the next tick, so this test passes unless that rounding lands within
/// about a millisecond (a fraction of a percent of the runs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_holder_learns_it_lost_the_lock_before_the_rival_gets_it() {
    frozen_holder(false).await;
}

/// Scenario 4 while the holder's process is also writing more than the stalled peer takes:
/// 60 `setData` calls of 900 KB queued right after the freeze, so a write to the socket stays
/// pending (the proxy stops reading). The session's clock must not stop with it: the guard
/// reports `Suspended` at the read timeout and the loss before the rival is granted, exactly
/// as without the writes, and every one of those calls ends with a definite error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_holder_with_a_write_stuck_in_the_socket_still_learns_it_lost_the_lock() {
    frozen_holder(true).await;
}

/// The body of the two frozen-holder tests; `stuck_write`: queue writes the peer never takes.
async fn frozen_holder(stuck_write: bool) {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let holder_client = connect(&proxy.connect_string()).await;
    let rival_client = connect(&server.connect_string()).await;
    assert_eq!(holder_client.negotiated_timeout(), Some(SESSION));
    let path = "/fault/frozen-holder";
    let holder = acquire(&holder_client, path).await;
    let rival = spawn_acquire(&Lock::new(&rival_client, path), CALL);
    wait_children(
        &rival_client,
        path,
        Duration::from_secs(10),
        "the rival queued",
        |c| c.len() == 2,
    )
    .await;
    let holder_states = StateLog::record(&holder_client);
    // A round trip right before the freeze: the read timeout counts from now.
    within("exists", CALL, holder_client.exists("/"))
        .await
        .expect("exists");
    let frozen_for = SESSION * 3 / 2;
    let frozen_at = Instant::now();
    proxy.freeze_for(frozen_for);
    let writes: Vec<_> = if stuck_write {
        (0..60)
            .map(|_| tokio::spawn(holder_client.set_data("/fault/stuck", vec![7u8; 900_000], None)))
            .collect()
    } else {
        Vec::new()
    };

    let suspended = within("suspension", SESSION, holder.lost(None)).await;
    let suspended_after = frozen_at.elapsed();
    assert_eq!(suspended, Ok(Validity::Suspended));
    assert!(
        suspended_after <= READ_TIMEOUT + Duration::from_millis(300),
        "suspended only after {suspended_after:?}"
    );
    let (granted, granted_at) = within("the rival's grant", SESSION * 3, rival)
        .await
        .expect("rival task");
    let granted = granted.expect("the rival acquires after the holder's expiry");
    let lost_at = holder_states
        .first(SessionState::Expired)
        .unwrap_or_else(|| {
            panic!(
                "the rival was granted {:?} after the freeze, and the holder does not know it lost \
             the lock: {:?}",
                granted_at - frozen_at,
                holder_states.states()
            )
        });
    eprintln!(
        "suspended after {suspended_after:?}, lost after {:?}, rival granted after {:?}",
        lost_at - frozen_at,
        granted_at - frozen_at
    );
    assert!(
        lost_at < granted_at,
        "the holder learnt of the loss too late"
    );
    assert_eq!(holder.validity(), Validity::Lost);
    for write in writes {
        let outcome = within("a stuck write", CALL, write)
            .await
            .expect("write task");
        assert!(
            matches!(outcome, Err(Error::ConnectionLoss | Error::SessionExpired)),
            "{outcome:?}"
        );
    }

    // The late release, once the proxy has thawed (the fault's duration).
    tokio::time::sleep_until(frozen_at + frozen_for + Duration::from_millis(200)).await;
    let late = within("late release", CALL, holder.release()).await;
    assert_eq!(late, Err(zk_recipes::Error::Lost));
    within("sync", CALL, rival_client.sync(path))
        .await
        .expect("sync");
    assert_eq!(
        children(&rival_client, path).await,
        vec![name(granted.node())],
        "the late release touched the rival's node"
    );
    assert!(granted.is_valid());
    release(granted).await;
}

/// Scenario 4, with a watch event last: the holder hears from the server last through a
/// *watch event* (the server sends it without hearing from the client), right before a freeze.
/// The server expires the session T after the last request it received; the client must count
/// its local expiry from the send time of its last answered request, not from the event, so
/// that `Lost` comes before the rival is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_must_not_extend_the_holders_local_expiry() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let holder_client = connect(&proxy.connect_string()).await;
    let rival_client = connect(&server.connect_string()).await;
    let path = "/fault/poked-holder";
    let poke = "/fault/poke";
    mkdirs(&rival_client, poke).await;
    let holder = acquire(&holder_client, path).await;
    let rival = spawn_acquire(&Lock::new(&rival_client, path), CALL);
    wait_children(
        &rival_client,
        path,
        Duration::from_secs(10),
        "the rival queued",
        |c| c.len() == 2,
    )
    .await;
    let holder_states = StateLog::record(&holder_client);
    // The server hears from the holder last now (it pings only after T/3 of send silence)...
    let (_, _, watch) = within("watch", CALL, holder_client.get_data_watch(poke))
        .await
        .expect("get_data_watch");
    let last_request = Instant::now();
    // ...and talks to it last just before its next ping: a watch event (the schedule of the
    // fault, not a wait for an event).
    tokio::time::sleep(SESSION / 3 - Duration::from_millis(250)).await;
    within("set", CALL, rival_client.set_data(poke, "x", None))
        .await
        .expect("set_data");
    within("the watch event", CALL, watch.changed())
        .await
        .expect("event");
    proxy.freeze_for(SESSION * 2);

    let (granted, granted_at) = within("the rival's grant", SESSION * 3, rival)
        .await
        .expect("rival task");
    let granted = granted.expect("the rival acquires after the holder's expiry");
    let known_lost = holder.validity() == Validity::Lost;
    let lost_at = within(
        "the holder's local expiry",
        SESSION * 2,
        wait_state(&holder_client, SESSION * 2, |s| s == SessionState::Expired),
    )
    .await;
    assert_eq!(lost_at, SessionState::Expired);
    let expired_at = holder_states.first(SessionState::Expired).expect("expired");
    eprintln!(
        "rival granted {:?} after the holder's last request, holder lost after {:?}",
        granted_at - last_request,
        expired_at - last_request
    );
    assert!(
        known_lost && expired_at < granted_at,
        "the rival was granted {:?} after the holder's last request; the holder learnt it lost \
         the lock only {:?} after it",
        granted_at - last_request,
        expired_at - last_request
    );
    release(granted).await;
}

/// Scenario 5: the holder is behind a proxy frozen for 0.25 × the session timeout while it has
/// requests in flight (conditional setData on a counter and sequential creates, pipelined
/// before and during the freeze). No disconnection and no expiry, no grant to the waiter while
/// frozen (nor before the release), and every request resolves exactly once, in order, with
/// the server's state matching (counter value and version, number of created nodes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_freeze_loses_nothing_and_grants_nothing() {
    const OPS: usize = 40;
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let holder_client = connect(&proxy.connect_string()).await;
    let waiter_client = connect(&server.connect_string()).await;
    let (path, counter, seq) = (
        "/fault/short/lock",
        "/fault/short/counter",
        "/fault/short/seq",
    );
    mkdirs(&waiter_client, counter).await;
    mkdirs(&waiter_client, seq).await;
    let holder = acquire(&holder_client, path).await;
    let holder_node = holder.node().to_owned();
    let waiter = spawn_acquire(&Lock::new(&waiter_client, path), CALL);
    wait_children(
        &waiter_client,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    let sid = holder_client.session_id();
    let holder_states = StateLog::record(&holder_client);
    // A round trip right before the freeze: the read timeout counts from now.
    within("exists", CALL, holder_client.exists("/"))
        .await
        .expect("exists");
    // A quarter of the session: the holder's quorum check gives a `sync` T/2 to be answered
    // and the read timeout is 2T/3, so a freeze of T/2 (as this test had) sat on the quorum
    // check's bound, and a loaded machine's delay after the thaw tipped it over (the client
    // rightly dropped the connection). T/4 leaves T/4 for that delay.
    let frozen_for = SESSION / 4;
    let mut frozen_at = Instant::now();
    let mut sets = Vec::new();
    let mut creates = Vec::new();
    for i in 0..OPS {
        if i == OPS / 2 {
            frozen_at = Instant::now();
            proxy.freeze_for(frozen_for);
        }
        let version = i32::try_from(i).expect("small");
        sets.push(holder_client.set_data(counter, (i + 1).to_string(), Some(version)));
        creates.push(holder_client.create(
            &format!("{seq}/op-"),
            i.to_string(),
            &CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL),
        ));
    }
    let mut resolved_last = frozen_at;
    let mut sequences = Vec::new();
    for (i, (set, create)) in sets.into_iter().zip(creates).enumerate() {
        let stat = within("setData", SESSION * 2, set)
            .await
            .unwrap_or_else(|e| panic!("setData {i}: {e}"));
        assert_eq!(
            stat.version,
            i32::try_from(i + 1).expect("small"),
            "setData {i}"
        );
        let (created, _) = within("create", SESSION * 2, create)
            .await
            .unwrap_or_else(|e| panic!("create {i}: {e}"));
        sequences.push(created);
        resolved_last = Instant::now();
    }
    assert!(
        resolved_last >= frozen_at + frozen_for - Duration::from_millis(50),
        "the requests sent while frozen resolved after {:?}: the freeze did not hold them",
        resolved_last - frozen_at
    );
    // No grant while frozen (the waiter's task would have finished).
    assert!(
        !waiter.is_finished(),
        "the waiter was granted during the freeze"
    );
    assert_eq!(holder_states.states(), vec![SessionState::Connected]);
    assert_eq!(holder_client.session_id(), sid);
    assert_eq!(holder.validity(), Validity::Held);
    // The server's state matches: each request applied exactly once, in order.
    let (data, stat) = within("get_data", CALL, waiter_client.get_data(counter))
        .await
        .expect("counter");
    assert_eq!(&data[..], OPS.to_string().as_bytes());
    assert_eq!(stat.version, i32::try_from(OPS).expect("small"));
    let created = children(&waiter_client, seq).await;
    assert_eq!(
        created.len(),
        OPS,
        "lost or duplicated creates: {created:?}"
    );
    let mut in_order = sequences.clone();
    in_order.sort();
    assert_eq!(sequences, in_order, "creates applied out of order");
    let owner = within("exists", CALL, waiter_client.exists(&holder_node))
        .await
        .expect("exists")
        .expect("the holder's node survived the freeze")
        .ephemeral_owner;
    assert_eq!(owner, sid);

    let released_at = Instant::now();
    release(holder).await;
    let (granted, granted_at) = within("the waiter's grant", Duration::from_secs(10), waiter)
        .await
        .expect("waiter task");
    let granted = granted.expect("the waiter acquires");
    assert!(granted_at >= released_at);
    release(granted).await;
}

/// Scenario 6: the waiter is cut off (proxy isolated) while the holder releases, and comes back
/// (restored) within the session timeout: the deletion reaches it on reconnect and it
/// acquires, on the same session and the same node, only after the restore.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_cut_off_during_the_release_acquires_on_reconnect() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let waiter_client = connect(&proxy.connect_string()).await;
    let holder_client = connect(&server.connect_string()).await;
    let path = "/fault/cut-waiter";
    let holder = acquire(&holder_client, path).await;
    let holder_name = name(holder.node());
    let waiter = spawn_acquire(&Lock::new(&waiter_client, path), CALL);
    let listing = wait_children(
        &holder_client,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    let waiter_name = listing
        .into_iter()
        .find(|c| *c != holder_name)
        .expect("the waiter's node");
    let sid = waiter_client.session_id();
    let waiter_states = StateLog::record(&waiter_client);

    proxy.isolate();
    wait_state(&waiter_client, Duration::from_secs(5), |s| {
        s == SessionState::Disconnected
    })
    .await;
    release(holder).await;
    // Cut off for one second (the fault's duration): the waiter cannot know yet.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiter.is_finished(), "granted while cut off");
    let restored_at = Instant::now();
    proxy.restore();
    let (granted, granted_at) = within("the waiter's grant", Duration::from_secs(10), waiter)
        .await
        .expect("waiter task");
    let granted = granted.expect("the waiter acquires after reconnecting");
    assert!(granted_at >= restored_at);
    assert_eq!(
        name(granted.node()),
        waiter_name,
        "not the node it queued with"
    );
    assert_eq!(waiter_client.session_id(), sid);
    assert!(granted.is_valid());
    assert!(
        !waiter_states.states().contains(&SessionState::Expired),
        "{:?}",
        waiter_states.states()
    );
    assert_eq!(children(&holder_client, path).await, vec![waiter_name]);
    release(granted).await;
    assert!(children(&holder_client, path).await.is_empty());
}

/// One cancelled (or, by chance, successful) acquire of the cancellation storm. `how` picks
/// the way to cancel, `micros` the delay. Returns whether it was cancelled.
async fn cancelled_acquire(lock: &Lock, exclusion: &Exclusion, how: usize, micros: u64) -> bool {
    let delay = Duration::from_micros(micros);
    let outcome = match how {
        // Dropped by a timeout at a varying point.
        0 => match tokio::time::timeout(delay, lock.acquire(None)).await {
            Ok(result) => Some(result.expect("acquire")),
            Err(_) => None,
        },
        // The recipe's own timeout (the node is deleted before it returns).
        1 => match lock.acquire(Some(delay)).await {
            Ok(guard) => Some(guard),
            Err(zk_recipes::Error::Timeout) => None,
            Err(e) => panic!("acquire with a timeout: {e}"),
        },
        // A task aborted after a varying delay.
        2 => {
            let task = tokio::spawn({
                let lock = lock.clone();
                async move { lock.acquire(None).await }
            });
            tokio::time::sleep(delay).await;
            task.abort();
            match task.await {
                Ok(result) => Some(result.expect("acquire")),
                Err(e) if e.is_cancelled() => None,
                Err(e) => panic!("acquire task: {e}"),
            }
        }
        // Dropped after a given number of polls: at each await point in turn.
        _ => {
            let polls = usize::try_from(micros % 12).expect("small");
            let mut acquire = pin!(lock.acquire(None));
            let mut outcome = None;
            for _ in 0..polls {
                tokio::select! {
                    biased;
                    result = &mut acquire => {
                        outcome = Some(result.expect("acquire"));
                        break;
                    }
                    () = tokio::task::yield_now() => {}
                }
            }
            outcome
        }
    };
    match outcome {
        Some(guard) => {
            exclusion.critical_section().await;
            release(guard).await;
            false
        }
        None => true,
    }
}

/// A small deterministic pseudo-random sequence (no dependency needed).
fn next_random(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

/// Scenario 10: 1,000 acquires cancelled at varying points (timeouts of 0 to 6 ms, the
/// recipe's timeout, aborted tasks, and futures dropped after 0 to 11 polls), first while
/// three sessions cycle through the lock, then while one session holds it and another waits.
/// Mutual exclusion holds throughout, and within 2 s after each phase only the live
/// contenders' nodes remain (none after the first phase; the holder's and the waiter's after
/// the second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_cancelled_acquires_leave_only_live_nodes() {
    const CONTENDERS: usize = 3;
    const CANCELLERS: usize = 2;
    const STORM: usize = 400;
    const HELD_STORM: usize = 100;
    let _serial = serial().await;
    let server = start_server().await;
    let observer = connect(&server.connect_string()).await;
    let path = "/fault/cancel";
    mkdirs(&observer, path).await;
    let exclusion = Exclusion::default();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut cancellers = Vec::new();
    for _ in 0..CANCELLERS {
        cancellers.push(connect(&server.connect_string()).await);
    }
    let storm = |rounds: usize, seed: u64| {
        let mut tasks = Vec::new();
        for (c, client) in cancellers.iter().enumerate() {
            let lock = Lock::new(client, path);
            let (exclusion, cancelled) = (exclusion.clone(), cancelled.clone());
            let mut state = seed + c as u64;
            tasks.push(tokio::spawn(async move {
                let mut done = 0;
                let mut attempts = 0;
                while done < rounds {
                    attempts += 1;
                    assert!(attempts < rounds * 4, "too few acquires were cancelled");
                    let micros = next_random(&mut state) % 6_000;
                    let how = usize::try_from(next_random(&mut state) % 4).expect("small");
                    if cancelled_acquire(&lock, &exclusion, how, micros).await {
                        done += 1;
                        cancelled.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
        tasks
    };

    // Phase 1: the storm while three sessions take turns.
    let mut contenders = Vec::new();
    for _ in 0..CONTENDERS {
        let client = connect(&server.connect_string()).await;
        let (exclusion, stop) = (exclusion.clone(), stop.clone());
        contenders.push(tokio::spawn(async move {
            let lock = Lock::new(&client, path);
            let mut cycles = 0usize;
            while !stop.load(Ordering::SeqCst) {
                let guard = within("acquire", CALL, lock.acquire(None))
                    .await
                    .expect("acquire");
                exclusion.critical_section().await;
                release(guard).await;
                cycles += 1;
            }
            cycles
        }));
    }
    let started = Instant::now();
    for task in storm(STORM, 1) {
        within("cancellations", Duration::from_secs(60), task)
            .await
            .expect("canceller");
    }
    stop.store(true, Ordering::SeqCst);
    let mut cycles = 0;
    for task in contenders {
        cycles += within("contender", CALL, task).await.expect("contender");
    }
    eprintln!(
        "phase 1: {} cancelled, {cycles} contender cycles, {} critical sections, {:?}",
        cancelled.load(Ordering::SeqCst),
        exclusion.entries.load(Ordering::SeqCst),
        started.elapsed()
    );
    assert!(cycles > 0, "the contenders never got the lock");
    wait_children(
        &observer,
        path,
        Duration::from_secs(2),
        "no node after the storm",
        <[String]>::is_empty,
    )
    .await;

    // Phase 2: the storm while one session holds the lock and another waits.
    let holder_client = connect(&server.connect_string()).await;
    let waiter_client = connect(&server.connect_string()).await;
    let holder = acquire(&holder_client, path).await;
    let waiter = spawn_acquire(&Lock::new(&waiter_client, path), CALL);
    wait_children(
        &observer,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    for task in storm(HELD_STORM, 7) {
        within("cancellations", Duration::from_secs(60), task)
            .await
            .expect("canceller");
    }
    assert_eq!(
        cancelled.load(Ordering::SeqCst),
        CANCELLERS * (STORM + HELD_STORM)
    );
    let live = [holder_client.session_id(), waiter_client.session_id()];
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let nodes = owners(&observer, path).await;
        let owners_left: Vec<i64> = nodes.iter().map(|(_, owner)| *owner).collect();
        if nodes.len() == 2 && live.iter().all(|sid| owners_left.contains(sid)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "2 s after the storm, nodes besides the live ones: {nodes:?} (live {live:x?})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !waiter.is_finished(),
        "the waiter was granted while the lock was held"
    );
    release(holder).await;
    let (granted, _) = within("the waiter's grant", Duration::from_secs(10), waiter)
        .await
        .expect("waiter task");
    let granted = granted.expect("the waiter acquires");
    exclusion.critical_section().await;
    release(granted).await;
    assert_eq!(exclusion.violations(), 0, "two holders at once");
    wait_children(
        &observer,
        path,
        Duration::from_secs(2),
        "no node at the end",
        <[String]>::is_empty,
    )
    .await;
}

/// Starts a waiter on `lock` and waits until it is queued behind the holder.
async fn queue_waiter(
    lock: &Lock,
    observer: &Client,
    path: &str,
) -> tokio::task::JoinHandle<(zk_recipes::Result<LockGuard>, Instant)> {
    let waiter = spawn_acquire(lock, CALL);
    wait_children(
        observer,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    waiter
}

/// After the holder of `holder_node` gave up the lock: the queued `waiter` is granted, and the
/// holder's node is gone.
async fn hand_over(
    observer: &Client,
    path: &str,
    holder_node: &str,
    waiter: tokio::task::JoinHandle<(zk_recipes::Result<LockGuard>, Instant)>,
) {
    let (granted, _) = within("the waiter's grant", Duration::from_secs(10), waiter)
        .await
        .expect("waiter task");
    let granted = granted.expect("the waiter acquires");
    assert_eq!(
        within("exists", CALL, observer.exists(holder_node))
            .await
            .expect("exists"),
        None,
        "the holder's node is left"
    );
    assert_eq!(children(observer, path).await, vec![name(granted.node())]);
    release(granted).await;
}

/// Scenario 11: a guard dropped (in a task, in a task that panics, and in a plain thread
/// without a runtime that panics) deletes its node while its session lives on, and the next
/// waiter is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_guard_or_a_panicking_holder_hands_the_lock_over() {
    let _serial = serial().await;
    let server = start_server().await;
    let holder_client = connect(&server.connect_string()).await;
    let waiter_client = connect(&server.connect_string()).await;
    let path = "/fault/dropped";
    let lock = Lock::new(&holder_client, path);
    let waiter_lock = Lock::new(&waiter_client, path);
    // 1. Dropped.
    let guard = within("acquire", CALL, lock.acquire(None))
        .await
        .expect("acquire");
    let node = guard.node().to_owned();
    let waiter = queue_waiter(&waiter_lock, &waiter_client, path).await;
    drop(guard);
    hand_over(&waiter_client, path, &node, waiter).await;

    // 2. A task that panics while holding.
    let (node_tx, node_rx) = tokio::sync::oneshot::channel();
    let (go_tx, go_rx) = tokio::sync::oneshot::channel::<()>();
    let holder = tokio::spawn({
        let lock = lock.clone();
        async move {
            let guard = lock.acquire(None).await.expect("acquire");
            let _ = node_tx.send(guard.node().to_owned());
            let _ = go_rx.await;
            panic!("the holder panics while holding {}", guard.node());
        }
    });
    let node = within("the panicking holder's grant", CALL, node_rx)
        .await
        .expect("node");
    let waiter = queue_waiter(&waiter_lock, &waiter_client, path).await;
    let _ = go_tx.send(());
    let joined = within("the panicking holder", CALL, holder).await;
    assert!(
        joined.is_err_and(|e| e.is_panic()),
        "the holder did not panic"
    );
    hand_over(&waiter_client, path, &node, waiter).await;

    // 3. A plain thread (no tokio runtime) that panics while holding.
    let guard = within("acquire", CALL, lock.acquire(None))
        .await
        .expect("acquire");
    let node = guard.node().to_owned();
    let waiter = queue_waiter(&waiter_lock, &waiter_client, path).await;
    let thread = std::thread::spawn(move || {
        let _guard = guard;
        panic!("the thread panics while holding the lock");
    });
    let joined = blocking(move || thread.join()).await;
    assert!(joined.is_err(), "the thread did not panic");
    hand_over(&waiter_client, path, &node, waiter).await;

    assert_eq!(holder_client.state(), SessionState::Connected);
    assert!(children(&waiter_client, path).await.is_empty());
}

/// Scenario 12: a waiter behind a proxy that is isolated past its session timeout. The server
/// really expires the session (its ephemeral node vanishes); the acquire fails with
/// `SessionExpired`, there is no late success once the proxy lets traffic through again, and
/// no node of the waiter is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_session_expires_fails_and_leaves_nothing() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let waiter_client = connect(&proxy.connect_string()).await;
    let holder_client = connect(&server.connect_string()).await;
    let path = "/fault/expired-waiter";
    let holder = acquire(&holder_client, path).await;
    let holder_name = name(holder.node());
    let waiter = spawn_acquire(&Lock::new(&waiter_client, path), SESSION * 10);
    let listing = wait_children(
        &holder_client,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    let waiter_name = listing
        .into_iter()
        .find(|c| *c != holder_name)
        .expect("the waiter's node");

    let isolated_at = Instant::now();
    proxy.isolate();
    // The server expires the session: its ephemeral node goes.
    wait_children(
        &holder_client,
        path,
        SESSION * 3,
        "the server expires the waiter",
        |c| !c.contains(&waiter_name),
    )
    .await;
    let expired_after = isolated_at.elapsed();
    let (result, _) = within("the waiter's acquire", SESSION * 2, waiter)
        .await
        .expect("waiter task");
    assert!(
        matches!(result, Err(zk_recipes::Error::Zk(Error::SessionExpired))),
        "{result:?}"
    );
    assert_eq!(waiter_client.state(), SessionState::Expired);
    // Traffic passes again: nothing comes back to life (an observation window of 2 s, longer
    // than the client's largest reconnect backoff).
    proxy.restore();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(waiter_client.state(), SessionState::Expired);
    assert_eq!(
        within("exists", CALL, waiter_client.exists("/")).await,
        Err(Error::SessionExpired)
    );
    assert_eq!(children(&holder_client, path).await, vec![holder_name]);
    eprintln!("the server expired the waiter {expired_after:?} after the cut");
    assert!(expired_after >= SESSION - Duration::from_millis(100));
    release(holder).await;
    assert!(children(&holder_client, path).await.is_empty());
}

/// Scenario 12, the client's side: once its session has expired (locally, while the server
/// is unreachable), a client opens no more connections, not even the reconnection attempt
/// that was waiting out its backoff when the session expired (the driver used to keep
/// polling that pending attempt and dial once more after the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_client_dials_no_more() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    proxy.isolate();
    // Refused attempts back off (100 ms doubling to 1 s, plus up to 50 % jitter) until the
    // local expiry, one session timeout after the cut.
    wait_state(&client, SESSION * 2, |s| s == SessionState::Expired).await;
    let accepted = proxy.accepted();
    // Longer than the largest backoff (1.5 s): the fault's observation window.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        proxy.accepted(),
        accepted,
        "the expired client opened a connection"
    );
}
