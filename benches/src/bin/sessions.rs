//! Many sessions in one process: client memory per idle session, then a mixed pipelined load.
//!
//! `cargo run --release -p zk-benches --bin sessions -- [--sessions N] [--ops N]
//! [--in-flight N] [--connect HOST:PORT[,...]] [--json]`
//!
//! Without `--connect` it starts a local ZooKeeper (test kit, `maxClientCnxns=0` so that one
//! address may open every session) and stops it at the end. It opens the sessions, each with a
//! data watch on its own node and a child watch on a shared node, and reads the process's
//! resident memory (`VmRSS`, `VmHWM` of `/proc/self/status`) before and after: the growth per
//! idle session, and the peak RSS over the sessions. Then every session runs its share of the
//! mixed operations (getData, setData, exists, create + delete, getChildren) with up to
//! `--in-flight` requests in flight each, and finally every watch is checked to have fired
//! exactly once. Exits non-zero if an operation failed or a watch did not fire.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Parser as _;
use zk_benches::args::positive;
use zk_proto::{Client, CreateOptions, EventType};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The command line.
#[derive(Debug, clap::Parser)]
#[command(
    name = "sessions",
    override_usage = "cargo run --release -p zk-benches --bin sessions -- [options]",
    about = "Many sessions in one process: client memory per idle session, then a mixed \
             pipelined load.",
    help_template = zk_benches::args::HELP_TEMPLATE,
    max_term_width = zk_benches::args::HELP_WIDTH,
    args_override_self = true
)]
struct Options {
    /// sessions to open
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = positive::<usize>)]
    sessions: usize,
    /// mixed operations in all
    #[arg(long, value_name = "N", default_value_t = 200_000, value_parser = positive::<usize>)]
    ops: usize,
    /// requests in flight per session
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = positive::<usize>)]
    in_flight: usize,
    /// measure against that server or ensemble
    /// (default: a local server, started and stopped)
    #[arg(long, value_name = "HOST:PORT[,...]", verbatim_doc_comment)]
    connect: Option<String>,
    /// one JSON object on stdout
    #[arg(long)]
    json: bool,
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), if readable.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

struct Report {
    sessions: usize,
    rss_before: Option<u64>,
    rss_idle: Option<u64>,
    peak_rss: Option<u64>,
    ops: u64,
    errors: u64,
    elapsed: Duration,
    watches_fired: usize,
    watches: usize,
}

