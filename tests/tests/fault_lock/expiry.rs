//! Real session expiry: a holder whose session expires loses the lock to the next waiter, a
//! waiter whose session expires fails and leaves nothing, and an expired client dials no more.

use zk_testkit::client::{assert_dials_no_more, largest_reconnect_wait, poll_children};

use super::*;

/// Scenario 12: a waiter behind a proxy that is isolated past its session timeout. The server
/// really expires the session (its ephemeral node vanishes); the acquire fails with
/// `SessionExpired`, there is no late success once the proxy lets traffic through again, and
/// no node of the waiter is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_session_expires_fails_and_leaves_nothing() {
    let _serial = serial().await;
    let (_server, proxy, waiter_client, holder_client) = proxied_and_direct().await;
    let path = "/fault/expired-waiter";
    let holder = acquire(&holder_client, path).await;
    let holder_name = name(holder.node());
    let (waiter, listing) = queue_waiter(
        &Lock::new(&waiter_client, path),
        &holder_client,
        path,
        SESSION * 10,
    )
    .await;
    let waiter_name = listing
        .into_iter()
        .find(|c| *c != holder_name)
        .expect("the waiter's node");

    let isolated_at = Instant::now();
    proxy.isolate();
    // The server expires the session: its ephemeral node goes.
    wait_children(
        &holder_client,
        path,
        SESSION * 3,
        "the server expires the waiter",
        |c| !c.contains(&waiter_name),
    )
    .await;
    let expired_after = isolated_at.elapsed();
    let (result, _) = within("the waiter's acquire", SESSION * 2, waiter)
        .await
        .expect("waiter task");
    assert!(
        matches!(result, Err(zk_recipes::Error::Zk(Error::SessionExpired))),
        "{result:?}"
    );
    assert_eq!(waiter_client.state(), SessionState::Expired);
    // Traffic passes again: nothing comes back to life. The window is bounded by the client's
    // own timer: a client that still dialed would dial within its longest wait between two
    // attempts, and the window is two of them.
    proxy.restore();
    tokio::time::sleep(2 * largest_reconnect_wait(SESSION)).await;
    assert_eq!(waiter_client.state(), SessionState::Expired);
    assert_eq!(
        within("exists", CALL, waiter_client.exists("/")).await,
        Err(Error::SessionExpired)
    );
    assert_eq!(children(&holder_client, path).await, vec![holder_name]);
    eprintln!("the server expired the waiter {expired_after:?} after the cut");
    assert!(expired_after >= SESSION - Duration::from_millis(100));
    release(holder).await;
    assert!(children(&holder_client, path).await.is_empty());
}

/// Scenario 12, the client's side: once its session has expired (locally, while the server
/// is unreachable), a client opens no more connections, not even the reconnection attempt
/// that was waiting out its backoff when the session expired (the driver used to keep
/// polling that pending attempt and dial once more after the end).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_client_dials_no_more() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    proxy.isolate();
    // Refused attempts back off (doubling up to the backoff's cap) until the local expiry, one
    // session timeout after the cut.
    wait_state(&client, SESSION * 2, |s| s == SessionState::Expired).await;
    // Bounded by the client's own timer: a client that still dialed would dial within its
    // longest wait between two attempts; the window is two of them.
    assert_dials_no_more(SESSION, || proxy.accepted()).await;
}

/// A holder behind a proxy that is isolated past its session timeout: its guard reports the
/// loss at once, the waiter gets the lock only after the server expired the holder's session
/// (its node is gone by then), and the holder learns it lost the lock for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_holder_loses_the_lock_and_the_next_waiter_gets_it_after_its_node_is_gone() {
    let _serial = serial().await;
    let (_server, proxy, holder_client, waiter_client) = proxied_and_direct().await;
    let holder = Lock::new(&holder_client, "/expiry/lock")
        .acquire(None)
        .await
        .expect("holder acquires");
    assert_eq!(holder.validity(), Validity::Held);
    let holder_node = holder.node().to_owned();
    let waiter = {
        let lock = Lock::new(&waiter_client, "/expiry/lock");
        tokio::spawn(async move { lock.acquire(None).await })
    };
    // The waiter's node is queued behind the holder's: it must wait.
    let queued = poll_children(
        &waiter_client,
        "/expiry/lock",
        Duration::from_secs(5),
        |c| c.len() == 2,
    )
    .await;
    assert_eq!(queued.len(), 2);
    assert!(!waiter.is_finished(), "the waiter must wait for the holder");

    proxy.isolate();
    let suspended = holder
        .wait_lost(Some(Duration::from_secs(5)))
        .await
        .expect("loss reported");
    assert_ne!(suspended, Validity::Held);
    assert!(!holder.is_valid());

    let guard = tokio::time::timeout(Duration::from_secs(20), waiter)
        .await
        .expect("waiter acquires after expiry")
        .expect("task")
        .expect("acquire");
    // The holder's node was gone when the waiter got the lock.
    assert_eq!(
        waiter_client.exists(&holder_node).await.expect("exists"),
        None
    );
    assert!(guard.fencing_token() > 0);

    // The old holder learns it lost the lock for good (local expiry, the server is cut off).
    let mut states = holder_client.state_watcher();
    tokio::time::timeout(
        Duration::from_secs(10),
        states.wait_for(|s| *s == SessionState::Expired),
    )
    .await
    .expect("holder expires")
    .expect("state");
    assert_eq!(holder.validity(), Validity::Lost);
    assert!(matches!(
        holder.release().await,
        Err(zk_recipes::Error::Lost)
    ));
    guard.release().await.expect("release");
}
