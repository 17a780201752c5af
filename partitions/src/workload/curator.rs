//! Apache Curator beside us: the same fenced workloads (see [`super::fenced`]) with Curator's
//! `InterProcessMutex` and `LeaderLatch`, run by `partitions/curator/CuratorFencedWorker.java`,
//! one JVM per side in the side's namespace, [`WORKERS`] slots (sessions) each. A slot writes
//! while Curator's connection state says connected (the standard `ConnectionStateListener`
//! pattern) and reports each write on its standard output; the Rust side applies the writes to
//! the fenced store and records the believed-held intervals, so that the same checker judges
//! both libraries under the same faults.
//!
//! Curator's promises are Curator's: its windows are measured and reported beside ours, not
//! counted as our broken promises ([`crate::scenario::Scenario::explains`]). Without Curator
//! installed (`scripts/install-curator.sh`) the workload records nothing and says so.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;
use zk_testkit::ZkInstall;

use super::fenced::{Fenced, FencedRun, Term, WORKERS, Worker};
use super::{Finished, Workload};
use crate::world::{SESSION, World};

/// Which recipe, in which program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CuratorRecipe {
    /// Curator's `InterProcessMutex`.
    Mutex,
    /// Curator's `LeaderLatch`.
    Latch,
    /// Our lock, in a worker process of its own (`partitions --worker lock`, see
    /// [`super::process`]): the same relay, so that a client pause is a real SIGSTOP.
    OurLockProcess,
}

/// A Curator workload.
pub struct CuratorWorkload {
    recipe: CuratorRecipe,
    run: Option<FencedRun>,
    /// Why it did not run (Curator or Java missing).
    skipped: Option<String>,
}

impl CuratorWorkload {
    /// The workload for `recipe`.
    pub fn new(recipe: CuratorRecipe) -> Self {
        CuratorWorkload {
            recipe,
            run: None,
            skipped: None,
        }
    }
}

/// The program a workload runs.
enum Program {
    /// Curator's worker, by Java's single-file source launch.
    Curator { java: PathBuf, classpath: String },
    /// The suite's own binary in worker mode.
    Ours(PathBuf),
}

fn curator_program() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("curator/CuratorFencedWorker.java")
}

impl Workload for CuratorWorkload {
    fn name(&self) -> &'static str {
        match self.recipe {
            CuratorRecipe::Mutex => "curator-lock",
            CuratorRecipe::Latch => "curator-latch",
            CuratorRecipe::OurLockProcess => "lock-process",
        }
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        let program = match self.recipe {
            CuratorRecipe::OurLockProcess => Program::Ours(
                std::env::current_exe().map_err(|e| format!("the suite's own binary: {e}"))?,
            ),
            CuratorRecipe::Mutex | CuratorRecipe::Latch => {
                let Some(classpath) = zk_testkit::java::curator_classpath() else {
                    self.skipped =
                        Some("Apache Curator is not installed (scripts/install-curator.sh)".into());
                    return Ok(());
                };
                let java = ZkInstall::detect()
                    .map_err(|e| format!("java: {e}"))?
                    .java()
                    .to_path_buf();
                Program::Curator { java, classpath }
            }
        };
        let (kind, path) = match self.recipe {
            CuratorRecipe::Mutex => ("mutex", "/partitions-curator-lock"),
            CuratorRecipe::Latch => ("latch", "/partitions-curator-latch"),
            CuratorRecipe::OurLockProcess => ("lock", "/partitions-lock-process"),
        };
        if let Program::Ours(_) = program {
            // The worker's chroot: its lock is apart from the in-process lock workload's.
            let setup = world.b().connect(&world.bed)?;
            world.b().runtime.block_on(async {
                match setup
                    .create(path, "", &zk_proto::CreateOptions::persistent())
                    .await
                {
                    Ok(_) | Err(zk_proto::Error::NodeExists) => Ok(()),
                    Err(e) => Err(format!("creating {path}: {e}")),
                }
            })?;
        }
        let shared = Fenced::new(world);
        let mut tasks = Vec::new();
        for (side_index, side) in world.sides.iter().enumerate() {
            let workers: Vec<Worker> = (0..WORKERS).map(|k| shared.worker(side_index, k)).collect();
            let connect = world.bed.connect_string(&side.servers);
            let mut command = match &program {
                Program::Curator { java, classpath } => {
                    let mut command = side.namespace.command(java);
                    command
                        .arg("-cp")
                        .arg(classpath)
                        .arg(curator_program())
                        .arg(&connect)
                        .arg(kind)
                        .arg(path)
                        .arg(WORKERS.to_string())
                        .arg(workers[0].writes.to_string())
                        .arg(SESSION.as_millis().to_string());
                    command
                }
                Program::Ours(binary) => {
                    let mut command = side.namespace.command(binary);
                    command
                        .arg("--worker")
                        .arg(kind)
                        .arg("--connect")
                        .arg(format!("{connect}{path}"))
                        .arg("--slots")
                        .arg(WORKERS.to_string())
                        .arg("--side")
                        .arg(side_index.to_string())
                        .arg("--session-ms")
                        .arg(SESSION.as_millis().to_string());
                    command
                }
            };
            command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            let mut command = tokio::process::Command::from(command);
            command.kill_on_drop(true);
            let child = {
                let _entered = side.runtime.enter();
                command
                    .spawn()
                    .map_err(|e| format!("starting the Curator worker: {e}"))?
            };
            if side_index == 0
                && let Some(pid) = child.id()
            {
                world
                    .side_a_processes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(pid);
            }
            let task = side.runtime.spawn(relay(child, workers, stop.clone()));
            tasks.push((side_index, task));
        }
        self.run = Some(FencedRun::from_tasks(shared, tasks));
        Ok(())
    }

    fn ready_for_fault(&self) -> bool {
        self.run.as_ref().is_none_or(FencedRun::side_a_holds)
    }

    fn finish(self: Box<Self>, world: &World, fault_at: Duration) -> Result<Finished, String> {
        match self.run {
            Some(run) => run.finish(world, fault_at),
            None => Ok(Finished {
                details: serde_json::json!({ "skipped": self.skipped }),
                ..Finished::default()
            }),
        }
    }
}