async fn run(options: &Options, connect: &str) -> Result<Report, BoxError> {
    let base = format!("/rzk-sessions-{}", std::process::id());
    let admin = Client::connect(connect).await?;
    admin
        .create(&base, "", &CreateOptions::persistent())
        .await?;
    admin
        .create(&format!("{base}/shared"), "", &CreateOptions::persistent())
        .await?;
    let rss_before = status_bytes("VmRSS");

    // Open the sessions, each with its node and two watches.
    let mut clients = Vec::with_capacity(options.sessions);
    let mut watches = Vec::with_capacity(options.sessions * 2);
    for i in 0..options.sessions {
        let client = Client::builder()
            .session_timeout(Duration::from_secs(30))
            .request_timeout(Some(Duration::from_secs(60)))
            .connect(connect)
            .await?;
        let node = format!("{base}/s{i}");
        client
            .create(&node, "0", &CreateOptions::ephemeral())
            .await?;
        let (_, _, data_watch) = client.get_data_watch(&node).await?;
        let (_, child_watch) = client.get_children_watch(&format!("{base}/shared")).await?;
        watches.push(tokio::spawn(async move {
            data_watch
                .changed()
                .await
                .is_ok_and(|e| e.event_type == EventType::NODE_DATA_CHANGED)
        }));
        watches.push(tokio::spawn(async move {
            child_watch
                .changed()
                .await
                .is_ok_and(|e| e.event_type == EventType::NODE_CHILDREN_CHANGED)
        }));
        clients.push(client);
    }
    let rss_idle = status_bytes("VmRSS");

    // The mixed load: every session its share, `in_flight` requests at a time.
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(clients.len());
    let per_session = options.ops.div_ceil(options.sessions);
    for (i, client) in clients.iter().enumerate() {
        let (client, done, errors) = (client.clone(), done.clone(), errors.clone());
        let node = format!("{base}/s{i}");
        let in_flight = options.in_flight;
        tasks.push(tokio::spawn(async move {
            let mut issued = 0usize;
            while issued < per_session {
                let batch = in_flight.min(per_session - issued);
                // Calls are queued when made: the whole batch is in flight at once.
                let calls: Vec<_> = (issued..issued + batch)
                    .map(|k| mixed_op(&client, &node, k))
                    .collect();
                for call in calls {
                    if call.await.is_ok() {
                        done.fetch_add(1, Ordering::Relaxed);
                    } else {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                issued += batch;
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    let elapsed = started.elapsed();
    // Fire the child watches (one child created under the shared node) and any data watch
    // the load did not fire (a session whose share had no setData).
    admin
        .create(
            &format!("{base}/shared/go"),
            "",
            &CreateOptions::persistent(),
        )
        .await?;
    for (i, client) in clients.iter().enumerate() {
        client
            .set_data(&format!("{base}/s{i}"), "end", None)
            .await?;
    }
    let mut fired = 0;
    let watch_count = watches.len();
    for watch in watches {
        if tokio::time::timeout(Duration::from_secs(30), watch).await?? {
            fired += 1;
        }
    }
    let peak_rss = status_bytes("VmHWM");
    for client in &clients {
        let _ = client.close().await;
    }
    let _ = admin.delete(&format!("{base}/shared/go"), None).await;
    let _ = admin.delete(&format!("{base}/shared"), None).await;
    let _ = admin.delete(&base, None).await;
    let _ = admin.close().await;
    Ok(Report {
        sessions: options.sessions,
        rss_before,
        rss_idle,
        peak_rss,
        ops: done.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        elapsed,
        watches_fired: fired,
        watches: watch_count,
    })
}

/// The `k`-th operation of a session: a mix of reads and writes on its own node and on a
/// short-lived sibling of it.
fn mixed_op(
    client: &Client,
    node: &str,
    k: usize,
) -> std::pin::Pin<Box<dyn Future<Output = zk_proto::Result<()>> + Send>> {
    match k % 8 {
        0..=2 => {
            let call = client.get_data(node);
            Box::pin(async move { call.await.map(|_| ()) })
        }
        3 => {
            let call = client.set_data(node, format!("{k}"), None);
            Box::pin(async move { call.await.map(|_| ()) })
        }
        4 | 5 => {
            let call = client.exists(node);
            Box::pin(async move { call.await.map(|_| ()) })
        }
        6 => {
            let child = format!("{node}-c{k}");
            let create = client.create(&child, "", &CreateOptions::ephemeral());
            let delete = client.delete(&child, None);
            Box::pin(async move {
                create.await?;
                delete.await
            })
        }
        _ => {
            let call = client.get_children(node);
            Box::pin(async move { call.await.map(|_| ()) })
        }
    }
}

fn per_session(bytes: Option<u64>, base: Option<u64>, n: usize) -> Option<f64> {
    let grown = bytes?.checked_sub(base.unwrap_or(0))?;
    Some(grown as f64 / n as f64)
}

fn json_num(v: Option<f64>) -> String {
    v.map_or("null".to_owned(), |v| format!("{v:.1}"))
}

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = Options::parse();
    let (server, connect) =
        match zk_benches::local_server("sessions", options.connect.as_deref(), || {
            eprintln!("sessions: starting a local ZooKeeper (maxClientCnxns=0)...");
            zk_testkit::ZkServer::builder().config("maxClientCnxns", 0)
        }) {
            Ok(found) => found,
            Err(code) => return code,
        };
    let runtime = match zk_benches::runtime("sessions") {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let report = match runtime.block_on(run(&options, &connect)) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("sessions: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    drop(server);
    let idle = per_session(report.rss_idle, report.rss_before, report.sessions);
    let peak = per_session(report.peak_rss, None, report.sessions);
    let ops_per_s = report.ops as f64 / report.elapsed.as_secs_f64().max(1e-9);
    if options.json {
        println!(
            "{{\"client\":\"rzk\",\"metric\":\"idle_session_memory\",\"n\":{},\
             \"rss_growth_per_session_bytes\":{},\"peak_rss_per_session_bytes\":{}}}",
            report.sessions,
            json_num(idle),
            json_num(peak)
        );
        println!(
            "{{\"client\":\"rzk\",\"metric\":\"mixed_load\",\"n\":{},\"errors\":{},\
             \"ops_per_s\":{ops_per_s:.0},\"sessions\":{},\"watches\":{},\"watches_fired\":{}}}",
            report.ops, report.errors, report.sessions, report.watches, report.watches_fired
        );
    } else {
        println!("sessions (client rzk) against {connect}");
        println!(
            "{} idle sessions: RSS growth {} bytes/session; peak RSS {} bytes/session",
            report.sessions,
            json_num(idle),
            json_num(peak)
        );
        println!(
            "mixed load: {} operations ok, {} failed, in {:.2} s ({ops_per_s:.0} ops/s); \
             watches fired {}/{}",
            report.ops,
            report.errors,
            report.elapsed.as_secs_f64(),
            report.watches_fired,
            report.watches
        );
    }
    if report.errors > 0 || report.watches_fired != report.watches {
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
