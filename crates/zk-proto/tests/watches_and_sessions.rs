//! Watches and sessions against a real ZooKeeper 3.8 server: one-shot and persistent
//! watches, chroot paths in events, removing watches, a persistent watcher as a stream, and
//! the state right after `detach`. The same under faults (a cut, an expiry, a renewal, a dead
//! server) is in the workspace's `tests/tests/fault_client/`.

mod support;

use std::time::Duration;

use zk_proto::{AddWatchMode, CreateOptions, Error, EventType, SessionState, WatcherType};
use zk_testkit::client::{connect, start_server, within};

/// How long an event (or a call queued while disconnected) may take.
const EVENT_WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn one_shot_watches_fire_once_with_type_and_path() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    let (stat, created) = client.exists_watch("/n").await.expect("exists");
    assert_eq!(stat, None);
    client
        .create("/n", "a", &CreateOptions::persistent())
        .await
        .expect("create");
    let event = within("NodeCreated", EVENT_WAIT, created.changed())
        .await
        .expect("NodeCreated");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NODE_CREATED, "/n")
    );

    let (_, _, data) = client.get_data_watch("/n").await.expect("getData");
    let (_, children) = client.get_children_watch("/n").await.expect("getChildren");
    client.set_data("/n", "b", None).await.expect("setData");
    let event = within("NodeDataChanged", EVENT_WAIT, data.changed())
        .await
        .expect("NodeDataChanged");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NODE_DATA_CHANGED, "/n")
    );
    client
        .create("/n/c", "", &CreateOptions::persistent())
        .await
        .expect("child");
    let event = within("NodeChildrenChanged", EVENT_WAIT, children.changed())
        .await
        .expect("NodeChildrenChanged");
    assert_eq!(event.event_type, EventType::NODE_CHILDREN_CHANGED);

    // Fired watches are gone: the server has none left on /n.
    assert_eq!(
        client.check_watches("/n", WatcherType::ANY).await,
        Err(Error::NoWatcher)
    );
}

#[tokio::test]
async fn watch_paths_are_stripped_of_the_chroot() {
    let server = support::server().await;
    let admin = connect(&server.connect_string()).await;
    admin
        .create("/app", "", &CreateOptions::persistent())
        .await
        .expect("chroot node");
    let client = connect(&format!("{}/app", server.connect_string())).await;
    let (path, _) = client
        .create("/x", "", &CreateOptions::ephemeral())
        .await
        .expect("create");
    assert_eq!(path, "/x");
    assert!(admin.exists("/app/x").await.expect("exists").is_some());
    assert_eq!(
        client.get_ephemerals("/").await.map(|l| l.to_vec()),
        Ok(vec!["/x".to_owned()])
    );
    let (_, _, watch) = client.get_data_watch("/x").await.expect("getData");
    admin.set_data("/app/x", "v", None).await.expect("setData");
    let event = within("the event", EVENT_WAIT, watch.changed())
        .await
        .expect("event");
    assert_eq!(event.path, "/x");
}

#[tokio::test]
async fn persistent_recursive_watches_stream_until_removed() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/r", "", &CreateOptions::persistent())
        .await
        .expect("create");
    let mut watch = client
        .add_watch("/r", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
    client
        .create("/r/a", "", &CreateOptions::persistent())
        .await
        .expect("create a");
    client.set_data("/r/a", "1", None).await.expect("set a");
    client.delete("/r/a", None).await.expect("delete a");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let event = within("the event", EVENT_WAIT, watch.next())
            .await
            .expect("event");
        seen.push((event.event_type, event.path));
    }
    assert_eq!(
        seen,
        [
            (EventType::NODE_CREATED, "/r/a".to_owned()),
            (EventType::NODE_DATA_CHANGED, "/r/a".to_owned()),
            (EventType::NODE_DELETED, "/r/a".to_owned()),
        ]
    );
    // 3.8 knows no PERSISTENT_RECURSIVE watcher type; ANY removes it.
    client
        .remove_watches("/r", WatcherType::ANY)
        .await
        .expect("removeWatches");
    let event = within("the event", EVENT_WAIT, watch.next())
        .await
        .expect("removal is reported");
    assert_eq!(event.event_type, EventType::PERSISTENT_WATCH_REMOVED);
    assert_eq!(
        within("the event", EVENT_WAIT, watch.next()).await,
        Err(Error::Closed)
    );
}

