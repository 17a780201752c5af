//! Dynamic reconfiguration helpers of [`zk_testkit::client`](super): membership changes with
//! `reconfig` that wait through the leader's documented transient answers and lost replies.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;
use zk_proto::jute::ReconfigRequest;
use zk_proto::{Client, Stat};

use super::{CALL_LIMIT, blocking, within};
use crate::dynamic::membership_lines;
use crate::{DynamicEnsemble, DynamicEnsembleBuilder, started};

/// How long [`reconfig`], [`add_member`], [`remove_member`] and [`replace_member`]'s reconfigs
/// keep trying through the leader's transient answers (`ReconfigInProgress`,
/// `NewConfigNoQuorum`) and lost replies before they give up.
///
/// Those answers are documented and expected, not flakiness: ZooKeeper runs one reconfig at
/// a time, refuses one while no quorum of the new configuration is synced with the leader,
/// and drops every client connection when the leader itself is removed (it hands
/// leadership over), so a committed reconfig's reply can be lost. 30 s is far above the
/// second or two a leader hand-off takes with the kit's `tickTime`.
pub const RECONFIG_LIMIT: Duration = Duration::from_secs(30);

/// The pause between two reconfig attempts.
const RECONFIG_PAUSE: Duration = Duration::from_millis(100);

/// The node that holds the ensemble's configuration.
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// Starts the dynamic ensemble `builder` describes on a blocking thread and waits until every
/// server serves and one leads ([`DynamicEnsemble::start`]). Shared, so that blocking calls
/// on it (joiners, stops, waits) can go to [`blocking`].
///
/// # Panics
///
/// As [`start_server`](super::start_server).
pub async fn start_dynamic_ensemble(builder: DynamicEnsembleBuilder) -> Arc<DynamicEnsemble> {
    Arc::new(started(blocking(move || builder.start()).await))
}

/// Sends `request`, and sends it again (every 100 ms, at most [`RECONFIG_LIMIT`]) while the
/// leader answers [`ReconfigInProgress`](zk_proto::Error::ReconfigInProgress) or
/// [`NewConfigNoQuorum`](zk_proto::Error::NewConfigNoQuorum). Returns the new configuration
/// and the Stat of [`CONFIG_NODE`], or the first other error, or the last of those two when
/// the limit has passed. A reply lost with the connection is returned as the error it is
/// ([`add_member`] and [`remove_member`] look up the outcome).
///
/// # Panics
///
/// When there is no answer within [`RECONFIG_LIMIT`].
pub async fn reconfig(
    client: &Client,
    request: ReconfigRequest,
) -> zk_proto::Result<(Bytes, Stat)> {
    let deadline = Instant::now() + RECONFIG_LIMIT;
    match reconfig_until(client, &request, deadline).await {
        Some(result) => result,
        None => panic!("reconfig {request:?}: no answer within {RECONFIG_LIMIT:?}"),
    }
}

/// [`reconfig`] with a deadline; `None` when it passes without an answer.
async fn reconfig_until(
    client: &Client,
    request: &ReconfigRequest,
    deadline: Instant,
) -> Option<zk_proto::Result<(Bytes, Stat)>> {
    loop {
        let result = tokio::time::timeout_at(deadline, client.reconfig(request.clone()))
            .await
            .ok()?;
        match result {
            Err(zk_proto::Error::ReconfigInProgress | zk_proto::Error::NewConfigNoQuorum)
                if Instant::now() + RECONFIG_PAUSE < deadline =>
            {
                tokio::time::sleep(RECONFIG_PAUSE).await;
            }
            other => return Some(other),
        }
    }
}

/// The configuration the ensemble has committed: `sync` then `getData` of [`CONFIG_NODE`]
/// (`server.N=...` lines and `version=...`), each call bounded by 10 s.
///
/// # Panics
///
/// On an error, or when a call takes longer.
pub async fn read_config(client: &Client) -> String {
    within(
        "read the configuration",
        2 * CALL_LIMIT,
        try_read_config(client),
    )
    .await
    .unwrap_or_else(|e| panic!("read {CONFIG_NODE}: {e}"))
}

async fn try_read_config(client: &Client) -> zk_proto::Result<String> {
    client.sync(CONFIG_NODE).await?;
    let (data, _) = client.get_data(CONFIG_NODE).await?;
    Ok(String::from_utf8_lossy(&data).into_owned())
}

