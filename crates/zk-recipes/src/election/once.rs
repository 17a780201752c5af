//! The one-shot election: every candidate creates a node, the lowest wins, the others leave.

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use zk_proto::{Client, CreateMode, CreateOptions, Error, Result, StringList};

use super::{child_path, ensure_path, name_of};
use crate::deadline::within;
use crate::sequential::{attempt_id, is_own_node, protected_name, sort_by_sequence};

/// The name of one-shot candidates' nodes (after the protected prefix).
const ONCE_NAME: &str = "once-";

/// How a one-shot election ended for a candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OneShotOutcome {
    /// This candidate leads, as long as its node (an ephemeral node of its session) exists:
    /// until the session ends or the node is deleted ([`resign`]).
    Won {
        /// The winning node (full path).
        node: String,
    },
    /// Another candidate leads; this candidate's node was removed.
    Lost {
        /// The leader's node (full path); [`wait_until_gone`] waits for its end.
        leader: String,
        /// The leader's id (the data it gave [`elect_once`]); `None` when its node was gone
        /// by the time it was read (the leader has already resigned or ended).
        leader_id: Option<Bytes>,
    },
}

/// Runs a one-shot election under `path` (created with its ancestors if missing): creates an
/// ephemeral sequential node `_c_<uuid>-once-<seq>` holding `id`, lists the candidates, and
/// wins if its node is the lowest; otherwise deletes its node and reports the leader.
///
/// At most one winner is alive at a time: a candidate that comes late gets a higher
/// number and loses to the living winner. Once the winner is gone, the next call of
/// `elect_once` (by anyone) elects a new winner.
///
/// # Errors
///
/// The server's errors ([`Error::NoAuth`] …), [`Error::NoNode`] when this candidate's node
/// was deleted by someone else before the listing, and the session's end
/// ([`Error::SessionExpired`], [`Error::Closed`]). Retryable errors (a lost connection, a
/// request timeout) are retried until the session ends; a create whose reply was lost is
/// found again by its unique name.
///
/// # Cancellation safety
///
/// The election runs in a task of its own: dropping the future does not stop it, and a
/// candidate that won after its caller went away deletes its node, so no one is left
/// leading without knowing it.
///
/// # Session loss
///
/// A winner's leadership ends with its session; losing only the connection does not end it
/// on the server, but the caller should treat a `Disconnected` client as no longer leading
/// (its node goes when the server expires the session).
pub async fn elect_once(
    client: &Client,
    path: &str,
    id: impl Into<Bytes>,
) -> crate::Result<OneShotOutcome> {
    let (tx, rx) = oneshot::channel();
    let client = client.clone();
    let path = path.to_owned();
    let id = id.into();
    tokio::spawn(async move {
        let outcome = run(&client, &path, id).await;
        if let Err(Ok(OneShotOutcome::Won { node })) = tx.send(outcome) {
            let _ = client.delete(&node, None).await;
        }
    });
    Ok(rx.await.unwrap_or(Err(Error::Closed))?)
}

async fn run(client: &Client, path: &str, id: Bytes) -> Result<OneShotOutcome> {
    let attempt = attempt_id();
    let own = create(client, path, &attempt, id).await?;
    let listed = list(client, path).await?;
    let mut children: Vec<&str> = listed.iter().collect();
    sort_by_sequence(&mut children);
    match children.first().copied() {
        Some(first) if first == name_of(&own) => Ok(OneShotOutcome::Won { node: own }),
        first => {
            let leader = first.map(|first| child_path(path, first));
            delete_retrying(client, &own).await?;
            match leader {
                Some(leader) => {
                    let leader_id = read_id(client, &leader).await?;
                    Ok(OneShotOutcome::Lost { leader, leader_id })
                }
                // Our own node was missing from the list: it was deleted by someone else.
                None => Err(Error::NoNode),
            }
        }
    }
}

async fn create(client: &Client, path: &str, attempt: &str, id: Bytes) -> Result<String> {
    let prefix = child_path(path, &protected_name(attempt, ONCE_NAME));
    let options = CreateOptions::new(CreateMode::EPHEMERAL_SEQUENTIAL);
    loop {
        match client.create(&prefix, id.clone(), &options).await {
            Ok((node, _)) => return Ok(node),
            Err(Error::NoNode) => ensure_path(client, path).await?,
            Err(error) if error.is_outcome_unknown() => {
                // Queued after the lost create: it sees the node if the create was applied.
                let listed = list(client, path).await?;
                let own = listed.iter().find(|child| is_own_node(child, attempt));
                if let Some(own) = own {
                    return Ok(child_path(path, own));
                }
            }
            Err(error) => return Err(error),
        }
    }
}

/// The children of `path`, retrying a lost connection.
async fn list(client: &Client, path: &str) -> Result<StringList> {
    loop {
        match client.get_children(path).await {
            Ok(children) => return Ok(children),
            Err(Error::NoNode) => return Ok(StringList::new()),
            Err(error) if error.is_retryable() => {}
            Err(error) => return Err(error),
        }
    }
}

/// The data of a candidate's node (its id), retrying a lost connection; `None` if it is gone.
async fn read_id(client: &Client, node: &str) -> Result<Option<Bytes>> {
    loop {
        match client.get_data(node).await {
            Ok((data, _)) => return Ok(Some(data)),
            Err(Error::NoNode) => return Ok(None),
            Err(error) if error.is_retryable() => {}
            Err(error) => return Err(error),
        }
    }
}

/// Ends a one-shot win: deletes the winner's node (the `node` of [`OneShotOutcome::Won`]), so
/// that the next [`elect_once`] elects another candidate, and whoever waits in
/// [`wait_until_gone`] is told. A node already gone is fine.
///
/// Round trips: 1.
///
/// # Errors
///
/// The server's errors ([`Error::NoAuth`] …) and the session's end. A lost connection is
/// retried (the delete is idempotent here).
///
/// # Cancellation safety
///
/// Dropping the future may leave the node in place; call `resign` again. The node goes with
/// the session in any case.
///
/// # Session loss
///
/// After the session ended the node is gone already; `resign` then fails with the session's
/// error, which the caller may ignore.
pub async fn resign(client: &Client, node: &str) -> crate::Result<()> {
    Ok(delete_retrying(client, node).await?)
}

async fn delete_retrying(client: &Client, node: &str) -> Result<()> {
    loop {
        match client.delete(node, None).await {
            Ok(()) | Err(Error::NoNode) => return Ok(()),
            Err(error) if error.is_retryable() => {}
            Err(error) => return Err(error),
        }
    }
}

/// Waits until `node` (a one-shot leader's node) does not exist, at most `timeout` (`None`:
/// no limit).
///
/// # Errors
///
/// [`crate::Error::Timeout`] when `timeout` passed first (also while no server answers); the
/// connection errors other than a lost connection (retried), and the session's end.
///
/// # Cancellation safety
///
/// Cancel-safe: it only watches.
///
/// # Session loss
///
/// Keeps waiting through a disconnection (the watch is re-registered on reconnect); fails
/// when the session ends.
pub async fn wait_until_gone(
    client: &Client,
    node: &str,
    timeout: Option<Duration>,
) -> crate::Result<()> {
    let gone = async {
        loop {
            match client.exists_watch(node).await {
                Ok((None, _)) => return Ok(()),
                Ok((Some(_), watch)) => {
                    watch.changed().await?;
                }
                Err(error) if error.is_retryable() => {}
                Err(error) => return Err(error),
            }
        }
    };
    Ok(within(timeout, gone).await??)
}
