//! Service discovery (`zk-discovery`) against Apache Curator 5.4's `curator-x-discovery`, in the
//! same run, on the same server: query latency and change latency.
//!
//! `cargo run --release -p zk-benches --bin discovery -- [--instances N (100)] [--queries N
//! (500)] [--changes N (500)] [--warmup N (100)] [--connect HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, forceSync off) and stops it at
//! the end. Each side, ours then Curator's (a JVM running
//! `crates/zk-discovery/tests/curator/CuratorDiscovery.java`, its `bench` command; Curator
//! from `scripts/install-curator.sh`), one after the other:
//!
//! - registers `--instances` instances of one service (its own service name) on one session;
//! - `query`: `--queries` calls of `query_for_instances` / `queryForInstances`, one after the
//!   other (one listing, then every instance's data: pipelined here, one read after the other
//!   in Curator);
//! - `change`: `--changes` updates of one instance, each timed from the update call until a
//!   service cache on a second session holds it (our `ServiceEvent::Updated`; Curator's
//!   `ServiceCacheListener.cacheChanged` with the new payload).
//!
//! The first `--warmup` samples of each kind are dropped on both sides (the JVM's JIT, the
//! connections' first buffers). Prints the median and the 99th percentile of each, and our
//! median over Curator's. Exits non-zero if a query misses an instance or a change is not
//! seen within 30 s.

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use zk_benches::args::positive;
use zk_benches::{BoxError, quantile};
use zk_discovery::{ServiceDiscovery, ServiceEvent, ServiceInstance};
use zk_proto::Client;

/// The base path of both sides.
const BASE: &str = "/rzk-bench-discovery";
/// How long one change may take to reach the cache, and the Curator process one command.
const LIMIT: Duration = Duration::from_secs(30);

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "discovery",
    override_usage = "cargo run --release -p zk-benches --bin discovery -- [options]",
    about = "Service discovery against Curator's curator-x-discovery, in the same run: query\
             \nlatency and change latency.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// instances of the service
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = positive::<usize>)]
    instances: usize,
    /// timed queries (after the warm-up)
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = positive::<usize>)]
    queries: usize,
    /// timed changes (after the warm-up)
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = positive::<usize>)]
    changes: usize,
    /// samples of each kind dropped first
    #[arg(long, value_name = "N", default_value_t = 100)]
    warmup: usize,
    /// measure against that server or ensemble
    /// (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT[,...]", verbatim_doc_comment)]
    connect: Option<String>,
    /// one JSON object per line on stdout
    #[arg(long)]
    json: bool,
}

