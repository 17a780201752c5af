//! Locks and leaders judged by what they did: a [`FencedStore`] that only accepts writes
//! whose fencing token is at least the highest it has seen, and [`check_fenced`], which
//! reads a recorded run afterwards.
//!
//! # What the checker promises
//!
//! From the store's log ([`FencedWrite`]s in the store's own order) it reports as
//! [`FenceViolation`]s:
//!
//! - [`OutOfOrder`](FenceViolation::OutOfOrder): a write accepted although a higher token
//!   had been accepted before it (the store must never do this; a history that claims it
//!   did shows a broken store or a forged log);
//! - [`SharedToken`](FenceViolation::SharedToken): writes of two different processes with
//!   the same token, accepted or not: two holders in one term, which fencing cannot tell
//!   apart.
//!
//! From the believed-held intervals it measures the [`UnsafeWindow`]s: every stretch of
//! time in which two processes both believed they held the lock, exactly (to the
//! nanosecond of the recorded times), with the fault in force when it began and the faults
//! during it. Unsafe windows are not violations by themselves: with a session-based lock a
//! partitioned holder learns of its loss only after its session timeout, and fencing is what
//! keeps that window harmless. They are what the suite measures.
//!
//! # What it does not promise
//!
//! It judges one lock (or one leadership) per call, and only what was recorded: a belief
//! that was never recorded, or a write that bypassed the store, is invisible to it. The
//! end of an open interval is the end of the run as the caller gives it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::history::{
    FaultEvent, FencedWrite, HeldInterval, History, HistoryError, ProcessId, Token, nanos,
    validate_fence,
};
use crate::recorder::Clock;

/// A write the store refused: its token is below the highest the store has accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("fenced write with token {token} refused: the store has seen token {highest}")]
pub struct FenceRejected {
    /// The write's token.
    pub token: Token,
    /// The highest token the store had accepted.
    pub highest: Token,
    /// The store's sequence number of the refused write.
    pub seq: u64,
}

#[derive(Debug, Default)]
struct StoreState {
    highest: Option<Token>,
    log: Vec<FencedWrite>,
}

/// An in-memory store that guards a resource with fencing tokens: it accepts a write only
/// if its token is at least the highest token it has accepted, and logs every write, in
/// order, for [`check_fenced`]. Thread-safe; share it in an `Arc`.
///
/// ```
/// use zk_history::{Clock, FencedStore};
///
/// let store = FencedStore::new(Clock::new());
/// assert!(store.write(1, 10).is_ok());
/// assert!(store.write(2, 11).is_ok()); // a newer holder
/// assert!(store.write(1, 10).is_err()); // the old holder is fenced off
/// assert_eq!(store.log().len(), 3);
/// ```
#[derive(Debug)]
pub struct FencedStore {
    clock: Clock,
    state: Mutex<StoreState>,
}

impl Default for FencedStore {
    fn default() -> Self {
        Self::new(Clock::new())
    }
}

impl FencedStore {
    /// An empty store on the run's clock.
    pub fn new(clock: Clock) -> Self {
        FencedStore {
            clock,
            state: Mutex::new(StoreState::default()),
        }
    }

    /// Writes on behalf of `process` with `token`; returns the write's sequence number.
    ///
    /// # Errors
    ///
    /// [`FenceRejected`] when a higher token was accepted before.
    pub fn write(&self, process: ProcessId, token: Token) -> Result<u64, FenceRejected> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = state.log.len() as u64;
        let at = self.clock.now();
        let accepted = state.highest.is_none_or(|highest| token >= highest);
        state.log.push(FencedWrite {
            seq,
            at,
            process,
            token,
            accepted,
        });
        if accepted {
            state.highest = Some(token);
            Ok(seq)
        } else {
            Err(FenceRejected {
                token,
                highest: state.highest.unwrap_or(token),
                seq,
            })
        }
    }

    /// The highest token accepted so far.
    pub fn highest_token(&self) -> Option<Token> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .highest
    }

    /// Every write so far, in the store's order.
    pub fn log(&self) -> Vec<FencedWrite> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .log
            .clone()
    }
}

/// A safety violation of a fenced resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FenceViolation {
    /// A write was accepted after a write with a higher token had been.
    OutOfOrder {
        /// The write accepted out of order.
        write: FencedWrite,
        /// The accepted write with the highest token before it.
        highest: FencedWrite,
    },
    /// Two processes wrote with the same token: two holders in one term.
    SharedToken {
        /// The token.
        token: Token,
        /// The first write with it.
        first: FencedWrite,
        /// The first write with it by another process.
        second: FencedWrite,
    },
}

