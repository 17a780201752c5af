//! The workloads: what the clients do while the fault runs, what they record, and how it is
//! judged.

pub mod cache;
pub mod counter;
pub mod curator;
pub mod fenced;
pub mod latch;
pub mod linear;
pub mod lock;
pub mod master;
pub mod process;
pub mod register;
pub mod session;

use std::time::Duration;

use tokio::sync::watch;

use crate::world::World;

/// A time when a promise did not hold: two processes both believed they held a lock or led,
/// or a client learned of its session's loss after the ensemble had expired it. Counted as a
/// violation unless the scenario explains it (docs/partitions.md says why).
#[derive(Debug, Clone)]
pub struct Window {
    /// How long it lasted.
    pub length: Duration,
    /// Who and what.
    pub what: String,
}

/// What a workload found in one run.
#[derive(Debug, Default)]
pub struct Finished {
    /// Operations recorded.
    pub operations: u64,
    /// Broken promises no scenario explains: a fenced write accepted out of order, two leaders
    /// acting in one term, a history that is not linearizable.
    pub violations: Vec<String>,
    /// Acknowledged writes the ensemble lost, each with its proof, and what they broke: not a
    /// broken promise of the client (no client can undo a server's loss), reported apart
    /// (docs/partitions.md, "ZooKeeper 3.8.0 loses acknowledged writes").
    pub lost_writes: Vec<String>,
    /// Unsafe windows (see [`Window`]).
    pub windows: Vec<Window>,
    /// How long after the fault a client learned (state, guard validity, error).
    pub learn_times: Vec<Duration>,
    /// The workload's own figures, for the JSON line.
    pub details: serde_json::Value,
}

/// A workload of the suite.
pub trait Workload {
    /// Its name in reports.
    fn name(&self) -> &'static str;

    /// Connects its clients and starts its tasks on the sides' runtimes; they run until
    /// `stop` turns true.
    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String>;

    /// Whether the fault may come now: a workload whose promise is about a holder says so
    /// while side A holds, so that the fault hits a holder (the run waits, bounded, until every
    /// workload is ready; the fault then comes at a random moment). By default always.
    fn ready_for_fault(&self) -> bool {
        true
    }

    /// Waits for its tasks (after `stop`) and judges what they recorded; `fault_at` is when
    /// the fault began, on the run's clock.
    fn finish(self: Box<Self>, world: &World, fault_at: Duration) -> Result<Finished, String>;
}
