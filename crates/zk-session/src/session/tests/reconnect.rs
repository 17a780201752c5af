//! Reconnection: the session resumed with its last zxid, watches re-armed before anything
//! else, queued requests kept and sent ones failed, read-only servers, a resume refused.

use super::*;

#[test]
fn reconnect_resumes_with_the_last_zxid_and_rearms_watches_first() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let data = h.submit(get_data("/d", true));
    let child = h.submit(Op::GetChildren {
        path: "/c".into(),
        watch: true,
    });
    let sent = h.sent();
    h.answer_empty_data(sent[0].0.xid, 20);
    h.server_says(frame(
        ok(sent[1].0.xid, 21),
        GetChildrenResponse {
            children: Some(Default::default()),
        },
    ));
    h.events();
    assert_eq!(h.session.watch_count(), 2);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let queued = h.submit(get_data("/later", false));
    let request = h.establish(1, 30_000);
    assert_eq!(request.last_zxid_seen, 21);
    assert_eq!(request.session_id, 1);
    let sent = h.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].0.op_code, OpCode::SET_WATCHES);
    let set: SetWatches = decode_exact(sent[0].1.clone()).expect("SetWatches");
    assert_eq!(set.relative_zxid, 21);
    assert_eq!(set.data_watches, Some(["/d"].into_iter().collect()));
    assert_eq!(set.child_watches, Some(["/c"].into_iter().collect()));
    assert_eq!(
        sent[1].0.op_code,
        OpCode::GET_DATA,
        "queued requests after the watches"
    );
    // The server fires a change made while we were away, then answers both.
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/d"));
    h.server_says(frame(ok(sent[0].0.xid, 22), ()));
    h.answer_empty_data(sent[1].0.xid, 22);
    let events = h.events();
    let watch_at = events.iter().position(|e| matches!(e, SessionEvent::Watch { id, event, .. } if *id == data && event.event_type == EventType::NODE_DATA_CHANGED));
    let reply_at = events
        .iter()
        .position(|e| matches!(e, SessionEvent::Reply { id, .. } if *id == queued));
    assert!(watch_at.is_some() && watch_at < reply_at, "{events:?}");
    assert!(matches!(replies(&events).as_slice(), [(id, Ok(_))] if *id == queued));
    assert_eq!(h.session.watch_count(), 1);
    let _ = child;
}

#[test]
fn persistent_watches_are_rearmed_with_set_watches2() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.submit(Op::AddWatch {
        path: "/p".into(),
        mode: AddWatchMode::PERSISTENT_RECURSIVE,
    });
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 5),
        ErrorResponse { err: ErrorCode::OK },
    ));
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(1, 30_000);
    let sent = h.sent();
    assert_eq!(sent[0].0.op_code, OpCode::SET_WATCHES2);
    let set: SetWatches2 = decode_exact(sent[0].1.clone()).expect("SetWatches2");
    assert_eq!(
        set.persistent_recursive_watches,
        Some(["/p"].into_iter().collect())
    );
}

#[test]
fn persistent_watchers_are_told_when_the_connection_is_lost_and_ready_again() {
    let mut h = Harness::connected();
    let persistent = persistent_watch(&mut h, "/p");
    let one_shot = h.watch_data("/d", 2);
    h.events();
    let marker = |state| SessionEvent::Watch {
        id: persistent,
        event: WatchedEvent {
            event_type: EventType::NONE,
            state,
            path: String::new(),
        },
        last: false,
    };
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert_eq!(
        h.events(),
        [
            SessionEvent::State(SessionState::Disconnected),
            marker(KeeperState::DISCONNECTED)
        ],
        "the one-shot watcher {one_shot:?} is not told"
    );
    // A failed attempt while disconnected tells nobody again.
    h.session.handle_connected(h.now);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert!(
        !h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::Watch { .. })),
        "no second marker"
    );
    h.establish(1, 30_000);
    assert_eq!(
        h.events(),
        [
            SessionEvent::State(SessionState::Connected),
            marker(KeeperState::SYNC_CONNECTED)
        ]
    );
    // Re-armed before anything else: the server's next event comes from the re-armed watch.
    assert_eq!(h.sent()[0].0.op_code, OpCode::SET_WATCHES2);
}

#[test]
fn queued_requests_survive_a_disconnect_but_sent_ones_fail() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let sent_one = h.submit(get_data("/a", false));
    h.sent();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let waiting = h.submit(get_data("/b", false));
    let events = h.events();
    assert_eq!(replies(&events), [(sent_one, Err(Error::ConnectionLoss))]);
    assert_eq!(h.session.queued(), 1);
    h.establish(1, 30_000);
    let sent = h.sent();
    h.answer_empty_data(sent[0].0.xid, 2);
    assert!(matches!(replies(&h.events()).as_slice(), [(id, Ok(_))] if *id == waiting));
}

#[test]
fn a_resumed_session_with_another_id_is_expired() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(2, 30_000);
    assert_eq!(h.session.state(), SessionState::Expired);
}

#[test]
fn a_read_only_server_gives_connected_read_only_and_no_session_to_resume() {
    let mut h = Harness::new(SessionConfig {
        read_only: true,
        ..config()
    });
    h.establish_on(9, 30_000, true);
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let request = h.connect();
    assert_eq!(
        request.session_id, 0,
        "never seen a read/write server: ask for a new session"
    );
}
