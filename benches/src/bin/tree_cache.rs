//! The tree cache: its pipelined initial load against one round trip per node, its resident
//! memory per cached node, and how fast it follows a steady stream of writes.
//!
//! `cargo run --release -p zk-benches --bin tree_cache -- [--nodes N (100000)] [--fanout N
//! (100)] [--writes N (20000)] [--sample N (2000)] [--in-flight N (512)] [--read-batch N
//! (64)] [--create-batch N (1000)] [--connect HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, forceSync off, the full JIT and
//! the small-machine I/O settings of `lock_latency`, a heap of 2 KiB per node and at least
//! 1 GiB) and stops it at the end, with the tree. The tree is `/rzk-tree-<pid>/g<i>/n<j>`
//! (`--fanout` children per group, 32 bytes of data each), written by a child process of this
//! binary so that the writes' buffers are not in this process when its memory is read: the
//! groups, then their children, in `multi` transactions of `--create-batch` creates, four in
//! flight (`--create-batch 1`: one create per node, 512 in flight). With `--connect` the tree
//! is deleted at the end (in `multi` transactions too). Then:
//!
//! - `initial_load`: a [`TreeCache`] of the whole tree, started and waited for
//!   (`initialized`); resident memory (`VmRSS` of `/proc/self/status`) before and after, per
//!   cached node (the cache and its share of the client's buffers, as the process sees them).
//!   `--read-batch 1` loads with one getData per node instead of batches of sibling nodes.
//! - `sequential_get`: `--sample` getData calls one after the other: the round trip of a load
//!   that reads one node at a time, extrapolated to the whole tree; the ratio of the two is
//!   `sequential_load/pipelined_load`.
//! - `follow_writes`: two other sessions set the data of random nodes (`--writes` in all, 64
//!   in flight each); the time until the cache holds the last write (`TreeCache::sync`),
//!   writes mirrored per second, and the events delivered.
//!
//! Exits non-zero if the cache does not hold exactly the tree, or a write failed.

use std::collections::VecDeque;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::json;
use zk_benches::args::positive;
use zk_benches::latency::cpu_now;
use zk_benches::scale::{process_cpu, tuned_server};
use zk_benches::{BoxError, Setup};
use zk_proto::{Client, CreateOptions, MultiOperation};
use zk_recipes::cache::{CacheEvent, TreeCache};

/// Data of every node.
const DATA: [u8; 32] = [b'x'; 32];
/// Writes in flight per writer session.
const WRITE_WINDOW: usize = 64;
/// Creates in flight while the child process writes the tree one create per node.
const CREATE_WINDOW: usize = 512;
/// `multi` transactions in flight while the tree is written or deleted in batches.
const MULTI_WINDOW: usize = 4;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "tree_cache",
    override_usage = "cargo run --release -p zk-benches --bin tree_cache -- [options]",
    about = "The tree cache: its pipelined initial load against one round trip per node, its\
             \nresident memory per cached node, and how fast it follows a steady stream of writes.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// nodes in the tree
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = positive::<usize>)]
    nodes: usize,
    /// children per group
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = positive::<usize>)]
    fanout: usize,
    /// writes that the cache follows
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = positive::<usize>)]
    writes: usize,
    /// sequential getData calls (sequential_get)
    #[arg(long, value_name = "N", default_value_t = 2_000, value_parser = positive::<usize>)]
    sample: usize,
    /// the cache's reads in flight in its initial load
    #[arg(long, value_name = "N", default_value_t = 512, value_parser = positive::<usize>)]
    in_flight: usize,
    /// sibling nodes read in one batch during the initial load
    /// (1: one getData per node)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 64,
        value_parser = positive::<usize>,
        verbatim_doc_comment
    )]
    read_batch: usize,
    /// creates per multi transaction while writing the tree
    /// (1: one create per node)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1_000,
        value_parser = positive::<usize>,
        verbatim_doc_comment
    )]
    create_batch: usize,
    /// measure against that server or ensemble
    /// (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT[,...]", verbatim_doc_comment)]
    connect: Option<String>,
    /// one JSON object on stdout
    #[arg(long)]
    json: bool,
    /// Internal: write the tree at this root and exit (the child process).
    #[arg(long, value_name = "ROOT", hide = true)]
    populate: Option<String>,
}

