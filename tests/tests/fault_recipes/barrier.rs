//! The double barrier under faults: a member crashes before leaving or while entering, and
//! the others honour their deadline.

use super::*;

/// Participants of the double barrier (one of them crashes).
const BARRIER_COUNT: u32 = 4;
/// The crashed member's session: it stays alive on the server this long after the crash.
const CRASHED_SESSION: Duration = Duration::from_secs(4);

/// Runs `leave(timeout)` on every barrier at once; returns each result and its duration.
async fn leave_all(
    barriers: &[DoubleBarrier],
    timeout: Duration,
) -> Vec<(zk_recipes::Result<()>, Duration)> {
    let tasks: Vec<_> = barriers
        .iter()
        .cloned()
        .map(|b| {
            tokio::spawn(async move {
                let started = Instant::now();
                let result = b.leave(Some(timeout)).await;
                (result, started.elapsed())
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(
            within("leave returns", timeout + WITHIN, task)
                .await
                .expect("leave did not panic"),
        );
    }
    results
}

/// Scenario: four members enter a double barrier (count 4); member X, behind a proxy with a
/// 4 s session, then crashes (proxy isolated, client dropped without closing), so its
/// ephemeral node stays until the server expires its session.
///
/// Pass criteria: the three live members' `leave(1 s)` returns `Err(Timeout)` (timed out, the
/// documented result) after 1 s and within 1 s + 1.5 s, while X's node still exists; their
/// next `leave(20 s)` returns `Ok(())` (all left, X's departure being its expiry) without
/// waiting for the deadline, and X's node and the `ready` node are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_member_crashes_before_leaving_others_honour_deadline() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let path = "/fault/dbarrier";
    let direct = connect_with(
        builder().session_timeout(RECIPE_SESSION),
        &server.connect_string(),
    )
    .await;
    let x = proxied(&server, CRASHED_SESSION).await;
    let crashed = DoubleBarrier::new(&x.client, path, BARRIER_COUNT);
    let mut live_clients = Vec::new();
    for _ in 1..BARRIER_COUNT {
        live_clients.push(
            connect_with(
                builder().session_timeout(RECIPE_SESSION),
                &server.connect_string(),
            )
            .await,
        );
    }
    let live: Vec<DoubleBarrier> = live_clients
        .iter()
        .map(|c| DoubleBarrier::new(c, path, BARRIER_COUNT))
        .collect();

    // Everyone enters.
    let entering: Vec<_> = live
        .iter()
        .chain(std::iter::once(&crashed))
        .cloned()
        .map(|b| tokio::spawn(async move { b.enter(Some(WITHIN)).await }))
        .collect();
    for entered in entering {
        let entered = within("enter", WITHIN + MARGIN, entered)
            .await
            .expect("enter did not panic");
        assert_eq!(entered, Ok(()), "every member is in");
    }

    // X crashes: cut off, forgotten; its session lives on the server for 4 s.
    let crashed_node = crashed.node_path();
    x.proxy.isolate();
    drop(crashed);
    drop(x);

    // The others' leave honours its short deadline while X's node is still there.
    for (result, took) in leave_all(&live, SHORT).await {
        assert_eq!(
            result,
            Err(RecipeError::Timeout),
            "leave timed out: not everyone left"
        );
        assert_within(took, SHORT, MARGIN, "leave with a 1 s deadline");
    }
    assert!(
        direct
            .exists(&crashed_node)
            .await
            .expect("exists")
            .is_some(),
        "X's session is still alive: the timeouts were the deadline, not its departure"
    );

    // Leaving again completes once the server expired X's session.
    let again = Instant::now();
    for (result, took) in leave_all(&live, WITHIN).await {
        assert_eq!(result, Ok(()), "all left once X's session expired");
        assert!(took < WITHIN, "returned on X's expiry, not at the deadline");
    }
    eprintln!(
        "double barrier: all left {:?} after the second leave began",
        again.elapsed()
    );
    assert!(
        direct
            .exists(&crashed_node)
            .await
            .expect("exists")
            .is_none()
    );
    assert!(
        direct
            .exists(&format!("{path}/ready"))
            .await
            .expect("exists")
            .is_none(),
        "the last to leave removed `ready`"
    );
    for client in live_clients {
        client.close().await.expect("close");
    }
    direct.close().await.expect("close");
}

/// Scenario: member X (behind a proxy, 1 s session) enters a double barrier for 3 and waits;
/// then it crashes (proxy isolated). Once the server has expired X's session (its node is
/// gone), two live members enter with a 1 s deadline.
///
/// Pass criteria: X's own `enter` fails with `SessionExpired` (the documented result when the
/// session ends while waiting) instead of hanging; the live members' `enter(1 s)` returns
/// `Err(Timeout)` after 1 s and within 1 s + 1.5 s (X no longer counts, so only 2 of 3 are in),
/// and their nodes are deleted again: the barrier node has no children and no `ready`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_member_crashes_while_entering_others_honour_deadline() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let path = "/fault/dbarrier-enter";
    let count = 3;
    let direct = connect_with(
        builder().session_timeout(RECIPE_SESSION),
        &server.connect_string(),
    )
    .await;
    let x = proxied(&server, Duration::from_secs(1)).await;
    let crashed = DoubleBarrier::new(&x.client, path, count);
    let crashed_node = crashed.node_path();
    let waiting = tokio::spawn(async move { crashed.enter(None).await });
    wait_exists(&direct, &crashed_node, true, WITHIN).await;
    // The node exists, so enter has queued its three requests; a call made now is answered
    // after them. Once it is, X waits on its watch with nothing in flight (a reply still in
    // flight at the cut would fail enter with ConnectionLoss instead).
    x.client.exists("/").await.expect("exists");

    x.proxy.isolate();
    let entered = within("X's enter ends with its session", WITHIN, waiting)
        .await
        .expect("enter did not panic");
    assert_eq!(entered, Err(RecipeError::Zk(Error::SessionExpired)));
    wait_exists(&direct, &crashed_node, false, WITHIN).await;
    drop(x);

    let mut live_clients = Vec::new();
    for _ in 0..count - 1 {
        live_clients.push(
            connect_with(
                builder().session_timeout(RECIPE_SESSION),
                &server.connect_string(),
            )
            .await,
        );
    }
    let live: Vec<DoubleBarrier> = live_clients
        .iter()
        .map(|c| DoubleBarrier::new(c, path, count))
        .collect();
    let entering: Vec<_> = live
        .iter()
        .cloned()
        .map(|b| {
            tokio::spawn(async move {
                let started = Instant::now();
                (b.enter(Some(SHORT)).await, started.elapsed())
            })
        })
        .collect();
    for task in entering {
        let (result, took) = within("enter returns", SHORT + WITHIN, task)
            .await
            .expect("enter did not panic");
        assert_eq!(
            result,
            Err(RecipeError::Timeout),
            "only 2 of 3 are in: timed out"
        );
        assert_within(took, SHORT, MARGIN, "enter with a 1 s deadline");
    }
    // A timed-out enter queues the delete of its node and returns.
    for b in &live {
        wait_exists(&direct, &b.node_path(), false, WITHIN).await;
    }
    let children = direct.get_children(path).await.expect("children");
    assert!(
        children.is_empty(),
        "timed-out members removed their nodes, no ready: {children:?}"
    );
    for client in live_clients {
        client.close().await.expect("close");
    }
    direct.close().await.expect("close");
}
