//! How a session ends (closed by the caller, expired, authentication failed) and what that
//! guarantees: every request in flight or queued gets an answer, every watch is reported lost,
//! and the final state is published before any of those answers.

use std::time::Instant;

use jute::{OpCode, Response};

use super::request::{AfterReply, Body, Encoded};
use super::{Link, RequestId, Session, SessionEvent, SessionState};
use crate::error::Error;

impl Session {
    /// Closes the session: sends closeSession after everything queued before it and waits
    /// (at most `close_timeout`) for the reply, then reports [`SessionState::Closed`]. The
    /// returned request completes when the session is closed.
    pub fn close(&mut self, now: Instant) -> RequestId {
        let id = self.new_id();
        self.close_requested = true;
        if self.state.is_terminal() {
            self.events.push_back(SessionEvent::Reply {
                id,
                result: Ok(Response::Empty),
                watch_armed: false,
            });
            return id;
        }
        if self.closing.is_some() {
            // Already closing: this caller, too, is answered when the session is closed.
            self.later_closers.push(id);
            return id;
        }
        self.closing = Some((id, now + self.config.close_timeout));
        if matches!(self.link, Link::Up { .. }) {
            // Sent after everything queued before it.
            let encoded = Encoded {
                op_code: OpCode::CLOSE_SESSION,
                body: Body::Empty,
                after: AfterReply::Nothing,
            };
            self.outbox.push_back((Some(id), encoded));
        } else {
            self.finish_close();
        }
        id
    }

    /// Leaves the session without closing it (for another process to resume it): the
    /// connection is dropped with nothing more sent, every request and watch ends with
    /// [`Error::Closed`], and the state is [`SessionState::Closed`]. The server keeps the
    /// session, and its ephemeral nodes, until it is resumed or expires.
    pub fn detach(&mut self) {
        self.terminate(SessionState::Closed, Error::Closed);
    }

    /// Starts a new session after this one expired, if the configuration asks for it
    /// ([`SessionConfig::renew_expired`](super::SessionConfig::renew_expired)), a session was
    /// established before (a session that expired on its first connection, a resumed one,
    /// stays expired) and `close` was not called. [`poll_event`](Self::poll_event) calls it
    /// once the expiry's events were handed on: every request and watch of the expired session
    /// has had its answer, and the `Expired` state event comes before this one's `Connecting`.
    ///
    /// The new session keeps what the client configured (hosts, credentials, SASL) and the
    /// last zxid seen, so that it never lands on a server behind what the client already saw.
    /// It retries without giving up, as a session that was established does. Returns whether
    /// a new session was started.
    pub(super) fn renew_expired(&mut self) -> bool {
        let renews = self.state == SessionState::Expired
            && self.config.renew_expired
            && self.established
            && !self.close_requested;
        if !renews {
            return false;
        }
        let expired = self.session_id;
        self.session_id = 0;
        self.passwd = crate::Secret::new(vec![0; 16]);
        self.negotiated = None;
        self.seen_rw_server = false;
        self.timing = super::Timing::new(self.config.session_timeout, self.config.hosts.len());
        self.last_answered_send = None;
        self.pings_in_flight.clear();
        self.ping_queued = false;
        self.state = SessionState::Connecting;
        self.events
            .push_back(SessionEvent::State(SessionState::Connecting));
        tracing::info!(
            expired = format_args!("{expired:#x}"),
            "the session expired; starting a new one"
        );
        true
    }

    pub(super) fn finish_close(&mut self) {
        let closer = self.closing.take().map(|(id, _)| id);
        self.terminate_except(SessionState::Closed, Error::Closed, closer);
        self.answer_closers(closer);
    }

    /// Answers every caller of `close`, the one that began the closing (`first`) and any
    /// later ones: the session is over, and its final state was published before.
    fn answer_closers(&mut self, first: Option<RequestId>) {
        for id in first
            .into_iter()
            .chain(std::mem::take(&mut self.later_closers))
        {
            self.reply(id, Ok(Response::Empty), false);
        }
    }

    /// Ends the session for good: every request fails with `error`, every watch is lost.
    pub(super) fn terminate(&mut self, state: SessionState, error: Error) {
        let closer = self.closing.take().map(|(id, _)| id);
        self.terminate_except(state, error, closer);
        // The close is done, whatever ended the session (after the state event, so that the
        // closers see the final state when they are answered).
        self.answer_closers(closer);
    }

    pub(super) fn terminate_except(
        &mut self,
        state: SessionState,
        error: Error,
        closer: Option<RequestId>,
    ) {
        if self.state.is_terminal() {
            return;
        }
        let was_linked = !matches!(self.link, Link::Down { .. });
        self.moving = None;
        self.link = Link::Down { retry_at: None };
        self.control.clear();
        self.sasl = None;
        // The state first: a caller woken by the error below reads the state that caused it.
        self.set_state(state);
        let mut failed: Vec<RequestId> = Vec::new();
        failed.extend(
            std::mem::take(&mut self.pending)
                .into_iter()
                .filter_map(|p| p.id),
        );
        failed.extend(std::mem::take(&mut self.auth_pending).into_iter().flatten());
        failed.extend(
            std::mem::take(&mut self.auth_waiting)
                .into_iter()
                .map(|(_, id)| id),
        );
        failed.extend(
            std::mem::take(&mut self.outbox)
                .into_iter()
                .filter_map(|(id, _)| id),
        );
        for id in failed {
            if Some(id) != closer {
                self.reply(id, Err(error.clone()), false);
            }
        }
        for id in self.watches.drain() {
            self.events.push_back(SessionEvent::WatchLost {
                id,
                error: error.clone(),
            });
        }
        self.deadlines.clear();
        if was_linked {
            self.events.push_back(SessionEvent::DropConnection(error));
        }
    }
}
