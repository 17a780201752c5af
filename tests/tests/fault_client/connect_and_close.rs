//! The first connect and the close under faults: no server, no answer to the handshake, a
//! connection that drops while closeSession is in flight.

use super::*;

/// `close()` whose connection drops while closeSession is in flight (the server applied it,
/// its reply is lost): `Ok`, the state reads `Closed`, and the session is really gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_is_ok_when_the_connection_drops_while_close_session_is_in_flight() {
    let _serial = serial().await;
    let server = server().await;
    let Proxied { proxy, client } = connect_proxied(server.addr(), Client::builder()).await;
    let observer = within("connect", GUARD, Client::connect(&server.connect_string()))
        .await
        .expect("connect");
    client
        .create("/closing", "", &CreateOptions::ephemeral())
        .await
        .expect("create");
    let cut = proxy.cut_after_request(jute::OpCode::CLOSE_SESSION);
    let closed = within("close", GUARD, client.close()).await;
    assert!(
        cut.has_fired(),
        "the closeSession went through the armed proxy"
    );
    assert_eq!(closed, Ok(()));
    assert_eq!(client.state(), SessionState::Closed);
    assert_eq!(
        observer.exists("/closing").await,
        Ok(None),
        "the server closed the session (its ephemeral node is gone)"
    );
    assert_eq!(client.exists("/").await, Err(Error::Closed));
}

/// When `close().await` returns, `state()` reads `Closed` (the state is published before the
/// closer is answered): 200 sessions against the real server, on a multi-threaded runtime
/// where the closer may run on the other thread than the connection task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_has_published_closed_when_it_returns() {
    let _serial = serial().await;
    let server = server().await;
    for run in 0..200 {
        let client = within("connect", GUARD, Client::connect(&server.connect_string()))
            .await
            .expect("connect");
        within("close", GUARD, client.close()).await.expect("close");
        assert_eq!(client.state(), SessionState::Closed, "run {run}");
    }
}

/// `connect` without fail-fast no longer waits for ever: after the session timeout (the
/// default connect timeout) it fails with `NoServerReachable`, naming every host tried and
/// the last failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_no_server_gives_up_after_the_session_timeout_naming_the_hosts() {
    let session_timeout = Duration::from_secs(2);
    let ports = zk_testkit::free_ports(2).expect("free ports");
    let hosts: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let started = Instant::now();
    let result = within(
        "connect",
        GUARD,
        Client::builder()
            .session_timeout(session_timeout)
            .connect(&hosts.join(",")),
    )
    .await;
    let took = started.elapsed();
    let Err(Error::NoServerReachable {
        attempts,
        hosts: tried,
        last_error,
    }) = result
    else {
        panic!("{result:?}");
    };
    assert!(
        took >= session_timeout && took < session_timeout + Duration::from_secs(1),
        "gave up after {took:?}"
    );
    assert!(attempts >= 2, "{attempts} attempts");
    let mut tried = tried;
    tried.sort();
    let mut expected = hosts.clone();
    expected.sort();
    assert_eq!(tried, expected);
    assert!(
        matches!(
            last_error,
            ConnectFailure::Io {
                kind: std::io::ErrorKind::ConnectionRefused,
                ..
            }
        ),
        "{last_error:?}"
    );
}

/// `connect_timeout(None)` keeps the old behaviour on request: it waits past the session
/// timeout for a server, and connects once one answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_without_a_timeout_waits_until_a_server_answers() {
    let session_timeout = Duration::from_secs(1);
    let _serial = serial().await;
    let server = server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    proxy.refuse(true);
    let builder = Client::builder()
        .session_timeout(session_timeout)
        .connect_timeout(None);
    let connect_string = proxy.connect_string();
    let connecting = tokio::spawn(async move { builder.connect(&connect_string).await });
    // The refusal's duration (the schedule of the fault): three session timeouts, past the
    // connect timeout a default client would have (the session timeout). Still trying, not
    // given up.
    tokio::time::sleep(session_timeout * 3).await;
    assert!(!connecting.is_finished(), "connect gave up");
    assert!(proxy.accepted() >= 3, "{} attempts", proxy.accepted());
    proxy.refuse(false);
    let client = within("connect", GUARD, connecting)
        .await
        .expect("connect task")
        .expect("connects once the server answers");
    assert_eq!(client.state(), SessionState::Connected);
    client.close().await.expect("close");
}

/// A server that accepts the connection and never answers the handshake: the attempt ends at
/// its budget and is reported as a handshake timeout, not as a connection loss.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_handshake_is_reported_as_a_timeout() {
    let session_timeout = Duration::from_secs(3);
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the silent listener");
    let addr = silent.local_addr().expect("silent address");
    let silent_task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let started = Instant::now();
    let result = within(
        "connect",
        GUARD,
        Client::builder()
            .session_timeout(session_timeout)
            .fail_fast(true)
            .connect(&addr.to_string()),
    )
    .await;
    let took = started.elapsed();
    assert!(
        matches!(
            &result,
            Err(Error::NoServerReachable {
                attempts: 1,
                last_error: ConnectFailure::HandshakeTimedOut(_),
                ..
            })
        ),
        "{result:?}"
    );
    // One attempt's budget: at most T/3.
    assert!(
        took >= session_timeout / 3 && took < session_timeout / 3 + Duration::from_secs(1),
        "gave up after {took:?}"
    );
    silent_task.abort();
}