/// Turns a Curator worker's lines into fenced writes and held intervals until `stop`; returns
/// the holds.
async fn relay(
    mut child: tokio::process::Child,
    workers: Vec<Worker>,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, String> {
    let stdout = child.stdout.take().ok_or("the worker's output")?;
    let stdin = child.stdin.take();
    let mut lines = BufReader::new(stdout).lines();
    let mut terms: Vec<Option<Term>> = workers.iter().map(|_| None).collect();
    let mut holds = 0;
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            _ = stop.wait_for(|stop| *stop) => break,
        };
        let line = match line {
            Ok(Some(line)) => line,
            Ok(None) => return Err("the Curator worker ended early".into()),
            Err(e) => return Err(format!("reading the Curator worker: {e}")),
        };
        let mut words = line.split_whitespace();
        let (Some(slot), Some(what), Some(value)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Some(slot) = slot.parse::<usize>().ok().filter(|s| *s < workers.len()) else {
            continue;
        };
        let worker = &workers[slot];
        // When a belief began or ended: the worker's own reading of the monotonic clock, the
        // last word of an `H` or `E` line.
        let mut time = || match words.next().map(str::parse::<u64>) {
            Some(Ok(nanos)) => Ok(worker.run_time_of(Duration::from_nanos(nanos))),
            _ => Err(format!("a line without its time: {line}")),
        };
        match what {
            "H" => {
                let at = time()?;
                let token = value
                    .parse::<i64>()
                    .map_err(|_| format!("a bad token line: {line}"))?;
                if let Some(open) = terms[slot].take() {
                    open.end_at(false, at);
                }
                holds += 1;
                terms[slot] = Some(worker.begin_at(token, at));
            }
            "W" => {
                if let Some(term) = &terms[slot] {
                    term.write();
                }
            }
            "E" => {
                let at = time()?;
                if let Some(term) = terms[slot].take() {
                    term.end_at(value == "1", at);
                }
            }
            "X" => return Err(format!("the Curator worker failed: {line}")),
            _ => {}
        }
    }
    for term in terms.into_iter().flatten() {
        term.end(false);
    }
    // Closing its standard input ends the worker; kill it if it lingers.
    drop(stdin);
    if tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
    Ok(holds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fenced::{Fenced, monotonic_now};

    /// A worker process that prints `first`, then `second` after a pause, and exits.
    fn worker_process(first: &str, second: &str, pause_ms: u32) -> tokio::process::Child {
        let script =
            format!("printf '%s\\n' '{first}'; sleep 0.{pause_ms:03}; printf '%s\\n' '{second}'");
        let mut command = tokio::process::Command::new("sh");
        command
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        command.spawn().expect("sh")
    }

    /// A release and the next grant, in two processes whose lines the suite reads in the other
    /// order (the releasing process's line comes 300 ms late): the beliefs keep the times the
    /// processes stamped, so no window opens. Timed at reading, the second hold lay inside the
    /// first.
    #[tokio::test]
    async fn beliefs_are_timed_where_they_were_held_not_where_they_were_read() {
        let shared = Fenced::starting_at(std::time::Instant::now());
        let ns = |offset_ms: u64| (monotonic_now() + Duration::from_millis(offset_ms)).as_nanos();
        let (releases, grants) = (ns(1), ns(2));
        let releaser = worker_process(
            &format!("0 H 11 {}", ns(0)),
            &format!("0 E 0 {releases}"),
            300,
        );
        let granted = worker_process(&format!("0 H 12 {grants}"), &format!("0 E 0 {}", ns(3)), 0);
        // Never stopped: each relay reads its worker's lines to the end of its output.
        let (_stop_tx, stop) = watch::channel(false);
        let a = relay(releaser, vec![shared.worker(0, 0)], stop.clone());
        let b = relay(granted, vec![shared.worker(1, 0)], stop);
        let (a, b) = tokio::time::timeout(Duration::from_secs(10), async { tokio::join!(a, b) })
            .await
            .expect("both workers' lines within 10 s");
        let ended = Err("the Curator worker ended early".to_owned());
        assert_eq!((a, b), (ended.clone(), ended));
        assert_eq!(shared.ended_holds(), 2, "both holds relayed");
        assert_eq!(shared.unsafe_windows(), Vec::<String>::new());
    }
}
