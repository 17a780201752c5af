//! Per-scenario summaries: what the checks found over a scenario's runs, as one JSON line
//! and as one row of a fixed-width table.
//!
//! ```
//! use std::time::Duration;
//! use zk_history::{Summary, TIME_TO_LEARN};
//!
//! let mut summary = Summary::new("lock/partition-leader");
//! summary.add_run();
//! summary.operations += 1200;
//! let learned: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
//! summary.set_timing(TIME_TO_LEARN, &learned);
//! println!("{}", Summary::table_header());
//! println!("{}", summary.table_row());
//! assert!(summary.table_row().contains("p50 50.0ms"));
//! assert!(summary.to_json_line().starts_with('{'));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fence::{FenceReport, WindowStats};
use crate::history::nanos;
use crate::linearizability::{CheckResult, Verdict};

/// The name of the timing the summary table shows: how long a process took to learn that
/// it lost the lock (or leadership) after the fault that cost it.
pub const TIME_TO_LEARN: &str = "time to learn";

/// Percentiles of a list of durations (nearest rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// How many durations.
    pub count: usize,
    /// The median.
    #[serde(rename = "p50_ns", with = "nanos")]
    pub p50: Duration,
    /// The 99th percentile.
    #[serde(rename = "p99_ns", with = "nanos")]
    pub p99: Duration,
    /// The longest.
    #[serde(rename = "max_ns", with = "nanos")]
    pub max: Duration,
}

impl Percentiles {
    /// The percentiles of `durations`; `None` when there are none.
    pub fn of(durations: &[Duration]) -> Option<Percentiles> {
        let mut sorted = durations.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let rank = |p: usize| -> Option<Duration> {
            // Nearest rank: the smallest value with at least p% of the values at or below it.
            let k = (p * n).div_ceil(100).max(1);
            sorted.get(k - 1).copied()
        };
        Some(Percentiles {
            count: n,
            p50: rank(50)?,
            p99: rank(99)?,
            max: *sorted.last()?,
        })
    }
}

impl fmt::Display for Percentiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "p50 {} p99 {} max {}",
            short(self.p50),
            short(self.p99),
            short(self.max)
        )
    }
}

/// A duration in a few characters: `850us`, `12.3ms`, `4.21s`.
pub fn short(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{}us", d.as_micros())
    } else if d < Duration::from_secs(1) {
        format!("{:.1}ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.2}s", d.as_secs_f64())
    }
}

/// What the checks found over the runs of one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// Runs checked.
    pub runs: u64,
    /// Operations recorded over all runs.
    pub operations: u64,
    /// Violations found (non-linearizable histories, fence violations).
    pub violations: u64,
    /// One line per violation.
    pub violation_details: Vec<String>,
    /// Checks whose budget ran out before a verdict.
    pub inconclusive: u64,
    /// One line per inconclusive check.
    pub inconclusive_details: Vec<String>,
    /// Unsafe windows (double belief in a lock) over all runs.
    pub unsafe_windows: WindowStats,
    /// Named timings the runner measured ([`TIME_TO_LEARN`], …).
    pub timings: BTreeMap<String, Percentiles>,
}

const WIDTHS: [usize; 6] = [30, 5, 10, 12, 30, 34];

impl Summary {
    /// An empty summary of `scenario`.
    pub fn new(scenario: impl Into<String>) -> Self {
        Summary {
            scenario: scenario.into(),
            ..Summary::default()
        }
    }

    /// Counts one more run.
    pub fn add_run(&mut self) {
        self.runs += 1;
    }

    /// Adds a linearizability check's operations and verdict.
    pub fn add_check(&mut self, result: &CheckResult) {
        self.operations += result.stats.operations as u64;
        match &result.verdict {
            Verdict::Linearizable => {}
            Verdict::NotLinearizable { violation } => self.add_violation(violation.to_string()),
            Verdict::Unknown { reason } => {
                self.inconclusive += 1;
                self.inconclusive_details.push(reason.clone());
            }
        }
    }

