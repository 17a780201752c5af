//! The workloads of the lock latency benchmark.

use std::collections::VecDeque;
use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::time::{ClockId, clock_gettime};
use zk_proto::{Client, CreateOptions};
use zk_recipes::lock::Lock;

use serde_json::Value;

use super::breakdown::{Breakdown, ServerSide};
use super::election;
use super::servers::{Counters, read_counters};
use super::{BoxError, Counts, Metric};
use crate::codec;

/// One workload of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// One session: sequential create (ephemeral, 16 bytes) then delete.
    RawCreateDelete,
    /// One session: sequential getData of one node.
    RawGet,
    /// One session: getData calls with many in flight.
    PipelinedGet,
    /// One session: acquire and release of one lock.
    LockUncontended,
    /// Several sessions cycling on one lock.
    LockContended,
    /// A leader latch whose leader closes its session.
    ElectionFailover,
    /// A leader latch whose leader's connection is killed (the session expires).
    ElectionCrash,
    /// The codec benchmark's figures (quick mode).
    Codec,
}

impl Workload {
    /// Every workload, in report order.
    pub const ALL: [Workload; 8] = [
        Workload::RawCreateDelete,
        Workload::RawGet,
        Workload::PipelinedGet,
        Workload::LockUncontended,
        Workload::LockContended,
        Workload::ElectionFailover,
        Workload::ElectionCrash,
        Workload::Codec,
    ];

    /// The name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Workload::RawCreateDelete => "raw_create_delete",
            Workload::RawGet => "raw_get",
            Workload::PipelinedGet => "pipelined_get",
            Workload::LockUncontended => "lock_uncontended",
            Workload::LockContended => "lock_contended",
            Workload::ElectionFailover => "election_failover",
            Workload::ElectionCrash => "election_crash",
            Workload::Codec => "codec",
        }
    }

    /// The workload named `name`.
    pub fn from_name(name: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// What every workload needs.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub(crate) connect: String,
    /// The sessions' settings besides the session timeout (TLS, SASL).
    pub(crate) builder: zk_proto::ClientBuilder,
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) counts: Counts,
    pub(crate) progress: bool,
    /// A persistent node under which everything is created (removed at the end).
    pub(crate) base: String,
    /// Packets the server counts for one reading of the counters themselves.
    pub(crate) counter_overhead: u64,
}

/// The 16 bytes of data of the raw creates and of the node read.
const DATA: [u8; 16] = *b"rzk-bench-16-byt";

/// How long a single wait (connect, leadership) may take before the run fails.
pub(super) const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// Process CPU time (user + system) so far.
pub fn cpu_now() -> Duration {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or_default(),
        u32::try_from(t.tv_nsec).unwrap_or_default(),
    )
}

/// A progress line on stderr, redrawn about 20 times.
pub(super) struct Progress {
    enabled: bool,
    /// Redraw one line (a terminal); else only the final line is printed.
    redraw: bool,
    name: &'static str,
    total: usize,
    step: usize,
}

impl Progress {
    pub(super) fn new(ctx: &Context, name: &'static str, total: usize) -> Progress {
        let p = Progress {
            enabled: ctx.progress,
            redraw: ctx.progress && std::io::stderr().is_terminal(),
            name,
            total,
            step: (total / 20).max(1),
        };
        p.show(0);
        p
    }

    pub(super) fn tick(&self, done: usize) {
        if done.is_multiple_of(self.step) {
            self.show(done);
        }
    }

    fn show(&self, done: usize) {
        if self.redraw {
            eprint!("\r  {:<20} {done:>6}/{}", self.name, self.total);
        }
    }

    pub(super) fn finish(&self) {
        if self.enabled {
            let start = if self.redraw { "\r" } else { "" };
            eprintln!(
                "{start}  {:<20} {:>6}/{} done",
                self.name, self.total, self.total
            );
        }
    }
}

/// Counters, CPU and wall clock at the start of a measured section.
pub(super) struct Section {
    counters: Counters,
    cpu: Duration,
    wall: Instant,
}

impl Section {
    pub(super) fn start(ctx: &Context) -> Section {
        let counters = read_counters(&ctx.addrs);
        Section {
            counters,
            cpu: cpu_now(),
            wall: Instant::now(),
        }
    }

