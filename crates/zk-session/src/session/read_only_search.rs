//! The search for a read/write server while the session is read-only: which host to probe,
//! when, and what an answer does. The driver only runs each probe it is handed.
//!
//! While the session is [`ConnectedReadOnly`](SessionState::ConnectedReadOnly), the session
//! asks the **other** hosts of the list, one at a time and round-robin starting after the
//! current one, whether they serve read/write: [`Session::poll_probe`] hands out a [`Probe`]
//! (the driver connects, sends the four-letter word `isro`, reads the answer) and
//! [`Session::handle_probe_done`] takes its [`ProbeOutcome`]. `rw` means read/write; a
//! read-only server answers `ro`, a server that is not serving `null`; a refused, reset or
//! timed-out probe counts as "not found".
//!
//! Schedule, as the Java client's (`ClientCnxn.pingRwServer`): the first probe
//! [`PROBE_MIN_INTERVAL`] (100 ms) after the read-only session was ready, then the wait
//! doubles after every probe, whatever its outcome, up to [`PROBE_MAX_INTERVAL`] (60 s). The
//! wait runs from the end of one probe to the start of the next, and each probe is bounded by
//! [`PROBE_TIMEOUT`], a timer of the session's like any other (the Java client uses a 1 s read
//! timeout and blocks its whole I/O thread meanwhile; here the connection keeps moving). Every
//! new read-only connection starts the schedule again from 100 ms, and the search ends as soon
//! as the session is no longer read-only on a live connection, or is closing: the driver drops
//! a probe the session no longer wants ([`Session::is_probing`]).
//!
//! When a probe answers `rw`, the session leaves the read-only server for that host
//! ([`Session::reconnect_to`]: requests in flight fail with `ConnectionLoss`, as on any
//! disconnect, and that host is dialed next).

use std::time::{Duration, Instant};

use super::{Link, Session, SessionState};
use crate::connect_string::HostAddr;

/// The wait before the first probe.
pub const PROBE_MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two probes.
pub const PROBE_MAX_INTERVAL: Duration = Duration::from_secs(60);
/// The bound on one probe: resolving, connecting, sending `isro` and reading the answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Names one probe, so that a late outcome of a probe the session gave up on is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProbeId(u64);

/// A probe for the driver to run: ask `host` with `isro` whether it serves read/write, and
/// report the outcome with [`Session::handle_probe_done`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Which probe this is.
    pub id: ProbeId,
    /// The host to ask.
    pub host: HostAddr,
}

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The host answered `rw`: it serves read/write.
    ReadWrite,
    /// The host answered something else (`ro`, `null`).
    NotReadWrite,
    /// The probe failed: the name did not resolve, the connection (or its TLS handshake)
    /// failed or was reset. The text is for the logs.
    Failed(String),
}

/// The wait after `interval`: doubled, at most [`PROBE_MAX_INTERVAL`].
fn next_interval(interval: Duration) -> Duration {
    interval.saturating_mul(2).min(PROBE_MAX_INTERVAL)
}

#[derive(Debug)]
enum Phase {
    /// The next probe may start at this instant.
    Waiting(Instant),
    /// The next probe is due: [`Session::poll_probe`] hands it out.
    Due,
    /// A probe is out; it counts as failed at `deadline`.
    Probing {
        id: ProbeId,
        host: HostAddr,
        deadline: Instant,
    },
}

/// The search of one read-only connection.
#[derive(Debug)]
pub(super) struct ReadOnlySearch {
    /// Every host but the current one, round-robin from the one after it.
    targets: Vec<HostAddr>,
    next: usize,
    interval: Duration,
    phase: Phase,
}

impl ReadOnlySearch {
    /// The search of a connection to `hosts[current]` that became ready (read-only) at `now`.
    pub(super) fn new(hosts: &[HostAddr], current: Option<usize>, now: Instant) -> Self {
        let start = current.map_or(0, |c| c + 1);
        let targets = (0..hosts.len())
            .map(|k| (start + k) % hosts.len())
            .filter(|&i| Some(i) != current)
            .map(|i| hosts[i].clone())
            .collect();
        ReadOnlySearch {
            targets,
            next: 0,
            interval: PROBE_MIN_INTERVAL,
            phase: Phase::Waiting(now + PROBE_MIN_INTERVAL),
        }
    }

    /// When the search wants the session woken: the next probe's start (nothing to probe
    /// with a single host), or the probe's deadline.
    fn timer(&self) -> Option<Instant> {
        match &self.phase {
            Phase::Waiting(_) if self.targets.is_empty() => None,
            Phase::Waiting(at) => Some(*at),
            // Fired: no timer until the driver takes the probe.
            Phase::Due => None,
            Phase::Probing { deadline, .. } => Some(*deadline),
        }
    }

    /// The probe ended at `now` without finding a read/write server: the next one, to the
    /// next host, after the doubled wait.
    fn not_found(&mut self, now: Instant) {
        self.interval = next_interval(self.interval);
        self.next = (self.next + 1) % self.targets.len().max(1);
        self.phase = Phase::Waiting(now + self.interval);
    }
}

impl Session {
    /// Whether the session searches for a read/write server: read-only on a live connection,
    /// and not closing.
    fn searches_read_write(&self) -> bool {
        self.state == SessionState::ConnectedReadOnly
            && matches!(self.link, Link::Up { .. })
            && !self.authenticating()
            && self.closing.is_none()
            && !self.close_requested
    }

