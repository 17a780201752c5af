//! The linearizability checker.
//!
//! # What it promises
//!
//! [`check`] answers, for a history and a [`Model`]:
//!
//! - [`Verdict::Linearizable`]: there is a total order of the operations that took effect,
//!   consistent with real time (an operation that completed before another was invoked comes
//!   first) and with the model, in which every operation with a definite result returns that
//!   result. Operations with an [unknown](crate::Outcome::Unknown) outcome are placed
//!   anywhere after their invocation, or left out; [failed](crate::Outcome::Fail) ones are
//!   left out (or, when the model says a failure is informative, placed within their
//!   interval as a no-op the model must accept).
//! - [`Verdict::NotLinearizable`]: no such order exists. The [`Violation`] names the
//!   operation the deepest attempt could not place, that attempt's linearized prefix and the
//!   state it reached, and the operations concurrent with it. This is a proof of absence
//!   (the search is exhaustive); the explanation is one witness, not the only one.
//! - [`Verdict::Unknown`]: the budget ([`CheckOptions::max_steps`],
//!   [`CheckOptions::max_memo_entries`], [`CheckOptions::time_limit`]) ran out first. Never
//!   a hang, never unbounded memory.
//!
//! The search is exact (no sampling, no hashing shortcuts: memo keys are compared in full).
//!
//! # What it does not promise
//!
//! - Speed on every history: checking linearizability is NP-complete. Typical histories
//!   (thousands of operations, about ten processes, a few unknown outcomes) take
//!   milliseconds; many concurrent unknown operations on one key can make the search
//!   exponential, which the budget turns into `Unknown`. Keyed models ([`Keyed`]) check each
//!   key alone; [`CheckOptions::unknown_horizon`] bounds how long an unknown operation may
//!   stay in flight, and [`Counter::increment_only`](crate::models::Counter::increment_only)
//!   lets the counter prune.
//! - Anything about operations that were not recorded, or about a clock that lies: times
//!   must come from one monotonic clock, and invocations must be recorded before the request
//!   is sent and completions after the reply is received.
//!
//! # Algorithm
//!
//! Wing & Gong's search with Lowe's memoization, as in Porcupine and Knossos, extended with
//! operations that may never take effect; see the `search` module's source for details.
//! Steps are bounded by [`CheckOptions::max_steps`], memory by
//! [`CheckOptions::max_memo_entries`] and time by [`CheckOptions::time_limit`] (checked
//! every 1024 steps).
//!
//! [`Keyed`]: crate::Keyed

mod search;

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::history::{
    History, HistoryError, OpId, Operation, Outcome, ProcessId, nanos, validate_ops,
};
use crate::model::Model;
use search::{Budget, Exhausted, Kind, SearchOp};

/// The bounds and knobs of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// The most search steps (one step tries one operation or undoes one), over all
    /// partitions: a bound that does not depend on the machine's speed. A step takes tens
    /// of nanoseconds. Default: 100,000,000.
    pub max_steps: u64,
    /// The most memo entries (configurations remembered), over all partitions: the bound on
    /// memory, roughly 100 bytes an entry with small states. Default: 4,000,000.
    pub max_memo_entries: u64,
    /// The longest the check may take. Default: 10 s.
    pub time_limit: Option<Duration>,
    /// How long after it completed (or after its invocation, when it never completed) an
    /// operation of unknown outcome may still take effect; `None` (the default): forever.
    /// A bound is an assumption about the system (a ZooKeeper request cannot be applied
    /// after its session expired, say): it makes the search much cheaper, and a violation
    /// found with it may be the assumption's fault.
    pub unknown_horizon: Option<Duration>,
    /// How many operations of the linearized prefix a [`Violation`] shows (its last ones).
    /// Default: 10.
    pub prefix_shown: usize,
    /// How many concurrent operations a [`Violation`] shows. Default: 20.
    pub concurrent_shown: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            max_steps: 100_000_000,
            max_memo_entries: 4_000_000,
            time_limit: Some(Duration::from_secs(10)),
            unknown_horizon: None,
            prefix_shown: 10,
            concurrent_shown: 20,
        }
    }
}

/// Why a check could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The history is malformed.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// An operation's result is of the wrong kind for the operation.
    #[error("operation {id}: {reason}")]
    BadOutput {
        /// The operation.
        id: OpId,
        /// What the model said.
        reason: String,
    },
}

