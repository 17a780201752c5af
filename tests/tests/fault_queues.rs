//! Curator's queues (`zk_recipes::curator_queue`) under faults, against a real server and
//! Apache Curator 5.4 processes (`crates/zk-recipes/tests/curator/CuratorQueue.java`):
//!
//! - kill -9 of a lock-safe consumer in the middle of an item, Curator's and ours (this test
//!   binary run as a child), for each queue kind (`DistributedQueue`, `DistributedIdQueue`,
//!   `DistributedPriorityQueue`, `DistributedDelayQueue`): of 10,000 items none is lost or
//!   taken twice, the held item goes to another consumer once the killed one's session
//!   expired;
//! - a cut connection: a consumer cut off while it waits takes the item put meanwhile; a
//!   lock-safe consumer whose completion or lock create lost its reply loses and duplicates
//!   nothing; a default-mode consumer whose claiming delete lost its
//!   reply loses that item (at most once, as documented);
//! - session expiry: a lock-safe holder whose session expired cannot complete, and the item
//!   goes to another consumer; a consumer waiting for an item fails with `SessionExpired`.
//!
//! Every session that is to fail sits behind its own [`zk_testkit::fault::FaultProxy`]. No sleep
//! stands in for an event: every wait is on a line, a take, a state or a listing, bounded.

#[path = "../../crates/zk-recipes/tests/curator_support/queue.rs"]
mod curator;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use curator::{Consumed, CuratorConsumer, DELAY, FIFO, ID, PRIORITY, consumer_of, text};
use jute::OpCode;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use zk_proto::{Client, Error};
use zk_recipes::Error as RecipeError;
use zk_recipes::curator_queue::DistributedQueue;
use zk_testkit::ZkServer;
use zk_testkit::client::{
    Proxied, builder, children, connect_proxied, connect_with, eventually, expire_session, join,
    mkdirs, server_builder, spawn_test_child, start_server_with, within,
};

/// Bound of a whole exchange of 10,000 items.
const LIMIT: Duration = Duration::from_secs(600);
/// Bound of one take while items are still to come (a killed holder's session included).
const TAKE: Option<Duration> = Some(Duration::from_secs(60));
/// The sessions that are killed or expire here (the server's tick allows 1 to 10 s): long
/// enough that a consumer starved of CPU by the other processes of a scenario (two JVMs, a
/// server, a child) keeps its session on a loaded 2-core machine, short enough that a killed
/// holder's lock goes soon.
const SESSION: Duration = Duration::from_secs(4);
/// The items of the kill -9 scenarios.
const COUNT: usize = 10_000;
/// How many items the Curator consumer processes before it holds one (then is killed).
const CURATOR_ITEMS: usize = 1_000;

async fn server() -> ZkServer {
    start_server_with(server_builder().tick_time(Duration::from_millis(500))).await
}

async fn session(server: &ZkServer) -> Client {
    connect_with(builder().session_timeout(SESSION), &server.connect_string()).await
}

/// A session through a fault proxy, long enough (10 s) to outlive the cuts of a scenario.
async fn proxied_session(server: &ZkServer) -> Proxied {
    connect_proxied(
        server.addr(),
        builder().session_timeout(Duration::from_secs(10)),
    )
    .await
}

/// The items processed by every consumer of a scenario; done once `count` were.
struct Tally {
    items: Mutex<Vec<(&'static str, String)>>,
    count: usize,
    /// How many were processed so far.
    done: watch::Sender<usize>,
}

impl Tally {
    fn new(count: usize) -> Arc<Self> {
        Arc::new(Self {
            items: Mutex::new(Vec::new()),
            count,
            done: watch::Sender::new(0),
        })
    }

    fn add(&self, by: &'static str, item: String) {
        let mut items = self.items.lock().expect("tally");
        items.push((by, item));
        self.done.send_replace(items.len());
    }

    /// Waits until `n` items were processed.
    async fn wait_for(&self, n: usize) {
        let mut done = self.done.subscribe();
        within("the items processed", LIMIT, finished(&mut done, n)).await;
    }

