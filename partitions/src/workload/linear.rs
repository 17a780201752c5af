//! What the register and the counter share: checking a history for linearizability, the
//! writes alone (a broken promise when they are not) and the whole history with the reads (stale
//! reads, reported), with ZooKeeper's per-session order bounding the unknown outcomes.
//!
//! # The bound on unknown outcomes
//!
//! A call whose outcome is unknown (a lost connection, a timeout) may take effect at any time
//! after its invocation, or never, as far as the caller knows, and each such call multiplies
//! the checker's search. ZooKeeper bounds it: a session's requests are applied in the order they
//! were sent, across reconnections (a request that reaches the leader from the server the
//! session has left is refused, `SessionMoved`), and a request of an expired session is never
//! applied after the expiry, which comes before any request of the session that replaces it.
//! Each worker here sends one call at a time on its session; so an unknown call is applied, if
//! ever, before the worker's next call with a definite outcome is, hence before that call
//! completed. The check gives each unknown call that deadline (the end of the history when no
//! definite call follows).

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_history::linearizability::{CheckOptions, CheckResult, Verdict, check_operations};
use zk_history::{Clock, Model, Operation, Recorder};
use zk_proto::Client;

use super::Finished;
use crate::world::World;

/// Clients per side.
pub const WORKERS: u64 = 2;

/// A running linearizability workload: its recorder and its workers' tasks.
pub struct LinearRun<I, O> {
    recorder: Recorder<I, O>,
    tasks: Vec<(usize, JoinHandle<Result<(), String>>)>,
}

impl<I: Clone, O: Clone> LinearRun<I, O> {
    /// Starts [`WORKERS`] workers on each side: `work` gets a connected client, its process id
    /// (`10 × side + k`), the recorder and the stop signal.
    pub fn start<W, F>(world: &World, stop: &watch::Receiver<bool>, work: W) -> Result<Self, String>
    where
        W: Fn(Client, u64, Recorder<I, O>, watch::Receiver<bool>) -> F,
        F: Future<Output = Result<(), String>> + Send + 'static,
    {
        let recorder = Recorder::with_clock(Clock::starting_at(world.start));
        let mut tasks = Vec::new();
        for (side_index, side) in world.sides.iter().enumerate() {
            for k in 0..WORKERS {
                let client = side.connect(&world.bed)?;
                let process = side_index as u64 * 10 + k;
                let task =
                    side.runtime
                        .spawn(work(client, process, recorder.clone(), stop.clone()));
                tasks.push((side_index, task));
            }
        }
        Ok(LinearRun { recorder, tasks })
    }

    /// Waits for the workers and judges the history against `model` (see [`judge`]).
    pub fn finish<M>(
        self,
        world: &World,
        model: &M,
        is_write: impl Fn(&I) -> bool,
    ) -> Result<Finished, String>
    where
        M: Model<Input = I, Output = O>,
    {
        for (side, task) in self.tasks {
            world.sides[side]
                .runtime
                .block_on(task)
                .map_err(|e| format!("a worker: {e}"))??;
        }
        let history = self.recorder.take();
        let mut finished = Finished {
            operations: history.ops.len() as u64,
            ..Finished::default()
        };
        finished.details = judge(model, &history.ops, is_write, &mut finished)?;
        Ok(finished)
    }
}