    /// Ends the section over `ops` operations: sets the per-op figures of `metrics` (the
    /// server ones only if `server`).
    pub(super) fn finish(
        self,
        ctx: &Context,
        ops: usize,
        server: bool,
        metrics: &mut [Metric],
    ) -> Duration {
        self.stop(ctx).apply(ctx, ops, server, metrics)
    }

    /// Ends the section: its wall and CPU time are read now, before the samples are sorted
    /// into metrics (the benchmark's statistics are not the client's work), and its
    /// counters right after.
    pub(super) fn stop(self, ctx: &Context) -> Stopped {
        let wall = self.wall.elapsed();
        let cpu = cpu_now().saturating_sub(self.cpu);
        let after = read_counters(&ctx.addrs);
        Stopped {
            before: self.counters,
            after,
            cpu,
            wall,
        }
    }
}

/// A measured section that has ended ([`Section::stop`]).
pub(super) struct Stopped {
    before: Counters,
    after: Counters,
    cpu: Duration,
    wall: Duration,
}

impl Stopped {
    /// Sets the per-op figures of `metrics` over `ops` operations (the server ones only if
    /// `server`); returns the section's wall time.
    pub(super) fn apply(
        &self,
        ctx: &Context,
        ops: usize,
        server: bool,
        metrics: &mut [Metric],
    ) -> Duration {
        let (packets, txns) = self.before.per_op(&self.after, ctx.counter_overhead, ops);
        let cpu_per_op = self.cpu.as_secs_f64() * 1e6 / ops.max(1) as f64;
        for m in metrics {
            m.client_cpu_us_per_op = Some(cpu_per_op);
            if server {
                m.server_packets_per_op = packets;
                m.server_txns_per_op = txns;
            }
        }
        self.wall
    }
}

/// A session with `ctx.connect` (session timeout 30 s).
pub(super) async fn connect(ctx: &Context) -> Result<Client, BoxError> {
    connect_to(ctx, &ctx.connect, Duration::from_secs(30)).await
}

/// A session with `connect`, with `ctx`'s settings and `session_timeout`.
pub(super) async fn connect_to(
    ctx: &Context,
    connect: &str,
    session_timeout: Duration,
) -> Result<Client, BoxError> {
    let client = tokio::time::timeout(
        WAIT_LIMIT,
        ctx.builder
            .clone()
            .session_timeout(session_timeout)
            .connect(connect),
    )
    .await
    .map_err(|_| format!("no session with {connect} within {WAIT_LIMIT:?}"))??;
    Ok(client)
}

/// Creates a persistent node; an existing one is fine.
async fn ensure_node(client: &Client, path: &str, data: &'static [u8]) -> Result<(), BoxError> {
    match client
        .create(path, data, &CreateOptions::persistent())
        .await
    {
        Ok(_) | Err(zk_proto::Error::NodeExists) => Ok(()),
        Err(e) => Err(format!("create {path}: {e}").into()),
    }
}

/// Deletes `path` and everything under it (best effort).
async fn delete_tree(client: &Client, path: &str) {
    let mut order = Vec::new();
    let mut stack = vec![path.to_owned()];
    while let Some(p) = stack.pop() {
        if let Ok(children) = client.get_children(&p).await {
            stack.extend(children.into_iter().map(|c| format!("{p}/{c}")));
        }
        order.push(p);
    }
    for p in order.iter().rev() {
        let _ = client.delete(p, None).await;
    }
}

/// Runs the ZooKeeper workloads in order.
pub(crate) async fn run_all(
    ctx: &Context,
    workloads: &[Workload],
) -> Result<Vec<Metric>, BoxError> {
    create_base(ctx).await?;
    let mut metrics = Vec::new();
    let mut result = Ok(());
    for &w in workloads {
        let m = match w {
            Workload::RawCreateDelete => raw_create_delete(ctx).await,
            Workload::RawGet => raw_get(ctx).await,
            Workload::PipelinedGet => pipelined_get(ctx).await,
            Workload::LockUncontended => lock_uncontended(ctx).await,
            Workload::LockContended => lock_contended(ctx).await,
            Workload::ElectionFailover => election::failover(ctx).await,
            Workload::ElectionCrash => election::crash(ctx).await,
            Workload::Codec => Ok(Vec::new()),
        };
        match m {
            Ok(m) => metrics.extend(m),
            Err(e) => {
                result = Err(format!("{}: {e}", w.name()));
                break;
            }
        }
    }
    remove_base(ctx).await;
    result?;
    Ok(metrics)
}

