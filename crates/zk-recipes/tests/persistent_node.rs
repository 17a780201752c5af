//! The persistent node against a real server: created again when someone deletes it and
//! after its session expired (on a client that renews expired sessions), with the latest
//! data; protected sequential names; a persistent node taken over; another session's
//! ephemeral node waited out; the end without renewal; deletion on close. A create whose
//! reply is lost: the workspace's `tests/tests/fault_recipes/persistent_node.rs`.

use std::time::Duration;

use bytes::Bytes;
use zk_proto::{Client, CreateOptions, Stat};
use zk_recipes::persistent::PersistentNode;
use zk_testkit::client::{
    builder, children, connect, connect_with, expire_session, start_server, within,
};

const WITHIN: Duration = Duration::from_secs(20);

/// Waits (with watches, no polling) until `path` exists, as `client` sees it.
async fn wait_exists(client: &Client, path: &str) -> Stat {
    within("the node exists", WITHIN, async {
        loop {
            let (stat, watch) = client.exists_watch(path).await.expect("exists");
            if let Some(stat) = stat {
                return stat;
            }
            let _ = watch.changed().await;
        }
    })
    .await
}

#[tokio::test]
async fn an_ephemeral_node_comes_back_after_deletion_and_after_expiry_with_its_latest_data() {
    let server = start_server().await;
    let cs = server.connect_string();
    let client = connect_with(builder().renew_expired_sessions(true), &cs).await;
    let other = connect(&cs).await;
    let node = PersistentNode::builder(&client, "/pn/a/member", "1")
        .ephemeral()
        .start();
    let path = node.wait_created(Some(WITHIN)).await.expect("created");
    assert_eq!(path, "/pn/a/member");
    assert_eq!(node.path().as_deref(), Some("/pn/a/member"));
    let (data, stat) = other.get_data(&path).await.expect("read");
    assert_eq!(
        (data, stat.ephemeral_owner),
        (Bytes::from("1"), client.session_id())
    );

    // Deleted by someone else: back, with the data.
    other.delete(&path, None).await.expect("delete");
    let stat = wait_exists(&other, &path).await;
    assert_eq!(stat.ephemeral_owner, client.session_id());
    assert_eq!(
        other.get_data(&path).await.expect("read").0,
        Bytes::from("1")
    );

    // New data, written now and kept for the next creation.
    node.set_data("2").await.expect("set");
    assert_eq!(
        other.get_data(&path).await.expect("read").0,
        Bytes::from("2")
    );

    // The session expires: its ephemeral goes, and comes back in the next session.
    let old = client.session_id();
    let (_, deleted) = other.exists_watch(&path).await.expect("watch");
    expire_session(&client, &cs).await;
    within("the expired node's deletion", WITHIN, deleted.changed())
        .await
        .expect("event");
    let stat = wait_exists(&other, &path).await;
    assert_ne!(stat.ephemeral_owner, old);
    assert_eq!(stat.ephemeral_owner, client.session_id());
    assert_eq!(
        other.get_data(&path).await.expect("read").0,
        Bytes::from("2")
    );
    assert_eq!(node.wait_created(Some(WITHIN)).await.expect("kept"), path);

    node.close().await.expect("close");
    assert_eq!(
        other.exists(&path).await.expect("exists"),
        None,
        "deleted on close"
    );
}

#[tokio::test]
async fn a_protected_sequential_node_gets_a_new_name_each_time_and_never_two_at_once() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    let node = PersistentNode::builder(&client, "/pn/seq/member-", "m")
        .ephemeral()
        .sequential()
        .protected()
        .start();
    let first = node.wait_created(Some(WITHIN)).await.expect("created");
    let name = first.rsplit('/').next().unwrap_or_default().to_owned();
    assert!(name.starts_with("_c_"), "{name}");
    assert!(name.contains("-member-"), "{name}");
    assert_eq!(children(&other, "/pn/seq").await, [name]);

    other.delete(&first, None).await.expect("delete");
    let second = within("created again", WITHIN, async {
        loop {
            let listed = children(&other, "/pn/seq").await;
            if let [one] = listed.as_slice() {
                return format!("/pn/seq/{one}");
            }
            assert!(listed.len() < 2, "two nodes at once: {listed:?}");
            let (_, watch) = other.get_children_watch("/pn/seq").await.expect("children");
            if children(&other, "/pn/seq").await.is_empty() {
                let _ = watch.changed().await;
            }
        }
    })
    .await;
    assert_ne!(second, first, "a new sequence number");
    // The same protection id: the name differs only in its sequence.
    assert_eq!(second[..second.len() - 10], first[..first.len() - 10]);
    node.close().await.expect("close");
    assert!(children(&other, "/pn/seq").await.is_empty());
}

#[tokio::test]
async fn an_existing_persistent_node_is_taken_over_and_recreated_as_persistent() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let other = connect(&server.connect_string()).await;
    other
        .create("/pn-config", "theirs", &CreateOptions::persistent())
        .await
        .expect("create");
    let node = PersistentNode::builder(&client, "/pn-config", "ours").start();
    node.wait_created(Some(WITHIN)).await.expect("taken over");
    assert_eq!(
        other.get_data("/pn-config").await.expect("read").0,
        Bytes::from("ours")
    );
    other.delete("/pn-config", None).await.expect("delete");
    let stat = wait_exists(&other, "/pn-config").await;
    assert_eq!(stat.ephemeral_owner, 0, "persistent");
    node.close().await.expect("close");
    assert_eq!(other.exists("/pn-config").await.expect("exists"), None);
}

#[tokio::test]
async fn an_ephemeral_path_held_by_another_session_is_taken_once_it_is_free() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let holder = connect(&server.connect_string()).await;
    holder
        .create("/pn-held", "holder", &CreateOptions::ephemeral())
        .await
        .expect("create");
    let node = PersistentNode::builder(&client, "/pn-held", "mine")
        .ephemeral()
        .start();
    assert_eq!(
        node.wait_created(Some(Duration::from_millis(300))).await,
        Err(zk_recipes::Error::Timeout),
        "not while another session holds the path"
    );
    assert_eq!(node.path(), None);
    holder.close().await.expect("close");
    assert_eq!(
        node.wait_created(Some(WITHIN)).await.expect("taken"),
        "/pn-held"
    );
    let (data, stat) = client.get_data("/pn-held").await.expect("read");
    assert_eq!(
        (data, stat.ephemeral_owner),
        (Bytes::from("mine"), client.session_id())
    );
}

#[tokio::test]
async fn without_renewal_the_node_ends_with_its_session() {
    let server = start_server().await;
    let cs = server.connect_string();
    let client = connect(&cs).await;
    let node = PersistentNode::builder(&client, "/pn-once", "x")
        .ephemeral()
        .start();
    node.wait_created(Some(WITHIN)).await.expect("created");
    expire_session(&client, &cs).await;
    // The client learns the expiry when it reconnects; the recipe stops.
    assert_eq!(
        within("the recipe's end", WITHIN, node.wait_ended()).await,
        zk_recipes::Error::Zk(zk_proto::Error::SessionExpired)
    );
    assert_eq!(node.path(), None);
    assert_eq!(
        node.wait_created(Some(WITHIN)).await,
        Err(zk_recipes::Error::Zk(zk_proto::Error::SessionExpired))
    );
    assert_eq!(
        node.close().await,
        Err(zk_recipes::Error::Zk(zk_proto::Error::SessionExpired))
    );
}
