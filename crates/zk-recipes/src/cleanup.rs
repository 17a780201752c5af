//! Deleting a recipe's own node when the call that made it gives up (timeout, cancellation,
//! a dropped guard) without making the caller wait for a server.

use zk_proto::Client;

/// Deletes `node` without waiting: the delete is queued now (the client queues a call when it
/// is made, so it goes after every request this session sent before, the node's create
/// included) and, when its outcome is unknown (connection lost, request timeout), retried in
/// the background. Until it is applied, other sessions may still see the node.
pub(crate) fn withdraw(client: &Client, node: String) {
    let first = client.delete(&node, None);
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let client = client.clone();
        handle.spawn(async move {
            if matches!(first.await, Err(e) if e.is_retryable()) {
                delete_retrying(&client, &node).await;
            }
        });
    }
}

/// Deletes a node, retrying while the outcome is unknown; a missing node is fine.
pub(crate) async fn delete_retrying(client: &Client, node: &str) {
    loop {
        match client.delete(node, None).await {
            Err(e) if e.is_retryable() => continue,
            Err(zk_proto::Error::NoNode) | Ok(()) => return,
            Err(e) => {
                tracing::debug!(node, error = %e, "could not delete a recipe node");
                return;
            }
        }
    }
}