/// An operation as a violation shows it (operations and results as `Debug` text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpSummary {
    /// Its id.
    pub id: OpId,
    /// Its process.
    pub process: ProcessId,
    /// Its invocation.
    #[serde(rename = "invoke_ns", with = "nanos")]
    pub invoke: Duration,
    /// Its completion, if any.
    #[serde(rename = "complete_ns", with = "nanos::option")]
    pub complete: Option<Duration>,
    /// The operation.
    pub op: String,
    /// Its outcome.
    pub outcome: String,
    /// Whether it is in the linearized prefix.
    pub linearized: bool,
}

impl OpSummary {
    fn of<I: fmt::Debug, O: fmt::Debug>(op: &Operation<I, O>, linearized: bool) -> Self {
        OpSummary {
            id: op.id,
            process: op.process,
            invoke: op.invoke,
            complete: op.complete,
            op: format!("{:?}", op.op),
            outcome: match &op.outcome {
                Outcome::Ok(v) => format!("ok {v:?}"),
                Outcome::Fail => "fail".to_owned(),
                Outcome::Unknown => "unknown".to_owned(),
            },
            linearized,
        }
    }
}

impl fmt::Display for OpSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} p{} [{:?}, ", self.id, self.process, self.invoke)?;
        match self.complete {
            Some(c) => write!(f, "{c:?}]")?,
            None => write!(f, "never]")?,
        }
        write!(f, " {} -> {}", self.op, self.outcome)
    }
}

/// One operation of a linearized prefix and the state after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinearizedStep {
    /// The operation.
    pub op: OpSummary,
    /// The model's state after it (`Debug` text).
    pub state_after: String,
}

/// Why a history is not linearizable: where the deepest attempt got stuck.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The partition (key) it is in, for a keyed model.
    pub partition: Option<String>,
    /// The operation that could not be linearized: it completed, and no order of the
    /// operations before its completion let it return what it returned.
    pub op: OpSummary,
    /// The state when it had to take effect, at the deepest attempt (`Debug` text).
    pub state: String,
    /// How many operations the longest linearizable prefix found has.
    pub prefix_len: usize,
    /// The last operations of that prefix, in order, with the state after each.
    pub prefix_tail: Vec<LinearizedStep>,
    /// The operations whose intervals overlap the failing operation's (by invocation), with
    /// whether the prefix linearized them.
    pub concurrent: Vec<OpSummary>,
    /// How many more concurrent operations there are than shown.
    pub concurrent_omitted: usize,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not linearizable")?;
        if let Some(partition) = &self.partition {
            write!(f, " (key {partition})")?;
        }
        writeln!(f, ": operation {} could not be linearized", self.op)?;
        writeln!(f, "  state when it had to take effect: {}", self.state)?;
        write!(f, "  longest linearizable prefix: {} ops", self.prefix_len)?;
        if self.prefix_tail.is_empty() {
            writeln!(f)?;
        } else {
            writeln!(f, ", ending with:")?;
            for step in &self.prefix_tail {
                writeln!(f, "    {}  => {}", step.op, step.state_after)?;
            }
        }
        write!(f, "  concurrent operations:")?;
        if self.concurrent.is_empty() {
            write!(f, " none")?;
        }
        for op in &self.concurrent {
            let mark = if op.linearized {
                "linearized"
            } else {
                "pending"
            };
            write!(f, "\n    {op}  [{mark}]")?;
        }
        if self.concurrent_omitted > 0 {
            write!(f, "\n    ... and {} more", self.concurrent_omitted)?;
        }
        Ok(())
    }
}

/// The answer of a check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// A linearization exists.
    Linearizable,
    /// None exists.
    NotLinearizable {
        /// Where the search got stuck.
        violation: Box<Violation>,
    },
    /// The budget ran out before the search could tell.
    Unknown {
        /// Which bound, and where.
        reason: String,
    },
}

impl Verdict {
    /// Whether the history is linearizable.
    pub fn is_linearizable(&self) -> bool {
        matches!(self, Verdict::Linearizable)
    }

    /// The violation, when there is one.
    pub fn violation(&self) -> Option<&Violation> {
        match self {
            Verdict::NotLinearizable { violation } => Some(violation),
            _ => None,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Linearizable => write!(f, "linearizable"),
            Verdict::NotLinearizable { violation } => write!(f, "{violation}"),
            Verdict::Unknown { reason } => write!(f, "unknown: {reason}"),
        }
    }
}