    /// Starts the search of a connection that just became ready read-only (a new schedule
    /// from [`PROBE_MIN_INTERVAL`]), or drops the last one's.
    pub(super) fn restart_read_only_search(&mut self, read_only: bool) {
        self.read_only_search = match self.link {
            Link::Up { last_recv, .. } if read_only => Some(ReadOnlySearch::new(
                self.hosts.hosts(),
                self.current_host,
                // The last frame made the session ready: the ConnectResponse or SASL's end.
                last_recv,
            )),
            _ => None,
        };
    }

    /// When the read-only search needs [`handle_timeout`](Self::handle_timeout) or
    /// [`poll_probe`](Self::poll_probe) next.
    pub(super) fn read_only_search_timer(&self) -> Option<Instant> {
        if !self.searches_read_write() {
            return None;
        }
        self.read_only_search.as_ref()?.timer()
    }

    /// Makes the next probe due when its wait is over, and fails the probe whose deadline
    /// passed.
    pub(super) fn read_only_search_timers(&mut self, now: Instant) {
        let Some(search) = self.read_only_search.as_mut() else {
            return;
        };
        match &search.phase {
            Phase::Waiting(at) if now >= *at && !search.targets.is_empty() => {
                search.phase = Phase::Due;
            }
            Phase::Probing { deadline, host, .. } if now >= *deadline => {
                tracing::debug!(%host, "the read/write probe timed out");
                search.not_found(now);
            }
            _ => {}
        }
    }

    /// The next probe of the search for a read/write server, when it is due: the driver runs
    /// it (`isro` to [`Probe::host`]) and reports with
    /// [`handle_probe_done`](Self::handle_probe_done). `None` when no probe is due, or the
    /// session is not read-only.
    pub fn poll_probe(&mut self, now: Instant) -> Option<Probe> {
        if !self.searches_read_write() {
            self.read_only_search = None;
            return None;
        }
        let search = self.read_only_search.as_mut()?;
        let due = match search.phase {
            Phase::Due => true,
            Phase::Waiting(at) => now >= at,
            Phase::Probing { .. } => false,
        };
        let host = search.targets.get(search.next).filter(|_| due)?.clone();
        self.next_probe += 1;
        let id = ProbeId(self.next_probe);
        search.phase = Phase::Probing {
            id,
            host: host.clone(),
            deadline: now + PROBE_TIMEOUT,
        };
        tracing::debug!(%host, "asking whether it serves read/write");
        Some(Probe { id, host })
    }

    /// Whether the probe `id` is still wanted: when it is not (it timed out, the session left
    /// the read-only server or is closing), the driver drops it.
    pub fn is_probing(&self, id: ProbeId) -> bool {
        self.searches_read_write()
            && self
                .read_only_search
                .as_ref()
                .is_some_and(|s| matches!(s.phase, Phase::Probing { id: out, .. } if out == id))
    }

    /// The probe `id` ended at `now` with `outcome`. A read/write server found makes the
    /// session leave the read-only one for it; any other outcome schedules the next probe.
    /// The outcome of a probe no longer wanted is ignored.
    pub fn handle_probe_done(&mut self, now: Instant, id: ProbeId, outcome: ProbeOutcome) {
        if !self.is_probing(id) {
            return;
        }
        let Some(search) = self.read_only_search.as_mut() else {
            return;
        };
        let Phase::Probing { host, .. } = &search.phase else {
            return;
        };
        let host = host.clone();
        // By host, not by the index the search began with: the host list may have changed
        // since (`update_hosts`).
        let index = self.hosts.hosts().iter().position(|h| *h == host);
        match (outcome, index) {
            (ProbeOutcome::ReadWrite, Some(index)) => {
                tracing::info!(
                    %host,
                    session_id = format_args!("{:#x}", self.session_id),
                    "found a read/write server; leaving the read-only server for it"
                );
                self.read_only_search = None;
                self.reconnect_to(now, index);
            }
            (outcome, _) => {
                match outcome {
                    ProbeOutcome::ReadWrite => {
                        tracing::debug!(%host, "a read/write server no longer in the host list");
                    }
                    ProbeOutcome::NotReadWrite => {
                        tracing::debug!(%host, "not a read/write server");
                    }
                    ProbeOutcome::Failed(error) => {
                        tracing::debug!(%host, %error, "read/write probe failed");
                    }
                }
                search.not_found(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ports(search: &ReadOnlySearch) -> Vec<u16> {
        search.targets.iter().map(|h| h.port).collect()
    }

    #[test]
    fn targets_are_every_other_host_from_the_one_after_the_current() {
        let hosts: Vec<HostAddr> = (0..4).map(|i| HostAddr::new("h", i)).collect();
        let now = Instant::now();
        assert_eq!(ports(&ReadOnlySearch::new(&hosts, Some(2), now)), [3, 0, 1]);
        assert_eq!(ports(&ReadOnlySearch::new(&hosts, Some(0), now)), [1, 2, 3]);
        let single = ReadOnlySearch::new(&hosts[..1], Some(0), now);
        assert!(single.targets.is_empty());
        assert_eq!(single.timer(), None, "nothing to probe: no timer");
    }
}