    /// Adds a fence check's violations and unsafe windows.
    pub fn add_fence(&mut self, report: &FenceReport) {
        for v in &report.violations {
            self.add_violation(v.to_string());
        }
        self.unsafe_windows.merge(&report.window_stats());
    }

    /// Adds a violation found otherwise.
    pub fn add_violation(&mut self, detail: impl Into<String>) {
        self.violations += 1;
        self.violation_details.push(detail.into());
    }

    /// Sets the timing `name` to the percentiles of `durations` (removes it when there are
    /// none).
    pub fn set_timing(&mut self, name: impl Into<String>, durations: &[Duration]) {
        let name = name.into();
        match Percentiles::of(durations) {
            Some(p) => {
                self.timings.insert(name, p);
            }
            None => {
                self.timings.remove(&name);
            }
        }
    }

    /// Merges another summary of the same scenario (more runs).
    pub fn merge(&mut self, other: &Summary) {
        self.runs += other.runs;
        self.operations += other.operations;
        self.violations += other.violations;
        self.violation_details
            .extend(other.violation_details.iter().cloned());
        self.inconclusive += other.inconclusive;
        self.inconclusive_details
            .extend(other.inconclusive_details.iter().cloned());
        self.unsafe_windows.merge(&other.unsafe_windows);
        for (name, p) in &other.timings {
            self.timings.entry(name.clone()).or_insert(*p);
        }
    }

    /// The summary as one line of JSON.
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The table's header: scenario, runs, operations, violations, unsafe windows, time to
    /// learn.
    pub fn table_header() -> String {
        row([
            "scenario",
            "runs",
            "operations",
            "violations",
            "unsafe windows",
            "time to learn",
        ])
    }

    /// The summary as a table row under [`table_header`](Self::table_header). Violations
    /// show as `N`, or `N (+M?)` when M checks were inconclusive; unsafe windows as
    /// `count, max …, total …`; the time to learn as its percentiles, `-` when not measured.
    pub fn table_row(&self) -> String {
        let violations = if self.inconclusive > 0 {
            format!("{} (+{}?)", self.violations, self.inconclusive)
        } else {
            self.violations.to_string()
        };
        let w = &self.unsafe_windows;
        let windows = if w.count == 0 {
            "0".to_owned()
        } else {
            format!(
                "{}, max {}, total {}",
                w.count,
                short(w.max),
                short(w.total)
            )
        };
        let learn = self
            .timings
            .get(TIME_TO_LEARN)
            .map_or_else(|| "-".to_owned(), ToString::to_string);
        row([
            &self.scenario,
            &self.runs.to_string(),
            &self.operations.to_string(),
            &violations,
            &windows,
            &learn,
        ])
    }
}

