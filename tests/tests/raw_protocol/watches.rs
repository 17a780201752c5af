//! Watches, by hand: one-shot watches fire once, persistent ones stay.

use jute::{
    AddWatchMode, CheckWatchesRequest, CreateMode, ErrorCode, ErrorResponse, EventType, OpCode,
    RemoveWatchesRequest, Response, WatcherType,
};
use zk_testkit::raw::{RawSession, event, s};
use zk_testkit::{ZkServer, started};

#[test]
fn watches_fire_once_and_persistent_ones_stay() {
    let server = started(ZkServer::start());
    let mut watcher = RawSession::connect(server.addr());
    let mut writer = RawSession::connect(server.addr());
    writer.create("/w", b"0", CreateMode::PERSISTENT);

    watcher.get_data("/w", true);
    assert_eq!(watcher.exists("/w2", true), Err(ErrorCode::NO_NODE));
    assert!(watcher.children("/w", true).is_empty());

    writer.set_data("/w", b"1", -1);
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DATA_CHANGED, "/w")
    );
    writer.create("/w2", b"", CreateMode::PERSISTENT);
    assert_eq!(watcher.next_event(), event(EventType::NODE_CREATED, "/w2"));
    writer.create("/w/c", b"", CreateMode::PERSISTENT);
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_CHILDREN_CHANGED, "/w")
    );
    // One-shot: the same changes again fire nothing.
    writer.set_data("/w", b"2", -1);
    writer.create("/w/d", b"", CreateMode::PERSISTENT);
    watcher.assert_no_events();

    // checkWatches / removeWatches on a data watch.
    watcher.get_data("/w2", true);
    let check = CheckWatchesRequest {
        path: s("/w2"),
        watcher_type: WatcherType::DATA,
    };
    assert_eq!(
        watcher.ok(OpCode::CHECK_WATCHES, check.clone()).1,
        Response::Empty
    );
    let remove = RemoveWatchesRequest {
        path: s("/w2"),
        watcher_type: WatcherType::DATA,
    };
    assert_eq!(
        watcher.ok(OpCode::REMOVE_WATCHES, remove).1,
        Response::Empty
    );
    assert_eq!(
        watcher.fails(OpCode::CHECK_WATCHES, check),
        ErrorCode::NO_WATCHER
    );
    writer.set_data("/w2", b"x", -1);
    watcher.assert_no_events();

    // A persistent recursive watch fires for every change below, and stays.
    let (_, added) = watcher.ok(
        OpCode::ADD_WATCH,
        jute::AddWatchRequest {
            path: s("/w"),
            mode: AddWatchMode::PERSISTENT_RECURSIVE,
        },
    );
    assert_eq!(
        added,
        Response::AddWatch(ErrorResponse { err: ErrorCode::OK })
    );
    writer.set_data("/w/c", b"a", -1);
    writer.set_data("/w/c", b"b", -1);
    writer.create("/w/c/e", b"", CreateMode::PERSISTENT);
    writer.delete("/w/c/e", -1);
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DATA_CHANGED, "/w/c")
    );
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DATA_CHANGED, "/w/c")
    );
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_CREATED, "/w/c/e")
    );
    assert_eq!(
        watcher.next_event(),
        event(EventType::NODE_DELETED, "/w/c/e")
    );
    watcher.assert_no_events();
}
