//! `tests/curator/CuratorQueue.java` (its comment lists the commands): Curator's queues as
//! producer and consumer processes, for the interop tests of `zk_recipes::curator_queue`
//! (`tests/curator_queue.rs`) and its fault tests (`tests/tests/fault_queues.rs`, which includes
//! this file by `#[path]`).

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use zk_proto::Client;
use zk_recipes::curator_queue::{
    Consumer, DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue,
    DistributedQueue, Message,
};
use zk_testkit::line_program::LineProgram;

/// Bound of a Curator producer's run (10,000 puts, its JVM start included).
pub const PRODUCE_LIMIT: Duration = Duration::from_secs(300);
/// Bound of one line from a Curator consumer.
pub const LINE_LIMIT: Duration = Duration::from_secs(60);

/// The kinds of Curator queue, as `CuratorQueue.java` names them.
pub const FIFO: &str = "fifo";
/// `DistributedIdQueue`.
pub const ID: &str = "id";
/// `DistributedPriorityQueue`.
pub const PRIORITY: &str = "priority";
/// `DistributedDelayQueue`.
pub const DELAY: &str = "delay";

/// `CuratorQueue.priority(i)`: the priority the Curator producer gives item `i`.
pub fn priority(i: usize) -> i32 {
    let value = (i as i64 * 7919) % 201 - 100;
    i32::try_from(value).expect("in -100..=100")
}

/// `CuratorQueue.delay(i)`: the delay (after the producer's start) of item `i`.
pub fn delay(i: usize) -> Duration {
    Duration::from_millis((i % 4) as u64 * 250)
}

/// The four kinds, for the tests that run on each.
pub const KINDS: [&str; 4] = [FIFO, ID, PRIORITY, DELAY];

/// Our consumer of the queue of `kind` at `path`, lock-safe with `lock_path`.
pub fn consumer_of(client: &Client, kind: &str, path: &str, lock_path: Option<&str>) -> Consumer {
    match (kind, lock_path) {
        (FIFO, None) => DistributedQueue::new(client, path).consumer(),
        (FIFO, Some(locks)) => DistributedQueue::with_lock_path(client, path, locks).consumer(),
        (ID, None) => DistributedIdQueue::new(client, path).consumer(),
        (ID, Some(locks)) => DistributedIdQueue::with_lock_path(client, path, locks).consumer(),
        (PRIORITY, None) => DistributedPriorityQueue::new(client, path).consumer(),
        (PRIORITY, Some(locks)) => {
            DistributedPriorityQueue::with_lock_path(client, path, locks).consumer()
        }
        (DELAY, None) => DistributedDelayQueue::new(client, path).consumer(),
        (DELAY, Some(locks)) => {
            DistributedDelayQueue::with_lock_path(client, path, locks).consumer()
        }
        (kind, _) => panic!("no queue kind {kind}"),
    }
}

/// The one item of a message, as text.
pub fn text(message: &Message) -> String {
    let items = message.items().expect("Curator's format");
    assert_eq!(items.len(), 1, "one item per node");
    String::from_utf8(items[0].to_vec()).expect("utf-8")
}

fn command(connect_string: &str) -> std::process::Command {
    let Some(classpath) = zk_testkit::java::curator_classpath() else {
        panic!("Apache Curator is not installed: run scripts/install-curator.sh");
    };
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/zk-recipes/tests/curator/CuratorQueue.java");
    let source = if source.is_file() {
        source
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/curator/CuratorQueue.java")
    };
    let mut command = zk_testkit::java::source_program(&classpath, &source).expect("java");
    command.arg(connect_string);
    command
}

/// Runs a Curator producer to its end: `count` items `<tag>-<i>` into the queue of `kind` at
/// `path` (see `CuratorQueue.java` for the ids, priorities and delays).
pub async fn produce(connect_string: &str, kind: &str, path: &str, count: usize, tag: &str) {
    let mut command = command(connect_string);
    command.args(["produce", kind, path, &count.to_string(), tag]);
    let mut producer = LineProgram::spawn(command, "the Curator producer", PRODUCE_LIMIT);
    let line = producer.reply("its end").await;
    assert_eq!(line, format!("produced {count}"));
    producer.wait_success().await;
}

/// Runs Curator's `DistributedIdQueue.remove(id)` on the queue at `path`; returns its count.
pub async fn remove(connect_string: &str, path: &str, id: &str) -> usize {
    let mut command = command(connect_string);
    command.args(["remove", path, id]);
    let mut remover = LineProgram::spawn(command, "the Curator remove", LINE_LIMIT);
    let line = remover.reply("its count").await;
    remover.wait_success().await;
    line.strip_prefix("removed ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply: {line}"))
}

/// A running Curator consumer. Killed (kill -9) when dropped.
pub struct CuratorConsumer {
    program: LineProgram,
}

/// A line of a Curator consumer.
#[derive(Debug, PartialEq, Eq)]
pub enum Consumed {
    /// It consumed this item.
    Item(String),
    /// It blocks inside `consumeMessage` on this item (`hang_after`).
    Holding(String),
}

impl CuratorConsumer {
    /// Starts a consumer of the queue of `kind` at `path` (lock-safe with `lock_path`), its
    /// session asking for `session`; with `hang_after = Some(n)` it blocks on the item after
    /// its n-th. Returns once it has started its queue.
    pub async fn start(
        connect_string: &str,
        kind: &str,
        path: &str,
        lock_path: Option<&str>,
        hang_after: Option<usize>,
        session: Duration,
    ) -> Self {
        let mut command = command(connect_string);
        let hang = hang_after.map_or("-".to_owned(), |n| n.to_string());
        command.args([
            "consume",
            kind,
            path,
            lock_path.unwrap_or("-"),
            &hang,
            &session.as_millis().to_string(),
        ]);
        let mut program = LineProgram::spawn(command, "the Curator consumer", LINE_LIMIT);
        assert_eq!(program.reply("start").await, "ready");
        Self { program }
    }

    /// The consumer's next line, within [`LINE_LIMIT`]; panics if it exited.
    pub async fn next(&mut self) -> Consumed {
        Self::parse(&self.program.reply("the next item").await)
    }

    /// The consumer's next line, however long it takes (for a caller that bounds the whole
    /// scenario: a consumer with nothing left to take prints nothing); panics if it exited.
    pub async fn next_unbounded(&mut self) -> Consumed {
        Self::parse(&self.program.reply_unbounded("the next item").await)
    }

    fn parse(line: &str) -> Consumed {
        if let Some(item) = line.strip_prefix("item ") {
            Consumed::Item(item.to_owned())
        } else if let Some(item) = line.strip_prefix("holding ") {
            Consumed::Holding(item.to_owned())
        } else {
            panic!("unexpected line from the Curator consumer: {line}")
        }
    }

    /// kill -9, and waits for the process to end.
    pub async fn kill9(self) {
        self.program.kill9().await;
    }

    /// Tells it to close its queue and session, and waits for its end.
    pub async fn quit(mut self) {
        self.program.send("quit").await;
        self.program.wait_success().await;
    }
}