/// Creates `ctx.base` (an existing one is fine), with a short-lived session: an idle session
/// left open would send pings that land in the server's packet counters.
pub(crate) async fn create_base(ctx: &Context) -> Result<(), BoxError> {
    let admin = connect(ctx).await?;
    ensure_node(&admin, &ctx.base, b"").await?;
    let _ = admin.close().await;
    Ok(())
}

/// Deletes `ctx.base` and everything under it (best effort).
pub(crate) async fn remove_base(ctx: &Context) {
    if let Ok(admin) = connect(ctx).await {
        delete_tree(&admin, &ctx.base).await;
        let _ = admin.close().await;
    }
}

/// `raw_create_delete`: `raw_create`, `raw_delete`, `raw_pair`.
async fn raw_create_delete(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    let c = ctx.counts;
    let client = connect(ctx).await?;
    let path = format!("{}/raw", ctx.base);
    let options = CreateOptions::ephemeral();
    let progress = Progress::new(ctx, "raw_create_delete", c.raw_warmup + c.raw_pairs);
    let mut creates = Vec::with_capacity(c.raw_pairs);
    let mut deletes = Vec::with_capacity(c.raw_pairs);
    let mut pairs = Vec::with_capacity(c.raw_pairs);
    let mut section = None;
    let mut breakdown = None;
    for i in 0..c.raw_warmup + c.raw_pairs {
        if i == c.raw_warmup {
            breakdown = Some(Breakdown::start(ctx, &client, ServerSide::Updates));
            section = Some(Section::start(ctx));
        }
        let t0 = Instant::now();
        client.create(&path, &DATA[..], &options).await?;
        let t1 = Instant::now();
        client.delete(&path, None).await?;
        let t2 = Instant::now();
        if i >= c.raw_warmup {
            creates.push(t1 - t0);
            deletes.push(t2 - t1);
            pairs.push(t2 - t0);
        }
        progress.tick(i + 1);
    }
    let stopped = section.map(|section| section.stop(ctx));
    progress.finish();
    let mut metrics = vec![
        Metric::from_samples("raw_create", &creates),
        Metric::from_samples("raw_delete", &deletes),
        Metric::from_samples("raw_pair", &pairs),
    ];
    if let Some(stopped) = stopped {
        // CPU, packets and commits are per pair (create + delete): on `raw_pair` only.
        stopped.apply(ctx, c.raw_pairs, true, &mut metrics[2..]);
    }
    if let Some(breakdown) = breakdown {
        // Per request: a pair is two.
        let requests: Vec<f64> = metrics[2].samples_us.iter().map(|us| us / 2.0).collect();
        breakdown.finish(ctx, &client, &requests, &mut metrics[2]);
    }
    let _ = client.close().await;
    Ok(metrics)
}

/// `raw_get`: sequential getData.
async fn raw_get(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    let n = ctx.counts.raw_gets;
    let client = connect(ctx).await?;
    let path = format!("{}/get", ctx.base);
    ensure_node(&client, &path, &DATA).await?;
    for _ in 0..n.min(200) {
        client.get_data(&path).await?;
    }
    let progress = Progress::new(ctx, "raw_get", n);
    let mut samples = Vec::with_capacity(n);
    let breakdown = Breakdown::start(ctx, &client, ServerSide::Reads);
    let section = Section::start(ctx);
    for i in 0..n {
        let t0 = Instant::now();
        client.get_data(&path).await?;
        samples.push(t0.elapsed());
        progress.tick(i + 1);
    }
    let stopped = section.stop(ctx);
    let mut metrics = vec![Metric::from_samples("raw_get", &samples)];
    let wall = stopped.apply(ctx, n, true, &mut metrics);
    metrics[0].ops_per_s = Some(n as f64 / wall.as_secs_f64());
    let round_trips = metrics[0].samples_us.clone();
    breakdown.finish(ctx, &client, &round_trips, &mut metrics[0]);
    progress.finish();
    let _ = client.close().await;
    Ok(metrics)
}

