//! A thousand contenders on one lock (`zk_recipes::lock::Lock`, one session each): the handoff
//! latency, what each handoff costs the server, and the proof that a release wakes one waiter,
//! not the herd.
//!
//! `cargo run --release -p zk-benches --bin lock_contenders -- [--contenders N (1000)]
//! [--cycles N (2)] [--baseline N (8)] [--connect HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, `maxClientCnxns=0`, forceSync
//! off, the full JIT and the small-machine I/O settings of `lock_latency`) and stops it at the
//! end.
//!
//! Per run: the contenders' sessions connect; a gate session takes the lock; every contender
//! calls `acquire` and queues behind it (the lock node has `contenders + 1` children and the
//! server's watch count has settled); the server's counters are read over a quiet second (the
//! background: pings); then the gate releases and each contender takes the lock `--cycles`
//! times (queueing again at the back after each release), holding it for one scheduler turn.
//! Each holder checks an in-process holders counter (a violation if it is not exactly 1).
//!
//! - `lock_contenders`: the **handoff**, from the holder starting its release to the next
//!   holder's `acquire` returning (as `lock_latency`'s `lock_contended`); handoffs per second;
//!   client CPU per handoff; per handoff, from the server's `mntr` over the section: packets
//!   received and sent (the quiet second's rate subtracted), `zk_sum_node_deleted_watch_count`
//!   (the watchers that node deletions woke: with a herd each release would wake every
//!   waiter, here at most two, by the recipe's design), `zk_sum_node_children_watch_count`
//!   (children watches woken: none), and transactions (`srvr` zxid).
//! - `lock_contenders_release`: the holders' delete round trips in the same section: the
//!   handoff's limit is one delete and its notification.
//! - with `--by-op`, the contenders connect through a proxy of this process that counts their
//!   requests by op code (`zk_benches::scale::FrameProxy`): the requests per handoff of each
//!   kind (the proxy adds a hop to every round trip: read the latencies of a run without it).
//! - the same with `--baseline` contenders (0: none) and as many handoffs, right before on the
//!   same server, named `...@<baseline>`, and the ratios `handoff_p50@N/handoff_p50@baseline`
//!   and `handoff_p50/release_p50`.
//!
//! Exits non-zero on a mutual-exclusion violation.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::{Value, json};
use zk_benches::args::positive;
use zk_benches::latency::{cpu_now, server_addrs};
use zk_benches::scale::{
    FrameProxy, Mntr, percentile, raise_nofile, sorted_us, tuned_server, zxid,
};
use zk_benches::{BoxError, Setup};
use zk_proto::jute::OpCode;
use zk_proto::{Client, CreateOptions};
use zk_recipes::lock::Lock;

/// Connects in flight while the contenders' sessions open.
const CONNECT_PARALLEL: usize = 32;

/// The quiet stretch over which the background traffic (pings) is measured.
const QUIET: Duration = Duration::from_secs(1);

/// How long the contenders may take to queue.
const QUEUE_LIMIT: Duration = Duration::from_secs(120);

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "lock_contenders",
    override_usage = "cargo run --release -p zk-benches --bin lock_contenders -- [options]",
    about = "A thousand contenders on one lock: handoff p50/p99, the server's packets and \
             woken\nwatchers per handoff (no herd).",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// contenders (one session each)
    #[arg(long, value_name = "N", default_value_t = 1_000, value_parser = positive::<usize>)]
    contenders: usize,
    /// acquisitions per contender
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = positive::<usize>)]
    cycles: usize,
    /// contenders of the comparison run, with as many handoffs (0: none)
    #[arg(long, value_name = "N", default_value_t = 8)]
    baseline: usize,
    /// count the contenders' requests by kind (through a proxy: slower round trips)
    #[arg(long)]
    by_op: bool,
    /// measure against that server or ensemble
    /// (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT[,...]", verbatim_doc_comment)]
    connect: Option<String>,
    /// one JSON object per line on stdout
    #[arg(long)]
    json: bool,
}

/// Shared state of one run.
#[derive(Debug, Default)]
struct Contention {
    holders: AtomicUsize,
    violations: AtomicU64,
    /// When the current holder started its release.
    release_started: Mutex<Option<Instant>>,
    handoffs: Mutex<Vec<Duration>>,
    releases: Mutex<Vec<Duration>>,
}

fn lock_or_recover<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What one run measured.
struct Run {
    contenders: usize,
    cycles: usize,
    handoffs: Vec<f64>,
    releases: Vec<f64>,
    wall: Duration,
    cpu: Duration,
    violations: u64,
    /// Per second, over the quiet stretch.
    background_received: Option<f64>,
    background_sent: Option<f64>,
    received: Option<f64>,
    sent: Option<f64>,
    deleted_watchers: Option<f64>,
    deletions_with_watchers: Option<f64>,
    children_watchers: Option<f64>,
    txns: Option<i64>,
    queue_time: Duration,
    /// With `--by-op`: the contenders' requests over the section, by op code.
    by_op: Vec<(i32, u64)>,
}

