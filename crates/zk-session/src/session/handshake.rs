//! The connection's life cycle, as pure logic: which host to dial and when (the reconnect
//! backoff), the handshake (ConnectRequest, ConnectResponse, the credentials replayed after
//! it), and what a lost connection or a failed attempt does to the session.

use std::time::{Duration, Instant};

use bytes::Bytes;
use jute::{
    AuthPacket, ConnectRequest, ConnectResponse, Encode, EventType, KeeperState, OpCode,
    decode_exact,
};

use super::request::{AfterReply, Encoded};
use super::watch::SetWatchesBatch;
use super::{
    Link, Outgoing, RequestId, Session, SessionEvent, SessionState, Timing, WatchedEvent,
    duration_ms,
};
use crate::connect_string::HostAddr;
use crate::error::{ConnectFailure, Error, ProtocolError};
use crate::path::Chroot;
use jute::codes::xid as reserved;

impl Session {
    /// Adds credentials (for example `digest`, `user:password`). They are sent now if
    /// connected and again after every reconnect. The returned request completes with the
    /// server's answer to the first sending.
    ///
    /// # Errors
    ///
    /// A session that is over.
    pub fn add_auth(&mut self, scheme: String, auth: Bytes) -> Result<RequestId, Error> {
        if let Some(error) = self.terminal_error() {
            return Err(error);
        }
        let id = self.new_id();
        self.credentials.push((scheme, crate::Secret::from(auth)));
        let index = self.credentials.len() - 1;
        if matches!(self.link, Link::Up { .. }) && !self.authenticating() {
            self.control
                .push_back(Outgoing::Raw(self.auth_frame(index)));
            self.auth_pending.push_back(Some(id));
        } else {
            self.auth_waiting.push((index, id));
        }
        Ok(id)
    }

    /// The host to dial now, with its index in [`hosts`](Self::hosts), if the session wants a
    /// connection and the reconnect backoff has passed ([`poll_timeout`](Self::poll_timeout)
    /// includes that moment). The attempt then runs until
    /// [`handle_connected`](Self::handle_connected) or
    /// [`handle_connect_failed`](Self::handle_connect_failed), or until its budget (the
    /// connect timeout of [`Timing`]) runs out in [`handle_timeout`](Self::handle_timeout);
    /// [`is_dialing`](Self::is_dialing) then turns false and the driver drops it.
    pub fn poll_connect(&mut self, now: Instant) -> Option<(usize, HostAddr)> {
        let Link::Down { retry_at } = self.link else {
            return None;
        };
        if !self.wants_connection() || retry_at.is_some_and(|at| now < at) {
            return None;
        }
        let (index, host) = self.hosts.next();
        let host = host.clone();
        self.first_attempt.get_or_insert(now);
        self.current_host = Some(index);
        self.link = Link::Dialing {
            since: now,
            host: index,
        };
        Some((index, host))
    }

    /// The attempt handed out by [`poll_connect`](Self::poll_connect) failed before a
    /// connection was open (resolution, refusal, unreachable host, the TLS handshake).
    /// Ignored when no attempt is under way (a late answer for an attempt given up).
    ///
    /// A [permanent](ConnectFailure::is_permanent) failure on every host in a row, before
    /// any session was established, ends the session at once with
    /// [`Error::NoServerReachable`] naming it: retrying with the same settings cannot
    /// help. Once a session exists, failures of any kind are retried with the backoff until
    /// the session expires (the servers may get a fixed certificate meanwhile); if by then
    /// every host's last attempt failed permanently, the session ends with
    /// [`Error::NoServerReachable`] naming that failure rather than with
    /// [`Error::SessionExpired`].
    pub fn handle_connect_failed(&mut self, now: Instant, failure: ConnectFailure) {
        if matches!(self.link, Link::Dialing { .. }) {
            tracing::debug!(%failure, "connection attempt failed");
            self.attempt_ended(now, None, Some(failure));
        }
    }

    /// The open connection failed in a way that says why: a TLS alert after the TLS
    /// handshake (with TLS 1.3 the server judges the client's certificate after the client
    /// considers the handshake done, so its refusal arrives while the ConnectRequest waits
    /// for an answer). During the session handshake `failure` is the attempt's failure, as
    /// for [`handle_connect_failed`](Self::handle_connect_failed); once the session is up,
    /// the connection is lost as by [`handle_disconnected`](Self::handle_disconnected).
    pub fn handle_connection_failed(&mut self, now: Instant, failure: ConnectFailure) {
        match self.link {
            Link::Dialing { .. } => self.handle_connect_failed(now, failure),
            Link::Handshaking { .. } => self.handshake_failed(now, failure),
            Link::Up { .. } => {
                tracing::info!(%failure, "the connection failed");
                self.lose_connection(now, Error::ConnectionLoss, false);
            }
            Link::Down { .. } => {}
        }
    }

