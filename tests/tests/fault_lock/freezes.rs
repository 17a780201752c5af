//! Frozen connections: a frozen holder learns it lost the lock before the rival gets it (also
//! with a write stuck in the socket, and after a last watch event); a short freeze loses and
//! grants nothing.

use super::*;

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
    let (_server, proxy, holder_client, rival_client) = proxied_and_direct().await;
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

    let suspended = within("suspension", SESSION, holder.wait_lost(None)).await;
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
    let (_server, proxy, holder_client, rival_client) = proxied_and_direct().await;
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
    let (_server, proxy, holder_client, waiter_client) = proxied_and_direct().await;
    let (path, counter, seq) = (
        "/fault/short/lock",
        "/fault/short/counter",
        "/fault/short/seq",
    );
    mkdirs(&waiter_client, counter).await;
    mkdirs(&waiter_client, seq).await;
    let holder = acquire(&holder_client, path).await;
    let holder_node = holder.node().to_owned();
    let (waiter, _) =
        queue_waiter(&Lock::new(&waiter_client, path), &waiter_client, path, CALL).await;
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

    let granted = release_and_hand_over(holder, waiter).await;
    release(granted).await;
}
