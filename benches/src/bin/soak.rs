//! Soak: lock contention on a local three-server ensemble while its servers are killed and
//! restarted, one every few seconds, for a given time.
//!
//! `cargo run --release -p zk-benches --bin soak -- [--minutes M] [--sessions N]
//! [--restart-every SECONDS] [--json]`
//!
//! Every contender loops acquire, critical section, release on one lock. Inside the critical
//! section an in-process holders counter must read exactly 1 while the guard says the lock is
//! held (a violation otherwise), and the fencing tokens must increase in grant order. A
//! contender whose session expires opens a new one. At the end every session is closed and
//! the lock path listed: leftover nodes must be 0. Prints cycles, violations, token-order
//! errors, leftover nodes and the errors seen; exits non-zero if violations or leftovers are
//! not 0. A benchmark mode, not a CI test: CI runs it once for a few seconds to prove it works.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser as _;
use zk_benches::args::positive_number;
use zk_proto::Client;
use zk_recipes::Error;
use zk_recipes::lock::Lock;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "soak",
    override_usage = "cargo run --release -p zk-benches --bin soak -- [options]",
    about = "Soak: lock contention on a local three-server ensemble while its servers are\
             \nkilled and restarted, one every few seconds, for a given time.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Args {
    /// how long to run, in minutes
    #[arg(long, value_name = "M", default_value_t = 1.0, value_parser = positive_number)]
    minutes: f64,
    /// contenders, one session each (rounded up)
    #[arg(long, value_name = "N", default_value_t = 8.0, value_parser = positive_number)]
    sessions: f64,
    /// seconds between two server restarts
    #[arg(long, value_name = "SECONDS", default_value_t = 4.0, value_parser = positive_number)]
    restart_every: f64,
    /// one JSON object on stdout
    #[arg(long)]
    json: bool,
}

struct Options {
    duration: Duration,
    sessions: usize,
    restart_every: Duration,
    json: bool,
}

impl From<Args> for Options {
    fn from(args: Args) -> Options {
        Options {
            duration: Duration::from_secs_f64(args.minutes * 60.0),
            sessions: args.sessions.ceil() as usize,
            restart_every: Duration::from_secs_f64(args.restart_every),
            json: args.json,
        }
    }
}

#[derive(Default)]
struct Tally {
    cycles: AtomicU64,
    violations: AtomicU64,
    token_order_errors: AtomicU64,
    /// Acquires or releases that failed (session moved, expired, timed out): expected while
    /// servers restart; reported, not a failure.
    failed_acquires: AtomicU64,
    lost_while_holding: AtomicU64,
    new_sessions: AtomicU64,
}

async fn connect(connect: &str) -> Result<Client, zk_proto::Error> {
    Client::builder()
        .session_timeout(Duration::from_secs(6))
        .request_timeout(Some(Duration::from_secs(20)))
        .connect(connect)
        .await
}

async fn contender(
    connect_string: String,
    path: String,
    stop: Arc<AtomicBool>,
    inside: Arc<AtomicU64>,
    last_token: Arc<Mutex<i64>>,
    tally: Arc<Tally>,
) {
    let mut client = None;
    while !stop.load(Ordering::SeqCst) {
        let c = match &client {
            Some(c) => Client::clone(c),
            None => match connect(&connect_string).await {
                Ok(c) => {
                    tally.new_sessions.fetch_add(1, Ordering::Relaxed);
                    client = Some(c.clone());
                    c
                }
                // The ensemble may be short of a server: try again.
                Err(_) => continue,
            },
        };
        let lock = Lock::new(&c, &path);
        let guard = match lock.acquire(Some(Duration::from_secs(20))).await {
            Ok(guard) => guard,
            Err(e) => {
                tally.failed_acquires.fetch_add(1, Ordering::Relaxed);
                if matches!(e, Error::Zk(ref z) if z.is_terminal()) {
                    client = None;
                }
                continue;
            }
        };
        if guard.is_valid() {
            if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                tally.violations.fetch_add(1, Ordering::SeqCst);
            }
            {
                let mut last = last_token.lock().unwrap_or_else(|p| p.into_inner());
                if guard.fencing_token() <= *last {
                    tally.token_order_errors.fetch_add(1, Ordering::SeqCst);
                }
                *last = guard.fencing_token();
            }
            tokio::task::yield_now().await;
            // Leave the section before letting go, as a careful holder does.
            inside.fetch_sub(1, Ordering::SeqCst);
            tally.cycles.fetch_add(1, Ordering::Relaxed);
        }
        if guard.release().await.is_err() {
            tally.lost_while_holding.fetch_add(1, Ordering::Relaxed);
        }
    }
    if let Some(client) = client {
        let _ = client.close().await;
    }
}

