//! The harness's server side and bookkeeping: the frames it answers with, the clock, and the
//! checks after every step and at the end.

use super::*;

impl Harness {
    // ----- server frames -----

    pub(super) fn connect_response(&mut self, timeout: u8, session: u8, expect: &mut Expect) {
        if self.conn.phase != Phase::Handshaking {
            return;
        }
        let time_out = [
            i32::try_from(self.config.session_timeout.as_millis()).unwrap_or(i32::MAX),
            30_000,
            4_000,
            600,
            1,
            0,
            -5,
            20_000,
        ][usize::from(timeout & 7)];
        let read_only =
            [Some(false), None, Some(true), Some(false)][usize::from((timeout >> 3) & 3)];
        let asked = if self.seen_rw { self.session_id } else { 0 };
        let session_id = match session % 4 {
            0 if asked != 0 => asked,
            0 | 1 => 0x100 + i64::from(session),
            2 => self.session_id,
            _ => 0x0bad,
        };
        let response = ConnectResponse {
            protocol_version: 0,
            time_out,
            session_id,
            passwd: Some(Bytes::from(vec![session; 16])),
            read_only,
        };
        self.deliver(response.to_bytes(), expect);
    }

    /// The head of the requests in flight, if the connection is up.
    pub(super) fn head(&self) -> Option<&Sent> {
        (self.conn.phase == Phase::Up)
            .then(|| self.conn.in_flight.front())
            .flatten()
    }

    pub(super) fn zxid(&mut self, step: u8) -> i64 {
        self.next_zxid += i64::from(step % 4);
        self.next_zxid
    }

    pub(super) fn reply(&mut self, salt: u8, expect: &mut Expect) {
        let Some(head) = self.head().cloned() else {
            return;
        };
        let zxid = self.zxid(salt);
        let (wire, client) = sample_response(head.op_code, &self.config.chroot, &head.path, salt);
        let header = ReplyHeader {
            xid: head.xid,
            zxid,
            err: ErrorCode::OK,
        };
        let armed = self.watch_of(head.id).is_some();
        self.expect_reply(&head, Ok(client), armed, expect);
        self.deliver((header, &wire).to_bytes(), expect);
    }

    pub(super) fn error_reply(&mut self, which: u8, expect: &mut Expect) {
        let Some(head) = self.head().cloned() else {
            return;
        };
        let code = ERROR_CODES[usize::from(which) % ERROR_CODES.len()];
        let header = ReplyHeader {
            xid: head.xid,
            zxid: self.zxid(which),
            err: code,
        };
        let error = Error::from_code(code).unwrap_or(Error::Unknown(code));
        let armed = code == ErrorCode::NO_NODE
            && matches!(self.watch_of(head.id), Some((WatchKind::Exist, _)));
        self.expect_reply(&head, Err(error), armed, expect);
        self.deliver(header.to_bytes(), expect);
    }

    pub(super) fn watch_of(&self, id: Option<RequestId>) -> Option<(WatchKind, String)> {
        match &self.checker.caller(id?).kind {
            CallerKind::Op { watch, .. } => watch.clone(),
            _ => None,
        }
    }

    /// The exact result the caller of `head` must get for a well-formed reply.
    pub(super) fn expect_reply(
        &self,
        head: &Sent,
        result: Result<Response, Error>,
        armed: bool,
        expect: &mut Expect,
    ) {
        let Some(id) = head.id.filter(|&id| !self.checker.is_resolved(id)) else {
            return;
        };
        expect.sole_reply = true;
        expect.reply = Some(if head.op_code == OpCode::CLOSE_SESSION {
            (id, Ok(Response::Empty), false)
        } else {
            (id, result, armed)
        });
    }

