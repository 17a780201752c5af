//! SASL Kerberos (GSSAPI) against the real server and a local MIT KDC (feature `kerberos`).
//!
//! `harness = false`: `zk_testkit::kdc::run_tests` starts one KDC with the realm
//! `ZKTEST.LOCAL`, adds the principals below, and runs each test in a process of its own whose
//! environment is a Kerberos client's (`KRB5_CONFIG`, an empty `DIR:` credential cache
//! collection in `KRB5CCNAME`, the test's client keytab in `KRB5_CLIENT_KTNAME`): the GSSAPI
//! library reads them from the environment, which a running test process cannot change
//! soundly. The servers run `SASLAuthenticationProvider` with `Krb5LoginModule` and the keytab
//! of `zookeeper/localhost` (`Realm::configure_server`).
//!
//! Run: `cargo test -p zk-proto --features kerberos --test kerberos` (after
//! `scripts/install-kerberos.sh`; `scripts/test.sh` does both).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use libgssapi::context::{SecurityContext as _, ServerCtx};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use zk_proto::acl::acl;
use zk_proto::sasl::{Gssapi, KerberosOptions, SaslError, SaslMechanism as _, SaslStep};
use zk_proto::{
    AuthFailure, AuthReason, ClientBuilder, ClientInfo, CreateOptions, Error, Perms, SessionState,
};
use zk_testkit::ZkServer;
use zk_testkit::client::{
    blocking, builder, connect, connect_with, server_builder, start_server_with, wait_for_state,
    within,
};
use zk_testkit::fault::FaultProxy;
use zk_testkit::kdc::{FrozenKdc, KdcTest, Realm, run_tests};

/// A client principal whose keytab is the client keytab of the tests that name it.
const ALICE: &str = "alice";
/// A client principal whose ticket a test puts into its credential cache with `kinit`.
const BOB: &str = "bob";
/// A principal whose keytab was exported and which was then deleted: the KDC does not know it.
const GHOST: &str = "ghost";
/// A principal whose key changed after its keytab was exported: the keytab is stale.
const STALE: &str = "stale";

const CALL: Duration = Duration::from_secs(10);
/// A refused authentication must end the connect this soon (no retry loop, no long timeout).
const REFUSED_WITHIN: Duration = Duration::from_secs(5);

fn setup(realm: &Realm) -> zk_testkit::Result<()> {
    for principal in [ALICE, BOB, GHOST, STALE] {
        realm.add_principal(principal)?;
    }
    realm.delete_principal(GHOST)?;
    realm.change_key(STALE)
}

fn main() -> ExitCode {
    run_tests(
        setup,
        &[
            KdcTest {
                name: "a_keytab_login_authenticates_the_session_as_its_principal",
                client_keytab: Some(ALICE),
                run: a_keytab_login_authenticates_the_session_as_its_principal,
            },
            KdcTest {
                name: "a_ticket_cache_filled_by_kinit_authenticates_the_session",
                client_keytab: None,
                run: a_ticket_cache_filled_by_kinit_authenticates_the_session,
            },
            KdcTest {
                name: "clients_of_one_process_use_their_own_keytab_and_credential_cache",
                client_keytab: None,
                run: clients_of_one_process_use_their_own_keytab_and_credential_cache,
            },
            KdcTest {
                name: "a_sasl_acl_allows_its_principal_and_refuses_other_sessions",
                client_keytab: Some(ALICE),
                run: a_sasl_acl_allows_its_principal_and_refuses_other_sessions,
            },
            KdcTest {
                name: "the_ticket_is_for_the_configured_service_and_host",
                client_keytab: Some(ALICE),
                run: the_ticket_is_for_the_configured_service_and_host,
            },
            KdcTest {
                name: "a_principal_the_kdc_does_not_know_fails_with_auth_failed_and_no_retry",
                client_keytab: Some(GHOST),
                run: a_principal_the_kdc_does_not_know_fails_with_auth_failed_and_no_retry,
            },
            KdcTest {
                name: "a_stale_keytab_fails_with_auth_failed_and_no_retry",
                client_keytab: Some(STALE),
                run: a_stale_keytab_fails_with_auth_failed_and_no_retry,
            },
            KdcTest {
                name: "the_session_authenticates_again_after_a_server_restart",
                client_keytab: Some(ALICE),
                run: the_session_authenticates_again_after_a_server_restart,
            },
            KdcTest {
                name: "a_frozen_kdc_fails_the_connect_in_time_and_leaves_the_runtime_free",
                client_keytab: Some(ALICE),
                run: a_frozen_kdc_fails_the_connect_in_time_and_leaves_the_runtime_free,
            },
            KdcTest {
                name: "the_mechanism_answers_a_gssapi_acceptor_and_refuses_what_it_cannot_answer",
                client_keytab: Some(ALICE),
                run: the_mechanism_answers_a_gssapi_acceptor_and_refuses_what_it_cannot_answer,
            },
        ],
    )
}

