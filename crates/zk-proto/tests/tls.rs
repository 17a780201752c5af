//! TLS against real ZooKeeper 3.8 servers: a `secureClientPort` on the Netty connection
//! factory with PEM key and trust stores the test kit generates (a test CA, server and client
//! certificates, and a second CA nobody trusts), `ssl.clientAuth` none, want and need.
//!
//! Every failure is checked for its typed error, for ending in bounded time (long before the
//! connect timeout), and for not storming the server (attempts counted). A refusal on a
//! reconnection (the proxy switched to an untrusted server): the workspace's
//! `tests/tests/fault_client/tls.rs`.
#![cfg(feature = "tls")]

mod support;

use std::time::{Duration, Instant};

use support::tls::{certs, mutual, refused, refused_within, secure, tls_server, trusting};
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;
use zk_proto::{
    AddWatchMode, CreateMode, CreateOptions, Error, EventType, MultiOperation, SessionState,
    TlsFailure, TlsOptions,
};
use zk_testkit::client::{
    blocking, builder, connect_with, read_only_ensemble, server_builder, start_ensemble,
    start_server_with, wait_for_mode, wait_for_state, within,
};
use zk_testkit::{ClientAuth, Ensemble, Mode, TestCerts};

/// How long an event may take.
const EVENT_WAIT: Duration = Duration::from_secs(5);

#[tokio::test]
async fn every_operation_over_tls() {
    let server = tls_server(ClientAuth::None).await;
    let client = connect_with(builder().tls(trusting(certs(&server))), &secure(&server)).await;
    assert_eq!(client.state(), SessionState::Connected);

    client
        .create("/tls", "a", &CreateOptions::persistent())
        .await
        .expect("create");
    let (data, stat) = client.get_data("/tls").await.expect("getData");
    assert_eq!((&data[..], stat.version), (&b"a"[..], 0));
    let (_, _, watch) = client.get_data_watch("/tls").await.expect("getData watch");
    let stat = client
        .set_data("/tls", "b", Some(0))
        .await
        .expect("setData");
    assert_eq!(stat.version, 1);
    let event = within("NodeDataChanged", EVENT_WAIT, watch.changed())
        .await
        .expect("the watch fires");
    assert_eq!(event.event_type, EventType::NODE_DATA_CHANGED);
    let mut children = client
        .add_watch("/tls", AddWatchMode::PERSISTENT_RECURSIVE)
        .await
        .expect("addWatch");
    let (path, _) = client
        .create(
            "/tls/e-",
            "",
            &CreateOptions::new(CreateMode::EPHEMERAL_SEQUENTIAL),
        )
        .await
        .expect("ephemeral sequential");
    assert!(path.starts_with("/tls/e-"), "{path}");
    let event = within("NodeCreated", EVENT_WAIT, children.next())
        .await
        .expect("the persistent watch fires");
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (EventType::NODE_CREATED, path.as_str())
    );
    assert_eq!(
        client
            .get_children("/tls")
            .await
            .expect("getChildren")
            .len(),
        1
    );
    assert!(client.exists("/tls").await.expect("exists").is_some());
    let results = client
        .multi(vec![
            MultiOperation::check("/tls", Some(1)),
            MultiOperation::set_data("/tls", "c", Some(1)),
        ])
        .await
        .expect("multi");
    assert_eq!(results.len(), 2);
    client.sync("/tls").await.expect("sync");
    assert_eq!(client.get_data("/tls").await.expect("getData").1.version, 2);
    assert!(!client.get_acl("/tls").await.expect("getACL").0.is_empty());
    client.delete(&path, None).await.expect("delete");
    // Larger than one TLS record (16 KiB): written and read in several.
    let big = vec![7u8; 200_000];
    client
        .create("/tls/big", big.clone(), &CreateOptions::persistent())
        .await
        .expect("a 200 kB node");
    assert_eq!(client.get_data("/tls/big").await.expect("read back").0, big);
    // Pipelined: 500 calls in flight at once over one TLS connection.
    let calls: Vec<_> = (0..500).map(|_| client.exists("/tls")).collect();
    for call in calls {
        assert!(call.await.expect("exists").is_some());
    }
    client.close().await.expect("close");
}