    pub(super) fn ping_reply(&mut self, expect: &mut Expect) {
        if self.conn.phase != Phase::Up || self.conn.pings_sent == 0 {
            return;
        }
        let header = ReplyHeader {
            xid: reserved::PING,
            zxid: self.next_zxid,
            err: ErrorCode::OK,
        };
        self.deliver(header.to_bytes(), expect);
    }

    pub(super) fn auth_reply(&mut self, which: u8, expect: &mut Expect) {
        if self.conn.phase != Phase::Up || self.conn.auth_sent == 0 {
            return;
        }
        let err = match which % 4 {
            0 | 1 => ErrorCode::OK,
            2 => ErrorCode::AUTH_FAILED,
            _ => ErrorCode::NO_AUTH,
        };
        let header = ReplyHeader {
            xid: reserved::AUTH,
            zxid: 0,
            err,
        };
        if let Some(Some(id)) = self.conn.auth_queue.front()
            && !self.checker.is_resolved(*id)
        {
            let result = match err {
                ErrorCode::OK => Ok(Response::Empty),
                ErrorCode::AUTH_FAILED => {
                    Err(Error::AuthFailed(crate::AuthFailure::add_auth_refused()))
                }
                other => Err(Error::from_code(other).unwrap_or(Error::Unknown(other))),
            };
            expect.reply = Some((*id, result, false));
            expect.sole_reply = true;
        }
        self.deliver(header.to_bytes(), expect);
    }

    pub(super) fn notify(&mut self, which: u8, expect: &mut Expect) {
        let event = WatcherEvent {
            event_type: EVENT_TYPES[usize::from(which & 7)],
            state: KeeperState::SYNC_CONNECTED,
            path: Some(
                self.config
                    .chroot
                    .apply(PATHS[usize::from((which >> 3) & 3)]),
            ),
        };
        let header = ReplyHeader {
            xid: reserved::NOTIFICATION,
            zxid: -1,
            err: ErrorCode::OK,
        };
        self.deliver((header, event).to_bytes(), expect);
    }

    /// A malformed frame, by kind (argument modulo 10): random bytes; a truncated reply to the
    /// oldest request; a reply with a wrong xid; a reply to the second request in flight (out
    /// of order); a reply with trailing bytes; random bytes as a successful reply's body; a
    /// notification with a random event; a ping or auth reply cut short or too long; a
    /// ConnectResponse out of place; another op's reply body.
    pub(super) fn malformed(&mut self, input: &mut Input<'_>, expect: &mut Expect) {
        let kind = input.arg();
        let head = self.conn.in_flight.front().cloned();
        let well_formed = |harness: &mut Self, sent: &Sent, salt: u8| {
            let (wire, _) = sample_response(sent.op_code, &harness.config.chroot, &sent.path, salt);
            let header = ReplyHeader {
                xid: sent.xid,
                zxid: harness.zxid(salt),
                err: ErrorCode::OK,
            };
            (header, &wire).to_bytes().to_vec()
        };
        let frame: Vec<u8> = match kind % 10 {
            0 => {
                let len = usize::from(input.arg() % 48);
                input.take(len).to_vec()
            }
            1 => {
                let Some(head) = head else { return };
                let mut frame = well_formed(self, &head, kind);
                frame.truncate(usize::from(input.arg()) % frame.len().max(1));
                frame
            }
            2 => {
                let Some(head) = head else { return };
                let mut wrong = head.clone();
                wrong.xid = match input.arg() % 4 {
                    0 => head.xid.wrapping_add(1),
                    1 => head.xid.wrapping_sub(1),
                    2 => reserved::SET_WATCHES,
                    _ => 0,
                };
                well_formed(self, &wrong, kind)
            }
            3 => {
                let Some(second) = self.conn.in_flight.get(1).cloned() else {
                    return;
                };
                well_formed(self, &second, kind)
            }
            4 => {
                let Some(head) = head else { return };
                let mut frame = well_formed(self, &head, kind);
                let extra = 1 + usize::from(input.arg() % 3);
                frame.extend(std::iter::repeat_n(0, extra));
                frame
            }
            5 => {
                let Some(head) = head else { return };
                let header = ReplyHeader {
                    xid: head.xid,
                    zxid: self.zxid(kind),
                    err: ErrorCode::OK,
                };
                let len = usize::from(input.arg() % 32);
                let mut frame = header.to_bytes().to_vec();
                frame.extend_from_slice(input.take(len));
                frame
            }
            6 => {
                let header = ReplyHeader {
                    xid: reserved::NOTIFICATION,
                    zxid: -1,
                    err: ErrorCode::OK,
                };
                let len = usize::from(input.arg() % 24);
                let mut frame = header.to_bytes().to_vec();
                frame.extend_from_slice(input.take(len));
                frame
            }
            7 => {
                let xid = if kind & 0x10 == 0 {
                    reserved::PING
                } else {
                    reserved::AUTH
                };
                let header = ReplyHeader {
                    xid,
                    zxid: 0,
                    err: ErrorCode::OK,
                };
                let mut frame = header.to_bytes().to_vec();
                let cut = input.arg() % 8;
                if cut < 4 {
                    frame.truncate(usize::from(cut) * 4);
                } else {
                    frame.extend(std::iter::repeat_n(0, usize::from(cut - 3)));
                }
                frame
            }
            8 => ConnectResponse {
                protocol_version: 0,
                time_out: 30_000,
                session_id: self.session_id,
                passwd: Some(self.password.clone()),
                read_only: None,
            }
            .to_bytes()
            .to_vec(),
            _ => {
                let Some(head) = head else { return };
                let other = OpCode(i32::from(input.arg() % 23));
                let mut wrong = head.clone();
                wrong.op_code = other;
                well_formed(self, &wrong, kind)
            }
        };
        self.deliver(Bytes::from(frame), expect);
    }

