//! The lock latency benchmark (`src/bin/lock_latency.rs`): per-operation latency of raw
//! ZooKeeper calls, of the lock recipe ([`zk_recipes::lock::Lock`]) and of the leader latch
//! ([`zk_recipes::election::LeaderLatch`]) against a real server, with the server's packet and
//! transaction counters read around each workload.
//!
//! - [`Options::parse`] reads the command line ([`Args`], clap; `cli.rs`).
//! - [`run`] starts a local server or ensemble with the test kit (unless `--connect` names one),
//!   runs the workloads ([`Workload`]; `workloads.rs`, the elections with their limits in
//!   `election.rs`, counters in `servers.rs`) in blocks,
//!   with the reference clients ([`RefClient`]; `reference.rs`,
//!   `benches/java/LockLatencyRef.java`) interleaved with ours (`blocks.rs`), and returns
//!   their [`Metric`]s, then the ratios ([`ratios`], [`ratios_to_ref`]; `metric.rs`).
//! - [`Metric::to_json`] is one JSON line; [`to_table`] the readable report (`table.rs`);
//!   `--plot` writes an SVG of the latency distributions (`svg.rs`).
//!
//! See `docs/performance.md` for the figures and how to read them.

mod blocks;
mod breakdown;
mod cli;
mod election;
mod metric;
mod reference;
mod security;
mod servers;
mod svg;
mod table;
mod workloads;

pub use cli::{Args, Clients, Counts, Options, Workloads};
pub use metric::{Metric, ratios, ratios_to_ref};
pub use reference::{RefClient, classpath as reference_classpath};
pub use servers::server_addrs;
pub use table::to_table;
pub use workloads::{Workload, cpu_now};

pub use crate::BoxError;

/// Where the benchmark ran, and what it measured.
#[derive(Debug)]
pub struct Outcome {
    /// A description of the target (`local standalone ZooKeeper ... (forceSync=yes)`).
    pub target: String,
    /// Every metric in report order, then the ratios.
    pub metrics: Vec<Metric>,
}

impl Outcome {
    /// The JSON lines (each ends with a newline).
    pub fn to_json_lines(&self) -> String {
        self.metrics
            .iter()
            .map(|m| m.to_json() + "\n")
            .collect::<String>()
    }

    /// The table.
    pub fn to_table(&self) -> String {
        to_table(&self.target, &self.metrics)
    }

    /// The SVG plot of the latency distributions.
    pub fn to_svg(&self) -> String {
        svg::render(&self.target, &self.metrics)
    }
}

/// The test kit starts its servers with the JIT stopped at C1 (`-XX:TieredStopAtLevel=1`):
/// quick to start, slower to run. A benchmark's local servers get the full tiered JIT, as a
/// production server has (HotSpot takes the last of repeated flags).
pub const PRODUCTION_JIT: &str = "-XX:TieredStopAtLevel=4";

/// Blocks per workload with `--tls` unless `--blocks` says otherwise.
const TLS_BLOCKS: usize = 4;

/// Blocks per workload otherwise (odd: the median of the per-block ratios is one block's).
const DEFAULT_BLOCKS: usize = 5;

/// Heap of the benchmark's local servers, in MiB (the test kit's default is 256).
const BENCH_HEAP_MB: u32 = 512;

/// Server settings for a small machine whose cores the client shares, given to the
/// benchmark's local servers unless `--stock-server`: ZooKeeper's documented thread-pool knobs
/// set to 0, so that a connection's socket I/O runs in the selector thread and a commit in the
/// commit processor's thread (ensembles), instead of each request waking a worker thread. On
/// two cores the stock pools (2 × cores I/O workers, one commit worker per core) cost a
/// thread hand-over per request that shows in every figure, most in pipelined reads (≈ 3 ×
/// fewer getData/s on one connection).
pub const SMALL_MACHINE_SERVER: [(&str, &str); 2] = [
    ("zookeeper.nio.numWorkerThreads", "0"),
    ("zookeeper.commitProcessor.numWorkerThreads", "0"),
];