/// `VmRSS` of `/proc/self/status` in bytes, if readable.
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The paths of the tree below `root`: the groups, then their children.
fn tree_paths(root: &str, nodes: usize, fanout: usize) -> Vec<String> {
    let groups = nodes.div_ceil(fanout + 1).max(1);
    let mut paths: Vec<String> = (0..groups).map(|g| format!("{root}/g{g}")).collect();
    let mut n = 0;
    while paths.len() < nodes {
        paths.push(format!("{root}/g{}/n{}", n % groups, n / groups));
        n += 1;
    }
    paths
}

/// Runs `ops` in `multi` transactions of `batch`, [`MULTI_WINDOW`] in flight; the first
/// failure, if any.
async fn multis(client: &Client, ops: Vec<MultiOperation>, batch: usize) -> Result<(), BoxError> {
    let mut window = VecDeque::new();
    let mut ops = ops.into_iter().peekable();
    while ops.peek().is_some() || !window.is_empty() {
        while ops.peek().is_some() && window.len() < MULTI_WINDOW {
            window.push_back(client.multi(ops.by_ref().take(batch).collect()));
        }
        if let Some(call) = window.pop_front() {
            for item in call.await? {
                if let Some(e) = item.error() {
                    return Err(format!("a multi failed: {e}").into());
                }
            }
        }
    }
    Ok(())
}

/// The child process: writes the tree, pipelined (the groups come first in `tree_paths`).
async fn populate(connect: &str, root: &str, options: &Options) -> Result<(), BoxError> {
    let client = Client::builder()
        .request_timeout(Some(Duration::from_secs(300)))
        .connect(connect)
        .await?;
    let persistent = CreateOptions::persistent();
    client.create(root, "", &persistent).await?;
    let paths = tree_paths(root, options.nodes, options.fanout);
    if options.create_batch > 1 {
        let groups = options
            .nodes
            .div_ceil(options.fanout + 1)
            .max(1)
            .min(paths.len());
        let creates = |paths: &[String]| -> Vec<MultiOperation> {
            paths
                .iter()
                .map(|p| MultiOperation::create(p.as_str(), &DATA[..], &persistent))
                .collect()
        };
        // The groups are all created before their children.
        multis(&client, creates(&paths[..groups]), options.create_batch).await?;
        multis(&client, creates(&paths[groups..]), options.create_batch).await?;
    } else {
        for chunk in paths.chunks(CREATE_WINDOW) {
            let calls: Vec<_> = chunk
                .iter()
                .map(|p| client.create(p, &DATA[..], &persistent))
                .collect();
            for call in calls {
                call.await?;
            }
        }
    }
    client.close().await?;
    Ok(())
}

struct Report {
    nodes: usize,
    load: Duration,
    /// This process's CPU time (user + system) during the load.
    load_cpu: Duration,
    /// The local server's, when it is local.
    load_server_cpu: Option<Duration>,
    rss_before: Option<u64>,
    rss_after: Option<u64>,
    sequential_rtt: Duration,
    sample: usize,
    writes: usize,
    write_elapsed: Duration,
    mirrored: Duration,
    events: usize,
}

