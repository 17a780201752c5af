//! The lock latency benchmark (`src/bin/lock_latency.rs`): per-operation latency of raw
//! ZooKeeper calls, of the lock recipe ([`zk_recipes::lock::Lock`]) and of the leader latch
//! ([`zk_recipes::election::LeaderLatch`]) against a real server, with the server's packet and
//! transaction counters read around each workload.
//!
//! - [`Options::parse`] reads the command line ([`USAGE`]).
//! - [`run`] starts a local server or ensemble with the test kit (unless `--connect` names one),
//!   runs the workloads ([`Workload`]) and returns their [`Metric`]s, then the ratios
//!   ([`ratios`]).
//! - [`Metric::to_json`] is one JSON line; [`to_table`] the readable report; `--plot` writes an
//!   SVG of the latency distributions.
//!
//! See `docs/performance.md` for the figures and how to read them.

mod svg;
mod workloads;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use crate::json;

pub use workloads::Workload;

/// The command-line help of the `lock_latency` binary.
pub const USAGE: &str = "\
usage: cargo run --release -p zk-benches --bin lock_latency -- [options]

Per-operation latency of raw ZooKeeper calls, of the lock recipe and of the leader latch,
with the server's packet counters (mntr) around each workload.

Target (default: a local standalone ZooKeeper 3.8 started with the test kit, forceSync=yes):
  --connect HOST:PORT[,...]  measure against that server or ensemble (nothing is started)
  --ensemble                 start a local three-server ensemble instead
  --no-fsync                 start the local server(s) with forceSync=no
  --stock-server             start the local server(s) with ZooKeeper's default thread pools
                             (by default their socket I/O runs in the selector thread, as
                             suits a small machine that the client shares; see
                             docs/performance.md)

Counts (defaults in brackets; --scale multiplies every count, per-workload flags override):
  --scale F                  e.g. 0.01 for a smoke run [1]
  --raw-warmup N [200]  --raw-pairs N [2000]  --raw-gets N [5000]
  --pipelined-gets N [20000]  --in-flight N [256]
  --lock-warmup N [100]  --lock-cycles N [1000]
  --contended-sessions N [8]  --contended-cycles N [100]  (cycles per session)
  --candidates N [5]  --failover-rounds N [20]
  --only W[,W...] / --skip W[,W...]  workloads: raw_create_delete, raw_get, pipelined_get,
                             lock_uncontended, lock_contended, election_failover, codec
  --codec-no-java            codec workload: skip the Java reference (no ratios)

Output:
  --json                     one JSON object per line on stdout instead of the table
  --plot FILE.svg            also write the latency distributions (CDFs) as SVG
  --quiet                    no progress on stderr
  -h, --help                 print this help";

/// How many operations each workload runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    /// `raw_create_delete`: unmeasured create+delete pairs first.
    pub raw_warmup: usize,
    /// `raw_create_delete`: measured pairs.
    pub raw_pairs: usize,
    /// `raw_get`: measured sequential getData calls.
    pub raw_gets: usize,
    /// `pipelined_get`: getData calls.
    pub pipelined_gets: usize,
    /// `pipelined_get`: calls kept in flight.
    pub in_flight: usize,
    /// `lock_uncontended`: unmeasured acquire+release cycles first.
    pub lock_warmup: usize,
    /// `lock_uncontended`: measured cycles.
    pub lock_cycles: usize,
    /// `lock_contended`: sessions.
    pub contended_sessions: usize,
    /// `lock_contended`: cycles per session.
    pub contended_cycles: usize,
    /// `election_failover`: candidates.
    pub candidates: usize,
    /// `election_failover`: rounds.
    pub failover_rounds: usize,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            raw_warmup: 200,
            raw_pairs: 2_000,
            raw_gets: 5_000,
            pipelined_gets: 20_000,
            in_flight: 256,
            lock_warmup: 100,
            lock_cycles: 1_000,
            contended_sessions: 8,
            contended_cycles: 100,
            candidates: 5,
            failover_rounds: 20,
        }
    }
}