/// The samples of one side, in microseconds, warm-up dropped.
#[derive(Debug)]
struct Side {
    query: Vec<f64>,
    change: Vec<f64>,
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Our side: register, query, change.
async fn ours(connect: &str, options: &Options) -> Result<Side, BoxError> {
    let client = Client::connect(connect).await?;
    let watcher = Client::connect(connect).await?;
    let name = "rzk";
    let discovery = ServiceDiscovery::new(&client, BASE);
    let mut registrations = Vec::new();
    for i in 0..options.instances {
        let instance = ServiceInstance::builder(name)
            .id(&format!("bench-{i}"))
            .address("10.9.0.1")
            .port(u16::try_from(10_000 + i).unwrap_or(u16::MAX))
            .payload(json!({"zone": "z0"}))
            .build();
        registrations.push(discovery.register(&instance, Some(LIMIT)).await?);
    }
    let cache = ServiceDiscovery::new(&watcher, BASE).cache(name).start();
    let mut events = cache.events();
    cache.wait_initialized(Some(LIMIT)).await?;

    let mut query = Vec::new();
    for _ in 0..options.warmup + options.queries {
        let start = Instant::now();
        let found = discovery.query_for_instances(name).await?;
        query.push(micros(start.elapsed()));
        if found.instances.len() != options.instances {
            return Err(format!(
                "a query found {} of {} instances",
                found.instances.len(),
                options.instances
            )
            .into());
        }
    }

    let first = registrations
        .first()
        .ok_or("no instance registered")?
        .instance();
    let mut change = Vec::new();
    for c in 1..=options.warmup + options.changes {
        let zone = format!("z{c}");
        let mut updated = first.clone();
        updated.payload = Some(json!({ "zone": zone }));
        let start = Instant::now();
        registrations[0].update(&updated).await?;
        tokio::time::timeout(LIMIT, async {
            loop {
                if let ServiceEvent::Updated { new, .. } = events.next().await?
                    && new.id == first.id
                    && new.payload.as_ref().map(|p| &p["zone"]) == Some(&json!(zone))
                {
                    return Ok::<(), BoxError>(());
                }
            }
        })
        .await
        .map_err(|_| format!("the cache did not see change {c} within {LIMIT:?}"))??;
        change.push(micros(start.elapsed()));
    }
    drop(cache);
    for registration in registrations {
        registration.unregister().await?;
    }
    let _ = watcher.close().await;
    let _ = client.close().await;
    Ok(Side {
        query: query.split_off(options.warmup.min(query.len())),
        change: change.split_off(options.warmup.min(change.len())),
    })
}

/// Curator's side: the `bench` command of `CuratorDiscovery.java`.
async fn curator(connect: &str, options: &Options) -> Result<Side, BoxError> {
    let classpath = zk_testkit::java::curator_classpath()
        .ok_or("Apache Curator is not installed: run scripts/install-curator.sh")?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/zk-discovery/tests/curator/CuratorDiscovery.java");
    let mut command =
        tokio::process::Command::from(zk_testkit::java::source_program(&classpath, &source)?);
    command
        .arg(connect)
        .arg(BASE)
        .arg("10000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let mut reply = async |limit: Duration| -> Result<String, BoxError> {
        let line = tokio::time::timeout(limit, lines.next_line())
            .await
            .map_err(|_| "no reply from the Curator process")??;
        line.ok_or_else(|| "the Curator process exited".into())
    };
    if reply(LIMIT).await? != "ready" {
        return Err("the Curator process did not start".into());
    }
    let bench = format!(
        "bench curator {} {} {}\n",
        options.instances,
        options.warmup + options.queries,
        options.warmup + options.changes
    );
    stdin.write_all(bench.as_bytes()).await?;
    stdin.flush().await?;
    let answer = reply(LIMIT * 10).await?;
    stdin.write_all(b"quit\n").await?;
    stdin.flush().await?;
    let _ = reply(LIMIT).await;
    let _ = child.wait().await;
    let parse = |key: &str| -> Result<Vec<f64>, BoxError> {
        let list = answer
            .split(' ')
            .find_map(|part| part.strip_prefix(key))
            .ok_or_else(|| format!("Curator answered {answer:?}"))?;
        list.split(',')
            .map(|v| v.parse::<f64>().map_err(|e| format!("{v:?}: {e}").into()))
            .collect()
    };
    let mut query = parse("query=")?;
    let mut change = parse("change=")?;
    Ok(Side {
        query: query.split_off(options.warmup.min(query.len())),
        change: change.split_off(options.warmup.min(change.len())),
    })
}

fn print(rzk: &Side, curator: &Side, options: &Options) {
    let rows = [
        ("query", &rzk.query, &curator.query),
        ("change", &rzk.change, &curator.change),
    ];
    for (metric, ours, theirs) in rows {
        let (p50, p99) = (quantile(ours, 0.5), quantile(ours, 0.99));
        let (c50, c99) = (quantile(theirs, 0.5), quantile(theirs, 0.99));
        if options.json {
            for (client, n, p50, p99) in [
                ("rzk", ours.len(), p50, p99),
                ("curator", theirs.len(), c50, c99),
            ] {
                println!(
                    "{}",
                    zk_benches::json::to_line(&json!({
                        "client": client, "metric": metric, "instances": options.instances,
                        "n": n, "p50_us": p50, "p99_us": p99,
                    }))
                );
            }
            println!(
                "{}",
                zk_benches::json::to_line(&json!({
                    "metric": format!("{metric} rzk/curator"), "p50_ratio": p50 / c50,
                }))
            );
        } else {
            println!(
                "{metric:>6} ({} instances): rzk p50 {p50:.0} us, p99 {p99:.0} us; Curator p50 \
                 {c50:.0} us, p99 {c99:.0} us; rzk/Curator p50 {:.2}",
                options.instances,
                p50 / c50
            );
        }
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    let both = async |connect: &str| {
        let rzk = ours(connect, &options).await?;
        let curator = curator(connect, &options).await?;
        Ok((rzk, curator))
    };
    match zk_benches::on_unsynced_server("discovery", options.connect.as_deref(), both) {
        Ok((rzk, curator)) => {
            print(&rzk, &curator, &options);
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
}
