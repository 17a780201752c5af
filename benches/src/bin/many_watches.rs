//! A million watches on one session: the memory each costs the client, the time to re-register
//! all of them after the connection is cut, and the SetWatches frames that do it, counted and
//! measured on the wire against the server's frame limit.
//!
//! `cargo run --release -p zk-benches --bin many_watches -- [--watches N (1000000)] [--fanout N
//! (1000)] [--create-batch N (1000)] [--in-flight N (1024)] [--sample N (1000)] [--connect
//! HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, forceSync off, the full JIT, the
//! small-machine I/O settings of `lock_latency`, and a heap of 3 KiB per watch, at least
//! 1 GiB: the server keeps a node and a watch per path) and stops it at the end, with the tree.
//! With `--connect` the tree is deleted at the end.
//!
//! 1. `populate`: `--watches` nodes `/rzk-watches-<pid>/g<i>/n<j>` (`--fanout` children per
//!    group, no data), created by another session in `multi` transactions of
//!    `--create-batch` creates, four in flight.
//! 2. `watches_set`: the measured session, connected through a proxy of this process, sets an
//!    exists watch (`exists_watch`) on every node, `--in-flight` calls in flight, and keeps the
//!    watchers. The heap kept (a counting global allocator) and the resident memory added
//!    (`VmRSS`), per watch, with the watchers the caller holds; the server's `zk_watch_count`.
//! 3. `watches_reregistered`: the proxy cuts the connection; the session reconnects through it
//!    and sends SetWatches frames before anything else, then a probe (`exists /`), whose reply
//!    comes after the server has handled every frame before it. The time from the cut to the
//!    state `Connected` again, and to the probe's reply; the server's `zk_watch_count` after;
//!    the SetWatches frames the proxy saw on the new connection: how many, the largest, the
//!    total, against the client's frame limit (`max_frame_len`, ZooKeeper's `jute.maxbuffer`:
//!    1,048,575 bytes by default; the session splits them at 128 KiB).
//! 4. `watches_fire`: `--sample` watched nodes, spread over the tree, are written by the other
//!    session; every one of their watchers must fire (`NodeDataChanged`).
//!
//! Exits non-zero if a watch was not re-registered, a frame was over the limit, or a sampled
//! watch did not fire.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use zk_benches::args::positive;
use zk_benches::latency::{cpu_now, server_addrs};
use zk_benches::scale::{FrameProxy, Mntr, process_cpu, rss, tuned_server};
use zk_benches::{BoxError, Setup};
use zk_proto::jute::OpCode;
use zk_proto::{Client, CreateOptions, EventType, MultiOperation, OneshotWatcher, SessionState};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// `multi` transactions in flight while the tree is written or deleted.
const MULTI_WINDOW: usize = 4;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "many_watches",
    override_usage = "cargo run --release -p zk-benches --bin many_watches -- [options]",
    about = "A million watches on one session: memory per watch, the time to re-register all of\
             \nthem after a cut, and the SetWatches frames that do it, against the frame limit.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// watches to set (one node each)
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = positive::<usize>)]
    watches: usize,
    /// nodes per group
    #[arg(long, value_name = "N", default_value_t = 1_000, value_parser = positive::<usize>)]
    fanout: usize,
    /// creates per multi transaction while writing the tree
    #[arg(long, value_name = "N", default_value_t = 1_000, value_parser = positive::<usize>)]
    create_batch: usize,
    /// exists_watch calls in flight
    #[arg(long, value_name = "N", default_value_t = 1_024, value_parser = positive::<usize>)]
    in_flight: usize,
    /// watched nodes written at the end, whose watches must fire
    #[arg(long, value_name = "N", default_value_t = 1_000, value_parser = positive::<usize>)]
    sample: usize,
    /// measure against that server (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// one JSON object per line on stdout
    #[arg(long)]
    json: bool,
}

/// Net heap in use (allocated and not freed).
fn heap() -> i64 {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as i64 - stats.bytes_deallocated as i64 + stats.bytes_reallocated as i64
}

/// The groups, then the watched nodes below them.
fn tree(root: &str, watches: usize, fanout: usize) -> (Vec<String>, Vec<String>) {
    let groups = watches.div_ceil(fanout).max(1);
    let parents = (0..groups).map(|g| format!("{root}/g{g}")).collect();
    let leaves = (0..watches)
        .map(|n| format!("{root}/g{}/n{}", n / fanout, n % fanout))
        .collect();
    (parents, leaves)
}

