//! Sessions that expire: one cut off past its timeout (the server expires it, its ephemerals
//! vanish, the client reports the expiry itself), and a renewing client that reports the
//! expiry in full before it goes on with a new session.

use zk_proto::EventType;
use zk_testkit::client::{StateLog, builder, connect, connect_with, expire_session, wait_state};

use super::*;

#[tokio::test]
async fn a_session_cut_off_past_its_timeout_expires_and_its_ephemerals_vanish() {
    let _serial = serial().await;
    let server = server().await;
    let Proxied { proxy, client } = connect_proxied(server.addr(), builder()).await;
    let other = connect(&server.connect_string()).await;
    client
        .create("/gone", "", &CreateOptions::ephemeral())
        .await
        .expect("create");
    let (_, _, lost) = client.get_data_watch("/gone").await.expect("getData");
    let (_, deleted) = other.exists_watch("/gone").await.expect("exists");

    proxy.isolate();
    // The server expires the session after 4 s without hearing from it.
    let event = tokio::time::timeout(Duration::from_secs(15), deleted.changed())
        .await
        .expect("the ensemble expired the session")
        .expect("event");
    assert_eq!(event.event_type, EventType::NODE_DELETED);
    // Cut off for the whole timeout, the client reports the expiry itself.
    wait_for_state(&client, SessionState::Expired, Duration::from_secs(10)).await;
    assert_eq!(
        within("the lost watch", EVENT_WAIT, lost.changed()).await,
        Err(Error::SessionExpired)
    );
    assert_eq!(client.get_data("/gone").await, Err(Error::SessionExpired));
    proxy.restore();
}

#[tokio::test]
async fn a_renewing_client_reports_the_expiry_then_goes_on_with_a_new_session() {
    let _serial = serial().await;
    let server = server().await;
    let cs = server.connect_string();
    let client = connect_with(builder().renew_expired_sessions(true), &cs).await;
    let other = connect(&cs).await;
    assert!(client.renews_expired_sessions());
    client
        .create("/eph", "", &CreateOptions::ephemeral())
        .await
        .expect("create");
    let (_, _, lost) = client.get_data_watch("/eph").await.expect("getData");
    let log = StateLog::record(&client);
    let old = client.session_id();

    expire_session(&client, &cs).await;
    // The expiry first, in full: the watch is lost with it.
    assert_eq!(
        within("the lost watch", EVENT_WAIT, lost.changed()).await,
        Err(Error::SessionExpired)
    );
    // Then a new session on the same handle.
    wait_state(&client, EVENT_WAIT, |s| {
        s == SessionState::Connected && client.session_id() != old
    })
    .await;
    let new = client.session_id();
    assert_ne!(new, 0);
    // A state watcher keeps the latest state only, so `Expired` may be skipped; what it
    // sees is in order and ends in the new session.
    let mut states = log.states();
    states.retain(|s| *s != SessionState::Expired);
    assert!(
        states.ends_with(&[
            SessionState::Disconnected,
            SessionState::Connecting,
            SessionState::Connected
        ]),
        "{:?}",
        log.states()
    );
    assert!(
        !log.states()
            .iter()
            .any(|s| matches!(s, SessionState::Closed | SessionState::AuthFailed)),
        "{:?}",
        log.states()
    );
    // The old session's ephemeral is gone; the new session works and owns what it creates.
    assert_eq!(client.exists("/eph").await.expect("exists"), None);
    client
        .create("/eph", "", &CreateOptions::ephemeral())
        .await
        .expect("create on the new session");
    let seen = other
        .exists("/eph")
        .await
        .expect("exists")
        .expect("the node");
    assert_eq!(seen.ephemeral_owner, new);
    client.close().await.expect("close");
    assert_eq!(client.state(), SessionState::Closed);
}
