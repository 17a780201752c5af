//! What the register and the counter share: checking a history for linearizability, the
//! writes alone (a broken promise when they are not) and the whole history with the reads (stale
//! reads, reported), with ZooKeeper's per-session order bounding the unknown outcomes, and
//! telling a write the ensemble lost from a broken promise of the client.
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

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_history::linearizability::{CheckOptions, CheckResult, Verdict, check_operations};
use zk_history::{Clock, Model, Operation, Outcome, Recorder};
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
    pub fn finish<M, K>(
        self,
        world: &World,
        model: &M,
        is_write: impl Fn(&I) -> bool,
        given_once: impl Fn(&O) -> Option<K>,
    ) -> Result<Finished, String>
    where
        M: Model<Input = I, Output = O>,
        K: Ord + std::fmt::Display,
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
        finished.details = judge(model, &history.ops, is_write, given_once, &mut finished)?;
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

/// Proof that the ensemble lost acknowledged writes: two writes acknowledged with the same
/// `given_once` key, one a correct ensemble gives to one write only (a node's new version: each
/// `setData` increments it; an increment-only counter's new value: each increment is a
/// compare-and-set on the version it read). When the ensemble forgets a write it acknowledged,
/// the next write on the state it went back to gets the lost write's key again. The client
/// cannot cause this: the keys come from the servers' replies.
pub fn lost_writes<I, O, K: Ord + std::fmt::Display>(
    ops: &[Operation<I, O>],
    is_write: impl Fn(&I) -> bool,
    given_once: impl Fn(&O) -> Option<K>,
) -> Vec<String> {
    let mut first: BTreeMap<K, &Operation<I, O>> = BTreeMap::new();
    let mut proofs = Vec::new();
    for op in ops.iter().filter(|op| is_write(&op.op)) {
        let Outcome::Ok(output) = &op.outcome else {
            continue;
        };
        let Some(key) = given_once(output) else {
            continue;
        };
        match first.get(&key) {
            Some(earlier) => proofs.push(format!(
                "{key} was acknowledged to two writes: #{} (p{}, completed at {:.3} s) and #{} \
                 (p{}, completed at {:.3} s); the ensemble lost the first",
                earlier.id,
                earlier.process,
                earlier.complete.unwrap_or(earlier.invoke).as_secs_f64(),
                op.id,
                op.process,
                op.complete.unwrap_or(op.invoke).as_secs_f64(),
            )),
            None => {
                first.insert(key, op);
            }
        }
    }
    proofs
}

/// Checks `ops` against `model`: the operations `is_write` selects alone (a violation or an
/// inconclusive check is a broken promise), then all of them (a violation is reported as stale
/// reads in the details). Returns the verdicts for the details.
///
/// When the ensemble is proven to have lost acknowledged writes ([`lost_writes`]), no client
/// can keep the history linearizable: a violation of the writes is then recorded in
/// [`Finished::lost_writes`] with the proof, not as a broken promise.
pub fn judge<M: Model, K: Ord + std::fmt::Display>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    is_write: impl Fn(&M::Input) -> bool,
    given_once: impl Fn(&M::Output) -> Option<K>,
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
    let lost = lost_writes(ops, &is_write, given_once);
    match &written.verdict {
        Verdict::Linearizable => {}
        Verdict::NotLinearizable { violation } if !lost.is_empty() => {
            finished.lost_writes.extend(lost.iter().cloned());
            finished.lost_writes.push(format!(
                "so the writes could not be linearizable: {violation}"
            ));
        }
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
        "lost_writes": lost,
    }))
}

fn verdict(result: &CheckResult) -> String {
    result.to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use zk_history::models::{Counter, CounterOp};
    use zk_history::{Operation, Outcome};

    use super::{judge, session_ordered};
    use crate::workload::Finished;

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

    fn add(
        id: u64,
        process: u64,
        invoke: u64,
        complete: u64,
        returned: i64,
    ) -> Operation<CounterOp, i64> {
        Operation {
            id,
            process,
            invoke: Duration::from_millis(invoke),
            complete: Some(Duration::from_millis(complete)),
            op: CounterOp::Add(1),
            outcome: Outcome::Ok(returned),
        }
    }

    fn judged(ops: &[Operation<CounterOp, i64>]) -> Finished {
        let mut finished = Finished::default();
        judge(
            &Counter::new(0).increment_only(),
            ops,
            |op| matches!(op, CounterOp::Add(_)),
            |value| Some(format!("value {value}")),
            &mut finished,
        )
        .expect("the check runs");
        finished
    }

    #[test]
    fn a_value_acknowledged_twice_proves_a_lost_write_not_a_broken_promise() {
        // 1 and 2 acknowledged, then 2 again: the ensemble went back to 1.
        let finished = judged(&[add(0, 1, 0, 1, 1), add(1, 2, 2, 3, 2), add(2, 1, 10, 11, 2)]);
        assert!(finished.violations.is_empty(), "{:?}", finished.violations);
        assert_eq!(finished.lost_writes.len(), 2, "{:?}", finished.lost_writes);
        assert!(
            finished.lost_writes[0].starts_with("value 2 was acknowledged to two writes: #1 (p2"),
            "{}",
            finished.lost_writes[0]
        );
        assert!(finished.lost_writes[1].contains("not linearizable"));
    }

    #[test]
    fn a_history_that_is_not_linearizable_without_that_proof_is_a_broken_promise() {
        // 2 before 1, in real time: no lost write explains it.
        let finished = judged(&[add(0, 1, 0, 1, 2), add(1, 2, 2, 3, 1)]);
        assert!(
            finished.lost_writes.is_empty(),
            "{:?}",
            finished.lost_writes
        );
        assert_eq!(finished.violations.len(), 1);
        assert!(finished.violations[0].starts_with("writes: not linearizable"));
        // And a linearizable history is neither.
        let finished = judged(&[add(0, 1, 0, 1, 1), add(1, 2, 2, 3, 2)]);
        assert!(finished.violations.is_empty() && finished.lost_writes.is_empty());
    }
}
