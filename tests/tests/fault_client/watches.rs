//! Watches through faults: a change made while cut off fires after the reconnection, watches
//! of every mode on one path are set again together on the next connection, and a removal
//! that waited in a frozen connection past its caller's timeout still tells the watchers.

use zk_proto::{AddWatchMode, EventType, KeeperState, WatchedEvent, WatcherType};
use zk_testkit::client::{builder, connect, connect_with, create_node, next_change, set_node};

use super::*;

fn ev(event_type: EventType, path: &str) -> (EventType, String) {
    (event_type, path.to_owned())
}

#[tokio::test]
async fn a_change_made_while_cut_off_fires_after_reconnect() {
    let _serial = serial().await;
    let server = server().await;
    let Proxied { proxy, client } = connect_proxied(server.addr(), builder()).await;
    let other = connect(&server.connect_string()).await;
    client
        .create("/cut", "0", &CreateOptions::persistent())
        .await
        .expect("create");
    let (_, _, watch) = client.get_data_watch("/cut").await.expect("getData");
    let mut persistent = client
        .add_watch("/cut", AddWatchMode::PERSISTENT)
        .await
        .expect("addWatch");
    let session = client.session_id();
    let marker = |state| WatchedEvent {
        event_type: EventType::NONE,
        state,
        path: String::new(),
    };

    proxy.isolate();
    wait_for_state(&client, SessionState::Disconnected, EVENT_WAIT).await;
    // The persistent watcher is told that events may be missed from here on.
    assert_eq!(
        within("the lost marker", EVENT_WAIT, persistent.next()).await,
        Ok(marker(KeeperState::DISCONNECTED))
    );
    // Queued while disconnected; sent after the watches are re-armed.
    let queued = client.get_data("/cut");
    other
        .set_data("/cut", "1", None)
        .await
        .expect("change while cut off");
    proxy.restore();

    let event = within("the event", EVENT_WAIT, watch.changed())
        .await
        .expect("fired after reconnect");
    assert_eq!(event.event_type, EventType::NODE_DATA_CHANGED);
    assert_eq!(
        &within("the queued call", EVENT_WAIT, queued)
            .await
            .expect("queued call")
            .0[..],
        b"1"
    );
    assert_eq!(client.state(), SessionState::Connected);
    assert_eq!(client.session_id(), session, "same session");
    // ... and that the watch is armed again: what follows comes from the new connection.
    assert_eq!(
        within("the ready marker", EVENT_WAIT, persistent.next()).await,
        Ok(marker(KeeperState::SYNC_CONNECTED))
    );
}

/// A 3.8 server keeps one watch mode per session and path (ZOOKEEPER-4466): on the next
/// connection of the session, a recursive watch and one-shot watches on the same path are set
/// again together, and each watcher gets exactly its events. The same without a reconnection:
/// `crates/zk-proto/tests/watch_modes.rs`.
#[tokio::test]
async fn watch_modes_on_one_path_are_set_again_together_after_a_cut() {
    let _serial = serial().await;
    let server = server().await;
    let Proxied { proxy, client } = connect_proxied(server.addr(), builder()).await;
    let writer = connect(&server.connect_string()).await;
    create_node(&writer, "/r", "").await;
    create_node(&writer, "/r/a", "").await;
    let session = client.session_id();
    let mut recursive = client
        .add_watch("/r", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
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
    set_node(&writer, "/r", "3").await;
    let event = within("the one-shot watch", EVENT_WAIT, again.changed())
        .await
        .expect("fired after the reconnection");
    assert_eq!(event.event_type, EventType::NODE_DATA_CHANGED);
    create_node(&writer, "/r/a/c", "").await;
    create_node(&writer, "/r/z", "").await;
    let event = within("the child watch", EVENT_WAIT, children_again.changed())
        .await
        .expect("fired after the reconnection");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NODE_CHILDREN_CHANGED, "/r")
    );
    assert_eq!(
        [
            next_change(&mut recursive).await,
            next_change(&mut recursive).await,
            next_change(&mut recursive).await,
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
async fn a_removal_whose_caller_timed_out_still_tells_the_watchers_it_removed() {
    let _serial = serial().await;
    let server = server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect_with(
        builder().request_timeout(Some(Duration::from_millis(300))),
        &proxy.connect_string(),
    )
    .await;
    let writer = connect(&server.connect_string()).await;
    create_node(&writer, "/t", "").await;
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