impl Counts {
    /// The counts multiplied by `scale` (at least 1 each; sessions, candidates and the
    /// in-flight window are not scaled).
    pub fn scaled(self, scale: f64) -> Counts {
        let s = |n: usize| ((n as f64 * scale).round() as usize).max(1);
        Counts {
            raw_warmup: s(self.raw_warmup),
            raw_pairs: s(self.raw_pairs),
            raw_gets: s(self.raw_gets),
            pipelined_gets: s(self.pipelined_gets),
            lock_warmup: s(self.lock_warmup),
            lock_cycles: s(self.lock_cycles),
            contended_cycles: s(self.contended_cycles),
            failover_rounds: s(self.failover_rounds),
            ..self
        }
    }
}

/// Command-line options of the lock latency benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// `--connect`: an existing server or ensemble.
    pub connect: Option<String>,
    /// `--ensemble`: start a local three-server ensemble.
    pub ensemble: bool,
    /// `--no-fsync`: start the local server(s) with `forceSync=no`.
    pub no_fsync: bool,
    /// `--stock-server`: start the local server(s) without [`SMALL_MACHINE_SERVER`].
    pub stock_server: bool,
    /// `--json`: JSON lines instead of the table.
    pub json: bool,
    /// `--plot`: where to write the SVG.
    pub plot: Option<PathBuf>,
    /// `--quiet`: no progress on stderr.
    pub quiet: bool,
    /// `--codec-no-java`: no Java reference in the codec workload.
    pub codec_no_java: bool,
    /// The counts, after `--scale` and the per-workload flags.
    pub counts: Counts,
    /// The workloads to run, in report order.
    pub workloads: Vec<Workload>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Cli {
    /// Run the benchmark.
    Run(Options),
    /// Print [`USAGE`].
    Help,
}

fn parse_workloads(list: &str) -> Result<Vec<Workload>, String> {
    list.split(',')
        .filter(|w| !w.is_empty())
        .map(|w| Workload::from_name(w).ok_or_else(|| format!("unknown workload {w:?}")))
        .collect()
}

