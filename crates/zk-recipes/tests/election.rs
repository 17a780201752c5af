//! Election recipes against a real server: the next candidate leading on the leader's
//! deletion alone and a candidate two behind listing again before its turn (requests counted
//! by a proxy), bounded waits for leadership, one-shot elections among 10 sessions and
//! run-once, leadership events and participants (a lost connection seen through the latch's
//! events), and Curator's `LeaderLatch` in the same election. Leadership lost on a cut and
//! handed over after the expiry: the workspace's `tests/tests/fault_recipes/leadership.rs`.

#[path = "curator_support/mod.rs"]
mod curator;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use curator::CuratorPeer;
use futures_util::StreamExt;
use zk_proto::jute::OpCode;
use zk_proto::{Client, ClientBuilder, SessionState};
use zk_recipes::Error;
use zk_recipes::election::{
    LeaderLatch, LeadershipEvent, MasterElection, OneShotOutcome, RunOnceOutcome, current_leader,
    current_master, elect_once, participants, resign, run_once, run_while_leading, wait_until_gone,
};
use zk_testkit::client::{
    builder, children, connect_proxied, connect_with, eventually, proxied_sessions, start_server,
    within,
};
use zk_testkit::fault::FaultProxy;

const N: usize = 10;
const WITHIN: Duration = Duration::from_secs(10);
/// Loss must be reported well before the server could expire the session (2 s).
const LOSS_WITHIN: Duration = Duration::from_millis(1500);

/// The session timeout the tests ask for (the server's minimum is two ticks, 1 s).
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// The kit's client builder with [`SESSION_TIMEOUT`].
fn session() -> ClientBuilder {
    builder().session_timeout(SESSION_TIMEOUT)
}

/// The candidate next in line leads on the leader's deletion alone: it listed the election
/// when it joined and lists it no more before it leads (a failover is the deletion's commit
/// and its notification, no round trip more). The one after it stays behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_candidate_leads_on_the_leaders_deletion_alone() {
    let server = start_server().await;
    let path = "/app/election/next";
    let first_client = connect_with(session(), &server.connect_string()).await;
    let third_client = connect_with(session(), &server.connect_string()).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    // The proxy counts the next candidate's requests: no configuration read among them.
    let next_client = connect_with(session().follow_ensemble(false), &proxy.connect_string()).await;
    let first = LeaderLatch::builder(&first_client, path, "first").start();
    within("the first leads", WITHIN, first.wait_leader(None))
        .await
        .expect("leads");
    let next = LeaderLatch::builder(&next_client, path, "next").start();
    // It listed once, and watches its own node and the leader's.
    proxy.wait_forwarded(OpCode::EXISTS, 2).await;
    next_client
        .sync("/")
        .await
        .expect("a round trip behind its watches");
    let listed = proxy.forwarded(OpCode::GET_CHILDREN);
    assert_eq!(listed, 1);
    let third = LeaderLatch::builder(&third_client, path, "third").start();
    eventually("three candidates", WITHIN, || async {
        children(&first_client, path).await.len() == 3
    })
    .await;

    first.close().await.expect("the first leaves");
    within("the next leads", WITHIN, next.wait_leader(None))
        .await
        .expect("leads");
    assert_eq!(
        proxy.forwarded(OpCode::GET_CHILDREN),
        listed,
        "it listed again"
    );
    let (_, id) = current_leader(&third_client, path)
        .await
        .expect("read")
        .expect("a leader");
    assert_eq!(&id[..], b"next");
    assert!(!third.is_leader());

    // Its leadership ends as usual, and the third leads the same way.
    next.close().await.expect("the next leaves");
    within("the third leads", WITHIN, third.wait_leader(None))
        .await
        .expect("leads");
    third.close().await.expect("the third leaves");
}

