//! The checker: what each caller may and must get, step by step, and the allowed state
//! transitions.

use super::*;

// ----- the checker -----

/// Who asked for a request id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CallerKind {
    /// `submit`.
    Op {
        op_code: OpCode,
        watch: Option<(WatchKind, String)>,
        removes: Option<(String, Vec<WatchKind>)>,
    },
    /// `add_auth`.
    Auth,
    /// `close`; `first` for the call that began closing the session.
    Close { first: bool },
}

/// Where the watch of a request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WatchStatus {
    /// Not armed (yet, or ever).
    NotArmed,
    /// Armed, and may fire.
    Armed,
    /// Fired (one-shot), removed, forgotten or lost: nothing may come for it any more.
    Done,
}

#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub(super) kind: CallerKind,
    pub(super) deadline: Option<Instant>,
    pub(super) resolved: bool,
    pub(super) watch: WatchStatus,
}

/// What the events of one step may and must be, set by the harness before the step.
#[derive(Debug, Default)]
pub(super) struct Step {
    /// The request a frame delivered in this step answers: it may get any result that fits.
    pub(super) answered: Option<RequestId>,
    /// The removeWatches, its caller timed out, whose reply a frame delivered in this step:
    /// it may still tell the watchers it removed.
    pub(super) removing: Option<RequestId>,
    /// The add_auth request an auth reply delivered in this step answers.
    pub(super) answered_auth: Option<RequestId>,
    /// The request an oversized frame in this step was the reply of.
    pub(super) too_large: Option<RequestId>,
    /// The requests a connection loss in this step may fail (in flight, or auth sent).
    pub(super) in_flight: BTreeSet<RequestId>,
    /// The notification delivered in this step, as callers must see it.
    pub(super) notification: Option<WatchedEvent>,
    /// The watches that notification fires.
    pub(super) fires: BTreeSet<RequestId>,
    /// Collected: the replies, watch events, lost watches, states and drops of the step.
    pub(super) replies: Vec<(RequestId, Result<Response, Error>, bool)>,
    pub(super) fired: BTreeSet<RequestId>,
    pub(super) removed: BTreeMap<RequestId, EventType>,
    /// The persistent watchers told of a connection lost or ready, by marker state.
    pub(super) markers: BTreeMap<i32, BTreeSet<RequestId>>,
    pub(super) lost: BTreeSet<RequestId>,
    pub(super) states: Vec<SessionState>,
    pub(super) dropped: bool,
    pub(super) events: usize,
}

/// Checks every event the session emits against what was asked of it: ids, results,
/// watches and states. The harness feeds it; it panics on a violation.
#[derive(Debug)]
pub(super) struct Checker {
    pub(super) callers: BTreeMap<RequestId, Caller>,
    pub(super) state: SessionState,
    /// The configuration renews expired sessions.
    pub(super) renews: bool,
    pub(super) ever_connected: bool,
    pub(super) gave_up: bool,
    pub(super) now: Instant,
    pub(super) step: Step,
}

impl Checker {
    pub(super) fn new(now: Instant, renews: bool) -> Self {
        Self {
            callers: BTreeMap::new(),
            state: SessionState::Connecting,
            renews,
            ever_connected: false,
            gave_up: false,
            now,
            step: Step::default(),
        }
    }

    /// Starts a step at `now`; `in_flight`: the requests a connection loss may fail.
    pub(super) fn begin(&mut self, now: Instant, in_flight: BTreeSet<RequestId>) {
        self.now = now;
        self.step = Step {
            in_flight,
            ..Step::default()
        };
    }

    /// A new id was handed out.
    pub(super) fn handed_out(
        &mut self,
        id: RequestId,
        kind: CallerKind,
        deadline: Option<Instant>,
    ) {
        if let Some((&last, _)) = self.callers.last_key_value() {
            assert!(id > last, "request id {id:?} handed out after {last:?}");
        }
        self.callers.insert(
            id,
            Caller {
                kind,
                deadline,
                resolved: false,
                watch: WatchStatus::NotArmed,
            },
        );
    }

    pub(super) fn caller(&self, id: RequestId) -> &Caller {
        self.callers
            .get(&id)
            .unwrap_or_else(|| panic!("event for {id:?}, an id never handed out"))
    }

    pub(super) fn caller_mut(&mut self, id: RequestId) -> &mut Caller {
        self.callers
            .get_mut(&id)
            .unwrap_or_else(|| panic!("event for {id:?}, an id never handed out"))
    }

