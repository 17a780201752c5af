//! The reference clients: `benches/java/LockLatencyRef.java` runs our workloads with the
//! ZooKeeper Java client ([`RefClient::Java`]) and Apache Curator ([`RefClient::Curator`]).
//! One JVM is started per run ([`RefProcess::start`], single-file source launch) and given one
//! workload at a time on its stdin, so that its blocks alternate with ours; it answers with the
//! raw samples of each metric, which are pooled as ours are.
//!
//! Java and the ZooKeeper jars are found as the test kit finds them
//! ([`zk_testkit::ZkInstall::detect`]: `ZK_JAVA`, `ZK_CLASSPATH`), Curator as the interop tests
//! find it (`CURATOR_CLASSPATH`, else Debian's jars from `scripts/install-curator.sh`).

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;

use super::servers::read_counters;
use super::workloads::Context;
use super::{BoxError, Metric, Workload};

/// The reference program, written to a temporary file and launched from source.
const SOURCE: &str = include_str!("../../java/LockLatencyRef.java");
/// How long one answer of the reference program may take (a whole default-sized workload
/// takes seconds).
const REPLY_LIMIT: Duration = Duration::from_secs(300);
/// Lines of the program's stderr kept for error messages.
const STDERR_TAIL: usize = 30;

/// A client the benchmark compares ours with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefClient {
    /// The plain ZooKeeper Java client (`org.apache.zookeeper.ZooKeeper`): the raw workloads,
    /// pipelined reads with its asynchronous API.
    Java,
    /// Apache Curator: `InterProcessMutex` for the lock workloads, `LeaderLatch` for the
    /// election.
    Curator,
}

impl RefClient {
    /// Both, in the order of `--compare`'s default.
    pub const ALL: [RefClient; 2] = [RefClient::Java, RefClient::Curator];

    /// The name on the command line and in the JSON (`java`, `curator`).
    pub const fn name(self) -> &'static str {
        match self {
            RefClient::Java => "java",
            RefClient::Curator => "curator",
        }
    }

    /// The client named `name`.
    pub fn from_name(name: &str) -> Option<RefClient> {
        RefClient::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Appended to the names of its metrics (`raw_pair@java`).
    pub const fn suffix(self) -> &'static str {
        match self {
            RefClient::Java => "@java",
            RefClient::Curator => "@curator",
        }
    }

    /// The client that runs our workload `w` as a reference, if any.
    pub const fn for_workload(w: Workload) -> Option<RefClient> {
        match w {
            Workload::RawCreateDelete | Workload::RawGet | Workload::PipelinedGet => {
                Some(RefClient::Java)
            }
            Workload::LockUncontended | Workload::LockContended | Workload::ElectionFailover => {
                Some(RefClient::Curator)
            }
            Workload::ElectionCrash | Workload::Codec => None,
        }
    }

    /// The metric of `w` that gets the section's figures (CPU, packets, commits per op), as
    /// ours does.
    const fn section_metric(w: Workload) -> &'static str {
        match w {
            Workload::RawCreateDelete => "raw_pair",
            Workload::LockUncontended => "lock_cycle",
            other => other.name(),
        }
    }
}

/// The classpath of the reference program (Curator's jars, then ZooKeeper's, as the test kit
/// finds them), or why there is none.
///
/// # Errors
///
/// A message naming what is missing and the script that installs it.
pub fn classpath() -> Result<String, String> {
    let install = zk_testkit::ZkInstall::detect().map_err(|e| e.to_string())?;
    let curator = match std::env::var("CURATOR_CLASSPATH") {
        Ok(cp) if !cp.trim().is_empty() => cp,
        _ => zk_testkit::java::debian_classpath(
            &[
                "curator-recipes.jar",
                "curator-framework.jar",
                "curator-client.jar",
            ],
            &["guava.jar", "slf4j-api.jar", "slf4j-nop.jar"],
        )
        .ok_or(
            "Apache Curator is not installed (run scripts/install-curator.sh, or set \
             CURATOR_CLASSPATH to its jars)",
        )?,
    };
    Ok(format!("{curator}:{}", install.classpath()))
}

/// One line of metric from the program.
#[derive(Debug, Deserialize)]
struct RefLine {
    metric: String,
    samples_us: Vec<f64>,
    cpu_us_per_op: Option<f64>,
    ops_per_s: Option<f64>,
    violations: Option<u64>,
}

/// The running reference program.
#[derive(Debug)]
pub(crate) struct RefProcess {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    dir: PathBuf,
    /// The JVM's version (`java.version`).
    pub(crate) version: String,
}

impl RefProcess {
    /// Starts the program and waits until it is ready.
    ///
    /// # Errors
    ///
    /// No Java or Curator ([`classpath`]), a program that does not start or compile.
    pub(crate) fn start() -> Result<RefProcess, BoxError> {
        let classpath = classpath()?;
        let dir = std::env::temp_dir().join(format!("rzk-lock-latency-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let source = dir.join("LockLatencyRef.java");
        std::fs::write(&source, SOURCE)
            .map_err(|e| format!("writing {}: {e}", source.display()))?;
        let mut command = zk_testkit::java::source_program(&classpath, &source)?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting java: {e}"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("java started without its pipes".into());
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail_writer = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let mut tail = tail_writer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        });
        let mut process = RefProcess {
            child,
            stdin,
            lines,
            stderr: tail,
            dir,
            version: String::new(),
        };
        let first = process.recv()?;
        match first.strip_prefix("ready ") {
            Some(version) => process.version = version.trim().to_owned(),
            None => return Err(process.failure(&format!("unexpected first line {first:?}"))),
        }
        Ok(process)
    }