impl Options {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    ///
    /// A message naming the first unknown or malformed argument.
    pub fn parse<I, S>(args: I) -> Result<Cli, String>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let args: Vec<String> = args
            .into_iter()
            .map(|a| {
                a.into()
                    .into_string()
                    .map_err(|a| format!("argument is not UTF-8: {a:?}"))
            })
            .collect::<Result<_, _>>()?;
        let mut options = Options {
            connect: None,
            ensemble: false,
            no_fsync: false,
            stock_server: false,
            json: false,
            plot: None,
            quiet: false,
            codec_no_java: false,
            counts: Counts::default(),
            workloads: Workload::ALL.to_vec(),
        };
        let mut scale = 1.0_f64;
        let mut overrides: Vec<(String, usize)> = Vec::new();
        let mut only: Option<Vec<Workload>> = None;
        let mut skip: Vec<Workload> = Vec::new();
        let mut it = args.into_iter();
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
            match arg.as_str() {
                "-h" | "--help" => return Ok(Cli::Help),
                "--json" => options.json = true,
                "--ensemble" => options.ensemble = true,
                "--no-fsync" => options.no_fsync = true,
                "--stock-server" => options.stock_server = true,
                "--quiet" => options.quiet = true,
                "--codec-no-java" => options.codec_no_java = true,
                "--connect" => options.connect = Some(value("--connect")?),
                "--plot" => options.plot = Some(PathBuf::from(value("--plot")?)),
                "--scale" => {
                    let v = value("--scale")?;
                    scale = v
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| format!("--scale: not a positive number: {v:?}"))?;
                }
                "--only" => only = Some(parse_workloads(&value("--only")?)?),
                "--skip" => skip.extend(parse_workloads(&value("--skip")?)?),
                flag @ ("--raw-warmup"
                | "--raw-pairs"
                | "--raw-gets"
                | "--pipelined-gets"
                | "--in-flight"
                | "--lock-warmup"
                | "--lock-cycles"
                | "--contended-sessions"
                | "--contended-cycles"
                | "--candidates"
                | "--failover-rounds") => {
                    let v = value(flag)?;
                    let n: usize = v
                        .parse()
                        .map_err(|_| format!("{flag}: not a count: {v:?}"))?;
                    overrides.push((flag.to_owned(), n));
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        if options.ensemble && options.connect.is_some() {
            return Err("--ensemble and --connect exclude each other".into());
        }
        let mut c = Counts::default().scaled(scale);
        for (flag, n) in overrides {
            let slot = match flag.as_str() {
                "--raw-warmup" => &mut c.raw_warmup,
                "--raw-pairs" => &mut c.raw_pairs,
                "--raw-gets" => &mut c.raw_gets,
                "--pipelined-gets" => &mut c.pipelined_gets,
                "--in-flight" => &mut c.in_flight,
                "--lock-warmup" => &mut c.lock_warmup,
                "--lock-cycles" => &mut c.lock_cycles,
                "--contended-sessions" => &mut c.contended_sessions,
                "--contended-cycles" => &mut c.contended_cycles,
                "--candidates" => &mut c.candidates,
                _ => &mut c.failover_rounds,
            };
            *slot = n;
        }
        let at_least_one = [
            ("--raw-pairs", c.raw_pairs),
            ("--raw-gets", c.raw_gets),
            ("--pipelined-gets", c.pipelined_gets),
            ("--in-flight", c.in_flight),
            ("--lock-cycles", c.lock_cycles),
            ("--contended-cycles", c.contended_cycles),
            ("--failover-rounds", c.failover_rounds),
        ];
        if let Some((flag, _)) = at_least_one.iter().find(|(_, n)| *n == 0) {
            return Err(format!("{flag} must be at least 1"));
        }
        if c.contended_sessions < 2 {
            return Err("--contended-sessions must be at least 2".into());
        }
        if c.candidates < 2 {
            return Err("--candidates must be at least 2".into());
        }
        options.counts = c;
        if let Some(only) = only {
            options.workloads.retain(|w| only.contains(w));
        }
        options.workloads.retain(|w| !skip.contains(w));
        Ok(Cli::Run(options))
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

/// One reported figure: latency percentiles of one kind of operation, or a ratio.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metric {
    /// The metric name (`raw_pair`, `lock_cycle`, ...).
    pub name: String,
    /// How many operations were measured.
    pub n: Option<u64>,
    /// Median latency, microseconds.
    pub p50_us: Option<f64>,
    /// 90th percentile, microseconds.
    pub p90_us: Option<f64>,
    /// 99th percentile, microseconds.
    pub p99_us: Option<f64>,
    /// Slowest operation, microseconds.
    pub max_us: Option<f64>,
    /// Throughput where it means something (pipelined and contended workloads, codec).
    pub ops_per_s: Option<f64>,
    /// Mutual-exclusion violations seen (contended lock only).
    pub violations: Option<u64>,
    /// Packets the server(s) received per operation (`mntr` zk_packets_received).
    pub server_packets_per_op: Option<f64>,
    /// Transactions committed per operation (zxid difference from `srvr`).
    pub server_txns_per_op: Option<f64>,
    /// Client process CPU (user + system) per operation, microseconds.
    pub client_cpu_us_per_op: Option<f64>,
    /// Further keys, with their values already in JSON.
    pub extra: Vec<(&'static str, String)>,
    /// The sorted samples in microseconds (for the plot; not printed).
    pub samples_us: Vec<f64>,
}

impl Metric {
    /// A metric with percentiles over `samples` (nearest rank).
    pub fn from_samples(name: &str, samples: &[Duration]) -> Metric {
        let mut us: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e6).collect();
        us.sort_by(f64::total_cmp);
        let pct = |p: f64| -> Option<f64> {
            if us.is_empty() {
                return None;
            }
            let rank = (p * us.len() as f64).ceil() as usize;
            Some(us[rank.clamp(1, us.len()) - 1])
        };
        Metric {
            name: name.to_owned(),
            n: Some(us.len() as u64),
            p50_us: pct(0.50),
            p90_us: pct(0.90),
            p99_us: pct(0.99),
            max_us: us.last().copied(),
            samples_us: us,
            ..Metric::default()
        }
    }

    /// One JSON object (one line, no newline).
    pub fn to_json(&self) -> String {
        let mut out = format!(
            "{{\"client\":\"rzk\",\"metric\":{},\"n\":{},\"p50_us\":{},\"p90_us\":{},\
             \"p99_us\":{},\"max_us\":{},\"ops_per_s\":{},\"client_cpu_us_per_op\":{}",
            json::string(&self.name),
            self.n.map_or("null".into(), |n| n.to_string()),
            json::opt_num(self.p50_us),
            json::opt_num(self.p90_us),
            json::opt_num(self.p99_us),
            json::opt_num(self.max_us),
            json::opt_num(self.ops_per_s),
            json::opt_num(self.client_cpu_us_per_op),
        );
        if let Some(v) = self.violations {
            let _ = write!(out, ",\"violations\":{v}");
        }
        if let Some(p) = self.server_packets_per_op {
            let _ = write!(out, ",\"server_packets_per_op\":{}", json::num(p));
        }
        if let Some(t) = self.server_txns_per_op {
            let _ = write!(out, ",\"server_txns_per_op\":{}", json::num(t));
        }
        for (key, value) in &self.extra {
            let _ = write!(out, ",{}:{value}", json::string(key));
        }
        out.push('}');
        out
    }

    fn extra_num(&self, key: &str) -> Option<f64> {
        self.extra
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.parse().ok())
    }
}

