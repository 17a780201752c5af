//! What the server sends on an established connection: replies matched to the oldest request
//! in flight, pings, auth and SetWatches answers, and watch notifications.

use std::time::Instant;

use bytes::Bytes;
use jute::{
    Decode, ErrorCode, EventType, KeeperState, MultiResponse, MultiResult, OpCode, Reader,
    ReplyHeader, Response, ServerMessage,
};

use super::request::AfterReply;
use super::watch::Held;
use super::{Pending, Session, SessionEvent, SessionState, WatchKind, WatchedEvent};
use crate::error::{Error, ProtocolError};
use jute::codes::xid as reserved;

impl Session {
    /// One frame on an established connection: a reply, a ping, auth or SetWatches answer, or
    /// a notification. `Err` when the stream can no longer be trusted (the connection is then
    /// dropped); a reply whose body alone does not decode fails only its call.
    pub(super) fn handle_message(&mut self, frame: Bytes) -> Result<(), ProtocolError> {
        let xid = match frame.get(..4) {
            Some(&[a, b, c, d]) => i32::from_be_bytes([a, b, c, d]),
            _ => {
                // Too short for a header: let the decoder name the problem.
                ServerMessage::decode(frame, |_| OpCode::PING)?;
                return Err(ProtocolError::UnexpectedResponse(
                    "frame shorter than a header",
                ));
            }
        };
        match xid {
            reserved::NOTIFICATION => {
                // Decoded as a view: the path is borrowed from the frame, not copied.
                let (_, event) = ServerMessage::decode_notification(&frame)?;
                self.handle_notification(event);
                Ok(())
            }
            reserved::PING => {
                ServerMessage::decode(frame, |_| OpCode::PING)?;
                if let Some(sent) = self.pings_in_flight.pop_front() {
                    self.answered(sent);
                }
                Ok(())
            }
            reserved::AUTH => {
                // Decoded before its waiter is taken: a reply that does not decode drops the
                // connection, which answers the waiters still queued (this one included).
                let ServerMessage::Reply { header, .. } =
                    ServerMessage::decode(frame, |_| OpCode::AUTH)?
                else {
                    return Err(ProtocolError::UnexpectedResponse("auth"));
                };
                let waiter = self
                    .auth_pending
                    .pop_front()
                    .ok_or(ProtocolError::UnknownXid(xid))?;
                if header.err == ErrorCode::AUTH_FAILED {
                    let failure = crate::AuthFailure::add_auth_refused();
                    self.auth_failure = Some(failure.clone());
                    if let Some(id) = waiter {
                        self.reply(id, Err(Error::AuthFailed(failure.clone())), false);
                    }
                    self.terminate(SessionState::AuthFailed, Error::AuthFailed(failure));
                } else if let Some(id) = waiter {
                    let result = match Error::from_code(header.err) {
                        None => Ok(Response::Empty),
                        Some(error) => Err(error),
                    };
                    self.reply(id, result, false);
                }
                Ok(())
            }
            _ => {
                let head = self.pending.front().ok_or(ProtocolError::UnknownXid(xid))?;
                let head_xid = head.xid;
                let op_code = head.op_code;
                let mut reader = Reader::new(frame);
                let header = ReplyHeader::decode(&mut reader)?;
                if head_xid != xid {
                    return self
                        .overtaking_refusal(&header)
                        .ok_or(ProtocolError::XidOutOfOrder {
                            expected: head_xid,
                            got: xid,
                        });
                }
                let Some(pending) = self.pending.pop_front() else {
                    return Err(ProtocolError::UnknownXid(xid));
                };
                if header.zxid > 0 {
                    self.last_zxid = header.zxid;
                }
                self.answered(pending.sent_at);
                if header.err != ErrorCode::OK {
                    // No body then; whatever bytes follow are ignored, as Java does.
                    self.complete(pending, header.err, None);
                    return Ok(());
                }
                match Response::decode(op_code, reader.into_rest()) {
                    Ok(body) => self.complete(pending, header.err, Some(body)),
                    Err(error) => {
                        // The frame boundary is intact: only this call failed. It fails with
                        // a non-retryable error (the same reply would come again), and the
                        // connection and the other requests are not touched.
                        tracing::warn!(op = %op_code, %error, "undecodable reply body");
                        self.failed_reply(pending, ProtocolError::Decode(error));
                    }
                }
                Ok(())
            }
        }
    }

