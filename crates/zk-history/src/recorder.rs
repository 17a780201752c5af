//! Recording a history while the run goes on: a [`Recorder`] that any number of threads or
//! tasks share (it is a cheap handle: clone it), an [`OpHandle`] per invoked operation, and a
//! [`HeldHandle`] per believed-held interval.
//!
//! Recording takes one short mutex hold per event (a push or a field update); no I/O.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::history::{
    FaultEvent, FencedWrite, HeldInterval, History, OpId, Operation, Outcome, ProcessId, Token,
};

/// The run's monotonic clock: the time since the run's start. Copy it into everything that
/// records (a [`Recorder`], a [`FencedStore`](crate::FencedStore)) so that all times agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    start: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Clock {
            start: Instant::now(),
        }
    }

    /// A clock whose zero is `start`.
    pub fn starting_at(start: Instant) -> Self {
        Clock { start }
    }

    /// The time since the clock's zero.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

struct Shared<I, O> {
    clock: Clock,
    history: Mutex<History<I, O>>,
}

/// Records a history; clone it to share it (it is an `Arc` inside).
///
/// ```
/// use zk_history::{Outcome, Recorder};
/// use zk_history::models::{CounterOp};
///
/// let recorder: Recorder<CounterOp, i64> = Recorder::new();
/// let add = recorder.invoke(1, CounterOp::Add(1));
/// add.ok(1);
/// let lost = recorder.invoke(2, CounterOp::Add(1));
/// drop(lost); // never completed: its outcome stays Unknown
/// let history = recorder.history();
/// assert_eq!(history.ops[0].outcome, Outcome::Ok(1));
/// assert_eq!(history.ops[1].outcome, Outcome::Unknown);
/// ```
pub struct Recorder<I, O> {
    shared: Arc<Shared<I, O>>,
}

impl<I, O> Clone for Recorder<I, O> {
    fn clone(&self) -> Self {
        Recorder {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<I, O> std::fmt::Debug for Recorder<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("clock", &self.shared.clock)
            .finish_non_exhaustive()
    }
}

impl<I, O> Default for Recorder<I, O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<I, O> Recorder<I, O> {
    /// A recorder with its own clock, starting now.
    pub fn new() -> Self {
        Self::with_clock(Clock::new())
    }

    /// A recorder on the run's clock.
    pub fn with_clock(clock: Clock) -> Self {
        Recorder {
            shared: Arc::new(Shared {
                clock,
                history: Mutex::new(History::new()),
            }),
        }
    }

    /// The recorder's clock.
    pub fn clock(&self) -> Clock {
        self.shared.clock
    }

    /// The time since the run's start.
    pub fn now(&self) -> Duration {
        self.shared.clock.now()
    }

    fn lock(&self) -> MutexGuard<'_, History<I, O>> {
        // A panic elsewhere while recording leaves the history as it was: keep recording.
        self.shared
            .history
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the invocation of `op` by `process` now; call it just before sending the
    /// request. The operation's outcome is [`Outcome::Unknown`] until the handle says
    /// otherwise.
    pub fn invoke(&self, process: ProcessId, op: I) -> OpHandle<I, O> {
        let mut history = self.lock();
        let invoke = self.shared.clock.now();
        let index = history.ops.len();
        let id = index as OpId;
        history.ops.push(Operation {
            id,
            process,
            invoke,
            complete: None,
            op,
            outcome: Outcome::Unknown,
        });
        OpHandle {
            recorder: self.clone(),
            index,
            id,
        }
    }

    /// Records a fault event now.
    pub fn fault(&self, description: impl Into<String>) {
        let mut history = self.lock();
        let at = self.shared.clock.now();
        history.faults.push(FaultEvent {
            at,
            description: description.into(),
        });
    }

    /// Records that `process` believes, from now on, that it holds the lock (or leads), with
    /// `token` when known. The interval ends when the handle is [ended](HeldHandle::end) or
    /// dropped; a handle still alive when the history is taken leaves it open (held to the
    /// end of the run).
    pub fn held(&self, process: ProcessId, token: Option<Token>) -> HeldHandle<I, O> {
        let from = self.shared.clock.now();
        self.held_from(process, token, from)
    }

    /// As [`held`](Self::held), from `from` on the run's clock rather than now: for a belief
    /// timed where it was held (another process that reports it with its own reading of a
    /// clock the run shares), not where it was heard of.
    pub fn held_from(
        &self,
        process: ProcessId,
        token: Option<Token>,
        from: Duration,
    ) -> HeldHandle<I, O> {
        let mut history = self.lock();
        let index = history.held.len();
        history.held.push(HeldInterval {
            process,
            token,
            from,
            to: None,
        });
        HeldHandle {
            recorder: self.clone(),
            index,
            ended: false,
        }
    }

    /// Records a believed-held interval measured elsewhere.
    pub fn record_held(&self, interval: HeldInterval) {
        self.lock().held.push(interval);
    }