    async fn wait_done(&self) {
        self.wait_for(self.count).await;
    }

    /// Asserts that every item `<tag>-<i>` of `0..count` was processed exactly once; returns
    /// who processed each.
    fn exactly_once(&self, tag: &str) -> BTreeMap<usize, &'static str> {
        let items = self.items.lock().expect("tally");
        let mut by = BTreeMap::new();
        for (who, item) in items.iter() {
            let i: usize = item
                .strip_prefix(tag)
                .and_then(|rest| rest.strip_prefix('-'))
                .and_then(|i| i.parse().ok())
                .unwrap_or_else(|| panic!("not a {tag}-<i> item: {item}"));
            if let Some(first) = by.insert(i, *who) {
                panic!("{item} processed twice: by {first} and by {who}");
            }
        }
        let missing: Vec<_> = (0..self.count).filter(|i| !by.contains_key(i)).collect();
        assert!(missing.is_empty(), "lost: {missing:?}");
        by
    }
}

/// Resolves once the tally is done (the `Ref` of the watch is not held across an await).
async fn finished(done: &mut watch::Receiver<usize>, count: usize) {
    let _ = done.wait_for(|done| *done >= count).await.map(drop);
}

/// Our lock-safe consumer of the queue of `kind`: takes, completes, counts, until the tally is
/// done.
fn our_consumer(client: &Client, kind: &str, tally: &Arc<Tally>) -> tokio::task::JoinHandle<()> {
    let mut consumer = consumer_of(client, kind, "/fq/q", Some("/fq/locks"));
    let tally = tally.clone();
    tokio::spawn(async move {
        let mut done = tally.done.subscribe();
        loop {
            tokio::select! {
                biased;
                () = finished(&mut done, tally.count) => return,
                message = consumer.next(TAKE) => {
                    let message = message.expect("take");
                    assert!(message.is_locked());
                    let item = text(&message);
                    message.complete().await.expect("complete");
                    tally.add("ours", item);
                }
            }
        }
    })
}

