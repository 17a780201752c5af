//! The harness: drives the session with the script's caller and connection inputs, and
//! mirrors what it transmits.

use super::*;

// ----- the harness -----

/// The connection as the script (the driver and the server) sees it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    #[default]
    Down,
    Dialing,
    Handshaking,
    Up,
}

/// A request the session sent on the current connection and the server has not answered.
#[derive(Debug, Clone)]
pub(super) struct Sent {
    pub(super) xid: i32,
    pub(super) op_code: OpCode,
    /// `None` for the session's own requests (SetWatches).
    pub(super) id: Option<RequestId>,
    /// The client path of the caller's request, for sample replies.
    pub(super) path: String,
}

/// The SetWatches a fresh connection must send: every live watch, by kind and server path.
#[derive(Debug)]
pub(super) struct SetWatchesCheck {
    pub(super) expected: BTreeSet<(u8, String)>,
    pub(super) seen: BTreeSet<(u8, String)>,
    pub(super) zxid: i64,
}

/// The model of one connection.
#[derive(Debug, Default)]
pub(super) struct Connection {
    pub(super) phase: Phase,
    pub(super) in_flight: VecDeque<Sent>,
    pub(super) last_xid: i32,
    /// Mirror of the session's auth FIFO: the waiter of each auth packet queued or sent.
    pub(super) auth_queue: VecDeque<Option<RequestId>>,
    /// Auth packets transmitted and not answered.
    pub(super) auth_sent: usize,
    /// Auth packets queued and transmitted on this connection, in all.
    pub(super) auth_queued_total: usize,
    pub(super) auth_sent_total: usize,
    /// Auth waiters whose reply did not decode: the connection drop must resolve them.
    pub(super) auth_failing: Vec<RequestId>,
    pub(super) pings_sent: usize,
    pub(super) set_watches: Option<SetWatchesCheck>,
}

/// What a ConnectResponse does, as the script predicts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handshake {
    Refused,
    Expired,
    Accepted { read_only: bool },
}

/// The expectations of one step beyond the generic checks.
#[derive(Debug, Default)]
pub(super) struct Expect {
    /// The exact reply a request must get.
    pub(super) reply: Option<(RequestId, Result<Response, Error>, bool)>,
    /// That reply must be the step's only one (unless the session ends).
    pub(super) sole_reply: bool,
    /// The removals a removeWatches request's success must report (id → event type).
    pub(super) removals: Option<(RequestId, BTreeMap<RequestId, EventType>)>,
    /// The removals a removeWatches whose caller timed out must report (none unless the
    /// server said OK).
    pub(super) orphan_removals: Option<BTreeMap<RequestId, EventType>>,
    /// Whether the connection must be dropped (`Some(false)`: must not, unless the session
    /// ends).
    pub(super) drop: Option<bool>,
    pub(super) handshake: Option<(Handshake, ConnectResponse)>,
    /// The step must emit nothing at all.
    pub(super) silent: bool,
}

/// The session and the script's model of everything around it.
/// An entry of the session's outbox, as the harness mirrors it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Queued {
    /// A caller's request, or the first close.
    Caller(RequestId),
    /// The session's own removeWatches (ANY) for the client path of a persistent watch whose
    /// last watcher was forgotten.
    Removal(String),
}

pub(super) struct Harness {
    pub(super) session: Session,
    pub(super) config: SessionConfig,
    pub(super) now: Instant,
    pub(super) checker: Checker,
    pub(super) conn: Connection,
    /// Mirror of the session's queue: callers' requests (and close), and the session's own
    /// removals, not sent yet.
    pub(super) outbox: VecDeque<Queued>,
    /// The client path of each submitted request.
    pub(super) paths: BTreeMap<RequestId, String>,
    pub(super) closing: Option<RequestId>,
    pub(super) credentials: usize,
    pub(super) auth_waiting: Vec<(usize, RequestId)>,
    pub(super) session_id: i64,
    pub(super) password: Bytes,
    pub(super) seen_rw: bool,
    pub(super) last_zxid: i64,
    pub(super) next_zxid: i64,
    pub(super) xids_used: HashSet<i32>,
    pub(super) report: Report,
    /// The frame being recorded is one of the session's quorum checks.
    pub(super) quorum_check_sent: bool,
    /// A connection was ready (handshake accepted) when the step began: its loss is owed to
    /// the persistent watchers, whether or not the state changes (a move the client makes
    /// itself keeps `Connected`).
    pub(super) ready_before: bool,
    /// The read/write probe handed out and not reported yet.
    pub(super) probe: Option<ProbeId>,
}