// ----- helpers -----

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

async fn kerberos_server(realm: &Realm) -> ZkServer {
    start_server_with(realm.configure_server(server_builder())).await
}

/// The Kerberos options of the tests: the server's principal is `zookeeper/localhost`, and
/// the tests connect to 127.0.0.1 (the proxies too), so the host is named.
fn options() -> KerberosOptions {
    KerberosOptions::default().with_host("localhost")
}

/// A session that authenticates as `principal` (of the realm).
fn as_principal(realm: &Realm, principal: &str) -> ClientBuilder {
    builder().sasl_kerberos(options().with_principal(realm.principal(principal)))
}

/// The test's credential cache collection (the harness gives each test an empty one).
fn ccache() -> String {
    std::env::var("KRB5CCNAME").expect("the harness sets KRB5CCNAME")
}

/// The identity ZooKeeper's server records for a Kerberos principal: the principal itself
/// (`kerberos.removeHostFromPrincipal` and `kerberos.removeRealmFromPrincipal` unset).
fn identity(realm: &Realm, principal: &str) -> ClientInfo {
    ClientInfo {
        auth_scheme: "sasl".to_owned(),
        user: realm.principal(principal),
    }
}

/// Creates `/secret`, readable and writable only by `principal`'s SASL identity.
async fn create_secret(realm: &Realm, owner: &zk_proto::Client, principal: &str) {
    let options = CreateOptions::persistent().with_acl(vec![acl(
        "sasl",
        &realm.principal(principal),
        Perms::ALL,
    )]);
    within("create", CALL, owner.create("/secret", "secret", &options))
        .await
        .expect("the owner creates the node");
}

/// A connect through a proxy that must be refused: `AuthFailed`, soon, on one connection.
/// Returns the failure's cause.
async fn assert_refused(server: &ZkServer, client: ClientBuilder, what: &str) -> AuthFailure {
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let started = Instant::now();
    let result = within(
        "a refused connect",
        REFUSED_WITHIN,
        client.connect(&proxy.connect_string()),
    )
    .await;
    let failure = match result {
        Err(Error::AuthFailed(failure)) => failure,
        other => panic!("{what}: expected AuthFailed, got {other:?}"),
    };
    // The one connection, and no other: a refused authentication is not retried.
    assert_eq!(proxy.accepted(), 1, "{what}: connections");
    assert!(
        started.elapsed() < REFUSED_WITHIN,
        "{what}: {:?}",
        started.elapsed()
    );
    failure
}

// ----- tests -----

fn a_keytab_login_authenticates_the_session_as_its_principal(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        // The default principal (the client keytab's), the default host: the connect string's
        // `localhost`.
        let alice = connect_with(
            builder().sasl_kerberos(KerberosOptions::default()),
            &format!("localhost:{}", server.port()),
        )
        .await;
        let who = within("whoAmI", CALL, alice.who_am_i())
            .await
            .expect("whoAmI");
        assert!(who.contains(&identity(realm, ALICE)), "{who:?}");

        // Named explicitly, the same principal.
        let named = connect_with(as_principal(realm, ALICE), &server.connect_string()).await;
        let who = within("whoAmI", CALL, named.who_am_i())
            .await
            .expect("whoAmI");
        assert!(who.contains(&identity(realm, ALICE)), "{who:?}");
    });
}