    /// Hands `frame` to the session after predicting, as a mirror of the protocol, what it
    /// must do with it; the exact expectations set by the caller stay.
    pub(super) fn deliver(&mut self, frame: Bytes, expect: &mut Expect) {
        match self.conn.phase {
            Phase::Down | Phase::Dialing => expect.silent = true,
            Phase::Handshaking => {
                let outcome = match decode_exact::<ConnectResponse>(frame.clone()) {
                    Err(_) => (Handshake::Refused, ConnectResponse::default()),
                    Ok(response) => {
                        let asked = if self.seen_rw { self.session_id } else { 0 };
                        let outcome = if response.time_out <= 0
                            || (asked != 0 && response.session_id != asked)
                        {
                            Handshake::Expired
                        } else {
                            Handshake::Accepted {
                                read_only: response.read_only == Some(true),
                            }
                        };
                        (outcome, response)
                    }
                };
                if outcome.0 == Handshake::Refused {
                    expect.drop = Some(true);
                }
                expect.handshake = Some(outcome);
            }
            Phase::Up => self.mirror_frame(&frame, expect),
        }
        self.session.handle_frame(self.now, frame);
    }

    /// Mirrors what the session does with `frame` on an established connection: which request
    /// or auth waiter it answers, which watches it fires, whether it is a protocol violation.
    pub(super) fn mirror_frame(&mut self, frame: &Bytes, expect: &mut Expect) {
        let Some(&[a, b, c, d]) = frame.get(..4) else {
            expect.drop = Some(true);
            return;
        };
        let xid = i32::from_be_bytes([a, b, c, d]);
        let decodes = |op: OpCode| ServerMessage::decode(frame.clone(), |_| op);
        match xid {
            reserved::NOTIFICATION => match decodes(OpCode::NOTIFICATION) {
                Ok(ServerMessage::Notification(_, event)) => {
                    self.expect_notification(event);
                    expect.drop = Some(false);
                }
                _ => expect.drop = Some(true),
            },
            reserved::PING => {
                let ok = decodes(OpCode::PING).is_ok();
                if ok {
                    self.conn.pings_sent = self.conn.pings_sent.saturating_sub(1);
                }
                expect.drop = Some(!ok);
            }
            reserved::AUTH => {
                // The waiter is taken before the frame is decoded.
                let Some(waiter) = self.conn.auth_queue.pop_front() else {
                    expect.drop = Some(true);
                    return;
                };
                self.conn.auth_sent = self.conn.auth_sent.saturating_sub(1);
                let ok = decodes(OpCode::AUTH).is_ok();
                expect.drop = Some(!ok);
                if let Some(id) = waiter {
                    // Answered (or failed by the protocol violation) in this step.
                    self.checker.step.answered_auth = Some(id);
                    if !ok {
                        self.conn.auth_failing.push(id);
                    }
                }
            }
            _ => {
                let Some(head) = self.conn.in_flight.front().cloned() else {
                    expect.drop = Some(true);
                    return;
                };
                if frame.len() < ReplyHeader::MIN_LEN {
                    expect.drop = Some(true);
                    return;
                }
                let header = ReplyHeader::decode(&mut jute::Reader::new(frame.clone()))
                    .unwrap_or_else(|e| panic!("a 16-byte reply header: {e}"));
                // A read-only server's `NotReadOnly` may overtake older requests; any other
                // reply out of order is a violation.
                let overtaking = head.xid != xid
                    && header.err == ErrorCode::NOT_READ_ONLY
                    && self.session.state() == SessionState::ConnectedReadOnly;
                let index = if head.xid == xid {
                    Some(0)
                } else if overtaking {
                    self.conn.in_flight.iter().position(|sent| sent.xid == xid)
                } else {
                    None
                };
                let Some(head) = index.and_then(|i| self.conn.in_flight.remove(i)) else {
                    expect.drop = Some(true);
                    return;
                };
                expect.drop = Some(false);
                if header.zxid > 0 {
                    self.last_zxid = header.zxid;
                }
                let Some(id) = head.id else {
                    return;
                };
                // The watches a removal removes are told when the server says OK, whether or
                // not its body decodes (the server ran it) and whether or not its caller still
                // waits (a timed-out one does not).
                let removals = match &self.checker.caller(id).kind {
                    CallerKind::Op {
                        removes: Some((path, kinds)),
                        ..
                    } if header.err == ErrorCode::OK => Some(
                        self.checker
                            .armed()
                            .filter(|(_, kind, watched)| watched == path && kinds.contains(kind))
                            .map(|(watcher, kind, _)| (watcher, removal_event(kind)))
                            .collect::<BTreeMap<_, _>>(),
                    ),
                    CallerKind::Op {
                        removes: Some(_), ..
                    } => Some(BTreeMap::new()),
                    _ => None,
                };
                if self.checker.is_resolved(id) {
                    if let Some(removals) = removals {
                        self.checker.step.removing = Some(id);
                        expect.orphan_removals = Some(removals);
                    }
                    return;
                }
                self.checker.step.answered = Some(id);
                if let Some(removals) = removals {
                    expect.removals = Some((id, removals));
                }
            }
        }
    }

