//! Leadership under faults, ten candidates each behind its own proxy: a latch leader cut off
//! reports the loss at once (before the server could expire its session) and a new leader
//! follows only after the expiry; a blip gives the same leader back; the master election's
//! previous master, cut off until it expired, comes back with a new session and takes the
//! node again thanks to its head start. Hand-overs on close and on giving up on the way.

use zk_recipes::election::{
    MasterElection, RunOutcome, current_leader, current_master, run_while_leading,
};
use zk_testkit::client::{children, eventually, proxied_sessions, start_server};

use super::*;

const N: usize = 10;
const WITHIN: Duration = Duration::from_secs(10);
/// Loss must be reported well before the server could expire the session (2 s).
const LOSS_WITHIN: Duration = Duration::from_millis(1500);

/// The session timeout the tests ask for (the server's minimum is two ticks, 1 s).
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// The kit's client builder with [`SESSION_TIMEOUT`].
fn session() -> zk_proto::ClientBuilder {
    builder().session_timeout(SESSION_TIMEOUT)
}

fn leaders(latches: &[LeaderLatch]) -> Vec<usize> {
    (0..latches.len())
        .filter(|&i| latches[i].is_leader())
        .collect()
}

fn masters(elections: &[Option<MasterElection>]) -> Vec<usize> {
    (0..elections.len())
        .filter(|&i| elections[i].as_ref().is_some_and(MasterElection::is_leader))
        .collect()
}

