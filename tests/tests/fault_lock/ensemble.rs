//! The lock on a 3-server ensemble: cycles that survive a killed leader, and a holder whose
//! server dies keeps the lock while the waiter waits.

use super::*;

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
    let (waiter, listing) =
        queue_waiter(&Lock::new(&waiter_client, path), &waiter_client, path, CALL).await;
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
            holder.wait_lost(None)
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

    let granted = release_and_hand_over(holder, waiter).await;
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
