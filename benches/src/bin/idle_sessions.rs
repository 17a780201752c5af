//! Many idle sessions in one process: the memory each costs, the time to connect all of them,
//! and whether the server keeps all of them alive on pings alone for several session timeouts.
//!
//! `cargo run --release -p zk-benches --bin idle_sessions -- [--sessions N (10000)] [--parallel
//! N (32)] [--session-timeout-ms MS (4000)] [--hold N (5)] [--no-follow] [--quorum-check]
//! [--connect HOST:PORT] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, `maxClientCnxns=0` so that one
//! address may open every session, the full JIT and the small-machine I/O settings of
//! `lock_latency`) and stops it at the end. The process's open-files limit is raised to its
//! hard limit first when the sessions need more (the local server inherits it).
//!
//! - `idle_sessions_connect`: the sessions are opened `--parallel` at a time; the time to open
//!   all of them, and the percentiles of one `connect` (TCP, handshake, the server's
//!   createSession commit); the ConnectRequests the server received (`mntr`
//!   `zk_connection_request_count`: more than one per session when an attempt timed out and
//!   was made again) and, for a local server, its CPU time per session.
//! - `idle_sessions_memory`: after one round trip on every session (its buffers at their
//!   working size, its own requests answered), the heap kept (a counting global allocator:
//!   bytes allocated and not freed) and the resident memory added (`VmRSS`), per session.
//! - Then, before the hold, until the server counts exactly our sessions (at most three session
//!   timeouts): a session the server created for an attempt the client had already given up
//!   on expires one session timeout later, and that expiry must not fall into the hold.
//! - `idle_sessions_hold`: nothing but pings for `--hold` session timeouts. The server's
//!   packets received over that stretch (pings) per session and second, against the `3/T` of
//!   a ping every third of the session timeout (`16/T` with `--quorum-check`: its syncs); the server's zxid before and after (every
//!   expiry or close commits a transaction: an unchanged zxid proves that none expired); the
//!   server's open connections; the client's CPU per ping (and the local server's); then a round trip on every session,
//!   each still in its first session (same id).
//!
//! Exits non-zero if a session was lost, changed, or failed its last round trip.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde_json::json;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use zk_benches::args::positive;
use zk_benches::latency::{cpu_now, server_addrs};
use zk_benches::scale::{
    Mntr, percentile, process_cpu, raise_nofile, rss, sorted_us, status_bytes, tuned_server, zxid,
};
use zk_benches::{BoxError, Setup};
use zk_proto::{Client, SessionState};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

/// The target for the resident memory of an idle session.
const TARGET_RSS_PER_SESSION: f64 = 16.0 * 1024.0;

/// Open files beyond one per session: the runtime, the server's four-letter words, stdio.
const SPARE_FILES: u64 = 256;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "idle_sessions",
    override_usage = "cargo run --release -p zk-benches --bin idle_sessions -- [options]",
    about = "Many idle sessions in one process: memory per session, the time to connect all of\
             \nthem, and pings sustained for several session timeouts with no expiry.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// sessions to open
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = positive::<usize>)]
    sessions: usize,
    /// connects in flight at once
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = positive::<usize>)]
    parallel: usize,
    /// the session timeout asked for (the server clamps it: 2 to 20 ticks)
    #[arg(long, value_name = "MS", default_value_t = 4_000, value_parser = positive::<u64>)]
    session_timeout_ms: u64,
    /// session timeouts to stay idle, on pings alone
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = positive::<u32>)]
    hold: u32,
    /// sessions that do not follow the ensemble's configuration (no /zookeeper/config read
    /// and watch)
    #[arg(long, verbatim_doc_comment)]
    no_follow: bool,
    /// sessions that hold the quorum check (a sync every T/16)
    #[arg(long)]
    quorum_check: bool,
    /// measure against that server or ensemble
    /// (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT[,...]", verbatim_doc_comment)]
    connect: Option<String>,
    /// one JSON object per line on stdout
    #[arg(long)]
    json: bool,
}

/// Net heap in use (allocated and not freed) and allocations made so far.
fn heap() -> (i64, u64) {
    let stats = GLOBAL.stats();
    let live = stats.bytes_allocated as i64 - stats.bytes_deallocated as i64
        + stats.bytes_reallocated as i64;
    (live, (stats.allocations + stats.reallocations) as u64)
}

