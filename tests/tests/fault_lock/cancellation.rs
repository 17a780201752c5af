//! Cancellation: a storm of cancelled acquires leaves only live nodes; a dropped guard or a
//! panicking holder hands the lock over.

use super::*;

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
    let (waiter, _) = queue_waiter(&Lock::new(&waiter_client, path), &observer, path, CALL).await;
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
    let (waiter, _) = queue_waiter(&waiter_lock, &waiter_client, path, CALL).await;
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
    let (waiter, _) = queue_waiter(&waiter_lock, &waiter_client, path, CALL).await;
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
    let (waiter, _) = queue_waiter(&waiter_lock, &waiter_client, path, CALL).await;
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
