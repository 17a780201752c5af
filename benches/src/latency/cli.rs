//! The command line of the lock latency benchmark: [`Args`] (clap), the [`Counts`] of each
//! workload, and the [`Options`] they give ([`Options::try_parse_from`]).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{CommandFactory as _, FromArgMatches as _, Parser};

use super::{RefClient, Workload};
use crate::args::{HELP_TEMPLATE, HELP_WIDTH, at_least, positive, positive_number};

const TARGET: &str =
    "Target (default: a local standalone ZooKeeper 3.8 started with the test kit, forceSync=yes)";
const COMPARISON: &str = "Comparison (benches/java/LockLatencyRef.java, same run and server, blocks alternating with ours)";
const COUNTS: &str = "Counts (--scale multiplies every count, per-workload flags override)";
const OUTPUT: &str = "Output";

/// The command line of the `lock_latency` binary (and of `rzk bench`, which renames it).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "lock_latency",
    override_usage = "cargo run --release -p zk-benches --bin lock_latency -- [options]",
    about = "Per-operation latency of raw ZooKeeper calls, of the lock recipe and of the leader \
             latch,\nwith the server's packet counters (mntr) around each workload.",
    help_template = HELP_TEMPLATE,
    max_term_width = HELP_WIDTH,
    args_override_self = true
)]
pub struct Args {
    /// measure against that server or ensemble (nothing is started)
    #[arg(long, value_name = "HOST:PORT[,...]", help_heading = TARGET)]
    pub connect: Option<String>,
    /// start a local three-server ensemble instead
    #[arg(long, conflicts_with = "connect", help_heading = TARGET)]
    pub ensemble: bool,
    /// start the local server(s) with forceSync=no
    #[arg(long, help_heading = TARGET)]
    pub no_fsync: bool,
    /// start the local server(s) with ZooKeeper's default thread
    /// pools (by default their socket I/O runs in the selector
    /// thread, as suits a small machine that the client shares;
    /// see docs/performance.md)
    #[arg(long, help_heading = TARGET, verbatim_doc_comment)]
    pub stock_server: bool,
    /// start the local server with a TLS port too, and measure
    /// every workload in plaintext and over TLS in alternating
    /// blocks of the same run (names @tls; ratios TLS/plaintext
    /// per block)
    #[arg(
        long,
        conflicts_with_all = ["connect", "ensemble", "sasl"],
        help_heading = TARGET,
        verbatim_doc_comment
    )]
    pub tls: bool,
    /// start the local server with SASL and measure with sessions
    /// authenticated by DIGEST-MD5
    #[arg(
        long,
        conflicts_with_all = ["connect", "ensemble"],
        help_heading = TARGET,
        verbatim_doc_comment
    )]
    pub sasl: bool,
    /// split every count into N blocks, run one after the other
    /// (with --tls: plaintext, TLS, plaintext, ...); ratios are
    /// the median of the per-block ratios, with their spread
    /// [1; 4 with --tls; 5 when comparing]
    #[arg(
        long,
        value_name = "N",
        value_parser = positive::<usize>,
        help_heading = TARGET,
        verbatim_doc_comment
    )]
    pub blocks: Option<usize>,

    /// java (the ZooKeeper Java client: raw_create_delete, raw_get,
    /// pipelined_get), curator (Apache Curator: lock_uncontended,
    /// lock_contended, election_failover), or none [java,curator when
    /// Java and the Curator jars are present, else skipped with a
    /// message; given explicitly, missing jars are an error]
    #[arg(
        long,
        value_name = "LIST",
        value_parser = parse_clients,
        help_heading = COMPARISON,
        verbatim_doc_comment
    )]
    pub compare: Option<Clients>,

    /// multiplies every count, e.g. 0.01 for a smoke run [default: 1]
    #[arg(long, value_name = "F", value_parser = positive_number, help_heading = COUNTS)]
    pub scale: Option<f64>,
    /// raw_create_delete: unmeasured create+delete pairs first
    /// [default: 200]
    #[arg(
        long,
        value_name = "N",
        value_parser = at_least(0),
        help_heading = COUNTS,
        verbatim_doc_comment
    )]
    pub raw_warmup: Option<usize>,
    /// raw_create_delete: measured pairs [default: 2000]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub raw_pairs: Option<usize>,
    /// raw_get: measured sequential getData calls [default: 5000]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub raw_gets: Option<usize>,
    /// pipelined_get: getData calls [default: 20000]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub pipelined_gets: Option<usize>,
    /// pipelined_get: calls kept in flight [default: 256]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub in_flight: Option<usize>,
    /// lock_uncontended: unmeasured acquire+release cycles first
    /// [default: 100]
    #[arg(
        long,
        value_name = "N",
        value_parser = at_least(0),
        help_heading = COUNTS,
        verbatim_doc_comment
    )]
    pub lock_warmup: Option<usize>,
    /// lock_uncontended: measured cycles [default: 1000]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub lock_cycles: Option<usize>,
    /// lock_contended: sessions [default: 8]
    #[arg(long, value_name = "N", value_parser = at_least(2), help_heading = COUNTS)]
    pub contended_sessions: Option<usize>,
    /// lock_contended: cycles per session [default: 100]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub contended_cycles: Option<usize>,
    /// election_failover: candidates [default: 5]
    #[arg(long, value_name = "N", value_parser = at_least(2), help_heading = COUNTS)]
    pub candidates: Option<usize>,
    /// election_failover: rounds [default: 50]
    #[arg(long, value_name = "N", value_parser = at_least(1), help_heading = COUNTS)]
    pub failover_rounds: Option<usize>,
    /// election_crash: rounds, each about a session timeout
    /// (4 s asked) [default: 5]
    #[arg(
        long,
        value_name = "N",
        value_parser = at_least(1),
        help_heading = COUNTS,
        verbatim_doc_comment
    )]
    pub crash_rounds: Option<usize>,
    /// only these workloads: raw_create_delete, raw_get,
    /// pipelined_get, lock_uncontended, lock_contended,
    /// election_failover, election_crash, codec
    #[arg(
        long,
        value_name = "W[,W...]",
        value_parser = parse_workloads,
        help_heading = COUNTS,
        verbatim_doc_comment
    )]
    pub only: Option<Workloads>,
    /// not these workloads (repeatable)
    #[arg(long, value_name = "W[,W...]", value_parser = parse_workloads, help_heading = COUNTS)]
    pub skip: Vec<Workloads>,
    /// codec workload: skip the Java reference (no ratios)
    #[arg(long, help_heading = COUNTS)]
    pub codec_no_java: bool,

    /// one JSON object per line on stdout instead of the table
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
    /// also write the latency distributions (CDFs) as SVG
    #[arg(long, value_name = "FILE.svg", help_heading = OUTPUT)]
    pub plot: Option<PathBuf>,
    /// no progress on stderr
    #[arg(long, help_heading = OUTPUT)]
    pub quiet: bool,
}