struct Report {
    sessions: usize,
    parallel: usize,
    connect_elapsed: Duration,
    connect_us: Vec<f64>,
    connect_requests: Option<f64>,
    connect_cpu: Duration,
    connect_server_cpu: Option<Duration>,
    orphans_expired: Option<f64>,
    settle: Duration,
    heap_per_session: f64,
    allocs_per_session: f64,
    rss_per_session: Option<f64>,
    peak_rss_per_session: Option<f64>,
    negotiated: Option<Duration>,
    hold: Duration,
    packets_received: Option<f64>,
    packets_sent: Option<f64>,
    zxid_delta: Option<i64>,
    alive_connections: Option<f64>,
    server_sessions: Option<f64>,
    hold_cpu: Duration,
    hold_server_cpu: Option<Duration>,
    rss_growth_during_hold: Option<f64>,
    /// Net heap per session at the end of the hold, after pings alone.
    heap_after_hold_per_session: f64,
    not_connected_seen: usize,
    first_not_connected: Option<Duration>,
    longest_stall: Duration,
    lost: usize,
    failed_round_trips: usize,
    round_trip_error: Option<String>,
    close_elapsed: Duration,
}

fn builder(options: &Options) -> zk_proto::ClientBuilder {
    Client::builder()
        .session_timeout(Duration::from_millis(options.session_timeout_ms))
        .request_timeout(Some(Duration::from_secs(60)))
        .connect_timeout(Some(Duration::from_secs(60)))
        .follow_ensemble(!options.no_follow)
        .quorum_check(options.quorum_check)
}

/// Opens `n` sessions, `parallel` at a time; each with the time its `connect` took.
async fn connect_all(
    options: &Options,
    connect: &str,
) -> Result<(Vec<Client>, Vec<Duration>), BoxError> {
    let mut clients = Vec::with_capacity(options.sessions);
    let mut times = Vec::with_capacity(options.sessions);
    let mut pending = tokio::task::JoinSet::new();
    let mut started = 0;
    while clients.len() < options.sessions {
        while started < options.sessions && pending.len() < options.parallel {
            let builder = builder(options);
            let connect = connect.to_owned();
            pending.spawn(async move {
                let t0 = Instant::now();
                let client = builder.connect(&connect).await?;
                Ok::<_, zk_proto::Error>((client, t0.elapsed()))
            });
            started += 1;
        }
        let Some(done) = pending.join_next().await else {
            break;
        };
        let (client, took) = done??;
        clients.push(client);
        times.push(took);
    }
    Ok((clients, times))
}

/// Round trips in flight at once across the sessions (a burst of 10,000 at once on top of
/// their pings can hold replies past a session's read timeout on a loaded machine).
const ROUND_TRIP_WINDOW: usize = 256;