    pub(super) fn is_resolved(&self, id: RequestId) -> bool {
        self.callers.get(&id).is_some_and(|caller| caller.resolved)
    }

    /// The live watches: id, kind and client path.
    pub(super) fn armed(&self) -> impl Iterator<Item = (RequestId, WatchKind, &str)> {
        self.callers
            .iter()
            .filter_map(|(&id, caller)| match &caller.kind {
                CallerKind::Op {
                    watch: Some((kind, path)),
                    ..
                } if caller.watch == WatchStatus::Armed => Some((id, *kind, path.as_str())),
                _ => None,
            })
    }

    /// Whether a watch of a `kinds` kind on `path` (a client path) is armed or asked for
    /// (its request not answered yet, or answered without arming it): the session may count
    /// it as held by the server.
    pub(super) fn watch_held_or_asked(&self, path: &str, kinds: &[WatchKind]) -> bool {
        self.callers.values().any(|caller| match &caller.kind {
            CallerKind::Op {
                watch: Some((kind, watched)),
                ..
            } => watched == path && kinds.contains(kind) && caller.watch != WatchStatus::Done,
            _ => false,
        })
    }

    /// Whether a watch of a `kinds` kind on `path` (a client path) was ever asked for: the
    /// server may still hold its mode after its watcher is gone (a forgotten watcher's path
    /// is only cleared on the server once no watcher is left on it).
    pub(super) fn watch_ever_asked(&self, path: &str, kinds: &[WatchKind]) -> bool {
        self.callers.values().any(|caller| {
            matches!(
                &caller.kind,
                CallerKind::Op { watch: Some((kind, watched)), .. }
                    if watched == path && kinds.contains(kind)
            )
        })
    }

    /// Whether `event` is a child-list change that the step's notification (a child created
    /// or deleted) makes of its parent, a path this session has asked to watch recursively
    /// at some point (the server may hold it so after the watcher is gone).
    fn child_list_change_of_a_recursive_path(&self, event: &WatchedEvent) -> bool {
        let Some(notification) = &self.step.notification else {
            return false;
        };
        let child_event = matches!(
            notification.event_type,
            EventType::NODE_CREATED | EventType::NODE_DELETED
        );
        let parent = match notification.path.rfind('/') {
            Some(0) if notification.path.len() > 1 => "/",
            Some(at) if at > 0 => &notification.path[..at],
            _ => return false,
        };
        child_event
            && event.event_type == EventType::NODE_CHILDREN_CHANGED
            && event.path == parent
            && self.watch_ever_asked(parent, &[WatchKind::PersistentRecursive])
    }

    /// Whether an error that no server frame of this step asked for fits the situation.
    pub(super) fn unasked_error_fits(&self, id: RequestId, error: &Error) -> bool {
        match error {
            Error::ConnectionLoss => self.step.in_flight.contains(&id),
            Error::RequestTimeout => self
                .caller(id)
                .deadline
                .is_some_and(|deadline| deadline <= self.now),
            Error::SessionExpired => self.state == SessionState::Expired,
            Error::AuthFailed(_) | Error::SessionClosedRequireSaslAuth => {
                self.state == SessionState::AuthFailed
            }
            Error::Closed => self.state == SessionState::Closed,
            Error::NoServerReachable { .. } => self.state == SessionState::Closed && self.gave_up,
            Error::ReplyTooLarge { .. } => self.step.too_large == Some(id),
            _ => false,
        }
    }

    /// Checks one event and records it in the step.
    pub(super) fn observe(&mut self, event: &SessionEvent) {
        self.step.events += 1;
        match event {
            SessionEvent::Reply {
                id,
                result,
                watch_armed,
            } => self.reply(*id, result, *watch_armed),
            SessionEvent::Watch { id, event, last } => self.watch_event(*id, event, *last),
            SessionEvent::WatchLost { id, error } => {
                let caller = self.caller_mut(*id);
                assert_eq!(
                    caller.watch,
                    WatchStatus::Armed,
                    "WatchLost for {id:?}, whose watch is not live"
                );
                caller.watch = WatchStatus::Done;
                let fits = match error {
                    Error::SessionExpired => self.state == SessionState::Expired,
                    Error::AuthFailed(_) | Error::SessionClosedRequireSaslAuth => {
                        self.state == SessionState::AuthFailed
                    }
                    Error::Closed | Error::NoServerReachable { .. } => {
                        self.state == SessionState::Closed
                    }
                    _ => false,
                };
                assert!(
                    fits,
                    "WatchLost({error:?}) for {id:?} in state {:?}",
                    self.state
                );
                self.step.lost.insert(*id);
            }
            SessionEvent::State(state) => {
                assert!(
                    transition_allowed(self.state, *state, self.renews),
                    "state transition {:?} -> {state:?}",
                    self.state
                );
                self.state = *state;
                self.ever_connected |= state.is_connected();
                self.step.states.push(*state);
            }
            SessionEvent::DropConnection(_) => self.step.dropped = true,
            SessionEvent::GaveUp(error) => {
                assert!(
                    !self.ever_connected,
                    "gave up after a session was established"
                );
                assert!(
                    matches!(error, Error::NoServerReachable { .. }),
                    "gave up with {error:?}"
                );
                assert!(
                    !self.state.is_terminal(),
                    "gave up in state {:?}",
                    self.state
                );
                self.gave_up = true;
            }
        }
    }

