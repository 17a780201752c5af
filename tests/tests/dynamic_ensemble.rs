//! The test kit's dynamic ensemble on real 3.8 servers: every original member replaced by a
//! joiner, one at a time; growing from three members to five; and why the kit's servers skip
//! ACLs (reconfig needs the super user otherwise).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use zk_proto::jute::ReconfigRequest;
use zk_proto::{Client, CreateOptions, Error};
use zk_testkit::client::{
    add_member, blocking, connect, read_config, reconfig, remove_member, replace_member, serial,
    start_dynamic_ensemble, within,
};
use zk_testkit::{DynamicEnsemble, Mode, started};

const CALL: Duration = Duration::from_secs(10);

/// The `server.N=` lines of a configuration text.
fn server_lines(config: &str) -> BTreeSet<String> {
    config
        .lines()
        .filter(|l| l.starts_with("server."))
        .map(str::to_owned)
        .collect()
}

/// The lines the live servers have in the configuration, as the kit wrote them.
fn live_lines(ensemble: &DynamicEnsemble) -> BTreeSet<String> {
    ensemble
        .live_ids()
        .into_iter()
        .map(|id| ensemble.server_line(id))
        .collect()
}

async fn create(client: &Client, path: &str, data: &str) {
    within(
        "create",
        CALL,
        client.create(path, data.as_bytes().to_vec(), &CreateOptions::persistent()),
    )
    .await
    .unwrap_or_else(|e| panic!("create {path}: {e}"));
}