#[tokio::test]
async fn a_zk_tls_connect_string_says_it_all() {
    let server = tls_server(ClientAuth::Need).await;
    let certs = certs(&server);
    let connect_string = format!(
        "zk+tls://{}/?ca={}&cert={}&key={}",
        secure(&server),
        certs.ca().display(),
        certs.client_cert().display(),
        certs.client_key().display()
    );
    let client = connect_with(builder(), &connect_string).await;
    client
        .create("/from-the-string", "", &CreateOptions::persistent())
        .await
        .expect("create");
    // The same connect string and TLS options from the builder: one place only.
    let conflict = builder()
        .tls(trusting(certs))
        .connect(&connect_string)
        .await
        .expect_err("a conflict");
    assert!(matches!(conflict, Error::TlsConfig(_)), "{conflict:?}");
    // A CA file that does not exist: a typed error before anything is dialed.
    let missing = builder()
        .connect(&format!(
            "zk+tls://{}?ca=/nonexistent/ca.pem",
            secure(&server)
        ))
        .await
        .expect_err("no CA file");
    assert!(
        matches!(
            &missing,
            Error::TlsConfig(zk_proto::TlsConfigError::ReadFile { .. })
        ),
        "{missing:?}"
    );
}

#[tokio::test]
async fn mutual_tls_is_accepted_with_a_trusted_client_certificate() {
    let need = tls_server(ClientAuth::Need).await;
    let client = connect_with(builder().tls(mutual(certs(&need))), &secure(&need)).await;
    client
        .create("/mutual", "", &CreateOptions::persistent())
        .await
        .expect("create over mutual TLS");
    // `want`: served with a certificate, and without one.
    let want = tls_server(ClientAuth::Want).await;
    let with = connect_with(builder().tls(mutual(certs(&want))), &secure(&want)).await;
    let without = connect_with(builder().tls(trusting(certs(&want))), &secure(&want)).await;
    for client in [&with, &without] {
        assert!(client.exists("/").await.expect("exists").is_some());
    }
}

#[tokio::test]
async fn a_server_that_needs_a_client_certificate_refuses_a_client_without_one() {
    let server = tls_server(ClientAuth::Need).await;
    let failure = refused(trusting(certs(&server)), &secure(&server), 1).await;
    assert!(
        matches!(failure, TlsFailure::ClientCertificateRequired { .. }),
        "{failure:?}"
    );
}

#[tokio::test]
async fn a_client_certificate_from_an_untrusted_ca_is_refused() {
    for client_auth in [ClientAuth::Need, ClientAuth::Want] {
        let server = tls_server(client_auth).await;
        let certs = certs(&server);
        let options = trusting(certs)
            .client_cert_pem_files(certs.other_client_cert(), certs.other_client_key());
        let failure = refused(options, &secure(&server), 1).await;
        assert!(
            matches!(failure, TlsFailure::ClientCertificateRejected { .. }),
            "{client_auth}: {failure:?}"
        );
    }
}

/// Under TLS 1.2 a server that refuses the client's certificate sends its alert and closes at
/// once; the client's write of the rest of its flight may then fail with a broken pipe before
/// it reads the alert. The alert is read all the same: one attempt, named, every time (it was
/// a transient failure, retried, in 3 to 15% of runs).
#[tokio::test]
async fn under_tls_1_2_a_refused_certificate_is_one_attempt_every_time() {
    let server = start_server_with(
        server_builder()
            .tls(ClientAuth::Need)
            .config("ssl.protocol", "TLSv1.2")
            .config("ssl.enabledProtocols", "TLSv1.2"),
    )
    .await;
    let certs = certs(&server);
    for round in 0..100 {
        let options = trusting(certs)
            .client_cert_pem_files(certs.other_client_cert(), certs.other_client_key());
        let failure = refused(options, &secure(&server), 1).await;
        assert!(
            matches!(failure, TlsFailure::ClientCertificateRejected { .. }),
            "round {round}: {failure:?}"
        );
    }
}