/// What a check cost.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckStats {
    /// Operations in the history.
    pub operations: usize,
    /// Operations the search considered (the others were failed or unknown reads, which
    /// tell nothing).
    pub searched: usize,
    /// Partitions (keys).
    pub partitions: usize,
    /// Partitions checked before the verdict was known.
    pub partitions_checked: usize,
    /// Search steps.
    pub steps: u64,
    /// Memo entries made.
    pub memo_entries: u64,
    /// Time taken.
    #[serde(rename = "elapsed_ns", with = "nanos")]
    pub elapsed: Duration,
}

/// A verdict and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The verdict.
    pub verdict: Verdict,
    /// The cost.
    pub stats: CheckStats,
}

impl CheckResult {
    /// Whether the history is linearizable.
    pub fn is_linearizable(&self) -> bool {
        self.verdict.is_linearizable()
    }

    /// The result as one line of JSON.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

impl fmt::Display for CheckResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        write!(
            f,
            "{} ({} ops, {} searched, {}/{} partitions, {} steps, {:?})",
            self.verdict,
            s.operations,
            s.searched,
            s.partitions_checked,
            s.partitions,
            s.steps,
            s.elapsed
        )
    }
}

/// Checks the operations of `history` (see the [module documentation](self)).
///
/// # Errors
///
/// [`CheckError`] when the history is malformed.
pub fn check<M: Model>(
    model: &M,
    history: &History<M::Input, M::Output>,
    options: &CheckOptions,
) -> Result<CheckResult, CheckError> {
    check_operations(model, &history.ops, options)
}

/// Checks `ops` (see the [module documentation](self)).
///
/// # Errors
///
/// [`CheckError`] when the operations are malformed.
pub fn check_operations<M: Model>(
    model: &M,
    ops: &[Operation<M::Input, M::Output>],
    options: &CheckOptions,
) -> Result<CheckResult, CheckError> {
    let started = Instant::now();
    validate_ops(ops)?;
    for op in ops {
        if let Outcome::Ok(output) = &op.outcome {
            model
                .check_output(&op.op, output)
                .map_err(|reason| CheckError::BadOutput { id: op.id, reason })?;
        }
    }
    let partitions = model.partition(ops);
    let mut stats = CheckStats {
        operations: ops.len(),
        partitions: partitions.len(),
        ..CheckStats::default()
    };
    let mut budget = Budget {
        max_steps: options.max_steps,
        max_memo_entries: options.max_memo_entries,
        deadline: options.time_limit.map(|limit| started + limit),
        steps: 0,
        memo_entries: 0,
    };
    let mut unknown: Option<String> = None;
    let mut verdict = None;
    for partition in &partitions {
        // The partition's operations, by invocation; those that tell nothing are left out.
        let mut part: Vec<&Operation<M::Input, M::Output>> =
            partition.ops.iter().filter_map(|&i| ops.get(i)).collect();
        part.sort_by_key(|op| (op.invoke, op.id));
        let mut searched: Vec<&Operation<M::Input, M::Output>> = Vec::with_capacity(part.len());
        let mut search_ops = Vec::with_capacity(part.len());
        for op in &part {
            let (kind, ret) = match (&op.outcome, op.complete) {
                (Outcome::Ok(output), Some(complete)) => (Kind::Ok(output), Some(complete)),
                (Outcome::Fail, Some(complete)) if model.fail_is_informative(&op.op) => {
                    (Kind::Fail, Some(complete))
                }
                (Outcome::Unknown, complete) if !model.is_read_only(&op.op) => {
                    let deadline = options.unknown_horizon.map(|h| {
                        complete
                            .unwrap_or(op.invoke)
                            .max(op.invoke)
                            .saturating_add(h)
                    });
                    (Kind::Unknown { deadline }, None)
                }
                _ => continue,
            };
            searched.push(op);
            search_ops.push(SearchOp {
                input: &op.op,
                kind,
                call: op.invoke,
                ret,
            });
        }
        stats.searched += search_ops.len();
        stats.partitions_checked += 1;
        let pairs: Vec<(&M::Input, &Outcome<M::Output>)> =
            searched.iter().map(|op| (&op.op, &op.outcome)).collect();
        let tuned = model.specialize(&pairs);
        match search::search(tuned.as_ref().unwrap_or(model), &search_ops, &mut budget) {
            search::Outcome::Linearizable => {}
            search::Outcome::Violation(best) => {
                let violation = explain(
                    model,
                    partition.label.clone(),
                    &part,
                    &searched,
                    &best,
                    options,
                );
                verdict = Some(Verdict::NotLinearizable {
                    violation: Box::new(violation),
                });
                break;
            }
            search::Outcome::OutOfBudget(why) => {
                let what = match why {
                    Exhausted::Steps => format!("the step budget ({}) ran out", options.max_steps),
                    Exhausted::Time => format!(
                        "the time limit ({:?}) ran out",
                        options.time_limit.unwrap_or_default()
                    ),
                    Exhausted::Memory => format!(
                        "the memo budget ({} entries) ran out",
                        options.max_memo_entries
                    ),
                };
                let reason = match &partition.label {
                    Some(label) => {
                        format!("{what} on key {label} ({} operations)", search_ops.len())
                    }
                    None => format!("{what} ({} operations searched)", search_ops.len()),
                };
                unknown.get_or_insert(reason);
                if budget.steps > budget.max_steps
                    || budget.memo_entries > budget.max_memo_entries
                    || budget.deadline.is_some_and(|d| Instant::now() >= d)
                {
                    break;
                }
            }
        }
    }
    stats.steps = budget.steps.min(budget.max_steps);
    stats.memo_entries = budget.memo_entries;
    stats.elapsed = started.elapsed();
    let verdict = match (verdict, unknown) {
        (Some(verdict), _) => verdict,
        (None, Some(reason)) => Verdict::Unknown { reason },
        (None, None) => Verdict::Linearizable,
    };
    Ok(CheckResult { verdict, stats })
}