    /// A persistent watcher told that the connection was lost or is ready: it comes right
    /// after the state it reports, once per watcher and change.
    fn connection_marker(&mut self, id: RequestId, kind: WatchKind, event: &WatchedEvent) {
        assert!(
            kind.is_persistent(),
            "connection marker {event:?} for the one-shot {id:?}"
        );
        // A lost connection is told in `Disconnected`, or in `Connected` during a move the
        // client makes itself (the state stays for the move's grace); which connections owe
        // markers is checked by the step.
        let expected: &[KeeperState] = match self.state {
            SessionState::Disconnected => &[KeeperState::DISCONNECTED],
            SessionState::Connected => &[KeeperState::SYNC_CONNECTED, KeeperState::DISCONNECTED],
            SessionState::ConnectedReadOnly => &[KeeperState::CONNECTED_READ_ONLY],
            other => panic!("connection marker {event:?} for {id:?} in state {other:?}"),
        };
        assert!(
            expected.contains(&event.state),
            "connection marker {:?} for {id:?} in state {:?}",
            event.state,
            self.state
        );
        assert!(event.path.is_empty(), "connection marker with a path");
        assert!(
            self.step
                .markers
                .entry(event.state.0)
                .or_default()
                .insert(id),
            "{id:?} told twice of {:?}",
            event.state
        );
    }

    /// Every persistent watch still armed (connection markers are owed to these).
    pub(super) fn armed_persistent(&self) -> BTreeSet<RequestId> {
        self.armed()
            .filter(|(_, kind, _)| kind.is_persistent())
            .map(|(id, _, _)| id)
            .collect()
    }

    pub(super) fn reply(
        &mut self,
        id: RequestId,
        result: &Result<Response, Error>,
        watch_armed: bool,
    ) {
        let now = self.now;
        let state = self.state;
        let answered = self.step.answered == Some(id);
        let answered_auth = self.step.answered_auth == Some(id);
        let fits_unasked = match result {
            Err(error) => self.unasked_error_fits(id, error),
            Ok(_) => false,
        };
        let caller = self.caller_mut(id);
        assert!(!caller.resolved, "{id:?} resolved twice: {result:?}");
        caller.resolved = true;
        match &caller.kind {
            CallerKind::Close { .. } => {
                assert_eq!(result, &Ok(Response::Empty), "close {id:?} answered");
                assert!(!watch_armed, "close {id:?} armed a watch");
                assert!(
                    state.is_terminal(),
                    "close {id:?} answered in state {state:?}"
                );
            }
            CallerKind::Auth => {
                assert!(!watch_armed, "add_auth {id:?} armed a watch");
                match result {
                    Ok(Response::Empty) => {
                        assert!(answered_auth, "add_auth {id:?} succeeded unanswered");
                    }
                    Ok(other) => panic!("add_auth {id:?} answered with {other:?}"),
                    Err(error) => assert!(
                        answered_auth || fits_unasked,
                        "add_auth {id:?} failed with {error:?} (answered: {answered_auth}, \
                         state {state:?})"
                    ),
                }
            }
            CallerKind::Op { op_code, watch, .. } => {
                match result {
                    Ok(response) => {
                        assert!(
                            answered,
                            "{id:?} ({op_code}) got a reply that was not its own: {response:?}"
                        );
                        assert!(
                            response_fits(*op_code, response),
                            "{id:?} ({op_code}) got a response of another op: {response:?}"
                        );
                    }
                    Err(error) => assert!(
                        answered || fits_unasked,
                        "{id:?} ({op_code}) failed with {error:?} (state {state:?}, now {:?} \
                         after its deadline {:?})",
                        now,
                        caller.deadline
                    ),
                }
                // The watch is armed exactly on success (for exists also on NoNode).
                let should_arm = match (watch, result) {
                    (Some(_), Ok(_)) => true,
                    (Some((WatchKind::Exist, _)), Err(Error::NoNode)) => answered,
                    _ => false,
                };
                assert_eq!(
                    watch_armed, should_arm,
                    "{id:?} ({op_code}) watch_armed for {result:?}"
                );
                if watch_armed {
                    caller.watch = WatchStatus::Armed;
                }
            }
        }
        if watch_armed && result.is_ok() {
            // An exists watch on a node that is there is a data watch (as Java files it).
            if let CallerKind::Op {
                watch: Some((kind, _)),
                ..
            } = &mut self.caller_mut(id).kind
                && *kind == WatchKind::Exist
            {
                *kind = WatchKind::Data;
            }
        }
        self.step.replies.push((id, result.clone(), watch_armed));
    }