    /// A reply that overtook older requests, accepted in the one case the server does it on
    /// purpose: a read-only server refuses a write with `NotReadOnly` as soon as it sees it
    /// (its first request processor answers at once), ahead of the reads queued before it.
    /// The Java client drops the connection there ("Xid out of order"); the order of the
    /// other replies is still checked. `None` for any other reply out of order.
    fn overtaking_refusal(&mut self, header: &ReplyHeader) -> Option<()> {
        if self.state != SessionState::ConnectedReadOnly || header.err != ErrorCode::NOT_READ_ONLY {
            return None;
        }
        let index = self.pending.iter().position(|p| p.xid == header.xid)?;
        let pending = self.pending.remove(index)?;
        if header.zxid > 0 {
            self.last_zxid = header.zxid;
        }
        self.answered(pending.sent_at);
        self.complete(pending, header.err, None);
        Some(())
    }

    /// The server answered something we sent at `sent`.
    pub(super) fn answered(&mut self, sent: Instant) {
        if self.last_answered_send.is_none_or(|last| sent > last) {
            self.last_answered_send = Some(sent);
        }
    }

    /// A reply whose body could not be decoded: its caller gets the error; a closeSession
    /// still closes.
    pub(super) fn failed_reply(&mut self, pending: Pending, error: ProtocolError) {
        // The header said OK: the server ran it.
        self.server_modes.apply(&pending.change);
        if let AfterReply::RemoveWatches(path, kinds) = &pending.after {
            self.report_removed(path, kinds);
        }
        if pending.op_code == OpCode::CLOSE_SESSION {
            self.finish_close();
        } else if pending.after == AfterReply::QuorumCheck {
            self.quorum_check_answered();
        } else if pending.after == AfterReply::Sasl {
            self.handle_sasl_reply(ErrorCode::OK, None);
        } else if let Some(id) = pending.id {
            self.reply(id, Err(Error::Protocol(error)), false);
        }
    }

    pub(super) fn complete(&mut self, pending: Pending, err: ErrorCode, body: Option<Response>) {
        if err == ErrorCode::SESSION_CLOSED_REQUIRE_SASL_AUTH {
            // The server serves only authenticated sessions, and closes the connection after
            // this reply. Resuming would draw the same refusal for ever: the session is over,
            // for this request's caller and for every other one (also when the refused request
            // was the client's own, say its read of the ensemble configuration).
            tracing::warn!(
                session_id = format_args!("{:#x}", self.session_id),
                "the server requires authentication (SASL) that this session does not have"
            );
            self.auth_failure = Some(crate::AuthFailure {
                reason: crate::AuthReason::RefusedByServer,
                detail: "the server requires SASL authentication (-124), which this session \
                         does not do"
                    .into(),
            });
            self.terminate(
                SessionState::AuthFailed,
                Error::SessionClosedRequireSaslAuth,
            );
            // The refused caller after the state, as every other one. A refused closeSession's
            // caller is not among them: the session is over, which is what it asked for, and
            // `terminate` answered it as it answers every closer.
            if pending.op_code != OpCode::CLOSE_SESSION
                && let Some(id) = pending.id
            {
                self.reply(id, Err(Error::SessionClosedRequireSaslAuth), false);
            }
            return;
        }
        let error = Error::from_code(err);
        if error.is_none() {
            // Whether or not a caller still waits (a timed-out one does not): the server ran it.
            self.server_modes.apply(&pending.change);
        }
        if pending.op_code == OpCode::CLOSE_SESSION {
            self.finish_close();
            return;
        }
        if pending.after == AfterReply::Sasl {
            self.handle_sasl_reply(err, body);
            return;
        }
        if pending.after == AfterReply::QuorumCheck {
            if let Some(error) = error {
                tracing::debug!(%error, "quorum check answered with an error");
            }
            self.quorum_check_answered();
            return;
        }
        // The watches the server removed are told, also when the caller of the removal is
        // gone (timed out): they would never fire again.
        if error.is_none()
            && let AfterReply::RemoveWatches(path, kinds) = &pending.after
        {
            self.report_removed(path, kinds);
        }
        let Some(id) = pending.id else {
            if let Some(error) = error {
                tracing::warn!(op = %pending.op_code, %error, "internal request failed");
            }
            return;
        };
        let mut watch_armed = false;
        if let AfterReply::Watch(path, kind) = pending.after
            && (error.is_none() || (kind == WatchKind::Exist && error == Some(Error::NoNode)))
        {
            // As the Java client files it: an exists watch on a node that is there is a data
            // watch. Set again after a reconnect as an exist watch, the server would take the
            // node for created meanwhile and fire NodeCreated at once.
            let kind = if kind == WatchKind::Exist && error.is_none() {
                WatchKind::Data
            } else {
                kind
            };
            self.watches.add(path, kind, id);
            watch_armed = true;
        }
        let result = match error {
            Some(error) => Err(error),
            None => Ok(self.strip_chroot(body.unwrap_or(Response::Empty))),
        };
        self.reply(id, result, watch_armed);
    }