struct Report {
    elapsed: Duration,
    restarts: u64,
    leftover: usize,
}

async fn run(options: &Options, tally: Arc<Tally>) -> Result<Report, BoxError> {
    eprintln!("soak: starting a local 3-server ensemble...");
    let ensemble = Arc::new(
        tokio::task::spawn_blocking(|| -> Result<_, zk_testkit::Error> {
            let e = zk_testkit::Ensemble::start(3)?;
            e.wait_for_leader()?;
            Ok(e)
        })
        .await??,
    );
    let connect_string = ensemble.connect_string();
    let path = format!("/rzk-soak-{}/lock", std::process::id());
    let stop = Arc::new(AtomicBool::new(false));
    let inside = Arc::new(AtomicU64::new(0));
    let last_token = Arc::new(Mutex::new(i64::MIN));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..options.sessions {
        tasks.push(tokio::spawn(contender(
            connect_string.clone(),
            path.clone(),
            stop.clone(),
            inside.clone(),
            last_token.clone(),
            tally.clone(),
        )));
    }
    // Kill -9 and restart the servers in turn.
    let mut restarts = 0u64;
    let mut next = 0usize;
    while started.elapsed() + options.restart_every <= options.duration {
        tokio::time::sleep(options.restart_every).await;
        let e = ensemble.clone();
        let i = next % e.len();
        tokio::task::spawn_blocking(move || {
            e.kill(i);
            e.restart(i)
        })
        .await??;
        restarts += 1;
        next += 1;
        eprintln!(
            "soak: {:>5.1} s: restarted server {i}; {} cycles so far",
            started.elapsed().as_secs_f64(),
            tally.cycles.load(Ordering::Relaxed)
        );
    }
    let rest = options.duration.saturating_sub(started.elapsed());
    tokio::time::sleep(rest).await;
    stop.store(true, Ordering::SeqCst);
    for task in tasks {
        task.await?;
    }
    let elapsed = started.elapsed();
    // Every session is closed: no node may be left.
    let observer = connect(&connect_string).await?;
    let leftover = match observer.get_children(&path).await {
        Ok(children) => children.len(),
        Err(zk_proto::Error::NoNode) => 0,
        Err(e) => return Err(e.into()),
    };
    let _ = observer.close().await;
    Ok(Report {
        elapsed,
        restarts,
        leftover,
    })
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::from(Args::parse());
    let runtime = match zk_benches::runtime("soak") {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let tally = Arc::new(Tally::default());
    let report = match runtime.block_on(run(&options, tally.clone())) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("soak: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let get = |c: &AtomicU64| c.load(Ordering::SeqCst);
    let (cycles, violations, token_errors) = (
        get(&tally.cycles),
        get(&tally.violations),
        get(&tally.token_order_errors),
    );
    if options.json {
        println!(
            "{{\"client\":\"rzk\",\"metric\":\"soak\",\"n\":{cycles},\"violations\":{violations},\
             \"token_order_errors\":{token_errors},\"leftover_nodes\":{},\"restarts\":{},\
             \"duration_s\":{:.1},\"sessions\":{},\"new_sessions\":{},\"failed_acquires\":{},\
             \"lost_while_holding\":{}}}",
            report.leftover,
            report.restarts,
            report.elapsed.as_secs_f64(),
            options.sessions,
            get(&tally.new_sessions),
            get(&tally.failed_acquires),
            get(&tally.lost_while_holding),
        );
    } else {
        println!(
            "soak (client rzk): {} sessions, {:.1} s, {} server restarts\n\
             cycles {cycles}  violations {violations}  token-order errors {token_errors}  \
             leftover nodes {}\n\
             sessions opened {}  failed acquires {}  lost while holding {}",
            options.sessions,
            report.elapsed.as_secs_f64(),
            report.restarts,
            report.leftover,
            get(&tally.new_sessions),
            get(&tally.failed_acquires),
            get(&tally.lost_while_holding),
        );
    }
    if violations > 0 || token_errors > 0 || report.leftover > 0 || cycles == 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod command_line {
    use clap::CommandFactory as _;

    #[test]
    fn the_command_is_consistent() {
        super::Args::command().debug_assert();
    }
}