impl Harness {
    pub(super) fn new(input: &mut Input<'_>) -> Self {
        let config = read_config(input);
        let renews = config.renew_expired;
        let now = Instant::now();
        Self {
            session: Session::new(config.clone()),
            config,
            now,
            checker: Checker::new(now, renews),
            conn: Connection::default(),
            outbox: VecDeque::new(),
            paths: BTreeMap::new(),
            closing: None,
            credentials: 0,
            auth_waiting: Vec::new(),
            session_id: 0,
            password: Bytes::from_static(&[0; 16]),
            seen_rw: false,
            last_zxid: 0,
            next_zxid: 0,
            xids_used: HashSet::new(),
            report: Report::default(),
            quorum_check_sent: false,
            ready_before: false,
            probe: None,
        }
    }

    pub(super) fn begin(&mut self) {
        let mut in_flight: BTreeSet<RequestId> = self
            .conn
            .in_flight
            .iter()
            .filter_map(|sent| sent.id)
            .collect();
        in_flight.extend(self.conn.auth_queue.iter().flatten());
        self.ready_before = self.conn.phase == Phase::Up;
        self.checker.begin(self.now, in_flight);
    }

    pub(super) fn is_open(&self) -> bool {
        !self.checker.state.is_terminal()
            && self.closing.is_none_or(|id| self.checker.is_resolved(id))
    }

    pub(super) fn act(&mut self, action: u8, input: &mut Input<'_>) {
        self.begin();
        let mut expect = Expect::default();
        match action {
            SUBMIT => self.submit(input.arg(), input.arg(), input.arg()),
            ADD_AUTH => self.add_auth(input.arg()),
            CLOSE => self.close(),
            FORGET_WATCH => self.forget_watch(input.arg(), &mut expect),
            DIAL => self.dial(&mut expect),
            CONNECTED => self.connected(&mut expect),
            CONNECT_FAILED => self.connect_failed(input.arg(), &mut expect),
            TRANSMIT => self.transmit(input.arg()),
            CONNECT_RESPONSE => self.connect_response(input.arg(), input.arg(), &mut expect),
            REPLY => self.reply(input.arg(), &mut expect),
            ERROR_REPLY => self.error_reply(input.arg(), &mut expect),
            PING_REPLY => self.ping_reply(&mut expect),
            AUTH_REPLY => self.auth_reply(input.arg(), &mut expect),
            NOTIFY => self.notify(input.arg(), &mut expect),
            MALFORMED => self.malformed(input, &mut expect),
            ADVANCE => {
                self.advance(ms(ADVANCES_MS[usize::from(input.arg()) % ADVANCES_MS.len()]));
                return;
            }
            DISCONNECT => self.disconnect(input.arg()),
            RECONNECT_TO => self.reconnect_to(input.arg(), &mut expect),
            OVERSIZED => self.oversized(input.arg(), &mut expect),
            PROBE => self.probe(input.arg(), &mut expect),
            _ => self.session.handle_timeout(self.now),
        }
        self.settle(expect);
    }

    /// Whether the session must renew now: it expired, the configuration renews, a session
    /// was established before and `close` was not called.
    pub(super) fn renews_now(&self) -> bool {
        self.config.renew_expired
            && self.checker.state == SessionState::Expired
            && self.checker.ever_connected
            && self.closing.is_none()
    }

