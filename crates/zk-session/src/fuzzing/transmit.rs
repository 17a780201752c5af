//! The script's part of a transmission: every frame the session hands out is decoded and
//! mirrored (which request it carries, its xid, the SetWatches it re-arms with), so that
//! each reply the script makes up reaches the request it names.

use super::*;

impl Harness {
    pub(super) fn transmit(&mut self, arg: u8) {
        let into = arg & 0x80 != 0;
        for _ in 0..=(arg & 0x0f) {
            let checks_before = self.session.quorum_checks_sent();
            let frame = if into {
                // Appended after what the buffer already holds, with its length prefix.
                let junk = usize::from(arg & 0x70) >> 4;
                let mut buf = BytesMut::from(&b"\xee\xee\xee\xee\xee\xee\xee"[..junk]);
                if !self.session.poll_transmit_into(self.now, &mut buf) {
                    assert_eq!(
                        buf.len(),
                        junk,
                        "poll_transmit_into wrote and said it did not"
                    );
                    None
                } else {
                    assert!(buf.len() >= junk + 4, "a frame without a length prefix");
                    assert!(
                        buf[..junk].iter().all(|&b| b == 0xee),
                        "poll_transmit_into overwrote the buffer"
                    );
                    let body = buf.split_off(junk + 4).freeze();
                    let prefix = [buf[junk], buf[junk + 1], buf[junk + 2], buf[junk + 3]];
                    assert_eq!(
                        usize::try_from(u32::from_be_bytes(prefix)).ok(),
                        Some(body.len()),
                        "a length prefix that is not the body's length"
                    );
                    Some(body)
                }
            } else {
                self.session.poll_transmit(self.now)
            };
            self.quorum_check_sent = self.session.quorum_checks_sent() > checks_before;
            match frame {
                Some(frame) => self.sent(frame),
                None => {
                    if self.conn.phase == Phase::Up {
                        // Nothing left to send: the control frames are all out.
                        self.check_set_watches();
                    }
                    break;
                }
            }
        }
    }

    /// Checks and records a frame the session sent.
    pub(super) fn sent(&mut self, frame: Bytes) {
        self.report.frames_sent += 1;
        assert_eq!(
            self.conn.phase,
            Phase::Up,
            "a frame sent with the connection {:?}",
            self.conn.phase
        );
        assert!(
            frame.len() <= self.config.max_frame_len,
            "a frame of {} bytes, over the limit of {}",
            frame.len(),
            self.config.max_frame_len
        );
        let header = decode_exact::<RequestHeader>(frame.slice(..8.min(frame.len())))
            .unwrap_or_else(|e| panic!("a sent frame without a request header: {e}"));
        let body = frame.slice(8..);
        match header.xid {
            reserved::PING => {
                assert_eq!(header.op_code, OpCode::PING, "xid -2 without op ping");
                assert!(body.is_empty(), "a ping with a body");
                self.conn.pings_sent += 1;
            }
            reserved::AUTH => {
                assert_eq!(header.op_code, OpCode::AUTH, "xid -4 without op auth");
                decode_exact::<AuthPacket>(body)
                    .unwrap_or_else(|e| panic!("an undecodable auth packet: {e}"));
                assert!(
                    self.conn.auth_sent_total < self.conn.auth_queued_total,
                    "more auth packets sent than queued"
                );
                self.conn.auth_sent_total += 1;
                self.conn.auth_sent += 1;
            }
            xid if xid > 0 => {
                assert!(
                    xid > self.conn.last_xid,
                    "xid {xid} sent after {} on the same connection",
                    self.conn.last_xid
                );
                assert!(self.xids_used.insert(xid), "xid {xid} reused");
                self.conn.last_xid = xid;
                if self.quorum_check_sent {
                    assert!(self.config.quorum_check, "a quorum check while it is off");
                    assert_eq!(
                        header.op_code,
                        OpCode::SYNC,
                        "a quorum check that is no sync"
                    );
                    self.conn.in_flight.push_back(Sent {
                        xid,
                        op_code: header.op_code,
                        id: None,
                        path: "/".into(),
                    });
                } else if matches!(header.op_code, OpCode::SET_WATCHES | OpCode::SET_WATCHES2) {
                    self.set_watches_sent(header.op_code, body);
                    self.conn.in_flight.push_back(Sent {
                        xid,
                        op_code: header.op_code,
                        id: None,
                        path: String::new(),
                    });
                } else {
                    self.request_sent(xid, header.op_code);
                }
            }
            xid => panic!("a frame with xid {xid} (op {})", header.op_code),
        }
    }

