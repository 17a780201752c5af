//! What the quorum check costs the ensemble's leader.
//!
//! `cargo run --release -p zk-benches --bin quorum_check -- [--sessions N] [--timeout-ms T]
//! [--seconds D] [--blocks B] [--json]`
//!
//! Starts a local 3-server ensemble (test kit), opens `--sessions` idle sessions on the two
//! followers (the case the check exists for: each check crosses to the leader), and measures
//! blocks of `--seconds` alternately with the check off and held by every session
//! ([`zk_proto::Client::quorum_check`]). Per block it reads the leader's `mntr` counter of
//! requests entering its pipeline (`zk_prep_processor_request_queued`: a follower's sync is
//! one there) and the leader JVM's CPU time (`/proc/<pid>/stat`). It prints the leader's
//! requests per second per session with the check on and off, the expected `16/T`, and the
//! leader's CPU time per second of both and per check. Figures, not a test: it exits non-zero
//! only when a measurement could not be made.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser as _;
use serde::Serialize;
use zk_benches::args::positive;
use zk_proto::Client;
use zk_testkit::{Ensemble, four_letter};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "quorum_check",
    override_usage = "cargo run --release -p zk-benches --bin quorum_check -- [options]",
    about = "What the quorum check costs the ensemble's leader.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Args {
    /// idle sessions on the followers
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = positive::<usize>)]
    sessions: usize,
    /// the sessions' timeout, in ms
    #[arg(long, value_name = "T", default_value_t = 4_000, value_parser = positive::<u64>)]
    timeout_ms: u64,
    /// seconds per block
    #[arg(long, value_name = "D", default_value_t = 5, value_parser = positive::<u64>)]
    seconds: u64,
    /// blocks per side (check off, check held)
    #[arg(long, value_name = "B", default_value_t = 2, value_parser = positive::<usize>)]
    blocks: usize,
    /// one JSON object on stdout
    #[arg(long)]
    json: bool,
}

struct Options {
    sessions: usize,
    timeout: Duration,
    seconds: u64,
    blocks: usize,
    json: bool,
}

impl From<Args> for Options {
    fn from(args: Args) -> Options {
        Options {
            sessions: args.sessions,
            timeout: Duration::from_millis(args.timeout_ms),
            seconds: args.seconds,
            blocks: args.blocks,
            json: args.json,
        }
    }
}

/// The numeric lines of a server's `mntr`.
fn mntr(addr: std::net::SocketAddr) -> Result<BTreeMap<String, f64>, BoxError> {
    let text = four_letter(addr, "mntr", Duration::from_secs(5))?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('\t')?;
            Some((key.to_owned(), value.trim().parse().ok()?))
        })
        .collect())
}

/// A process's CPU time (user + system) from `/proc/<pid>/stat`, in clock ticks of 10 ms
/// (`CLK_TCK` is 100 on Linux).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

#[derive(Debug, Default, Clone, Copy)]
struct Block {
    requests: f64,
    cpu_ms: f64,
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    sessions: usize,
    session_timeout_ms: u128,
    block_seconds: u64,
    blocks_per_side: usize,
    /// The leader's requests per second per session, check held / off.
    leader_requests_per_s_per_session_on: f64,
    leader_requests_per_s_per_session_off: f64,
    /// What the design sends: 16 per session timeout.
    expected_checks_per_s_per_session: f64,
    /// The leader JVM's CPU time per second of wall time, check held / off.
    leader_cpu_ms_per_s_on: f64,
    leader_cpu_ms_per_s_off: f64,
    /// The difference, per check.
    leader_cpu_us_per_check: f64,
}

