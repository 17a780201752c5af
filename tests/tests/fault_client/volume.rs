//! Volume through faults: 10,000 requests in flight through a cut, a child list over the
//! frame limit, and 10,000 watches whose re-registration exceeds 1 MiB across a restart.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_requests_in_flight_through_a_cut_each_resolve_exactly_once() {
    const REQUESTS: usize = 10_000;
    let _serial = serial().await;
    let server = server().await;
    let Proxied { proxy, client } = connect_proxied(
        server.addr(),
        Client::builder()
            .session_timeout(Duration::from_secs(10))
            .max_in_flight(REQUESTS),
    )
    .await;
    let session = client.session_id();
    client
        .create("/inflight", "v", &CreateOptions::persistent())
        .await
        .expect("create");

    let (resolved_tx, mut resolved) = tokio::sync::watch::channel(0usize);
    let resolved_tx = Arc::new(resolved_tx);
    let mut tasks = JoinSet::new();
    for i in 0..REQUESTS {
        // Queued (in call order) when called, all on the wire at once (max_in_flight).
        let request = client.get_data("/inflight");
        let resolved_tx = resolved_tx.clone();
        tasks.spawn(async move {
            let result = request.await;
            resolved_tx.send_modify(|n| *n += 1);
            (i, result)
        });
    }
    // Cut while most are in flight: after the first hundred replies.
    within("the first replies", GUARD, resolved.wait_for(|n| *n >= 100))
        .await
        .expect("counter alive");
    proxy.cut();

    let mut seen = vec![0u8; REQUESTS];
    let (mut replied, mut lost) = (0usize, 0usize);
    within("every request resolves", GUARD, async {
        while let Some(joined) = tasks.join_next().await {
            let (i, result) = joined.expect("no panic");
            seen[i] += 1;
            match result {
                Ok((data, _)) => {
                    assert_eq!(&data[..], b"v");
                    replied += 1;
                }
                Err(Error::ConnectionLoss) => lost += 1,
                Err(other) => panic!("request {i}: unexpected {other:?}"),
            }
        }
    })
    .await;
    eprintln!("{replied} replied, {lost} lost with the connection");
    assert!(seen.iter().all(|&n| n == 1), "each resolved exactly once");
    assert_eq!(replied + lost, REQUESTS);
    assert!(replied >= 100, "{replied}");
    assert!(
        lost >= 1,
        "the cut came after every reply: nothing was in flight"
    );
    assert_eq!(*resolved.borrow(), REQUESTS, "no request resolved twice");

    // The session survives the cut.
    wait_for_state(&client, SessionState::Connected, GUARD).await;
    client.get_data("/inflight").await.expect("after the cut");
    assert_eq!(client.session_id(), session);
    assert_eq!(proxy.accepted(), 2, "one reconnect");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_list_over_the_frame_limit_is_a_typed_error_without_a_reconnect_loop() {
    const MAX_FRAME: usize = 64 * 1024;
    const CHILDREN: usize = 400;
    let _serial = serial().await;
    let server = server().await;
    let admin = within("connect", GUARD, Client::connect(&server.connect_string()))
        .await
        .expect("connect");
    admin
        .create("/big", "", &CreateOptions::persistent())
        .await
        .expect("create /big");
    let creates = (0..CHILDREN)
        .map(|i| {
            MultiOperation::create(
                format!("/big/{i:05}-{}", "c".repeat(200)),
                Bytes::new(),
                &CreateOptions::new(zk_proto::CreateMode::PERSISTENT),
            )
        })
        .collect();
    let created = admin.multi(creates).await.expect("multi create");
    assert!(created.iter().all(|item| item.error().is_none()));

    let Proxied { proxy, client } = connect_proxied(
        server.addr(),
        Client::builder()
            .session_timeout(Duration::from_secs(10))
            .max_frame_len(MAX_FRAME),
    )
    .await;
    let session = client.session_id();

    for attempt in 1..=2u64 {
        let result = within("getChildren", GUARD, client.get_children("/big")).await;
        match result {
            Err(Error::ReplyTooLarge { len, max }) => {
                assert_eq!(max, MAX_FRAME);
                assert!(len > MAX_FRAME && len < 2 * MAX_FRAME, "{len}");
            }
            other => panic!("attempt {attempt}: expected ReplyTooLarge, got {other:?}"),
        }
        assert!(!Error::ReplyTooLarge { len: 0, max: 0 }.is_retryable());
        // The connection was dropped (its reply was never read) and the session resumed on
        // exactly one new connection per oversized reply.
        wait_for_state(&client, SessionState::Connected, GUARD).await;
        let (data, _) = within("getData", GUARD, client.get_data("/big"))
            .await
            .expect("the session stays usable");
        assert!(data.is_empty());
        assert_eq!(client.session_id(), session, "the same session");
        assert_eq!(
            proxy.accepted(),
            1 + attempt,
            "one reconnect per oversized reply"
        );
    }
    // Small replies keep working on the session, with no further connection.
    let mut states = client.state_watcher();
    states.borrow_and_update();
    for _ in 0..20 {
        client.exists("/big").await.expect("exists");
    }
    let stat = client
        .exists("/big")
        .await
        .expect("exists")
        .expect("present");
    assert_eq!(usize::try_from(stat.num_children).ok(), Some(CHILDREN));
    assert!(
        !states.has_changed().expect("client alive"),
        "no state change"
    );
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(proxy.accepted(), 3, "no reconnect loop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watches_over_one_mib_survive_a_server_restart_and_fire_once() {
    const SESSION_TIMEOUT: Duration = Duration::from_secs(20);
    const WATCHES: usize = 10_000;
    const BATCH: usize = 500;
    let _serial = serial().await;
    let server = server().await;
    let Proxied { proxy, client } = connect_proxied(
        server.addr(),
        Client::builder().session_timeout(SESSION_TIMEOUT),
    )
    .await;
    let session = client.session_id();
    client
        .create("/w", "", &CreateOptions::persistent())
        .await
        .expect("create /w");
    let paths: Vec<String> = (0..WATCHES)
        .map(|i| format!("/w/{i:05}-{}", "p".repeat(140)))
        .collect();
    let set_watches_bytes: usize = paths.iter().map(|p| 4 + p.len()).sum();
    assert!(set_watches_bytes > 1 << 20, "{set_watches_bytes} bytes");

    // Create in pipelined multis, then arm a data watch on each node, pipelined.
    let creates: Vec<_> = paths
        .chunks(BATCH)
        .map(|chunk| {
            client.multi(
                chunk
                    .iter()
                    .map(|path| {
                        MultiOperation::create(
                            path.clone(),
                            Bytes::from_static(b"0"),
                            &CreateOptions::new(zk_proto::CreateMode::PERSISTENT),
                        )
                    })
                    .collect(),
            )
        })
        .collect();
    for created in creates {
        let items = within("multi create", GUARD, created).await.expect("multi");
        assert!(items.iter().all(|item| item.error().is_none()));
    }
    let armed: Vec<_> = paths.iter().map(|p| client.get_data_watch(p)).collect();
    let mut watchers = Vec::with_capacity(WATCHES);
    for armed in armed {
        let (_, _, watcher) = within("getData+watch", GUARD, armed).await.expect("armed");
        watchers.push(watcher);
    }

    // Restart the server (same port, same data): the session is resumed on it.
    let before = proxy.accepted();
    let mut states = client.state_watcher();
    let restarted_at = Instant::now();
    let restart = tokio::task::spawn_blocking({
        let server = server.clone();
        move || server.restart()
    });
    within(
        "the disconnect",
        GUARD,
        states.wait_for(|s| *s == SessionState::Disconnected),
    )
    .await
    .expect("client alive");
    within("the restart", GUARD * 2, restart)
        .await
        .expect("restart task")
        .expect("restart");
    within(
        "the reconnect",
        GUARD,
        states.wait_for(|s| *s == SessionState::Connected),
    )
    .await
    .expect("client alive");
    let reconnected_after = restarted_at.elapsed();
    assert_eq!(client.session_id(), session, "the session was resumed");
    // A round trip after the SetWatches batches (sent before any request): all processed.
    client.exists("/w").await.expect("exists");
    let wchs = tokio::task::spawn_blocking({
        let server = server.clone();
        move || server.four_letter("wchs")
    })
    .await
    .expect("wchs task")
    .expect("wchs");
    assert!(
        wchs.contains(&format!("Total watches:{WATCHES}")),
        "every watch re-registered once on the restarted server: {wchs}"
    );
    let attempts = proxy.accepted() - before;
    let bound = max_attempts(reconnected_after, SESSION_TIMEOUT) + 1;
    eprintln!("{attempts} connection attempts over {reconnected_after:?} (bound {bound})");
    assert!(
        (1..=bound).contains(&attempts),
        "{attempts} attempts in {reconnected_after:?}, at most {bound} with the backoff"
    );

    // Change every node: each watch fires, once, for its own node.
    let sets: Vec<_> = paths
        .chunks(BATCH)
        .map(|chunk| {
            client.multi(
                chunk
                    .iter()
                    .map(|path| {
                        MultiOperation::set_data(path.clone(), Bytes::from_static(b"1"), None)
                    })
                    .collect(),
            )
        })
        .collect();
    for set in sets {
        let items = within("multi setData", GUARD, set).await.expect("multi");
        assert!(items.iter().all(|item| item.error().is_none()));
    }
    for (path, watcher) in paths.iter().zip(watchers) {
        let event = within("a watch", GUARD, watcher.changed())
            .await
            .expect("fired, not lost");
        assert_eq!(event.event_type, zk_proto::EventType::NODE_DATA_CHANGED);
        assert_eq!(&event.path, path);
    }
    // Fired watches are gone from the server too: none fires twice.
    let wchs = tokio::task::spawn_blocking({
        let server = server.clone();
        move || server.four_letter("wchs")
    })
    .await
    .expect("wchs task")
    .expect("wchs");
    assert!(wchs.contains("Total watches:0"), "{wchs}");
    assert_eq!(proxy.accepted(), before + attempts, "no reconnect since");
    assert_eq!(client.state(), SessionState::Connected);
}
