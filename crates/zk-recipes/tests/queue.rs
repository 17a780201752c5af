//! The distributed FIFO queue and its bounded variant against a real server, with several
//! producer and consumer sessions.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zk_recipes::Error;
use zk_recipes::queue::{BoundedQueue, Item, Queue};
use zk_testkit::client::{builder, eventually, join, sessions, start_server};

const WITHIN: Duration = Duration::from_secs(20);
/// The session timeout of every session here.
const SESSION_TIMEOUT: Duration = Duration::from_secs(6);
const STOP: &str = "stop";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_with_concurrent_producers_and_consumers() {
    let server = start_server().await;
    let session = builder().session_timeout(SESSION_TIMEOUT);
    let clients = sessions(session, &server.connect_string(), 12).await;

    every_item_exactly_once(&clients[..4], &clients[4..]).await;
    single_consumer_sees_producer_fifo(&clients[..4], &clients[4]).await;
    blocking_take_wakes_on_put(&clients[0], &clients[1]).await;
    bounded_queue_blocks_producer_until_take(&clients[0], &clients[1]).await;
    bounded_queue_bound_holds_under_concurrent_producers(&clients[..4], &clients[4]).await;

    for client in clients {
        client.close().await.expect("close");
    }
}

fn parse(item: &Item) -> (usize, usize) {
    let text = std::str::from_utf8(&item.data).expect("utf-8");
    let (producer, index) = text
        .strip_prefix('p')
        .and_then(|rest| rest.split_once('-'))
        .expect("p<producer>-<index>");
    (
        producer.parse().expect("producer"),
        index.parse().expect("index"),
    )
}

async fn produce(
    producers: &[zk_proto::Client],
    path: &'static str,
    per_producer: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    producers
        .iter()
        .cloned()
        .enumerate()
        .map(|(p, client)| {
            tokio::spawn(async move {
                let queue = Queue::new(&client, path);
                for i in 0..per_producer {
                    queue.put(format!("p{p}-{i}")).await.expect("put");
                }
            })
        })
        .collect()
}

async fn every_item_exactly_once(producers: &[zk_proto::Client], consumers: &[zk_proto::Client]) {
    const PATH: &str = "/queues/exactly-once";
    const PER_PRODUCER: usize = 100;
    let taken: Arc<Mutex<Vec<Item>>> = Arc::default();
    let consumer_tasks: Vec<_> = consumers
        .iter()
        .cloned()
        .map(|client| {
            let taken = taken.clone();
            tokio::spawn(async move {
                let queue = Queue::new(&client, PATH);
                let mut mine = 0usize;
                loop {
                    let item = queue
                        .take(Some(WITHIN))
                        .await
                        .expect("an item before the timeout");
                    if item.data == STOP {
                        return mine;
                    }
                    mine += 1;
                    taken.lock().expect("taken").push(item);
                }
            })
        })
        .collect();
    for task in produce(producers, PATH, PER_PRODUCER).await {
        join("a producer", WITHIN, task).await;
    }
    // One stop item per consumer, after every real item.
    let control = Queue::new(&producers[0], PATH);
    for _ in consumers {
        control.put(STOP).await.expect("put stop");
    }
    let mut per_consumer = Vec::new();
    for task in consumer_tasks {
        per_consumer.push(join("a consumer", WITHIN, task).await);
    }
    let taken = std::mem::take(&mut *taken.lock().expect("taken"));
    let total = producers.len() * PER_PRODUCER;
    assert_eq!(taken.len(), total, "no item lost, none duplicated");
    let distinct: HashSet<(usize, usize)> = taken.iter().map(parse).collect();
    assert_eq!(distinct.len(), total, "no item taken twice");
    let names: HashSet<&str> = taken.iter().map(|item| item.name.as_str()).collect();
    assert_eq!(names.len(), total, "no node taken twice");
    assert_eq!(per_consumer.iter().sum::<usize>(), total);
    assert_eq!(control.len().await.expect("len"), 0, "nothing left behind");
}

