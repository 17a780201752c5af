//! The quorum check: proof, at a fixed interval, that the connection's server still reaches
//! the leader.
//!
//! A follower answers its clients' pings itself. Cut off from its leader, it goes on doing so
//! until it gives up on the leader (`syncLimit x tickTime`), while the leader, no longer told
//! of the session's traffic, expires the session after its timeout and may grant its locks to
//! others. A `sync` is completed only through the leader, so while the check is on the session
//! sends one every [`Timing::quorum_interval`](super::Timing) and counts one still unanswered
//! after [`Timing::quorum_bound`](super::Timing) as a lost connection, as a missing ping reply
//! is. The bound is derived in `timing.rs` and docs/client.md.

use std::collections::VecDeque;
use std::time::Instant;

use jute::{OpCode, SyncRequest};

use super::request::{AfterReply, Encoded};
use super::{Link, Outgoing, Session, SessionState};
use crate::error::Error;

/// The check's state: who wants it, and the checks of the current connection.
#[derive(Debug, Default)]
pub(super) struct QuorumCheck {
    /// On for the whole session ([`SessionConfig::quorum_check`](super::SessionConfig)).
    always: bool,
    /// Holds taken through [`Session::hold_quorum_check`] and not released yet.
    holds: usize,
    /// A check is queued and not sent yet.
    queued: bool,
    /// When the next check is due on this connection; `None`: as soon as the check applies
    /// (the first of each connection, and the first after the check is turned on).
    next_due: Option<Instant>,
    /// Send times of the checks sent and not answered yet, oldest first (replies come in
    /// order).
    in_flight: VecDeque<Instant>,
    /// Checks sent in the session's life (for the fuzz harness, which tells them from a
    /// caller's `sync`).
    sent_total: u64,
}

impl QuorumCheck {
    pub(super) fn new(always: bool) -> Self {
        Self {
            always,
            ..Self::default()
        }
    }

    fn enabled(&self) -> bool {
        self.always || self.holds > 0
    }
}

impl Session {
    /// Turns the quorum check on until a matching [`release_quorum_check`]; holds are counted,
    /// so each holder releases its own. A check is sent at once when the connection's last one
    /// is older than the interval.
    ///
    /// [`release_quorum_check`]: Self::release_quorum_check
    pub fn hold_quorum_check(&mut self) {
        if !self.quorum.enabled() {
            // The checks of the connection so far were not watched: the first at once.
            self.quorum.next_due = None;
        }
        self.quorum.holds = self.quorum.holds.saturating_add(1);
    }

    /// Releases one hold of [`hold_quorum_check`](Self::hold_quorum_check).
    pub fn release_quorum_check(&mut self) {
        self.quorum.holds = self.quorum.holds.saturating_sub(1);
    }

    /// Whether the quorum check runs (configured on, or held).
    pub fn quorum_check_enabled(&self) -> bool {
        self.quorum.enabled()
    }

    /// Whether the check applies to the current connection: a read/write server that the
    /// session is ready on (a read-only server refuses `sync` and is cut off by definition).
    fn quorum_check_applies(&self) -> bool {
        self.quorum.enabled()
            && self.state == SessionState::Connected
            && matches!(self.link, Link::Up { .. })
            && !self.authenticating()
    }

    /// When the next check is due on this connection, if one is to be queued (`now`: at
    /// once).
    fn quorum_check_due(&self, now: Instant) -> Option<Instant> {
        if !self.quorum_check_applies() || self.quorum.queued {
            return None;
        }
        Some(self.quorum.next_due.unwrap_or(now))
    }

    /// When the oldest unanswered check of this connection runs out of time.
    fn quorum_check_deadline(&self) -> Option<Instant> {
        if !self.quorum_check_applies() {
            return None;
        }
        Some(*self.quorum.in_flight.front()? + self.timing.quorum_bound)
    }

    /// The earliest instant the check needs [`handle_timeout`](Self::handle_timeout) at
    /// (`connected`: the connection's start, standing for "at once").
    pub(super) fn quorum_timeout(&self, connected: Instant) -> Option<Instant> {
        match (
            self.quorum_check_due(connected),
            self.quorum_check_deadline(),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The check's timers at `now`: drops the connection when a check ran out of time
    /// (`true`), else queues the next check when it is due.
    pub(super) fn quorum_check_timers(&mut self, now: Instant) -> bool {
        if self.quorum_check_deadline().is_some_and(|at| now >= at) {
            tracing::warn!(
                session_id = format_args!("{:#x}", self.session_id),
                "the server did not complete a sync within the quorum check's bound: it may \
                 be cut off from the leader; reconnecting"
            );
            self.lose_connection(now, Error::ConnectionLoss, true);
            return true;
        }
        if self.quorum_check_due(now).is_some_and(|at| now >= at) {
            let body = SyncRequest {
                path: Some("/".to_owned()),
            };
            self.control.push_back(Outgoing::Request {
                id: None,
                encoded: Encoded {
                    op_code: OpCode::SYNC,
                    body: body.into(),
                    after: AfterReply::QuorumCheck,
                },
            });
            self.quorum.queued = true;
        }
        false
    }

    /// A check was handed to the connection at `now`.
    pub(super) fn quorum_check_sent(&mut self, now: Instant) {
        self.quorum.queued = false;
        self.quorum.next_due = Some(now + self.timing.quorum_interval);
        self.quorum.in_flight.push_back(now);
        self.quorum.sent_total += 1;
    }

    /// How many checks the session sent in its life.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn quorum_checks_sent(&self) -> u64 {
        self.quorum.sent_total
    }

    /// A check was answered (whatever the answer: the server completed it).
    pub(super) fn quorum_check_answered(&mut self) {
        self.quorum.in_flight.pop_front();
    }

    /// The connection is gone: its checks with it.
    pub(super) fn quorum_connection_lost(&mut self) {
        self.quorum.queued = false;
        self.quorum.next_due = None;
        self.quorum.in_flight.clear();
    }
}
