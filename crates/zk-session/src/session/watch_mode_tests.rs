//! One watch mode per session and path on 3.8 servers (ZOOKEEPER-4466), scripted: a one-shot
//! watch that a persistent mode covers is armed locally and not asked of the server, a removal
//! of such watches is sent as a checkWatches, and the two persistent kinds are never mixed on
//! one path. The same against a real server: `tests/watch_modes.rs`. Also:
//! a removal whose caller timed out, or whose reply body does not decode, still tells the
//! watchers the server removed.

use jute::*;

use super::tests::{Harness, failed, frame, notification, ok, replies};
use super::*;

fn add_watch(path: &str, mode: AddWatchMode) -> Op {
    Op::AddWatch {
        path: path.into(),
        mode,
    }
}

/// The watch flag of a sent read: its body's last byte.
fn watch_flag(body: &Bytes) -> bool {
    body.last() == Some(&1)
}

/// Submits `op`, and answers it OK with `body` once sent; returns its id and the frame sent.
fn answered(h: &mut Harness, op: Op, body: impl Encode) -> (RequestId, (RequestHeader, Bytes)) {
    let id = h.submit(op);
    let sent = h.sent().pop().expect("sent");
    h.server_says(frame(ok(sent.0.xid, 1), body));
    (id, sent)
}

/// Arms a one-shot data watch on `path` (getData answered OK); returns its id.
fn data_watch(h: &mut Harness, path: &str) -> RequestId {
    answered(
        h,
        Op::GetData {
            path: path.into(),
            watch: true,
        },
        GetDataResponse {
            data: None,
            stat: Stat::default(),
        },
    )
    .0
}

