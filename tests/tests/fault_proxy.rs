//! The fault proxy itself, against a real server: each fault does what it says.

use std::time::Duration;

use jute::OpCode;
use tokio::time::timeout;
use zk_proto::{CreateOptions, Error, SessionState};
use zk_testkit::client::{connect, start_server, wait_for_state};
use zk_testkit::fault::FaultProxy;

const GUARD: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_after_request_loses_the_reply_of_an_applied_request() {
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    let direct = connect(&server.connect_string()).await;

    let armed = proxy.cut_after_request(OpCode::CREATE2);
    let created = client
        .create("/applied", "x", &CreateOptions::persistent())
        .await;
    assert_eq!(created.map(|_| ()), Err(Error::ConnectionLoss));
    assert!(armed.has_fired());
    assert!(
        direct.exists("/applied").await.expect("exists").is_some(),
        "the server applied the create whose reply was lost"
    );
    // The fault is one-shot: the session resumes through the proxy and works.
    wait_for_state(&client, SessionState::Connected, GUARD).await;
    client
        .create("/after", "y", &CreateOptions::persistent())
        .await
        .expect("create after the fault");
    assert!(
        proxy.accepted() >= 2,
        "the client reconnected through the proxy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_holds_traffic_without_closing_and_thaw_delivers_it() {
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    client
        .create("/frozen", "1", &CreateOptions::persistent())
        .await
        .expect("create");

    proxy.freeze();
    let mut read = tokio::spawn({
        let client = client.clone();
        async move { client.get_data("/frozen").await }
    });
    // Well inside the read timeout (2/3 of 4 s): no reply may arrive while frozen.
    let early = timeout(Duration::from_millis(800), &mut read).await;
    assert!(
        early.is_err(),
        "a reply got through a frozen proxy: {early:?}"
    );
    assert_eq!(
        proxy.open_links(),
        1,
        "the connection stays open while frozen"
    );
    proxy.thaw();
    let (data, _) = timeout(GUARD, read)
        .await
        .expect("answered after the thaw")
        .expect("task")
        .expect("get_data");
    assert_eq!(&data[..], b"1");
    assert_eq!(client.state(), SessionState::Connected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn isolate_cuts_and_refuses_until_restored() {
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let client = connect(&proxy.connect_string()).await;
    let accepted = proxy.accepted();

    proxy.isolate();
    wait_for_state(&client, SessionState::Disconnected, GUARD).await;
    assert_eq!(proxy.open_links(), 0);
    // The client's next attempt is accepted and closed at once.
    let mut attempts = tokio::time::interval(Duration::from_millis(50));
    timeout(GUARD, async {
        while proxy.accepted() == accepted {
            attempts.tick().await;
        }
    })
    .await
    .expect("the client tried to reconnect");
    assert_eq!(client.state(), SessionState::Disconnected);

    proxy.restore();
    wait_for_state(&client, SessionState::Connected, GUARD).await;
    client.exists("/").await.expect("usable again");
}