/// Cuts `candidate` off and checks that its loss is reported while the session may still be
/// alive on the server (client `Disconnected`), with no one else leading meanwhile.
async fn cut_and_expect_prompt_loss(
    candidate: &Proxied,
    is_leader: impl Fn() -> bool,
    others_leading: impl Fn() -> usize,
) {
    candidate.proxy.isolate();
    eventually("loss reported on connection loss", LOSS_WITHIN, || async {
        !is_leader()
    })
    .await;
    assert_eq!(
        candidate.client.state(),
        SessionState::Disconnected,
        "the loss was reported at disconnection, before expiry"
    );
    assert_eq!(others_leading(), 0, "no one else leads before the expiry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_elects_one_leader_and_hands_over_on_close_and_expiry() {
    let _serial = serial().await;
    let server = start_server().await;
    let observer = connect_with(session(), &server.connect_string()).await;
    // Each candidate behind its own proxy, so that each alone can be cut off.
    let all = proxied_sessions(server.addr(), session(), N).await;
    let path = "/app/election/latch";
    let latches: Vec<LeaderLatch> = all
        .iter()
        .enumerate()
        .map(|(i, c)| LeaderLatch::builder(&c.client, path, format!("c{i}")).start())
        .collect();

    // Ten candidates, one leader.
    eventually("ten candidate nodes", WITHIN, || async {
        children(&observer, path).await.len() == N
    })
    .await;
    eventually("one leader", WITHIN, || async {
        leaders(&latches).len() == 1
    })
    .await;
    let first = leaders(&latches)[0];
    let (node, id) = current_leader(&observer, path).await.unwrap().unwrap();
    assert_eq!(&id[..], format!("c{first}").as_bytes());
    assert!(node.starts_with(&format!("_c_{}-latch-", latches[first].attempt_id())));
    latches[first].wait_leader(None).await.unwrap();

    // A follower's node deleted by someone else: it takes a new place.
    let follower = (first + 1) % N;
    let attempt = latches[follower].attempt_id().to_owned();
    let own = |children: &[String]| {
        children
            .iter()
            .find(|c| c.starts_with(&format!("_c_{attempt}-")))
            .cloned()
    };
    let before = own(&children(&observer, path).await).unwrap();
    observer
        .delete(&format!("{path}/{before}"), None)
        .await
        .unwrap();
    eventually("the follower's node is back", WITHIN, || async {
        let now = children(&observer, path).await;
        now.len() == N && own(&now).is_some_and(|node| node != before)
    })
    .await;
    assert_eq!(leaders(&latches), [first]);

    // A blip: the loss is reported at once; the session survives, so its node is still the
    // lowest and the same candidate leads again.
    cut_and_expect_prompt_loss(
        &all[first],
        || latches[first].is_leader(),
        || leaders(&latches).len(),
    )
    .await;
    all[first].proxy.restore();
    eventually("the same leader after the blip", WITHIN, || async {
        leaders(&latches) == [first]
    })
    .await;

    // The leader's session is closed: exactly one other leader follows.
    all[first].client.close().await.unwrap();
    eventually("a new leader after close", WITHIN, || async {
        let now = leaders(&latches);
        now.len() == 1 && now[0] != first
    })
    .await;
    assert_eq!(
        latches[first].wait_leader(None).await,
        Err(RecipeError::Zk(Error::Closed))
    );
    let second = leaders(&latches)[0];

    // The leader is cut off: it reports the loss at once, its task is cancelled, and a new
    // leader follows only after the session expired.
    let (started, running) = tokio::sync::oneshot::channel();
    let task = tokio::spawn({
        let leadership = latches[second].leadership();
        let work = async move {
            let _ = started.send(());
            std::future::pending::<()>().await;
        };
        async move { run_while_leading(&leadership, work, None).await }
    });
    running.await.unwrap();
    cut_and_expect_prompt_loss(
        &all[second],
        || latches[second].is_leader(),
        || leaders(&latches).len(),
    )
    .await;
    let outcome = tokio::time::timeout(LOSS_WITHIN, task)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.unwrap(), RunOutcome::LeadershipLost);
    eventually("a new leader after expiry", WITHIN, || async {
        let now = leaders(&latches);
        now.len() == 1 && now[0] != second
    })
    .await;
    let third = leaders(&latches)[0];
    wait_for_state(&all[second].client, SessionState::Expired, WITHIN).await;
    assert_eq!(
        latches[second].wait_leader(None).await,
        Err(RecipeError::Zk(Error::SessionExpired))
    );

    // Work runs while leading.
    let done = run_while_leading(&latches[third].leadership(), async { 42 }, None).await;
    assert_eq!(done.unwrap(), RunOutcome::Completed(42));

    // Giving up: the node goes, exactly one other leader follows.
    let mut latches: Vec<Option<LeaderLatch>> = latches.into_iter().map(Some).collect();
    latches[third].take().unwrap().close().await.unwrap();
    let rest: Vec<LeaderLatch> = latches.into_iter().flatten().collect();
    eventually("a new leader after giving up", WITHIN, || async {
        leaders(&rest).len() == 1
    })
    .await;
    assert_eq!(children(&observer, path).await.len(), N - 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn master_node_elects_one_and_gives_the_previous_master_a_head_start() {
    const HEAD_START: Duration = Duration::from_secs(2);
    let _serial = serial().await;
    let server = start_server().await;
    let observer = connect_with(session(), &server.connect_string()).await;
    // Each candidate behind its own proxy, so that each alone can be cut off.
    let all = proxied_sessions(server.addr(), session(), N).await;
    let path = "/app/master";
    let start = |client: &Client, i: usize| {
        MasterElection::builder(client, path, format!("m{i}"))
            .head_start(HEAD_START)
            .start()
    };
    let mut elections: Vec<Option<MasterElection>> = all
        .iter()
        .enumerate()
        .map(|(i, c)| Some(start(&c.client, i)))
        .collect();

    eventually("one master", WITHIN, || async {
        masters(&elections).len() == 1
    })
    .await;
    let first = masters(&elections)[0];
    let id = current_master(&observer, path).await.unwrap().unwrap();
    assert_eq!(&id[..], format!("m{first}").as_bytes());

    // Closed: exactly one other master follows (after the head start).
    all[first].client.close().await.unwrap();
    eventually("a new master after close", WITHIN, || async {
        let now = masters(&elections);
        now.len() == 1 && now[0] != first
    })
    .await;
    let second = masters(&elections)[0];

    // Cut off: the loss is reported at once; once the session expired, the same candidate
    // comes back with a new session and takes the node again thanks to its head start.
    cut_and_expect_prompt_loss(
        &all[second],
        || elections[second].as_ref().unwrap().is_leader(),
        || masters(&elections).len(),
    )
    .await;
    wait_for_state(&all[second].client, SessionState::Expired, WITHIN).await;
    all[second].proxy.restore();
    let comeback = connect_with(session(), &all[second].proxy.connect_string()).await;
    elections[second] = Some(start(&comeback, second));
    eventually("the previous master is master again", WITHIN, || async {
        masters(&elections) == [second]
    })
    .await;
    eventually("the node is the new session's", WITHIN, || async {
        observer
            .exists(path)
            .await
            .ok()
            .flatten()
            .is_some_and(|stat| stat.ephemeral_owner == comeback.session_id())
    })
    .await;

    // Giving up: exactly one other master follows.
    elections[second].take().unwrap().close().await.unwrap();
    eventually("a new master after giving up", WITHIN, || async {
        masters(&elections).len() == 1
    })
    .await;
    let third = masters(&elections)[0];
    assert_ne!(third, second);
}
