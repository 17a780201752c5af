//! The leader selector against a real ZooKeeper 3.8 server: candidates lead one at a time and
//! queue again after each tenure, the participants name the leader first with their ids,
//! closing a leader or deleting its node drops its future, and a selector without requeue
//! leads once. (Curator interop: `selector_interop.rs`; faults: `tests/tests/fault_recipes/`.)

mod selector_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use zk_proto::Client;
use zk_recipes::election::{LeaderSelector, selector_participants};
use zk_testkit::client::{connect, eventually, mkdirs, start_server, within};

const LIMIT: Duration = Duration::from_secs(20);

/// A selector whose tenures are logged (`selector_support::tenure`) and counted.
fn logging_selector(
    client: &Client,
    path: &str,
    log: &str,
    id: &str,
    hold: Duration,
) -> (LeaderSelector, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let (writer, log, owned_id, counted) =
        (client.clone(), log.to_owned(), id.to_owned(), count.clone());
    let selector = LeaderSelector::builder(client, path, move |_tenure| {
        let (writer, log, id, counted) = (
            writer.clone(),
            log.clone(),
            owned_id.clone(),
            counted.clone(),
        );
        async move {
            selector_support::tenure(&writer, &log, &id, hold).await;
            counted.fetch_add(1, Ordering::SeqCst);
        }
    })
    .id(id.to_owned())
    .start();
    (selector, count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_lead_one_at_a_time_and_queue_again() {
    let server = start_server().await;
    let admin = connect(&server.connect_string()).await;
    mkdirs(&admin, "/sel/log").await;
    let mut selectors = Vec::new();
    for id in ["a", "b", "c"] {
        let client = connect(&server.connect_string()).await;
        selectors.push(logging_selector(
            &client,
            "/sel/election",
            "/sel/log",
            id,
            Duration::from_millis(10),
        ));
    }
    // Each candidate leads 5 times: each queued again after each of its tenures.
    eventually("every candidate led 5 times", LIMIT, || async {
        selectors.iter().all(|(_, n)| n.load(Ordering::SeqCst) >= 5)
    })
    .await;
    for (selector, _) in selectors {
        within("close", LIMIT, selector.close())
            .await
            .expect("close");
    }
    let entries = selector_support::entries(&admin, "/sel/log").await;
    let (bad, tenures) = selector_support::overlaps(&entries, &[]);
    assert!(bad.is_empty(), "overlapping tenures: {bad:?}");
    for id in ["a", "b", "c"] {
        assert!(tenures.iter().filter(|t| *t == id).count() >= 5, "{id}");
    }
    // Requeued at the back: no candidate leads twice in a row while the others wait.
    let repeats = tenures.windows(2).filter(|w| w[0] == w[1]).count();
    assert_eq!(repeats, 0, "tenures {tenures:?}");
    // Closed: every node is gone.
    assert!(
        admin
            .get_children("/sel/election")
            .await
            .expect("list")
            .is_empty()
    );
}

/// A selector that leads until `release` is notified.
fn holding_selector(client: &Client, path: &str, id: &str, release: Arc<Notify>) -> LeaderSelector {
    LeaderSelector::builder(client, path, move |_tenure| {
        let release = release.clone();
        async move { release.notified().await }
    })
    .id(id.to_owned())
    .start()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn participants_name_the_leader_first_and_a_requeued_leader_goes_last() {
    let server = start_server().await;
    let admin = connect(&server.connect_string()).await;
    let release = Arc::new(Notify::new());
    let a = holding_selector(&admin, "/sel2", "a", release.clone());
    within("a leads", LIMIT, a.wait_leader(None))
        .await
        .expect("a leads");
    let b = holding_selector(&admin, "/sel2", "b", release.clone());
    let c_client = connect(&server.connect_string()).await;
    eventually("b queued", LIMIT, || async {
        a.participants().await.expect("participants").len() == 2
    })
    .await;
    let c = holding_selector(&c_client, "/sel2", "c", release.clone());
    eventually("c queued", LIMIT, || async {
        a.participants().await.expect("participants").len() == 3
    })
    .await;
    let ids = |participants: &[zk_recipes::election::Participant]| {
        participants
            .iter()
            .map(|p| (String::from_utf8_lossy(&p.id).into_owned(), p.is_leader))
            .collect::<Vec<_>>()
    };
    let seen = ids(&selector_participants(&admin, "/sel2").await.expect("list"));
    assert_eq!(
        seen,
        [("a".into(), true), ("b".into(), false), ("c".into(), false)]
    );
    let leader = c.leader().await.expect("leader").expect("one leads");
    assert_eq!(&leader.id[..], b"a");
    assert!(a.is_leader() && !b.is_leader() && !c.is_leader());
    // a's tenure ends: b leads, a queues again behind c.
    release.notify_one();
    within("b leads", LIMIT, b.wait_leader(None))
        .await
        .expect("b leads");
    eventually("a queued again", LIMIT, || async {
        b.participants().await.expect("participants").len() == 3
    })
    .await;
    let seen = ids(&b.participants().await.expect("list"));
    assert_eq!(
        seen,
        [("b".into(), true), ("c".into(), false), ("a".into(), false)]
    );
    assert!(!a.is_leader());
    for selector in [a, b, c] {
        within("close", LIMIT, selector.close())
            .await
            .expect("close");
    }
}

/// Sets its flag when dropped: tells that a tenure's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A selector whose tenure never returns by itself, and whose future sets `dropped` when it
/// is dropped.
fn endless_selector(
    client: &Client,
    path: &str,
    id: &str,
    dropped: Arc<AtomicBool>,
) -> LeaderSelector {
    LeaderSelector::builder(client, path, move |_tenure| {
        let flag = DropFlag(dropped.clone());
        async move {
            let _flag = flag;
            std::future::pending::<()>().await;
        }
    })
    .id(id.to_owned())
    .start()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_a_leader_drops_its_future_before_the_next_leads() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let (a_dropped, b_dropped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let a = endless_selector(&client, "/sel3", "a", a_dropped.clone());
    within("a leads", LIMIT, a.wait_leader(None))
        .await
        .expect("a leads");
    let b = endless_selector(&client, "/sel3", "b", b_dropped.clone());
    let b_leads = b.leadership();
    eventually("b queued", LIMIT, || async {
        a.participants().await.expect("participants").len() == 2
    })
    .await;
    assert!(!a_dropped.load(Ordering::SeqCst));
    within("close a", LIMIT, a.close()).await.expect("close a");
    // a's future was dropped when close returned; b leads after that.
    assert!(a_dropped.load(Ordering::SeqCst));
    within("b leads", LIMIT, b_leads.wait_leader(None))
        .await
        .expect("b leads");
    assert!(!b_dropped.load(Ordering::SeqCst));
    within("close b", LIMIT, b.close()).await.expect("close b");
    assert!(b_dropped.load(Ordering::SeqCst));
    assert!(b_leads.ended().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_node_ends_the_tenure_and_the_candidate_queues_again() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let admin = connect(&server.connect_string()).await;
    let (a_dropped, b_dropped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let a = endless_selector(&client, "/sel4", "a", a_dropped.clone());
    within("a leads", LIMIT, a.wait_leader(None))
        .await
        .expect("a leads");
    let b = endless_selector(&client, "/sel4", "b", b_dropped.clone());
    eventually("b queued", LIMIT, || async {
        a.participants().await.expect("participants").len() == 2
    })
    .await;
    let leader = a.leader().await.expect("leader").expect("a leads");
    admin
        .delete(&format!("/sel4/{}", leader.node), None)
        .await
        .expect("delete a's node");
    within("b leads", LIMIT, b.wait_leader(None))
        .await
        .expect("b leads");
    eventually("a's future dropped", LIMIT, || async {
        a_dropped.load(Ordering::SeqCst)
    })
    .await;
    // a queued again, behind b.
    eventually("a queued again", LIMIT, || async {
        let p = b.participants().await.expect("participants");
        p.len() == 2 && &p[1].id[..] == b"a"
    })
    .await;
    assert!(a.ended().is_none() && !a.is_leader());
    for selector in [a, b] {
        within("close", LIMIT, selector.close())
            .await
            .expect("close");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_requeue_it_leads_once_then_ends_closed() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let tenures = Arc::new(AtomicU64::new(0));
    let counted = tenures.clone();
    let selector = LeaderSelector::builder(&client, "/sel5", move |tenure| {
        assert_eq!(tenure.number(), 0);
        assert!(tenure.node().starts_with("/sel5/_c_"));
        counted.fetch_add(1, Ordering::SeqCst);
        async {}
    })
    .auto_requeue(false)
    .start();
    let ended = within("ended", LIMIT, selector.wait_ended()).await;
    assert_eq!(ended, zk_recipes::Error::Zk(zk_proto::Error::Closed));
    assert_eq!(tenures.load(Ordering::SeqCst), 1);
    assert!(!selector.is_leader());
    eventually("its node is deleted", LIMIT, || async {
        client
            .get_children("/sel5")
            .await
            .is_ok_and(|c| c.is_empty())
    })
    .await;
    assert_eq!(selector.close().await, Ok(()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tenure_ends_as_a_return_and_the_candidate_queues_again() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let tenures = Arc::new(AtomicU64::new(0));
    let counted = tenures.clone();
    let selector = LeaderSelector::builder(&client, "/sel6", move |tenure| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            assert!(tenure.number() > 0, "the first tenure panics");
            std::future::pending::<()>().await;
        }
    })
    .start();
    // The second tenure runs: the first one's panic ended it, and the candidate queued again.
    eventually("a second tenure", LIMIT, || async {
        tenures.load(Ordering::SeqCst) == 2 && selector.is_leader()
    })
    .await;
    assert!(selector.ended().is_none());
    within("close", LIMIT, selector.close())
        .await
        .expect("close");
}