    /// The session renewed itself once the expiry's events were handed on (its `Connecting`,
    /// `event`, was the next event): the model of the session starts over, but for the last
    /// zxid seen (the next ConnectRequest must carry it).
    pub(super) fn renewed(&mut self, event: &SessionEvent) {
        assert!(self.renews_now(), "a renewal that was not due: {event:?}");
        self.begin();
        self.checker.observe(event);
        self.count(event);
        assert!(
            self.outbox.is_empty() && self.conn.in_flight.is_empty()
                || self.conn.phase == Phase::Down,
            "requests of the expired session left"
        );
        self.session_id = 0;
        self.password = Bytes::from_static(&[0; 16]);
        self.seen_rw = false;
        self.conn = Connection::default();
        self.settle(Expect::default());
        assert_eq!(self.checker.state, SessionState::Connecting);
        assert_eq!(self.session.session_id(), 0);
        self.report.renewals += 1;
    }

    // ----- caller inputs -----

    pub(super) fn submit(&mut self, template: u8, flags: u8, extra: u8) {
        let path = PATHS[usize::from((flags >> 1) & 3)];
        let template = op_template(template, path, flags & 1 != 0, extra);
        let deadline =
            (flags & 8 != 0).then(|| self.now + ms(DEADLINES_MS[usize::from((flags >> 4) & 7)]));
        let open = self.is_open();
        match self.session.submit(template.op, deadline) {
            Ok(id) => {
                assert!(open, "submit accepted {id:?} on a session that is over");
                self.checker.handed_out(
                    id,
                    CallerKind::Op {
                        op_code: template.op_code,
                        watch: template.watch,
                        removes: template.removes,
                    },
                    deadline,
                );
                self.paths.insert(id, path.to_owned());
                self.outbox.push_back(Queued::Caller(id));
                self.report.submitted += 1;
            }
            Err(error) => {
                if open {
                    // One persistent kind on a path watched with the other (ZOOKEEPER-4466).
                    let other_kind = match template.watch.as_ref().map(|(kind, _)| *kind) {
                        Some(WatchKind::Persistent) => Some(WatchKind::PersistentRecursive),
                        Some(WatchKind::PersistentRecursive) => Some(WatchKind::Persistent),
                        _ => None,
                    };
                    let mixed = other_kind
                        .is_some_and(|other| self.checker.watch_held_or_asked(path, &[other]));
                    assert!(
                        template.may_be_refused || mixed,
                        "submit refused a valid request: {error:?}"
                    );
                    assert!(
                        matches!(
                            error,
                            Error::InvalidPath(_)
                                | Error::InvalidArgument(_)
                                | Error::PacketTooLarge { .. }
                        ),
                        "submit refused with {error:?}"
                    );
                } else {
                    self.assert_terminal_error(&error);
                }
            }
        }
    }

    /// `error` is the one a call on an ended (or closing) session must get.
    pub(super) fn assert_terminal_error(&self, error: &Error) {
        let fits = match self.checker.state {
            SessionState::Expired => *error == Error::SessionExpired,
            SessionState::AuthFailed => matches!(error, Error::AuthFailed(_)),
            // A session that gave up connecting answers with why it did.
            SessionState::Closed if self.session.gave_up_with().is_some() => {
                Some(error) == self.session.gave_up_with()
            }
            _ => *error == Error::Closed,
        };
        assert!(
            fits,
            "a call on a session that is over ({:?}): {error:?}",
            self.checker.state
        );
    }

    pub(super) fn add_auth(&mut self, which: u8) {
        let (scheme, auth) = match which % 3 {
            0 => ("digest", Bytes::from_static(b"user:password")),
            1 => ("ip", Bytes::from_static(b"127.0.0.1")),
            _ => (
                "x-unknown",
                Bytes::from(vec![which; usize::from(which % 8)]),
            ),
        };
        let open = self.is_open();
        match self.session.add_auth(scheme.into(), auth) {
            Ok(id) => {
                assert!(open, "add_auth accepted {id:?} on a session that is over");
                self.checker.handed_out(id, CallerKind::Auth, None);
                let index = self.credentials;
                self.credentials += 1;
                if self.conn.phase == Phase::Up {
                    self.conn.auth_queue.push_back(Some(id));
                    self.conn.auth_queued_total += 1;
                } else {
                    self.auth_waiting.push((index, id));
                }
            }
            Err(error) => {
                assert!(!open, "add_auth refused on an open session: {error:?}");
                self.assert_terminal_error(&error);
            }
        }
    }

