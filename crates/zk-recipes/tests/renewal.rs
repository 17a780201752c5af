//! Recipes on a client that renews expired sessions
//! (`ClientBuilder::renew_expired_sessions`), against a real server: what lives within one
//! session ends with it even though the client goes on (a held lock is lost, a leader latch
//! ends), and nothing of the old session is trusted in the new one.

use std::time::Duration;

use zk_proto::Client;
use zk_recipes::election::LeaderLatch;
use zk_recipes::lock::{Lock, Validity};
use zk_testkit::client::{builder, connect_with, expire_session, start_server, wait_state, within};

const WITHIN: Duration = Duration::from_secs(20);

async fn renewing(connect_string: &str) -> Client {
    connect_with(builder().renew_expired_sessions(true), connect_string).await
}

/// Waits until `client` is connected on a session other than `old`.
async fn renewed(client: &Client, old: i64) {
    wait_state(client, WITHIN, |s| {
        s == zk_proto::SessionState::Connected && client.session_id() != old
    })
    .await;
}

#[tokio::test]
async fn a_lock_held_in_an_expired_session_is_lost_in_the_renewed_one() {
    let server = start_server().await;
    let cs = server.connect_string();
    let client = renewing(&cs).await;
    let lock = Lock::new(&client, "/renewal/lock");
    let guard = lock.acquire(Some(WITHIN)).await.expect("acquire");
    assert_eq!(guard.validity(), Validity::Held);
    let old = client.session_id();
    let lost = {
        let guard = &guard;
        async move { guard.wait_lost(Some(WITHIN)).await }
    };
    let (lost, ()) = tokio::join!(lost, async {
        expire_session(&client, &cs).await;
        renewed(&client, old).await;
    });
    // Reported at the disconnection (Suspended) or later (Lost): never as held.
    assert_ne!(lost.expect("reported"), Validity::Held);
    // Connected again, but on another session: the lock is not held.
    assert_eq!(guard.validity(), Validity::Lost);
    assert_eq!(
        guard.wait_lost(Some(WITHIN)).await.expect("at once"),
        Validity::Lost
    );
    assert_eq!(guard.release().await, Err(zk_recipes::Error::Lost));
    // The lock itself works in the new session, for this client as for another.
    let again = lock.acquire(Some(WITHIN)).await.expect("acquire again");
    assert_eq!(again.validity(), Validity::Held);
    again.release().await.expect("release");
}

#[tokio::test]
async fn a_leader_latch_ends_with_its_session_and_does_not_lead_in_the_renewed_one() {
    let server = start_server().await;
    let cs = server.connect_string();
    let client = renewing(&cs).await;
    let latch = LeaderLatch::builder(&client, "/renewal/latch", "a").start();
    latch.wait_leader(Some(WITHIN)).await.expect("leads");
    let leadership = latch.leadership();
    let old = client.session_id();
    expire_session(&client, &cs).await;
    renewed(&client, old).await;
    within("the leadership lost", WITHIN, leadership.wait_lost(None))
        .await
        .expect("lost");
    assert!(!latch.is_leader());
    assert_eq!(
        leadership.wait_leader(Some(WITHIN)).await,
        Err(zk_recipes::Error::Zk(zk_proto::Error::SessionExpired)),
        "the latch ended with its session"
    );
    // A new latch on the renewed client leads.
    let next = LeaderLatch::builder(&client, "/renewal/latch", "b").start();
    next.wait_leader(Some(WITHIN))
        .await
        .expect("the new latch leads");
    next.close().await.expect("close");
}