fn fmt_write(f: &mut fmt::Formatter<'_>, w: &FencedWrite) -> fmt::Result {
    let verdict = if w.accepted { "accepted" } else { "rejected" };
    write!(
        f,
        "write #{} by p{} with token {} at {:?} ({verdict})",
        w.seq, w.process, w.token, w.at
    )
}

impl fmt::Display for FenceViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FenceViolation::OutOfOrder { write, highest } => {
                write!(f, "out-of-order write: ")?;
                fmt_write(f, write)?;
                write!(f, ", after ")?;
                fmt_write(f, highest)
            }
            FenceViolation::SharedToken {
                token,
                first,
                second,
            } => {
                write!(f, "two holders with token {token}: ")?;
                fmt_write(f, first)?;
                write!(f, " and ")?;
                fmt_write(f, second)
            }
        }
    }
}

/// A stretch of time in which two processes both believed they held the lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsafeWindow {
    /// The process whose belief started first.
    pub first: ProcessId,
    /// Its token, when recorded.
    pub first_token: Option<Token>,
    /// The other process.
    pub second: ProcessId,
    /// Its token, when recorded.
    pub second_token: Option<Token>,
    /// When both believed it.
    #[serde(rename = "from_ns", with = "nanos")]
    pub from: Duration,
    /// Until when.
    #[serde(rename = "to_ns", with = "nanos")]
    pub to: Duration,
    /// The last fault event at or before `from`: the fault in force.
    pub active_fault: Option<FaultEvent>,
    /// Fault events after `from` and before `to`.
    pub faults_during: Vec<FaultEvent>,
}

impl UnsafeWindow {
    /// How long it lasted.
    pub fn length(&self) -> Duration {
        self.to.saturating_sub(self.from)
    }
}

impl fmt::Display for UnsafeWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = |t: Option<Token>| t.map_or_else(String::new, |t| format!(" (token {t})"));
        write!(
            f,
            "p{}{} and p{}{} both held it for {:?}, from {:?} to {:?}",
            self.first,
            token(self.first_token),
            self.second,
            token(self.second_token),
            self.length(),
            self.from,
            self.to
        )?;
        match &self.active_fault {
            Some(fault) => write!(f, "; fault: {} (at {:?})", fault.description, fault.at)?,
            None => write!(f, "; no fault before it")?,
        }
        for fault in &self.faults_during {
            write!(f, "; then {} (at {:?})", fault.description, fault.at)?;
        }
        Ok(())
    }
}

/// Count, longest and total of unsafe windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WindowStats {
    /// How many.
    pub count: u64,
    /// The longest.
    #[serde(rename = "max_ns", with = "nanos")]
    pub max: Duration,
    /// Their total length.
    #[serde(rename = "total_ns", with = "nanos")]
    pub total: Duration,
}

impl WindowStats {
    /// Adds one window's length.
    pub fn add(&mut self, length: Duration) {
        self.count += 1;
        self.max = self.max.max(length);
        self.total = self.total.saturating_add(length);
    }

    /// Adds another's windows.
    pub fn merge(&mut self, other: &WindowStats) {
        self.count += other.count;
        self.max = self.max.max(other.max);
        self.total = self.total.saturating_add(other.total);
    }
}

/// What [`check_fenced`] found.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FenceReport {
    /// Writes in the log.
    pub writes: usize,
    /// Of which accepted.
    pub accepted: usize,
    /// Safety violations.
    pub violations: Vec<FenceViolation>,
    /// Stretches of double belief, by start.
    pub unsafe_windows: Vec<UnsafeWindow>,
}

impl FenceReport {
    /// Whether no violation was found (unsafe windows are measured, not judged).
    pub fn is_safe(&self) -> bool {
        self.violations.is_empty()
    }

    /// Count, longest and total of the unsafe windows.
    pub fn window_stats(&self) -> WindowStats {
        let mut stats = WindowStats::default();
        for w in &self.unsafe_windows {
            stats.add(w.length());
        }
        stats
    }

    /// The report as one line of JSON.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}

impl fmt::Display for FenceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let stats = self.window_stats();
        write!(
            f,
            "{} writes ({} accepted), {} violations, {} unsafe windows (max {:?}, total {:?})",
            self.writes,
            self.accepted,
            self.violations.len(),
            stats.count,
            stats.max,
            stats.total
        )?;
        for v in &self.violations {
            write!(f, "\n  violation: {v}")?;
        }
        for w in &self.unsafe_windows {
            write!(f, "\n  unsafe window: {w}")?;
        }
        Ok(())
    }
}