    /// Records fenced-store writes (for example a [`FencedStore`](crate::FencedStore)'s
    /// [`log`](crate::FencedStore::log) at the end of the run).
    pub fn record_fenced_writes(&self, writes: impl IntoIterator<Item = FencedWrite>) {
        self.lock().fenced_writes.extend(writes);
    }

    /// A copy of the history so far. Operations still in flight are `Unknown` without a
    /// completion time.
    pub fn history(&self) -> History<I, O>
    where
        I: Clone,
        O: Clone,
    {
        self.lock().clone()
    }

    /// The history so far, leaving the recorder empty.
    pub fn take(&self) -> History<I, O> {
        std::mem::take(&mut *self.lock())
    }

    fn complete(&self, index: usize, id: OpId, outcome: Outcome<O>) {
        let mut history = self.lock();
        let now = self.shared.clock.now();
        // After `take`, the index may name another operation or none: match the id.
        if let Some(op) = history.ops.get_mut(index)
            && op.id == id
        {
            op.complete = Some(now.max(op.invoke));
            op.outcome = outcome;
        }
    }

    fn end_held(&self, index: usize, at: Duration) {
        let mut history = self.lock();
        if let Some(h) = history.held.get_mut(index)
            && h.to.is_none()
        {
            h.to = Some(at.max(h.from));
        }
    }
}

/// One invoked operation; complete it with [`ok`](Self::ok), [`fail`](Self::fail) or
/// [`unknown`](Self::unknown) as soon as its outcome is known. Dropped without that, the
/// operation stays `Unknown` with no completion time.
#[must_use = "complete the operation with ok, fail or unknown"]
#[derive(Debug)]
pub struct OpHandle<I, O> {
    recorder: Recorder<I, O>,
    index: usize,
    id: OpId,
}

impl<I, O> OpHandle<I, O> {
    /// The operation's id.
    pub fn id(&self) -> OpId {
        self.id
    }

    /// It took effect and returned `value`.
    pub fn ok(self, value: O) {
        self.complete(Outcome::Ok(value));
    }

    /// It definitely did not take effect.
    pub fn fail(self) {
        self.complete(Outcome::Fail);
    }

    /// Its outcome is unknown (`ConnectionLoss`, a timeout); the completion time is recorded
    /// but the operation may still take effect later.
    pub fn unknown(self) {
        self.complete(Outcome::Unknown);
    }

    /// Completes it with `outcome`, now.
    pub fn complete(self, outcome: Outcome<O>) {
        self.recorder.complete(self.index, self.id, outcome);
    }
}

/// One believed-held interval; [`end`](Self::end) it when the process stops believing it
/// holds the lock (the guard reported it lost, or it was released). Dropping it ends it too.
#[derive(Debug)]
pub struct HeldHandle<I, O> {
    recorder: Recorder<I, O>,
    index: usize,
    ended: bool,
}

impl<I, O> HeldHandle<I, O> {
    /// Ends the interval now.
    pub fn end(mut self) {
        let now = self.recorder.now();
        self.end_at(now);
    }

    /// Ends the interval at `at` (for a loss noticed late but known to date from earlier).
    pub fn end_at(&mut self, at: Duration) {
        if !self.ended {
            self.ended = true;
            self.recorder.end_held(self.index, at);
        }
    }

    /// Leaves the interval open: the process believes it holds the lock to the end of the
    /// run (as a process that was killed while holding it would).
    pub fn leave_open(mut self) {
        self.ended = true;
    }
}

impl<I, O> Drop for HeldHandle<I, O> {
    fn drop(&mut self) {
        if !self.ended {
            let now = self.recorder.now();
            self.end_at(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_is_shared_across_threads() {
        let recorder: Recorder<u32, u32> = Recorder::new();
        let threads: Vec<_> = (0..4u64)
            .map(|p| {
                let r = recorder.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        let h = r.invoke(p, i);
                        if i % 3 == 0 {
                            h.fail();
                        } else {
                            h.ok(i);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let history = recorder.history();
        assert_eq!(history.ops.len(), 400);
        history.validate().unwrap();
        assert!(history.ops.iter().all(|o| o.outcome.is_definite()));
    }

    #[test]
    fn held_handles_end_on_drop_or_stay_open() {
        let recorder: Recorder<(), ()> = Recorder::new();
        let a = recorder.held(1, Some(7));
        let b = recorder.held(2, None);
        a.end();
        b.leave_open();
        drop(recorder.held(3, None));
        let h = recorder.history();
        assert!(h.held[0].to.is_some());
        assert!(h.held[1].to.is_none());
        assert!(h.held[2].to.is_some());
        recorder.fault("partition");
        assert_eq!(recorder.take().faults.len(), 1);
        assert!(recorder.history().faults.is_empty());
    }

    #[test]
    fn a_belief_timed_elsewhere_keeps_its_own_times() {
        let recorder: Recorder<(), ()> = Recorder::new();
        let mut held = recorder.held_from(4, Some(9), Duration::from_millis(5));
        held.end_at(Duration::from_millis(8));
        let h = recorder.history();
        assert_eq!(h.held[0].from, Duration::from_millis(5));
        assert_eq!(h.held[0].to, Some(Duration::from_millis(8)));
    }
}