    /// The watches a notification of `event` fires (the table of Java's
    /// `ZKWatchManager.materialize`), for the checker.
    pub(super) fn expect_notification(&mut self, event: WatcherEvent) {
        let server_path = event.path.unwrap_or_default();
        let event_type = event.event_type;
        let node_event = matches!(
            event_type,
            EventType::NODE_CREATED | EventType::NODE_DATA_CHANGED | EventType::NODE_DELETED
        );
        let fires = |kind: WatchKind, watched: &str| -> bool {
            let exact = watched == server_path;
            match kind {
                WatchKind::Data | WatchKind::Exist => exact && node_event,
                WatchKind::Child => {
                    exact
                        && matches!(
                            event_type,
                            EventType::NODE_CHILDREN_CHANGED | EventType::NODE_DELETED
                        )
                }
                WatchKind::Persistent => {
                    exact && (node_event || event_type == EventType::NODE_CHILDREN_CHANGED)
                }
                WatchKind::PersistentRecursive => {
                    node_event
                        && (exact
                            || (server_path.starts_with('/')
                                && (watched == "/"
                                    || server_path.starts_with(&format!("{watched}/")))))
                }
            }
        };
        let chroot = &self.config.chroot;
        let expected: BTreeSet<RequestId> = self
            .checker
            .armed()
            .filter(|(_, kind, path)| fires(*kind, &chroot.apply(path)))
            .map(|(id, _, _)| id)
            .collect();
        self.checker.step.notification = Some(WatchedEvent {
            event_type,
            state: event.state,
            path: chroot.strip(&server_path).into_owned(),
        });
        self.checker.step.fires = expected;
    }