/// `pipelined_get`: getData with up to `in_flight` calls outstanding; the latency of each call
/// is from its issue to its reply.
async fn pipelined_get(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    let n = ctx.counts.pipelined_gets;
    let window = ctx.counts.in_flight;
    let client = connect(ctx).await?;
    let path = format!("{}/get", ctx.base);
    ensure_node(&client, &path, &DATA).await?;
    // Warm-up: a tenth of the run, pipelined too.
    pipeline(&client, &path, (n / 10).max(1), window, None).await?;
    let progress = Progress::new(ctx, "pipelined_get", n);
    let section = Section::start(ctx);
    let samples = pipeline(&client, &path, n, window, Some(&progress)).await?;
    let stopped = section.stop(ctx);
    let mut metrics = vec![Metric::from_samples("pipelined_get", &samples)];
    let wall = stopped.apply(ctx, n, true, &mut metrics);
    metrics[0].ops_per_s = Some(n as f64 / wall.as_secs_f64());
    // A float, as it always was in the JSON (`32.000`).
    metrics[0]
        .extra
        .push(("in_flight", Value::from(window as f64)));
    progress.finish();
    let _ = client.close().await;
    Ok(metrics)
}

async fn pipeline(
    client: &Client,
    path: &str,
    n: usize,
    window: usize,
    progress: Option<&Progress>,
) -> Result<Vec<Duration>, BoxError> {
    let mut queue = VecDeque::with_capacity(window);
    let mut samples = Vec::with_capacity(n);
    let mut issued = 0;
    while samples.len() < n {
        while issued < n && queue.len() < window {
            queue.push_back((Instant::now(), client.get_data(path)));
            issued += 1;
        }
        // Replies come in request order: the oldest call completes first.
        let Some((t0, reply)) = queue.pop_front() else {
            break;
        };
        reply.await?;
        samples.push(t0.elapsed());
        if let Some(p) = progress {
            p.tick(samples.len());
        }
    }
    Ok(samples)
}

/// `lock_uncontended`: `lock_acquire`, `lock_release`, `lock_cycle`, with the server's packets
/// and commits per cycle.
async fn lock_uncontended(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    let c = ctx.counts;
    let client = connect(ctx).await?;
    // A persistent parent, so that the server's container reaper never removes it mid-run.
    let path = format!("{}/lock-uncontended", ctx.base);
    ensure_node(&client, &path, b"").await?;
    let lock = Lock::new(&client, &path);
    let progress = Progress::new(ctx, "lock_uncontended", c.lock_warmup + c.lock_cycles);
    let mut acquires = Vec::with_capacity(c.lock_cycles);
    let mut releases = Vec::with_capacity(c.lock_cycles);
    let mut cycles = Vec::with_capacity(c.lock_cycles);
    let mut section = None;
    for i in 0..c.lock_warmup + c.lock_cycles {
        if i == c.lock_warmup {
            section = Some(Section::start(ctx));
        }
        let t0 = Instant::now();
        let guard = lock.acquire(None).await?;
        let t1 = Instant::now();
        guard.release().await?;
        let t2 = Instant::now();
        if i >= c.lock_warmup {
            acquires.push(t1 - t0);
            releases.push(t2 - t1);
            cycles.push(t2 - t0);
        }
        progress.tick(i + 1);
    }
    let stopped = section.map(|section| section.stop(ctx));
    progress.finish();
    let mut metrics = vec![
        Metric::from_samples("lock_acquire", &acquires),
        Metric::from_samples("lock_release", &releases),
        Metric::from_samples("lock_cycle", &cycles),
    ];
    if let Some(stopped) = stopped {
        // CPU, packets and commits are per cycle: on `lock_cycle` only.
        stopped.apply(ctx, c.lock_cycles, true, &mut metrics[2..]);
    }
    let _ = client.close().await;
    Ok(metrics)
}

/// Shared state of the contended run.
#[derive(Debug, Default)]
struct Contention {
    holders: AtomicUsize,
    violations: AtomicU64,
    /// When the current holder started its release.
    release_started: Mutex<Option<Instant>>,
    handoffs: Mutex<Vec<Duration>>,
    /// The holders' delete round trips, measured in the same run: what the handoff is
    /// compared with under the same load.
    releases: Mutex<Vec<Duration>>,
    done: AtomicUsize,
}

