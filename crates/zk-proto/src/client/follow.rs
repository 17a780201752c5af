//! Following the ensemble's configuration: a task that watches `/zookeeper/config` and hands
//! every new list of servers to the session (`Client::update_hosts`), as Curator's
//! `EnsembleTracker` feeds the Java client's `updateServerList`.
//!
//! The task holds no strong handle between reads, so it never keeps a session alive: when the
//! last `Client` is dropped or closed, its watch is reported lost and the task ends. It also
//! ends when the first read shows nothing to follow (a server before 3.5: no such node; one
//! without dynamic reconfiguration: no member lines).

use std::sync::{Arc, Weak};

use crate::Error;
use crate::connect_string::HostAddr;
use crate::ensemble_config::{TlsPorts, client_hosts, tls_hosts};
use crate::session::SessionState;

use super::{Client, Shared};

/// Over TLS: how the members' TLS ports are found, and the connect string's hosts (to
/// infer them from).
pub(super) struct TlsFollow {
    pub(super) ports: TlsPorts,
    pub(super) connect: Vec<HostAddr>,
}

/// Starts following for `client`'s session (`tls`: the client dials over TLS).
pub(super) fn spawn(client: &Client, tls: Option<TlsFollow>) {
    let shared = Arc::downgrade(&client.shared);
    let states = client.shared.states.clone();
    tokio::spawn(follow(shared, states, tls));
}

async fn follow(
    shared: Weak<Shared>,
    mut states: tokio::sync::watch::Receiver<SessionState>,
    tls: Option<TlsFollow>,
) {
    let renews = shared.upgrade().is_some_and(|s| s.renews_expired);
    // The client is over: closed, refused, or expired without renewal.
    let over = |s: &SessionState| s.is_terminal() && !(renews && *s == SessionState::Expired);
    let mut followed: Option<Vec<HostAddr>> = None;
    loop {
        // The read is queued when it is made; the handle goes before the wait. The first read
        // leaves no watch: on a server with nothing to follow (standalone, no dynamic
        // configuration) the session keeps no watch of its own.
        let read = match shared.upgrade() {
            Some(shared) => {
                let client = Client {
                    shared,
                    request_timeout: None,
                };
                if followed.is_none() {
                    let read = client.get_config();
                    Box::pin(async move { read.await.map(|(data, _)| (data, None)) })
                        as std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>>
                } else {
                    let read = client.get_config_watch();
                    Box::pin(async move { read.await.map(|(data, _, w)| (data, Some(w))) })
                }
            }
            None => return,
        };
        let (data, watcher) = match read.await {
            Ok(read) => read,
            Err(Error::ConnectionLoss | Error::RequestTimeout) => {
                // Read again once connected (or stop when the client is over).
                if !wait_connected(&mut states, over).await {
                    return;
                }
                continue;
            }
            Err(Error::SessionExpired) if renews => {
                // The next session follows too.
                if !wait_connected(&mut states, over).await {
                    return;
                }
                continue;
            }
            Err(error) => {
                tracing::debug!(%error, "not following the ensemble's configuration");
                return;
            }
        };
        let listed = client_hosts(&data).map_err(|error| error.to_string());
        // Over TLS the configuration's plaintext ports become the TLS ports to dial; the
        // servers are verified as the first one was (the same TLS settings, each by its name).
        let hosts = match &tls {
            Some(tls) => listed.and_then(|listed| tls_hosts(&listed, tls.ports, &tls.connect)),
            None => listed,
        };
        match hosts {
            Ok(mut hosts) => {
                hosts.sort_by(|a, b| (&a.host, a.port).cmp(&(&b.host, b.port)));
                if followed.as_ref() != Some(&hosts) {
                    let Some(shared) = shared.upgrade() else {
                        return;
                    };
                    let list = hosts
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(",");
                    let client = Client {
                        shared,
                        request_timeout: None,
                    };
                    // The first list is learned, not a change: the session stays where the
                    // connect string put it unless its server is not a member.
                    let update = client.send_hosts(&list, followed.is_some());
                    drop(client);
                    match update.await {
                        Ok(moving) => {
                            tracing::info!(hosts = %list, moving, "following the ensemble");
                        }
                        Err(error) => tracing::warn!(%error, "could not apply the new ensemble"),
                    }
                    followed = Some(hosts);
                }
            }
            Err(error) if followed.is_none() => {
                if tls.is_some() {
                    tracing::info!(%error, "not following the ensemble's configuration over TLS");
                } else {
                    tracing::debug!(%error, "nothing to follow in the ensemble's configuration");
                }
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "unreadable ensemble configuration; kept the servers")
            }
        }
        // After the first read, read again with a watch (the list may have changed between).
        if let Some(watcher) = watcher {
            match watcher.changed().await {
                Ok(_) => {}
                Err(Error::SessionExpired) if renews => {
                    if !wait_connected(&mut states, over).await {
                        return;
                    }
                }
                Err(_) => return,
            }
        }
    }
}

/// Waits until the client is connected (`true`) or `over` (`false`).
async fn wait_connected(
    states: &mut tokio::sync::watch::Receiver<SessionState>,
    over: impl Fn(&SessionState) -> bool,
) -> bool {
    states
        .wait_for(|s| s.is_connected() || over(s))
        .await
        .is_ok_and(|s| !over(&s))
}