async fn single_consumer_sees_producer_fifo(
    producers: &[zk_proto::Client],
    consumer: &zk_proto::Client,
) {
    const PATH: &str = "/queues/fifo";
    const PER_PRODUCER: usize = 50;
    for task in produce(producers, PATH, PER_PRODUCER).await {
        join("a producer", WITHIN, task).await;
    }
    let queue = Queue::new(consumer, PATH);
    let mut order = Vec::new();
    while let Some(item) = queue.try_take().await.expect("try_take") {
        order.push(item);
    }
    assert_eq!(order.len(), producers.len() * PER_PRODUCER);
    let sequences: Vec<i64> = order
        .iter()
        .map(|item| item.sequence().expect("sequence"))
        .collect();
    assert!(
        sequences.windows(2).all(|w| w[0] < w[1]),
        "taken in sequence order"
    );
    let mut next: BTreeMap<usize, usize> = BTreeMap::new();
    for item in &order {
        let (producer, index) = parse(item);
        let expected = next.entry(producer).or_default();
        assert_eq!(index, *expected, "producer {producer}'s items in order");
        *expected += 1;
    }
    assert!(next.values().all(|&n| n == PER_PRODUCER));
}

async fn blocking_take_wakes_on_put(consumer: &zk_proto::Client, producer: &zk_proto::Client) {
    const PATH: &str = "/queues/blocking";
    let queue = Queue::new(consumer, PATH);
    // Empty (even missing): a take times out.
    let taken = queue.take(Some(Duration::from_millis(200))).await;
    assert!(matches!(taken, Err(Error::Timeout)), "{taken:?}");
    let waiting = tokio::spawn(async move { queue.take(Some(WITHIN)).await });
    Queue::new(producer, PATH).put("hello").await.expect("put");
    let item = join("the blocked take", WITHIN, waiting)
        .await
        .expect("woken by the put");
    assert_eq!(item.data, "hello");
}

async fn bounded_queue_blocks_producer_until_take(
    producer: &zk_proto::Client,
    consumer: &zk_proto::Client,
) {
    const PATH: &str = "/queues/bounded";
    let queue = BoundedQueue::new(producer, PATH, 3);
    for i in 0..3 {
        let put = queue.put(format!("item-{i}"), Some(WITHIN)).await;
        put.unwrap_or_else(|e| panic!("room for item {i}: {e}"));
    }
    // Full: a put times out and adds nothing.
    let put = queue.put("extra", Some(Duration::from_millis(200))).await;
    assert!(matches!(put, Err(Error::Timeout)), "{put:?}");
    assert_eq!(queue.queue().len().await.expect("len"), 3);

    let blocked = {
        let queue = queue.clone();
        tokio::spawn(async move { queue.put("item-3", Some(WITHIN)).await })
    };
    // The producer stays blocked while the queue is full.
    let checker = queue.queue().clone();
    eventually("the blocked put is waiting", WITHIN, || {
        let checker = checker.clone();
        async move { checker.len().await.is_ok_and(|len| len == 3) }
    })
    .await;
    assert!(!blocked.is_finished(), "blocked while full");

    let consumer_queue = BoundedQueue::new(consumer, PATH, 3);
    let first = consumer_queue.take(Some(WITHIN)).await.expect("an item");
    assert_eq!(first.data, "item-0");
    join("the blocked put", WITHIN, blocked)
        .await
        .expect("unblocked by the take");
    let mut rest = Vec::new();
    while let Some(item) = consumer_queue.try_take().await.expect("try_take") {
        rest.push(item.data);
    }
    assert_eq!(rest, ["item-1", "item-2", "item-3"]);
}

async fn bounded_queue_bound_holds_under_concurrent_producers(
    producers: &[zk_proto::Client],
    consumer: &zk_proto::Client,
) {
    const PATH: &str = "/queues/bounded-concurrent";
    const CAPACITY: u32 = 3;
    const PER_PRODUCER: usize = 10;
    let tasks: Vec<_> = producers
        .iter()
        .cloned()
        .enumerate()
        .map(|(p, client)| {
            tokio::spawn(async move {
                let queue = BoundedQueue::new(&client, PATH, CAPACITY);
                for i in 0..PER_PRODUCER {
                    let put = queue.put(format!("p{p}-{i}"), Some(WITHIN)).await;
                    put.expect("put in time");
                }
            })
        })
        .collect();
    let queue = BoundedQueue::new(consumer, PATH, CAPACITY);
    let total = producers.len() * PER_PRODUCER;
    let mut seen = HashSet::new();
    while seen.len() < total {
        let len = queue.queue().len().await.expect("len");
        assert!(len <= CAPACITY as usize, "bound exceeded: {len}");
        let item = queue.take(Some(WITHIN)).await.expect("item");
        assert!(seen.insert(parse(&item)), "taken once");
    }
    for task in tasks {
        join("a producer", WITHIN, task).await;
    }
    assert_eq!(queue.queue().len().await.expect("len"), 0);
}