    // ----- time -----

    /// Moves the clock `by` forward, firing every timer due on the way, as a driver does.
    pub(super) fn advance(&mut self, by: Duration) {
        let until = self.now + by;
        let mut firings = 0;
        while let Some(at) = self.session.poll_timeout() {
            if at > until {
                break;
            }
            firings += 1;
            assert!(
                firings < MAX_FIRINGS,
                "timers stuck: poll_timeout keeps asking for {at:?} (now {:?})",
                self.now
            );
            self.now = self.now.max(at);
            self.begin();
            self.session.handle_timeout(self.now);
            self.settle(Expect::default());
        }
        self.now = until;
        // Every deadline that passed has fired.
        for (id, caller) in &self.checker.callers {
            if let Some(deadline) = caller.deadline {
                assert!(
                    caller.resolved || deadline > self.now,
                    "{id:?} unresolved after its deadline"
                );
            }
        }
    }

    // ----- after every step -----

    /// Drains the session's events through the checker, then checks the step's expectations
    /// and the session's counters against the model.
    pub(super) fn settle(&mut self, expect: Expect) {
        let state_before = self.checker.state;
        // The step's events; a renewal, which the session starts once the expiry's events were
        // handed on, is checked as a step of its own, after this one's checks.
        let mut renewal = None;
        while let Some(event) = self.session.poll_event() {
            if self.checker.state == SessionState::Expired
                && event == SessionEvent::State(SessionState::Connecting)
            {
                renewal = Some(event);
                break;
            }
            self.checker.observe(&event);
            self.count(&event);
        }
        let step = &self.checker.step;
        let ended = !state_before.is_terminal() && self.checker.state.is_terminal();
        if expect.silent {
            assert_eq!(step.events, 0, "events from a step that must do nothing");
        }
        if let Some((id, result, armed)) = &expect.reply {
            let got: Vec<_> = step.replies.iter().filter(|(r, _, _)| r == id).collect();
            assert_eq!(
                got,
                [&(*id, result.clone(), *armed)],
                "the reply to {id:?} (step replies: {:?})",
                step.replies
            );
            if expect.sole_reply && !ended {
                assert_eq!(step.replies.len(), 1, "replies besides {id:?}'s");
            }
        }
        if step.notification.is_some() {
            assert_eq!(step.fired, step.fires, "the watches a notification fired");
        }
        // Every persistent watch is told when a ready connection goes and when one is ready:
        // by the connection, not the state (a move the client makes itself keeps the state).
        if !self.checker.state.is_terminal() {
            let armed = self.checker.armed_persistent();
            let told = |state: KeeperState| step.markers.get(&state.0).cloned().unwrap_or_default();
            let lost = self.ready_before && (step.dropped || self.conn.phase == Phase::Down);
            let ready = matches!(expect.handshake, Some((Handshake::Accepted { .. }, _)));
            assert_eq!(
                told(KeeperState::DISCONNECTED),
                if lost { armed.clone() } else { BTreeSet::new() },
                "told of the lost connection"
            );
            let ready_markers: BTreeSet<RequestId> = told(KeeperState::SYNC_CONNECTED)
                .union(&told(KeeperState::CONNECTED_READ_ONLY))
                .copied()
                .collect();
            assert_eq!(
                ready_markers,
                if ready { armed } else { BTreeSet::new() },
                "told of the connection ready"
            );
        }
        if let Some((id, removals)) = &expect.removals {
            assert_eq!(
                &step.removed, removals,
                "the watches removeWatches {id:?} removed"
            );
        }
        if let Some(removals) = &expect.orphan_removals {
            assert_eq!(
                &step.removed, removals,
                "the watches a removeWatches whose caller timed out removed"
            );
        }
        match expect.drop {
            Some(true) => assert!(
                step.dropped,
                "a protocol violation did not drop the connection"
            ),
            Some(false) => assert!(
                !step.dropped || ended,
                "a well-formed frame dropped the connection"
            ),
            None => {}
        }
        if let Some((outcome, response)) = expect.handshake {
            self.handshake_done(outcome, &response);
        }
        self.reconcile();
        // The session has renewed itself already: its counters are checked after the
        // renewal's step.
        if renewal.is_none() {
            self.check_counters();
        }
        match renewal {
            Some(event) => self.renewed(&event),
            None => assert!(!self.renews_now(), "an expired session not renewed"),
        }
    }

