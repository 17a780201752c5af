//! Curator's queues (`zk_recipes::curator_queue`) against Apache Curator 5.4 processes
//! (`tests/curator/CuratorQueue.java`) on one real server: a Curator producer and our
//! consumers, our producer and a Curator consumer, for each queue kind, every item exactly
//! once, in Curator's order where one consumer takes them all. Faults (kill -9 of a consumer,
//! cuts, expiry) are in `tests/tests/fault_queues.rs`.
//!
//! Counts: 10,000 items each way for every kind. Our consumers list the queue once and follow
//! it with a persistent watch (`a_consumer_lists_the_queue_once_while_it_drains_it_and_items_arrive`
//! counts their getChildren requests); Curator's priority and delay consumers list it again on
//! every change of its children.

#[path = "curator_support/queue.rs"]
mod curator;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use curator::{Consumed, CuratorConsumer, DELAY, FIFO, ID, KINDS, PRIORITY, consumer_of, text};
use tokio::sync::Notify;
use zk_proto::jute::OpCode;
use zk_proto::{Client, WatcherType};
use zk_recipes::curator_queue::{
    Consumer, DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue,
    DistributedQueue, Message,
};
use zk_testkit::client::{builder, connect, connect_proxied, join, start_server};

/// The items of each exchange, each way.
const COUNT: usize = 10_000;
/// Bound of a whole exchange.
const LIMIT: Duration = Duration::from_secs(600);
/// Bound of one take while items are still to come.
const TAKE: Option<Duration> = Some(Duration::from_secs(60));
/// The Curator consumers' session timeout.
const CURATOR_SESSION: Duration = Duration::from_secs(10);

/// The index `i` of an item `<tag>-<i>`.
fn index(text: &str, tag: &str) -> usize {
    text.strip_prefix(tag)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("not a {tag}-<i> item: {text}"))
}

/// Asserts that `taken` holds each of `0..count` exactly once.
fn exactly_once(taken: &[usize], count: usize) {
    let mut seen = BTreeMap::new();
    for &i in taken {
        *seen.entry(i).or_insert(0) += 1;
    }
    let duplicated: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(duplicated.is_empty(), "taken twice: {duplicated:?}");
    let missing: Vec<_> = (0..count).filter(|i| !seen.contains_key(i)).collect();
    assert!(
        missing.is_empty(),
        "lost: {} items, first {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert_eq!(taken.len(), count);
}

/// Asserts that the items `indexes`, put with Curator's producer's priorities
/// ([`curator::priority`]) in the order of their indexes, came out by priority, then FIFO.
fn in_priority_order(indexes: &[usize]) {
    let keys: Vec<(i32, usize)> = indexes.iter().map(|&i| (curator::priority(i), i)).collect();
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "priority order, then FIFO"
    );
}

