//! One run's world: the partition bed (servers in network namespaces), two sides of clients
//! (side A, which the fault hits, and side B, which watches it from the rest of the ensemble),
//! the run's clock and the log of faults.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zk_proto::Client;
use zk_testkit::partition::{ClientNamespace, PartitionBed};

/// The session timeout of every client of the suite.
pub const SESSION: Duration = Duration::from_secs(4);
/// The servers' `tickTime`: the shortest session they grant is two ticks, and a follower cut
/// from its leader gives up after `syncLimit` (5) ticks, 5 s: longer than a session, so the
/// cut-off follower's window is there to be closed.
pub const TICK: Duration = Duration::from_secs(1);
/// Bounds every wait for something a run must bring (a connection, a quorum).
pub const LIMIT: Duration = Duration::from_secs(40);

/// A group of clients in one network namespace, dialing a chosen set of servers.
pub struct Side {
    /// `a` or `b`.
    pub label: &'static str,
    /// The namespace (the fault may cut it, or freeze its runtime).
    pub namespace: ClientNamespace,
    /// The runtime the side's clients and workloads run on; its threads are in the namespace.
    pub runtime: Runtime,
    /// The servers the side's clients dial (indices into the bed).
    pub servers: Vec<usize>,
}

impl Side {
    /// Connects one client of this side (a session of its own, pinned to the side's servers:
    /// it does not follow the ensemble's configuration, so it stays behind the fault). An
    /// expired session is renewed, so the client goes on after the fault.
    pub fn connect(&self, bed: &PartitionBed) -> Result<Client, String> {
        let connect = bed.connect_string(&self.servers);
        let label = self.label;
        self.runtime.block_on(async move {
            tokio::time::timeout(
                LIMIT,
                Client::builder()
                    .session_timeout(SESSION)
                    .follow_ensemble(false)
                    .renew_expired_sessions(true)
                    .connect(&connect),
            )
            .await
            .map_err(|_| format!("side {label}: connect to {connect}: not within {LIMIT:?}"))?
            .map_err(|e| format!("side {label}: connect to {connect}: {e}"))
        })
    }

    /// Freezes the side's runtime for `pause`, as a stop-the-world pause of its process: both
    /// worker threads block, so no timer fires, no byte is read or written and no workload
    /// step runs until it ends. Returns at once.
    pub fn freeze(&self, pause: Duration) {
        let entered = Arc::new(AtomicUsize::new(0));
        for _ in 0..2 {
            let entered = entered.clone();
            self.runtime.spawn(async move {
                entered.fetch_add(1, Ordering::SeqCst);
                // Hold this worker until the other worker has taken the second task (it steals
                // it from this one's queue), so that both are blocked at once.
                let waiting = Instant::now();
                while entered.load(Ordering::SeqCst) < 2
                    && waiting.elapsed() < Duration::from_secs(1)
                {
                    std::thread::yield_now();
                }
                std::thread::sleep(pause);
            });
        }
    }
}

/// What happened to the network and the processes, with the run's clock.
#[derive(Default)]
pub struct FaultLog {
    events: Mutex<Vec<(Duration, String)>>,
}

impl FaultLog {
    /// Notes `what` at `at` (since the run's start).
    pub fn note(&self, at: Duration, what: impl Into<String>) {
        let what = what.into();
        eprintln!("  [{:>7.3} s] {what}", at.as_secs_f64());
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((at, what));
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<(Duration, String)> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The bed, the two sides, the clock. The sides are declared (so dropped) before the bed: their
/// runtimes' threads keep the namespaces alive.
pub struct World {
    /// Side A (hit by the fault) and side B.
    pub sides: [Side; 2],
    /// The servers, in their namespaces.
    pub bed: PartitionBed,
    /// The run's start: every recorded time is measured from it.
    pub start: Instant,
    /// The faults, as they happen.
    pub faults: FaultLog,
    /// Side A's processes outside the suite's own (Curator's JVM): a pause of side A stops
    /// them too (SIGSTOP).
    pub side_a_processes: Mutex<Vec<u32>>,
}

impl World {
    /// Time since the run's start.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Notes a fault event now; returns when.
    pub fn note(&self, what: impl Into<String>) -> Duration {
        let at = self.now();
        self.faults.note(at, what);
        at
    }

    /// Sends `signal` (`STOP`, `CONT`) to side A's outside processes.
    pub fn signal_side_a(&self, signal: &str) -> Result<(), String> {
        let pids = self
            .side_a_processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for pid in pids {
            let status = std::process::Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(pid.to_string())
                .status()
                .map_err(|e| format!("kill -{signal} {pid}: {e}"))?;
            if !status.success() {
                return Err(format!("kill -{signal} {pid}: {status}"));
            }
        }
        Ok(())
    }

    /// Side A.
    pub fn a(&self) -> &Side {
        &self.sides[0]
    }

    /// Side B.
    pub fn b(&self) -> &Side {
        &self.sides[1]
    }
}
