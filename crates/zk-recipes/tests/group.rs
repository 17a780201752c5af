//! Group membership against a real server: members join with data, change it and leave; a
//! member whose process is cut off (its session expires) disappears from the others' views;
//! a member whose node is deleted, or whose session expired on a renewing client, joins
//! again.

use std::time::Duration;

use bytes::Bytes;
use zk_recipes::group::{Group, MembershipEvent, MembershipEvents};
use zk_testkit::client::{
    builder, connect, connect_proxied, connect_with, expire_session, start_server, within,
};

const WITHIN: Duration = Duration::from_secs(20);

async fn next(events: &mut MembershipEvents) -> MembershipEvent {
    within("membership event", WITHIN, events.next())
        .await
        .expect("event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_join_change_and_leave_and_a_crashed_member_expires() {
    let server = start_server().await;
    let observer = connect(&server.connect_string()).await;
    let alice = connect(&server.connect_string()).await;
    // Bob's process is cut off from the server by its proxy: it crashes, as far as the
    // ensemble can tell, and its session expires after 1 s.
    let bob = connect_proxied(
        server.addr(),
        builder().session_timeout(Duration::from_secs(1)),
    )
    .await;

    let group = Group::new(&alice, "/groups/workers");
    let a = group
        .join("alice", "a:1", Some(WITHIN))
        .await
        .expect("join");
    assert_eq!(a.name(), "alice");
    let b = Group::new(&bob.client, "/groups/workers")
        .join("bob", "b:1", Some(WITHIN))
        .await
        .expect("join");
    // A name already taken by another session is refused.
    let taken = Group::new(&observer, "/groups/workers")
        .join("alice", "x", Some(WITHIN))
        .await;
    assert_eq!(
        taken.err(),
        Some(zk_recipes::Error::Zk(zk_proto::Error::NodeExists))
    );

    let view = Group::new(&observer, "/groups/workers")
        .view(Some(WITHIN))
        .await
        .expect("view");
    let mut events = view.events();
    let members = view.members();
    assert_eq!(members.keys().collect::<Vec<_>>(), ["alice", "bob"]);
    assert_eq!(members["bob"], Bytes::from("b:1"));

    let carol = Group::new(&observer, "/groups/workers")
        .join("carol", "c:1", Some(WITHIN))
        .await
        .expect("join");
    a.set_data("a:2").await.expect("set");
    carol.leave().await.expect("leave");
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Joined {
            name: "carol".into(),
            data: "c:1".into()
        }
    );
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Updated {
            name: "alice".into(),
            data: "a:2".into()
        }
    );
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Left {
            name: "carol".into()
        }
    );

    // Bob crashes: nothing more reaches the server from him, and his session expires.
    bob.proxy.isolate();
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Left { name: "bob".into() }
    );
    assert!(!view.contains("bob"));
    assert!(view.contains("alice"));
    drop(b);

    // Dropping a member leaves the group.
    drop(a);
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Left {
            name: "alice".into()
        }
    );
    assert!(view.members().is_empty());
}

/// The next events are `name` leaving, then joining again with `data`.
async fn left_and_joined_again(events: &mut MembershipEvents, name: &str, data: &str) {
    assert_eq!(
        next(events).await,
        MembershipEvent::Left { name: name.into() }
    );
    assert_eq!(
        next(events).await,
        MembershipEvent::Joined {
            name: name.into(),
            data: Bytes::copy_from_slice(data.as_bytes())
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_joins_again_after_its_node_is_deleted_and_after_its_session_expired() {
    let server = start_server().await;
    let cs = server.connect_string();
    let observer = connect(&cs).await;
    let client = connect_with(builder().renew_expired_sessions(true), &cs).await;
    let me = Group::new(&client, "/groups/kept")
        .join("m", "1", Some(WITHIN))
        .await
        .expect("join");
    let view = Group::new(&observer, "/groups/kept")
        .view(Some(WITHIN))
        .await
        .expect("view");
    let mut events = view.events();
    assert!(view.contains("m"));

    // Deleted by someone else: back at once, with its data.
    observer
        .delete("/groups/kept/m", None)
        .await
        .expect("delete");
    left_and_joined_again(&mut events, "m", "1").await;
    me.set_data("2").await.expect("set");
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Updated {
            name: "m".into(),
            data: "2".into()
        }
    );

    // The session expires: the member leaves with it and joins again in the next one.
    let old = client.session_id();
    expire_session(&client, &cs).await;
    left_and_joined_again(&mut events, "m", "2").await;
    me.wait_joined(Some(WITHIN)).await.expect("joined");
    let (_, stat) = observer.get_data("/groups/kept/m").await.expect("read");
    assert_ne!(stat.ephemeral_owner, old);
    assert_eq!(stat.ephemeral_owner, client.session_id());

    me.leave().await.expect("leave");
    assert_eq!(
        next(&mut events).await,
        MembershipEvent::Left { name: "m".into() }
    );
}