/// Turns the search's deepest point into a [`Violation`].
fn explain<M: Model>(
    model: &M,
    partition: Option<String>,
    part: &[&Operation<M::Input, M::Output>],
    searched: &[&Operation<M::Input, M::Output>],
    best: &search::Best<M::State>,
    options: &CheckOptions,
) -> Violation {
    let in_prefix: std::collections::HashSet<OpId> = best
        .prefix
        .iter()
        .filter_map(|&i| searched.get(i))
        .map(|op| op.id)
        .collect();
    // Replay the prefix for the states after its last operations.
    let mut state = model.init();
    let mut steps = Vec::with_capacity(best.prefix.len());
    for &i in &best.prefix {
        let Some(op) = searched.get(i) else { break };
        let next = match &op.outcome {
            Outcome::Ok(output) => model.step(&state, &op.op, output),
            Outcome::Fail => Some(state.clone()),
            Outcome::Unknown => model.step_unknown(&state, &op.op),
        };
        let Some(next) = next else { break };
        state = next;
        steps.push((*op, format!("{state:?}")));
    }
    // The state there, with the model's own values (the search may have used a tuned
    // model's abstraction of them).
    let state_text = if steps.len() == best.prefix.len() {
        format!("{state:?}")
    } else {
        format!("{:?}", best.state)
    };
    let shown_from = steps.len().saturating_sub(options.prefix_shown);
    let prefix_tail = steps
        .drain(shown_from..)
        .map(|(op, state_after)| LinearizedStep {
            op: OpSummary::of(op, true),
            state_after,
        })
        .collect();
    let blocking = searched.get(best.blocking).copied();
    let op = blocking.map_or_else(
        || OpSummary {
            id: 0,
            process: 0,
            invoke: Duration::ZERO,
            complete: None,
            op: "?".to_owned(),
            outcome: "?".to_owned(),
            linearized: false,
        },
        |op| OpSummary::of(op, false),
    );
    let concurrent: Vec<OpSummary> = match blocking {
        Some(b) => part
            .iter()
            .filter(|o| o.id != b.id && o.overlaps(b))
            .map(|o| OpSummary::of(o, in_prefix.contains(&o.id)))
            .collect(),
        None => Vec::new(),
    };
    let concurrent_omitted = concurrent.len().saturating_sub(options.concurrent_shown);
    Violation {
        partition,
        op,
        state: state_text,
        prefix_len: best.prefix.len(),
        prefix_tail,
        concurrent: concurrent
            .into_iter()
            .take(options.concurrent_shown)
            .collect(),
        concurrent_omitted,
    }
}
