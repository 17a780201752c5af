//! A counter updated by compare-and-set loops (Curator's `DistributedAtomicLong`).

use serde::{Deserialize, Serialize};

use crate::model::Model;

/// An operation on a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterOp {
    /// Adds the delta (wrapping, as Java's `long`); returns the value after it.
    Add(i64),
    /// Returns the value.
    Get,
}

/// A 64-bit counter: [`CounterOp::Add`] returns the value after the addition,
/// [`CounterOp::Get`] the value. Results are plain `i64`s.
///
/// An add that failed (the recipe's `succeeded == false`: it ran out of optimistic tries)
/// had no effect and is recorded as [`Fail`](crate::Outcome::Fail); one that ended in
/// `ConnectionLoss` or a timeout is [`Unknown`](crate::Outcome::Unknown).
#[derive(Debug, Clone)]
pub struct Counter {
    initial: i64,
    increment_only: bool,
}

impl Counter {
    /// A counter starting at `initial`.
    pub fn new(initial: i64) -> Self {
        Counter {
            initial,
            increment_only: false,
        }
    }

    /// Declares that every delta is 0 or more and the value never overflows, so the value
    /// never decreases: the checker then prunes much more (an important speed-up when many
    /// adds have unknown outcomes). A negative delta in the history is then an error.
    pub fn increment_only(mut self) -> Self {
        self.increment_only = true;
        self
    }

    fn add(&self, value: i64, delta: i64) -> Option<i64> {
        if self.increment_only {
            value.checked_add(delta)
        } else {
            Some(value.wrapping_add(delta))
        }
    }
}

impl Model for Counter {
    type Input = CounterOp;
    type Output = i64;
    type State = i64;

    fn init(&self) -> i64 {
        self.initial
    }

    fn step(&self, state: &i64, input: &CounterOp, output: &i64) -> Option<i64> {
        let next = match input {
            CounterOp::Add(delta) => self.add(*state, *delta)?,
            CounterOp::Get => *state,
        };
        (next == *output).then_some(next)
    }

    fn step_unknown(&self, state: &i64, input: &CounterOp) -> Option<i64> {
        match input {
            CounterOp::Add(delta) => self.add(*state, *delta),
            CounterOp::Get => Some(*state),
        }
    }

    fn is_read_only(&self, input: &CounterOp) -> bool {
        matches!(input, CounterOp::Get)
    }

    fn never_consistent(&self, state: &i64, input: &CounterOp, output: &i64) -> bool {
        if !self.increment_only {
            return false;
        }
        match input {
            CounterOp::Add(delta) => state.checked_add(*delta).is_none_or(|next| next > *output),
            CounterOp::Get => *state > *output,
        }
    }

    fn check_output(&self, input: &CounterOp, _output: &i64) -> Result<(), String> {
        match input {
            CounterOp::Add(delta) if self.increment_only && *delta < 0 => Err(format!(
                "Add({delta}) in a history checked as increment-only"
            )),
            _ => Ok(()),
        }
    }
}