/// Sets each unknown operation's completion to the completion of the same process's next
/// operation with a definite outcome (or the history's end), as [the module](self) explains;
/// checked with an unknown horizon of zero, that is the operation's deadline.
pub fn session_ordered<I: Clone, O: Clone>(ops: &[Operation<I, O>]) -> Vec<Operation<I, O>> {
    let end = ops
        .iter()
        .map(|op| op.complete.unwrap_or(op.invoke))
        .max()
        .unwrap_or_default();
    let mut ordered: Vec<Operation<I, O>> = ops.to_vec();
    let mut by_process: Vec<usize> = (0..ordered.len()).collect();
    by_process.sort_by_key(|&i| (ordered[i].process, ordered[i].invoke, ordered[i].id));
    // Walk each process's operations backwards, carrying the next definite completion.
    let mut next_definite: Option<(u64, Duration)> = None;
    for &i in by_process.iter().rev() {
        let process = ordered[i].process;
        let carried = match next_definite {
            Some((p, at)) if p == process => at,
            _ => end,
        };
        if ordered[i].outcome.is_definite() {
            next_definite = Some((process, ordered[i].complete.unwrap_or(end)));
        } else {
            ordered[i].complete = Some(carried.max(ordered[i].invoke));
            next_definite = Some((process, carried));
        }
    }
    ordered
}

/// Checks `ops` against `model`: the operations `is_write` selects alone (a violation or an
/// inconclusive check is a broken promise), then all of them (a violation is reported as stale
/// reads in the details). Returns the verdicts for the details.
pub fn judge<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    is_write: impl Fn(&M::Input) -> bool,
    finished: &mut Finished,
) -> Result<serde_json::Value, String>
where
    M::Input: Clone,
    M::Output: Clone,
{
    let options = CheckOptions {
        unknown_horizon: Some(Duration::ZERO),
        time_limit: Some(Duration::from_secs(60)),
        ..CheckOptions::default()
    };
    let ordered = session_ordered(ops);
    let writes: Vec<_> = ordered
        .iter()
        .filter(|op| is_write(&op.op))
        .cloned()
        .collect();
    let written = check_operations(model, &writes, &options)
        .map_err(|e| format!("checking the writes: {e}"))?;
    let all = check_operations(model, &ordered, &options)
        .map_err(|e| format!("checking the history: {e}"))?;
    match &written.verdict {
        Verdict::Linearizable => {}
        Verdict::NotLinearizable { violation } => {
            finished.violations.push(format!("writes: {violation}"));
        }
        Verdict::Unknown { reason } => finished
            .violations
            .push(format!("writes: the checker gave up: {reason}")),
    }
    let unknown = ops.iter().filter(|op| !op.outcome.is_definite()).count();
    Ok(serde_json::json!({
        "writes": writes.len(),
        "unknown_outcomes": unknown,
        "writes_verdict": verdict(&written),
        "all_verdict": verdict(&all),
        "stale_reads": all.verdict.violation().map(ToString::to_string),
    }))
}

fn verdict(result: &CheckResult) -> String {
    result.to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use zk_history::{Operation, Outcome};

    use super::session_ordered;

    fn op(
        id: u64,
        process: u64,
        invoke: u64,
        complete: u64,
        outcome: Outcome<i64>,
    ) -> Operation<u8, i64> {
        Operation {
            id,
            process,
            invoke: Duration::from_millis(invoke),
            complete: Some(Duration::from_millis(complete)),
            op: 0,
            outcome,
        }
    }

    #[test]
    fn an_unknown_call_is_due_by_the_next_definite_call_of_its_process() {
        let ops = vec![
            op(0, 1, 0, 10, Outcome::Unknown),
            op(1, 2, 5, 50, Outcome::Ok(1)),
            op(2, 1, 11, 20, Outcome::Unknown),
            op(3, 1, 21, 30, Outcome::Fail),
            op(4, 1, 31, 40, Outcome::Unknown),
        ];
        let ordered = session_ordered(&ops);
        let due = |id: usize| ordered[id].complete.map(|d| d.as_millis());
        // Both unknowns before the Fail are due when it completed; the last one, with
        // nothing definite after it, at the history's end (50 ms).
        assert_eq!(due(0), Some(30));
        assert_eq!(due(2), Some(30));
        assert_eq!(due(4), Some(50));
        // Definite operations keep their completions.
        assert_eq!(due(1), Some(50));
        assert_eq!(due(3), Some(30));
    }
}
