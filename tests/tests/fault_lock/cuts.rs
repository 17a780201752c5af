//! Cut connections: a create whose reply is lost, and a waiter cut off during the release.

use zk_testkit::client::poll_children;

use super::*;

/// Scenario 3: a proxy cuts the connection right after the lock's create request
/// (`CREATE2`: an ephemeral-sequential create) reached the server, before its reply. The
/// acquire ends with our real node (the guard's node is the one the server has) or with our
/// node removed; there are never two nodes of our session, and none is left afterwards.
/// Rounds: the lock free; the lock held by another session; held, with an acquire timeout
/// that runs out while the client is cut off (the node must then be removed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_create_reply_ends_with_our_node_or_none() {
    let _serial = serial().await;
    let (_server, proxy, client, observer) = proxied_and_direct().await;
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

/// Scenario 6: the waiter is cut off (proxy isolated) while the holder releases, and comes back
/// (restored) within the session timeout: the deletion reaches it on reconnect and it
/// acquires, on the same session and the same node, only after the restore.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_cut_off_during_the_release_acquires_on_reconnect() {
    let _serial = serial().await;
    let (_server, proxy, waiter_client, holder_client) = proxied_and_direct().await;
    let path = "/fault/cut-waiter";
    let holder = acquire(&holder_client, path).await;
    let holder_name = name(holder.node());
    let (waiter, listing) =
        queue_waiter(&Lock::new(&waiter_client, path), &holder_client, path, CALL).await;
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

/// A cut at several moments of an acquire, the lock free (the create's reply may be lost):
/// the acquire succeeds after the reconnection with exactly one node, the guard's, and no
/// orphan is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_create_reply_leaves_no_orphan() {
    let _serial = serial().await;
    let (_server, proxy, client, observer) = proxied_and_direct().await;
    let path = "/lost-reply/lock";
    // Make sure the parent exists, so the first request of an acquire is the create.
    drop(
        Lock::new(&observer, path)
            .acquire(None)
            .await
            .expect("warm up"),
    );
    assert!(
        poll_children(&observer, path, Duration::from_secs(5), |c| c.is_empty())
            .await
            .is_empty()
    );
    let lock = Lock::new(&client, path);
    for delay_us in [0u64, 200, 500, 1_000, 2_000, 5_000] {
        let task = tokio::spawn({
            let lock = lock.clone();
            async move { lock.acquire(None).await }
        });
        // The schedule of the fault: the cut comes `delay_us` into the acquire, and lasts
        // 200 ms.
        tokio::time::sleep(Duration::from_micros(delay_us)).await;
        proxy.isolate();
        tokio::time::sleep(Duration::from_millis(200)).await;
        proxy.restore();
        let guard = tokio::time::timeout(Duration::from_secs(15), task)
            .await
            .expect("acquire after reconnect")
            .expect("task")
            .expect("acquire");
        let children = observer.get_children(path).await.expect("list");
        assert_eq!(
            children.len(),
            1,
            "orphan after a cut at {delay_us} us: {children:?}"
        );
        assert!(guard.node().ends_with(&children[0]));
        guard.release().await.expect("release");
        assert!(
            poll_children(&observer, path, Duration::from_secs(5), |c| c.is_empty())
                .await
                .is_empty()
        );
    }
    assert_eq!(client.state(), SessionState::Connected);
}