    /// A connection to a server is open: the session queues its ConnectRequest. Normally the
    /// answer to [`poll_connect`](Self::poll_connect); also taken while the session wants a
    /// connection without having handed one out (scripted tests).
    pub fn handle_connected(&mut self, now: Instant) {
        let since = match self.link {
            Link::Dialing { since, .. } => since,
            Link::Down { .. } if self.wants_connection() => {
                self.first_attempt.get_or_insert(now);
                now
            }
            _ => return,
        };
        self.link = Link::Handshaking {
            since,
            connected: now,
        };
        self.control.clear();
        self.ping_queued = false;
        let request = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: duration_ms(self.config.session_timeout),
            session_id: if self.seen_rw_server {
                self.session_id
            } else {
                0
            },
            passwd: Some(self.passwd.to_wire()),
            read_only: self.config.read_only,
        };
        self.control.push_back(Outgoing::Raw(request.to_bytes()));
    }

    /// Leaves the current server for host `index` (a read/write server found while
    /// read-only): the connection is dropped ([`SessionEvent::DropConnection`]) and that host
    /// is dialed next, at once.
    pub fn reconnect_to(&mut self, now: Instant, index: usize) {
        if matches!(self.link, Link::Up { .. }) {
            self.move_away(now);
            self.hosts.prefer(index);
            if let Link::Down { retry_at } = &mut self.link {
                *retry_at = None;
            }
        }
    }

    /// Replaces the host list while the session runs (a new connect string, or the
    /// ensemble's new configuration). When the current server left the list, or when the
    /// list grew and the rebalancing draw says so (see [`HostList::update`](super::HostList::update)), the connection
    /// is dropped ([`SessionEvent::DropConnection`]; requests in flight fail with
    /// ConnectionLoss, as on any move) and the session resumes at once on a host the
    /// rebalancing picks. Returns whether the session moves.
    ///
    /// `chroot`: the connect string's chroot, which must be none or the session's own.
    /// `rebalance`: `false` moves the session only when its server left the list (for a
    /// list learned rather than changed: the first configuration the client reads).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] for an empty list or another chroot (nothing changes then).
    pub fn update_hosts(
        &mut self,
        now: Instant,
        hosts: Vec<HostAddr>,
        chroot: &Chroot,
        rebalance: bool,
    ) -> Result<bool, Error> {
        if !chroot.is_none() && *chroot != self.config.chroot {
            return Err(Error::InvalidArgument(format!(
                "the chroot of a session cannot change (it is {:?})",
                self.config.chroot.as_str().unwrap_or("/")
            )));
        }
        let old = self.hosts.hosts();
        let current = match self.link {
            Link::Down { .. } => None,
            Link::Dialing { .. } | Link::Handshaking { .. } | Link::Up { .. } => {
                self.current_host.and_then(|i| old.get(i)).cloned()
            }
        };
        // Host indices are kept by host, into the new list.
        let by_host = |indices: &std::collections::BTreeSet<usize>| -> Vec<HostAddr> {
            indices
                .iter()
                .filter_map(|&i| old.get(i).cloned())
                .collect()
        };
        let tried = by_host(&self.tried);
        let refused = by_host(&self.permanent_failures);
        let moving = self
            .hosts
            .update(hosts, current.as_ref(), rebalance, &mut self.rng)
            .map_err(|e| Error::InvalidArgument(e.to_string()))?;
        // Indices into the new list.
        let new = self.hosts.hosts();
        self.current_host = current.and_then(|c| new.iter().position(|h| *h == c));
        let indices = |hosts: &[HostAddr]| {
            hosts
                .iter()
                .filter_map(|t| new.iter().position(|h| h == t))
                .collect()
        };
        self.tried = indices(&tried);
        self.permanent_failures = indices(&refused);
        self.config.hosts = new.to_vec();
        self.timing = Timing::new(
            self.negotiated.unwrap_or(self.config.session_timeout),
            self.config.hosts.len(),
        );
        tracing::info!(hosts = self.config.hosts.len(), moving, "new host list");
        if moving {
            match self.link {
                Link::Up { .. } => self.move_away(now),
                Link::Handshaking { .. } => {
                    self.lose_connection(now, Error::ConnectionLoss, true);
                }
                // The attempt in progress is abandoned (the driver drops it).
                Link::Dialing { .. } | Link::Down { .. } => {}
            }
            self.link = Link::Down { retry_at: None };
        }
        Ok(moving)
    }

    pub(super) fn auth_frame(&self, index: usize) -> Bytes {
        let (scheme, auth) = &self.credentials[index];
        (
            jute::RequestHeader {
                xid: reserved::AUTH,
                op_code: OpCode::AUTH,
            },
            AuthPacket {
                auth_type: 0,
                scheme: Some(scheme.clone()),
                auth: Some(auth.to_wire()),
            },
        )
            .to_bytes()
    }

    /// The server's answer to the ConnectRequest: the session is established (or resumed),
    /// expired, or the attempt failed.
    pub(super) fn handle_connect_response(&mut self, now: Instant, frame: Bytes) {
        let response: ConnectResponse = match decode_exact(frame) {
            Ok(response) => response,
            Err(error) => {
                self.handshake_failed(now, ConnectFailure::Protocol(ProtocolError::Decode(error)));
                return;
            }
        };
        let asked = if self.seen_rw_server {
            self.session_id
        } else {
            0
        };
        if response.time_out <= 0 {
            tracing::warn!(
                session_id = format_args!("{:#x}", self.session_id),
                "the server says the session expired"
            );
            self.terminate(SessionState::Expired, Error::SessionExpired);
            return;
        }
        if asked != 0 && response.session_id != asked {
            tracing::warn!(
                asked = format_args!("{asked:#x}"),
                got = format_args!("{:#x}", response.session_id),
                "the server resumed another session; the old one is gone"
            );
            self.terminate(SessionState::Expired, Error::SessionExpired);
            return;
        }
        let read_only = response.read_only == Some(true);
        let negotiated = Duration::from_millis(u64::try_from(response.time_out).unwrap_or(0));
        self.session_id = response.session_id;
        self.passwd = response.passwd.map(crate::Secret::from).unwrap_or_default();
        self.negotiated = Some(negotiated);
        self.timing = Timing::new(negotiated, self.config.hosts.len());
        self.established = true;
        // What `NoServerReachable` would report counts from here: the attempts since the
        // last connection.
        self.failed_attempts = 0;
        self.tried.clear();
        self.permanent_failures.clear();
        self.last_failure = None;
        self.seen_rw_server |= !read_only;
        // The ConnectRequest went out when the connection opened.
        let handshake_sent = match self.link {
            Link::Handshaking { connected, .. } => connected,
            _ => now,
        };
        self.answered(handshake_sent);
        self.link = Link::Up {
            last_send: now,
            last_recv: now,
            connected: handshake_sent,
            gather_lapsed: false,
        };
        self.hosts.mark_connected();
        tracing::debug!(
            session_id = format_args!("{:#x}", self.session_id),
            timeout_ms = response.time_out,
            read_only,
            "session established"
        );
        if !self.start_sasl(now, read_only) {
            self.session_ready(read_only);
        }
    }

    /// The connection is ready for the session's traffic (after the ConnectResponse, or after
    /// the SASL exchange): credentials are replayed and watches re-armed, before any queued
    /// request, and the session is connected.
    pub(super) fn session_ready(&mut self, read_only: bool) {
        // Replay credentials, then re-arm watches, before any queued request.
        for index in 0..self.credentials.len() {
            let waiter = self
                .auth_waiting
                .iter()
                .position(|&(i, _)| i == index)
                .map(|at| self.auth_waiting.remove(at).1);
            self.control
                .push_back(Outgoing::Raw(self.auth_frame(index)));
            self.auth_pending.push_back(waiter);
        }
        let max = self
            .config
            .set_watches_max_bytes
            .min(self.config.max_frame_len.saturating_sub(64));
        // The new connection holds what SetWatches sets again, and nothing else.
        self.server_modes.reset_from(&self.watches);
        for batch in self.watches.set_watches(self.last_zxid, max) {
            let (op_code, body) = match batch {
                SetWatchesBatch::V1(batch) => (OpCode::SET_WATCHES, batch.into()),
                SetWatchesBatch::V2(batch) => (OpCode::SET_WATCHES2, batch.into()),
            };
            self.control.push_back(Outgoing::Request {
                id: None,
                encoded: Encoded {
                    op_code,
                    body,
                    after: AfterReply::Nothing,
                },
            });
        }
        self.ready_once = true;
        // A move that lands on a read-only server ends in doubt: that server cannot vouch for
        // the session (no quorum), so the state goes through `Disconnected` as on any loss.
        if self.moving.take().is_some() && read_only {
            self.set_state(SessionState::Disconnected);
        }
        self.set_state(if read_only {
            SessionState::ConnectedReadOnly
        } else {
            SessionState::Connected
        });
        self.restart_read_only_search(read_only);
        self.tell_persistent_watchers(if read_only {
            KeeperState::CONNECTED_READ_ONLY
        } else {
            KeeperState::SYNC_CONNECTED
        });
    }

    /// Tells every persistent watcher that the connection was lost or is ready again (an
    /// event of type `None` with that state and no path, as the Java client does): a
    /// consumer that mirrors the tree knows when events may have been missed and when to
    /// read again. The re-arming requests go before anything else on the new connection, so
    /// every event after the ready marker comes from a re-armed watch.
    fn tell_persistent_watchers(&mut self, state: KeeperState) {
        for id in self.watches.persistent() {
            self.events.push_back(SessionEvent::Watch {
                id,
                event: WatchedEvent {
                    event_type: EventType::NONE,
                    state,
                    path: String::new(),
                },
                last: false,
            });
        }
    }

    /// The handshake failed (timed out, or its reply was malformed).
    pub(super) fn handshake_failed(&mut self, now: Instant, failure: ConnectFailure) {
        let cause = match &failure {
            ConnectFailure::Protocol(error) => Error::Protocol(error.clone()),
            _ => Error::ConnectionLoss,
        };
        tracing::debug!(%failure, "handshake failed");
        self.lose_connection_with(now, cause, true, Some(failure));
    }

    /// The client drops its healthy connection itself to move the session to another server:
    /// as a lost connection (requests in flight fail with ConnectionLoss, persistent watchers
    /// are told), but the state stays `Connected` for the move's grace
    /// ([`Timing::move_grace`]), so that what watches the state (a lock's validity, a
    /// leadership, a supervised command) does not take a move for a loss.
    fn move_away(&mut self, now: Instant) {
        let until = self
            .last_answered_send
            .map(|sent| sent + self.timing.move_grace);
        if self.state == SessionState::Connected && self.closing.is_none() {
            self.moving = until.filter(|until| *until > now);
        }
        self.lose_connection(now, Error::ConnectionLoss, true);
    }

    /// The connection is gone: everything in flight fails with ConnectionLoss (it may or
    /// may not have been applied); queued requests wait for the next connection, which the
    /// backoff schedules.
    pub(super) fn lose_connection(&mut self, now: Instant, cause: Error, tell_driver: bool) {
        self.lose_connection_with(now, cause, tell_driver, None);
    }

    pub(super) fn lose_connection_with(
        &mut self,
        now: Instant,
        cause: Error,
        tell_driver: bool,
        failure: Option<ConnectFailure>,
    ) {
        // Ready: established, and past SASL (the state and the markers were told then).
        let was_ready = matches!(self.link, Link::Up { .. }) && !self.authenticating();
        let (lasted, failure) = match self.link {
            Link::Up { connected, .. } => (Some(now.saturating_duration_since(connected)), None),
            Link::Handshaking { .. } => (
                None,
                Some(failure.unwrap_or_else(|| ConnectFailure::from_error(&cause))),
            ),
            Link::Dialing { .. } | Link::Down { .. } => (None, failure),
        };
        self.link = Link::Down { retry_at: None };
        self.control.clear();
        self.sasl = None;
        self.ping_queued = false;
        self.pings_in_flight.clear();
        self.quorum_connection_lost();
        // The closeSession in flight is not failed: a session whose close was sent is
        // closed (or expires) whatever its reply; `finish_close` answers the closer.
        let closer = self.closing.map(|(id, _)| id);
        for pending in std::mem::take(&mut self.pending) {
            if let Some(id) = pending.id
                && Some(id) != closer
            {
                self.reply(id, Err(Error::ConnectionLoss), false);
            }
        }
        for waiter in std::mem::take(&mut self.auth_pending).into_iter().flatten() {
            self.reply(waiter, Err(Error::ConnectionLoss), false);
        }
        if tell_driver {
            self.events.push_back(SessionEvent::DropConnection(cause));
        }
        if self.closing.is_some() {
            self.finish_close();
            return;
        } else if self.state.is_connected() && was_ready {
            // During a move the state stays until the grace is over; the persistent watchers
            // are told of the connection all the same: changes may be missed until the next.
            if self.moving.is_none() {
                self.set_state(SessionState::Disconnected);
            }
            self.tell_persistent_watchers(KeeperState::DISCONNECTED);
        }
        self.attempt_ended(now, lasted, failure);
    }

    /// A connection attempt or a connection ended (`lasted`: how long the connection was up,
    /// `None` if it never got a session): schedules the next attempt after the backoff and,
    /// before the first session, counts the failure (and gives up with fail-fast once every
    /// host failed).
    pub(super) fn attempt_ended(
        &mut self,
        now: Instant,
        lasted: Option<Duration>,
        failure: Option<ConnectFailure>,
    ) {
        let session_timeout = self.negotiated.unwrap_or(self.config.session_timeout);
        self.backoff
            .ended(lasted.unwrap_or(Duration::ZERO), session_timeout);
        let delay = self.backoff.delay(session_timeout, &mut self.rng);
        self.link = Link::Down {
            retry_at: Some(now + delay),
        };
        if lasted.is_some() {
            // A connection that was up breaks a run of failures.
            self.permanent_failures.clear();
            return;
        }
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        if let Some(host) = self.current_host {
            self.tried.insert(host);
        }
        // Permanent failures in a row, by host: once every host failed so, retrying cannot
        // help (the hosts are visited round-robin, so that is one cycle). An attempt that timed
        // out says nothing of a host's verdict (a loaded server or machine may just be slow):
        // the refusals before it stand, and stay the failure to name.
        let timed_out = matches!(
            failure,
            Some(ConnectFailure::ConnectTimedOut(_) | ConnectFailure::HandshakeTimedOut(_))
        );
        match (
            failure.as_ref().is_some_and(ConnectFailure::is_permanent),
            self.current_host,
        ) {
            (true, Some(host)) => {
                self.permanent_failures.insert(host);
            }
            _ if timed_out => {}
            _ => self.permanent_failures.clear(),
        }
        if failure.is_some() && !(timed_out && self.every_host_refused_for_good()) {
            self.last_failure = failure;
        }
        if self.established {
            // Once a session exists, it is retried until it expires (the servers may be
            // fixed meanwhile); the failures counted here name the cause if it does.
            return;
        }
        let every_host_failed = self.failed_attempts as usize >= self.hosts.hosts().len();
        if (self.every_host_refused_for_good() || (self.config.fail_fast && every_host_failed))
            && !self.state.is_terminal()
            && self.closing.is_none()
        {
            self.give_up(now);
        }
    }

    /// Whether the last attempt on every host failed [permanently](ConnectFailure::is_permanent),
    /// with no connection up since.
    pub(super) fn every_host_refused_for_good(&self) -> bool {
        self.permanent_failures.len() >= self.hosts.hosts().len()
    }

    /// No session could be established in time (or every host failed permanently): the
    /// session ends with [`Error::NoServerReachable`], naming the hosts tried and the last
    /// failure.
    pub(super) fn give_up(&mut self, now: Instant) {
        // An attempt still running counts, with how long it ran; it is the failure to name
        // unless every host refused the client for good (that is the news, not an attempt
        // cut short by the end, however little time it had).
        let refused_for_good = self.every_host_refused_for_good();
        let cut_short = match self.link {
            Link::Dialing { since, host } => {
                self.tried.insert(host);
                Some(ConnectFailure::ConnectTimedOut(now - since))
            }
            Link::Handshaking { since, .. } => {
                if let Some(host) = self.current_host {
                    self.tried.insert(host);
                }
                Some(ConnectFailure::HandshakeTimedOut(now - since))
            }
            Link::Up { .. } if self.authenticating() => {
                if let Some(host) = self.current_host {
                    self.tried.insert(host);
                }
                Some(self.sasl_unfinished(now))
            }
            _ => None,
        };
        if let Some(failure) = cut_short {
            self.failed_attempts = self.failed_attempts.saturating_add(1);
            if !refused_for_good {
                self.last_failure = Some(failure);
            }
        }
        let hosts = self.hosts.hosts();
        let error = Error::NoServerReachable {
            attempts: self.failed_attempts,
            hosts: self.tried.iter().map(|&i| hosts[i].to_string()).collect(),
            last_error: self
                .last_failure
                .clone()
                .unwrap_or(ConnectFailure::NotAttempted),
        };
        tracing::info!(%error, "giving up connecting");
        self.events.push_back(SessionEvent::GaveUp(error.clone()));
        if !self.state.is_terminal() {
            self.gave_up_with = Some(error.clone());
        }
        self.terminate(SessionState::Closed, error);
    }
}
