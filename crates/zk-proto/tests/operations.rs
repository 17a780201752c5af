//! Every operation against a real ZooKeeper 3.8 server: success and error paths.

mod support;

use std::time::Duration;

use bytes::Bytes;
use zk_proto::acl::{digest_acl, open_acl_unsafe, world_acl};
use zk_proto::{
    CreateMode, CreateOptions, Error, MultiItem, MultiOperation, MultiReadItem, Perms,
    SessionState, WatcherType,
};
use zk_testkit::client::{builder, connect};

#[tokio::test]
async fn create_read_write_delete_and_their_errors() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    assert_eq!(client.state(), SessionState::Connected);
    assert_ne!(client.session_id(), 0);
    assert_eq!(client.negotiated_timeout(), Some(Duration::from_secs(4)));

    let (path, stat) = client
        .create("/a", "one", &CreateOptions::persistent())
        .await
        .expect("create /a");
    assert_eq!(
        (path.as_str(), stat.version, stat.data_length),
        ("/a", 0, 3)
    );
    assert_eq!(
        client.create("/a", "", &CreateOptions::persistent()).await,
        Err(Error::NodeExists)
    );
    assert_eq!(
        client
            .create("/missing/child", "", &CreateOptions::persistent())
            .await,
        Err(Error::NoNode)
    );
    assert!(matches!(
        client
            .create("/bad/", "", &CreateOptions::persistent())
            .await,
        Err(Error::InvalidPath(_))
    ));

    let (data, stat) = client.get_data("/a").await.expect("getData");
    assert_eq!((&data[..], stat.version), (&b"one"[..], 0));
    let stat = client
        .set_data("/a", "two", Some(0))
        .await
        .expect("setData v0");
    assert_eq!(stat.version, 1);
    assert_eq!(
        client.set_data("/a", "x", Some(0)).await,
        Err(Error::BadVersion)
    );
    assert_eq!(client.get_data("/nope").await, Err(Error::NoNode));
    assert_eq!(client.exists("/nope").await, Ok(None));
    assert_eq!(
        client
            .exists("/a")
            .await
            .expect("exists")
            .map(|s| s.version),
        Some(1)
    );

    let (seq, _) = client
        .create(
            "/a/s-",
            "",
            &CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL),
        )
        .await
        .expect("sequential");
    assert!(
        seq.starts_with("/a/s-") && seq.len() == "/a/s-".len() + 10,
        "{seq}"
    );
    let (eph, stat) = client
        .create("/a/e", "", &CreateOptions::ephemeral())
        .await
        .expect("ephemeral");
    assert_eq!(stat.ephemeral_owner, client.session_id());
    assert_eq!(
        client
            .create("/a/e/c", "", &CreateOptions::persistent())
            .await,
        Err(Error::NoChildrenForEphemerals)
    );
    let (children, stat) = client.get_children2("/a").await.expect("getChildren2");
    let mut sorted = children.clone();
    sorted.sort();
    assert_eq!(sorted, ["e", &seq["/a/".len()..]]);
    assert_eq!(stat.num_children, 2);
    assert_eq!(
        client.get_children("/a").await.expect("getChildren").len(),
        2
    );
    assert_eq!(client.get_all_children_number("/a").await, Ok(2));
    assert_eq!(
        client.get_ephemerals("/").await.map(|l| l.to_vec()),
        Ok(vec![eph.clone()])
    );
    assert_eq!(client.delete("/a", None).await, Err(Error::NotEmpty));
    assert_eq!(client.delete(&eph, Some(5)).await, Err(Error::BadVersion));
    client
        .delete(&eph, Some(0))
        .await
        .expect("delete ephemeral");
    assert_eq!(client.delete(&eph, None).await, Err(Error::NoNode));
    client.sync("/a").await.expect("sync");

    let (container, _) = client
        .create("/c", "", &CreateOptions::new(CreateMode::CONTAINER))
        .await
        .expect("container");
    assert_eq!(container, "/c");
    let (ttl, stat) = client
        .create(
            "/t-",
            "",
            &CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL_WITH_TTL)
                .with_ttl(Duration::from_secs(60)),
        )
        .await
        .expect("sequential TTL");
    assert!(ttl.starts_with("/t-"));
    assert_eq!(stat.version, 0);
    client
        .create(
            "/t",
            "",
            &CreateOptions::new(CreateMode::PERSISTENT_WITH_TTL).with_ttl(Duration::from_secs(60)),
        )
        .await
        .expect("TTL");
    assert!(matches!(
        client
            .create(
                "/t2",
                "",
                &CreateOptions::new(CreateMode::PERSISTENT_WITH_TTL)
            )
            .await,
        Err(Error::InvalidArgument(_))
    ));

    let (acl, _) = client.get_acl("/a").await.expect("getACL");
    assert_eq!(acl, open_acl_unsafe());
    let stat = client
        .set_acl("/a", vec![world_acl(Perms::READ | Perms::WRITE)], Some(0))
        .await
        .expect("setACL");
    assert_eq!(stat.aversion, 1);
    assert_eq!(
        client.set_acl("/a", vec![], None).await,
        Err(Error::InvalidAcl)
    );

    let identities = client.who_am_i().await.expect("whoAmI");
    assert_eq!(identities[0].auth_scheme, "ip");
    client.close().await.expect("close");
    assert_eq!(client.state(), SessionState::Closed);
    assert_eq!(client.get_data("/a").await, Err(Error::Closed));
}