fn a_ticket_cache_filled_by_kinit_authenticates_the_session(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        // No client keytab and an empty cache: no credentials at all.
        assert_refused(
            &server,
            builder().sasl_kerberos(options()),
            "without credentials",
        )
        .await;

        let cache = ccache();
        let (kinit_realm, kinit_cache) = (realm.clone(), cache.clone());
        blocking(move || kinit_realm.kinit(BOB, &kinit_cache))
            .await
            .expect("kinit");
        // The cache's default principal, and the principal named.
        for client in [builder().sasl_kerberos(options()), as_principal(realm, BOB)] {
            let bob = connect_with(client, &server.connect_string()).await;
            let who = within("whoAmI", CALL, bob.who_am_i())
                .await
                .expect("whoAmI");
            assert!(who.contains(&identity(realm, BOB)), "{cache}: {who:?}");
        }
        // A principal without credentials in the cache (and no client keytab).
        assert_refused(
            &server,
            as_principal(realm, ALICE),
            "a principal not in the cache",
        )
        .await;
    });
}

fn clients_of_one_process_use_their_own_keytab_and_credential_cache(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        // Bob's ticket in a cache of its own, not the process's default one.
        let bob_cache = format!("FILE:{}", realm.dir().join("bob-own-cache").display());
        let (kinit_realm, kinit_cache) = (realm.clone(), bob_cache.clone());
        blocking(move || kinit_realm.kinit(BOB, &kinit_cache))
            .await
            .expect("kinit");
        let keytab = realm.keytab(ALICE).display().to_string();
        let alice = connect_with(
            builder().sasl_kerberos(
                options()
                    .with_principal(realm.principal(ALICE))
                    .with_client_keytab(keytab.clone()),
            ),
            &server.connect_string(),
        )
        .await;
        let bob = connect_with(
            builder().sasl_kerberos(options().with_ccache(bob_cache)),
            &server.connect_string(),
        )
        .await;
        // Both at once, each as its own principal.
        for (client, principal, other) in [(&alice, ALICE, BOB), (&bob, BOB, ALICE)] {
            let who = within("whoAmI", CALL, client.who_am_i())
                .await
                .expect("whoAmI");
            assert!(who.contains(&identity(realm, principal)), "{who:?}");
            assert!(!who.contains(&identity(realm, other)), "{who:?}");
        }
        // The keytab's tickets went to a cache of the client's, not to the process's default
        // one, which still holds nothing: a client on the defaults has no credentials.
        assert_refused(
            &server,
            builder().sasl_kerberos(options()),
            "the default cache stays empty",
        )
        .await;
        // A keytab that does not exist is a refusal of its own, not a fallback to defaults.
        assert_refused(
            &server,
            builder().sasl_kerberos(
                options()
                    .with_principal(realm.principal(ALICE))
                    .with_client_keytab(format!("{keytab}.missing")),
            ),
            "a missing keytab",
        )
        .await;
    });
}

fn a_sasl_acl_allows_its_principal_and_refuses_other_sessions(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        // Alice from the client keytab, Bob from the cache: two principals in one process.
        let (kinit_realm, cache) = (realm.clone(), ccache());
        blocking(move || kinit_realm.kinit(BOB, &cache))
            .await
            .expect("kinit");
        let alice = connect_with(as_principal(realm, ALICE), &server.connect_string()).await;
        create_secret(realm, &alice, ALICE).await;
        assert_eq!(
            &within("read", CALL, alice.get_data("/secret"))
                .await
                .expect("alice reads")
                .0[..],
            b"secret"
        );

        let bob = connect_with(as_principal(realm, BOB), &server.connect_string()).await;
        assert!(
            within("whoAmI", CALL, bob.who_am_i())
                .await
                .expect("whoAmI")
                .contains(&identity(realm, BOB))
        );
        assert_eq!(bob.get_data("/secret").await, Err(Error::NoAuth));
        assert_eq!(bob.set_data("/secret", "x", None).await, Err(Error::NoAuth));
        let anonymous = connect(&server.connect_string()).await;
        assert_eq!(anonymous.get_data("/secret").await, Err(Error::NoAuth));
    });
}

