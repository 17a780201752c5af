//! Recorded histories: operations with their invocation and completion times and outcomes,
//! fault events, believed-held intervals and fenced-store writes, and their JSON-lines form.
//!
//! Times are [`Duration`]s since the start of the run (one monotonic clock per run, see
//! [`Clock`](crate::Clock)); in JSON they are whole nanoseconds (`invoke_ns`, `at_ns`, …).
//!
//! A history is plain data: [`History::validate`] finds what would make it meaningless
//! (a completion before its invocation, a definite outcome without a completion time, two
//! operations with one id, an interval that ends before it starts) and reports it as a
//! [`HistoryError`]; the checkers call it first, so no input makes them panic.

use std::collections::HashSet;
use std::fmt;
use std::io::{BufRead, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A process (a client, a worker task): the thing that invokes operations one after another.
pub type ProcessId = u64;

/// An operation's id, unique within a history (the [`Recorder`](crate::Recorder) numbers them
/// from 0 in invocation order).
pub type OpId = u64;

/// A fencing token: a lock's or a leadership's sequence number or zxid. The recipes' tokens
/// are zxids (`i64`).
pub type Token = i64;

/// `Duration` as whole nanoseconds (saturating at `u64::MAX`, about 584 years).
pub(crate) mod nanos {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn to_u64(d: Duration) -> u64 {
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
    }

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(to_u64(*d))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_nanos)
    }

    /// `Option<Duration>` as nanoseconds or `null`.
    pub(crate) mod option {
        use std::time::Duration;

        use serde::{Deserialize, Deserializer, Serializer};

        pub(crate) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => s.serialize_some(&super::to_u64(*d)),
                None => s.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            Option::<u64>::deserialize(d).map(|n| n.map(Duration::from_nanos))
        }
    }
}

/// How an operation ended, as its process saw it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome<O> {
    /// It took effect, once, at some instant between its invocation and its completion, and
    /// returned this value.
    Ok(O),
    /// It definitely did not take effect (`BadVersion`, `NoNode`, a counter's update that ran
    /// out of retries). What a failure tells beyond that is the model's business (see
    /// [`Model::fail_is_informative`](crate::Model::fail_is_informative)).
    Fail,
    /// It may or may not have taken effect, at any instant after its invocation, possibly
    /// never (`ConnectionLoss`, a timeout, the process died, or it was never completed).
    Unknown,
}

impl<O> Outcome<O> {
    /// Whether the outcome is definite ([`Ok`](Outcome::Ok) or [`Fail`](Outcome::Fail)).
    pub fn is_definite(&self) -> bool {
        !matches!(self, Outcome::Unknown)
    }
}

/// One operation of one process: what it asked, when, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation<I, O> {
    /// Unique within the history.
    pub id: OpId,
    /// The process that invoked it.
    pub process: ProcessId,
    /// When it was invoked (before the request was sent).
    #[serde(rename = "invoke_ns", with = "nanos")]
    pub invoke: Duration,
    /// When its outcome was known (after the reply or the error); `None` when it never
    /// completed, which is only meaningful with [`Outcome::Unknown`].
    #[serde(rename = "complete_ns", with = "nanos::option", default)]
    pub complete: Option<Duration>,
    /// The operation and its arguments.
    pub op: I,
    /// Its outcome.
    pub outcome: Outcome<O>,
}

impl<I, O> Operation<I, O> {
    /// Whether its interval overlaps `other`'s (an operation without a definite completion
    /// lasts forever). Touching endpoints count as overlapping: neither is known to precede
    /// the other.
    pub fn overlaps<I2, O2>(&self, other: &Operation<I2, O2>) -> bool {
        let ends_before = |a_end: Option<Duration>, b_start: Duration| match a_end {
            Some(end) => end < b_start,
            None => false,
        };
        !ends_before(self.effective_end(), other.invoke)
            && !ends_before(other.effective_end(), self.invoke)
    }

    /// The end of the interval in which the operation may take effect: its completion for a
    /// definite outcome, `None` (never) for an unknown one.
    pub fn effective_end(&self) -> Option<Duration> {
        if self.outcome.is_definite() {
            self.complete
        } else {
            None
        }
    }
}