#[tokio::test]
async fn check_and_multi_report_per_operation_results() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/m", "", &CreateOptions::persistent())
        .await
        .expect("create");

    // 3.8.0 never answers a standalone check that succeeds; ours goes inside a multi.
    client.check("/m", Some(0)).await.expect("check passes");
    assert_eq!(client.check("/m", Some(3)).await, Err(Error::BadVersion));

    let items = client
        .multi(vec![
            MultiOperation::check("/m", Some(0)),
            MultiOperation::create(
                "/m/x",
                Bytes::from_static(b"x"),
                &CreateOptions::new(CreateMode::PERSISTENT),
            ),
            MultiOperation::set_data("/m", Bytes::from_static(b"v"), Some(0)),
            MultiOperation::delete("/m/x", Some(0)),
        ])
        .await
        .expect("multi");
    assert!(matches!(&items[0], MultiItem::Checked));
    assert!(matches!(&items[1], MultiItem::Created { path, .. } if path == "/m/x"));
    assert!(matches!(&items[2], MultiItem::DataSet { stat } if stat.version == 1));
    assert!(matches!(&items[3], MultiItem::Deleted));

    let failed = client
        .multi(vec![
            MultiOperation::set_data("/m", Bytes::new(), Some(1)),
            MultiOperation::delete("/m/none", None),
            MultiOperation::check("/m", Some(1)),
        ])
        .await
        .expect("a failed transaction is still a reply");
    let errors: Vec<_> = failed.iter().map(|item| item.error().cloned()).collect();
    assert_eq!(
        errors,
        [None, Some(Error::NoNode), Some(Error::RuntimeInconsistency)]
    );
    assert_eq!(
        client.get_data("/m").await.expect("unchanged").1.version,
        1,
        "rolled back"
    );

    let reads = client
        .multi_read(vec![
            MultiOperation::get_data("/m"),
            MultiOperation::get_children("/none"),
            MultiOperation::get_children("/m"),
        ])
        .await
        .expect("multiRead");
    assert!(matches!(&reads[0], Ok(MultiReadItem::Data(data, _)) if &data[..] == b"v"));
    assert_eq!(reads[1], Err(Error::NoNode));
    assert_eq!(reads[2], Ok(MultiReadItem::Children(Default::default())));
    assert!(matches!(
        client.multi(vec![MultiOperation::get_data("/m")]).await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn ten_thousand_pipelined_requests_complete_in_call_order() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/p", "", &CreateOptions::persistent())
        .await
        .expect("create");
    // Queued in call order now, awaited all together later.
    let calls: Vec<_> = (0..10_000)
        .map(|n| client.set_data("/p", n.to_string(), Some(n)))
        .collect();
    let stats = futures_join_all(calls).await;
    for (n, stat) in stats.into_iter().enumerate() {
        let stat = stat.unwrap_or_else(|e| panic!("setData #{n}: {e}"));
        assert_eq!(stat.version, n as i32 + 1, "request {n} ran out of order");
    }
}

async fn futures_join_all<F: std::future::Future + Send + 'static>(
    futures: Vec<F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}

#[tokio::test]
async fn a_two_mib_set_data_is_refused_client_side() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/big", "", &CreateOptions::persistent())
        .await
        .expect("create");
    let result = client.set_data("/big", vec![0u8; 2 << 20], None).await;
    assert!(
        matches!(result, Err(Error::PacketTooLarge { max: 1_048_575, .. })),
        "{result:?}"
    );
    assert_eq!(
        client.state(),
        SessionState::Connected,
        "the connection is untouched"
    );
    client
        .set_data("/big", "small", None)
        .await
        .expect("still usable");
}