/// `lock_contended`: handoff latency, cycles/s, violations, packets per cycle.
async fn lock_contended(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    let c = ctx.counts;
    let path = format!("{}/lock-contended", ctx.base);
    let mut clients = Vec::with_capacity(c.contended_sessions);
    for _ in 0..c.contended_sessions {
        clients.push(connect(ctx).await?);
    }
    ensure_node(&clients[0], &path, b"").await?;
    // Warm-up: one cycle per session, one after the other.
    for client in &clients {
        Lock::new(client, &path)
            .acquire(None)
            .await?
            .release()
            .await?;
    }
    let total = c.contended_sessions * c.contended_cycles;
    let progress = Arc::new(Progress::new(ctx, "lock_contended", total));
    let shared = Arc::new(Contention::default());
    let section = Section::start(ctx);
    let mut tasks = Vec::with_capacity(clients.len());
    for client in &clients {
        let lock = Lock::new(client, &path);
        let shared = Arc::clone(&shared);
        let progress = Arc::clone(&progress);
        let cycles = c.contended_cycles;
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
                // Let the other sessions run while the lock is held.
                tokio::task::yield_now().await;
                if shared.holders.load(Ordering::SeqCst) != 1 {
                    shared.violations.fetch_add(1, Ordering::SeqCst);
                }
                shared.holders.fetch_sub(1, Ordering::SeqCst);
                let release_started = Instant::now();
                *lock_or_recover(&shared.release_started) = Some(release_started);
                guard.release().await?;
                lock_or_recover(&shared.releases).push(release_started.elapsed());
                progress.tick(shared.done.fetch_add(1, Ordering::SeqCst) + 1);
            }
            Ok::<(), zk_recipes::Error>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    progress.finish();
    let handoffs = std::mem::take(&mut *lock_or_recover(&shared.handoffs));
    let releases = std::mem::take(&mut *lock_or_recover(&shared.releases));
    let stopped = section.stop(ctx);
    let mut metrics = vec![Metric::from_samples("lock_contended", &handoffs)];
    let wall = stopped.apply(ctx, total, true, &mut metrics);
    metrics.push(Metric::from_samples("lock_contended_release", &releases));
    let m = &mut metrics[0];
    m.ops_per_s = Some(total as f64 / wall.as_secs_f64());
    m.violations = Some(shared.violations.load(Ordering::SeqCst));
    m.extra
        .push(("sessions", Value::from(c.contended_sessions)));
    m.extra.push(("cycles", Value::from(total)));
    for client in clients {
        let _ = client.close().await;
    }
    Ok(metrics)
}

fn lock_or_recover<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `codec`: the codec benchmark in quick mode, one metric per message and direction.
pub(crate) fn codec(no_java: bool, progress: bool) -> Result<Vec<Metric>, BoxError> {
    let mut options = codec::Options {
        json: true,
        quick: true,
        no_java,
    };
    let report = match codec::run(&options) {
        Ok(report) => report,
        Err(e) if !no_java => {
            if progress {
                eprintln!("lock_latency: codec reference unavailable ({e}); timing ours only");
            }
            options.no_java = true;
            codec::run(&options)?
        }
        Err(e) => return Err(e.into()),
    };
    let mut metrics = Vec::new();
    for row in &report.rows {
        let sides = [
            (
                "decode",
                row.ours_decode,
                row.reference.map(|r| r.0),
                row.decode_ratio(),
            ),
            (
                "encode",
                row.ours_encode,
                row.reference.map(|r| r.1),
                row.encode_ratio(),
            ),
        ];
        for (direction, ours, reference, ratio) in sides {
            let mut m = Metric {
                name: format!("codec_{}_{direction}", row.case.id()),
                n: Some(ours.iters_per_round),
                p50_us: Some(ours.median_ns / 1e3),
                ops_per_s: Some(1e9 / ours.median_ns),
                ..Metric::default()
            };
            m.extra.push(("bytes", Value::from(row.bytes)));
            m.extra.push((
                "reference_p50_us",
                Value::from(reference.map(|r| r.median_ns / 1e3)),
            ));
            m.extra.push(("ratio_vs_reference", Value::from(ratio)));
            metrics.push(m);
        }
    }
    Ok(metrics)
}