/// Something the fault injector did, at one instant: "partition {1,2} | {3}", "heal",
/// "kill server 2", "pause leader".
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FaultEvent {
    /// When.
    #[serde(rename = "at_ns", with = "nanos")]
    pub at: Duration,
    /// What, for a human.
    pub description: String,
}

/// An interval in which a process believed it held a lock (or leadership), from its own view:
/// from the acquire returning to the guard reporting the lock lost, or to the release.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HeldInterval {
    /// Who believed it.
    pub process: ProcessId,
    /// The token of that tenure, when known.
    #[serde(default)]
    pub token: Option<Token>,
    /// From when.
    #[serde(rename = "from_ns", with = "nanos")]
    pub from: Duration,
    /// Until when; `None` when the belief lasted to the end of the run.
    #[serde(rename = "to_ns", with = "nanos::option", default)]
    pub to: Option<Duration>,
}

/// One write to a [`FencedStore`](crate::FencedStore), in the store's own order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FencedWrite {
    /// The store's sequence number: the order in which the store decided the writes.
    pub seq: u64,
    /// When the store decided it.
    #[serde(rename = "at_ns", with = "nanos")]
    pub at: Duration,
    /// The writer.
    pub process: ProcessId,
    /// The writer's fencing token.
    pub token: Token,
    /// Whether the store accepted it.
    pub accepted: bool,
}

/// A whole recorded run: the operations, and what the runner saw besides them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "I: Serialize, O: Serialize",
    deserialize = "I: Deserialize<'de>, O: Deserialize<'de>"
))]
pub struct History<I, O> {
    /// The operations, in invocation order when recorded by a [`Recorder`](crate::Recorder).
    pub ops: Vec<Operation<I, O>>,
    /// The fault events, in time order.
    #[serde(default)]
    pub faults: Vec<FaultEvent>,
    /// The believed-held intervals of a lock or a leadership.
    #[serde(default)]
    pub held: Vec<HeldInterval>,
    /// The writes to a fenced store.
    #[serde(default)]
    pub fenced_writes: Vec<FencedWrite>,
}

impl<I, O> Default for History<I, O> {
    fn default() -> Self {
        History {
            ops: Vec::new(),
            faults: Vec::new(),
            held: Vec::new(),
            fenced_writes: Vec::new(),
        }
    }
}

/// One line of a history in JSON lines: `{"kind":"op",...}`, `{"kind":"fault",...}`,
/// `{"kind":"held",...}` or `{"kind":"fenced_write",...}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[serde(bound(
    serialize = "I: Serialize, O: Serialize",
    deserialize = "I: Deserialize<'de>, O: Deserialize<'de>"
))]
pub enum Entry<I, O> {
    /// An operation.
    Op(Operation<I, O>),
    /// A fault event.
    Fault(FaultEvent),
    /// A believed-held interval.
    Held(HeldInterval),
    /// A fenced-store write.
    FencedWrite(FencedWrite),
}