/// A candidate further back watches its predecessor and the node before it: when the leader
/// goes, the candidate two behind it lists again while its predecessor takes over, so that
/// when its own turn comes it leads on its predecessor's deletion alone too, as a candidate
/// that joined right behind the leader does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_two_behind_lists_again_before_its_turn_and_then_leads_alone() {
    let server = start_server().await;
    let path = "/app/election/two-behind";
    let first_client = connect_with(session(), &server.connect_string()).await;
    let second_client = connect_with(session(), &server.connect_string()).await;
    let fourth_client = connect_with(session(), &server.connect_string()).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    // The proxy counts the third candidate's requests: no configuration read among them.
    let third_client =
        connect_with(session().follow_ensemble(false), &proxy.connect_string()).await;
    let first = LeaderLatch::builder(&first_client, path, "first").start();
    within("the first leads", WITHIN, first.wait_leader(None))
        .await
        .expect("leads");
    let second = LeaderLatch::builder(&second_client, path, "second").start();
    eventually("two candidates", WITHIN, || async {
        children(&first_client, path).await.len() == 2
    })
    .await;
    let third = LeaderLatch::builder(&third_client, path, "third").start();
    // It listed once, and watches its own node, the second's and the first's.
    proxy.wait_forwarded(OpCode::EXISTS, 3).await;
    third_client
        .sync("/")
        .await
        .expect("a round trip behind its watches");
    assert_eq!(proxy.forwarded(OpCode::GET_CHILDREN), 1);
    let fourth = LeaderLatch::builder(&fourth_client, path, "fourth").start();
    eventually("four candidates", WITHIN, || async {
        children(&first_client, path).await.len() == 4
    })
    .await;

    first.close().await.expect("the first leaves");
    within("the second leads", WITHIN, second.wait_leader(None))
        .await
        .expect("leads");
    // Told of the first's deletion, the third listed again: next in line, it watches its own
    // node and the second's.
    proxy.wait_forwarded(OpCode::GET_CHILDREN, 2).await;
    proxy.wait_forwarded(OpCode::EXISTS, 5).await;
    third_client
        .sync("/")
        .await
        .expect("a round trip behind its watches");
    let listed = proxy.forwarded(OpCode::GET_CHILDREN);
    assert_eq!(listed, 2);
    assert!(!third.is_leader());

    second.close().await.expect("the second leaves");
    within("the third leads", WITHIN, third.wait_leader(None))
        .await
        .expect("leads");
    assert_eq!(
        proxy.forwarded(OpCode::GET_CHILDREN),
        listed,
        "it listed again"
    );
    assert!(!fourth.is_leader());
    third.close().await.expect("the third leaves");
    within("the fourth leads", WITHIN, fourth.wait_leader(None))
        .await
        .expect("leads");
    fourth.close().await.expect("the fourth leaves");
}

/// A bounded wait for the leadership while another candidate leads ends with
/// [`Error::Timeout`] and leaves the candidate in the race: its node stays, and it leads once
/// the leader closes. Also for the master election, for a leader's bounded `wait_lost`, and
/// for a `run_while_leading` whose wait times out (its task does not run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_wait_for_leadership_leaves_the_candidate_in_the_race() {
    const SHORT: Duration = Duration::from_millis(300);
    let server = start_server().await;
    let first = connect_with(session(), &server.connect_string()).await;
    let second = connect_with(session(), &server.connect_string()).await;

    // Leader latch: the second candidate times out behind the first.
    let path = "/app/timeout/latch";
    let leader = LeaderLatch::builder(&first, path, "leader").start();
    leader
        .wait_leader(Some(WITHIN))
        .await
        .expect("the first candidate leads");
    let waiter = LeaderLatch::builder(&second, path, "waiter").start();
    eventually("the waiter's node", WITHIN, || async {
        children(&second, path).await.len() == 2
    })
    .await;
    let started = Instant::now();
    assert_eq!(waiter.wait_leader(Some(SHORT)).await, Err(Error::Timeout));
    assert!(started.elapsed() >= SHORT, "{:?}", started.elapsed());
    let ran = AtomicBool::new(false);
    let outcome = run_while_leading(
        &waiter.leadership(),
        async { ran.store(true, Ordering::SeqCst) },
        Some(SHORT),
    )
    .await;
    assert_eq!(outcome, Err(Error::Timeout));
    assert!(!ran.load(Ordering::SeqCst), "the task ran without leading");
    // The leader's bounded wait for a loss times out too, and it still leads.
    assert_eq!(
        leader.leadership().wait_lost(Some(SHORT)).await,
        Err(Error::Timeout)
    );
    assert!(leader.is_leader() && !waiter.is_leader());
    // Still in the race: its node is in place, and it leads when the leader leaves.
    let own = format!("_c_{}-latch-", waiter.attempt_id());
    let nodes = children(&second, path).await;
    assert!(nodes.iter().any(|n| n.starts_with(&own)), "{nodes:?}");
    leader.close().await.expect("close");
    waiter
        .wait_leader(Some(WITHIN))
        .await
        .expect("the waiter leads after the leader closed");
    let (_, id) = current_leader(&second, path).await.unwrap().unwrap();
    assert_eq!(&id[..], b"waiter");
    waiter.close().await.expect("close");

    // Master election: the same.
    let path = "/app/timeout/master";
    let start = |client: &Client, id: &'static str| {
        MasterElection::builder(client, path, id)
            .head_start(Duration::ZERO)
            .start()
    };
    let master = start(&first, "master");
    master
        .wait_leader(Some(WITHIN))
        .await
        .expect("the first candidate is master");
    let waiter = start(&second, "waiter");
    assert_eq!(waiter.wait_leader(Some(SHORT)).await, Err(Error::Timeout));
    assert!(master.is_leader() && !waiter.is_leader());
    master.close().await.expect("close");
    waiter
        .wait_leader(Some(WITHIN))
        .await
        .expect("the waiter is master after the master closed");
    let id = current_master(&second, path).await.unwrap().unwrap();
    assert_eq!(&id[..], b"waiter");
    waiter.close().await.expect("close");
    first.close().await.expect("close");
    second.close().await.expect("close");
}