fn row(cells: [&str; 6]) -> String {
    let mut line = String::new();
    for (i, (cell, width)) in cells.iter().zip(WIDTHS).enumerate() {
        let cell = if cell.chars().count() > width {
            let cut: String = cell.chars().take(width.saturating_sub(1)).collect();
            format!("{cut}~")
        } else {
            (*cell).to_owned()
        };
        if i > 0 {
            line.push_str("  ");
        }
        if (1..=2).contains(&i) {
            line.push_str(&format!("{cell:>width$}"));
        } else {
            line.push_str(&format!("{cell:<width$}"));
        }
    }
    line.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let ms: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let p = Percentiles::of(&ms).unwrap();
        assert_eq!(p.count, 100);
        assert_eq!(p.p50, Duration::from_millis(50));
        assert_eq!(p.p99, Duration::from_millis(99));
        assert_eq!(p.max, Duration::from_millis(100));
        let one = Percentiles::of(&[Duration::from_secs(2)]).unwrap();
        assert_eq!(
            (one.p50, one.p99, one.max),
            (
                Duration::from_secs(2),
                Duration::from_secs(2),
                Duration::from_secs(2)
            )
        );
        assert!(Percentiles::of(&[]).is_none());
    }

    #[test]
    fn checks_and_fence_reports_add_up() {
        use crate::fence::{FenceViolation, UnsafeWindow};
        use crate::history::FencedWrite;
        use crate::linearizability::{CheckStats, OpSummary, Violation};

        let stats = CheckStats {
            operations: 10,
            ..CheckStats::default()
        };
        let op = OpSummary {
            id: 3,
            process: 1,
            invoke: Duration::ZERO,
            complete: Some(Duration::from_millis(1)),
            op: "Read".into(),
            outcome: "ok 1".into(),
            linearized: false,
        };
        let violation = Violation {
            partition: None,
            op,
            state: "0".into(),
            prefix_len: 0,
            prefix_tail: Vec::new(),
            concurrent: Vec::new(),
            concurrent_omitted: 0,
        };
        let mut s = Summary::new("register/partition");
        s.add_run();
        s.add_check(&CheckResult {
            verdict: Verdict::Linearizable,
            stats: stats.clone(),
        });
        s.add_check(&CheckResult {
            verdict: Verdict::NotLinearizable {
                violation: Box::new(violation),
            },
            stats: stats.clone(),
        });
        s.add_check(&CheckResult {
            verdict: Verdict::Unknown {
                reason: "budget".into(),
            },
            stats,
        });
        let write = FencedWrite {
            seq: 1,
            at: Duration::ZERO,
            process: 2,
            token: 5,
            accepted: true,
        };
        let window = UnsafeWindow {
            first: 1,
            first_token: None,
            second: 2,
            second_token: None,
            from: Duration::from_millis(10),
            to: Duration::from_millis(35),
            active_fault: None,
            faults_during: Vec::new(),
        };
        s.add_fence(&FenceReport {
            writes: 2,
            accepted: 2,
            violations: vec![FenceViolation::SharedToken {
                token: 5,
                first: write.clone(),
                second: write,
            }],
            unsafe_windows: vec![window.clone(), window],
        });
        assert_eq!(
            (s.runs, s.operations, s.violations, s.inconclusive),
            (1, 30, 2, 1)
        );
        assert!(s.violation_details[0].contains("operation #3"));
        assert!(s.violation_details[1].contains("two holders with token 5"));
        assert_eq!(s.unsafe_windows.count, 2);
        assert_eq!(s.unsafe_windows.max, Duration::from_millis(25));
        assert_eq!(s.unsafe_windows.total, Duration::from_millis(50));
        let mut twice = s.clone();
        twice.merge(&s);
        assert_eq!(
            (twice.runs, twice.violations, twice.unsafe_windows.count),
            (2, 4, 4)
        );
        assert!(s.table_row().contains("2 (+1?)"));
    }

    #[test]
    fn table_rows_line_up() {
        let mut s = Summary::new("a-very-long-scenario-name-that-does-not-fit-the-column");
        s.runs = 3;
        s.operations = 12345;
        s.inconclusive = 1;
        s.unsafe_windows.add(Duration::from_millis(1500));
        s.set_timing(TIME_TO_LEARN, &[Duration::from_secs(4)]);
        let header = Summary::table_header();
        let row = s.table_row();
        assert_eq!(
            header.find("runs").map(|i| i + 4),
            row.find(" 3 ").map(|i| i + 2)
        );
        assert!(row.contains("0 (+1?)"), "{row}");
        assert!(row.contains("1, max 1.50s, total 1.50s"), "{row}");
        assert!(row.contains("p50 4.00s p99 4.00s max 4.00s"), "{row}");
        let back: Summary = serde_json::from_str(&s.to_json_line()).unwrap();
        assert_eq!(back, s);
        assert_eq!(short(Duration::from_micros(850)), "850us");
    }
}