/// What makes a history meaningless, or unreadable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// An operation completed before it was invoked.
    #[error("operation {id} completed at {complete:?}, before its invocation at {invoke:?}")]
    CompletedBeforeInvoked {
        /// The operation.
        id: OpId,
        /// Its invocation.
        invoke: Duration,
        /// Its completion.
        complete: Duration,
    },
    /// An operation with a definite outcome (`Ok` or `Fail`) has no completion time.
    #[error("operation {id} has a definite outcome but no completion time")]
    MissingCompletion {
        /// The operation.
        id: OpId,
    },
    /// Two operations share an id.
    #[error("two operations have the id {id}")]
    DuplicateId {
        /// The id.
        id: OpId,
    },
    /// A believed-held interval ends before it starts.
    #[error("process {process} held from {from:?} to {to:?}: it ends before it starts")]
    HeldEndsBeforeStart {
        /// The process.
        process: ProcessId,
        /// The start.
        from: Duration,
        /// The end.
        to: Duration,
    },
    /// Two fenced-store writes share a sequence number.
    #[error("two fenced writes have the sequence number {seq}")]
    DuplicateSeq {
        /// The sequence number.
        seq: u64,
    },
    /// A line of JSON could not be read.
    #[error("line {line}: {source}")]
    Json {
        /// The line number, from 1.
        line: usize,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// Reading or writing failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Checks the operations alone (see [`History::validate`]).
pub(crate) fn validate_ops<I, O>(ops: &[Operation<I, O>]) -> Result<(), HistoryError> {
    let mut ids = HashSet::with_capacity(ops.len());
    for op in ops {
        if !ids.insert(op.id) {
            return Err(HistoryError::DuplicateId { id: op.id });
        }
        match op.complete {
            Some(complete) if complete < op.invoke => {
                return Err(HistoryError::CompletedBeforeInvoked {
                    id: op.id,
                    invoke: op.invoke,
                    complete,
                });
            }
            None if op.outcome.is_definite() => {
                return Err(HistoryError::MissingCompletion { id: op.id });
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks the believed-held intervals and the fenced writes.
pub(crate) fn validate_fence(
    held: &[HeldInterval],
    writes: &[FencedWrite],
) -> Result<(), HistoryError> {
    for h in held {
        if let Some(to) = h.to
            && to < h.from
        {
            return Err(HistoryError::HeldEndsBeforeStart {
                process: h.process,
                from: h.from,
                to,
            });
        }
    }
    let mut seqs = HashSet::with_capacity(writes.len());
    for w in writes {
        if !seqs.insert(w.seq) {
            return Err(HistoryError::DuplicateSeq { seq: w.seq });
        }
    }
    Ok(())
}

impl<I, O> History<I, O> {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks that the history means something: unique operation ids, completions not before
    /// invocations, a completion time for every definite outcome, intervals that do not end
    /// before they start, unique fenced-write sequence numbers.
    ///
    /// # Errors
    ///
    /// The first problem found.
    pub fn validate(&self) -> Result<(), HistoryError> {
        validate_ops(&self.ops)?;
        validate_fence(&self.held, &self.fenced_writes)
    }

    /// The latest instant the history mentions (0 for an empty history): the end of the run
    /// as far as the history knows.
    pub fn end(&self) -> Duration {
        let ops = self.ops.iter().map(|o| o.complete.unwrap_or(o.invoke));
        let faults = self.faults.iter().map(|f| f.at);
        let held = self.held.iter().map(|h| h.to.unwrap_or(h.from));
        let writes = self.fenced_writes.iter().map(|w| w.at);
        ops.chain(faults)
            .chain(held)
            .chain(writes)
            .max()
            .unwrap_or_default()
    }

    /// The history as entries, operations first, then faults, held intervals and writes.
    pub fn entries(&self) -> impl Iterator<Item = Entry<I, O>> + '_
    where
        I: Clone,
        O: Clone,
    {
        let ops = self.ops.iter().cloned().map(Entry::Op);
        let faults = self.faults.iter().cloned().map(Entry::Fault);
        let held = self.held.iter().cloned().map(Entry::Held);
        let writes = self.fenced_writes.iter().cloned().map(Entry::FencedWrite);
        ops.chain(faults).chain(held).chain(writes)
    }

    /// Adds one entry to the history.
    pub fn push(&mut self, entry: Entry<I, O>) {
        match entry {
            Entry::Op(op) => self.ops.push(op),
            Entry::Fault(f) => self.faults.push(f),
            Entry::Held(h) => self.held.push(h),
            Entry::FencedWrite(w) => self.fenced_writes.push(w),
        }
    }

    /// The history as JSON lines, one [`Entry`] a line, each line ending in `\n`.
    ///
    /// # Errors
    ///
    /// [`HistoryError::Json`] when an operation or a result cannot be serialized (a map
    /// with non-string keys, for example).
    pub fn to_json_lines(&self) -> Result<String, HistoryError>
    where
        I: Serialize + Clone,
        O: Serialize + Clone,
    {
        let mut out = Vec::new();
        self.write_json_lines(&mut out)?;
        // serde_json writes UTF-8 only.
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Writes the history as JSON lines (see [`to_json_lines`](Self::to_json_lines)).
    ///
    /// # Errors
    ///
    /// [`HistoryError::Json`] or [`HistoryError::Io`].
    pub fn write_json_lines<W: Write>(&self, mut out: W) -> Result<(), HistoryError>
    where
        I: Serialize + Clone,
        O: Serialize + Clone,
    {
        for (index, entry) in self.entries().enumerate() {
            serde_json::to_writer(&mut out, &entry).map_err(|source| HistoryError::Json {
                line: index + 1,
                source,
            })?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Reads a history from JSON lines (blank lines are skipped). It is not validated: call
    /// [`validate`](Self::validate), or let a checker do it.
    ///
    /// # Errors
    ///
    /// [`HistoryError::Json`] with the line number of the first line that is not an entry.
    pub fn from_json_lines(text: &str) -> Result<Self, HistoryError>
    where
        I: for<'de> Deserialize<'de>,
        O: for<'de> Deserialize<'de>,
    {
        Self::read_json_lines(text.as_bytes())
    }

    /// Reads a history from JSON lines (see [`from_json_lines`](Self::from_json_lines)).
    ///
    /// # Errors
    ///
    /// [`HistoryError::Json`] or [`HistoryError::Io`].
    pub fn read_json_lines<R: BufRead>(input: R) -> Result<Self, HistoryError>
    where
        I: for<'de> Deserialize<'de>,
        O: for<'de> Deserialize<'de>,
    {
        let mut history = History::new();
        for (index, line) in input.lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let entry = serde_json::from_str(&line).map_err(|source| HistoryError::Json {
                line: index + 1,
                source,
            })?;
            history.push(entry);
        }
        Ok(history)
    }
}

impl<I: fmt::Debug, O: fmt::Debug> fmt::Display for Operation<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{} p{} [{:?}, ", self.id, self.process, self.invoke)?;
        match self.complete {
            Some(c) => write!(f, "{c:?}]")?,
            None => write!(f, "-]")?,
        }
        write!(f, " {:?} -> ", self.op)?;
        match &self.outcome {
            Outcome::Ok(v) => write!(f, "ok {v:?}"),
            Outcome::Fail => write!(f, "fail"),
            Outcome::Unknown => write!(f, "unknown"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(
        id: OpId,
        invoke: u64,
        complete: Option<u64>,
        outcome: Outcome<i64>,
    ) -> Operation<i64, i64> {
        Operation {
            id,
            process: 1,
            invoke: Duration::from_nanos(invoke),
            complete: complete.map(Duration::from_nanos),
            op: 0,
            outcome,
        }
    }

    #[test]
    fn validate_finds_malformed_operations() {
        let mut h: History<i64, i64> = History::new();
        h.ops.push(op(0, 10, Some(5), Outcome::Ok(1)));
        assert!(matches!(
            h.validate(),
            Err(HistoryError::CompletedBeforeInvoked { id: 0, .. })
        ));
        h.ops[0] = op(0, 10, None, Outcome::Fail);
        assert!(matches!(
            h.validate(),
            Err(HistoryError::MissingCompletion { id: 0 })
        ));
        h.ops[0] = op(0, 10, None, Outcome::Unknown);
        h.validate().unwrap();
        h.ops.push(op(0, 11, Some(12), Outcome::Ok(1)));
        assert!(matches!(
            h.validate(),
            Err(HistoryError::DuplicateId { id: 0 })
        ));
        h.ops.pop();
        h.held.push(HeldInterval {
            process: 1,
            token: None,
            from: Duration::from_nanos(5),
            to: Some(Duration::from_nanos(4)),
        });
        assert!(matches!(
            h.validate(),
            Err(HistoryError::HeldEndsBeforeStart { .. })
        ));
    }

    #[test]
    fn overlaps_treats_unknown_as_endless_and_touching_as_concurrent() {
        let a = op(0, 0, Some(10), Outcome::Ok(1));
        let b = op(1, 10, Some(20), Outcome::Ok(1));
        let c = op(2, 11, Some(20), Outcome::Ok(1));
        let u = op(3, 0, Some(1), Outcome::Unknown);
        assert!(a.overlaps(&b));
        assert!(!a.overlaps(&c));
        assert!(!c.overlaps(&a));
        assert!(u.overlaps(&c));
        assert!(c.overlaps(&u));
    }

    #[test]
    fn bad_json_line_is_reported_with_its_number() {
        let text = "{\"kind\":\"fault\",\"at_ns\":5,\"description\":\"x\"}\n\nnot json\n";
        match History::<i64, i64>::from_json_lines(text) {
            Err(HistoryError::Json { line, .. }) => assert_eq!(line, 3),
            other => panic!("{other:?}"),
        }
    }
}