/// Runs a one-shot election among `clients`; returns the winner's index and node, after
/// checking that every other candidate lost to it and removed its node.
async fn one_shot_round(
    observer: &Client,
    clients: &[(usize, Client)],
    path: &str,
) -> (usize, String) {
    let rounds: Vec<_> = clients
        .iter()
        .map(|(i, client)| {
            let (i, client, path) = (*i, client.clone(), path.to_owned());
            tokio::spawn(async move { (i, elect_once(&client, &path, format!("o{i}")).await) })
        })
        .collect();
    let mut winners = Vec::new();
    let mut leaders = Vec::new();
    for round in rounds {
        match round.await.expect("candidate task") {
            (i, Ok(OneShotOutcome::Won { node })) => winners.push((i, node)),
            (_, Ok(OneShotOutcome::Lost { leader, leader_id })) => {
                leaders.push((leader, leader_id));
            }
            (i, outcome) => panic!("candidate {i}: {outcome:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one winner: {winners:?}");
    let (winner, node) = winners.pop().expect("one winner");
    // Every loser names the winner's node and its id (the winner holds its node here).
    let winner_id = format!("o{winner}");
    assert!(
        leaders
            .iter()
            .all(|(leader, id)| { *leader == node && id.as_deref() == Some(winner_id.as_bytes()) }),
        "{leaders:?} {node} {winner_id}"
    );
    let left = children(observer, path).await;
    assert_eq!(left.len(), 1, "the losers removed their nodes: {left:?}");
    (winner, node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_elects_one_and_run_once_runs_once() {
    let server = start_server().await;
    let observer = connect_with(session(), &server.connect_string()).await;
    let all = proxied_sessions(server.addr(), session(), N).await;
    let path = "/app/once";
    let mut alive: Vec<(usize, Client)> = all
        .iter()
        .enumerate()
        .map(|(i, c)| (i, c.client.clone()))
        .collect();

    // Round 1; the winner's session is closed, the others wait for it and run again.
    let (winner, node) = one_shot_round(&observer, &alive, path).await;
    alive.retain(|(i, _)| *i != winner);
    let waits: Vec<_> = alive
        .iter()
        .map(|(_, client)| {
            let (client, node) = (client.clone(), node.clone());
            tokio::spawn(async move { wait_until_gone(&client, &node, None).await })
        })
        .collect();
    all[winner].client.close().await.unwrap();
    for wait in waits {
        wait.await.unwrap().unwrap();
    }
    let (winner, node) = one_shot_round(&observer, &alive, path).await;

    // Round 3, after the winner's session expired.
    alive.retain(|(i, _)| *i != winner);
    all[winner].proxy.isolate();
    wait_until_gone(&observer, &node, None).await.unwrap();
    let (winner, node) = one_shot_round(&observer, &alive, path).await;

    // Round 4: the winner resigns while its session lives on; the next round elects again.
    let resigner = alive
        .iter()
        .find(|(i, _)| *i == winner)
        .map(|(_, client)| client.clone())
        .expect("the winner is a live candidate");
    resign(&resigner, &node).await.expect("resign");
    assert!(
        children(&observer, path).await.is_empty(),
        "the win is over"
    );
    assert_eq!(resigner.state(), SessionState::Connected);
    one_shot_round(&observer, &alive, path).await;

    // Run once under a lock: one candidate runs, the others find it recorded.
    let runs = Arc::new(AtomicUsize::new(0));
    let attempts: Vec<_> = alive
        .iter()
        .map(|(i, client)| {
            let (i, client, runs) = (*i, client.clone(), runs.clone());
            tokio::spawn(async move {
                let task = async move { runs.fetch_add(1, Ordering::SeqCst) };
                (
                    i,
                    run_once(&client, "/app/run-once", format!("r{i}"), task, None).await,
                )
            })
        })
        .collect();
    let mut ran = Vec::new();
    let mut recorded = Vec::new();
    for attempt in attempts {
        match attempt.await.unwrap() {
            (i, Ok(RunOnceOutcome::Ran(_))) => ran.push(i),
            (_, Ok(RunOnceOutcome::AlreadyRecorded { id })) => recorded.push(id),
            (i, outcome) => panic!("candidate {i}: {outcome:?}"),
        }
    }
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let id = format!("r{}", ran[0]);
    assert!(recorded.iter().all(|r| r[..] == *id.as_bytes()));
}

/// Creates the marker a leader holds while it leads; `NodeExists` means another leader (of
/// either library) is in.
async fn enter_as_leader(client: &Client, marker: &str) {
    let created = client
        .create(marker, "", &zk_proto::CreateOptions::ephemeral())
        .await;
    assert!(created.is_ok(), "another leader is in: {created:?}");
}

/// Whether the peer's latch in `slot` leads.
async fn java_has(java: &mut CuratorPeer, slot: &str) -> bool {
    java.call(&format!("{slot} has")).await == "leader"
}

/// The id (node data) of the current leader of the latch election at `path`.
async fn leader_id(client: &Client, path: &str) -> String {
    let (_, data) = current_leader(client, path)
        .await
        .expect("current leader")
        .expect("a leader");
    String::from_utf8(data.to_vec()).expect("utf-8 id")
}

/// The ids and leader flags of a participant list.
fn ids(participants: &[zk_recipes::election::Participant]) -> Vec<(&str, bool)> {
    participants
        .iter()
        .map(|p| (std::str::from_utf8(&p.id).expect("utf-8 id"), p.is_leader))
        .collect()
}

/// The participants of a latch election in order with their ids, and each candidate's
/// leadership as a stream of events: acquired when it comes first, lost on a connection loss
/// and acquired again when the session comes back, lost for good when it closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_participants_and_leadership_events() {
    let server = start_server().await;
    let observer = connect_with(session(), &server.connect_string()).await;
    let path = "/latch-events/election";
    let first_client = connect_with(session(), &server.connect_string()).await;
    let second = connect_proxied(server.addr(), session()).await;
    assert!(
        participants(&observer, path)
            .await
            .expect("none")
            .is_empty()
    );

    let first = LeaderLatch::builder(&first_client, path, "first").start();
    let mut first_events = first.events();
    let event = within("first leads", WITHIN, first_events.next()).await;
    assert_eq!(event, Some(LeadershipEvent::Acquired));
    let latch = LeaderLatch::builder(&second.client, path, "second").start();
    let mut second_events = latch.events();
    eventually("two candidates", WITHIN, || async {
        children(&observer, path).await.len() == 2
    })
    .await;
    let line = [("first", true), ("second", false)];
    assert_eq!(ids(&latch.participants().await.expect("list")), line);
    let nodes = participants(&observer, path).await.expect("list");
    assert_eq!(nodes[0].node, children_sorted(&observer, path).await[0]);

    // The leader closes: its stream says lost and ends; the next candidate's says acquired.
    first.close().await.expect("close");
    assert_eq!(first_events.next().await, Some(LeadershipEvent::Lost));
    assert_eq!(first_events.next().await, None);
    let event = within("second leads", WITHIN, second_events.next()).await;
    assert_eq!(event, Some(LeadershipEvent::Acquired));
    assert_eq!(
        ids(&latch.participants().await.expect("list")),
        [("second", true)]
    );

    // A connection loss is a loss; the session's return (node intact) is a new acquisition.
    // A stream made while leading starts with `Acquired`.
    let mut late = latch.events();
    assert_eq!(late.next().await, Some(LeadershipEvent::Acquired));
    second.proxy.isolate();
    let event = within("loss on disconnection", LOSS_WITHIN, second_events.next()).await;
    assert_eq!(event, Some(LeadershipEvent::Lost));
    second.proxy.restore();
    let event = within("leads again", WITHIN, second_events.next()).await;
    assert_eq!(event, Some(LeadershipEvent::Acquired));
    assert_eq!(
        within("late stream", WITHIN, late.next()).await,
        Some(LeadershipEvent::Lost)
    );
    assert_eq!(
        within("late stream", WITHIN, late.next()).await,
        Some(LeadershipEvent::Acquired)
    );
    latch.close().await.expect("close");
    assert_eq!(second_events.next().await, Some(LeadershipEvent::Lost));
    assert_eq!(second_events.next().await, None);
    assert!(
        participants(&observer, path)
            .await
            .expect("none")
            .is_empty()
    );
}

/// The instant `latch` starts leading, taken by a task that waits for it from now on.
fn leads_at(latch: &LeaderLatch) -> tokio::task::JoinHandle<Instant> {
    let leadership = latch.leadership();
    tokio::spawn(async move {
        leadership
            .wait_leader(None)
            .await
            .expect("the candidate leads");
        Instant::now()
    })
}

/// The children of `path` in Curator's latch order.
async fn children_sorted(client: &Client, path: &str) -> Vec<String> {
    let mut children = children(client, path).await;
    zk_recipes::sequential::sort_like_curator(&mut children, &[zk_recipes::election::LATCH_NAME]);
    children
}

/// Curator's `LeaderLatch` and ours in one election: one leader at a time across both
/// libraries, in the order the candidates joined, and leadership passes from one library to
/// the other when the leader closes, both ways. Every leader creates a marker node when it
/// starts leading and deletes it before it closes, so a second leader of either library would
/// meet the marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_latches_share_one_election() {
    let server = start_server().await;
    let mut java = CuratorPeer::start(&server.connect_string()).await;
    let client = connect_with(session(), &server.connect_string()).await;
    let observer = connect_with(session(), &server.connect_string()).await;
    let (path, marker) = ("/interop-latch/election", "/interop-latch-leader");

    // 1. A Curator candidate leads; a Rust one and a second Curator one queue behind it.
    java.call(&format!("j1 latch {path} java-1 {marker}")).await;
    assert_eq!(java.call("j1 await 10000").await, "leader");
    let rust = LeaderLatch::builder(&client, path, "rust-1").start();
    eventually("the Rust candidate's node", WITHIN, || async {
        children(&observer, path).await.len() == 2
    })
    .await;
    java.call(&format!("j2 latch {path} java-2 {marker}")).await;
    eventually("the second Curator candidate's node", WITHIN, || async {
        children(&observer, path).await.len() == 3
    })
    .await;
    // When the Rust candidate starts leading, taken as it happens: it must come after the
    // Curator leader is told to close, never beside it.
    let rust_leads_at = leads_at(&rust);
    assert!(java_has(&mut java, "j1").await);
    assert!(!java_has(&mut java, "j2").await);
    assert!(!java_has(&mut java, "j2").await);
    assert_eq!(leader_id(&observer, path).await, "java-1");
    // Both libraries' candidates, in line, with their ids.
    let line = [("java-1", true), ("rust-1", false), ("java-2", false)];
    assert_eq!(
        ids(&participants(&observer, path).await.expect("list")),
        line
    );
    assert_eq!(ids(&rust.participants().await.expect("list")), line);

    // 2. The Curator leader closes: the Rust candidate, next in line, leads (not the second
    // Curator candidate).
    let closing = Instant::now();
    java.call("j1 close").await;
    rust.wait_leader(Some(WITHIN))
        .await
        .expect("the Rust candidate leads after Curator's leader closed");
    assert!(
        rust_leads_at.await.expect("the Rust candidate's start") >= closing,
        "the Rust candidate led beside Curator's"
    );
    enter_as_leader(&client, marker).await;
    assert_eq!(java.call("j2 await 300").await, "not-leader");
    assert_eq!(leader_id(&observer, path).await, "rust-1");

    // 3. The Rust leader closes: the Curator candidate leads.
    client.delete(marker, None).await.expect("leave the marker");
    rust.close().await.expect("close");
    assert_eq!(java.call("j2 await 10000").await, "leader");
    eventually("Curator's leader marker", WITHIN, || async {
        observer.exists(marker).await.ok().flatten().is_some()
    })
    .await;
    assert_eq!(leader_id(&observer, path).await, "java-2");

    // 4. And back to a new Rust candidate when that one closes.
    let rust = LeaderLatch::builder(&client, path, "rust-2").start();
    let rust_leads_at = leads_at(&rust);
    eventually("the new Rust candidate's node", WITHIN, || async {
        children(&observer, path).await.len() == 2
    })
    .await;
    let closing = Instant::now();
    java.call("j2 close").await;
    rust.wait_leader(Some(WITHIN))
        .await
        .expect("the Rust candidate leads after Curator's leader closed");
    assert!(
        rust_leads_at.await.expect("the Rust candidate's start") >= closing,
        "the Rust candidate led beside Curator's"
    );
    enter_as_leader(&client, marker).await;
    assert_eq!(leader_id(&observer, path).await, "rust-2");

    // No Curator leader met another leader's marker.
    assert_eq!(java.call("- violations").await, "violations=0");
    rust.close().await.expect("close");
    java.quit().await;
}
