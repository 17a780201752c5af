//! What the lock and the leader workloads share: two clients on each side take turns holding
//! (a lock, a leadership); a holder writes to a fenced store (`zk_history::FencedStore`: it
//! refuses a token lower than one it has seen) with its fencing token while the recipe says it
//! holds, and records the interval in which it believed it held (from the grant to the recipe
//! reporting the hold suspended or lost, or its own release).
//!
//! Judged by `zk_history`'s fenced-store checker: no write accepted out of token order and no
//! token shared by two processes (two leaders in one term), never explained; and the unsafe
//! windows where two processes both believed they held (0 expected, except where a scenario
//! explains them: a frozen process).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_history::{Clock, FaultEvent, FencedStore, HeldHandle, Recorder, check_fenced_history};
use zk_proto::Client;
use zk_recipes::election::Leadership;

use super::{Finished, Window, Workload};
use crate::world::World;

/// Clients per side.
pub const WORKERS: u64 = 2;
/// Writes per hold, by side, and the pause between them (the protected work): side A holds for
/// about 6 s, longer than the fault takes to be noticed, so that a fault at a random moment after
/// it took hold hits it while it holds and its recipe tells it.
pub const WRITES: [usize; 2] = [60, 3];
/// The pause between two writes of a hold.
pub const WORK: Duration = Duration::from_millis(100);

/// A believed-held interval as the worker saw it end.
#[derive(Debug, Clone, Copy)]
struct Hold {
    process: u64,
    from: Duration,
    to: Duration,
    /// Ended because the recipe said the hold was gone (not by the worker's release).
    by_recipe: bool,
}

/// The state of a fenced workload, shared with its workers.
pub struct Fenced {
    recorder: Recorder<(), ()>,
    store: FencedStore,
    /// Whether a side A worker holds now.
    a_holds: AtomicBool,
    holds: Mutex<Vec<Hold>>,
    /// The system's monotonic clock's reading at the run clock's zero: maps a worker
    /// process's own reading of it ([`monotonic_now`]) onto the run's clock.
    monotonic_at_zero: Duration,
}

/// The system-wide monotonic clock (`CLOCK_MONOTONIC`), which every process on the machine
/// reads alike (the JVM's `System.nanoTime()` too): a worker process stamps each line with it,
/// so that a belief is timed where it was held. Timed where the suite reads the line instead,
/// two processes' lines read by two threads could swap places by a scheduling delay, and a
/// release followed by another's grant would look like both holding at once.
pub fn monotonic_now() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

/// One worker's view: its process id, its side, and how many writes a hold makes.
#[derive(Clone)]
pub struct Worker {
    /// The process id in the history (`10 × side + k`).
    pub process: u64,
    /// How many writes a hold makes.
    pub writes: usize,
    side_a: bool,
    shared: Arc<Fenced>,
}

/// Where a holder's story goes: the fenced store and the recorder of this process
/// ([`Worker`]), or the output lines of a worker process that the suite relays
/// ([`super::process`]).
pub trait Holder: Send + Sync + 'static {
    /// One hold.
    type Term: HeldTerm + Send;
    /// A hold with `token` begins now.
    fn begin(&self, token: i64) -> Self::Term;
    /// How many writes a hold makes.
    fn writes(&self) -> usize;
}

/// One hold, while it lasts.
pub trait HeldTerm {
    /// A write to the protected resource with the hold's token.
    fn write(&self);
    /// The hold ends now: `by_recipe` when the recipe said so.
    fn end(self, by_recipe: bool);
}

impl Holder for Worker {
    type Term = Term;

    fn begin(&self, token: i64) -> Term {
        Worker::begin(self, token)
    }

    fn writes(&self) -> usize {
        self.writes
    }
}

impl HeldTerm for Term {
    fn write(&self) {
        Term::write(self);
    }

    fn end(self, by_recipe: bool) {
        Term::end(self, by_recipe);
    }
}

/// One hold, while it lasts.
pub struct Term {
    worker: Worker,
    token: i64,
    from: Duration,
    held: HeldHandle<(), ()>,
}

impl Worker {
    /// A hold with `token` begins now.
    pub fn begin(&self, token: i64) -> Term {
        self.begin_at(token, self.shared.recorder.now())
    }

