//! Where an idle session's memory goes: the heap each idle session keeps (bytes allocated and
//! not freed, counted by a counting global allocator) and the resident memory it adds, for a
//! bare TCP connection and for the client with each default feature on or off.
//!
//! `cargo run --release -p zk-benches --bin session_heap -- [--sessions N] [--connect HOST:PORT]
//! [--json]`
//!
//! Each configuration runs in a child process of its own (this program with `--only NAME`), so
//! that its resident memory starts from the same clean process. In each, `--sessions`
//! connections are opened, each makes one round trip (`getData /`, so that its buffers have
//! their working size and the configuration's own requests are answered), and then the heap
//! kept and the resident memory added are divided by the number of sessions. Without
//! `--connect` a local ZooKeeper is started (test kit, `maxClientCnxns=0`) and stopped at the
//! end. docs/performance.md quotes a run.
//!
//! This package builds zk-proto with `request-timing` (for the latency breakdown of
//! `lock_latency`); a client allocates its two histograms (16,008 bytes each) only once
//! `Client::request_timing` is called, which this program never does.

use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Parser as _;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use zk_benches::args::positive;
use zk_proto::{Client, ClientBuilder};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "session_heap",
    override_usage = "cargo run --release -p zk-benches --bin session_heap -- [options]",
    about = "Where an idle session's memory goes: heap kept and resident memory added per \
             session, for a bare connection and the client with each default feature on or off.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// sessions per configuration
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = positive::<usize>)]
    sessions: usize,
    /// measure against that server (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// one JSON object on stdout
    #[arg(long)]
    json: bool,
    /// run one configuration in this process and print its figures (used by the parent)
    #[arg(long, value_name = "NAME", hide = true)]
    only: Option<String>,
}

/// What an idle connection is made of, from a bare socket to the default client.
const CONFIGS: [(&str, &str); 5] = [
    ("tcp", "a bare tokio TcpStream, no ZooKeeper session"),
    (
        "minimal",
        "the client without following the ensemble (follow_ensemble(false))",
    ),
    (
        "default",
        "the default client: follows /zookeeper/config (a read and a watch)",
    ),
    (
        "default+quorum",
        "the default client holding the quorum check (quorum_check(true))",
    ),
    (
        "default+watch",
        "the default client with one data watch of its own",
    ),
];

/// Net heap in use (allocated and not freed) and allocations made so far.
fn heap() -> (i64, u64) {
    let stats = GLOBAL.stats();
    let live = stats.bytes_allocated as i64 - stats.bytes_deallocated as i64
        + stats.bytes_reallocated as i64;
    (live, (stats.allocations + stats.reallocations) as u64)
}

/// `VmRSS` of `/proc/self/status`, in bytes.
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn builder(config: &str) -> ClientBuilder {
    let builder = Client::builder().session_timeout(Duration::from_secs(30));
    match config {
        "minimal" => builder.follow_ensemble(false),
        "default+quorum" => builder.quorum_check(true),
        _ => builder,
    }
}

/// One configuration in this process: prints `heap_bytes allocs rss_bytes` per session.
async fn measure(config: &str, sessions: usize, connect: &str) -> Result<(), BoxError> {
    let (heap_before, allocs_before) = heap();
    let rss_before = rss();
    let mut sockets = Vec::new();
    let mut clients = Vec::new();
    let mut watches = Vec::new();
    for i in 0..sessions {
        if config == "tcp" {
            sockets.push(tokio::net::TcpStream::connect(connect).await?);
            continue;
        }
        let client = builder(config).connect(connect).await?;
        client.get_data("/").await?;
        if config == "default+watch" {
            let path = format!("/session-heap-{}-{i}", std::process::id());
            client
                .create(&path, "", &zk_proto::CreateOptions::ephemeral())
                .await?;
            watches.push(client.get_data_watch(&path).await?.2);
        }
        clients.push(client);
    }
    // A last round trip on every session: whatever a configuration asks for after connecting
    // (the configuration's read, its watch, the quorum check's sync) is answered by then.
    for client in &clients {
        client.get_data("/").await?;
    }
    let (heap_after, allocs_after) = heap();
    let rss_after = rss();
    let per = |delta: f64| delta / sessions as f64;
    println!(
        "{} {} {}",
        per((heap_after - heap_before) as f64),
        per(allocs_after.saturating_sub(allocs_before) as f64),
        rss_after
            .zip(rss_before)
            .map_or(-1.0, |(after, before)| per(after as f64 - before as f64)),
    );
    drop(watches);
    drop(clients);
    drop(sockets);
    Ok(())
}

/// Runs configuration `name` in a child process; its three figures per session.
fn child(options: &Options, name: &str, connect: &str) -> Result<[f64; 3], BoxError> {
    let output = Command::new(std::env::current_exe()?)
        .args(["--only", name, "--connect", connect])
        .args(["--sessions", &options.sessions.to_string()])
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "configuration {name}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let figures: Vec<f64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    figures
        .try_into()
        .map_err(|f| format!("configuration {name}: unexpected output {f:?}").into())
}

fn report(options: &Options, connect: &str) -> Result<(), BoxError> {
    let mut rows = Vec::new();
    for (name, what) in CONFIGS {
        eprintln!("session_heap: {name}: {} sessions...", options.sessions);
        rows.push((name, what, child(options, name, connect)?));
    }
    if options.json {
        let configs: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(name, what, [heap, allocs, rss])| {
                (
                    (*name).to_owned(),
                    serde_json::json!({
                        "what": what,
                        "heap_bytes_per_session": heap,
                        "allocations_per_session": allocs,
                        "rss_bytes_per_session": rss,
                    }),
                )
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "sessions": options.sessions, "configs": configs })
        );
        return Ok(());
    }
    println!(
        "{:<16} {:>12} {:>12} {:>12}  what",
        "configuration", "heap/session", "allocs", "RSS/session"
    );
    for (name, what, [heap, allocs, rss]) in &rows {
        println!(
            "{name:<16} {:>10.0} B {allocs:>12.0} {:>10.0} B  {what}",
            heap, rss
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let options = Options::parse();
    let result = match (&options.only, &options.connect) {
        (Some(config), Some(connect)) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(BoxError::from)
            .and_then(|runtime| runtime.block_on(measure(config, options.sessions, connect))),
        (Some(_), None) => Err("--only needs --connect".into()),
        (None, Some(connect)) => report(&options, connect),
        (None, None) => {
            eprintln!("session_heap: starting a local ZooKeeper (maxClientCnxns=0)...");
            zk_testkit::ZkServer::builder()
                .config("maxClientCnxns", 0)
                .start()
                .map_err(BoxError::from)
                .and_then(|server| report(&options, &server.connect_string()))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("session_heap: {error}");
            ExitCode::FAILURE
        }
    }
}