/// Adds a server to the configuration: a reconfig with `joiningServers` = `server_line`
/// (`server.N=host:quorum:election[:role];[host:]client`, as
/// [`Joiner::server_line`](crate::Joiner::server_line)), then returns the new configuration.
/// Waits through the leader's transient answers as [`reconfig`] does; when the reply is lost
/// with the connection, reads [`CONFIG_NODE`] and is done when the line is there, else sends
/// the reconfig again (adding a present server commits an unchanged configuration). All
/// within [`RECONFIG_LIMIT`].
///
/// The new server should be running and synced ([`DynamicEnsemble::spawn_joiner`] waits for
/// that): ZooKeeper does not check it, it only needs a quorum of the new configuration.
///
/// # Panics
///
/// On any other error, or when the server is not in the configuration after
/// [`RECONFIG_LIMIT`].
pub async fn add_member(client: &Client, server_line: &str) -> String {
    let line = if server_line.starts_with("server.") {
        server_line.to_owned()
    } else {
        format!("server.{server_line}")
    };
    let request = ReconfigRequest {
        joining_servers: Some(server_line.to_owned()),
        leaving_servers: None,
        new_members: None,
        cur_config_id: -1,
    };
    let applied = |config: &str| membership_lines(config).iter().any(|(_, l)| *l == line);
    change_membership(client, request, &format!("add {server_line}"), applied).await
}

/// Removes server `id` from the configuration: a reconfig with `leavingServers` = `id`, then
/// returns the new configuration. Retries as [`add_member`] does; removing an absent server
/// commits an unchanged configuration. The server keeps running as a non-voting follower:
/// stop it once [`DynamicEnsemble::wait_for_membership`] holds (as [`replace_member`] does).
///
/// # Panics
///
/// On any other error, or when the server is still in the configuration after
/// [`RECONFIG_LIMIT`].
pub async fn remove_member(client: &Client, id: u32) -> String {
    let request = ReconfigRequest {
        joining_servers: None,
        leaving_servers: Some(id.to_string()),
        new_members: None,
        cur_config_id: -1,
    };
    let applied = |config: &str| !membership_lines(config).iter().any(|(i, _)| *i == id);
    change_membership(client, request, &format!("remove server {id}"), applied).await
}

async fn change_membership(
    client: &Client,
    request: ReconfigRequest,
    what: &str,
    applied: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + RECONFIG_LIMIT;
    loop {
        let error = match reconfig_until(client, &request, deadline).await {
            Some(Ok((data, _))) => return String::from_utf8_lossy(&data).into_owned(),
            Some(Err(e)) if e.is_outcome_unknown() => e,
            Some(Err(e)) => panic!("{what}: {e}"),
            None => panic!("{what}: no answer within {RECONFIG_LIMIT:?}"),
        };
        // The reply was lost (the leader hands over when it is removed, dropping every
        // connection): the reconfig may have been committed. The read waits for the session
        // to reconnect.
        if let Ok(Ok(config)) = tokio::time::timeout_at(deadline, try_read_config(client)).await
            && applied(&config)
        {
            return config;
        }
        assert!(
            Instant::now() + RECONFIG_PAUSE < deadline,
            "{what}: {error}, and {CONFIG_NODE} does not show it within {RECONFIG_LIMIT:?}"
        );
        tokio::time::sleep(RECONFIG_PAUSE).await;
    }
}

/// Replaces server `old_id` with a new one and returns the new server's id:
/// [`DynamicEnsemble::spawn_joiner`], [`add_member`] with its line, [`remove_member`] of
/// `old_id`, then (on a blocking thread) [`DynamicEnsemble::wait_for_membership`] of the new
/// configuration, a graceful stop of `old_id`, and [`DynamicEnsemble::wait_for_leader`].
///
/// `client` may be connected to `old_id`; give it a connect string with other servers too,
/// so that it moves when `old_id` stops.
///
/// # Panics
///
/// When a step fails (the joiner does not start, a reconfig fails, the live servers do not
/// all run with the new configuration within the startup timeout, no leader after the
/// stop), or when `ensemble` started no server `old_id`.
pub async fn replace_member(ensemble: &Arc<DynamicEnsemble>, client: &Client, old_id: u32) -> u32 {
    // Fail before starting anything when the id is not the ensemble's.
    drop(ensemble.member(old_id));
    let e = Arc::clone(ensemble);
    let joiner = started(blocking(move || e.spawn_joiner()).await);
    add_member(client, &joiner.server_line).await;
    let config = remove_member(client, old_id).await;
    let ids: Vec<u32> = membership_lines(&config)
        .iter()
        .map(|(id, _)| *id)
        .collect();
    let e = Arc::clone(ensemble);
    blocking(move || {
        e.wait_for_membership(&ids)
            .unwrap_or_else(|err| panic!("replace server {old_id}: {err}"));
        e.stop(old_id);
        e.wait_for_leader()
            .unwrap_or_else(|err| panic!("replace server {old_id}: {err}"));
    })
    .await;
    joiner.id
}