/// With a new session on the live servers: `/zookeeper/config` lists exactly the live servers,
/// and every node of `written` has its data.
async fn check(ensemble: &DynamicEnsemble, written: &[(String, String)]) {
    let client = connect(&ensemble.connect_string()).await;
    let config = read_config(&client).await;
    assert_eq!(server_lines(&config), live_lines(ensemble), "{config}");
    for (path, data) in written {
        let (got, _) = within("getData", CALL, client.get_data(path))
            .await
            .unwrap_or_else(|e| panic!("get {path}: {e}"));
        assert_eq!(&got[..], data.as_bytes(), "{path}");
    }
    within("close", CALL, client.close()).await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replacing_every_original_member_keeps_the_data_and_the_config_follows() {
    let _serial = serial().await;
    let t = Instant::now();
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    eprintln!("start of 3 took {:.2?}", t.elapsed());
    assert_eq!(ensemble.live_ids(), vec![1, 2, 3]);

    let mut written = vec![("/before".to_owned(), "written before".to_owned())];
    {
        let client = connect(&ensemble.connect_string()).await;
        create(&client, "/before", "written before").await;
        client.close().await.expect("close");
    }
    check(&ensemble, &written).await;

    // The leader first: removing it makes it hand leadership over, and the servers drop
    // their client connections (the helpers then read the outcome from /zookeeper/config).
    let first = blocking({
        let e = Arc::clone(&ensemble);
        move || e.wait_for_leader()
    })
    .await
    .expect("a leader");
    let order: Vec<u32> = std::iter::once(first)
        .chain([1u32, 2, 3].into_iter().filter(|&id| id != first))
        .collect();
    for (step, old) in order.into_iter().enumerate() {
        let t = Instant::now();
        // The reconfigs go through a session on the live servers, the one leaving included.
        let client = connect(&ensemble.connect_string()).await;
        let leader = ensemble.leader_id();
        let new = replace_member(&ensemble, &client, old).await;
        eprintln!(
            "replacing {old} (leader before: {leader:?}) by {new} took {:.2?}",
            t.elapsed()
        );
        assert_eq!(new, 4 + u32::try_from(step).expect("step"));
        assert!(!ensemble.member(old).is_running(), "{old} was stopped");
        let path = format!("/after-{old}");
        create(&client, &path, &format!("written after replacing {old}")).await;
        written.push((path, format!("written after replacing {old}")));
        client.close().await.expect("close");
        check(&ensemble, &written).await;
    }
    assert_eq!(ensemble.live_ids(), vec![4, 5, 6]);
    assert_eq!(ensemble.ids(), vec![1, 2, 3, 4, 5, 6]);
    let leader = blocking({
        let e = Arc::clone(&ensemble);
        move || e.wait_for_leader()
    })
    .await
    .expect("a leader among the new members");
    assert!([4, 5, 6].contains(&leader), "{leader}");
    eprintln!("the whole test took {:.2?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn growing_from_three_to_five_members_and_restarting_one() {
    let _serial = serial().await;
    let t = Instant::now();
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    let client = connect(&ensemble.connect_string()).await;
    create(&client, "/kept", "kept").await;
    let written = vec![("/kept".to_owned(), "kept".to_owned())];

    for expected_id in [4u32, 5] {
        let joiner = started(
            blocking({
                let e = Arc::clone(&ensemble);
                move || e.spawn_joiner()
            })
            .await,
        );
        assert_eq!(joiner.id, expected_id);
        assert_eq!(joiner.server_line, ensemble.server_line(joiner.id));
        // Synced, serving as a non-voting follower, and absent from the configuration.
        let member = ensemble.member(joiner.id);
        assert_eq!(member.mode().expect("srvr"), Mode::Follower);
        let seen = ensemble.membership_seen_by(joiner.id).expect("conf");
        assert!(!seen.contains(&joiner.id), "{seen:?}");
        assert!(!server_lines(&read_config(&client).await).contains(&joiner.server_line));

        let config = add_member(&client, &joiner.server_line).await;
        assert!(
            server_lines(&config).contains(&joiner.server_line),
            "{config}"
        );
        check(&ensemble, &written).await;
    }
    let config = read_config(&client).await;
    assert_eq!(server_lines(&config).len(), 5, "{config}");
    assert_eq!(ensemble.live_ids(), vec![1, 2, 3, 4, 5]);
    blocking({
        let e = Arc::clone(&ensemble);
        move || e.wait_for_membership(&[1, 2, 3, 4, 5])
    })
    .await
    .expect("every server runs with the five");

    // A member restarts from the configuration ZooKeeper rewrote: a joiner, killed.
    let t_restart = Instant::now();
    blocking({
        let e = Arc::clone(&ensemble);
        move || {
            e.kill(5);
            e.restart(5)?;
            e.wait_for_leader()
        }
    })
    .await
    .expect("server 5 comes back");
    eprintln!("restart of 5 took {:.2?}", t_restart.elapsed());
    assert_eq!(
        ensemble.membership_seen_by(5).expect("conf"),
        vec![1, 2, 3, 4, 5]
    );
    check(&ensemble, &written).await;

    // Shrinking back: remove the two first members; the config follows.
    for old in [1u32, 2] {
        let config = remove_member(&client, old).await;
        assert!(
            !server_lines(&config).contains(&ensemble.server_line(old)),
            "{config}"
        );
    }
    blocking({
        let e = Arc::clone(&ensemble);
        move || -> zk_testkit::Result<u32> {
            e.wait_for_membership(&[3, 4, 5])?;
            e.stop(1);
            e.stop(2);
            e.wait_for_leader()
        }
    })
    .await
    .expect("three members left");
    client.close().await.expect("close");
    check(&ensemble, &written).await;
    eprintln!("the whole test took {:.2?}", t.elapsed());
}

/// `super:testkit`, as `DigestAuthenticationProvider` digests it (base64 of SHA-1).
const SUPER_DIGEST: &str = "super:gEIR0r7Tw8RocHTZ2aR5vFozec4=";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_skip_acl_reconfig_needs_the_super_user() {
    let _serial = serial().await;
    // One participant: standaloneEnabled=false keeps it a quorum peer (its own leader).
    let ensemble = start_dynamic_ensemble(
        DynamicEnsemble::builder(1)
            .system_property("zookeeper.skipACL", "no")
            .system_property(
                "zookeeper.DigestAuthenticationProvider.superDigest",
                SUPER_DIGEST,
            ),
    )
    .await;
    assert_eq!(ensemble.member(1).mode().expect("srvr"), Mode::Leader);
    let client = connect(&ensemble.connect_string()).await;
    // Removing a server that is not there commits an unchanged configuration: the request
    // is valid, only the authorization decides.
    let request = ReconfigRequest {
        joining_servers: None,
        leaving_servers: Some("2".into()),
        new_members: None,
        cur_config_id: -1,
    };
    assert_eq!(reconfig(&client, request.clone()).await, Err(Error::NoAuth));
    within("addAuth", CALL, client.add_auth("digest", "super:testkit"))
        .await
        .expect("super user");
    let (config, _) = reconfig(&client, request).await.expect("reconfig as super");
    let config = String::from_utf8_lossy(&config).into_owned();
    assert_eq!(
        server_lines(&config),
        BTreeSet::from([ensemble.server_line(1)]),
        "{config}"
    );
    client.close().await.expect("close");
}