    pub(super) fn request_sent(&mut self, xid: i32, op_code: OpCode) {
        // Control frames (auth, SetWatches) all go before the callers' requests.
        self.check_set_watches();
        assert_eq!(
            self.conn.auth_sent_total, self.conn.auth_queued_total,
            "a request sent before the auth packets"
        );
        while self.outbox.front().is_some_and(
            |queued| matches!(queued, Queued::Caller(id) if self.checker.is_resolved(*id)),
        ) {
            self.outbox.pop_front();
        }
        let id = match self.outbox.pop_front() {
            Some(Queued::Caller(id)) => id,
            Some(Queued::Removal(path)) => {
                assert_eq!(
                    op_code,
                    OpCode::REMOVE_WATCHES,
                    "the session's own removal of {path} sent as another op"
                );
                self.conn.in_flight.push_back(Sent {
                    xid,
                    op_code,
                    id: None,
                    path,
                });
                return;
            }
            None => panic!("request xid {xid} ({op_code}) sent, but none is queued"),
        };
        let expected = match &self.checker.caller(id).kind {
            CallerKind::Op { op_code, .. } => *op_code,
            CallerKind::Close { .. } => OpCode::CLOSE_SESSION,
            CallerKind::Auth => unreachable!("add_auth requests are not queued"),
        };
        // A removal of one-shot watches on a path that a persistent watch covers goes as a
        // checkWatches (ZOOKEEPER-4466): it would remove the persistent mode on the server.
        let as_check = expected == OpCode::REMOVE_WATCHES
            && op_code == OpCode::CHECK_WATCHES
            && self.paths.get(&id).is_some_and(|path| {
                self.checker.watch_ever_asked(
                    path,
                    &[WatchKind::Persistent, WatchKind::PersistentRecursive],
                )
            });
        assert!(
            op_code == expected || as_check,
            "{id:?} sent with the wrong op code {op_code} (expected {expected})"
        );
        self.conn.in_flight.push_back(Sent {
            xid,
            op_code,
            id: Some(id),
            path: self.paths.get(&id).cloned().unwrap_or_default(),
        });
        let callers_in_flight = self
            .conn
            .in_flight
            .iter()
            .filter(|sent| sent.id.is_some())
            .count();
        assert!(
            callers_in_flight <= self.config.max_in_flight,
            "{callers_in_flight} requests in flight, max {}",
            self.config.max_in_flight
        );
    }

    pub(super) fn set_watches_sent(&mut self, op_code: OpCode, body: Bytes) {
        let lists = if op_code == OpCode::SET_WATCHES {
            let batch = decode_exact::<SetWatches>(body)
                .unwrap_or_else(|e| panic!("an undecodable SetWatches: {e}"));
            (
                batch.relative_zxid,
                [
                    batch.data_watches,
                    batch.exist_watches,
                    batch.child_watches,
                    None,
                    None,
                ],
            )
        } else {
            let batch = decode_exact::<SetWatches2>(body)
                .unwrap_or_else(|e| panic!("an undecodable SetWatches2: {e}"));
            (
                batch.relative_zxid,
                [
                    batch.data_watches,
                    batch.exist_watches,
                    batch.child_watches,
                    batch.persistent_watches,
                    batch.persistent_recursive_watches,
                ],
            )
        };
        let Some(check) = &mut self.conn.set_watches else {
            panic!("SetWatches sent after the callers' requests");
        };
        assert_eq!(lists.0, check.zxid, "SetWatches relative zxid");
        for (rank, list) in (0u8..).zip(lists.1) {
            for path in list.iter().flatten() {
                let path = path.to_owned();
                assert!(
                    check.seen.insert((rank, path.clone())),
                    "SetWatches names {path} twice"
                );
            }
        }
    }

    /// Once the control frames are out: the SetWatches named exactly the live watches.
    pub(super) fn check_set_watches(&mut self) {
        if let Some(check) = self.conn.set_watches.take() {
            assert_eq!(
                check.seen, check.expected,
                "SetWatches (kind rank, server path) after the reconnect"
            );
        }
    }
}