#[tokio::test]
async fn with_tls_1_3_a_missing_client_certificate_is_named_too() {
    // With TLS 1.3 the server judges the client's certificate after the client's side of the
    // handshake is done: its alert arrives while the ConnectRequest waits for an answer.
    let server = start_server_with(
        server_builder()
            .tls(ClientAuth::Need)
            .config("ssl.protocol", "TLSv1.3")
            .config("ssl.enabledProtocols", "TLSv1.3")
            // ZooKeeper 3.8's default list has TLS 1.2 suites only.
            .config(
                "ssl.ciphersuites",
                "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256",
            ),
    )
    .await;
    let certs = certs(&server);
    // With TLS 1.3 the server refuses the certificate after the handshake, when the
    // ConnectRequest is already on its way: closing with that request unread, the server's
    // TCP stack may reset the connection before the client reads the alert. That attempt
    // reads as a lost connection, and the next one gets the alert: at most two attempts.
    let failure = refused_within(trusting(certs), &secure(&server), 1..=2).await;
    assert!(
        matches!(failure, TlsFailure::ClientCertificateRequired { .. }),
        "{failure:?}"
    );
    let options =
        trusting(certs).client_cert_pem_files(certs.other_client_cert(), certs.other_client_key());
    let failure = refused_within(options, &secure(&server), 1..=2).await;
    assert!(
        matches!(failure, TlsFailure::ClientCertificateRejected { .. }),
        "{failure:?}"
    );
    let client = connect_with(builder().tls(mutual(certs)), &secure(&server)).await;
    assert!(
        client
            .exists("/")
            .await
            .expect("exists over TLS 1.3")
            .is_some()
    );
}

#[tokio::test]
async fn an_untrusted_server_certificate_and_a_name_mismatch_are_named() {
    let server = tls_server(ClientAuth::None).await;
    let certs = certs(&server);
    let failure = refused(
        TlsOptions::new().ca_pem_file(certs.other_ca()),
        &secure(&server),
        1,
    )
    .await;
    assert!(
        matches!(failure, TlsFailure::UntrustedCertificate { .. }),
        "{failure:?}"
    );
    let failure = refused(
        trusting(certs).server_name("zk.example.invalid"),
        &secure(&server),
        1,
    )
    .await;
    assert!(
        matches!(&failure, TlsFailure::NameMismatch { server_name, .. } if server_name == "zk.example.invalid"),
        "{failure:?}"
    );
    // The certificate names 127.0.0.1 and localhost: both verify.
    let by_name = format!("localhost:{}", server.secure_port().expect("TLS"));
    let client = connect_with(builder().tls(trusting(certs)), &by_name).await;
    assert!(client.exists("/").await.expect("exists").is_some());
}