    pub(super) fn close(&mut self) {
        let first = self.is_open();
        let id = self.session.close(self.now);
        self.checker
            .handed_out(id, CallerKind::Close { first }, None);
        if first {
            self.closing = Some(id);
            if self.conn.phase == Phase::Up {
                self.outbox.push_back(Queued::Caller(id));
            }
        }
    }

    pub(super) fn forget_watch(&mut self, which: u8, expect: &mut Expect) {
        let armed: Vec<RequestId> = self.checker.armed().map(|(id, _, _)| id).collect();
        if armed.is_empty() {
            // Any id (known or not, with or without a live watch): nothing to deliver.
            self.session.forget_watch(RequestId(u64::from(which)));
            expect.silent = true;
            return;
        }
        let id = armed[usize::from(which) % armed.len()];
        let watch = self.watch_of(Some(id));
        self.session.forget_watch(id);
        self.checker.caller_mut(id).watch = WatchStatus::Done;
        expect.silent = true;
        // The last watcher of a persistent watch on its path: the session removes it on the
        // server (removeWatches ANY, after everything queued), unless a watch is armed, in
        // flight or queued on that path, or the session is closing or over.
        if let Some((kind, path)) = watch
            && kind.is_persistent()
            && self.is_open()
            && !self.checker.armed().any(|(_, _, armed)| armed == path)
            && !self.watch_requested_on(&path)
        {
            self.outbox.push_back(Queued::Removal(path));
        }
    }

    /// Whether a caller's request that arms a watch on `path` is queued or in flight (and
    /// still has its caller: the reply of a request that timed out arms nothing).
    pub(super) fn watch_requested_on(&self, path: &str) -> bool {
        let on_path = |id: RequestId| {
            !self.checker.is_resolved(id) && self.watch_of(Some(id)).is_some_and(|(_, p)| p == path)
        };
        let in_flight = self.conn.phase == Phase::Up
            && self
                .conn
                .in_flight
                .iter()
                .filter_map(|sent| sent.id)
                .any(on_path);
        let queued = self.outbox.iter().any(|queued| match queued {
            Queued::Caller(id) => on_path(*id),
            Queued::Removal(_) => false,
        });
        in_flight || queued
    }

    // ----- connection inputs -----

    pub(super) fn dial(&mut self, expect: &mut Expect) {
        let wanted = self.session.wants_connection();
        match self.session.poll_connect(self.now) {
            Some((index, host)) => {
                assert!(
                    wanted,
                    "poll_connect handed out a host while no connection is wanted"
                );
                assert_eq!(self.conn.phase, Phase::Down, "poll_connect while connected");
                assert_eq!(
                    self.session.hosts().get(index),
                    Some(&host),
                    "poll_connect's index and host disagree"
                );
                assert!(
                    self.session.is_dialing(),
                    "dialing, but is_dialing is false"
                );
                self.conn.phase = Phase::Dialing;
            }
            None => assert!(
                !wanted || self.conn.phase == Phase::Down,
                "wants a connection while connected"
            ),
        }
        expect.silent = true;
    }