    /// A hold with `token` began at `at` on the run's clock.
    pub fn begin_at(&self, token: i64, at: Duration) -> Term {
        let held = self
            .shared
            .recorder
            .held_from(self.process, Some(token), at);
        if self.side_a {
            self.shared.a_holds.store(true, Ordering::SeqCst);
        }
        Term {
            worker: self.clone(),
            token,
            from: at,
            held,
        }
    }

    /// The run clock's time of `monotonic`, a reading of [`monotonic_now`] (in this process
    /// or another).
    pub fn run_time_of(&self, monotonic: Duration) -> Duration {
        monotonic.saturating_sub(self.shared.monotonic_at_zero)
    }
}

impl Term {
    /// Writes to the fenced store with the hold's token (a refusal is in the store's log; the
    /// checker judges it).
    pub fn write(&self) {
        let _ = self
            .worker
            .shared
            .store
            .write(self.worker.process, self.token);
    }

    /// The hold ends now: `by_recipe` when the recipe said so.
    pub fn end(self, by_recipe: bool) {
        let now = self.worker.shared.recorder.now();
        self.end_at(by_recipe, now);
    }

    /// The hold ended at `at` on the run's clock: `by_recipe` when the recipe said so.
    pub fn end_at(mut self, by_recipe: bool, at: Duration) {
        self.held.end_at(at);
        let shared = &self.worker.shared;
        if self.worker.side_a {
            shared.a_holds.store(false, Ordering::SeqCst);
        }
        shared
            .holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Hold {
                process: self.worker.process,
                from: self.from,
                to: at.max(self.from),
                by_recipe,
            });
    }
}

/// A running fenced workload: its state and its workers' tasks.
pub struct FencedRun {
    shared: Arc<Fenced>,
    tasks: Vec<(usize, JoinHandle<Result<u64, String>>)>,
}

impl Fenced {
    /// A fresh state on the run's clock.
    pub fn new(world: &World) -> Arc<Fenced> {
        Self::starting_at(world.start)
    }

    /// A fresh state on a clock whose zero is `start`.
    pub fn starting_at(start: std::time::Instant) -> Arc<Fenced> {
        let clock = Clock::starting_at(start);
        // Read back to back: the mapping is off by the gap between the two reads, the same for
        // every line, so it never changes the order of two beliefs.
        let monotonic_at_zero = monotonic_now().saturating_sub(clock.now());
        Arc::new(Fenced {
            monotonic_at_zero,
            recorder: Recorder::with_clock(clock),
            store: FencedStore::new(clock),
            a_holds: AtomicBool::new(false),
            holds: Mutex::new(Vec::new()),
        })
    }

    /// Worker `k` of side `side_index` (its process id is `10 × side + k`).
    pub fn worker(self: &Arc<Self>, side_index: usize, k: u64) -> Worker {
        Worker {
            process: side_index as u64 * 10 + k,
            writes: WRITES[side_index],
            side_a: side_index == 0,
            shared: self.clone(),
        }
    }
}

impl FencedRun {
    /// Starts [`WORKERS`] workers on each side: `work` gets a connected client, the worker and
    /// the stop signal, and returns the number of holds.
    pub fn start<W, F>(
        world: &World,
        stop: &watch::Receiver<bool>,
        work: &W,
    ) -> Result<Self, String>
    where
        W: Fn(Client, Worker, watch::Receiver<bool>) -> F,
        F: Future<Output = Result<u64, String>> + Send + 'static,
    {
        let shared = Fenced::new(world);
        let mut tasks = Vec::new();
        for (side_index, side) in world.sides.iter().enumerate() {
            for k in 0..WORKERS {
                let worker = shared.worker(side_index, k);
                let client = side.connect(&world.bed)?;
                let task = side.runtime.spawn(work(client, worker, stop.clone()));
                tasks.push((side_index, task));
            }
        }
        Ok(FencedRun { shared, tasks })
    }

    /// A run whose workers' `tasks` (with their sides) were started elsewhere on `shared`.
    pub fn from_tasks(
        shared: Arc<Fenced>,
        tasks: Vec<(usize, JoinHandle<Result<u64, String>>)>,
    ) -> Self {
        FencedRun { shared, tasks }
    }

    /// Whether a side A worker holds now.
    pub fn side_a_holds(&self) -> bool {
        self.shared.a_holds.load(Ordering::SeqCst)
    }