    pub(super) fn handshake_done(&mut self, outcome: Handshake, response: &ConnectResponse) {
        let state = self.checker.state;
        match outcome {
            Handshake::Refused => {}
            Handshake::Expired => {
                assert_eq!(
                    state,
                    SessionState::Expired,
                    "the server said the session expired"
                );
            }
            Handshake::Accepted { read_only } => {
                let expected = if read_only {
                    SessionState::ConnectedReadOnly
                } else {
                    SessionState::Connected
                };
                assert_eq!(state, expected, "after {response:?}");
                assert_eq!(self.session.session_id(), response.session_id);
                assert_eq!(
                    self.session.negotiated_timeout(),
                    Some(ms(u64::try_from(response.time_out).unwrap_or(0)))
                );
                self.session_id = response.session_id;
                self.password = response.passwd.clone().unwrap_or_default();
                self.seen_rw |= !read_only;
                self.conn.phase = Phase::Up;
                // Credentials are replayed in order; a waiting caller gets the first answer.
                for index in 0..self.credentials {
                    let waiter = self
                        .auth_waiting
                        .iter()
                        .position(|&(i, _)| i == index)
                        .map(|at| self.auth_waiting.remove(at).1);
                    self.conn.auth_queue.push_back(waiter);
                    self.conn.auth_queued_total += 1;
                }
                let chroot = &self.config.chroot;
                let expected = self
                    .checker
                    .armed()
                    .map(|(_, kind, path)| (kind_rank(kind), chroot.apply(path)))
                    .collect();
                self.conn.set_watches = Some(SetWatchesCheck {
                    expected,
                    seen: BTreeSet::new(),
                    zxid: self.last_zxid,
                });
            }
        }
    }

    /// Brings the model of the connection in line with what the step did to it.
    pub(super) fn reconcile(&mut self) {
        let step = &self.checker.step;
        let gone = step.dropped
            || self.checker.state.is_terminal()
            || (self.conn.phase == Phase::Dialing && !self.session.is_dialing());
        if gone {
            self.conn.phase = Phase::Down;
        }
        if self.conn.phase == Phase::Down {
            // Nothing sent on a lost connection is left unanswered.
            for sent in &self.conn.in_flight {
                if let Some(id) = sent.id {
                    assert!(
                        self.checker.is_resolved(id),
                        "{id:?} (xid {}) unresolved after its connection was lost",
                        sent.xid
                    );
                }
            }
            let auth = self.conn.auth_queue.iter().flatten();
            for id in auth.chain(&self.conn.auth_failing) {
                assert!(
                    self.checker.is_resolved(*id),
                    "add_auth {id:?} unresolved after its connection was lost"
                );
            }
            self.conn = Connection::default();
        }
        if self.checker.state.is_terminal() {
            self.auth_waiting.clear();
            self.outbox.clear();
        }
    }

