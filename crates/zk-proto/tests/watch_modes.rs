//! A 3.8 server keeps one watch mode per session and path (ZOOKEEPER-4466): without the
//! client's care, a one-shot watch asked for on a path watched persistently turns that watch
//! into a one-shot one, and a `PERSISTENT` watch after a recursive one silences the recursive
//! one below the path, both without a word. These tests mix the kinds on one path of one
//! session against the real server, across a reconnection too, and check that every watcher
//! gets exactly its events. Scripted: `src/session/watch_mode_tests.rs`.

mod support;

use std::time::Duration;

use zk_proto::{
    AddWatchMode, Client, CreateOptions, Error, EventType, KeeperState, PersistentWatcher,
    WatcherType,
};
use zk_testkit::client::{builder, connect, connect_with, within};
use zk_testkit::fault::FaultProxy;

const EVENT_WAIT: Duration = Duration::from_secs(5);

/// The next event of `watch` that is not a connection marker, as (type, path).
async fn next_event(watch: &mut PersistentWatcher) -> (EventType, String) {
    loop {
        let event = within("a persistent watch's event", EVENT_WAIT, watch.next())
            .await
            .expect("event");
        if event.event_type != EventType::NONE {
            return (event.event_type, event.path);
        }
    }
}

async fn create(client: &Client, path: &str) {
    client
        .create(path, "", &CreateOptions::persistent())
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
}

async fn set(client: &Client, path: &str, data: &str) {
    client
        .set_data(path, data.to_owned(), None)
        .await
        .unwrap_or_else(|e| panic!("set {path}: {e}"));
}

fn ev(event_type: EventType, path: &str) -> (EventType, String) {
    (event_type, path.to_owned())
}

#[tokio::test]
async fn one_shot_watches_on_a_recursively_watched_path_leave_the_recursive_watch_whole() {
    let server = support::server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    create(&writer, "/r").await;
    let session = client.session_id();
    let mut recursive = client
        .add_watch("/r", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
    // Before the fix the server turned the recursive watch into a one-shot data watch here.
    let (_, exists) = client.exists_watch("/r").await.expect("exists");
    let (_, _, data) = client.get_data_watch("/r").await.expect("getData");
    let (_, children) = client.get_children_watch("/r").await.expect("getChildren");

    set(&writer, "/r", "1").await;
    for one_shot in [exists, data] {
        let event = within("a one-shot watch", EVENT_WAIT, one_shot.changed())
            .await
            .expect("fired");
        assert_eq!(
            (event.event_type, event.path.as_str()),
            (EventType::NODE_DATA_CHANGED, "/r")
        );
    }
    assert_eq!(
        next_event(&mut recursive).await,
        ev(EventType::NODE_DATA_CHANGED, "/r")
    );
    create(&writer, "/r/a").await;
    let event = within("the child watch", EVENT_WAIT, children.changed())
        .await
        .expect("fired");
    assert_eq!(event.event_type, EventType::NODE_CHILDREN_CHANGED);
    set(&writer, "/r", "2").await;
    create(&writer, "/r/a/b").await;
    assert_eq!(
        [
            next_event(&mut recursive).await,
            next_event(&mut recursive).await,
            next_event(&mut recursive).await,
        ],
        [
            ev(EventType::NODE_CREATED, "/r/a"),
            ev(EventType::NODE_DATA_CHANGED, "/r"),
            ev(EventType::NODE_CREATED, "/r/a/b"),
        ]
    );

    // Again on the next connection of the session: the watches are set again together.
    let (_, again) = client.exists_watch("/r").await.expect("exists");
    let (_, children_again) = client.get_children_watch("/r").await.expect("getChildren");
    proxy.cut();
    loop {
        let event = within("the ready marker", EVENT_WAIT, recursive.next())
            .await
            .expect("marker");
        if event.event_type == EventType::NONE && event.state == KeeperState::SYNC_CONNECTED {
            break;
        }
    }
    set(&writer, "/r", "3").await;
    let event = within("the one-shot watch", EVENT_WAIT, again.changed())
        .await
        .expect("fired after the reconnection");
    assert_eq!(event.event_type, EventType::NODE_DATA_CHANGED);
    create(&writer, "/r/a/c").await;
    create(&writer, "/r/z").await;
    let event = within("the child watch", EVENT_WAIT, children_again.changed())
        .await
        .expect("fired after the reconnection");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NODE_CHILDREN_CHANGED, "/r")
    );
    assert_eq!(
        [
            next_event(&mut recursive).await,
            next_event(&mut recursive).await,
            next_event(&mut recursive).await,
        ],
        [
            ev(EventType::NODE_DATA_CHANGED, "/r"),
            ev(EventType::NODE_CREATED, "/r/a/c"),
            ev(EventType::NODE_CREATED, "/r/z"),
        ]
    );
    assert_eq!(client.session_id(), session);
    assert_eq!(proxy.accepted(), 2);
}

