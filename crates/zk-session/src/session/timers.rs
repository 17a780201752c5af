//! The session's clock: when the driver must wake it next (`poll_timeout`) and what each timer
//! does when it is due (`handle_timeout`). The intervals themselves come from [`super::timing`].

use std::time::Instant;

use bytes::Bytes;
use jute::OpCode;
use jute::codes::xid as reserved;

use super::{Link, Outgoing, Session, SessionState};
use crate::error::{ConnectFailure, Error};

/// A ping's frame body: the request header with xid -2 and op code 11, and no record.
const PING_FRAME: [u8; 8] = {
    let xid = reserved::PING.to_be_bytes();
    let op = OpCode::PING.0.to_be_bytes();
    [xid[0], xid[1], xid[2], xid[3], op[0], op[1], op[2], op[3]]
};

impl Session {
    /// Gives back the capacity of the queues that are empty now, down to the one slot a new
    /// session starts with. An idle session holds no request, but each queue keeps what its
    /// busiest moment gave it (a few hundred bytes each, a sixth of an idle session's memory);
    /// the next burst allocates again, once.
    fn release_idle_capacity(&mut self) {
        if self.outbox.is_empty() {
            self.outbox.shrink_to(1);
        }
        if self.pending.is_empty() {
            self.pending.shrink_to(1);
        }
        if self.events.is_empty() {
            self.events.shrink_to(1);
        }
        if self.auth_pending.is_empty() {
            self.auth_pending.shrink_to(0);
        }
    }

    /// When [`handle_timeout`](Self::handle_timeout) must be called next.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut next = self.deadlines.next();
        let mut consider = |at: Instant| next = Some(next.map_or(at, |n: Instant| n.min(at)));
        if let Some((_, deadline)) = self.closing {
            consider(deadline);
        }
        match self.link {
            Link::Dialing { since, .. } | Link::Handshaking { since, .. } => {
                consider(since + self.timing.connect_timeout);
            }
            Link::Up {
                last_send,
                last_recv,
                connected,
                ..
            } => {
                consider(last_recv + self.timing.read_timeout);
                if let Some(at) = self.quorum_timeout(connected) {
                    consider(at);
                }
                if !self.ping_queued && !self.authenticating() {
                    consider(last_send + self.timing.ping_interval);
                }
            }
            Link::Down { retry_at } => {
                if let Some(at) = retry_at
                    && self.wants_connection()
                {
                    consider(at);
                }
            }
        }
        if !self.ready_once
            && !self.state.is_terminal()
            && self.closing.is_none()
            && let (Some(first), Some(limit)) = (self.first_attempt, self.config.connect_timeout)
        {
            consider(first + limit);
        }
        if let Some(at) = self.sasl_deadline() {
            consider(at);
        }
        if let Some(at) = self.gather_deadline() {
            consider(at);
        }
        if !matches!(self.link, Link::Up { .. })
            && let Some(expiry) = self.local_expiry()
        {
            consider(expiry);
        }
        if let Some(until) = self.moving {
            consider(until);
        }
        if let Some(at) = self.read_only_search_timer() {
            consider(at);
        }
        next
    }

    /// Time has passed: fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(id) = self.deadlines.pop_due(now) {
            self.time_out_request(id);
        }
        if let Some((_, deadline)) = self.closing
            && deadline <= now
        {
            tracing::debug!("no reply to closeSession in time; closing anyway");
            self.finish_close();
            return;
        }
        if !self.ready_once
            && let (Some(first), Some(limit)) = (self.first_attempt, self.config.connect_timeout)
            && now >= first + limit
            && !self.state.is_terminal()
            && self.closing.is_none()
        {
            self.give_up(now);
            return;
        }
        if self.sasl_deadline().is_some_and(|at| now >= at) {
            self.sasl_timed_out(now);
        }
        let budget = self.timing.connect_timeout;
        match self.link {
            Link::Dialing { since, .. } if now >= since + budget => {
                let failure = ConnectFailure::ConnectTimedOut(budget);
                self.attempt_ended(now, None, Some(failure));
            }
            Link::Handshaking { since, .. } if now >= since + budget => {
                self.handshake_failed(now, ConnectFailure::HandshakeTimedOut(budget));
            }
            Link::Up {
                last_send,
                last_recv,
                ..
            } => {
                if now >= last_recv + self.timing.read_timeout {
                    tracing::info!(
                        session_id = format_args!("{:#x}", self.session_id),
                        "nothing heard from the server for the read timeout; reconnecting"
                    );
                    self.lose_connection(now, Error::ConnectionLoss, true);
                } else if self.quorum_check_timers(now) {
                    // The connection was dropped: no ping on it.
                } else if !self.ping_queued
                    && !self.authenticating()
                    && now >= last_send + self.timing.ping_interval
                {
                    // Nothing was sent for a ping interval: the session is idle, and its queues
                    // give back what their last burst made them hold.
                    self.release_idle_capacity();
                    self.control
                        .push_back(Outgoing::Raw(Bytes::from_static(&PING_FRAME)));
                    self.ping_queued = true;
                }
            }
            // The backoff is over: the next attempt may begin at once (and the timer, having
            // fired, is no longer asked for).
            Link::Down { retry_at: Some(at) } if now >= at => {
                self.link = Link::Down { retry_at: None }
            }
            _ => {}
        }
        self.gather_timers(now);
        self.read_only_search_timers(now);
        if let Some(until) = self.moving
            && now >= until
        {
            tracing::info!(
                session_id = format_args!("{:#x}", self.session_id),
                "the move to another server takes too long: disconnected"
            );
            self.moving = None;
            self.set_state(SessionState::Disconnected);
        }
        if !matches!(self.link, Link::Up { .. })
            && let Some(expiry) = self.local_expiry()
            && now >= expiry
        {
            if self.every_host_refused_for_good() {
                // Every server refused this client for good (a TLS failure): that is the
                // news, not the expiry it caused.
                tracing::warn!(
                    session_id = format_args!("{:#x}", self.session_id),
                    "every server refused the reconnection for a whole session timeout"
                );
                self.give_up(now);
                return;
            }
            tracing::warn!(
                session_id = format_args!("{:#x}", self.session_id),
                "no server answered for a whole session timeout; the session is expired"
            );
            self.terminate(SessionState::Expired, Error::SessionExpired);
        }
    }
}