/// The reference clients of `--compare` (`none`: empty), without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clients(pub Vec<RefClient>);

/// The workloads of `--only` or `--skip`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workloads(pub Vec<Workload>);

fn parse_clients(list: &str) -> Result<Clients, String> {
    let mut clients = Vec::new();
    for name in list.split(',').filter(|w| !w.is_empty() && *w != "none") {
        let client = RefClient::from_name(name)
            .ok_or_else(|| format!("unknown client {name:?} (java, curator, none)"))?;
        if !clients.contains(&client) {
            clients.push(client);
        }
    }
    Ok(Clients(clients))
}

fn parse_workloads(list: &str) -> Result<Workloads, String> {
    list.split(',')
        .filter(|w| !w.is_empty())
        .map(|w| Workload::from_name(w).ok_or_else(|| format!("unknown workload {w:?}")))
        .collect::<Result<_, _>>()
        .map(Workloads)
}

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
    /// `election_crash`: rounds.
    pub crash_rounds: usize,
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
            failover_rounds: 50,
            crash_rounds: 5,
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
            crash_rounds: b(self.crash_rounds),
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
            crash_rounds: s(self.crash_rounds),
            ..self
        }
    }
}

/// Command-line options of the lock latency benchmark: the [`Args`] with the counts and
/// workloads resolved.
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

