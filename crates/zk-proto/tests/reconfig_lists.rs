//! The list forms of reconfig (`Client::reconfig_incremental`, `Client::reconfig_members`,
//! as the Java client's `ZooKeeperAdmin.reconfigure`) against a real ensemble with
//! reconfigEnabled: a server joins and leaves incrementally, the whole membership is given,
//! and a stale `from_config` version is refused without a change.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use zk_proto::{Error, Stat};
use zk_testkit::DynamicEnsemble;
use zk_testkit::client::{
    blocking, builder, connect_with, read_config, serial, start_dynamic_ensemble, within,
};
use zk_testkit::started;

/// How long the leader's transient answers are waited through.
const LIMIT: Duration = Duration::from_secs(30);

/// The server lines of a configuration.
fn members(config: &str) -> Vec<String> {
    config
        .lines()
        .filter(|l| l.starts_with("server."))
        .map(str::to_owned)
        .collect()
}

/// The version of a configuration (`version=<hex>`).
fn version(config: &str) -> i64 {
    let hex = config
        .lines()
        .find_map(|l| l.strip_prefix("version="))
        .unwrap_or_else(|| panic!("no version in {config:?}"));
    i64::from_str_radix(hex.trim(), 16).expect("a hex version")
}

/// Runs `call` again while the leader answers that another reconfig is in progress or that
/// the new configuration has no synced quorum yet (both documented and transient).
async fn through_transients<F, Fut>(mut call: F) -> zk_proto::Result<(Bytes, Stat)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = zk_proto::Result<(Bytes, Stat)>>,
{
    let deadline = Instant::now() + LIMIT;
    loop {
        match within("reconfig", LIMIT, call()).await {
            Err(Error::ReconfigInProgress | Error::NewConfigNoQuorum)
                if Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_join_and_leave_by_lists_and_by_whole_membership() {
    let _serial = serial().await;
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    // Not following the configuration: a client that follows it is rebalanced onto the
    // joining server, and the move fails the reconfig in flight with ConnectionLoss (seen on
    // a loaded machine). The forms of the request are what this test is about.
    let client = connect_with(builder().follow_ensemble(false), &ensemble.connect_string()).await;
    let initial = read_config(&client).await;
    let original = members(&initial);
    assert_eq!(original.len(), 3, "{initial}");

    // A stale version: refused, nothing changes.
    let stale = through_transients(|| {
        client.reconfig_incremental(Vec::<String>::new(), [3], Some(version(&initial) - 1))
    })
    .await;
    assert_eq!(stale.map(drop), Err(Error::BadVersion));
    assert_eq!(members(&read_config(&client).await), original);

    // Incremental: server 4 joins, at the current version.
    let e = Arc::clone(&ensemble);
    let joiner = started(blocking(move || e.spawn_joiner()).await);
    let (data, stat) = through_transients(|| {
        client.reconfig_incremental([joiner.server_line.as_str()], [], Some(version(&initial)))
    })
    .await
    .expect("server 4 joins");
    let joined = String::from_utf8_lossy(&data).into_owned();
    assert!(members(&joined).contains(&joiner.server_line), "{joined}");
    assert_eq!(members(&joined).len(), 4);
    assert!(stat.mzxid > 0);
    assert_eq!(read_config(&client).await, joined);

    // Incremental: server 4 leaves by its id.
    let (data, _) = through_transients(|| {
        client.reconfig_incremental(Vec::<String>::new(), [u64::from(joiner.id)], None)
    })
    .await
    .expect("server 4 leaves");
    let left = String::from_utf8_lossy(&data).into_owned();
    assert_eq!(members(&left), original, "{left}");

    // Non-incremental: the whole membership, server 4 in it again.
    let mut all = original.clone();
    all.push(joiner.server_line.clone());
    let (data, _) = through_transients(|| client.reconfig_members(all.clone(), None))
        .await
        .expect("the four as the membership");
    let replaced = String::from_utf8_lossy(&data).into_owned();
    assert_eq!(members(&replaced), all, "{replaced}");
    assert!(version(&replaced) > version(&left));

    // Checked before sending: nothing reaches the server.
    assert!(matches!(
        client.reconfig_members(Vec::<String>::new(), None).await,
        Err(Error::InvalidArgument(_))
    ));
    client.close().await.expect("close");
}