/// Our consumers, one per client, take from the queue until `count` messages were
/// taken in all; returns each consumer's messages in the order it took them.
async fn drain(
    clients: &[Client],
    make: impl Fn(&Client) -> Consumer,
    count: usize,
) -> Vec<Vec<Message>> {
    let total = Arc::new(Mutex::new(0usize));
    let done = Arc::new(Notify::new());
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| {
            let mut consumer = make(client);
            let (total, done) = (total.clone(), done.clone());
            tokio::spawn(async move {
                let mut taken = Vec::new();
                loop {
                    if *total.lock().expect("count") >= count {
                        return taken;
                    }
                    tokio::select! {
                        message = consumer.next(TAKE) => {
                            let message = message.expect("take");
                            assert!(!message.is_locked(), "default mode: deleted when taken");
                            taken.push(message);
                            let mut total = total.lock().expect("count");
                            *total += 1;
                            if *total >= count {
                                done.notify_waiters();
                            }
                        }
                        () = done.notified() => {}
                    }
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(join("our consumer", LIMIT, task).await);
    }
    all
}

/// Reads `count` items from a Curator consumer; returns their texts in its order.
async fn curator_items(consumer: &mut CuratorConsumer, count: usize) -> Vec<String> {
    let mut items = Vec::with_capacity(count);
    while items.len() < count {
        match consumer.next().await {
            Consumed::Item(item) => items.push(item),
            Consumed::Holding(item) => panic!("not told to hang, yet holding {item}"),
        }
    }
    items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_producer_and_our_consumers_pass_10000_items_exactly_once() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let clients = [
        connect(&connect_string).await,
        connect(&connect_string).await,
    ];
    let producer = {
        let connect_string = connect_string.clone();
        tokio::spawn(async move {
            curator::produce(&connect_string, FIFO, "/interop/fifo", COUNT, "c").await
        })
    };
    let taken = drain(
        &clients,
        |client| DistributedQueue::new(client, "/interop/fifo").consumer(),
        COUNT,
    )
    .await;
    join("the Curator producer", LIMIT, producer).await;
    let mut all = Vec::new();
    for messages in &taken {
        let indexes: Vec<usize> = messages.iter().map(|m| index(&text(m), "c")).collect();
        // One producer: each of our consumers takes its items in the order they were put.
        assert!(indexes.windows(2).all(|w| w[0] < w[1]), "FIFO per consumer");
        all.extend(indexes);
    }
    exactly_once(&all, COUNT);
    assert!(
        taken.iter().all(|t| !t.is_empty()),
        "both consumers took items"
    );
    let queue = DistributedQueue::new(&clients[0], "/interop/fifo");
    assert_eq!(queue.len().await.expect("len"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_producer_and_a_curator_consumer_pass_10000_items_exactly_once() {
    /// The last items go 10 to a node (`put_multi`), which Curator's consumer reads as 10.
    const MULTI_FROM: usize = 9_000;
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    let mut curator = CuratorConsumer::start(
        &connect_string,
        FIFO,
        "/interop/rfifo",
        None,
        None,
        CURATOR_SESSION,
    )
    .await;
    let queue = DistributedQueue::new(&client, "/interop/rfifo");
    let producer = tokio::spawn(async move {
        for i in 0..MULTI_FROM {
            queue.put(format!("r-{i}")).await.expect("put");
        }
        for chunk in (MULTI_FROM..COUNT).collect::<Vec<_>>().chunks(10) {
            let items = chunk.iter().map(|i| format!("r-{i}"));
            queue.put_multi(items).await.expect("put_multi");
        }
    });
    let items = curator_items(&mut curator, COUNT).await;
    join("our producer", LIMIT, producer).await;
    let indexes: Vec<usize> = items.iter().map(|t| index(t, "r")).collect();
    // One producer, one consumer: Curator takes them in the order we put them.
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "FIFO");
    exactly_once(&indexes, COUNT);
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_id_queue_producer_and_our_consumer_pass_10000_items_and_removals() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    // Curator puts with ids; we remove some by id and take the rest, reading the ids.
    curator::produce(&connect_string, ID, "/interop/id", COUNT, "c").await;
    let queue = DistributedIdQueue::new(&client, "/interop/id");
    for i in 0..10 {
        assert_eq!(queue.remove(&format!("i{i}")).await.expect("remove"), 1);
    }
    assert_eq!(queue.remove("no-such-id").await.expect("remove"), 0);
    let mut consumer = queue.consumer();
    let mut taken = Vec::new();
    while let Some(message) = consumer.try_next().await.expect("take") {
        let i = index(&text(&message), "c");
        assert_eq!(message.id(), Some(format!("i{i}").as_str()));
        taken.push(i);
    }
    assert!(taken.windows(2).all(|w| w[0] < w[1]), "FIFO");
    let mut expected: Vec<usize> = taken.clone();
    expected.extend(0..10);
    exactly_once(&expected, COUNT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_id_queue_producer_and_a_curator_consumer_pass_10000_items_and_removals() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    // We put with ids (one with '/' and '|', which Curator's fixId turns into '_'); Curator
    // removes one by id and takes the rest.
    let queue = DistributedIdQueue::new(&client, "/interop/rid");
    for i in 0..COUNT {
        queue
            .put(format!("r-{i}"), &format!("i{i}"))
            .await
            .expect("put");
    }
    queue.put("odd", "a/b|c").await.expect("put");
    assert_eq!(
        curator::remove(&connect_string, "/interop/rid", "i5").await,
        1
    );
    assert_eq!(
        curator::remove(&connect_string, "/interop/rid", "a_b_c").await,
        1
    );
    let mut curator = CuratorConsumer::start(
        &connect_string,
        ID,
        "/interop/rid",
        None,
        None,
        CURATOR_SESSION,
    )
    .await;
    let items = curator_items(&mut curator, COUNT - 1).await;
    let mut indexes: Vec<usize> = items.iter().map(|t| index(t, "r")).collect();
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "FIFO");
    indexes.push(5);
    exactly_once(&indexes, COUNT);
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_priority_queue_producer_and_our_consumer_pass_10000_items_in_order() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    // Curator puts; we take them all: by priority, then in the order put.
    curator::produce(&connect_string, PRIORITY, "/interop/prio", COUNT, "c").await;
    let mut consumer = DistributedPriorityQueue::new(&client, "/interop/prio").consumer();
    let mut taken = Vec::new();
    while let Some(message) = consumer.try_next().await.expect("take") {
        taken.push(index(&text(&message), "c"));
    }
    in_priority_order(&taken);
    exactly_once(&taken, COUNT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_priority_queue_producer_and_a_curator_consumer_pass_10000_items_in_order() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    // We put (one node of 3 items by put_multi); Curator takes them in the same order.
    let queue = DistributedPriorityQueue::new(&client, "/interop/rprio");
    for i in 0..COUNT - 3 {
        queue
            .put(format!("r-{i}"), curator::priority(i))
            .await
            .expect("put");
    }
    queue
        .put_multi((COUNT - 3..COUNT).map(|i| format!("r-{i}")), -1000)
        .await
        .expect("put_multi");
    let mut curator = CuratorConsumer::start(
        &connect_string,
        PRIORITY,
        "/interop/rprio",
        None,
        None,
        CURATOR_SESSION,
    )
    .await;
    let items = curator_items(&mut curator, COUNT).await;
    let indexes: Vec<usize> = items.iter().map(|t| index(t, "r")).collect();
    assert_eq!(
        &indexes[..3],
        &[COUNT - 3, COUNT - 2, COUNT - 1],
        "priority -1000 first"
    );
    in_priority_order(&indexes[3..]);
    exactly_once(&indexes, COUNT);
    curator.quit().await;
}

/// Milliseconds since the epoch.
fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_millis()
}

/// The due time of a delay queue item node (`queue-|<hex ms>|<sequence>`).
fn due_ms(name: &str) -> u128 {
    let hex = name.split('|').nth(1).expect("a delay item name");
    u128::from_str_radix(hex, 16).expect("hex")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_delay_queue_producer_and_our_consumer_pass_10000_items_never_early() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    // Curator puts items due up to 750 ms after its start, while we take: none before its
    // time (the node's time read against our clock when the take returns it).
    let producer = {
        let connect_string = connect_string.clone();
        tokio::spawn(async move {
            curator::produce(&connect_string, DELAY, "/interop/delay", COUNT, "c").await
        })
    };
    let mut consumer = DistributedDelayQueue::new(&client, "/interop/delay").consumer();
    let mut taken = Vec::new();
    while taken.len() < COUNT {
        let message = consumer.next(TAKE).await.expect("take");
        let now = now_ms();
        assert!(
            now >= due_ms(message.name()),
            "{} taken at {now}",
            message.name()
        );
        taken.push(index(&text(&message), "c"));
    }
    join("the Curator producer", LIMIT, producer).await;
    exactly_once(&taken, COUNT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_delay_queue_producer_and_a_curator_consumer_pass_10000_items() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    // We put items due up to 750 ms ahead; Curator takes them all.
    let queue = DistributedDelayQueue::new(&client, "/interop/rdelay");
    let start = SystemTime::now();
    for i in 0..COUNT {
        queue
            .put(format!("r-{i}"), start + curator::delay(i))
            .await
            .expect("put");
    }
    let mut curator = CuratorConsumer::start(
        &connect_string,
        DELAY,
        "/interop/rdelay",
        None,
        None,
        CURATOR_SESSION,
    )
    .await;
    let items = curator_items(&mut curator, COUNT).await;
    let indexes: Vec<usize> = items.iter().map(|t| index(t, "r")).collect();
    exactly_once(&indexes, COUNT);
    curator.quit().await;
}

/// Puts item `r-<i>` into the queue of `kind` at `path`: with Curator's producer's priority
/// for `i`, or due (already) at its delay before now, so that items do not all come out in
/// the order put.
async fn put_one(client: &Client, kind: &str, path: &str, i: usize) {
    let item = format!("r-{i}");
    match kind {
        FIFO => DistributedQueue::new(client, path).put(item).await,
        ID => {
            DistributedIdQueue::new(client, path)
                .put(item, &format!("i{i}"))
                .await
        }
        PRIORITY => {
            DistributedPriorityQueue::new(client, path)
                .put(item, curator::priority(i))
                .await
        }
        _ => {
            DistributedDelayQueue::new(client, path)
                .put(item, SystemTime::now() - curator::delay(i))
                .await
        }
    }
    .expect("put");
}

/// Takes one message and says it was processed (lock-safe: completes it); returns its item.
async fn take_one(consumer: &mut Consumer) -> String {
    let message = consumer.next(TAKE).await.expect("take");
    let item = text(&message);
    message.complete().await.expect("complete");
    item
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_lists_the_queue_once_while_it_drains_it_and_items_arrive() {
    /// Items put before the consumer starts, then as many while it takes.
    const ITEMS: usize = 1_000;
    let server = start_server().await;
    let producer = connect(&server.connect_string()).await;
    // (kind, lock-safe, getChildren, addWatch) of each consumer.
    let mut costs = Vec::new();
    for kind in KINDS {
        for locks in [None, Some("/cost/locks")] {
            let path = format!("/cost/{kind}-{}", locks.is_some());
            for i in 0..ITEMS {
                put_one(&producer, kind, &path, i).await;
            }
            // Its own session behind a proxy that counts its requests; a watch buffer that
            // cannot overflow (an overflow is made up for by one more listing, by design).
            let proxied = connect_proxied(server.addr(), builder().watch_capacity(1 << 20)).await;
            let mut consumer = consumer_of(&proxied.client, kind, &path, locks);
            let more = {
                let (producer, path) = (producer.clone(), path.clone());
                tokio::spawn(async move {
                    for i in ITEMS..2 * ITEMS {
                        put_one(&producer, kind, &path, i).await;
                    }
                })
            };
            let mut taken = Vec::new();
            while taken.len() < 2 * ITEMS {
                taken.push(index(&take_one(&mut consumer).await, "r"));
            }
            join("the producer", LIMIT, more).await;
            exactly_once(&taken, 2 * ITEMS);
            let requests = |op| proxied.proxy.forwarded(op);
            costs.push((
                kind,
                locks.is_some(),
                requests(OpCode::GET_CHILDREN),
                requests(OpCode::ADD_WATCH),
            ));
        }
    }
    // One listing and one watch each. Before the persistent watch, the priority and delay
    // consumers listed again on every change of the queue's children, their own deletes
    // included: 2,000 getChildren each here (the FIFO and id consumers 2, once per batch).
    assert!(
        costs
            .iter()
            .all(|&(_, _, listings, watches)| listings == 1 && watches == 1),
        "(kind, lock-safe, getChildren, addWatch): {costs:?}"
    );
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_put_while_consuming_that_sorts_first_comes_next() {
    let server = start_server().await;
    // One session for the producer and the consumer: the event of a create reaches the
    // consumer's watch before the create's reply, so the consumer knows the item once `put`
    // returned.
    let client = connect(&server.connect_string()).await;
    let priority = DistributedPriorityQueue::new(&client, "/order/prio");
    let delay = DistributedDelayQueue::new(&client, "/order/delay");
    let past = SystemTime::now() - Duration::from_secs(60);
    for i in 0..5 {
        priority.put(format!("p-{i}"), 10).await.expect("put");
        delay
            .put(format!("d-{i}"), past + Duration::from_secs(i))
            .await
            .expect("put");
    }
    for (queue_consumer, first, sooner) in [
        (priority.consumer(), "p-0", "p-9"),
        (delay.consumer(), "d-0", "d-9"),
    ] {
        let mut consumer = queue_consumer;
        assert_eq!(take_one(&mut consumer).await, first);
        if sooner.starts_with('p') {
            priority.put(sooner, -1).await.expect("put");
        } else {
            delay
                .put(sooner, past - Duration::from_secs(1))
                .await
                .expect("put");
        }
        assert_eq!(take_one(&mut consumer).await, sooner, "the new first item");
        assert_eq!(
            take_one(&mut consumer).await,
            format!("{}-1", &first[..1]),
            "then the listing's order"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_message_comes_back_and_a_dropped_consumer_removes_its_watch() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let queue = DistributedPriorityQueue::with_lock_path(&client, "/drop/q", "/drop/locks");
    queue.put("x-0", 1).await.expect("put");
    queue.put("x-1", 2).await.expect("put");
    let mut consumer = queue.consumer();
    let message = consumer.next(TAKE).await.expect("take");
    assert_eq!(text(&message), "x-0");
    // The consumer's persistent watch is on the server.
    client
        .check_watches("/drop/q", WatcherType::ANY)
        .await
        .expect("the consumer's watch on the server");
    // Dropped without being completed: its lock goes, and the same consumer takes it again
    // (no event tells it: the item never left the queue).
    drop(message);
    assert_eq!(take_one(&mut consumer).await, "x-0");
    assert_eq!(take_one(&mut consumer).await, "x-1");
    drop(consumer);
    // The watch's removal is queued when the consumer is dropped: the server has applied it
    // before it answers this check.
    assert_eq!(
        client.check_watches("/drop/q", WatcherType::ANY).await,
        Err(zk_proto::Error::NoWatcher)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_cancelled_in_its_first_listing_leaves_no_watch_once_dropped() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let queue = DistributedQueue::new(&client, "/cancel/q");
    let mut consumer = queue.consumer();
    // A deadline already passed: the listing and its addWatch are sent, then given up.
    assert!(matches!(
        consumer.next(Some(Duration::ZERO)).await,
        Err(zk_recipes::Error::Timeout)
    ));
    drop(consumer);
    // Answered after the addWatch: its removal is queued by then, and applied before the
    // check.
    client.exists("/").await.expect("exists");
    assert_eq!(
        client.check_watches("/cancel/q", WatcherType::ANY).await,
        Err(zk_proto::Error::NoWatcher)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_that_fell_behind_its_watch_lists_again_and_loses_nothing() {
    /// Items put while the consumer does not read its watch: far more events than it buffers.
    const ITEMS: usize = 200;
    let server = start_server().await;
    let producer = connect(&server.connect_string()).await;
    let path = "/overflow/q";
    put_one(&producer, PRIORITY, path, 0).await;
    let proxied = connect_proxied(server.addr(), builder().watch_capacity(8)).await;
    let mut consumer = consumer_of(&proxied.client, PRIORITY, path, None);
    assert_eq!(take_one(&mut consumer).await, "r-0");
    for i in 1..=ITEMS {
        put_one(&producer, PRIORITY, path, i).await;
    }
    // The puts' events reached the consumer's client (and overflowed its watch's buffer)
    // before the reply to a read it sends after them.
    proxied.client.exists("/").await.expect("exists");
    let mut taken = vec![0];
    while taken.len() <= ITEMS {
        taken.push(index(&take_one(&mut consumer).await, "r"));
    }
    exactly_once(&taken, ITEMS + 1);
    in_priority_order(&taken[1..]);
    // The overflow ended the watch: added again, with one more listing.
    assert_eq!(proxied.proxy.forwarded(OpCode::GET_CHILDREN), 2);
    assert_eq!(proxied.proxy.forwarded(OpCode::ADD_WATCH), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_item_released_meanwhile_is_taken_by_the_next_try_next() {
    let server = start_server().await;
    let holder = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let queue = DistributedIdQueue::with_lock_path(&holder, "/held/q", "/held/locks");
    queue.put("x-0", "a").await.expect("put");
    let message = queue.take(TAKE).await.expect("take");
    let mut consumer = consumer_of(&other, ID, "/held/q", Some("/held/locks"));
    assert!(
        consumer.try_next().await.expect("try").is_none(),
        "held by the holder"
    );
    // Released without completion: the lock's delete is queued on the holder's session, so
    // it is applied before the holder's next request is answered. The queue's children do not
    // change (no event), and the next try takes the item.
    let lock = format!("/held/locks/{}", message.name());
    drop(message);
    assert_eq!(holder.exists(&lock).await.expect("exists"), None);
    let message = consumer
        .try_next()
        .await
        .expect("try")
        .expect("the released item");
    assert_eq!(text(&message), "x-0");
    message.complete().await.expect("complete");
}