fn the_ticket_is_for_the_configured_service_and_host(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        // The connect string's host, 127.0.0.1: the KDC knows no `zookeeper/127.0.0.1`.
        let refused = assert_refused(
            &server,
            builder().sasl_kerberos(KerberosOptions::default()),
            "the connect string's address as the host",
        )
        .await;
        // The cause is named: no `AuthFailed` without a reason.
        assert_eq!(
            refused.reason,
            AuthReason::UnknownServicePrincipal,
            "{refused}"
        );
        // Another service on the right host: unknown too.
        assert_refused(
            &server,
            builder().sasl_kerberos(options().with_service("zk")),
            "another service",
        )
        .await;
        // The service and host of the server's principal.
        let client = connect_with(
            builder().sasl_kerberos(
                KerberosOptions::default()
                    .with_service("zookeeper")
                    .with_host("localhost"),
            ),
            &server.connect_string(),
        )
        .await;
        assert!(
            within("whoAmI", CALL, client.who_am_i())
                .await
                .expect("whoAmI")
                .contains(&identity(realm, ALICE))
        );
    });
}

fn a_principal_the_kdc_does_not_know_fails_with_auth_failed_and_no_retry(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        // The client keytab holds keys of a principal the KDC deleted.
        let refused = assert_refused(
            &server,
            as_principal(realm, GHOST),
            "a principal the KDC does not know",
        )
        .await;
        assert_eq!(refused.reason, AuthReason::UnknownPrincipal, "{refused}");
        // A principal without keys anywhere.
        let refused = assert_refused(
            &server,
            as_principal(realm, "mallory"),
            "a principal in no keytab or cache",
        )
        .await;
        assert_eq!(refused.reason, AuthReason::NoCredentials, "{refused}");
    });
}

/// A KDC that takes requests and never answers (frozen with SIGSTOP): the GSSAPI calls block
/// for as long as the Kerberos library waits (about a minute), but they run on threads of
/// their own, so a ticker on the same 2-worker runtime never misses a beat, and `connect`
/// fails at its 5 s timeout with a typed error that names the SASL step and the KDC.
fn a_frozen_kdc_fails_the_connect_in_time_and_leaves_the_runtime_free(realm: &Realm) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let server = kerberos_server(realm).await;
        let frozen = FrozenKdc::freeze().expect("freeze the KDC");
        let ticks = tokio::spawn(async {
            let mut ticks = Vec::new();
            let mut interval = tokio::time::interval(Duration::from_millis(50));
            loop {
                interval.tick().await;
                ticks.push(Instant::now());
                if ticks.len() >= 140 {
                    return ticks;
                }
            }
        });
        let started = Instant::now();
        let result = as_principal(realm, ALICE)
            .connect_timeout(Some(Duration::from_secs(5)))
            .connect(&server.connect_string())
            .await;
        let took = started.elapsed();
        let error = result.expect_err("no KDC, no session");
        assert!(
            took < Duration::from_secs(6),
            "gave up after {took:?}: {error}"
        );
        assert!(
            matches!(
                &error,
                Error::NoServerReachable {
                    last_error: zk_proto::ConnectFailure::Sasl(_),
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("KDC"), "{error}");
        let ticks = ticks.await.expect("the ticker");
        let longest = ticks
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .max()
            .unwrap_or_default();
        assert!(
            longest < Duration::from_millis(500),
            "the ticker waited {longest:?} for the runtime"
        );
        drop(frozen);
    });
    // The threads stuck on the KDC are not waited for.
    runtime.shutdown_background();
}

fn a_stale_keytab_fails_with_auth_failed_and_no_retry(realm: &Realm) {
    block_on(async {
        let server = kerberos_server(realm).await;
        assert_refused(&server, as_principal(realm, STALE), "a stale keytab").await;
    });
}

