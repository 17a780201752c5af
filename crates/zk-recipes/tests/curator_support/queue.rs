//! `tests/curator/CuratorQueue.java` (its comment lists the commands): Curator's queues as
//! producer and consumer processes, for the interop tests of `zk_recipes::curator_queue`
//! (`tests/curator_queue.rs`) and its fault tests (`tests/tests/fault_queues.rs`, which includes
//! this file by `#[path]`).

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use zk_proto::Client;
use zk_recipes::curator_queue::{
    Consumer, DistributedDelayQueue, DistributedIdQueue, DistributedPriorityQueue,
    DistributedQueue, Message,
};

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

fn command(connect_string: &str) -> tokio::process::Command {
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
    let command = zk_testkit::java::source_program(&classpath, &source).expect("java");
    let mut command = tokio::process::Command::from(command);
    command
        .arg(connect_string)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs a Curator producer to its end: `count` items `<tag>-<i>` into the queue of `kind` at
/// `path` (see `CuratorQueue.java` for the ids, priorities and delays).
pub async fn produce(connect_string: &str, kind: &str, path: &str, count: usize, tag: &str) {
    let mut command = command(connect_string);
    command.args(["produce", kind, path, &count.to_string(), tag]);
    let mut child = command.spawn().expect("start java CuratorQueue produce");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(PRODUCE_LIMIT, lines.next_line())
        .await
        .expect("the Curator producer's end within its bound")
        .expect("read the Curator producer");
    assert_eq!(line.as_deref(), Some(format!("produced {count}").as_str()));
    let status = child.wait().await.expect("wait for the producer");
    assert!(status.success(), "Curator producer: {status}");
}

/// Runs Curator's `DistributedIdQueue.remove(id)` on the queue at `path`; returns its count.
pub async fn remove(connect_string: &str, path: &str, id: &str) -> usize {
    let mut command = command(connect_string);
    command.args(["remove", path, id]);
    let mut child = command.spawn().expect("start java CuratorQueue remove");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let line = tokio::time::timeout(LINE_LIMIT, lines.next_line())
        .await
        .expect("the Curator remove within its bound")
        .expect("read the Curator process")
        .expect("a line");
    let _ = child.wait().await;
    line.strip_prefix("removed ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected reply: {line}"))
}

/// A running Curator consumer. Killed (kill -9) when dropped.
pub struct CuratorConsumer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
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
        let mut child = command.spawn().expect("start java CuratorQueue consume");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut consumer = Self {
            child,
            stdin,
            lines,
        };
        let line = consumer.line().await;
        assert_eq!(line.as_deref(), Some("ready"));
        consumer
    }

    async fn line(&mut self) -> Option<String> {
        tokio::time::timeout(LINE_LIMIT, self.lines.next_line())
            .await
            .expect("a line from the Curator consumer within its bound")
            .expect("read the Curator consumer")
    }

    /// The consumer's next line, within [`LINE_LIMIT`]; panics if it exited.
    pub async fn next(&mut self) -> Consumed {
        let line = self.line().await.expect("the Curator consumer exited");
        Self::parse(&line)
    }

    /// The consumer's next line, however long it takes (for a caller that bounds the whole
    /// scenario: a consumer with nothing left to take prints nothing); panics if it exited.
    pub async fn next_unbounded(&mut self) -> Consumed {
        let line = self
            .lines
            .next_line()
            .await
            .expect("read the Curator consumer")
            .expect("the Curator consumer exited");
        Self::parse(&line)
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
    pub async fn kill9(mut self) {
        self.child.start_kill().expect("kill -9");
        let _ = self.child.wait().await;
    }

    /// Tells it to close its queue and session, and waits for its end.
    pub async fn quit(mut self) {
        let _ = self.stdin.write_all(b"quit\n").await;
        let _ = self.stdin.flush().await;
        let status = tokio::time::timeout(LINE_LIMIT, self.child.wait()).await;
        assert!(
            matches!(status, Ok(Ok(s)) if s.success()),
            "Curator consumer exit: {status:?}"
        );
    }
}
