//! Leader selector failover (`zk_recipes::election::LeaderSelector`) against Apache Curator
//! 5.4's `LeaderSelector`, in the same run, on the same server.
//!
//! `cargo run --release -p zk-benches --bin selector -- [--tenures N (500)] [--warmup N (100)]
//! [--connect HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, forceSync off) and stops it at
//! the end. Each side, ours then Curator's (a JVM running
//! `crates/zk-recipes/tests/curator/CuratorSelector.java`, its `bench` command; Curator from
//! `scripts/install-curator.sh`), one after the other, runs two candidates, each on its own
//! session, that take turns (automatic requeue) for `--warmup` + `--tenures` tenures; a
//! tenure returns at once. The failover is the time from the end of a tenure (its future /
//! `takeLeadership` returning) to the start of the next (the other candidate's closure /
//! `takeLeadership` called): the leader's delete of its mutex node, the notification of the
//! next in line, and whatever each library does in between. The first `--warmup` samples are
//! dropped on both sides. Prints the median and the 99th percentile of each side, and our
//! median over Curator's.

use std::path::Path;
use std::process::{ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;
use zk_benches::args::positive;
use zk_benches::{BoxError, quantile};
use zk_proto::Client;
use zk_recipes::election::LeaderSelector;

/// The election paths of the two sides.
const PATH: &str = "/rzk-bench-selector";
/// How long one side may take.
const LIMIT: Duration = Duration::from_secs(300);

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "selector",
    override_usage = "cargo run --release -p zk-benches --bin selector -- [options]",
    about = "Leader selector failover against Curator's LeaderSelector, in the same run.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// timed tenures (after the warm-up)
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = positive::<usize>)]
    tenures: usize,
    /// samples dropped first
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

/// What the candidates of our side share: the end of the last tenure, the samples (µs), the
/// tenures so far.
#[derive(Default)]
struct Record {
    last_end: Option<Instant>,
    samples: Vec<f64>,
    tenures: usize,
}

/// Our side: two selectors taking turns.
async fn ours(connect: &str, options: &Options) -> Result<Vec<f64>, BoxError> {
    let total = options.warmup + options.tenures + 1;
    let record = Arc::new(Mutex::new(Record::default()));
    let done = Arc::new(Notify::new());
    let mut selectors = Vec::new();
    let mut clients = Vec::new();
    for i in 0..2 {
        let client = Client::connect(connect).await?;
        let (record, done) = (record.clone(), done.clone());
        let selector = LeaderSelector::builder(&client, &format!("{PATH}/rzk"), move |_tenure| {
            let start = Instant::now();
            if let Ok(mut record) = record.lock() {
                if let Some(end) = record.last_end {
                    record
                        .samples
                        .push(start.duration_since(end).as_secs_f64() * 1e6);
                }
                record.tenures += 1;
                if record.tenures >= total {
                    done.notify_one();
                }
            }
            let record = record.clone();
            async move {
                if let Ok(mut record) = record.lock() {
                    record.last_end = Some(Instant::now());
                }
            }
        })
        .id(format!("bench-{i}"))
        .start();
        selectors.push(selector);
        clients.push(client);
    }
    tokio::time::timeout(LIMIT, done.notified())
        .await
        .map_err(|_| "our side did not finish in time")?;
    for selector in selectors {
        selector.close().await?;
    }
    for client in clients {
        let _ = client.close().await;
    }
    let mut samples = record
        .lock()
        .map(|r| r.samples.clone())
        .map_err(|_| "poisoned")?;
    Ok(samples.split_off(options.warmup.min(samples.len())))
}

/// Curator's side: the `bench` command of `CuratorSelector.java`.
async fn curator(connect: &str, options: &Options) -> Result<Vec<f64>, BoxError> {
    let classpath = zk_testkit::java::curator_classpath()
        .ok_or("Apache Curator is not installed: run scripts/install-curator.sh")?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/zk-recipes/tests/curator/CuratorSelector.java");
    let mut command =
        tokio::process::Command::from(zk_testkit::java::source_program(&classpath, &source)?);
    command
        .arg("bench")
        .arg(connect)
        .arg(format!("{PATH}/curator"))
        .arg((options.warmup + options.tenures + 1).to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn()?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let answer = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .map_err(|_| "no answer from the Curator process")??
        .ok_or("the Curator process exited")?;
    let _ = child.wait().await;
    let list = answer
        .strip_prefix("failover=")
        .ok_or_else(|| format!("Curator answered {answer:?}"))?;
    let mut samples = list
        .split(',')
        .map(|v| v.parse::<f64>().map_err(|e| format!("{v:?}: {e}").into()))
        .collect::<Result<Vec<f64>, BoxError>>()?;
    Ok(samples.split_off(options.warmup.min(samples.len())))
}

fn print(ours: &[f64], theirs: &[f64], options: &Options) {
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
                    "client": client, "metric": "selector failover", "n": n,
                    "p50_us": p50, "p99_us": p99,
                }))
            );
        }
        println!(
            "{}",
            zk_benches::json::to_line(&json!({
                "metric": "selector failover rzk/curator", "p50_ratio": p50 / c50,
            }))
        );
    } else {
        println!(
            "selector failover ({} rzk, {} Curator samples): rzk p50 {p50:.0} us, p99 {p99:.0} \
             us; Curator p50 {c50:.0} us, p99 {c99:.0} us; rzk/Curator p50 {:.2}",
            ours.len(),
            theirs.len(),
            p50 / c50
        );
    }
}

fn main() -> ExitCode {
    let options = Options::parse();
    let both = async |connect: &str| {
        let rzk = ours(connect, &options).await?;
        let curator = curator(connect, &options).await?;
        Ok((rzk, curator))
    };
    match zk_benches::on_unsynced_server("selector", options.connect.as_deref(), both) {
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
