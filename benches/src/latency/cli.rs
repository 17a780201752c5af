//! The command line of the lock latency benchmark: [`USAGE`], the [`Counts`] of each workload
//! and [`Options::parse`].

use std::ffi::OsString;
use std::path::PathBuf;

use super::{RefClient, Workload};

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
  --tls                      start the local server with a TLS port too, and measure every
                             workload in plaintext and over TLS in alternating blocks of the
                             same run (names @tls; ratios TLS/plaintext per block)
  --sasl                     start the local server with SASL and measure with sessions
                             authenticated by DIGEST-MD5
  --blocks N                 split every count into N blocks, run one after the other (with
                             --tls: plaintext, TLS, plaintext, ...); ratios are the median of
                             the per-block ratios, with their spread [1; 4 with --tls;
                             5 when comparing]

Comparison (the reference clients measured by benches/java/LockLatencyRef.java in the same
run, against the same server, in alternating blocks with ours):
  --compare LIST             java (the ZooKeeper Java client: raw_create_delete, raw_get,
                             pipelined_get), curator (Apache Curator: lock_uncontended,
                             lock_contended, election_failover), or none [java,curator when
                             Java and the Curator jars are present, else skipped with a
                             message; given explicitly, missing jars are an error]

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
    /// The measured counts of one of `blocks` blocks (rounded up, at least 1 each); warm-ups,
    /// sessions, candidates and the in-flight window stay (each block warms up again).
    pub fn per_block(self, blocks: usize) -> Counts {
        let b = |n: usize| n.div_ceil(blocks.max(1)).max(1);
        Counts {
            raw_pairs: b(self.raw_pairs),
            raw_gets: b(self.raw_gets),
            pipelined_gets: b(self.pipelined_gets),
            lock_cycles: b(self.lock_cycles),
            contended_cycles: b(self.contended_cycles),
            failover_rounds: b(self.failover_rounds),
            ..self
        }
    }

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
    /// `--stock-server`: start the local server(s) without
    /// [`SMALL_MACHINE_SERVER`](super::SMALL_MACHINE_SERVER).
    pub stock_server: bool,
    /// `--tls`: measure in plaintext and over TLS against a local TLS server.
    pub tls: bool,
    /// `--blocks`: how many blocks each workload's counts are split into (`None`: 1, or 4
    /// with `--tls`).
    pub blocks: Option<usize>,
    /// `--sasl`: measure with SASL (DIGEST-MD5) sessions against a local SASL server.
    pub sasl: bool,
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
    /// `--compare`: the reference clients to measure beside ours (`None`: both when they are
    /// installed, else none; `Some(empty)`: none).
    pub compare: Option<Vec<RefClient>>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Cli {
    /// Run the benchmark (boxed: the options are large, the other variant empty).
    Run(Box<Options>),
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
            tls: false,
            blocks: None,
            sasl: false,
            json: false,
            plot: None,
            quiet: false,
            codec_no_java: false,
            counts: Counts::default(),
            workloads: Workload::ALL.to_vec(),
            compare: None,
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
                "--tls" => options.tls = true,
                "--sasl" => options.sasl = true,
                "--quiet" => options.quiet = true,
                "--codec-no-java" => options.codec_no_java = true,
                "--connect" => options.connect = Some(value("--connect")?),
                "--plot" => options.plot = Some(PathBuf::from(value("--plot")?)),
                "--blocks" => {
                    let v = value("--blocks")?;
                    options.blocks = Some(
                        v.parse()
                            .ok()
                            .filter(|n: &usize| *n > 0)
                            .ok_or_else(|| format!("--blocks: not a positive count: {v:?}"))?,
                    );
                }
                "--scale" => {
                    let v = value("--scale")?;
                    scale = v
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| format!("--scale: not a positive number: {v:?}"))?;
                }
                "--compare" => {
                    let v = value("--compare")?;
                    let mut clients = Vec::new();
                    for name in v.split(',').filter(|w| !w.is_empty() && *w != "none") {
                        let client = RefClient::from_name(name).ok_or_else(|| {
                            format!("--compare: unknown client {name:?} (java, curator, none)")
                        })?;
                        if !clients.contains(&client) {
                            clients.push(client);
                        }
                    }
                    options.compare = Some(clients);
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
        if (options.tls || options.sasl) && (options.connect.is_some() || options.ensemble) {
            return Err(
                "--tls and --sasl start their own local server: not with --connect or --ensemble"
                    .into(),
            );
        }
        if (options.tls || options.sasl) && options.compare.as_ref().is_some_and(|c| !c.is_empty())
        {
            return Err("--compare measures plaintext sessions: not with --tls or --sasl".into());
        }
        if options.tls && options.sasl {
            return Err("--tls and --sasl: one at a time".into());
        }
        Ok(Cli::Run(Box::new(options)))
    }
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
        assert_eq!(o.compare, None);
    }

    #[test]
    fn parses_the_reference_clients() {
        let Ok(Cli::Run(o)) = Options::parse(["--compare", "curator,java,curator"]) else {
            panic!("parse failed");
        };
        assert_eq!(o.compare, Some(vec![RefClient::Curator, RefClient::Java]));
        let Ok(Cli::Run(o)) = Options::parse(["--compare", "none"]) else {
            panic!("parse failed");
        };
        assert_eq!(o.compare, Some(Vec::new()));
        assert!(Options::parse(["--compare", "jedis"]).is_err());
        assert!(Options::parse(["--compare", "java", "--tls"]).is_err());
        assert!(Options::parse(["--compare", "none", "--tls"]).is_ok());
    }
}