/// Checks a recorded fenced run: `writes` (a store's log, in any order: sorted by `seq`
/// here), the believed-held intervals, and the fault events; an open interval lasts until
/// `end` (or, when `end` is `None`, until the latest time the inputs mention).
///
/// # Errors
///
/// [`HistoryError`] when an interval ends before it starts or two writes share a sequence
/// number.
pub fn check_fenced(
    writes: &[FencedWrite],
    held: &[HeldInterval],
    faults: &[FaultEvent],
    end: Option<Duration>,
) -> Result<FenceReport, HistoryError> {
    validate_fence(held, writes)?;
    let mut report = FenceReport {
        writes: writes.len(),
        accepted: writes.iter().filter(|w| w.accepted).count(),
        ..FenceReport::default()
    };

    let mut ordered: Vec<&FencedWrite> = writes.iter().collect();
    ordered.sort_by_key(|w| w.seq);
    let mut highest: Option<&FencedWrite> = None;
    let mut first_by_token: BTreeMap<Token, &FencedWrite> = BTreeMap::new();
    let mut shared_reported: std::collections::HashSet<(Token, ProcessId)> =
        std::collections::HashSet::new();
    for &w in &ordered {
        if w.accepted {
            match highest {
                Some(h) if w.token < h.token => {
                    report.violations.push(FenceViolation::OutOfOrder {
                        write: w.clone(),
                        highest: h.clone(),
                    });
                }
                _ => highest = Some(w),
            }
        }
        let first = *first_by_token.entry(w.token).or_insert(w);
        if first.process != w.process && shared_reported.insert((w.token, w.process)) {
            report.violations.push(FenceViolation::SharedToken {
                token: w.token,
                first: first.clone(),
                second: w.clone(),
            });
        }
    }

    let end = end.unwrap_or_else(|| {
        let h = held.iter().map(|h| h.to.unwrap_or(h.from));
        let w = writes.iter().map(|w| w.at);
        let f = faults.iter().map(|f| f.at);
        h.chain(w).chain(f).max().unwrap_or_default()
    });
    report.unsafe_windows = unsafe_windows(held, faults, end);
    Ok(report)
}

/// [`check_fenced`] on a recorded history; open intervals last until [`History::end`].
///
/// # Errors
///
/// As [`check_fenced`].
pub fn check_fenced_history<I, O>(history: &History<I, O>) -> Result<FenceReport, HistoryError> {
    check_fenced(
        &history.fenced_writes,
        &history.held,
        &history.faults,
        Some(history.end()),
    )
}

/// One process's belief, merged: overlapping intervals of one process are one belief.
struct Belief {
    process: ProcessId,
    token: Option<Token>,
    from: Duration,
    to: Duration,
}

fn unsafe_windows(
    held: &[HeldInterval],
    faults: &[FaultEvent],
    end: Duration,
) -> Vec<UnsafeWindow> {
    let mut by_process: BTreeMap<ProcessId, Vec<Belief>> = BTreeMap::new();
    for h in held {
        by_process.entry(h.process).or_default().push(Belief {
            process: h.process,
            token: h.token,
            from: h.from,
            to: h.to.unwrap_or(end.max(h.from)),
        });
    }
    let mut beliefs: Vec<Belief> = Vec::new();
    for (_, mut list) in by_process {
        list.sort_by_key(|b| (b.from, b.to));
        let mut merged: Vec<Belief> = Vec::new();
        for b in list {
            match merged.last_mut() {
                Some(last) if b.from < last.to => last.to = last.to.max(b.to),
                _ => merged.push(b),
            }
        }
        beliefs.extend(merged);
    }
    beliefs.sort_by_key(|b| (b.from, b.to, b.process));

    let mut faults: Vec<&FaultEvent> = faults.iter().collect();
    faults.sort_by_key(|f| f.at);

    let mut windows = Vec::new();
    for (i, a) in beliefs.iter().enumerate() {
        for b in &beliefs[i + 1..] {
            if b.from >= a.to {
                break; // sorted by start: no later belief overlaps `a`
            }
            if a.process == b.process {
                continue;
            }
            let (from, to) = (a.from.max(b.from), a.to.min(b.to));
            if from >= to {
                continue;
            }
            let active_fault = faults
                .iter()
                .rev()
                .find(|f| f.at <= from)
                .map(|f| (*f).clone());
            let faults_during = faults
                .iter()
                .filter(|f| f.at > from && f.at < to)
                .map(|f| (*f).clone())
                .collect();
            windows.push(UnsafeWindow {
                first: a.process,
                first_token: a.token,
                second: b.process,
                second_token: b.token,
                from,
                to,
                active_fault,
                faults_during,
            });
        }
    }
    windows.sort_by_key(|w| (w.from, w.to, w.first, w.second));
    windows
}