/// Opens `n` sessions, [`CONNECT_PARALLEL`] at a time.
async fn connect_all(n: usize, connect: &str) -> Result<Vec<Client>, BoxError> {
    let mut clients = Vec::with_capacity(n);
    let mut pending = tokio::task::JoinSet::new();
    let mut started = 0;
    while clients.len() < n {
        while started < n && pending.len() < CONNECT_PARALLEL {
            let connect = connect.to_owned();
            pending.spawn(async move {
                Client::builder()
                    .session_timeout(Duration::from_secs(30))
                    .connect_timeout(Some(Duration::from_secs(60)))
                    .connect(&connect)
                    .await
            });
            started += 1;
        }
        let Some(done) = pending.join_next().await else {
            break;
        };
        clients.push(done??);
    }
    Ok(clients)
}

async fn run(
    contenders: usize,
    cycles: usize,
    connect: &str,
    addrs: &[SocketAddr],
    by_op: bool,
) -> Result<Run, BoxError> {
    eprintln!("lock_contenders: {contenders} contenders x {cycles} cycles...");
    let proxy = match (by_op, addrs.first()) {
        (true, Some(&target)) => Some(FrameProxy::start(target, &[]).await?),
        _ => None,
    };
    let clients = match &proxy {
        Some(proxy) => connect_all(contenders, &proxy.connect_string()).await?,
        None => connect_all(contenders, connect).await?,
    };
    let gate_client = Client::connect(connect).await?;
    let path = format!("/rzk-lock-{}-{contenders}", std::process::id());
    match gate_client
        .create(&path, "", &CreateOptions::persistent())
        .await
    {
        Ok(_) | Err(zk_proto::Error::NodeExists) => {}
        Err(e) => return Err(format!("create {path}: {e}").into()),
    }
    let gate = Lock::new(&gate_client, &path).acquire(None).await?;

    // Every contender queues behind the gate.
    let shared = Arc::new(Contention::default());
    let queue_started = Instant::now();
    let mut tasks = Vec::with_capacity(contenders);
    for client in &clients {
        let lock = Lock::new(client, &path);
        let shared = Arc::clone(&shared);
        tasks.push(tokio::spawn(async move {
            for _ in 0..cycles {
                let guard = lock.acquire(None).await?;
                let acquired = Instant::now();
                if let Some(started) = lock_or_recover(&shared.release_started).take() {
                    lock_or_recover(&shared.handoffs).push(acquired - started);
                }
                if shared.holders.fetch_add(1, Ordering::SeqCst) != 0 {
                    shared.violations.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                if shared.holders.load(Ordering::SeqCst) != 1 {
                    shared.violations.fetch_add(1, Ordering::SeqCst);
                }
                shared.holders.fetch_sub(1, Ordering::SeqCst);
                let release_started = Instant::now();
                *lock_or_recover(&shared.release_started) = Some(release_started);
                guard.release().await?;
                lock_or_recover(&shared.releases).push(release_started.elapsed());
            }
            Ok::<(), zk_recipes::Error>(())
        }));
    }
    // Queued: every node is there, and the watches the waiters set have settled.
    let mut last_watches = None;
    loop {
        if queue_started.elapsed() > QUEUE_LIMIT {
            return Err(format!("the contenders did not queue within {QUEUE_LIMIT:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let children = gate_client
            .exists(&path)
            .await?
            .map_or(0, |stat| stat.num_children);
        let watches = Mntr::read(addrs).ok().and_then(|m| m.get("zk_watch_count"));
        if usize::try_from(children).is_ok_and(|c| c == contenders + 1)
            && (watches.is_none() || watches == last_watches)
        {
            break;
        }
        last_watches = watches;
    }
    let queue_time = queue_started.elapsed();

    // The background: a quiet stretch with everyone queued.
    let quiet_before = Mntr::read(addrs).ok();
    tokio::time::sleep(QUIET).await;
    let quiet_after = Mntr::read(addrs).ok();
    let rate = |key: &str| {
        quiet_before
            .as_ref()
            .zip(quiet_after.as_ref())
            .and_then(|(b, a)| b.delta(a, key))
            .map(|d| d / QUIET.as_secs_f64())
    };
    let background_received = rate("zk_packets_received");
    let background_sent = rate("zk_packets_sent");

    // The measured section: from the gate's release to the last release.
    let before = Mntr::read(addrs).ok();
    let zxid_before = zxid(addrs);
    let ops_before = proxy.as_ref().map(FrameProxy::counts).unwrap_or_default();
    let cpu_before = cpu_now();
    let started = Instant::now();
    *lock_or_recover(&shared.release_started) = Some(Instant::now());
    gate.release().await?;
    for task in tasks {
        task.await??;
    }
    let wall = started.elapsed();
    let cpu = cpu_now().saturating_sub(cpu_before);
    let after = Mntr::read(addrs).ok();
    let zxid_after = zxid(addrs);
    let by_op = proxy
        .as_ref()
        .map(FrameProxy::counts)
        .unwrap_or_default()
        .into_iter()
        .map(|(op, n)| (op, n - ops_before.get(&op).copied().unwrap_or(0)))
        .filter(|&(_, n)| n > 0)
        .collect();
    let delta = |key: &str| {
        before
            .as_ref()
            .zip(after.as_ref())
            .and_then(|(b, a)| b.delta(a, key))
    };
    let handoffs = sorted_us(&std::mem::take(&mut *lock_or_recover(&shared.handoffs)));
    let releases = sorted_us(&std::mem::take(&mut *lock_or_recover(&shared.releases)));
    let run = Run {
        contenders,
        cycles,
        handoffs,
        releases,
        wall,
        cpu,
        violations: shared.violations.load(Ordering::SeqCst),
        background_received,
        background_sent,
        received: delta("zk_packets_received"),
        sent: delta("zk_packets_sent"),
        deleted_watchers: delta("zk_sum_node_deleted_watch_count"),
        deletions_with_watchers: delta("zk_cnt_node_deleted_watch_count"),
        children_watchers: delta("zk_sum_node_children_watch_count"),
        txns: zxid_before
            .zip(zxid_after)
            .filter(|(b, a)| b >> 32 == a >> 32)
            .map(|(b, a)| a - b),
        queue_time,
        by_op,
    };
    let _ = gate_client.delete(&path, None).await;
    let mut closing = tokio::task::JoinSet::new();
    for client in clients.into_iter().chain([gate_client]) {
        if closing.len() >= CONNECT_PARALLEL {
            closing.join_next().await;
        }
        closing.spawn(async move { client.close().await });
    }
    while closing.join_next().await.is_some() {}
    Ok(run)
}

impl Run {
    /// With `--by-op`: the contenders' requests per handoff, by op name.
    fn requests_per_handoff(&self) -> serde_json::Map<String, Value> {
        let n = self.handoffs.len().max(1) as f64;
        self.by_op
            .iter()
            .map(|&(op, count)| {
                let name = OpCode(op)
                    .name()
                    .map_or_else(|| format!("op{op}"), str::to_owned);
                (name, Value::from(count as f64 / n))
            })
            .collect()
    }

    fn p(&self, p: f64) -> Option<f64> {
        percentile(&self.handoffs, p)
    }

    /// A server counter's growth over the section, less the background rate, per handoff.
    fn per_handoff(&self, total: Option<f64>, background: Option<f64>) -> Option<f64> {
        let n = self.handoffs.len().max(1) as f64;
        let background = background.unwrap_or(0.0) * self.wall.as_secs_f64();
        total.map(|t| (t - background).max(0.0) / n)
    }

    fn lines(&self, suffix: &str) -> Vec<Value> {
        let n = self.handoffs.len();
        // Every release is a deletion: the gate's, then one per acquisition.
        let releases = (n + 1) as f64;
        let release = |p| percentile(&self.releases, p);
        vec![
            json!({"client": "rzk", "metric": format!("lock_contenders{suffix}"), "n": n,
                   "contenders": self.contenders, "cycles": self.cycles,
                   "p50_us": self.p(50.0), "p90_us": self.p(90.0), "p99_us": self.p(99.0),
                   "max_us": self.p(100.0),
                   "ops_per_s": n as f64 / self.wall.as_secs_f64().max(1e-9),
                   "client_cpu_us_per_op": self.cpu.as_secs_f64() * 1e6 / n.max(1) as f64,
                   "server_packets_received_per_op":
                       self.per_handoff(self.received, self.background_received),
                   "server_packets_sent_per_op":
                       self.per_handoff(self.sent, self.background_sent),
                   "server_txns_per_op": self.txns.map(|t| t as f64 / n.max(1) as f64),
                   "watchers_woken": self.deleted_watchers,
                   "watchers_woken_per_release": self.deleted_watchers.map(|w| w / releases),
                   "deletions_waking_watchers": self.deletions_with_watchers,
                   "children_watchers_woken": self.children_watchers,
                   "background_packets_received_per_s": self.background_received,
                   "violations": self.violations,
                   "queue_seconds": self.queue_time.as_secs_f64(),
                   "requests_per_op": (!self.by_op.is_empty()).then(|| self.requests_per_handoff())}),
            json!({"client": "rzk", "metric": format!("lock_contenders_release{suffix}"),
                   "n": self.releases.len(), "p50_us": release(50.0), "p90_us": release(90.0),
                   "p99_us": release(99.0), "max_us": release(100.0)}),
        ]
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b)
}

fn print(main: &Run, baseline: Option<&Run>, options: &Options) {
    let mut lines = main.lines("");
    if let Some(base) = baseline {
        lines.extend(base.lines(&format!("@{}", base.contenders)));
        lines.push(json!({"client": "rzk",
            "metric": format!("handoff_p50/handoff_p50@{}", base.contenders),
            "ratio": ratio(main.p(50.0), base.p(50.0))}));
        lines.push(json!({"client": "rzk",
            "metric": format!("handoff_p99/handoff_p99@{}", base.contenders),
            "ratio": ratio(main.p(99.0), base.p(99.0))}));
    }
    lines.push(json!({"client": "rzk", "metric": "handoff_p50/release_p50",
        "ratio": ratio(main.p(50.0), percentile(&main.releases, 50.0))}));
    if options.json {
        for line in &lines {
            println!("{}", zk_benches::json::to_line(line));
        }
        return;
    }
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    for run in baseline.into_iter().chain([main]) {
        let n = run.handoffs.len();
        println!(
            "{} contenders x {} cycles: {} handoffs, p50 {} us, p90 {} us, p99 {} us, max {} us \
             ({:.0}/s, client CPU {:.0} us each); delete round trip p50 {} us, p99 {} us",
            run.contenders,
            run.cycles,
            n,
            opt(run.p(50.0), 0),
            opt(run.p(90.0), 0),
            opt(run.p(99.0), 0),
            opt(run.p(100.0), 0),
            n as f64 / run.wall.as_secs_f64().max(1e-9),
            run.cpu.as_secs_f64() * 1e6 / n.max(1) as f64,
            opt(percentile(&run.releases, 50.0), 0),
            opt(percentile(&run.releases, 99.0), 0)
        );
        println!(
            "  server, per handoff: {} packets received, {} sent (background {}/s subtracted), \
             {} transactions; watchers woken per release {}, children watchers woken {}; {} \
             violations",
            opt(run.per_handoff(run.received, run.background_received), 2),
            opt(run.per_handoff(run.sent, run.background_sent), 2),
            opt(run.background_received, 0),
            opt(run.txns.map(|t| t as f64 / n.max(1) as f64), 2),
            opt(run.deleted_watchers.map(|w| w / (n + 1) as f64), 2),
            opt(run.children_watchers, 0),
            run.violations
        );
        if !run.by_op.is_empty() {
            let ops: Vec<String> = run
                .requests_per_handoff()
                .iter()
                .map(|(name, v)| format!("{name} {:.2}", v.as_f64().unwrap_or_default()))
                .collect();
            println!("  contenders' requests per handoff: {}", ops.join(", "));
        }
    }
    if let Some(base) = baseline {
        println!(
            "handoff p50 with {} contenders / with {}: {}; p99: {}",
            main.contenders,
            base.contenders,
            opt(ratio(main.p(50.0), base.p(50.0)), 2),
            opt(ratio(main.p(99.0), base.p(99.0)), 2)
        );
    }
    println!(
        "handoff p50 / delete round trip p50: {}",
        opt(ratio(main.p(50.0), percentile(&main.releases, 50.0)), 2)
    );
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::parse();
    if let Err(e) = raise_nofile((options.contenders + options.baseline) as u64 + 256) {
        eprintln!("lock_contenders: error: {e}");
        return ExitCode::FAILURE;
    }
    let local = || {
        tuned_server("lock_contenders", "maxClientCnxns=0, forceSync off", 1024)
            .config("maxClientCnxns", 0)
            .force_sync(false)
    };
    let setup = match Setup::start(
        "lock_contenders",
        options.connect.as_deref(),
        local,
        zk_benches::runtime,
    ) {
        Ok(setup) => setup,
        Err(code) => return code,
    };
    let connect = &setup.connect;
    let result = setup.block_on(async {
        let addrs = server_addrs(connect)?;
        let handoffs = options.contenders * options.cycles;
        let baseline = if options.baseline > 0 {
            let cycles = handoffs.div_ceil(options.baseline);
            Some(run(options.baseline, cycles, connect, &addrs, options.by_op).await?)
        } else {
            None
        };
        let main = run(
            options.contenders,
            options.cycles,
            connect,
            &addrs,
            options.by_op,
        )
        .await?;
        Ok((main, baseline))
    });
    let (main, baseline) = match result {
        Ok(runs) => runs,
        Err(code) => return code,
    };
    drop(setup);
    print(&main, baseline.as_ref(), &options);
    if main.violations > 0 || baseline.is_some_and(|b| b.violations > 0) {
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
