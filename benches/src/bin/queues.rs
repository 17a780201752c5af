//! Queues in Curator's layout (`zk_recipes::curator_queue::DistributedQueue`) against Apache
//! Curator 5.4's `DistributedQueue`, in the same run, on the same server: put and take
//! throughput, in default and lock-safe mode.
//!
//! `cargo run --release -p zk-benches --bin queues -- [--items N (2000)] [--warmup N (200)]
//! [--connect HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, forceSync off) and stops it at
//! the end. For each mode (default: delete then process; lock-safe: a lock path, the item
//! deleted once processed), each side, ours then Curator's (a JVM running
//! `crates/zk-recipes/tests/curator/CuratorQueue.java`, its `bench` command; Curator from
//! `scripts/install-curator.sh`), one after the other, on a queue of its own:
//!
//! - a warm-up round of `--warmup` items (the JVM's JIT, the connections' first buffers);
//! - `put`: `--items` puts by one producer, one after the other (each awaited; Curator's
//!   `putInBackground(false)`);
//! - `take`: one consumer takes them all (ours: `Consumer::next`, then `Message::complete` in
//!   lock-safe mode; Curator's: its consumer loop, from `start()` to the last
//!   `consumeMessage`).
//!
//! Prints items per second for each, and ours over Curator's. Exits non-zero if an item is
//! missing or a step takes more than 10 minutes.

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_benches::BoxError;
use zk_benches::args::positive;
use zk_proto::Client;
use zk_recipes::curator_queue::DistributedQueue;

/// The base path of both sides.
const BASE: &str = "/rzk-bench-queues";
/// Bound of one step.
const LIMIT: Duration = Duration::from_secs(600);

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "queues",
    override_usage = "cargo run --release -p zk-benches --bin queues -- [options]",
    about = "Curator-layout queues against Curator's DistributedQueue, in the same run: put\
             \nand take throughput, default and lock-safe.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// timed items per step
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = positive::<usize>)]
    items: usize,
    /// items of the warm-up round
    #[arg(long, value_name = "N", default_value_t = 200)]
    warmup: usize,
    /// measure against that server or ensemble
    /// (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT[,...]", verbatim_doc_comment)]
    connect: Option<String>,
    /// one JSON object per line on stdout
    #[arg(long)]
    json: bool,
}

/// The durations of one side's round.
#[derive(Debug, Clone, Copy)]
struct Round {
    put: Duration,
    take: Duration,
}

/// Our round: `n` puts, then one consumer takes them all.
async fn our_round(
    client: &Client,
    path: &str,
    lock: Option<&str>,
    n: usize,
) -> Result<Round, BoxError> {
    let queue = match lock {
        Some(lock) => DistributedQueue::with_lock_path(client, path, lock),
        None => DistributedQueue::new(client, path),
    };
    let start = Instant::now();
    for i in 0..n {
        queue.put(format!("b-{i}")).await?;
    }
    let put = start.elapsed();
    let mut consumer = queue.consumer();
    let start = Instant::now();
    for _ in 0..n {
        let message = consumer.next(Some(LIMIT)).await?;
        if message.items().map_or(true, |items| items.len() != 1) {
            return Err(format!("a malformed item: {}", message.name()).into());
        }
        message.complete().await?;
    }
    let take = start.elapsed();
    if consumer.try_next().await?.is_some() {
        return Err("an item more than was put".into());
    }
    Ok(Round { put, take })
}

async fn ours(connect: &str, lock: bool, options: &Options) -> Result<Round, BoxError> {
    let client = Client::connect(connect).await?;
    let lock_path = |name: &str| lock.then(|| format!("{BASE}/rzk-locks-{name}"));
    let mode = if lock { "safe" } else { "plain" };
    if options.warmup > 0 {
        let path = format!("{BASE}/rzk-{mode}-warmup");
        our_round(
            &client,
            &path,
            lock_path("warmup").as_deref(),
            options.warmup,
        )
        .await?;
    }
    let path = format!("{BASE}/rzk-{mode}");
    let round = our_round(&client, &path, lock_path(mode).as_deref(), options.items).await?;
    let _ = client.close().await;
    Ok(round)
}

/// Curator's side: the `bench` command of `CuratorQueue.java`.
async fn curator(connect: &str, lock: bool, options: &Options) -> Result<Round, BoxError> {
    let classpath = zk_testkit::java::curator_classpath()
        .ok_or("Apache Curator is not installed: run scripts/install-curator.sh")?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/zk-recipes/tests/curator/CuratorQueue.java");
    let mut command =
        tokio::process::Command::from(zk_testkit::java::source_program(&classpath, &source)?);
    let mode = if lock { "safe" } else { "plain" };
    let lock_path = if lock {
        format!("{BASE}/curator-locks")
    } else {
        "-".to_owned()
    };
    command
        .arg(connect)
        .arg("bench")
        .arg(format!("{BASE}/curator-{mode}"))
        .arg(options.items.to_string())
        .arg(options.warmup.to_string())
        .arg(lock_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let answer = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .map_err(|_| "no answer from the Curator process")??
        .ok_or("the Curator process exited")?;
    let _ = child.wait().await;
    let parse = |key: &str| -> Result<Duration, BoxError> {
        let ns = answer
            .split(' ')
            .find_map(|part| part.strip_prefix(key))
            .ok_or_else(|| format!("Curator answered {answer:?}"))?;
        Ok(Duration::from_nanos(ns.parse()?))
    };
    Ok(Round {
        put: parse("put_ns=")?,
        take: parse("take_ns=")?,
    })
}

/// Items per second.
fn rate(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64()
}

fn print(mode: &str, rzk: Round, curator: Round, options: &Options) {
    let n = options.items;
    for (metric, ours, theirs) in [
        ("put", rzk.put, curator.put),
        ("take", rzk.take, curator.take),
    ] {
        let (ours, theirs) = (rate(n, ours), rate(n, theirs));
        if options.json {
            for (client, per_s) in [("rzk", ours), ("curator", theirs)] {
                println!(
                    "{}",
                    zk_benches::json::to_line(&json!({
                        "client": client, "metric": metric, "mode": mode, "n": n,
                        "items_per_s": per_s,
                    }))
                );
            }
            println!(
                "{}",
                zk_benches::json::to_line(&json!({
                    "metric": format!("{metric} rzk/curator"), "mode": mode,
                    "throughput_ratio": ours / theirs,
                }))
            );
        } else {
            println!(
                "{metric:>4} ({mode}, {n} items): rzk {ours:.0}/s, Curator {theirs:.0}/s; \
                 rzk/Curator {:.2}",
                ours / theirs
            );
        }
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    let both = async |connect: &str| {
        let mut rounds = Vec::new();
        for (mode, lock) in [("default", false), ("lock-safe", true)] {
            let rzk = ours(connect, lock, &options).await?;
            let curator = curator(connect, lock, &options).await?;
            rounds.push((mode, rzk, curator));
        }
        Ok(rounds)
    };
    match zk_benches::on_unsynced_server("queues", options.connect.as_deref(), both) {
        Ok(rounds) => {
            for (mode, rzk, curator) in rounds {
                print(mode, rzk, curator, &options);
            }
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

#[cfg(test)]
mod command_line {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_is_consistent() {
        super::Options::command().debug_assert();
    }

    #[test]
    fn rates_are_items_per_second() {
        assert_eq!(
            super::rate(500, std::time::Duration::from_millis(250)),
            2000.0
        );
    }
}