async fn measure(addr: std::net::SocketAddr, pid: u32, seconds: u64) -> Result<Block, BoxError> {
    let before = mntr(addr)?;
    let cpu_before = cpu_ticks(pid).ok_or("leader CPU time unreadable")?;
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after = mntr(addr)?;
    let cpu_after = cpu_ticks(pid).ok_or("leader CPU time unreadable")?;
    let key = "zk_prep_processor_request_queued";
    let count = |m: &BTreeMap<String, f64>| m.get(key).copied().ok_or(format!("no {key}"));
    Ok(Block {
        requests: count(&after)? - count(&before)?,
        cpu_ms: (cpu_after.saturating_sub(cpu_before) * 10) as f64,
        seconds: start.elapsed().as_secs_f64(),
    })
}

async fn run(options: &Options) -> Result<Report, BoxError> {
    let ensemble = tokio::task::spawn_blocking(|| Ensemble::start(3)).await??;
    let leader = tokio::task::block_in_place(|| ensemble.wait_for_leader())?;
    let addrs = ensemble.addrs();
    let followers: Vec<usize> = (0..addrs.len()).filter(|&i| i != leader).collect();
    let pid = ensemble
        .server(leader)
        .pid()
        .ok_or("the leader's JVM is not running")?;
    let mut clients: Vec<Client> = Vec::with_capacity(options.sessions);
    for i in 0..options.sessions {
        let follower = followers[i % followers.len()];
        clients.push(
            Client::builder()
                .session_timeout(options.timeout)
                .connect(&addrs[follower].to_string())
                .await?,
        );
    }
    let negotiated = clients[0].negotiated_timeout().unwrap_or(options.timeout);
    let (mut on, mut off) = (Block::default(), Block::default());
    for _ in 0..options.blocks {
        let block = measure(addrs[leader], pid, options.seconds).await?;
        add(&mut off, block);
        let holds: Vec<_> = clients.iter().map(Client::quorum_check).collect();
        let block = measure(addrs[leader], pid, options.seconds).await?;
        add(&mut on, block);
        drop(holds);
    }
    for client in clients {
        let _ = client.close().await;
    }
    let n = options.sessions as f64;
    let per_session = |b: Block| b.requests / b.seconds / n;
    let checks = (on.requests / on.seconds - off.requests / off.seconds).max(1.0);
    Ok(Report {
        sessions: options.sessions,
        session_timeout_ms: negotiated.as_millis(),
        block_seconds: options.seconds,
        blocks_per_side: options.blocks,
        leader_requests_per_s_per_session_on: per_session(on),
        leader_requests_per_s_per_session_off: per_session(off),
        expected_checks_per_s_per_session: 16.0 / negotiated.as_secs_f64(),
        leader_cpu_ms_per_s_on: on.cpu_ms / on.seconds,
        leader_cpu_ms_per_s_off: off.cpu_ms / off.seconds,
        leader_cpu_us_per_check: (on.cpu_ms / on.seconds - off.cpu_ms / off.seconds) * 1_000.0
            / checks,
    })
}

fn add(total: &mut Block, block: Block) {
    total.requests += block.requests;
    total.cpu_ms += block.cpu_ms;
    total.seconds += block.seconds;
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::from(Args::parse());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("quorum_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&options)) {
        Ok(report) if options.json => match serde_json::to_string(&report) {
            Ok(line) => {
                println!("{line}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("quorum_check: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(r) => {
            println!(
                "{} idle sessions on the followers, session timeout {} ms, {} blocks of {} s a side",
                r.sessions, r.session_timeout_ms, r.blocks_per_side, r.block_seconds
            );
            println!(
                "leader requests/s per session: {:.3} with the check, {:.3} without \
                 (expected 16/T = {:.3})",
                r.leader_requests_per_s_per_session_on,
                r.leader_requests_per_s_per_session_off,
                r.expected_checks_per_s_per_session
            );
            println!(
                "leader CPU: {:.1} ms/s with the check, {:.1} ms/s without: {:.1} µs per check",
                r.leader_cpu_ms_per_s_on, r.leader_cpu_ms_per_s_off, r.leader_cpu_us_per_check
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("quorum_check: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod command_line {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_is_consistent() {
        super::Args::command().debug_assert();
    }
}
