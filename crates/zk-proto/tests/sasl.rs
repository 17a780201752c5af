//! SASL DIGEST-MD5 against the real server: its `SASLAuthenticationProvider` and a JAAS
//! `Server` section with `DigestLoginModule` users, as docs/security.md describes.

use std::time::Duration;

use zk_proto::acl::acl;
use zk_proto::{AuthReason, ClientInfo, CreateOptions, Error, Perms, SessionState};
use zk_testkit::client::{
    StateLog, blocking, builder, connect, connect_with, eventually, server_builder, start_ensemble,
    start_server_with, within,
};
use zk_testkit::fault::FaultProxy;
use zk_testkit::{DigestJaas, Ensemble, ZkServer};

const BOB: (&str, &str) = ("bob", "bob-secret");
const ALICE: (&str, &str) = ("alice", "alice-secret");
const CALL: Duration = Duration::from_secs(10);

/// The JAAS file with the users bob and alice, kept until the test ends.
fn jaas() -> DigestJaas {
    DigestJaas::write(&[BOB, ALICE]).expect("write the JAAS file")
}

/// A SASL server; `enforce`: every session must authenticate.
async fn sasl_server(jaas: &DigestJaas, enforce: bool) -> ZkServer {
    let builder = server_builder().sasl_digest(jaas);
    let builder = if enforce {
        builder
            .config("enforce.auth.enabled", "true")
            .config("enforce.auth.schemes", "sasl")
    } else {
        builder
    };
    start_server_with(builder).await
}

fn sasl_user(user: (&str, &str)) -> zk_proto::ClientBuilder {
    builder().sasl_digest(user.0, user.1)
}

fn identity(scheme: &str, user: &str) -> ClientInfo {
    ClientInfo {
        auth_scheme: scheme.to_owned(),
        user: user.to_owned(),
    }
}

/// Waits until the session recorded by `log` lost its connection and is connected again
/// (so a call made next goes to the new connection, not the dying one).
async fn reconnected(log: &StateLog, limit: Duration) {
    eventually("lost and connected again", limit, || {
        let states = log.states();
        let lost = states.iter().position(|s| !s.is_connected());
        let ready = lost.is_some() && states.last() == Some(&SessionState::Connected);
        async move { ready }
    })
    .await;
}

/// Creates `/secret`, readable and writable only by `sasl:bob`.
async fn create_bobs_secret(bob: &zk_proto::Client) {
    let options = CreateOptions::persistent().with_acl(vec![acl("sasl", "bob", Perms::ALL)]);
    within("create", CALL, bob.create("/secret", "bob's", &options))
        .await
        .expect("bob creates his node");
}

#[tokio::test]
async fn an_authenticated_session_is_its_sasl_user_and_sasl_acls_apply() {
    let jaas = jaas();
    let server = sasl_server(&jaas, false).await;
    let bob = connect_with(sasl_user(BOB), &server.connect_string()).await;
    let who = within("whoAmI", CALL, bob.who_am_i())
        .await
        .expect("whoAmI");
    assert!(who.contains(&identity("sasl", "bob")), "{who:?}");
    create_bobs_secret(&bob).await;
    assert_eq!(
        &within("read", CALL, bob.get_data("/secret"))
            .await
            .expect("bob reads")
            .0[..],
        b"bob's"
    );

    // Another SASL user, and a session without SASL, are refused.
    let alice = connect_with(sasl_user(ALICE), &server.connect_string()).await;
    assert!(
        within("whoAmI", CALL, alice.who_am_i())
            .await
            .expect("whoAmI")
            .contains(&identity("sasl", "alice"))
    );
    assert_eq!(alice.get_data("/secret").await, Err(Error::NoAuth));
    let anonymous = connect(&server.connect_string()).await;
    assert_eq!(anonymous.get_data("/secret").await, Err(Error::NoAuth));
    assert_eq!(
        anonymous.set_data("/secret", "x", None).await,
        Err(Error::NoAuth)
    );
}