fn the_session_authenticates_again_after_a_server_restart(realm: &Realm) {
    block_on(async {
        let server = Arc::new(kerberos_server(realm).await);
        // A session that outlives the restart on a loaded machine (the kit's are 4 s).
        let alice = connect_with(
            as_principal(realm, ALICE).session_timeout(Duration::from_secs(30)),
            &server.connect_string(),
        )
        .await;
        create_secret(realm, &alice, ALICE).await;
        let session_id = alice.session_id();

        let restarted = server.clone();
        blocking(move || restarted.restart().expect("restart")).await;
        wait_for_state(&alice, SessionState::Connected, Duration::from_secs(20)).await;
        assert_eq!(alice.session_id(), session_id, "the same session");
        // Only Alice's identity may read it: the new connection authenticated again.
        assert_eq!(
            &within("read", CALL, alice.get_data("/secret"))
                .await
                .expect("alice reads after the restart")
                .0[..],
            b"secret"
        );
        assert!(
            within("whoAmI", CALL, alice.who_am_i())
                .await
                .expect("whoAmI")
                .contains(&identity(realm, ALICE))
        );
    });
}

/// The mechanism against an acceptor of the system's library in this process (the server's
/// keytab in `KRB5_KTNAME`): the whole exchange, then what a server could send that it must
/// refuse, and arbitrary tokens in each state.
fn the_mechanism_answers_a_gssapi_acceptor_and_refuses_what_it_cannot_answer(realm: &Realm) {
    let alice = options().with_principal(realm.principal(ALICE));

    // The whole exchange, as ZooKeeper's server runs it (offer: no layer, 64 KiB).
    let (mut mechanism, mut acceptor) = established(&alice);
    assert_eq!(
        acceptor
            .source_name()
            .expect("the client's name")
            .to_string(),
        realm.principal(ALICE)
    );
    let offer = acceptor.wrap(false, &[1, 1, 0, 0]).expect("wrap the offer");
    let SaslStep::Send(choice) = mechanism.step(&offer).expect("a choice") else {
        panic!("no choice sent");
    };
    let choice = acceptor.unwrap(&choice).expect("a wrapped choice");
    assert_eq!(&choice[..], [1, 0, 0, 0], "no layer, size 0, no authzid");
    assert_eq!(mechanism.step(b""), Ok(SaslStep::Done));

    // Offers it cannot answer.
    let (mut mechanism, mut acceptor) = established(&alice);
    let offer = acceptor.wrap(true, &[4, 1, 0, 0]).expect("wrap");
    assert!(
        matches!(mechanism.step(&offer), Err(SaslError::Unsupported(_))),
        "confidentiality only"
    );
    let (mut mechanism, mut acceptor) = established(&alice);
    let offer = acceptor.wrap(false, &[1, 1, 0]).expect("wrap");
    assert!(matches!(
        mechanism.step(&offer),
        Err(SaslError::MalformedChallenge(_))
    ));
    let (mut mechanism, _) = established(&alice);
    assert!(
        matches!(mechanism.step(&[1, 1, 0, 0]), Err(SaslError::Gssapi { .. })),
        "an offer that is not wrapped"
    );

    // Arbitrary server tokens, while the context is established and after it.
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let tokens = proptest::collection::vec(any::<u8>(), 0..200);
    runner
        .run(&tokens, |token| {
            let mut mechanism = Gssapi::new(&alice, "127.0.0.1").expect("names");
            mechanism.initial_token().expect("a first token");
            // Not the AP-REP: an error, never a panic.
            prop_assert!(mechanism.step(&token).is_err());
            let (mut mechanism, _) = established(&alice);
            let _ = mechanism.step(&token);
            let _ = mechanism.step(&token);
            Ok(())
        })
        .expect("arbitrary tokens are errors or answers, never panics");
}

/// A mechanism and an acceptor whose context is established; the mechanism waits for the
/// security-layer offer.
fn established(options: &KerberosOptions) -> (Gssapi, ServerCtx) {
    let mut mechanism = Gssapi::new(options, "127.0.0.1").expect("names");
    let first = mechanism.initial_token().expect("the AP-REQ");
    let mut acceptor = ServerCtx::new(None);
    let reply = acceptor
        .step(&first, None)
        .expect("the acceptor takes the AP-REQ")
        .expect("an AP-REP (mutual authentication)");
    assert!(acceptor.is_complete());
    let SaslStep::Send(last) = mechanism.step(&reply).expect("the AP-REP is accepted") else {
        panic!("the mechanism ended early");
    };
    assert!(last.is_empty(), "nothing more from the library: {last:?}");
    (mechanism, acceptor)
}
