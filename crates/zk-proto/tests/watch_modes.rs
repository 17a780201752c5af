//! A 3.8 server keeps one watch mode per session and path (ZOOKEEPER-4466): without the
//! client's care, a one-shot watch asked for on a path watched persistently turns that watch
//! into a one-shot one, and a `PERSISTENT` watch after a recursive one silences the recursive
//! one below the path, both without a word. These tests mix the kinds on one path of one
//! session against the real server and check that every watcher gets exactly its events.
//! Across a reconnection, and a removal that waited in a frozen connection: the workspace's
//! `tests/tests/fault_client/watches.rs`. Scripted: `src/session/watch_mode_tests.rs`.

mod support;

use std::time::Duration;

use zk_proto::{AddWatchMode, Error, EventType, WatcherType};
use zk_testkit::client::{connect, create_node, next_change, set_node, within};

const EVENT_WAIT: Duration = Duration::from_secs(5);

fn ev(event_type: EventType, path: &str) -> (EventType, String) {
    (event_type, path.to_owned())
}

#[tokio::test]
async fn one_shot_watches_on_a_recursively_watched_path_leave_the_recursive_watch_whole() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    create_node(&writer, "/r", "").await;
    let mut recursive = client
        .add_watch("/r", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
    // Before the fix the server turned the recursive watch into a one-shot data watch here.
    let (_, exists) = client.exists_watch("/r").await.expect("exists");
    let (_, _, data) = client.get_data_watch("/r").await.expect("getData");
    let (_, children) = client.get_children_watch("/r").await.expect("getChildren");

    set_node(&writer, "/r", "1").await;
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
        next_change(&mut recursive).await,
        ev(EventType::NODE_DATA_CHANGED, "/r")
    );
    create_node(&writer, "/r/a", "").await;
    let event = within("the child watch", EVENT_WAIT, children.changed())
        .await
        .expect("fired");
    assert_eq!(event.event_type, EventType::NODE_CHILDREN_CHANGED);
    set_node(&writer, "/r", "2").await;
    create_node(&writer, "/r/a/b", "").await;
    assert_eq!(
        [
            next_change(&mut recursive).await,
            next_change(&mut recursive).await,
            next_change(&mut recursive).await,
        ],
        [
            ev(EventType::NODE_CREATED, "/r/a"),
            ev(EventType::NODE_DATA_CHANGED, "/r"),
            ev(EventType::NODE_CREATED, "/r/a/b"),
        ]
    );
}

#[tokio::test]
async fn one_shot_watches_on_a_persistently_watched_path_and_their_removal() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    let writer = connect(&server.connect_string()).await;
    create_node(&writer, "/p", "").await;
    let mut persistent = client
        .add_watch("/p", AddWatchMode::PERSISTENT)
        .await
        .expect("addWatch");
    let (_, children) = client.get_children_watch("/p").await.expect("getChildren");
    let (_, _, data) = client.get_data_watch("/p").await.expect("getData");
    create_node(&writer, "/p/c", "").await;
    let event = within("the child watch", EVENT_WAIT, children.changed())
        .await
        .expect("fired");
    assert_eq!(event.event_type, EventType::NODE_CHILDREN_CHANGED);
    assert_eq!(
        next_change(&mut persistent).await,
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
    set_node(&writer, "/p", "1").await;
    create_node(&writer, "/p/d", "").await;
    writer.delete("/p/d", None).await.expect("delete");
    assert_eq!(
        [
            next_change(&mut persistent).await,
            next_change(&mut persistent).await,
            next_change(&mut persistent).await,
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
    create_node(&writer, "/x", "").await;
    create_node(&writer, "/y", "").await;
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
    create_node(&writer, "/x/a", "").await;
    create_node(&writer, "/x/a/b", "").await;
    create_node(&writer, "/y/a", "").await;
    assert_eq!(
        [
            next_change(&mut recursive).await,
            next_change(&mut recursive).await,
        ],
        [
            ev(EventType::NODE_CREATED, "/x/a"),
            ev(EventType::NODE_CREATED, "/x/a/b"),
        ]
    );
    assert_eq!(
        next_change(&mut persistent).await,
        ev(EventType::NODE_CHILDREN_CHANGED, "/y")
    );
}