/// Runs the benchmark: starts the local server(s) if needed, the workloads, and stops them.
///
/// # Errors
///
/// A server that does not start, a connection that fails, a workload error.
pub fn run(options: &Options) -> Result<Outcome, BoxError> {
    let mut server = None;
    let mut ensemble = None;
    let jaas = if options.sasl {
        Some(zk_testkit::DigestJaas::write(&[(
            security::SASL_USER,
            security::SASL_PASSWORD,
        )])?)
    } else {
        None
    };
    let fsync = if options.no_fsync { "no" } else { "yes" };
    let tuning: &[(&str, &str)] = if options.stock_server {
        &[]
    } else {
        &SMALL_MACHINE_SERVER
    };
    let setup = format!(
        "forceSync={fsync}, {}",
        if options.stock_server {
            "stock thread pools"
        } else {
            "I/O in the selector thread"
        }
    );
    let zk_workloads: Vec<Workload> = options
        .workloads
        .iter()
        .copied()
        .filter(|w| *w != Workload::Codec)
        .collect();
    let compare: Vec<RefClient> = match &options.compare {
        Some(clients) => clients.clone(),
        None if options.tls || options.sasl => {
            eprintln!(
                "lock_latency: comparison skipped: the reference clients are measured over \
                 plaintext without SASL only"
            );
            Vec::new()
        }
        None => match reference::classpath() {
            Ok(_) => RefClient::ALL.to_vec(),
            Err(why) => {
                eprintln!("lock_latency: comparison with Java and Curator skipped: {why}");
                Vec::new()
            }
        },
    };
    let mut counters_connect = None;
    let (connect, target) = match &options.connect {
        _ if zk_workloads.is_empty() => (String::new(), "no server (codec only)".to_owned()),
        Some(connect) => (connect.clone(), format!("{connect} (given)")),
        None if options.ensemble => {
            if !options.quiet {
                eprintln!(
                    "lock_latency: starting a local 3-server ensemble (forceSync={fsync})..."
                );
            }
            let mut builder = zk_testkit::Ensemble::builder(3)
                .force_sync(!options.no_fsync)
                .jvm_arg(PRODUCTION_JIT)
                .max_heap_mb(BENCH_HEAP_MB);
            for (key, value) in tuning {
                builder = builder.system_property(*key, *value);
            }
            let e = builder.start()?;
            e.wait_for_leader()?;
            let cs = e.connect_string();
            // Every session on a follower, as production clients mostly are: writes are
            // forwarded to the leader. The counters are read on every server.
            let followers = servers::followers(&e.addrs())
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join(",");
            if followers.is_empty() {
                return Err("the local ensemble has no follower".into());
            }
            counters_connect = Some(cs.clone());
            ensemble = Some(e);
            (
                followers.clone(),
                format!(
                    "local 3-server ZooKeeper ensemble {cs}, sessions on the followers \
                     {followers} ({setup})"
                ),
            )
        }
        None => {
            if !options.quiet {
                eprintln!("lock_latency: starting a local ZooKeeper (forceSync={fsync})...");
            }
            let mut builder = zk_testkit::ZkServer::builder()
                .force_sync(!options.no_fsync)
                .jvm_arg(PRODUCTION_JIT)
                .max_heap_mb(BENCH_HEAP_MB);
            for (key, value) in tuning {
                builder = builder.system_property(*key, *value);
            }
            if options.tls {
                builder = builder.tls(zk_testkit::ClientAuth::None);
            }
            if let Some(jaas) = &jaas {
                builder = builder.sasl_digest(jaas);
            }
            let s = builder.start()?;
            let cs = s.connect_string();
            let security = match (s.tls_connect_string(), &jaas) {
                (Some(tls), _) => format!("; then over TLS at {tls}"),
                (None, Some(_)) => "; SASL DIGEST-MD5 sessions".to_owned(),
                (None, None) => String::new(),
            };
            server = Some(s);
            (
                cs.clone(),
                format!("local standalone ZooKeeper {cs} ({setup}{security})"),
            )
        }
    };
    let mut metrics = Vec::new();
    let mut block_metrics: Vec<Vec<Metric>> = Vec::new();
    if !zk_workloads.is_empty() {
        let addrs = server_addrs(counters_connect.as_deref().unwrap_or(&connect))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // No configuration following: its reads would land in the servers' packet counters.
        let mut builder = zk_proto::Client::builder().follow_ensemble(false);
        if jaas.is_some() {
            builder = builder.sasl_digest(security::SASL_USER, security::SASL_PASSWORD);
        }
        let ctx = workloads::Context {
            counter_overhead: servers::counter_overhead(&addrs),
            connect: connect.clone(),
            builder,
            addrs,
            counts: options.counts,
            progress: !options.quiet,
            base: format!("/rzk-bench-{}", std::process::id()),
        };
        // Over TLS, the same workloads against the same server: the server's plaintext port
        // stays for the counters (four-letter words).
        let tls_ctx = match server.as_ref().filter(|_| options.tls) {
            Some(s) => {
                let (tls_connect, certs) = s
                    .tls_connect_string()
                    .zip(s.tls_certs())
                    .ok_or("the local server has no TLS port")?;
                Some(workloads::Context {
                    connect: tls_connect,
                    builder: zk_proto::Client::builder()
                        .follow_ensemble(false)
                        .tls(zk_proto::TlsOptions::new().ca_pem_file(certs.ca())),
                    base: format!("/rzk-bench-tls-{}", std::process::id()),
                    ..ctx.clone()
                })
            }
            None => None,
        };
        let reference = if zk_workloads
            .iter()
            .any(|w| RefClient::for_workload(*w).is_some_and(|c| compare.contains(&c)))
        {
            match reference::RefProcess::start() {
                Ok(process) => {
                    if !options.quiet {
                        eprintln!(
                            "lock_latency: comparing with {} (Java {})",
                            compare
                                .iter()
                                .map(|c| c.name())
                                .collect::<Vec<_>>()
                                .join(", "),
                            process.version
                        );
                    }
                    Some(process)
                }
                Err(e) if options.compare.is_some() => {
                    return Err(format!("--compare: {e}").into());
                }
                Err(e) => {
                    eprintln!("lock_latency: comparison skipped: {e}");
                    None
                }
            }
        } else {
            None
        };
        let block_count = options.blocks.unwrap_or(if options.tls {
            TLS_BLOCKS
        } else {
            DEFAULT_BLOCKS
        });
        let per_block = |c: workloads::Context| workloads::Context {
            counts: c.counts.per_block(block_count),
            ..c
        };
        let ref_ctx = workloads::Context {
            base: format!("/rzk-bench-{}-ref", std::process::id()),
            ..ctx.clone()
        };
        let mut sides = vec![blocks::Side::Ours {
            ctx: per_block(ctx),
            suffix: "",
        }];
        if let Some(c) = tls_ctx {
            sides.push(blocks::Side::Ours {
                ctx: per_block(c),
                suffix: security::TLS_SUFFIX,
            });
        }
        if let Some(process) = reference {
            sides.push(blocks::Side::Reference {
                ctx: per_block(ref_ctx),
                process,
                clients: compare.clone(),
            });
        }
        let per_side = blocks::run_interleaved(
            &runtime,
            &mut sides,
            &zk_workloads,
            block_count,
            !options.quiet,
        )?;
        drop(sides);
        let pooled: Vec<Vec<Metric>> = per_side.iter().map(|b| blocks::pool(b)).collect();
        // Each of our metrics, then the reference's of the same name right after it; then
        // the other variants (TLS).
        let (references, variants): (Vec<Metric>, Vec<Metric>) = pooled
            .iter()
            .skip(1)
            .flatten()
            .cloned()
            .partition(|m| m.reference.is_some());
        for m in pooled.first().into_iter().flatten() {
            metrics.push(m.clone());
            let prefix = format!("{}@", m.name);
            metrics.extend(
                references
                    .iter()
                    .filter(|r| {
                        r.name
                            .strip_prefix(&prefix)
                            .is_some_and(|c| !c.contains('@'))
                    })
                    .cloned(),
            );
        }
        metrics.extend(variants);
        // Block i of every side, together: the ratios' per-block sides.
        block_metrics = (0..block_count)
            .map(|i| per_side.iter().flat_map(|b| b[i].clone()).collect())
            .collect();
        ratios_to_ref(&mut metrics, &block_metrics);
    }
    drop(ensemble);
    drop(server);
    if options.workloads.contains(&Workload::Codec) {
        metrics.extend(workloads::codec(options.codec_no_java, !options.quiet)?);
    }
    let ratios = ratios(&metrics, &block_metrics);
    metrics.extend(ratios);
    Ok(Outcome { target, metrics })
}