/// Reads a Curator consumer's lines into the tally; returns the item it holds when told to
/// hang, or `None` once the tally is done (bounded by the tally's wait: the consumer prints
/// nothing while the others take the last items).
async fn follow(curator: &mut CuratorConsumer, tally: &Tally) -> Option<String> {
    let mut done = tally.done.subscribe();
    loop {
        tokio::select! {
            biased;
            () = finished(&mut done, tally.count) => return None,
            line = curator.next_unbounded() => match line {
                Consumed::Item(item) => tally.add("curator", item),
                Consumed::Holding(item) => return Some(item),
            },
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_consumer_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    curator_consumer_killed_mid_item(FIFO).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_id_queue_consumer_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    curator_consumer_killed_mid_item(ID).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_priority_queue_consumer_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    curator_consumer_killed_mid_item(PRIORITY).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_delay_queue_consumer_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    curator_consumer_killed_mid_item(DELAY).await;
}

/// A Curator consumer of the queue of `kind` (lock-safe) processes [`CURATOR_ITEMS`] items of
/// a Curator producer's [`COUNT`], then holds one and is killed (kill -9) while our consumer
/// takes the rest: the held item stays while its holder lives and goes to ours once the
/// holder's session expired; none lost or taken twice.
async fn curator_consumer_killed_mid_item(kind: &'static str) {
    let server = server().await;
    let connect_string = server.connect_string();
    let tally = Tally::new(COUNT);
    let producer = {
        let connect_string = connect_string.clone();
        tokio::spawn(
            async move { curator::produce(&connect_string, kind, "/fq/q", COUNT, "c").await },
        )
    };
    let mut curator = CuratorConsumer::start(
        &connect_string,
        kind,
        "/fq/q",
        Some("/fq/locks"),
        Some(CURATOR_ITEMS),
        SESSION,
    )
    .await;
    // Curator's consumer alone until it holds an item (ours, faster, would leave it none).
    let Some(held) = within(
        "the Curator consumer's held item",
        LIMIT,
        follow(&mut curator, &tally),
    )
    .await
    else {
        panic!("the Curator consumer did not hold an item");
    };
    // While its holder lives, our consumer takes every other item and leaves the held one.
    let client = session(&server).await;
    let ours = our_consumer(&client, kind, &tally);
    tally.wait_for(COUNT - 1).await;
    join("the Curator producer", LIMIT, producer).await;
    assert_eq!(
        children(&client, "/fq/q").await.len(),
        1,
        "the held item stays"
    );
    assert_eq!(
        children(&client, "/fq/locks").await.len(),
        1,
        "its lock stays"
    );
    // Killed: its lock goes with its session, and our consumer, watching the lock, takes it.
    curator.kill9().await;
    tally.wait_done().await;
    join("our consumer", LIMIT, ours).await;
    let by = tally.exactly_once("c");
    let held_index: usize = held.trim_start_matches("c-").parse().expect("index");
    assert_eq!(
        by[&held_index], "ours",
        "the held item went to our consumer"
    );
    assert_eq!(
        by.values().filter(|who| **who == "curator").count(),
        CURATOR_ITEMS,
        "Curator processed its items before it was killed"
    );
    eventually("no lock left", LIMIT, || async {
        children(&client, "/fq/locks").await.is_empty()
    })
    .await;
    assert!(children(&client, "/fq/q").await.is_empty());
}

/// The environment variable that turns [`lock_safe_child`] into the killed consumer of
/// [`consumer_of_ours_killed_mid_item`]: the queue's kind, a space, the connect string.
const CHILD_ENV: &str = "ZK_QUEUES_FAULT_CHILD";
/// How many items the child completes before it holds one.
const CHILD_ITEMS: usize = 2_000;

/// Not a test of its own: run by [`consumer_of_ours_killed_mid_item`]
/// as a child process (this test binary, filtered to this test, with [`CHILD_ENV`] set), it
/// takes and completes [`CHILD_ITEMS`] items printing `item <text>`, then takes one more,
/// prints `holding <text>` and waits to be killed. Without the variable it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_safe_child() {
    let Ok(value) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (kind, connect_string) = value.split_once(' ').expect("<kind> <connect string>");
    let client = connect_with(builder().session_timeout(SESSION), connect_string).await;
    let mut consumer = consumer_of(&client, kind, "/fq/q", Some("/fq/locks"));
    // libtest has printed "test lock_safe_child ... " without a newline: this ends that line.
    println!();
    for _ in 0..CHILD_ITEMS {
        let message = consumer.next(TAKE).await.expect("take");
        let item = text(&message);
        message.complete().await.expect("complete");
        println!("item {item}");
    }
    let message = consumer.next(TAKE).await.expect("take");
    println!("holding {}", text(&message));
    // The child's lifetime: the parent kills it long before (a bound, should the parent die).
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_of_ours_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    consumer_of_ours_killed_mid_item(FIFO).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_queue_consumer_of_ours_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    consumer_of_ours_killed_mid_item(ID).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_priority_queue_consumer_of_ours_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    consumer_of_ours_killed_mid_item(PRIORITY).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delay_queue_consumer_of_ours_killed_mid_item_loses_nothing_in_lock_safe_mode() {
    consumer_of_ours_killed_mid_item(DELAY).await;
}

/// Our consumer of the queue of `kind` (lock-safe), a child process, completes
/// [`CHILD_ITEMS`] items of a Curator producer's [`COUNT`] next to a Curator consumer, then
/// holds one and is killed (kill -9); a consumer of ours in this process joins: the held item
/// goes to another consumer, none is lost or taken twice.
async fn consumer_of_ours_killed_mid_item(kind: &'static str) {
    let server = server().await;
    let connect_string = server.connect_string();
    let tally = Tally::new(COUNT);
    let producer = {
        let connect_string = connect_string.clone();
        tokio::spawn(
            async move { curator::produce(&connect_string, kind, "/fq/q", COUNT, "c").await },
        )
    };
    let mut child = spawn_test_child(
        "lock_safe_child",
        CHILD_ENV,
        &format!("{kind} {connect_string}"),
    );
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // A Curator consumer shares the queue and its locks with the child, then with us.
    let mut curator = CuratorConsumer::start(
        &connect_string,
        kind,
        "/fq/q",
        Some("/fq/locks"),
        None,
        SESSION,
    )
    .await;
    let curator_tally = tally.clone();
    let curator_task = tokio::spawn(async move {
        let followed = follow(&mut curator, &curator_tally);
        assert_eq!(within("the tally", LIMIT, followed).await, None);
        curator.quit().await;
    });
    let held = within("the child's held item", LIMIT, async {
        while let Some(line) = lines.next_line().await.expect("child output") {
            if let Some(item) = line.strip_prefix("item ") {
                tally.add("child", item.to_owned());
            } else if let Some(item) = line.strip_prefix("holding ") {
                return item.to_owned();
            }
        }
        panic!("the child consumer exited before holding an item");
    })
    .await;
    child.start_kill().expect("kill -9");
    let _ = child.wait().await;
    // Curator's consumer lists the queue only when its children change: the lock going with
    // the child's session changes none, so our consumer (which watches the lock) takes part.
    let client = session(&server).await;
    let ours = our_consumer(&client, kind, &tally);
    tally.wait_done().await;
    join("our consumer", LIMIT, ours).await;
    join("the Curator consumer", LIMIT, curator_task).await;
    join("the Curator producer", LIMIT, producer).await;
    let by = tally.exactly_once("c");
    let held_index: usize = held.trim_start_matches("c-").parse().expect("index");
    assert_ne!(
        by[&held_index], "child",
        "the held item was processed by another consumer"
    );
    assert_eq!(
        by.values().filter(|who| **who == "child").count(),
        CHILD_ITEMS
    );
    eventually("no lock left", LIMIT, || async {
        children(&client, "/fq/locks").await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_safe_replies_lost_to_cuts_lose_and_duplicate_nothing() {
    const ITEMS: usize = 600;
    let server = server().await;
    let producer_client = session(&server).await;
    let queue = DistributedQueue::new(&producer_client, "/fq/q");
    for i in 0..ITEMS {
        queue.put(format!("c-{i}")).await.expect("put");
    }
    let proxied = proxied_session(&server).await;
    let mut consumer =
        DistributedQueue::with_lock_path(&proxied.client, "/fq/q", "/fq/locks").consumer();
    let tally = Tally::new(ITEMS);
    let (mut lock_cuts, mut complete_cuts, mut errors) = (0, 0, 0);
    let mut taken = 0usize;
    let mut armed_at = None;
    while taken < ITEMS {
        if taken % 50 == 25 && armed_at != Some(taken) {
            armed_at = Some(taken);
            // The next lock create reaches the server, its reply is lost.
            let _ = proxied.proxy.cut_after_request(OpCode::CREATE2);
            lock_cuts += 1;
        }
        let message = match consumer.next(TAKE).await {
            Ok(message) => message,
            Err(RecipeError::Zk(error)) if error.is_retryable() => {
                errors += 1;
                continue;
            }
            Err(error) => panic!("take: {error}"),
        };
        if taken.is_multiple_of(50) {
            // The item's delete (and the lock's, queued behind it) reach the server, their
            // replies are lost: complete retries.
            let _ = proxied.proxy.cut_after_request(OpCode::DELETE);
            complete_cuts += 1;
        }
        let item = text(&message);
        message
            .complete()
            .await
            .expect("complete retries through a cut");
        tally.add("ours", item);
        taken += 1;
    }
    tally.exactly_once("c");
    assert_eq!(complete_cuts, ITEMS / 50);
    assert_eq!(lock_cuts, ITEMS / 50);
    assert!(
        errors >= lock_cuts,
        "each lost lock reply failed a take ({errors} errors)"
    );
    assert!(children(&producer_client, "/fq/q").await.is_empty());
    eventually("no lock left", LIMIT, || async {
        children(&producer_client, "/fq/locks").await.is_empty()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_mode_loses_the_item_whose_claim_reply_was_lost() {
    let server = server().await;
    let producer = session(&server).await;
    let queue = DistributedQueue::new(&producer, "/fq/q");
    for i in 0..3 {
        queue.put(format!("c-{i}")).await.expect("put");
    }
    let proxied = proxied_session(&server).await;
    let mut consumer = DistributedQueue::new(&proxied.client, "/fq/q").consumer();
    let cut = proxied.proxy.cut_after_request(OpCode::DELETE);
    assert!(matches!(
        consumer.next(TAKE).await,
        Err(RecipeError::Zk(Error::ConnectionLoss))
    ));
    within("the cut", LIMIT, cut.fired()).await;
    // The delete was applied: c-0 is gone and was never handed out (at most once).
    let rest: Vec<String> = [
        text(&consumer.next(TAKE).await.expect("take")),
        text(&consumer.next(TAKE).await.expect("take")),
    ]
    .into();
    assert_eq!(rest, ["c-1", "c-2"]);
    assert!(consumer.try_next().await.expect("take").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_session_expired_cannot_complete_and_the_item_goes_to_another() {
    let server = server().await;
    let connect_string = server.connect_string();
    let producer = session(&server).await;
    DistributedQueue::new(&producer, "/fq/q")
        .put("c-0")
        .await
        .expect("put");
    let holder = session(&server).await;
    let message = DistributedQueue::with_lock_path(&holder, "/fq/q", "/fq/locks")
        .take(TAKE)
        .await
        .expect("take");
    let other = session(&server).await;
    let queue = DistributedQueue::with_lock_path(&other, "/fq/q", "/fq/locks");
    assert!(
        queue.try_take().await.expect("try").is_none(),
        "held by the holder"
    );
    expire_session(&holder, &connect_string).await;
    assert!(matches!(
        message.complete().await,
        Err(RecipeError::Zk(Error::SessionExpired))
    ));
    let again = queue.take(TAKE).await.expect("take after the expiry");
    assert_eq!(text(&again), "c-0");
    again.complete().await.expect("complete");
    assert!(children(&other, "/fq/q").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_cut_off_while_waiting_takes_the_item_put_meanwhile() {
    let server = server().await;
    let producer = session(&server).await;
    mkdirs(&producer, "/fq/q").await;
    let proxied = proxied_session(&server).await;
    let mut consumer =
        DistributedQueue::with_lock_path(&proxied.client, "/fq/q", "/fq/locks").consumer();
    let waiting = tokio::spawn(async move { consumer.next(TAKE).await });
    // Its listing (which sets the children watch) reached the server, and the server has
    // answered it: a later request of the same session was answered.
    proxied.proxy.wait_forwarded(OpCode::GET_CHILDREN, 1).await;
    proxied.client.exists("/fq").await.expect("exists");
    // Cut off (connections cut and refused) while it waits; the item comes meanwhile.
    proxied.proxy.isolate();
    DistributedQueue::new(&producer, "/fq/q")
        .put("c-0")
        .await
        .expect("put");
    proxied.proxy.restore();
    let message = join("the waiting consumer", LIMIT, waiting)
        .await
        .expect("the item put while cut off");
    assert_eq!(text(&message), "c-0");
    message.complete().await.expect("complete");
    assert!(children(&producer, "/fq/q").await.is_empty());
    // The persistent watch does not replay what changed while cut off: the consumer listed
    // the queue again once reconnected (its second listing).
    assert_eq!(proxied.proxy.forwarded(OpCode::GET_CHILDREN), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_consumer_fails_when_its_session_expires() {
    let server = server().await;
    let client = session(&server).await;
    mkdirs(&client, "/fq/q").await;
    let mut consumer = consumer_of(&client, PRIORITY, "/fq/q", Some("/fq/locks"));
    // Listed, its watch added: nothing to take.
    assert!(consumer.try_next().await.expect("try").is_none());
    let waiting = tokio::spawn(async move { consumer.next(TAKE).await });
    expire_session(&client, &server.connect_string()).await;
    let result = join("the waiting consumer", LIMIT, waiting).await;
    assert!(
        matches!(result, Err(RecipeError::Zk(Error::SessionExpired))),
        "{result:?}"
    );
}