async fn run(
    options: &Options,
    connect: &str,
    server_pid: Option<u32>,
) -> Result<Report, BoxError> {
    let root = format!("/rzk-tree-{}", std::process::id());
    let status = Command::new(std::env::current_exe()?)
        .args(["--connect", connect, "--populate", &root])
        .args(["--nodes", &options.nodes.to_string()])
        .args(["--fanout", &options.fanout.to_string()])
        .args(["--create-batch", &options.create_batch.to_string()])
        .status()?;
    if !status.success() {
        return Err(format!("writing the tree failed: {status}").into());
    }
    let client = Client::builder()
        .session_timeout(Duration::from_secs(30))
        .request_timeout(Some(Duration::from_secs(120)))
        .connect(connect)
        .await?;

    // The pipelined load.
    let rss_before = rss();
    let server_cpu = || server_pid.and_then(process_cpu);
    let server_cpu_before = server_cpu();
    let cpu_before = cpu_now();
    let started = Instant::now();
    let cache = TreeCache::builder(&client, &root)
        .max_in_flight(options.in_flight)
        .read_batch(options.read_batch)
        .start();
    cache
        .wait_initialized(Some(Duration::from_secs(600)))
        .await?;
    let load = started.elapsed();
    let load_cpu = cpu_now().saturating_sub(cpu_before);
    let load_server_cpu = server_cpu()
        .zip(server_cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let rss_after = rss();
    let cached = cache.snapshot().len();
    if cached != options.nodes + 1 {
        return Err(format!("the cache holds {cached} nodes, not {}", options.nodes + 1).into());
    }

    // One round trip per node: sequential reads of a sample.
    let paths = tree_paths(&root, options.nodes, options.fanout);
    let sample: Vec<&String> = paths
        .iter()
        .step_by((paths.len() / options.sample).max(1))
        .take(options.sample)
        .collect();
    let started = Instant::now();
    for path in &sample {
        client.get_data(path).await?;
    }
    let sequential_rtt = started.elapsed() / sample.len().max(1) as u32;

    // Following writes from two other sessions.
    let writers = [
        Client::connect(connect).await?,
        Client::connect(connect).await?,
    ];
    let mut events = cache.events();
    // Counts the updates delivered, until the cache is dropped.
    let counter = tokio::spawn(async move {
        let mut updates = 0;
        while let Ok(event) = events.next().await {
            updates += usize::from(matches!(event, CacheEvent::Updated { .. }));
        }
        updates
    });
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (w, writer) in writers.iter().enumerate() {
        let writer = writer.clone();
        let share = options.writes / 2 + (w == 0) as usize * (options.writes % 2);
        let mine: Vec<String> = (0..share)
            .map(|k| paths[(k * 7919 + w * 104_729) % paths.len()].clone())
            .collect();
        tasks.push(tokio::spawn(async move {
            for chunk in mine.chunks(WRITE_WINDOW) {
                let calls: Vec<_> = chunk
                    .iter()
                    .map(|p| writer.set_data(p, &DATA[..16], None))
                    .collect();
                for call in calls {
                    call.await?;
                }
            }
            Ok::<(), zk_proto::Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let write_elapsed = started.elapsed();
    cache.sync(Some(Duration::from_secs(120))).await?;
    let mirrored = started.elapsed();
    drop(cache);
    let delivered = counter.await?;

    // Clean up an existing server's tree: the groups' children, then the groups, then the
    // root. A local server is stopped with its data.
    if options.connect.is_some() {
        let groups = options
            .nodes
            .div_ceil(options.fanout + 1)
            .max(1)
            .min(paths.len());
        let deletes = |paths: &[String]| -> Vec<MultiOperation> {
            paths
                .iter()
                .map(|p| MultiOperation::delete(p.as_str(), None))
                .collect()
        };
        let batch = options.create_batch;
        let _ = multis(&client, deletes(&paths[groups..]), batch).await;
        let _ = multis(&client, deletes(&paths[..groups]), batch).await;
        let _ = client.delete(&root, None).await;
    }
    for c in writers.iter().chain([&client]) {
        let _ = c.close().await;
    }
    Ok(Report {
        nodes: cached,
        load,
        load_cpu,
        load_server_cpu,
        rss_before,
        rss_after,
        sequential_rtt,
        sample: sample.len(),
        writes: options.writes,
        write_elapsed,
        mirrored,
        events: delivered,
    })
}

fn print(report: &Report, options: &Options) {
    let secs = |d: Duration| d.as_secs_f64();
    let per_node = report
        .rss_after
        .zip(report.rss_before)
        .map(|(a, b)| a.saturating_sub(b) as f64 / report.nodes as f64);
    let sequential_load = report.sequential_rtt.as_secs_f64() * report.nodes as f64;
    let ratio = sequential_load / secs(report.load).max(1e-9);
    let mirrored_per_s = report.writes as f64 / secs(report.mirrored).max(1e-9);
    let written_per_s = report.writes as f64 / secs(report.write_elapsed).max(1e-9);
    let lines = [
        json!({"client": "rzk", "metric": "initial_load", "n": report.nodes,
               "in_flight": options.in_flight, "read_batch": options.read_batch,
               "seconds": secs(report.load),
               "nodes_per_s": report.nodes as f64 / secs(report.load).max(1e-9),
               "client_cpu_us_per_node": secs(report.load_cpu) * 1e6 / report.nodes as f64,
               "server_cpu_us_per_node": report.load_server_cpu
                   .map(|c| secs(c) * 1e6 / report.nodes as f64),
               "rss_growth_bytes": report.rss_after.zip(report.rss_before).map(|(a, b)| a.saturating_sub(b)),
               "rss_bytes_per_node": per_node}),
        json!({"client": "rzk", "metric": "sequential_get", "n": report.sample,
               "rtt_us": report.sequential_rtt.as_secs_f64() * 1e6,
               "extrapolated_load_seconds": sequential_load}),
        json!({"client": "rzk", "metric": "sequential_load/pipelined_load", "ratio": ratio}),
        json!({"client": "rzk", "metric": "follow_writes", "n": report.writes,
               "writes_per_s": written_per_s, "mirrored_per_s": mirrored_per_s,
               "lag_after_last_write_ms": secs(report.mirrored.saturating_sub(report.write_elapsed)) * 1e3,
               "updated_events": report.events}),
    ];
    if options.json {
        for line in &lines {
            println!("{}", zk_benches::json::to_line(line));
        }
        return;
    }
    println!(
        "initial load: {} nodes in {:.2} s ({:.0} nodes/s, {} in flight, up to {} per read, \
         CPU per node: client {:.1} us, server {}); RSS {} bytes/node",
        report.nodes,
        secs(report.load),
        report.nodes as f64 / secs(report.load).max(1e-9),
        options.in_flight,
        options.read_batch,
        secs(report.load_cpu) * 1e6 / report.nodes as f64,
        report
            .load_server_cpu
            .map_or("unknown".to_owned(), |c| format!(
                "{:.1} us",
                secs(c) * 1e6 / report.nodes as f64
            )),
        per_node.map_or("unknown".to_owned(), |b| format!("{b:.0}"))
    );
    println!(
        "one round trip per node: {:.0} us/getData over {} reads -> {:.2} s for the tree; \
         pipelined is {ratio:.1}x faster",
        report.sequential_rtt.as_secs_f64() * 1e6,
        report.sample,
        sequential_load
    );
    println!(
        "following writes: {} writes at {written_per_s:.0}/s, mirrored at {mirrored_per_s:.0}/s \
         ({:.0} ms behind the last write); {} Updated events",
        report.writes,
        secs(report.mirrored.saturating_sub(report.write_elapsed)) * 1e3,
        report.events
    );
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::parse();
    let local = || {
        // The server keeps every node (and serves the load's reads): 2 KiB per node is
        // room enough for the 1,000,000-node run.
        let heap_mb = u32::try_from(options.nodes / 1_000 * 2)
            .unwrap_or(u32::MAX)
            .max(1_024);
        tuned_server("tree_cache", "forceSync off", heap_mb).force_sync(false)
    };
    let setup = match Setup::start(
        "tree_cache",
        options.connect.as_deref(),
        local,
        zk_benches::runtime,
    ) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    if let Some(root) = &options.populate {
        return match setup.block_on(populate(&setup.connect, root, &options)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(code) => code,
        };
    }
    let report = match setup.block_on(run(&options, &setup.connect, setup.server_pid())) {
        Ok(report) => report,
        Err(code) => return code,
    };
    drop(setup);
    print(&report, &options);
    ExitCode::SUCCESS
}

#[cfg(test)]
mod command_line {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_is_consistent() {
        super::Options::command().debug_assert();
    }
}