    /// Waits for the workers and judges the history.
    pub fn finish(self, world: &World, fault_at: Duration) -> Result<Finished, String> {
        let mut holds = 0;
        for (side, task) in self.tasks {
            holds += world.sides[side]
                .runtime
                .block_on(task)
                .map_err(|e| format!("a worker: {e}"))??;
        }
        let shared = &self.shared;
        shared.recorder.record_fenced_writes(shared.store.log());
        let mut history = shared.recorder.take();
        history.faults = world
            .faults
            .events()
            .into_iter()
            .map(|(at, description)| FaultEvent { at, description })
            .collect();
        let report = check_fenced_history(&history).map_err(|e| format!("checking: {e}"))?;
        let mut finished = Finished {
            operations: history.fenced_writes.len() as u64,
            ..Finished::default()
        };
        finished
            .violations
            .extend(report.violations.iter().map(ToString::to_string));
        finished
            .windows
            .extend(report.unsafe_windows.iter().map(|window| Window {
                length: window.length(),
                what: window.to_string(),
            }));
        let seen = shared
            .holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        // Side A's hold the fault hit, and when the recipe told it; side B's first grant after.
        let hit = seen
            .iter()
            .find(|h| h.process < 10 && h.from <= fault_at && h.to >= fault_at);
        let learned = hit.filter(|h| h.by_recipe).map(|h| h.to - fault_at);
        finished.learn_times.extend(learned);
        let granted = seen
            .iter()
            .filter(|h| h.process >= 10 && h.from >= fault_at)
            .map(|h| h.from - fault_at)
            .min();
        let refused = history.fenced_writes.iter().filter(|w| !w.accepted).count();
        finished.details = serde_json::json!({
            "holder_hit": hit.map(|h| h.process),
            "holder_learned_ms": learned.map(|d| d.as_millis() as u64),
            "other_side_granted_ms": granted.map(|d| d.as_millis() as u64),
            "holds": holds,
            "writes": history.fenced_writes.len(),
            "refused_writes": refused,
        });
        Ok(finished)
    }
}

/// A fenced workload whose workers are `work` (an `async fn(Client, Worker, stop) -> holds`):
/// the lock's and the latch's.
pub struct FencedWorkload<W> {
    name: &'static str,
    work: W,
    run: Option<FencedRun>,
}

impl<W> FencedWorkload<W> {
    /// The workload `name`, whose workers run `work`.
    pub fn new(name: &'static str, work: W) -> Self {
        FencedWorkload {
            name,
            work,
            run: None,
        }
    }
}

impl<W, F> Workload for FencedWorkload<W>
where
    W: Fn(Client, Worker, watch::Receiver<bool>) -> F,
    F: Future<Output = Result<u64, String>> + Send + 'static,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        self.run = Some(FencedRun::start(world, &stop, &self.work)?);
        Ok(())
    }

    fn ready_for_fault(&self) -> bool {
        self.run.as_ref().is_none_or(FencedRun::side_a_holds)
    }

    fn finish(self: Box<Self>, world: &World, fault_at: Duration) -> Result<Finished, String> {
        self.run.ok_or("not started")?.finish(world, fault_at)
    }
}

/// One term of a leader (the latch's, the master election's): writes with `token` while
/// `leadership` says it leads, [`Worker::writes`](Worker) times at most, and records the
/// belief from now until the recipe ends it or the term is over.
pub async fn lead_term(me: &Worker, token: i64, leadership: Leadership) {
    let term = me.begin(token);
    let mut by_recipe = false;
    for _ in 0..me.writes {
        if !leadership.is_leader() {
            by_recipe = true;
            break;
        }
        term.write();
        tokio::select! {
            _ = leadership.wait_lost(None) => {
                by_recipe = true;
                break;
            }
            _ = tokio::time::sleep(WORK) => {}
        }
    }
    term.end(by_recipe);
}

#[cfg(test)]
impl Fenced {
    /// How many holds have ended.
    pub fn ended_holds(&self) -> usize {
        self.holds.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// The unsafe windows of the history so far (it is taken).
    pub fn unsafe_windows(&self) -> Vec<String> {
        let history = self.recorder.take();
        match check_fenced_history(&history) {
            Ok(report) => report
                .unsafe_windows
                .iter()
                .map(ToString::to_string)
                .collect(),
            Err(e) => vec![format!("checking: {e}")],
        }
    }
}
