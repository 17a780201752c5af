//! Watches: events ordered before the replies that saw their change, which calls arm a watch,
//! and removing watches locally and on the server.

use super::*;

#[test]
fn a_watch_event_comes_before_the_reply_that_saw_its_change() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.watch_data("/a", 2);
    h.events();
    let write = h.submit(Op::SetData {
        path: "/a".into(),
        data: Bytes::from_static(b"v"),
        version: None,
    });
    let sent = h.sent();
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/a"));
    h.server_says(frame(
        ok(sent[0].0.xid, 3),
        SetDataResponse { stat: stat(1) },
    ));
    let events = h.events();
    // A one-shot watch's event is its last: the driver ends the watcher on it.
    assert!(matches!(&events[0], SessionEvent::Watch { id, last: true, .. } if *id == watch));
    assert!(matches!(&events[1], SessionEvent::Reply { id, .. } if *id == write));
    // One-shot: a second change does not fire it again.
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/a"));
    assert!(h.events().is_empty());
}

#[test]
fn exists_on_a_missing_node_still_arms_its_watch() {
    let mut h = Harness::connected();
    let id = h.submit(Op::Exists {
        path: "/missing".into(),
        watch: true,
    });
    let sent = h.sent();
    h.server_says(frame(failed(sent[0].0.xid, 2, ErrorCode::NO_NODE), ()));
    let events = h.events();
    assert_eq!(
        events,
        [SessionEvent::Reply {
            id,
            result: Err(Error::NoNode),
            watch_armed: true
        }]
    );
    h.server_says(notification(EventType::NODE_CREATED, "/missing"));
    assert!(matches!(h.events().as_slice(), [SessionEvent::Watch { id: w, .. }] if *w == id));
}

#[test]
fn a_failed_get_data_arms_no_watch() {
    let mut h = Harness::connected();
    h.submit(get_data("/missing", true));
    let sent = h.sent();
    h.server_says(frame(failed(sent[0].0.xid, 2, ErrorCode::NO_NODE), ()));
    assert!(matches!(
        h.events().as_slice(),
        [SessionEvent::Reply {
            watch_armed: false,
            result: Err(Error::NoNode),
            ..
        }]
    ));
    assert_eq!(h.session.watch_count(), 0);
}

#[test]
fn forgetting_the_last_persistent_watcher_on_a_path_removes_it_on_the_server() {
    let mut h = Harness::connected();
    let first = persistent_watch(&mut h, "/p");
    h.session.forget_watch(first);
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "one removeWatches");
    assert_eq!(sent[0].0.op_code, OpCode::REMOVE_WATCHES);
    let request: RemoveWatchesRequest = decode_exact(sent[0].1.clone()).expect("decodes");
    assert_eq!(request.path.as_deref(), Some("/p"));
    assert_eq!(request.watcher_type, WatcherType::ANY);
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    assert_eq!(h.session.state(), SessionState::Connected);
    h.events();

    // With another watch asked for on the path (queued, not answered yet), nothing is removed:
    // ANY would remove it too.
    let second = persistent_watch(&mut h, "/p");
    let _third = h.submit(Op::AddWatch {
        path: "/p".into(),
        mode: AddWatchMode::PERSISTENT,
    });
    h.session.forget_watch(second);
    let sent = h.sent();
    assert_eq!(
        sent.iter().map(|s| s.0.op_code).collect::<Vec<_>>(),
        [OpCode::ADD_WATCH],
        "only the queued addWatch goes out"
    );
}

#[test]
fn removing_watches_tells_each_watcher() {
    let mut h = Harness::new(config());
    h.establish(1, 30_000);
    let watch = h.submit(Op::GetChildren {
        path: "/a".into(),
        watch: true,
    });
    let sent = h.sent();
    h.server_says(frame(
        ok(sent[0].0.xid, 2),
        GetChildrenResponse {
            children: Some(Default::default()),
        },
    ));
    h.events();
    h.submit(Op::RemoveWatches {
        path: "/a".into(),
        watcher_type: WatcherType::ANY,
    });
    let sent = h.sent();
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    let events = h.events();
    assert!(
        matches!(&events[0], SessionEvent::Watch { id, event, last: true } if *id == watch && event.event_type == EventType::CHILD_WATCH_REMOVED)
    );
    assert_eq!(h.session.watch_count(), 0);
}