#[tokio::test]
async fn one_shot_watches_on_a_persistently_watched_path_and_their_removal() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    create(&writer, "/p").await;
    let mut persistent = client
        .add_watch("/p", AddWatchMode::PERSISTENT)
        .await
        .expect("addWatch");
    let (_, children) = client.get_children_watch("/p").await.expect("getChildren");
    let (_, _, data) = client.get_data_watch("/p").await.expect("getData");
    create(&writer, "/p/c").await;
    let event = within("the child watch", EVENT_WAIT, children.changed())
        .await
        .expect("fired");
    assert_eq!(event.event_type, EventType::NODE_CHILDREN_CHANGED);
    assert_eq!(
        next_event(&mut persistent).await,
        ev(EventType::NODE_CHILDREN_CHANGED, "/p")
    );
    // Removing the one-shot data watch (removeWatches DATA would remove the persistent one's
    // data mode on the server too) leaves the persistent watch whole.
    client
        .remove_watches("/p", WatcherType::DATA)
        .await
        .expect("removeWatches");
    let removed = within("the removal", EVENT_WAIT, data.changed())
        .await
        .expect("removed");
    assert_eq!(removed.event_type, EventType::DATA_WATCH_REMOVED);
    set(&writer, "/p", "1").await;
    create(&writer, "/p/d").await;
    writer.delete("/p/d", None).await.expect("delete");
    assert_eq!(
        [
            next_event(&mut persistent).await,
            next_event(&mut persistent).await,
            next_event(&mut persistent).await,
        ],
        [
            ev(EventType::NODE_DATA_CHANGED, "/p"),
            ev(EventType::NODE_CHILDREN_CHANGED, "/p"),
            ev(EventType::NODE_CHILDREN_CHANGED, "/p"),
        ]
    );
}

#[tokio::test]
async fn the_two_persistent_kinds_are_refused_on_one_path_in_either_order() {
    // On 3.8 either order silences one of them: PERSISTENT after PERSISTENT_RECURSIVE ends
    // the recursive watch's events below the path, PERSISTENT_RECURSIVE after PERSISTENT
    // ends the persistent watch's child-list changes.
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    create(&writer, "/x").await;
    create(&writer, "/y").await;
    let mut recursive = client
        .add_watch("/x", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
    let mut persistent = client
        .add_watch("/y", AddWatchMode::PERSISTENT)
        .await
        .expect("addWatch");
    for (path, mode) in [
        ("/x", AddWatchMode::PERSISTENT),
        ("/y", AddWatchMode::PERSISTENT_RECURSIVE),
    ] {
        let refused = client.add_watch(path, mode).await;
        assert!(
            matches!(&refused, Err(Error::InvalidArgument(m)) if m.contains("ZOOKEEPER-4466")),
            "{path}: {refused:?}"
        );
    }
    // Both watches are whole.
    create(&writer, "/x/a").await;
    create(&writer, "/x/a/b").await;
    create(&writer, "/y/a").await;
    assert_eq!(
        [
            next_event(&mut recursive).await,
            next_event(&mut recursive).await,
        ],
        [
            ev(EventType::NODE_CREATED, "/x/a"),
            ev(EventType::NODE_CREATED, "/x/a/b"),
        ]
    );
    assert_eq!(
        next_event(&mut persistent).await,
        ev(EventType::NODE_CHILDREN_CHANGED, "/y")
    );
}

#[tokio::test]
async fn a_removal_whose_caller_timed_out_still_tells_the_watchers_it_removed() {
    let server = support::server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect_with(
        builder().request_timeout(Some(Duration::from_millis(300))),
        &proxy.connect_string(),
    )
    .await;
    let writer = connect(&server.connect_string()).await;
    create(&writer, "/t").await;
    let (_, _, data) = client.get_data_watch("/t").await.expect("getData");
    // The removal waits in the frozen proxy past its caller's timeout, then reaches the
    // server, which removes the watch.
    proxy.freeze();
    let removed = client.remove_watches("/t", WatcherType::DATA).await;
    assert_eq!(removed, Err(Error::RequestTimeout));
    proxy.thaw();
    let event = within("the removal", EVENT_WAIT, data.changed())
        .await
        .expect("told");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::DATA_WATCH_REMOVED, "/t")
    );
}
