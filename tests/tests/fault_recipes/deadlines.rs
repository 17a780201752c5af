//! Deadlines while no server answers: timed recipe calls return at their deadline.

use super::*;

/// Scenario: a session (8 s, behind a proxy) is cut off from its server: the proxy drops its
/// connection and refuses new ones, so every request waits for a reconnection that does not
/// come. Meanwhile the barrier, double barrier (enter and leave), start gate and queue (take
/// and bounded put) calls are made with a 1 s timeout, all at once.
///
/// Pass criteria: each returns `Err(Timeout)` after 1 s and within 1 s + 1.5 s, not when the
/// session or a request times out. Once the proxy lets the session back in (same session), the
/// double barrier and start gate nodes whose creates were queued while cut off are deleted
/// again (their deletes were queued after the creates), and the bounded put added nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_recipe_calls_return_at_their_deadline_while_no_server_answers() {
    use zk_recipes::barrier::{Barrier, StartGate};
    use zk_recipes::queue::BoundedQueue;

    let _serial = serial().await;
    // Tick 500 ms: sessions up to 10 s, so the cut-off one outlives the calls.
    let server = server(Duration::from_millis(500)).await;
    let direct = connect_with(
        builder().session_timeout(RECIPE_SESSION),
        &server.connect_string(),
    )
    .await;
    let cut = proxied(&server, Duration::from_secs(8)).await;
    let client = cut.client.clone();

    let barrier = Barrier::new(&client, "/deadline/barrier");
    assert_eq!(barrier.set().await, Ok(true));
    let entering = DoubleBarrier::new(&client, "/deadline/dbarrier", 2);
    let leaving = DoubleBarrier::new(&client, "/deadline/dbarrier-leave", 2);
    let gate = StartGate::new(&client, "/deadline/gate", 2);
    let queue = Queue::new(&client, "/deadline/queue");
    let bounded_queue = BoundedQueue::new(&client, "/deadline/bounded", 1);
    bounded_queue
        .put(&b"first"[..], Some(WITHIN))
        .await
        .expect("put");
    // The parents exist, so what is queued while cut off is each call's own work.
    for path in ["/deadline/dbarrier", "/deadline/gate", "/deadline/queue"] {
        direct
            .create(path, "", &zk_proto::CreateOptions::persistent())
            .await
            .expect("create parent");
    }

    cut.proxy.isolate();
    wait_for_state(&client, SessionState::Disconnected, WITHIN).await;

    let calls = [
        (
            "barrier wait",
            timed({
                let b = barrier.clone();
                async move { format!("{:?}", b.wait(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "double barrier enter",
            timed({
                let b = entering.clone();
                async move { format!("{:?}", b.enter(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "double barrier leave",
            timed({
                let b = leaving.clone();
                async move { format!("{:?}", b.leave(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "start gate join",
            timed({
                let g = gate.clone();
                async move { format!("{:?}", g.join(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "queue take",
            timed({
                let q = queue.clone();
                async move { format!("{:?}", q.take(Some(SHORT)).await.map(|i| i.name)) }
            }),
            "Err(Timeout)",
        ),
        (
            "bounded queue put",
            timed({
                let q = bounded_queue.clone();
                async move { format!("{:?}", q.put(&b"second"[..], Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
    ];
    for (name, call, expected) in calls {
        let (outcome, took) = within(name, SHORT + WITHIN, call).await.expect(name);
        assert_eq!(outcome, expected, "{name}");
        assert_within(took, SHORT, MARGIN, name);
    }
    assert_eq!(client.state(), SessionState::Disconnected, "still cut off");

    // Back in: what was queued runs in order, the withdrawing deletes after the creates.
    cut.proxy.restore();
    wait_for_state(&client, SessionState::Connected, WITHIN).await;
    wait_exists(&direct, &entering.node_path(), false, WITHIN).await;
    wait_exists(&direct, &gate.node_path(), false, WITHIN).await;
    // A request of the cut-off session made now is answered after everything queued before.
    client.sync("/deadline").await.expect("sync");
    assert_eq!(
        direct
            .get_children("/deadline/dbarrier")
            .await
            .expect("children"),
        Vec::<String>::new()
    );
    assert_eq!(
        direct
            .get_children("/deadline/gate")
            .await
            .expect("children"),
        Vec::<String>::new()
    );
    assert_eq!(
        direct
            .get_children("/deadline/bounded")
            .await
            .expect("children")
            .len(),
        1,
        "the timed-out put added nothing"
    );
    client.close().await.expect("close");
    direct.close().await.expect("close");
}

/// Spawns `call` and measures it from now: the task's result and how long it took.
fn timed(call: impl Future<Output = String> + Send + 'static) -> JoinHandle<(String, Duration)> {
    let started = Instant::now();
    tokio::spawn(async move {
        let outcome = call.await;
        (outcome, started.elapsed())
    })
}