#[tokio::test]
async fn digest_auth_keeps_an_unauthenticated_session_out() {
    let server = support::server().await;
    let owner = connect(&server.connect_string()).await;
    owner
        .add_digest_auth("alice", "secret")
        .await
        .expect("addAuth");
    let acl = vec![digest_acl("alice", "secret", Perms::ALL).expect("acl")];
    owner
        .create("/private", "s", &CreateOptions::persistent().with_acl(acl))
        .await
        .expect("create with digest ACL");
    assert_eq!(
        &owner.get_data("/private").await.expect("owner reads").0[..],
        b"s"
    );
    let identities = owner.who_am_i().await.expect("whoAmI");
    assert!(identities.iter().any(|i| i.auth_scheme == "digest"));

    let stranger = connect(&server.connect_string()).await;
    assert_eq!(stranger.get_data("/private").await, Err(Error::NoAuth));
    stranger
        .add_digest_auth("alice", "wrong")
        .await
        .expect("digest never fails");
    assert_eq!(stranger.get_data("/private").await, Err(Error::NoAuth));
    assert!(matches!(
        stranger.add_digest_auth("a:b", "x").await,
        Err(Error::InvalidArgument(_))
    ));
}

#[tokio::test]
async fn watcher_types_the_server_does_not_know_fail_instead_of_hanging() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    client
        .create("/w", "", &CreateOptions::persistent())
        .await
        .expect("create");
    assert_eq!(
        client.check_watches("/w", WatcherType::DATA).await,
        Err(Error::NoWatcher)
    );
    let result = client.remove_watches("/w", WatcherType::PERSISTENT).await;
    assert!(result.is_err(), "{result:?}");
    // Whatever the server did with it, the session still works.
    client.get_data("/w").await.expect("still usable");
}

#[tokio::test]
async fn close_removes_ephemerals_at_once() {
    let server = support::server().await;
    let watcher = connect(&server.connect_string()).await;
    let owner = connect(&server.connect_string()).await;
    owner
        .create("/eph", "", &CreateOptions::ephemeral())
        .await
        .expect("create");
    let (stat, gone) = watcher.exists_watch("/eph").await.expect("exists");
    assert!(stat.is_some());
    owner.close().await.expect("close");
    let event = tokio::time::timeout(Duration::from_secs(1), gone.changed())
        .await
        .expect("deleted well within the session timeout")
        .expect("event");
    assert_eq!(event.event_type, zk_proto::EventType::NODE_DELETED);
    assert_eq!(watcher.exists("/eph").await, Ok(None));
}

#[tokio::test]
async fn fail_fast_connect_reports_no_server() {
    let port = zk_testkit::free_port().expect("free port");
    let result = builder()
        .fail_fast(true)
        .connect(&format!("127.0.0.1:{port},127.0.0.1:{port}"))
        .await;
    assert!(
        matches!(result, Err(Error::NoServerReachable { attempts: 2, .. })),
        "{result:?}"
    );
    assert!(matches!(
        builder().connect("127.0.0.1:2181,,x").await,
        Err(Error::InvalidConnectString(_))
    ));
}

#[tokio::test]
async fn dropped_calls_never_desynchronize_the_connection() {
    let server = support::server().await;
    let client = builder()
        .max_in_flight(4)
        .connect(&server.connect_string())
        .await
        .expect("connect");
    client
        .create("/d", "data", &CreateOptions::persistent())
        .await
        .expect("create");
    for round in 0..50 {
        // Some dropped before they are polled, some after being polled once.
        let never_polled = client.get_data("/d");
        let mut polled_once = Box::pin(client.set_data("/d", format!("v{round}"), None));
        let _ = tokio::time::timeout(Duration::ZERO, &mut polled_once).await;
        drop(never_polled);
        drop(polled_once);
    }
    // Every reply above was read and discarded in order; this one matches its own call.
    let (data, stat) = client.get_data("/d").await.expect("getData");
    assert_eq!((&data[..], stat.version), (&b"v49"[..], 50));
    assert_eq!(client.state(), SessionState::Connected);
}

#[tokio::test]
async fn reconfig_on_a_server_without_dynamic_reconfig_is_refused() {
    let server = support::server().await;
    let client = connect(&server.connect_string()).await;
    let request = zk_proto::jute::ReconfigRequest {
        joining_servers: None,
        leaving_servers: Some("2".into()),
        new_members: None,
        cur_config_id: -1,
    };
    assert_eq!(client.reconfig(request).await, Err(Error::ReconfigDisabled));
    assert_eq!(
        client.get_all_children_number("/none").await,
        Err(Error::NoNode)
    );
    assert_eq!(client.get_acl("/none").await, Err(Error::NoNode));
    assert_eq!(
        client.sync("/bad/").await,
        Err(Error::InvalidPath(
            zk_proto::path::validate_path("/bad/").expect_err("invalid")
        ))
    );
}