/// One `exists("/")` on every session, [`ROUND_TRIP_WINDOW`] at a time; the number that failed
/// and the first failure.
async fn round_trip_all(clients: &[Client]) -> (usize, Option<String>) {
    let mut failed = 0;
    let mut first = None;
    for chunk in clients.chunks(ROUND_TRIP_WINDOW) {
        let calls: Vec<_> = chunk.iter().map(|c| c.exists("/")).collect();
        for call in calls {
            if let Err(e) = call.await {
                failed += 1;
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }
    (failed, first)
}

/// The server's sessions (`zk_global_sessions`), if it reports them.
fn server_sessions(addrs: &[SocketAddr]) -> Option<f64> {
    Mntr::read(addrs).ok()?.get("zk_global_sessions")
}

async fn run(
    options: &Options,
    connect: &str,
    addrs: &[SocketAddr],
    server_pid: Option<u32>,
) -> Result<Report, BoxError> {
    let server_cpu = || server_pid.and_then(process_cpu);
    let mntr_start = Mntr::read(addrs).ok();
    let (heap_before, allocs_before) = heap();
    let rss_before = rss();

    let server_cpu_before = server_cpu();
    let cpu_before = cpu_now();
    let started = Instant::now();
    let (clients, connect_times) = connect_all(options, connect).await?;
    let connect_elapsed = started.elapsed();
    let connect_cpu = cpu_now().saturating_sub(cpu_before);
    let connect_server_cpu = server_cpu()
        .zip(server_cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let mntr_connected = Mntr::read(addrs).ok();
    let connect_requests = mntr_start
        .as_ref()
        .zip(mntr_connected.as_ref())
        .and_then(|(b, a)| b.delta(a, "zk_connection_request_count"));
    eprintln!(
        "idle_sessions: {} sessions connected in {:.2} s",
        clients.len(),
        connect_elapsed.as_secs_f64()
    );
    // Whatever a configuration asks for after connecting (the configuration's read and watch,
    // the quorum check's sync) is answered by the time a later round trip is.
    let (failed, error) = round_trip_all(&clients).await;
    if failed > 0 {
        return Err(format!(
            "{failed} sessions failed their first round trip (the first: {})",
            error.unwrap_or_default()
        )
        .into());
    }
    let (heap_idle, allocs_idle) = heap();
    let rss_idle = rss();
    let n = clients.len() as f64;
    let heap_per_session = (heap_idle - heap_before) as f64 / n;
    let allocs_per_session = allocs_idle.saturating_sub(allocs_before) as f64 / n;
    let rss_per_session = rss_idle
        .zip(rss_before)
        .map(|(a, b)| a.saturating_sub(b) as f64 / n);

    // Sessions created for attempts the client gave up on expire one timeout later: wait until
    // the server counts ours alone, so that no expiry falls into the hold.
    let negotiated = clients[0].negotiated_timeout();
    let timeout = negotiated.unwrap_or(Duration::from_millis(options.session_timeout_ms));
    let baseline = mntr_start
        .as_ref()
        .and_then(|m| m.get("zk_global_sessions"));
    let connected_sessions = mntr_connected
        .as_ref()
        .and_then(|m| m.get("zk_global_sessions"));
    let settle_started = Instant::now();
    if let Some(baseline) = baseline {
        let ours = baseline + clients.len() as f64;
        while settle_started.elapsed() < timeout * 3
            && server_sessions(addrs).is_some_and(|now| now > ours)
        {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    let settle = settle_started.elapsed();
    let orphans_expired = connected_sessions
        .zip(server_sessions(addrs))
        .map(|(before, after)| before - after);

    // Idle: pings only, for `hold` session timeouts.
    let hold = timeout * options.hold;
    let ids: Vec<i64> = clients.iter().map(Client::session_id).collect();
    eprintln!(
        "idle_sessions: holding them idle for {:.0} s ({} session timeouts of {} ms)...",
        hold.as_secs_f64(),
        options.hold,
        timeout.as_millis()
    );
    let mntr_before = Mntr::read(addrs).ok();
    let zxid_before = zxid(addrs);
    let cpu_before = cpu_now();
    let server_cpu_before = server_cpu();
    let hold_started = Instant::now();
    let mut not_connected_seen = 0;
    // Every half second: the sessions not connected, and how late the wake-up was (a process
    // that got no CPU for seconds, on a loaded machine, misses its pings).
    let mut first_not_connected = None;
    let mut longest_stall = Duration::ZERO;
    while hold_started.elapsed() < hold {
        let nap = Duration::from_millis(500).min(hold - hold_started.elapsed());
        let slept = Instant::now();
        tokio::time::sleep(nap).await;
        longest_stall = longest_stall.max(slept.elapsed().saturating_sub(nap));
        let down = clients
            .iter()
            .filter(|c| c.state() != SessionState::Connected)
            .count();
        if down > 0 && first_not_connected.is_none() {
            first_not_connected = Some(hold_started.elapsed());
        }
        not_connected_seen += down;
    }
    let hold_elapsed = hold_started.elapsed();
    let hold_cpu = cpu_now().saturating_sub(cpu_before);
    let hold_server_cpu = server_cpu()
        .zip(server_cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let mntr_after = Mntr::read(addrs).ok();
    let zxid_after = zxid(addrs);
    let rss_after_hold = rss();
    let (heap_after_hold, _) = heap();

    let lost = clients
        .iter()
        .zip(&ids)
        .filter(|(c, id)| c.state() != SessionState::Connected || c.session_id() != **id)
        .count();
    let (failed_round_trips, round_trip_error) = round_trip_all(&clients).await;
    let peak_rss_per_session = status_bytes("VmHWM").map(|b| b as f64 / n);

    let delta = |key: &str| {
        mntr_before
            .as_ref()
            .zip(mntr_after.as_ref())
            .and_then(|(b, a)| b.delta(a, key))
    };
    let report = Report {
        sessions: clients.len(),
        parallel: options.parallel,
        connect_elapsed,
        connect_us: sorted_us(&connect_times),
        connect_requests,
        connect_cpu,
        connect_server_cpu,
        orphans_expired,
        settle,
        heap_per_session,
        allocs_per_session,
        rss_per_session,
        peak_rss_per_session,
        negotiated,
        hold: hold_elapsed,
        packets_received: delta("zk_packets_received"),
        packets_sent: delta("zk_packets_sent"),
        zxid_delta: zxid_before.zip(zxid_after).map(|(b, a)| a - b),
        alive_connections: mntr_after
            .as_ref()
            .and_then(|m| m.get("zk_num_alive_connections")),
        server_sessions: mntr_after
            .as_ref()
            .and_then(|m| m.get("zk_global_sessions")),
        hold_cpu,
        hold_server_cpu,
        rss_growth_during_hold: rss_after_hold
            .zip(rss_idle)
            .map(|(a, b)| a as f64 - b as f64),
        heap_after_hold_per_session: (heap_after_hold - heap_before) as f64 / n,
        not_connected_seen,
        first_not_connected,
        longest_stall,
        lost,
        failed_round_trips,
        round_trip_error,
        close_elapsed: Duration::ZERO,
    };

    // Close every session, `parallel` at a time.
    let started = Instant::now();
    let mut closing = tokio::task::JoinSet::new();
    for client in clients {
        if closing.len() >= options.parallel {
            closing.join_next().await;
        }
        closing.spawn(async move { client.close().await });
    }
    while closing.join_next().await.is_some() {}
    Ok(Report {
        close_elapsed: started.elapsed(),
        ..report
    })
}

fn print(report: &Report, options: &Options) {
    let secs = report.hold.as_secs_f64().max(1e-9);
    let timeout = report
        .negotiated
        .unwrap_or(Duration::from_millis(options.session_timeout_ms));
    let n = report.sessions as f64;
    // A ping every third of the session timeout, on every session; with the quorum check a
    // sync every sixteenth instead (it keeps the connection busy enough that no ping is due).
    let per_timeout = if options.quorum_check { 16.0 } else { 3.0 };
    let expected_pings_per_s = n * per_timeout / timeout.as_secs_f64();
    let pings = report.packets_received;
    let pings_per_session_s = pings.map(|p| p / secs / n);
    let cpu_per_ping = pings
        .filter(|p| *p > 0.0)
        .map(|p| report.hold_cpu.as_secs_f64() * 1e6 / p);
    let server_cpu_per_ping = pings
        .filter(|p| *p > 0.0)
        .zip(report.hold_server_cpu)
        .map(|(p, cpu)| cpu.as_secs_f64() * 1e6 / p);
    let server_cpu_per_connect = report
        .connect_server_cpu
        .map(|cpu| cpu.as_secs_f64() * 1e6 / n);
    let rss_ok = report.rss_per_session.map(|r| r <= TARGET_RSS_PER_SESSION);
    let connect_pct = |p| percentile(&report.connect_us, p);
    let lines = [
        json!({"client": "rzk", "metric": "idle_sessions_memory", "n": report.sessions,
               "follow_ensemble": !options.no_follow, "quorum_check": options.quorum_check,
               "heap_bytes_per_session": report.heap_per_session,
               "allocations_per_session": report.allocs_per_session,
               "rss_bytes_per_session": report.rss_per_session,
               "peak_rss_bytes_per_session": report.peak_rss_per_session,
               "target_rss_bytes_per_session": TARGET_RSS_PER_SESSION,
               "target_met": rss_ok}),
        json!({"client": "rzk", "metric": "idle_sessions_connect", "n": report.sessions,
               "parallel": report.parallel,
               "seconds": report.connect_elapsed.as_secs_f64(),
               "sessions_per_s": n / report.connect_elapsed.as_secs_f64().max(1e-9),
               "p50_us": connect_pct(50.0), "p99_us": connect_pct(99.0),
               "max_us": connect_pct(100.0),
               "client_cpu_us_per_session": report.connect_cpu.as_secs_f64() * 1e6 / n,
               "server_connect_requests": report.connect_requests,
               "server_cpu_us_per_session": server_cpu_per_connect,
               "orphan_sessions_expired": report.orphans_expired,
               "settle_seconds": report.settle.as_secs_f64()}),
        json!({"client": "rzk", "metric": "idle_sessions_hold", "n": report.sessions,
               "session_timeout_ms": timeout.as_millis() as u64,
               "seconds": secs, "session_timeouts": secs / timeout.as_secs_f64(),
               "server_packets_received": pings, "server_packets_sent": report.packets_sent,
               "pings_per_s": pings.map(|p| p / secs),
               "expected_pings_per_s": expected_pings_per_s,
               "pings_per_session_per_s": pings_per_session_s,
               "client_cpu_us_per_ping": cpu_per_ping,
               "server_cpu_us_per_ping": server_cpu_per_ping,
               "server_zxid_delta": report.zxid_delta,
               "server_alive_connections": report.alive_connections,
               "server_global_sessions": report.server_sessions,
               "rss_growth_during_hold_bytes": report.rss_growth_during_hold,
               "heap_bytes_per_session_after_hold": report.heap_after_hold_per_session,
               "not_connected_observations": report.not_connected_seen,
               "first_not_connected_s": report.first_not_connected.map(|d| d.as_secs_f64()),
               "longest_wakeup_delay_ms": report.longest_stall.as_secs_f64() * 1e3,
               "sessions_lost": report.lost,
               "failed_round_trips_after": report.failed_round_trips,
               "first_failure": report.round_trip_error,
               "close_seconds": report.close_elapsed.as_secs_f64()}),
    ];
    if options.json {
        for line in &lines {
            println!("{}", zk_benches::json::to_line(line));
        }
        return;
    }
    let opt =
        |v: Option<f64>, digits: usize| v.map_or("unknown".to_owned(), |v| format!("{v:.digits$}"));
    println!(
        "{} idle sessions{}{}: heap {:.0} B/session ({:.1} allocations), RSS {} B/session \
         (target <= {:.0}: {}), peak RSS {} B/session",
        report.sessions,
        if options.no_follow {
            ", not following the ensemble"
        } else {
            ""
        },
        if options.quorum_check {
            ", quorum check held"
        } else {
            ""
        },
        report.heap_per_session,
        report.allocs_per_session,
        opt(report.rss_per_session, 0),
        TARGET_RSS_PER_SESSION,
        match rss_ok {
            Some(true) => "met",
            Some(false) => "missed",
            None => "unknown",
        },
        opt(report.peak_rss_per_session, 0)
    );
    println!(
        "connect: {} sessions in {:.2} s ({:.0}/s, {} at a time); one connect p50 {} us, p99 {} \
         us, max {} us; CPU per session: client {:.0} us, server {} us; server: {} ConnectRequests; {} sessions of \
         abandoned attempts expired in the {:.1} s after",
        report.sessions,
        report.connect_elapsed.as_secs_f64(),
        n / report.connect_elapsed.as_secs_f64().max(1e-9),
        report.parallel,
        opt(connect_pct(50.0), 0),
        opt(connect_pct(99.0), 0),
        opt(connect_pct(100.0), 0),
        report.connect_cpu.as_secs_f64() * 1e6 / n,
        opt(server_cpu_per_connect, 0),
        opt(report.connect_requests, 0),
        opt(report.orphans_expired, 0),
        report.settle.as_secs_f64()
    );
    println!(
        "idle for {secs:.1} s ({:.1} session timeouts of {} ms): server received {} packets \
         ({}/s, {:.0}/s expected: {} per session per s), CPU per ping: client {} us, server {} \
         us; server zxid \
         {:+}, {} connections open; heap then {:.0} B/session, RSS {:+.0} B/session over the \
         stretch; {} sessions lost, {} failed their round trip after{}; closed in {:.2} s; this \
         process woke up to {:.0} ms late{}",
        secs / timeout.as_secs_f64(),
        timeout.as_millis(),
        opt(pings, 0),
        opt(pings.map(|p| p / secs), 0),
        expected_pings_per_s,
        opt(pings_per_session_s, 3),
        opt(cpu_per_ping, 2),
        opt(server_cpu_per_ping, 2),
        report.zxid_delta.unwrap_or_default(),
        opt(report.alive_connections, 0),
        report.heap_after_hold_per_session,
        report.rss_growth_during_hold.unwrap_or_default() / n,
        report.lost,
        report.failed_round_trips,
        report
            .round_trip_error
            .as_ref()
            .map_or(String::new(), |e| format!(" (the first: {e})")),
        report.close_elapsed.as_secs_f64(),
        report.longest_stall.as_secs_f64() * 1e3,
        report
            .first_not_connected
            .map_or(String::new(), |at| format!(
                "; first session not connected {:.1} s into the idle stretch",
                at.as_secs_f64()
            ))
    );
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::parse();
    // The sessions' sockets, and the local server's (it inherits the limit).
    if let Err(e) = raise_nofile(options.sessions as u64 + SPARE_FILES) {
        eprintln!("idle_sessions: error: {e}");
        return ExitCode::FAILURE;
    }
    let local =
        || tuned_server("idle_sessions", "maxClientCnxns=0", 1024).config("maxClientCnxns", 0);
    let setup = match Setup::start(
        "idle_sessions",
        options.connect.as_deref(),
        local,
        zk_benches::runtime,
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
    if report.lost > 0 || report.failed_round_trips > 0 {
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
