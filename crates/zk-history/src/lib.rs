//! `zk-history`: recorded operation histories and the checkers that judge them — the
//! checking half of a partition test suite. A pure library: no runtime, no network.
//!
//! A scenario runner records what its clients did (a [`Recorder`] shared by every client
//! task: [`invoke`](Recorder::invoke) before sending a request, then
//! [`ok`](OpHandle::ok), [`fail`](OpHandle::fail) or [`unknown`](OpHandle::unknown)), the
//! faults it injected ([`Recorder::fault`]), and for locks and leaders what each process
//! believed ([`Recorder::held`]) and wrote to a [`FencedStore`]. The history can be written
//! as JSON lines and re-checked later.
//!
//! ```
//! use std::time::Duration;
//! use zk_history::models::{Register, RegisterOp, RegisterRet};
//! use zk_history::{check, CheckOptions, History, Operation, Outcome};
//!
//! // p1 writes 1 (version 1), then p2 reads the initial value: a stale read.
//! let ms = Duration::from_millis;
//! let op = |id, process, invoke, complete, op, outcome| Operation {
//!     id, process, invoke: ms(invoke), complete: Some(ms(complete)), op, outcome,
//! };
//! let mut history: History<RegisterOp<i64>, RegisterRet<i64>> = History::new();
//! history.ops.push(op(0, 1, 0, 10, RegisterOp::Write(1), Outcome::Ok(RegisterRet::Written { version: 1 })));
//! history.ops.push(op(1, 2, 20, 30, RegisterOp::Read, Outcome::Ok(RegisterRet::Read { value: 0, version: 0 })));
//!
//! let result = check(&Register::new(0), &history, &CheckOptions::default())?;
//! let violation = result.verdict.violation().expect("a stale read");
//! assert_eq!(violation.op.id, 1);
//! println!("{violation}");
//!
//! // Histories are JSON lines, and read back the same.
//! let text = history.to_json_lines()?;
//! assert_eq!(History::from_json_lines(&text)?, history);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layout
//!
//! - [`history`]: [`History`], [`Operation`], [`Outcome`] (`Ok`, `Fail`: definitely no
//!   effect, `Unknown`: maybe, at any time after the invocation), [`FaultEvent`],
//!   [`HeldInterval`], [`FencedWrite`]; JSON lines; validation ([`HistoryError`]).
//! - [`recorder`]: [`Recorder`], [`OpHandle`], [`HeldHandle`], [`Clock`].
//! - [`model`] and [`models`]: the [`Model`] trait, [`Keyed`] (one object per key, checked
//!   independently), a ZooKeeper node as a versioned [register](models::Register), a
//!   [counter](models::Counter) and a [set](models::SetModel).
//! - [`linearizability`]: [`check`] — Wing & Gong's search with Lowe's memoization, bounded
//!   by a step and time budget ([`Verdict::Unknown`] rather than a hang), with a
//!   [`Violation`] that names the operation that could not be linearized, the longest
//!   linearizable prefix and the concurrent operations. Its documentation says what the
//!   checker promises and what it does not.
//! - [`fence`]: [`FencedStore`] and [`check_fenced`] — writes accepted out of token order,
//!   two processes with one token, and the unsafe windows in which two processes both
//!   believed they held the lock, annotated with the fault in force.
//! - [`summary`]: [`Summary`] per scenario, as a JSON line or a table row, with
//!   [`Percentiles`] of timings such as [`TIME_TO_LEARN`].

pub mod fence;
pub mod history;
pub mod linearizability;
pub mod model;
pub mod models;
pub mod recorder;
pub mod summary;

pub use fence::{
    FenceRejected, FenceReport, FenceViolation, FencedStore, UnsafeWindow, WindowStats,
    check_fenced, check_fenced_history,
};
pub use history::{
    Entry, FaultEvent, FencedWrite, HeldInterval, History, HistoryError, OpId, Operation, Outcome,
    ProcessId, Token,
};
pub use linearizability::{
    CheckError, CheckOptions, CheckResult, CheckStats, LinearizedStep, OpSummary, Verdict,
    Violation, check, check_operations,
};
pub use model::{Keyed, KeyedOp, Model, Partition};
pub use recorder::{Clock, HeldHandle, OpHandle, Recorder};
pub use summary::{Percentiles, Summary, TIME_TO_LEARN};