#[tokio::test]
async fn a_wrong_password_or_an_unknown_user_fails_with_auth_failed_and_no_retry() {
    let jaas = jaas();
    let server = sasl_server(&jaas, false).await;
    for (user, password) in [(BOB.0, "wrong"), ("mallory", "anything")] {
        let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
        let result = within(
            "a refused connect",
            CALL,
            builder()
                .sasl_digest(user, password)
                .connect(&proxy.connect_string()),
        )
        .await;
        match result {
            Err(Error::AuthFailed(failure)) => {
                // The cause is named: the server's refusal.
                assert_eq!(
                    failure.reason,
                    AuthReason::RefusedByServer,
                    "{user}: {failure}"
                );
            }
            other => panic!("{user}: expected AuthFailed, got {other:?}"),
        }
        // The one connection, and no other: a refused authentication is not retried.
        assert_eq!(proxy.accepted(), 1, "{user}: connections");
    }
}

#[tokio::test]
async fn the_session_authenticates_again_after_a_server_restart() {
    let jaas = jaas();
    let server = std::sync::Arc::new(sasl_server(&jaas, false).await);
    // A session that outlives the restart: a JVM restart on a loaded machine takes longer than
    // the kit's 4 s sessions (the client then rightly reports the session expired).
    let bob = connect_with(
        sasl_user(BOB).session_timeout(Duration::from_secs(30)),
        &server.connect_string(),
    )
    .await;
    create_bobs_secret(&bob).await;
    let session_id = bob.session_id();

    let log = StateLog::record(&bob);
    let restarted = server.clone();
    blocking(move || restarted.restart().expect("restart")).await;
    reconnected(&log, Duration::from_secs(20)).await;
    assert_eq!(bob.session_id(), session_id, "the same session");
    // Only `sasl:bob` may read it: the new connection authenticated again.
    assert_eq!(
        &within("read", CALL, bob.get_data("/secret"))
            .await
            .expect("bob reads after the restart")
            .0[..],
        b"bob's"
    );
    assert!(
        within("whoAmI", CALL, bob.who_am_i())
            .await
            .expect("whoAmI")
            .contains(&identity("sasl", "bob"))
    );
}

#[tokio::test]
async fn the_session_authenticates_again_after_moving_to_another_server() {
    let jaas = jaas();
    let ensemble = start_ensemble(Ensemble::builder(3).sasl_digest(&jaas)).await;
    let addrs = ensemble.addrs();
    let connect_string = format!("{},{}", addrs[0], addrs[1]);
    let bob = connect_with(sasl_user(BOB).keep_host_order(true), &connect_string).await;
    create_bobs_secret(&bob).await;
    let session_id = bob.session_id();

    let log = StateLog::record(&bob);
    let moved = ensemble.clone();
    blocking(move || moved.kill(0)).await;
    reconnected(&log, Duration::from_secs(30)).await;
    assert_eq!(
        bob.session_id(),
        session_id,
        "the same session, on server 2"
    );
    assert_eq!(
        &within("read", CALL, bob.get_data("/secret"))
            .await
            .expect("bob reads on the other server")
            .0[..],
        b"bob's"
    );
}

#[tokio::test]
async fn a_server_that_enforces_sasl_serves_authenticated_sessions_only() {
    let jaas = jaas();
    let server = sasl_server(&jaas, true).await;
    let bob = connect_with(sasl_user(BOB), &server.connect_string()).await;
    within(
        "create",
        CALL,
        bob.create("/open", "", &CreateOptions::persistent()),
    )
    .await
    .expect("an authenticated session is served");

    // An anonymous session: its first call is refused with the server's -124, whatever the
    // client's own background read of the ensemble configuration drew first, and the session
    // ends there (AuthFailed, terminal: no reconnection, no resume that the server would
    // refuse again). The Java client 3.8 reports the code to the call and is then disconnected
    // by the server; it has no state for it and reconnects as after any lost connection
    // (ZooKeeper's own SaslAuthRequiredTest waits only for the disconnection).
    for round in 0..10 {
        let anonymous = connect(&server.connect_string()).await;
        let refused = within("read", CALL, anonymous.get_data("/open")).await;
        assert_eq!(
            refused,
            Err(Error::SessionClosedRequireSaslAuth),
            "round {round}"
        );
        assert_eq!(anonymous.state(), SessionState::AuthFailed, "round {round}");
        assert!(anonymous.state().is_terminal());
        let later = within("read", CALL, anonymous.get_data("/open")).await;
        assert!(
            later.as_ref().is_err_and(Error::is_terminal),
            "round {round}: {later:?}"
        );
    }
    // Bob's session is not affected.
    within("read", CALL, bob.get_data("/open"))
        .await
        .expect("bob reads");
}