/// Runs `ops` in `multi` transactions of `batch`, [`MULTI_WINDOW`] in flight.
async fn multis(client: &Client, ops: Vec<MultiOperation>, batch: usize) -> Result<(), BoxError> {
    let mut window = VecDeque::new();
    let mut ops = ops.into_iter().peekable();
    while ops.peek().is_some() || !window.is_empty() {
        while ops.peek().is_some() && window.len() < MULTI_WINDOW {
            let chunk: Vec<MultiOperation> = ops.by_ref().take(batch).collect();
            window.push_back(client.multi(chunk));
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

/// After the cut, when the proxy saw each step of the reconnection (from the cut).
#[derive(Debug, Default, Clone, Copy)]
struct Timeline {
    /// The client's ConnectRequest on the new connection.
    connect_request: Option<Duration>,
    /// The server's first bytes on it (the ConnectResponse).
    connect_response: Option<Duration>,
    /// The first and the last SetWatches frame.
    first_frame: Option<Duration>,
    last_frame: Option<Duration>,
}

#[derive(Default)]
struct Report {
    watches: usize,
    populate: Duration,
    set: Duration,
    set_cpu: Duration,
    heap_per_watch: f64,
    rss_per_watch: Option<f64>,
    server_watches_set: Option<f64>,
    to_connected: Duration,
    to_probe: Duration,
    timeline: Timeline,
    rereg_cpu: Duration,
    rereg_server_cpu: Option<Duration>,
    server_watches_after: Option<f64>,
    reconnects: u64,
    frames: Vec<usize>,
    frame_limit: usize,
    sample: usize,
    fired: usize,
}

async fn run(
    options: &Options,
    connect: &str,
    addrs: &[SocketAddr],
    server_pid: Option<u32>,
) -> Result<Report, BoxError> {
    let root = format!("/rzk-watches-{}", std::process::id());
    let admin = Client::builder()
        .request_timeout(Some(Duration::from_secs(300)))
        .connect(connect)
        .await?;
    let (parents, leaves) = tree(&root, options.watches, options.fanout);

    // 1. The tree.
    eprintln!("many_watches: writing {} nodes...", leaves.len());
    let started = Instant::now();
    let persistent = CreateOptions::persistent();
    admin.create(&root, "", &persistent).await?;
    let creates = |paths: &[String]| -> Vec<MultiOperation> {
        paths
            .iter()
            .map(|p| MultiOperation::create(p.as_str(), "", &persistent))
            .collect()
    };
    multis(&admin, creates(&parents), options.create_batch).await?;
    multis(&admin, creates(&leaves), options.create_batch).await?;
    let populate = started.elapsed();

    // 2. The watches, from a session behind the proxy.
    let target = *addrs.first().ok_or("no server address")?;
    let proxy = FrameProxy::start(
        target,
        &[
            i32::from(OpCode::SET_WATCHES),
            i32::from(OpCode::SET_WATCHES2),
        ],
    )
    .await?;
    let client = Client::builder()
        .session_timeout(Duration::from_secs(30))
        .request_timeout(Some(Duration::from_secs(300)))
        .connect(&proxy.connect_string())
        .await?;
    client.exists("/").await?;
    let watches_before = Mntr::read(addrs).ok().and_then(|m| m.get("zk_watch_count"));
    eprintln!("many_watches: setting {} watches...", leaves.len());
    let heap_before = heap();
    let rss_before = rss();
    let cpu_before = cpu_now();
    let started = Instant::now();
    let mut watchers: Vec<Option<OneshotWatcher>> = Vec::with_capacity(leaves.len());
    let mut window = VecDeque::with_capacity(options.in_flight);
    let mut next = leaves.iter();
    loop {
        while window.len() < options.in_flight {
            let Some(path) = next.next() else { break };
            window.push_back(client.exists_watch(path));
        }
        let Some(call) = window.pop_front() else {
            break;
        };
        let (stat, watcher) = call.await?;
        if stat.is_none() {
            return Err("a watched node is missing".into());
        }
        watchers.push(Some(watcher));
    }
    let set = started.elapsed();
    let set_cpu = cpu_now().saturating_sub(cpu_before);
    let n = watchers.len() as f64;
    let heap_per_watch = (heap() - heap_before) as f64 / n;
    let rss_per_watch = rss()
        .zip(rss_before)
        .map(|(a, b)| a.saturating_sub(b) as f64 / n);
    let watches_set = Mntr::read(addrs).ok().and_then(|m| m.get("zk_watch_count"));
    let server_watches_set = watches_set.zip(watches_before).map(|(a, b)| a - b);

    // 3. Cut, reconnect, re-register.
    eprintln!("many_watches: cutting the connection...");
    let mut states = client.state_watcher();
    let accepted = proxy.accepted();
    let set_watches = |proxy: &FrameProxy| {
        let mut frames = proxy.frames(i32::from(OpCode::SET_WATCHES));
        frames.extend(proxy.frames(i32::from(OpCode::SET_WATCHES2)));
        frames.sort_by_key(|&(_, at)| at);
        frames
    };
    let frames_before = set_watches(&proxy).len();
    let server_cpu = || server_pid.and_then(process_cpu);
    let server_cpu_before = server_cpu();
    let cpu_before = cpu_now();
    let cut_at = Instant::now();
    proxy.cut();
    states
        .wait_for(|s| *s != SessionState::Connected)
        .await
        .map_err(|_| "the client ended")?;
    states
        .wait_for(|s| *s == SessionState::Connected)
        .await
        .map_err(|_| "the client ended")?;
    let to_connected = cut_at.elapsed();
    client.exists("/").await?;
    let to_probe = cut_at.elapsed();
    let rereg_cpu = cpu_now().saturating_sub(cpu_before);
    let rereg_server_cpu = server_cpu()
        .zip(server_cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let watches_after = Mntr::read(addrs).ok().and_then(|m| m.get("zk_watch_count"));
    let server_watches_after = watches_after.zip(watches_before).map(|(a, b)| a - b);
    let mut frames = set_watches(&proxy);
    let frames = frames.split_off(frames_before.min(frames.len()));
    let since_cut = |at: Option<&Instant>| at.map(|at| at.saturating_duration_since(cut_at));
    let timeline = Timeline {
        connect_request: since_cut(proxy.connect_requests().last()),
        connect_response: since_cut(proxy.first_replies().last()),
        first_frame: since_cut(frames.first().map(|(_, at)| at)),
        last_frame: since_cut(frames.last().map(|(_, at)| at)),
    };
    let frames: Vec<usize> = frames.into_iter().map(|(len, _)| len).collect();

    // 4. A sample of the watches fires.
    let sample = options.sample.min(leaves.len());
    let step = (leaves.len() / sample.max(1)).max(1);
    let picked: Vec<usize> = (0..sample).map(|k| k * step).collect();
    let writes: Vec<_> = picked
        .iter()
        .map(|&i| admin.set_data(&leaves[i], "x", None))
        .collect();
    for write in writes {
        write.await?;
    }
    let mut fired = 0;
    for &i in &picked {
        let Some(watcher) = watchers[i].take() else {
            continue;
        };
        if let Ok(Ok(event)) =
            tokio::time::timeout(Duration::from_secs(30), watcher.changed()).await
            && event.event_type == EventType::NODE_DATA_CHANGED
        {
            fired += 1;
        }
    }

    let report = Report {
        watches: leaves.len(),
        populate,
        set,
        set_cpu,
        heap_per_watch,
        rss_per_watch,
        server_watches_set,
        to_connected,
        to_probe,
        timeline,
        rereg_cpu,
        rereg_server_cpu,
        server_watches_after,
        reconnects: proxy.accepted() - accepted,
        frames,
        frame_limit: client.max_frame_len(),
        sample,
        fired,
    };
    let _ = client.close().await;
    drop(watchers);
    if options.connect.is_some() {
        eprintln!("many_watches: deleting the tree...");
        let deletes = |paths: &[String]| -> Vec<MultiOperation> {
            paths
                .iter()
                .map(|p| MultiOperation::delete(p.as_str(), None))
                .collect()
        };
        multis(&admin, deletes(&leaves), options.create_batch).await?;
        multis(&admin, deletes(&parents), options.create_batch).await?;
        admin.delete(&root, None).await?;
    }
    let _ = admin.close().await;
    Ok(report)
}

impl Report {
    /// Whether every watch is back on the server, every frame under the limit, every sampled
    /// watch fired.
    fn ok(&self) -> bool {
        let back = self
            .server_watches_after
            .zip(self.server_watches_set)
            .is_none_or(|(after, set)| after >= set);
        back && self.frames.iter().all(|&f| f <= self.frame_limit) && self.fired == self.sample
    }
}

fn print(report: &Report, options: &Options) {
    let n = report.watches as f64;
    let secs = |d: Duration| d.as_secs_f64();
    let largest = report.frames.iter().copied().max();
    let total: usize = report.frames.iter().sum();
    let per_frame = if report.frames.is_empty() {
        None
    } else {
        Some(n / report.frames.len() as f64)
    };
    let lines = [
        json!({"client": "rzk", "metric": "populate", "n": report.watches,
               "seconds": secs(report.populate),
               "nodes_per_s": n / secs(report.populate).max(1e-9),
               "create_batch": options.create_batch}),
        json!({"client": "rzk", "metric": "watches_set", "n": report.watches,
               "seconds": secs(report.set), "watches_per_s": n / secs(report.set).max(1e-9),
               "in_flight": options.in_flight,
               "client_cpu_us_per_watch": secs(report.set_cpu) * 1e6 / n,
               "heap_bytes_per_watch": report.heap_per_watch,
               "rss_bytes_per_watch": report.rss_per_watch,
               "server_watches": report.server_watches_set}),
        json!({"client": "rzk", "metric": "watches_reregistered", "n": report.watches,
               "seconds_to_connect_request": report.timeline.connect_request.map(secs),
               "seconds_to_connect_response": report.timeline.connect_response.map(secs),
               "seconds_to_first_frame": report.timeline.first_frame.map(secs),
               "seconds_to_last_frame": report.timeline.last_frame.map(secs),
               "seconds_to_connected": secs(report.to_connected),
               "seconds_to_all_registered": secs(report.to_probe),
               "client_cpu_seconds": secs(report.rereg_cpu),
               "server_cpu_seconds": report.rereg_server_cpu.map(secs),
               "server_watches_after": report.server_watches_after,
               "reconnections": report.reconnects,
               "set_watches_frames": report.frames.len(),
               "watches_per_frame": per_frame,
               "largest_frame_bytes": largest, "total_frame_bytes": total,
               "frame_limit_bytes": report.frame_limit,
               "frames_under_limit": report.frames.iter().all(|&f| f <= report.frame_limit)}),
        json!({"client": "rzk", "metric": "watches_fire", "n": report.sample,
               "fired": report.fired}),
    ];
    if options.json {
        for line in &lines {
            println!("{}", zk_benches::json::to_line(line));
        }
        return;
    }
    let opt = |v: Option<f64>| v.map_or("unknown".to_owned(), |v| format!("{v:.0}"));
    println!(
        "tree: {} nodes in {:.1} s ({:.0}/s, multi of {})",
        report.watches,
        secs(report.populate),
        n / secs(report.populate).max(1e-9),
        options.create_batch
    );
    println!(
        "watches: {} set in {:.1} s ({:.0}/s, {} in flight, client CPU {:.2} us/watch); heap \
         {:.0} B/watch, RSS {} B/watch; server holds {} more",
        report.watches,
        secs(report.set),
        n / secs(report.set).max(1e-9),
        options.in_flight,
        secs(report.set_cpu) * 1e6 / n,
        report.heap_per_watch,
        opt(report.rss_per_watch),
        opt(report.server_watches_set)
    );
    println!(
        "after a cut: connected again in {:.3} s, every watch re-registered {:.3} s after the \
         cut (client CPU {:.2} s, server CPU {}); server holds {} ({} reconnection)",
        secs(report.to_connected),
        secs(report.to_probe),
        secs(report.rereg_cpu),
        report
            .rereg_server_cpu
            .map_or("unknown".to_owned(), |c| format!("{:.2} s", secs(c))),
        opt(report.server_watches_after),
        report.reconnects
    );
    let at = |d: Option<Duration>| d.map_or("unknown".to_owned(), |d| format!("{:.3}", secs(d)));
    println!(
        "  from the cut, in s: ConnectRequest {}, ConnectResponse {}, first SetWatches {}, last \
         {}, state Connected {:.3}, probe answered {:.3}",
        at(report.timeline.connect_request),
        at(report.timeline.connect_response),
        at(report.timeline.first_frame),
        at(report.timeline.last_frame),
        secs(report.to_connected),
        secs(report.to_probe)
    );
    println!(
        "SetWatches frames: {} ({} watches each on average), largest {} bytes, {} bytes in all; \
         limit {} bytes: {}",
        report.frames.len(),
        opt(per_frame),
        largest.unwrap_or(0),
        total,
        report.frame_limit,
        if report.frames.iter().all(|&f| f <= report.frame_limit) {
            "all under"
        } else {
            "OVER"
        }
    );
    println!(
        "fired: {}/{} sampled watches after the re-registration",
        report.fired, report.sample
    );
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::parse();
    let local = || {
        let heap_mb = u32::try_from(options.watches / 1_000 * 3)
            .unwrap_or(u32::MAX)
            .max(1_024);
        tuned_server("many_watches", "forceSync off", heap_mb).force_sync(false)
    };
    // One thread, as `lock_latency` measures its pipelined reads: on a two-thread runtime the
    // caller and the connection task hand every reply over between threads, and that (futex
    // waits and wake-ups) would be most of the client's CPU per watch.
    let one_thread = |program: &str| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                eprintln!("{program}: error: {e}");
                ExitCode::FAILURE
            })
    };
    let setup = match Setup::start(
        "many_watches",
        options.connect.as_deref(),
        local,
        one_thread,
    ) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let report = match setup.block_on(async {
        let addrs = server_addrs(&setup.connect)?;
        run(&options, &setup.connect, &addrs, setup.server_pid()).await
    }) {
        Ok(report) => report,
        Err(code) => return code,
    };
    drop(setup);
    print(&report, &options);
    if !report.ok() {
        return ExitCode::FAILURE;
    }
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