    pub(super) fn check_counters(&mut self) {
        let session = &self.session;
        assert_eq!(
            session.state(),
            self.checker.state,
            "state() and the state events"
        );
        let in_flight = if self.conn.phase == Phase::Up {
            self.conn.in_flight.len()
        } else {
            0
        };
        assert_eq!(session.in_flight(), in_flight, "requests in flight");
        // The reader is never told to wait for more bytes than the replies owed will bring,
        // less one frame that may be in part read already (20 bytes at least each).
        let low_water = session.read_low_water();
        assert!(
            low_water == 1 || low_water <= 20 * in_flight.saturating_sub(1),
            "read low-water mark {low_water} with {in_flight} replies owed"
        );
        let queued = self
            .outbox
            .iter()
            .filter(|queued| match queued {
                Queued::Caller(id) => !self.checker.is_resolved(*id),
                Queued::Removal(_) => true,
            })
            .count();
        assert_eq!(session.queued(), queued, "requests queued");
        assert_eq!(
            session.watch_count(),
            self.checker.armed().count(),
            "live watches"
        );
        assert_eq!(session.last_zxid(), self.last_zxid, "last zxid");
        if self.checker.state.is_terminal() {
            assert!(
                !session.wants_connection(),
                "an ended session wants a connection"
            );
            assert!(!session.is_dialing(), "an ended session is dialing");
        }
    }

    pub(super) fn count(&mut self, event: &SessionEvent) {
        let report = &mut self.report;
        match event {
            SessionEvent::Reply { result: Ok(_), .. } => report.ok_replies += 1,
            SessionEvent::Reply {
                result: Err(error), ..
            } => {
                report.error_replies += 1;
                report.errors.push(error.clone());
            }
            SessionEvent::Watch { .. } => report.watch_events += 1,
            SessionEvent::WatchLost { .. } => report.watches_lost += 1,
            SessionEvent::State(state) => report.states.push(*state),
            SessionEvent::DropConnection(_) => report.drops += 1,
            SessionEvent::GaveUp(_) => {}
        }
    }

    /// Closes the session and runs the clock past every timer; then nothing may be left.
    pub(super) fn finish(mut self) -> Report {
        self.begin();
        self.close();
        self.settle(Expect::default());
        self.advance(Duration::ZERO);
        let mut rounds = 0;
        while let Some(at) = self.session.poll_timeout() {
            rounds += 1;
            assert!(rounds < MAX_FIRINGS, "timers keep coming after close");
            let by = at.saturating_duration_since(self.now);
            self.advance(by);
        }
        let session = &mut self.session;
        assert!(
            self.checker.state.is_terminal(),
            "closed, past every timer, and still {:?}",
            self.checker.state
        );
        for (id, caller) in &self.checker.callers {
            assert!(caller.resolved, "{id:?} ({:?}) never resolved", caller.kind);
            assert!(
                caller.watch != WatchStatus::Armed,
                "the watch of {id:?} neither fired nor was reported lost"
            );
        }
        assert_eq!(session.in_flight(), 0, "in flight after the end");
        assert_eq!(session.queued(), 0, "queued after the end");
        assert_eq!(session.watch_count(), 0, "watches after the end");
        assert_eq!(session.poll_timeout(), None, "a timer after the end");
        assert!(
            session.poll_transmit(self.now).is_none(),
            "a frame after the end"
        );
        assert!(
            session.poll_connect(self.now).is_none(),
            "a connection after the end"
        );
        assert!(session.poll_event().is_none(), "an event after the end");
        self.report
    }
}