#[tokio::test]
async fn dropping_a_persistent_watcher_removes_its_watch_on_the_server() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/d", "", &CreateOptions::persistent())
        .await
        .expect("create");
    let watch = client
        .add_watch("/d", AddWatchMode::PERSISTENT)
        .await
        .expect("addWatch");
    client
        .check_watches("/d", WatcherType::ANY)
        .await
        .expect("the server holds the watch");
    drop(watch);
    // Calls are ordered as made: the removal queued by the drop is answered before this.
    client.exists("/").await.expect("exists");
    assert_eq!(
        client.check_watches("/d", WatcherType::ANY).await,
        Err(Error::NoWatcher),
        "the watch was removed on the server"
    );

    // Another watcher on the path: removing with ANY would take it too, so the persistent
    // watch stays on the server and the other watcher keeps working.
    let persistent = client
        .add_watch("/d", AddWatchMode::PERSISTENT)
        .await
        .expect("addWatch");
    let (_, _, data_watch) = client.get_data_watch("/d").await.expect("getData");
    drop(persistent);
    client.exists("/").await.expect("exists");
    client
        .check_watches("/d", WatcherType::DATA)
        .await
        .expect("the data watch is still on the server");
    client.set_data("/d", "1", None).await.expect("set");
    let event = within("the data event", EVENT_WAIT, data_watch.changed())
        .await
        .expect("event");
    assert_eq!(event.event_type, EventType::NODE_DATA_CHANGED);
}

#[tokio::test]
async fn an_add_watch_given_up_before_its_reply_leaves_no_watch_on_the_server() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    // Sent when called, dropped before its reply: the server arms the watch all the same.
    drop(client.add_watch("/gone", AddWatchMode::PERSISTENT_RECURSIVE));
    // Answered after the addWatch: by then the client has queued the watch's removal, so the
    // server applies it before the check that follows.
    client.exists("/").await.expect("exists");
    assert_eq!(
        client.check_watches("/gone", WatcherType::ANY).await,
        Err(Error::NoWatcher),
        "the abandoned watch was removed without waiting for an event"
    );
}

#[tokio::test]
async fn a_persistent_watcher_is_a_stream_that_ends_with_the_session() {
    use futures_util::StreamExt;
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/s", "", &CreateOptions::persistent())
        .await
        .expect("create");
    let mut events = client
        .add_watch("/s", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
    client
        .create("/s/x", "", &CreateOptions::persistent())
        .await
        .expect("create x");
    let event = within("the event", EVENT_WAIT, StreamExt::next(&mut events))
        .await
        .expect("an item")
        .expect("an event");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NODE_CREATED, "/s/x")
    );
    client.close().await.expect("close");
    let last = within("the end", EVENT_WAIT, StreamExt::next(&mut events)).await;
    assert_eq!(last, Some(Err(Error::Closed)), "the watch is reported lost");
    assert_eq!(
        within("the end", EVENT_WAIT, StreamExt::next(&mut events)).await,
        None,
        "then the stream ends"
    );
}

/// Right after `detach().await` the state reads `Closed`, every time (it was published after
/// the call returned, so a caller could still read `Connected`), and the session lives on for
/// another client to resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn right_after_detach_the_state_is_closed() {
    let server = start_server().await;
    for round in 0..40 {
        let client = connect(&server.connect_string()).await;
        assert_eq!(client.state(), SessionState::Connected);
        client.detach().await;
        assert_eq!(client.state(), SessionState::Closed, "round {round}");
        assert!(matches!(client.exists("/").await, Err(Error::Closed)));
    }
}