impl Args {
    /// The options these arguments ask for.
    ///
    /// # Errors
    ///
    /// A message when `--compare` names a reference client with `--tls` or `--sasl` (the
    /// other conflicts are clap's).
    pub fn options(self) -> Result<Options, String> {
        let compare = self.compare.map(|Clients(c)| c);
        if (self.tls || self.sasl) && compare.as_ref().is_some_and(|c| !c.is_empty()) {
            return Err("--compare measures plaintext sessions: not with --tls or --sasl".into());
        }
        let mut c = Counts::default().scaled(self.scale.unwrap_or(1.0));
        let overrides = [
            (self.raw_warmup, &mut c.raw_warmup),
            (self.raw_pairs, &mut c.raw_pairs),
            (self.raw_gets, &mut c.raw_gets),
            (self.pipelined_gets, &mut c.pipelined_gets),
            (self.in_flight, &mut c.in_flight),
            (self.lock_warmup, &mut c.lock_warmup),
            (self.lock_cycles, &mut c.lock_cycles),
            (self.contended_sessions, &mut c.contended_sessions),
            (self.contended_cycles, &mut c.contended_cycles),
            (self.candidates, &mut c.candidates),
            (self.failover_rounds, &mut c.failover_rounds),
            (self.crash_rounds, &mut c.crash_rounds),
        ];
        for (flag, slot) in overrides {
            if let Some(n) = flag {
                *slot = n;
            }
        }
        let mut workloads = Workload::ALL.to_vec();
        if let Some(Workloads(only)) = &self.only {
            workloads.retain(|w| only.contains(w));
        }
        for Workloads(skip) in &self.skip {
            workloads.retain(|w| !skip.contains(w));
        }
        Ok(Options {
            connect: self.connect,
            ensemble: self.ensemble,
            no_fsync: self.no_fsync,
            stock_server: self.stock_server,
            tls: self.tls,
            blocks: self.blocks,
            sasl: self.sasl,
            json: self.json,
            plot: self.plot,
            quiet: self.quiet,
            codec_no_java: self.codec_no_java,
            counts: c,
            workloads,
            compare,
        })
    }
}