fn fired(events: &[SessionEvent]) -> Vec<(RequestId, EventType)> {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Watch { id, event, .. } => Some((*id, event.event_type)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_one_shot_watch_under_a_persistent_mode_is_armed_locally_and_fired_by_its_events() {
    let mut h = Harness::connected();
    let (recursive, _) = answered(
        &mut h,
        add_watch("/p", AddWatchMode::PERSISTENT_RECURSIVE),
        ErrorResponse { err: ErrorCode::OK },
    );
    // exists and getData on the path: no watch asked of the server (it would replace the
    // recursive mode with a one-shot one), but armed.
    let stat = Stat::default();
    let (exists, sent) = answered(
        &mut h,
        Op::Exists {
            path: "/p".into(),
            watch: true,
        },
        ExistsResponse { stat },
    );
    assert_eq!(sent.0.op_code, OpCode::EXISTS);
    assert!(!watch_flag(&sent.1), "exists sent with its watch flag");
    // A getChildren watch neither: the recursive mode holds the path's child list too (and
    // sends no child-list change); a child's creation will fire it.
    let (children, sent) = answered(
        &mut h,
        Op::GetChildren {
            path: "/p".into(),
            watch: true,
        },
        GetChildrenResponse { children: None },
    );
    assert!(!watch_flag(&sent.1), "getChildren sent with its watch flag");
    // Elsewhere, as usual.
    let other = h.submit(Op::GetData {
        path: "/q".into(),
        watch: true,
    });
    let sent = h.sent();
    assert!(watch_flag(&sent[0].1));
    let events = h.events();
    assert!(
        events.iter().any(
            |e| matches!(e, SessionEvent::Reply { id, watch_armed: true, .. } if *id == exists)
        )
    );
    let _ = other;

    // The recursive watch's event on the node fires the one-shot watcher once.
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/p"));
    assert_eq!(
        fired(&h.events()),
        [
            (exists, EventType::NODE_DATA_CHANGED),
            (recursive, EventType::NODE_DATA_CHANGED)
        ]
    );
    // A grandchild is no child-list change of the path; a child is, right after its event.
    h.server_says(notification(EventType::NODE_CREATED, "/p/a/b"));
    assert_eq!(fired(&h.events()), [(recursive, EventType::NODE_CREATED)]);
    h.server_says(notification(EventType::NODE_DELETED, "/p/a"));
    let events = h.events();
    assert_eq!(
        fired(&events),
        [
            (recursive, EventType::NODE_DELETED),
            (children, EventType::NODE_CHILDREN_CHANGED)
        ]
    );
    assert!(events.iter().any(|e| matches!(
        e,
        SessionEvent::Watch { id, event, .. } if *id == children && event.path == "/p"
    )));
    h.server_says(notification(EventType::NODE_CREATED, "/p/c"));
    assert_eq!(fired(&h.events()), [(recursive, EventType::NODE_CREATED)]);
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/p"));
    assert_eq!(
        fired(&h.events()),
        [(recursive, EventType::NODE_DATA_CHANGED)]
    );
}

#[test]
fn a_persistent_watch_in_flight_covers_the_one_shot_watches_sent_after_it() {
    let mut h = Harness::connected();
    let watch = h.submit(add_watch("/p", AddWatchMode::PERSISTENT));
    let data = h.submit(Op::GetData {
        path: "/p".into(),
        watch: true,
    });
    let children = h.submit(Op::GetChildren2 {
        path: "/p".into(),
        watch: true,
    });
    let sent = h.sent();
    assert_eq!(sent.len(), 3);
    assert!(!watch_flag(&sent[1].1), "getData asked for a watch");
    assert!(!watch_flag(&sent[2].1), "getChildren2 asked for a watch");
    // After a removal of every watch on the path (in flight), they are asked for again.
    let remove = h.submit(Op::RemoveWatches {
        path: "/p".into(),
        watcher_type: WatcherType::ANY,
    });
    let again = h.submit(Op::GetData {
        path: "/p".into(),
        watch: true,
    });
    let sent_after = h.sent();
    assert_eq!(sent_after[0].0.op_code, OpCode::REMOVE_WATCHES);
    assert!(watch_flag(&sent_after[1].1), "getData after the removal");
    let _ = (watch, data, children, remove, again);
}

#[test]
fn a_removal_of_one_shot_watches_under_a_persistent_mode_leaves_that_mode_alone() {
    let mut h = Harness::connected();
    let (persistent, _) = answered(
        &mut h,
        add_watch("/p", AddWatchMode::PERSISTENT),
        ErrorResponse { err: ErrorCode::OK },
    );
    let data = data_watch(&mut h, "/p");
    h.events();
    // removeWatches DATA would remove the persistent mode on the server too: a checkWatches
    // goes instead, and its OK removes the one-shot watcher only.
    let remove = h.submit(Op::RemoveWatches {
        path: "/p".into(),
        watcher_type: WatcherType::DATA,
    });
    let sent = h.sent();
    assert_eq!(sent[0].0.op_code, OpCode::CHECK_WATCHES);
    let request: CheckWatchesRequest = decode_exact(sent[0].1.clone()).expect("decodes");
    assert_eq!(request.watcher_type, WatcherType::DATA);
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    let events = h.events();
    assert_eq!(replies(&events), [(remove, Ok(Response::Empty))]);
    assert_eq!(fired(&events), [(data, EventType::DATA_WATCH_REMOVED)]);
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/p"));
    assert_eq!(
        fired(&h.events()),
        [(persistent, EventType::NODE_DATA_CHANGED)]
    );
    // ANY removes everything, persistent mode included: sent as it is.
    h.submit(Op::RemoveWatches {
        path: "/p".into(),
        watcher_type: WatcherType::ANY,
    });
    assert_eq!(h.sent()[0].0.op_code, OpCode::REMOVE_WATCHES);
}

#[test]
fn the_two_persistent_kinds_are_never_mixed_on_one_path() {
    let mut h = Harness::connected();
    // Queued, not answered yet: already counted, in either order.
    h.submit(add_watch("/p", AddWatchMode::PERSISTENT_RECURSIVE));
    h.submit(add_watch("/q", AddWatchMode::PERSISTENT));
    for (path, mode) in [
        ("/p", AddWatchMode::PERSISTENT),
        ("/q", AddWatchMode::PERSISTENT_RECURSIVE),
    ] {
        let refused = h.session.submit(add_watch(path, mode), None);
        assert!(
            matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains("ZOOKEEPER-4466")),
            "{refused:?}"
        );
    }
    // The same kind again is fine, and so is either kind once the path is free again.
    h.submit(add_watch("/p", AddWatchMode::PERSISTENT_RECURSIVE));
    let sent = h.sent();
    assert_eq!(sent.len(), 3);
    for (header, _) in &sent {
        h.server_says(frame(
            ok(header.xid, 1),
            ErrorResponse { err: ErrorCode::OK },
        ));
    }
    let removed = h.submit(Op::RemoveWatches {
        path: "/p".into(),
        watcher_type: WatcherType::ANY,
    });
    let sent = h.sent();
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    assert!(replies(&h.events()).contains(&(removed, Ok(Response::Empty))));
    h.submit(add_watch("/p", AddWatchMode::PERSISTENT));
    let modes: Vec<AddWatchMode> = h
        .sent()
        .iter()
        .map(|(_, body)| {
            decode_exact::<AddWatchRequest>(body.clone())
                .expect("decodes")
                .mode
        })
        .collect();
    assert_eq!(modes, [AddWatchMode::PERSISTENT]);
}

#[test]
fn after_a_reconnect_the_modes_come_from_the_watches_set_again() {
    let mut h = Harness::connected();
    answered(
        &mut h,
        add_watch("/p", AddWatchMode::PERSISTENT),
        ErrorResponse { err: ErrorCode::OK },
    );
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(1, 30_000);
    let set_watches = h.sent();
    assert_eq!(set_watches[0].0.op_code, OpCode::SET_WATCHES2);
    h.submit(Op::GetChildren {
        path: "/p".into(),
        watch: true,
    });
    let sent = h.sent();
    assert!(!watch_flag(&sent[0].1), "getChildren asked for a watch");
}

#[test]
fn an_exists_watch_on_a_node_that_is_there_is_set_again_as_a_data_watch() {
    // Set again as an exist watch, the server would take the node for created while the
    // client was away and fire NodeCreated at once (as the Java client, which files it so).
    let mut h = Harness::connected();
    answered(
        &mut h,
        Op::Exists {
            path: "/there".into(),
            watch: true,
        },
        ExistsResponse {
            stat: Stat::default(),
        },
    );
    h.submit(Op::Exists {
        path: "/missing".into(),
        watch: true,
    });
    let sent = h.sent();
    h.server_says(frame(failed(sent[0].0.xid, 1, ErrorCode::NO_NODE), ()));
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    h.establish(1, 30_000);
    let set_watches = h.sent();
    assert_eq!(set_watches[0].0.op_code, OpCode::SET_WATCHES);
    let batch: SetWatches = decode_exact(set_watches[0].1.clone()).expect("decodes");
    assert_eq!(batch.data_watches, Some(["/there"].into_iter().collect()));
    assert_eq!(
        batch.exist_watches,
        Some(["/missing"].into_iter().collect())
    );
}

#[test]
fn a_removal_whose_caller_timed_out_still_tells_the_watchers_it_removed() {
    // The server removes them all the same: left registered, they would never fire.
    let mut h = Harness::connected();
    let data = data_watch(&mut h, "/n");
    h.events();
    let remove = h
        .session
        .submit(
            Op::RemoveWatches {
                path: "/n".into(),
                watcher_type: WatcherType::DATA,
            },
            Some(h.now + std::time::Duration::from_secs(1)),
        )
        .expect("valid");
    let sent = h.sent();
    assert_eq!(sent[0].0.op_code, OpCode::REMOVE_WATCHES);
    h.advance(std::time::Duration::from_secs(2));
    assert_eq!(replies(&h.events()), [(remove, Err(Error::RequestTimeout))]);
    h.server_says(frame(ok(sent[0].0.xid, 2), ()));
    let events = h.events();
    assert_eq!(fired(&events), [(data, EventType::DATA_WATCH_REMOVED)]);
    assert!(replies(&events).is_empty());
    // Nothing is left to fire.
    h.server_says(notification(EventType::NODE_DATA_CHANGED, "/n"));
    assert!(fired(&h.events()).is_empty());
}

#[test]
fn a_removal_whose_reply_body_does_not_decode_still_tells_the_watchers_it_removed() {
    // The header said OK: the server removed them (the caller gets the `Protocol` error that
    // says a call was applied but its reply is unreadable).
    let mut h = Harness::connected();
    let data = data_watch(&mut h, "/n");
    h.events();
    let remove = h.submit(Op::RemoveWatches {
        path: "/n".into(),
        watcher_type: WatcherType::DATA,
    });
    let sent = h.sent();
    h.server_says(frame(ok(sent[0].0.xid, 2), (1i32, 2i32)));
    let events = h.events();
    assert_eq!(fired(&events), [(data, EventType::DATA_WATCH_REMOVED)]);
    assert!(matches!(
        replies(&events).as_slice(),
        [(id, Err(Error::Protocol(_)))] if *id == remove
    ));
}