/// A ratio between two metrics, most with a target set by the issue.
#[derive(Debug, Clone, Copy)]
struct RatioSpec {
    name: &'static str,
    numerator: (&'static str, Field),
    denominator: (&'static str, Field),
    /// `Some((limit, true))`: at most; `Some((limit, false))`: at least; `None`: a figure to
    /// read beside the others, with no target.
    target: Option<(f64, bool)>,
}

#[derive(Debug, Clone, Copy)]
enum Field {
    P50,
    OpsPerS,
}

const RATIOS: [RatioSpec; 4] = [
    RatioSpec {
        name: "lock_cycle_p50/raw_pair_p50",
        numerator: ("lock_cycle", Field::P50),
        denominator: ("raw_pair", Field::P50),
        target: Some((1.10, true)),
    },
    RatioSpec {
        name: "handoff_p50/raw_delete_p50",
        numerator: ("lock_contended", Field::P50),
        denominator: ("raw_delete", Field::P50),
        target: Some((1.25, true)),
    },
    // The handoff against the delete round trip measured in the same contended run: how
    // much of the handoff is the delete itself under that load (the waiter acting on the
    // notification alone puts it near 1), whatever the load does to the delete.
    RatioSpec {
        name: "handoff_p50/contended_release_p50",
        numerator: ("lock_contended", Field::P50),
        denominator: ("lock_contended_release", Field::P50),
        target: None,
    },
    RatioSpec {
        name: "pipelined_get_ops/raw_get_ops",
        numerator: ("pipelined_get", Field::OpsPerS),
        denominator: ("raw_get", Field::OpsPerS),
        target: Some((4.0, false)),
    },
];

/// The ratios between metrics (as metrics named like `lock_cycle_p50/raw_pair_p50` with the
/// keys `ratio`, `target` and `target_met`), for those whose both sides were measured.
pub fn ratios(metrics: &[Metric]) -> Vec<Metric> {
    let find = |(name, field): (&str, Field)| {
        let m = metrics.iter().find(|m| m.name == name)?;
        match field {
            Field::P50 => m.p50_us,
            Field::OpsPerS => m.ops_per_s,
        }
    };
    RATIOS
        .iter()
        .filter_map(|spec| {
            let ratio = find(spec.numerator)? / find(spec.denominator)?;
            let (target, met) = match spec.target {
                Some((limit, at_most)) => {
                    let met = if at_most {
                        ratio <= limit
                    } else {
                        ratio >= limit
                    };
                    let bound = if at_most { "<=" } else { ">=" };
                    (json::string(&format!("{bound} {limit}")), met.to_string())
                }
                None => ("null".to_owned(), "null".to_owned()),
            };
            Some(Metric {
                name: spec.name.to_owned(),
                extra: vec![
                    ("ratio", json::num(ratio)),
                    ("target", target),
                    ("target_met", met),
                ],
                ..Metric::default()
            })
        })
        .collect()
}

/// The targets of the issue that are not ratios, checked against `metrics`: `(description,
/// measured, met)`.
fn other_targets(metrics: &[Metric]) -> Vec<(String, f64, bool)> {
    let mut out = Vec::new();
    let get = |name: &str| metrics.iter().find(|m| m.name == name);
    if let Some(p) = get("lock_cycle").and_then(|m| m.server_packets_per_op) {
        out.push((
            "packets per uncontended lock cycle <= 3".into(),
            p,
            p <= 3.0,
        ));
    }
    if let Some(c) = get("pipelined_get").and_then(|m| m.client_cpu_us_per_op) {
        out.push(("pipelined_get client CPU <= 10 us/op".into(), c, c <= 10.0));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// The readable report: one row per metric, then the ratios and targets.
pub fn to_table(target: &str, metrics: &[Metric]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "lock_latency (client rzk) against {target}");
    let _ = writeln!(
        out,
        "{:<34} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>7} {:>6} {:>5} {:>7}",
        "metric",
        "n",
        "p50 us",
        "p90 us",
        "p99 us",
        "max us",
        "ops/s",
        "cpu us",
        "pkts",
        "txns",
        "viol",
        "vs ref"
    );
    for m in metrics.iter().filter(|m| m.extra_num("ratio").is_none()) {
        let _ = writeln!(
            out,
            "{:<34} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>8} {:>7} {:>6} {:>5} {:>7}",
            m.name,
            m.n.map_or("-".into(), |n| n.to_string()),
            cell(m.p50_us, if m.name.starts_with("codec_") { 3 } else { 1 }),
            cell(m.p90_us, 1),
            cell(m.p99_us, 1),
            cell(m.max_us, 1),
            cell(m.ops_per_s, 0),
            cell(m.client_cpu_us_per_op, 1),
            cell(m.server_packets_per_op, 3),
            cell(m.server_txns_per_op, 3),
            m.violations.map_or("-".into(), |v| v.to_string()),
            cell(m.extra_num("ratio_vs_reference"), 3),
        );
    }
    let _ = writeln!(
        out,
        "\ncpu us: client process CPU (user+system) per op; pkts: packets received by the \
         server(s) per op (mntr); txns: transactions committed per op (zxid); viol: \
         mutual-exclusion violations. lock_contended percentiles are the handoff latency; codec \
         p50 is the median time per op over rounds, vs ref its ratio to the Java serializer \
         (below 1: faster)."
    );
    let ratio_rows: Vec<&Metric> = metrics
        .iter()
        .filter(|m| m.extra_num("ratio").is_some())
        .collect();
    let others = other_targets(metrics);
    if !ratio_rows.is_empty() || !others.is_empty() {
        let _ = writeln!(out, "\ntargets (figures, not tests):");
        for m in ratio_rows {
            let value = |key: &str| {
                m.extra
                    .iter()
                    .find(|(k, _)| *k == key)
                    .map(|(_, v)| v.as_str())
            };
            let verdict = match (value("target"), value("target_met")) {
                (Some(target), Some(met)) if target != "null" => format!(
                    "target {:<8} {}",
                    target.trim_matches('"'),
                    if met == "true" { "met" } else { "MISSED" }
                ),
                _ => "(no target)".to_owned(),
            };
            let _ = writeln!(
                out,
                "  {:<40} {:>8.3}  {verdict}",
                m.name,
                m.extra_num("ratio").unwrap_or(f64::NAN),
            );
        }
        for (what, value, met) in others {
            let _ = writeln!(
                out,
                "  {:<49} {:>8.3}  {}",
                what,
                value,
                if met { "met" } else { "MISSED" }
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------------

/// The client addresses of a connect string (`host:port[,...][/chroot]`, port 2181 by
/// default), resolved, for the four-letter commands.
///
/// # Errors
///
/// A host that does not resolve.
pub fn server_addrs(connect: &str) -> Result<Vec<SocketAddr>, String> {
    let hosts = connect.split('/').next().unwrap_or_default();
    let mut out = Vec::new();
    for host in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let has_port = host.rsplit_once(':').is_some_and(|(h, p)| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (!h.contains(':') || h.ends_with(']'))
        });
        let with_port = if has_port {
            host.to_owned()
        } else {
            format!("{host}:2181")
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} resolves to nothing"))?;
        out.push(addr);
    }
    Ok(out)
}

/// Counters summed (packets) or maxed (zxid) over the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counters {
    packets_received: Option<u64>,
    zxid: Option<i64>,
}

/// Reads `mntr` (zk_packets_received) and `srvr` (Zxid) of every server.
pub(crate) fn read_counters(addrs: &[SocketAddr]) -> Counters {
    let timeout = Duration::from_secs(5);
    let mut packets = Some(0_u64);
    let mut zxid: Option<i64> = None;
    for &addr in addrs {
        let received = zk_testkit::four_letter(addr, "mntr", timeout)
            .ok()
            .and_then(|answer| {
                answer.lines().find_map(|l| {
                    let (k, v) = l.split_once('\t')?;
                    (k.trim() == "zk_packets_received")
                        .then(|| v.trim().parse::<u64>().ok())
                        .flatten()
                })
            });
        packets = packets.zip(received).map(|(a, b)| a + b);
        let z = zk_testkit::four_letter(addr, "srvr", timeout)
            .ok()
            .and_then(|answer| {
                answer.lines().find_map(|l| {
                    let hex = l.trim().strip_prefix("Zxid: 0x")?;
                    i64::from_str_radix(hex.trim(), 16).ok()
                })
            });
        zxid = match (zxid, z) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    Counters {
        packets_received: packets,
        zxid,
    }
}

impl Counters {
    /// `(packets per op, transactions per op)` from `self` to `after`, less `overhead` packets
    /// (those of reading the counters themselves, if any).
    pub(crate) fn per_op(
        &self,
        after: &Counters,
        overhead: u64,
        ops: usize,
    ) -> (Option<f64>, Option<f64>) {
        let ops = ops.max(1) as f64;
        let packets = self
            .packets_received
            .zip(after.packets_received)
            .map(|(a, b)| b.saturating_sub(a).saturating_sub(overhead) as f64 / ops);
        let txns = self.zxid.zip(after.zxid).and_then(|(a, b)| {
            // A new leader epoch restarts the counter part: no figure then.
            (a >> 32 == b >> 32).then(|| (b - a) as f64 / ops)
        });
        (packets, txns)
    }
}

// ---------------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------------

/// A boxed error.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
const PRODUCTION_JIT: &str = "-XX:TieredStopAtLevel=4";

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
            ensemble = Some(e);
            (
                cs.clone(),
                format!("local 3-server ZooKeeper ensemble {cs} ({setup})"),
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
            let s = builder.start()?;
            let cs = s.connect_string();
            server = Some(s);
            (
                cs.clone(),
                format!("local standalone ZooKeeper {cs} ({setup})"),
            )
        }
    };
    let mut metrics = Vec::new();
    if !zk_workloads.is_empty() {
        let addrs = server_addrs(&connect)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // Reading the counters (four-letter words) may itself count as packets: two readings
        // back to back, with nothing else going on, give what to subtract per measured section.
        let first = read_counters(&addrs);
        let second = read_counters(&addrs);
        let counter_overhead = first
            .packets_received
            .zip(second.packets_received)
            .map_or(0, |(a, b)| b.saturating_sub(a));
        let ctx = workloads::Context {
            counter_overhead,
            connect: connect.clone(),
            addrs,
            counts: options.counts,
            progress: !options.quiet,
            base: format!("/rzk-bench-{}", std::process::id()),
        };
        metrics = runtime.block_on(workloads::run_all(&ctx, &zk_workloads))?;
    }
    drop(ensemble);
    drop(server);
    if options.workloads.contains(&Workload::Codec) {
        metrics.extend(workloads::codec(options.codec_no_java, !options.quiet)?);
    }
    let ratios = ratios(&metrics);
    metrics.extend(ratios);
    Ok(Outcome { target, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_counts_scale_and_overrides() {
        let Ok(Cli::Run(o)) = Options::parse(["--scale", "0.01", "--lock-cycles", "7", "--json"])
        else {
            panic!("parse failed");
        };
        assert!(o.json);
        assert_eq!(o.counts.raw_pairs, 20);
        assert_eq!(o.counts.lock_cycles, 7);
        assert_eq!(o.counts.contended_sessions, 8);
        assert!(Options::parse(["--bogus"]).is_err());
        assert!(Options::parse(["--only", "nope"]).is_err());
        let Ok(Cli::Run(o)) = Options::parse(["--only", "raw_get,codec", "--skip", "codec"]) else {
            panic!("parse failed");
        };
        assert_eq!(o.workloads, vec![Workload::RawGet]);
        assert!(!o.stock_server);
        let Ok(Cli::Run(o)) = Options::parse(["--stock-server"]) else {
            panic!("parse failed");
        };
        assert!(o.stock_server);
    }

    #[test]
    fn ratios_carry_their_target_or_none() {
        let metric = |name: &str, p50: f64| Metric {
            name: name.to_owned(),
            p50_us: Some(p50),
            ..Metric::default()
        };
        let metrics = [
            metric("raw_delete", 100.0),
            metric("lock_contended", 300.0),
            metric("lock_contended_release", 250.0),
        ];
        let out = ratios(&metrics);
        let find = |name: &str| {
            out.iter()
                .find(|m| m.name == name)
                .unwrap_or_else(|| panic!("no {name}"))
        };
        let handoff = find("handoff_p50/raw_delete_p50");
        assert_eq!(handoff.extra_num("ratio"), Some(3.0));
        assert!(handoff.extra.contains(&("target_met", "false".to_owned())));
        let same_run = find("handoff_p50/contended_release_p50");
        assert_eq!(same_run.extra_num("ratio"), Some(1.2));
        assert!(same_run.extra.contains(&("target", "null".to_owned())));
        assert!(same_run.extra.contains(&("target_met", "null".to_owned())));
        // Ratios whose metrics were not measured are left out.
        assert_eq!(out.len(), 2);
        let table = to_table(
            "test",
            &metrics.iter().cloned().chain(out).collect::<Vec<_>>(),
        );
        assert!(table.contains("(no target)"), "{table}");
        assert!(table.contains("MISSED"), "{table}");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_micros).collect();
        let m = Metric::from_samples("x", &samples);
        assert_eq!(m.p50_us, Some(50.0));
        assert_eq!(m.p90_us, Some(90.0));
        assert_eq!(m.p99_us, Some(99.0));
        assert_eq!(m.max_us, Some(100.0));
        let line = m.to_json();
        let v = json::parse(&line).expect("valid JSON");
        assert_eq!(v.get("client").and_then(json::Value::as_str), Some("rzk"));
    }

    #[test]
    fn resolves_connect_strings() {
        let addrs = server_addrs("127.0.0.1:2182,127.0.0.1/chroot").expect("resolves");
        assert_eq!(addrs.len(), 2);
        assert_eq!(addrs[0].port(), 2182);
        assert_eq!(addrs[1].port(), 2181);
    }
}