impl Options {
    /// Parses `args` (after the program name) with `command`: [`Args::command`], or the same
    /// renamed (`rzk bench`).
    ///
    /// # Errors
    ///
    /// clap's error: `--help` (kind [`ErrorKind::DisplayHelp`], the help as its text), an
    /// unknown or malformed argument, or arguments that exclude each other.
    pub fn try_parse_from<I, S>(mut command: clap::Command, args: I) -> Result<Options, clap::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let name = OsString::from(command.get_name());
        let matches = command.try_get_matches_from_mut(
            std::iter::once(name).chain(args.into_iter().map(Into::into)),
        )?;
        let args = Args::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
        args.options()
            .map_err(|message| command.error(ErrorKind::ArgumentConflict, message))
    }

    /// Parses the arguments after the program name with the `lock_latency` binary's command.
    ///
    /// # Errors
    ///
    /// As [`Options::try_parse_from`].
    pub fn parse<I, S>(args: I) -> Result<Options, clap::Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Options::try_parse_from(Args::command(), args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_is_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn parses_counts_scale_and_overrides() {
        let o = Options::parse(["--scale", "0.01", "--lock-cycles", "7", "--json"]).expect("parse");
        assert!(o.json);
        assert_eq!(o.counts.raw_pairs, 20);
        assert_eq!(o.counts.lock_cycles, 7);
        assert_eq!(o.counts.contended_sessions, 8);
        assert!(Options::parse(["--bogus"]).is_err());
        assert!(Options::parse(["--only", "nope"]).is_err());
        let o = Options::parse(["--only", "raw_get,codec", "--skip", "codec"]).expect("parse");
        assert_eq!(o.workloads, vec![Workload::RawGet]);
        assert!(!o.stock_server);
        let o = Options::parse(["--stock-server"]).expect("parse");
        assert!(o.stock_server);
        assert_eq!(o.compare, None);
        assert_eq!(o.counts, Counts::default());
        assert_eq!(o.workloads, Workload::ALL.to_vec());
        assert_eq!(o.blocks, None);
    }

    #[test]
    fn a_repeated_flag_takes_its_last_value_and_skip_adds_up() {
        let o = Options::parse([
            "--json",
            "--json",
            "--lock-cycles",
            "7",
            "--lock-cycles",
            "9",
            "--only",
            "codec",
            "--only",
            "raw_get,pipelined_get,codec",
            "--skip",
            "codec",
            "--skip",
            "raw_get",
        ])
        .expect("parse");
        assert!(o.json);
        assert_eq!(o.counts.lock_cycles, 9);
        assert_eq!(o.workloads, vec![Workload::PipelinedGet]);
    }

    #[test]
    fn counts_have_their_minimum() {
        assert!(Options::parse(["--raw-pairs", "0"]).is_err());
        assert!(Options::parse(["--raw-warmup", "0"]).is_ok());
        assert!(Options::parse(["--contended-sessions", "1"]).is_err());
        assert!(Options::parse(["--candidates", "1"]).is_err());
        assert!(Options::parse(["--blocks", "0"]).is_err());
        assert!(Options::parse(["--scale", "0"]).is_err());
        assert!(Options::parse(["--scale"]).is_err());
    }

    #[test]
    fn the_targets_exclude_each_other() {
        assert!(Options::parse(["--ensemble", "--connect", "h:1"]).is_err());
        assert!(Options::parse(["--tls", "--connect", "h:1"]).is_err());
        assert!(Options::parse(["--sasl", "--ensemble"]).is_err());
        assert!(Options::parse(["--tls", "--sasl"]).is_err());
        assert!(Options::parse(["--tls", "--no-fsync"]).is_ok());
    }

    #[test]
    fn parses_the_reference_clients() {
        let o = Options::parse(["--compare", "curator,java,curator"]).expect("parse");
        assert_eq!(o.compare, Some(vec![RefClient::Curator, RefClient::Java]));
        let o = Options::parse(["--compare", "none"]).expect("parse");
        assert_eq!(o.compare, Some(Vec::new()));
        assert!(Options::parse(["--compare", "jedis"]).is_err());
        assert!(Options::parse(["--compare", "java", "--tls"]).is_err());
        assert!(Options::parse(["--compare", "none", "--tls"]).is_ok());
    }

    #[test]
    fn help_is_an_error_of_its_own_kind_with_every_default() {
        let Err(help) = Options::parse(["--help"]) else {
            panic!("--help parsed");
        };
        assert_eq!(help.kind(), ErrorKind::DisplayHelp);
        let text = help.to_string();
        assert!(
            text.starts_with(
                "usage: cargo run --release -p zk-benches --bin lock_latency -- [options]\n"
            ),
            "{text}"
        );
        let d = Counts::default();
        for (flag, n) in [
            ("--raw-warmup", d.raw_warmup),
            ("--raw-pairs", d.raw_pairs),
            ("--raw-gets", d.raw_gets),
            ("--pipelined-gets", d.pipelined_gets),
            ("--in-flight", d.in_flight),
            ("--lock-warmup", d.lock_warmup),
            ("--lock-cycles", d.lock_cycles),
            ("--contended-sessions", d.contended_sessions),
            ("--contended-cycles", d.contended_cycles),
            ("--candidates", d.candidates),
            ("--failover-rounds", d.failover_rounds),
        ] {
            let line = text
                .lines()
                .skip_while(|l| !l.trim_start().starts_with(flag))
                .take(2)
                .collect::<String>();
            assert!(line.contains(&format!("[default: {n}]")), "{flag}: {line}");
        }
    }
}