    pub(super) fn connected(&mut self, expect: &mut Expect) {
        let taken = self.session.is_dialing() || self.session.wants_connection();
        self.session.handle_connected(self.now);
        if !taken {
            expect.silent = true;
            return;
        }
        self.conn = Connection {
            phase: Phase::Handshaking,
            ..Connection::default()
        };
        let Some(frame) = self.session.poll_transmit(self.now) else {
            panic!("no ConnectRequest after handle_connected");
        };
        self.report.frames_sent += 1;
        let request = decode_exact::<ConnectRequest>(frame)
            .unwrap_or_else(|e| panic!("the first frame is not a ConnectRequest: {e}"));
        let expected = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            time_out: i32::try_from(self.config.session_timeout.as_millis()).unwrap_or(i32::MAX),
            session_id: if self.seen_rw { self.session_id } else { 0 },
            passwd: Some(self.password.clone()),
            read_only: self.config.read_only,
        };
        assert_eq!(request, expected, "the ConnectRequest");
        assert!(
            self.session.poll_transmit(self.now).is_none(),
            "a frame after the ConnectRequest before the handshake"
        );
    }

    pub(super) fn connect_failed(&mut self, which: u8, expect: &mut Expect) {
        let failure = match which % 4 {
            0 => ConnectFailure::Io {
                kind: std::io::ErrorKind::ConnectionRefused,
                message: "refused".into(),
            },
            1 => ConnectFailure::ConnectTimedOut(ms(u64::from(which))),
            // Permanent: on every host in a row, the session gives up before a session.
            2 => ConnectFailure::Tls(crate::TlsFailure::UntrustedCertificate {
                detail: "fuzz".into(),
            }),
            _ => ConnectFailure::Closed("reset".into()),
        };
        self.session.handle_connect_failed(self.now, failure);
        if self.conn.phase == Phase::Dialing {
            self.conn.phase = Phase::Down;
        } else {
            expect.silent = true;
        }
    }

    pub(super) fn disconnect(&mut self, which: u8) {
        let cause = if which & 1 == 0 {
            Error::ConnectionLoss
        } else {
            Error::Protocol(ProtocolError::Frame("negative length".into()))
        };
        self.session.handle_disconnected(self.now, cause);
        self.connection_ended();
    }

    pub(super) fn reconnect_to(&mut self, which: u8, expect: &mut Expect) {
        let hosts = self.session.hosts().len();
        self.session
            .reconnect_to(self.now, usize::from(which) % hosts);
        if self.conn.phase == Phase::Up {
            expect.drop = Some(true);
        } else {
            expect.silent = true;
        }
    }

    /// The driver's part of the search for a read/write server: take the probe due, and report
    /// the outcome of the one out. A probe is handed out only while read-only on a live
    /// connection and not closing, never to the current host; a read/write answer to a probe
    /// still wanted moves the session (the connection is dropped).
    pub(super) fn probe(&mut self, outcome: u8, expect: &mut Expect) {
        let searching = self.checker.state == SessionState::ConnectedReadOnly
            && self.conn.phase == Phase::Up
            && self.closing.is_none();
        if let Some(probe) = self.session.poll_probe(self.now) {
            assert!(
                searching,
                "a probe handed out while not searching: {probe:?}"
            );
            let current = self
                .session
                .current_host()
                .map(|i| &self.session.hosts()[i]);
            assert_ne!(current, Some(&probe.host), "the current host probed");
            self.probe = Some(probe.id);
        }
        expect.silent = true;
        let Some(id) = self.probe else {
            return;
        };
        let wanted = self.session.is_probing(id);
        assert!(!wanted || searching, "a probe wanted while not searching");
        let outcome = match outcome % 4 {
            0 => ProbeOutcome::ReadWrite,
            1 => ProbeOutcome::NotReadWrite,
            2 => ProbeOutcome::Failed("refused".into()),
            _ => return,
        };
        if wanted && outcome == ProbeOutcome::ReadWrite {
            expect.silent = false;
            expect.drop = Some(true);
        }
        self.session.handle_probe_done(self.now, id, outcome);
        self.probe = None;
    }

    pub(super) fn oversized(&mut self, which: u8, expect: &mut Expect) {
        let head = self.conn.in_flight.front().cloned();
        let xid = match which % 3 {
            0 => None,
            1 => head.as_ref().map(|sent| sent.xid),
            _ => Some(i32::from(which)),
        };
        let len = self.config.max_frame_len + 1 + usize::from(which);
        if self.conn.phase == Phase::Up
            && let Some(head) = head
            && Some(head.xid) == xid
            && head.op_code != OpCode::CLOSE_SESSION
        {
            self.conn.in_flight.pop_front();
            if let Some(id) = head.id.filter(|&id| !self.checker.is_resolved(id)) {
                self.checker.step.too_large = Some(id);
                let max = self.config.max_frame_len;
                expect.reply = Some((id, Err(Error::ReplyTooLarge { len, max }), false));
            }
        }
        self.session.handle_oversized_frame(self.now, len, xid);
        self.connection_ended();
    }

    /// The driver saw the connection end (the session was told, and says nothing).
    pub(super) fn connection_ended(&mut self) {
        if self.conn.phase != Phase::Down {
            self.conn.phase = Phase::Down;
        }
    }
}