    /// An error quoting `what` and the end of the program's stderr.
    fn failure(&self, what: &str) -> BoxError {
        let tail = self
            .stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        if tail.is_empty() {
            format!("reference program: {what}").into()
        } else {
            format!("reference program: {what}; its stderr ends with:\n{tail}").into()
        }
    }

    fn recv(&self) -> Result<String, BoxError> {
        match self.lines.recv_timeout(REPLY_LIMIT) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => {
                Err(self.failure(&format!("no answer within {REPLY_LIMIT:?}")))
            }
            Err(RecvTimeoutError::Disconnected) => Err(self.failure("it ended")),
        }
    }

    fn send(&mut self, line: &str) -> Result<(), BoxError> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| self.failure(&format!("cannot write to it: {e}")))
    }

    /// Runs workload `w` with `client` against `ctx`'s server, under `ctx.base` (which must
    /// exist), with `ctx.counts`; returns its metrics named with the client's suffix, with the
    /// servers' counters read around its measured section as for ours.
    ///
    /// # Errors
    ///
    /// The program's error, an answer that does not parse, a program that ended.
    pub(crate) fn run(
        &mut self,
        ctx: &Context,
        w: Workload,
        client: RefClient,
    ) -> Result<Vec<Metric>, BoxError> {
        let c = ctx.counts;
        let counts = [
            ("raw_warmup", c.raw_warmup),
            ("raw_pairs", c.raw_pairs),
            ("raw_gets", c.raw_gets),
            ("pipelined_gets", c.pipelined_gets),
            ("in_flight", c.in_flight),
            ("lock_warmup", c.lock_warmup),
            ("lock_cycles", c.lock_cycles),
            ("contended_sessions", c.contended_sessions),
            ("contended_cycles", c.contended_cycles),
            ("candidates", c.candidates),
            ("failover_rounds", c.failover_rounds),
        ]
        .map(|(k, v)| format!("{k}={v}"))
        .join(" ");
        self.send(&format!(
            "run {} {} {} {} {counts}",
            w.name(),
            client.name(),
            ctx.connect,
            ctx.base
        ))?;
        let mut before = None;
        let mut section = (None, None);
        let mut metrics = Vec::new();
        loop {
            let line = self.recv()?;
            if line == "done" {
                break;
            } else if line == "section start" {
                before = Some(read_counters(&ctx.addrs));
                self.send("go")?;
            } else if let Some(ops) = line.strip_prefix("section end ") {
                let after = read_counters(&ctx.addrs);
                let ops: usize = ops
                    .trim()
                    .parse()
                    .map_err(|_| self.failure(&format!("unexpected line {line:?}")))?;
                if let Some(before) = &before {
                    section = before.per_op(&after, ctx.counter_overhead, ops);
                }
                self.send("go")?;
            } else if let Some(json) = line.strip_prefix("metric ") {
                let m: RefLine = serde_json::from_str(json).map_err(|e| {
                    self.failure(&format!("a metric line that does not parse ({e})"))
                })?;
                let mut metric = Metric::from_samples_us(
                    &format!("{}{}", m.metric, client.suffix()),
                    m.samples_us,
                );
                metric.reference = Some(client.name());
                metric.client_cpu_us_per_op = m.cpu_us_per_op;
                metric.ops_per_s = m.ops_per_s;
                metric.violations = m.violations;
                if m.metric == RefClient::section_metric(w) {
                    (metric.server_packets_per_op, metric.server_txns_per_op) = section;
                }
                metrics.push(metric);
            } else if let Some(message) = line.strip_prefix("error ") {
                return Err(self.failure(&format!(
                    "{} with {}: {message}",
                    w.name(),
                    client.name()
                )));
            } else {
                return Err(self.failure(&format!("unexpected line {line:?}")));
            }
        }
        Ok(metrics)
    }
}

impl Drop for RefProcess {
    fn drop(&mut self) {
        let _ = self.send("quit");
        // It ends at once after `quit`; a stuck one is killed.
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                let _ = std::fs::remove_dir_all(&self.dir);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_zookeeper_workload_but_the_crash_has_a_reference_client() {
        for w in Workload::ALL {
            let client = RefClient::for_workload(w);
            let ours_only = matches!(w, Workload::Codec | Workload::ElectionCrash);
            assert_eq!(client.is_none(), ours_only, "{w:?}");
        }
        for c in RefClient::ALL {
            assert_eq!(RefClient::from_name(c.name()), Some(c));
            assert_eq!(c.suffix(), format!("@{}", c.name()));
        }
    }

    #[test]
    fn the_program_is_ascii() {
        assert!(SOURCE.is_ascii());
    }
}