    pub(super) fn watch_event(&mut self, id: RequestId, event: &WatchedEvent, last: bool) {
        let caller = self.caller(id);
        assert_eq!(
            caller.watch,
            WatchStatus::Armed,
            "watch event {event:?} for {id:?}, whose watch is not live"
        );
        let Some((kind, path)) = (match &caller.kind {
            CallerKind::Op { watch, .. } => watch.clone(),
            _ => None,
        }) else {
            panic!("watch event for {id:?}, which set no watch");
        };
        if event.event_type == EventType::NONE {
            assert!(!last, "connection marker {event:?} ends the watch {id:?}");
            self.connection_marker(id, kind, event);
            return;
        }
        let removal = matches!(
            event.event_type,
            EventType::DATA_WATCH_REMOVED
                | EventType::CHILD_WATCH_REMOVED
                | EventType::PERSISTENT_WATCH_REMOVED
        );
        let finished = if removal && self.step.notification.is_none() {
            let answered_removes = self
                .step
                .answered
                .or(self.step.removing)
                .and_then(|answered| self.callers.get(&answered))
                .and_then(|caller| match &caller.kind {
                    CallerKind::Op { removes, .. } => removes.clone(),
                    _ => None,
                });
            let Some((removed_path, kinds)) = answered_removes else {
                panic!("watch {id:?} removed ({event:?}) without a removeWatches reply");
            };
            assert!(
                removed_path == path && kinds.contains(&kind),
                "watch {id:?} ({kind:?} on {path}) removed by removeWatches {kinds:?} on \
                 {removed_path}"
            );
            assert_eq!(event.event_type, removal_event(kind), "removal of {id:?}");
            assert_eq!(event.path, path, "removal of {id:?}");
            self.step.removed.insert(id, event.event_type);
            true
        } else if kind == WatchKind::Child && self.child_list_change_of_a_recursive_path(event) {
            // The session fires it itself (`session::modes`): the server sends no child-list
            // change for a path it holds recursively.
            assert_eq!(event.path, path, "child-list change for {id:?}");
            assert!(
                self.step.fired.insert(id),
                "one notification fired {id:?} twice"
            );
            // Allowed, so counted as expected too.
            self.step.fires.insert(id);
            true
        } else {
            let Some(expected) = &self.step.notification else {
                panic!("watch event {event:?} for {id:?} with no notification");
            };
            assert_eq!(event, expected, "watch event for {id:?}");
            assert!(
                self.step.fires.contains(&id),
                "notification {event:?} fired {id:?} ({kind:?} on {path})"
            );
            assert!(
                self.step.fired.insert(id),
                "one notification fired {id:?} twice"
            );
            !kind.is_persistent()
        };
        assert_eq!(
            last, finished,
            "watch event {event:?} for {id:?} ({kind:?}): `last` says whether it ends the watch"
        );
        if finished {
            self.caller_mut(id).watch = WatchStatus::Done;
        }
    }
}

/// Whether the session may go from `from` to `to`; `renews`: the configuration renews
/// expired sessions (the only way out of a terminal state: `Expired` to `Connecting`).
pub(super) fn transition_allowed(from: SessionState, to: SessionState, renews: bool) -> bool {
    use SessionState::*;
    if from == Expired && to == Connecting {
        return renews;
    }
    if from.is_terminal() || from == to {
        return false;
    }
    match to {
        Expired | AuthFailed | Closed => true,
        Connected | ConnectedReadOnly => matches!(from, Connecting | Disconnected),
        Disconnected => from.is_connected(),
        Connecting => false,
    }
}