/// The other way round: a plaintext client on a TLS port. The server closes on the
/// ConnectRequest without a word; the failure says the port may speak TLS (and the client,
/// without fail-fast, would go on backing off as for any closed connection).
#[tokio::test]
async fn a_plaintext_client_on_a_tls_port_is_told_it_may_be_one() {
    let server = tls_server(ClientAuth::None).await;
    let result = within(
        "a refused connect",
        Duration::from_secs(30),
        builder().fail_fast(true).connect(&secure(&server)),
    )
    .await;
    let error = result.expect_err("a plaintext handshake on a TLS port");
    assert!(
        matches!(error, Error::NoServerReachable { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("is this a TLS port?"), "{error}");
}

#[tokio::test]
async fn tls_to_a_plaintext_port_is_named_on_every_host() {
    // The TLS server's own plaintext port (Netty) and a default server's (NIO): both read
    // the client hello as a huge frame length and close.
    let tls = tls_server(ClientAuth::None).await;
    let plain = start_server_with(server_builder()).await;
    let both = format!("{},{}", tls.connect_string(), plain.connect_string());
    let failure = refused(trusting(certs(&tls)), &both, 2).await;
    assert!(
        matches!(failure, TlsFailure::ClosedBeforeHandshake { .. }),
        "{failure:?}"
    );
    assert!(failure.to_string().contains("plaintext port"), "{failure}");
    // The other way round, a plaintext client on the secure port: the server closes the
    // connection during the session handshake, an ordinary failure (the client cannot know
    // the port wants TLS), bounded by fail-fast here.
    let error = within(
        "a plaintext connect to a secure port",
        Duration::from_secs(10),
        builder().fail_fast(true).connect(&secure(&tls)),
    )
    .await
    .expect_err("no session over plaintext");
    assert!(
        matches!(&error, Error::NoServerReachable { attempts: 1, last_error, .. } if !last_error.is_permanent()),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_plaintext_server_answering_a_tls_connection_is_named() {
    // A server that does not speak TLS and answers anyway (here: with what a ZooKeeper
    // frame looks like).
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            tokio::spawn(async move {
                let mut hello = [0u8; 64];
                let _ = stream.read(&mut hello).await;
                use tokio::io::AsyncWriteExt;
                let _ = stream
                    .write_all(b"\x00\x00\x00\x24\x00\x00\x00\x00\x00\x00\x75\x30plain")
                    .await;
                let _ = stream.flush().await;
                tokio::time::sleep(Duration::from_secs(5)).await;
            });
        }
    });
    let server_certs = blocking(|| {
        let dir = std::env::temp_dir().join(format!("zk-tls-plain-{}", std::process::id()));
        let certs = TestCerts::generate(&dir).expect("certificates");
        (dir, certs)
    })
    .await;
    let failure = refused(trusting(&server_certs.1), &addr.to_string(), 1).await;
    let _ = std::fs::remove_dir_all(&server_certs.0);
    assert!(matches!(failure, TlsFailure::NotTls { .. }), "{failure:?}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::Relaxed),
        1,
        "one connection, no retry"
    );
}

#[tokio::test]
async fn a_session_survives_a_server_restart_over_tls() {
    let server = std::sync::Arc::new(tls_server(ClientAuth::Need).await);
    // A session that outlives the restart: a JVM restart on a loaded machine takes longer
    // than the kit's 4 s sessions (the client then rightly reports the session expired).
    let client = connect_with(
        builder()
            .session_timeout(Duration::from_secs(30))
            .tls(mutual(certs(&server))),
        &secure(&server),
    )
    .await;
    let session = client.session_id();
    client
        .create("/e", "", &CreateOptions::new(CreateMode::EPHEMERAL))
        .await
        .expect("ephemeral");
    let (_, watch) = client.exists_watch("/later").await.expect("exists watch");
    let restarting = server.clone();
    blocking(move || restarting.restart().expect("restart")).await;
    wait_for_state(&client, SessionState::Connected, Duration::from_secs(20)).await;
    assert_eq!(client.session_id(), session, "the same session");
    assert!(
        client.exists("/e").await.expect("exists").is_some(),
        "ephemeral kept"
    );
    client
        .create("/later", "", &CreateOptions::persistent())
        .await
        .expect("create");
    let event = within("NodeCreated", EVENT_WAIT, watch.changed())
        .await
        .expect("the watch was re-armed over the new TLS connection");
    assert_eq!(event.event_type, EventType::NODE_CREATED);
}

#[tokio::test]
async fn a_session_moves_to_another_server_of_a_tls_ensemble() {
    let ensemble: std::sync::Arc<Ensemble> =
        start_ensemble(Ensemble::builder(3).tls(ClientAuth::Need)).await;
    let certs = ensemble.tls_certs().expect("TLS").clone();
    let client = connect_with(
        builder()
            .session_timeout(Duration::from_secs(10))
            .keep_host_order(true)
            .tls(mutual(&certs)),
        &ensemble.tls_connect_string().expect("TLS"),
    )
    .await;
    let session = client.session_id();
    client
        .create("/moving", "", &CreateOptions::new(CreateMode::EPHEMERAL))
        .await
        .expect("ephemeral");
    // With the order kept, the client is on the first server.
    let killing = ensemble.clone();
    blocking(move || killing.kill(0)).await;
    wait_for_state(&client, SessionState::Disconnected, Duration::from_secs(10)).await;
    wait_for_state(&client, SessionState::Connected, Duration::from_secs(20)).await;
    assert_eq!(client.session_id(), session, "the same session, moved");
    assert!(
        client.exists("/moving").await.expect("exists").is_some(),
        "its ephemeral node is intact"
    );
}

#[tokio::test]
async fn a_tls_client_follows_the_ensemble_and_moves_to_a_server_it_learned() {
    // Port unification: each server's listed client port also speaks TLS, so the ports the
    // configuration lists are the ones to dial (the inferred offset is 0). The client knows
    // one server; it learns the others from `/zookeeper/config` and, when its server dies,
    // moves to one it learned, verified with the same settings (the servers need a client
    // certificate, so only a TLS connection gets a session).
    let ensemble: std::sync::Arc<Ensemble> = start_ensemble(
        Ensemble::builder(3)
            .tls(ClientAuth::Need)
            .system_property("zookeeper.client.portUnification", true),
    )
    .await;
    let certs = ensemble.tls_certs().expect("TLS").clone();
    let first = ensemble.server(0).port();
    let client = connect_with(
        builder()
            .session_timeout(Duration::from_secs(10))
            .tls(mutual(&certs)),
        &format!("127.0.0.1:{first}"),
    )
    .await;
    let session = client.session_id();
    let mut listed: Vec<u16> = ensemble.servers().iter().map(|s| s.port()).collect();
    listed.sort_unstable();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut known: Vec<u16> = client.hosts().iter().map(|h| h.port).collect();
        known.sort_unstable();
        if known == listed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the client never learned the ensemble over TLS: {known:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killing = ensemble.clone();
    blocking(move || killing.kill(0)).await;
    wait_for_state(&client, SessionState::Disconnected, Duration::from_secs(10)).await;
    wait_for_state(&client, SessionState::Connected, Duration::from_secs(20)).await;
    assert_eq!(client.session_id(), session, "the same session, moved");
    let server = client.server().expect("connected").port;
    assert!(
        server != first && listed.contains(&server),
        "on a server it learned: {server}"
    );
    client
        .create("/moved-over-tls", "", &CreateOptions::persistent())
        .await
        .expect("a write on the new server");
}

#[tokio::test]
async fn a_read_only_client_finds_a_read_write_server_over_tls() {
    // A TLS ensemble that loses its quorum: its survivor serves read-only clients; the other
    // host of the client's list is a standalone TLS server, reachable on its secure port
    // only. The `isro` probes must go over TLS (a plaintext probe to a secure port gets the
    // connection closed), and the session moves there.
    let standalone = tokio::spawn(tls_server(ClientAuth::None));
    let ensemble = start_ensemble(read_only_ensemble(
        Ensemble::builder(3).tls(ClientAuth::None),
    ))
    .await;
    let e = ensemble.clone();
    let leader = blocking(move || e.wait_for_leader().expect("leader")).await;
    let survivor = (leader + 1) % 3;
    for i in (0..3).filter(|&i| i != survivor) {
        ensemble.kill(i);
    }
    wait_for_mode(&ensemble, survivor, Mode::ReadOnly, Duration::from_secs(15)).await;
    let standalone = standalone.await.expect("standalone server");
    let options = trusting(ensemble.tls_certs().expect("TLS")).ca_pem_file(certs(&standalone).ca());
    let survivor_port = ensemble.server(survivor).secure_port().expect("TLS");
    // The client reads nothing on the survivor, not even the ensemble's configuration (no
    // following): the standalone server is not of the survivor's ensemble and its zxids are
    // far behind (epoch 0), and ZooKeeper refuses (closes the connection of) a client whose
    // last seen zxid is ahead of its own. Any reply from the survivor would set it so; the
    // configuration read that following makes right after connecting did, whenever it was
    // answered before the probe found the standalone (a quarter of the runs).
    let client = connect_with(
        builder()
            .read_only(true)
            .keep_host_order(true)
            .follow_ensemble(false)
            .tls(options),
        &format!("127.0.0.1:{survivor_port},{}", secure(&standalone)),
    )
    .await;
    // The hosts are tried in order and the survivor serves read-only clients: the session
    // starts there, read-only (not asserted at this instant: the first `isro` probe goes out
    // 100 ms later, and on a loaded machine the move may be done before the next line runs).
    // Only the probes lead to the standalone server, which the survivor never refuses.
    wait_for_state(&client, SessionState::Connected, Duration::from_secs(10)).await;
    let standalone_port = standalone.secure_port().expect("TLS");
    assert_eq!(
        client.server().map(|server| server.port),
        Some(standalone_port),
        "on the read/write server"
    );
    client
        .create("/found-over-tls", "", &CreateOptions::persistent())
        .await
        .expect("writes work on the read/write server");
}