    /// The server removed this session's watches of `kinds` on `path` (removeWatches OK):
    /// each local watcher of them is removed and told.
    fn report_removed(&mut self, path: &str, kinds: &[WatchKind]) {
        let client_path = self.config.chroot.strip(path).into_owned();
        for (watcher, kind) in self.watches.remove(path, kinds) {
            let event_type = match kind {
                WatchKind::Data | WatchKind::Exist => EventType::DATA_WATCH_REMOVED,
                WatchKind::Child => EventType::CHILD_WATCH_REMOVED,
                WatchKind::Persistent | WatchKind::PersistentRecursive => {
                    EventType::PERSISTENT_WATCH_REMOVED
                }
            };
            self.events.push_back(SessionEvent::Watch {
                id: watcher,
                event: WatchedEvent {
                    event_type,
                    state: KeeperState::SYNC_CONNECTED,
                    path: client_path.clone(),
                },
                last: true,
            });
        }
    }

    pub(super) fn strip_chroot(&self, response: Response) -> Response {
        let chroot = &self.config.chroot;
        if chroot.is_none() {
            return response;
        }
        let strip = |path: Option<String>| path.map(|p| chroot.strip(&p).into_owned());
        match response {
            Response::Create(mut r) => {
                r.path = strip(r.path);
                Response::Create(r)
            }
            Response::Create2(mut r) => {
                r.path = strip(r.path);
                Response::Create2(r)
            }
            Response::Sync(mut r) => {
                r.path = strip(r.path);
                Response::Sync(r)
            }
            Response::GetEphemerals(mut r) => {
                let root = chroot.as_str().unwrap_or("");
                r.ephemerals = r.ephemerals.map(|paths| {
                    paths
                        .iter_nullable()
                        .flatten()
                        .filter(|p| *p == root || p.starts_with(&format!("{root}/")))
                        .map(|p| chroot.strip(p))
                        .collect()
                });
                Response::GetEphemerals(r)
            }
            Response::Multi(MultiResponse { results }) => Response::Multi(MultiResponse {
                results: results
                    .into_iter()
                    .map(|result| match result {
                        MultiResult::Create(mut r) => {
                            r.path = strip(r.path);
                            MultiResult::Create(r)
                        }
                        MultiResult::Create2(mut r) => {
                            r.path = strip(r.path);
                            MultiResult::Create2(r)
                        }
                        other => other,
                    })
                    .collect(),
            }),
            other => other,
        }
    }

    /// A watch notification, borrowed from its frame: the server path is not copied, the
    /// client path is made once (and cloned into each event it fires).
    pub(super) fn handle_notification(&mut self, event: jute::WatcherEventRef<'_>) {
        let server_path: &str = event.path.as_deref().unwrap_or_default();
        let path = self.config.chroot.strip(server_path).into_owned();
        for fired in self.watches.fire(event.event_type, server_path) {
            self.events.push_back(SessionEvent::Watch {
                id: fired.id,
                event: WatchedEvent {
                    event_type: event.event_type,
                    state: event.state,
                    path: path.clone(),
                },
                last: fired.last,
            });
        }
        // A child created or deleted under a path held recursively: the server sends no
        // child-list change there (see `modes`), so its one-shot child-list watchers fire on
        // this event, after the event's own watchers, as the server orders the two.
        if matches!(
            event.event_type,
            EventType::NODE_CREATED | EventType::NODE_DELETED
        ) && let Some(parent) = parent_of(server_path)
            && self.server_modes.get(parent).children == Some(Held::Recursive)
        {
            let parent_path = self.config.chroot.strip(parent).into_owned();
            for id in self.watches.fire_children(parent) {
                self.events.push_back(SessionEvent::Watch {
                    id,
                    event: WatchedEvent {
                        event_type: EventType::NODE_CHILDREN_CHANGED,
                        state: event.state,
                        path: parent_path.clone(),
                    },
                    last: true,
                });
            }
        }
    }
}

/// The parent of a server path (`None` for the root and for what is not a path).
fn parent_of(path: &str) -> Option<&str> {
    match path.rfind('/')? {
        0 if path.len() > 1 => Some("/"),
        0 => None,
        at => Some(&path[..at]),
    }
}
