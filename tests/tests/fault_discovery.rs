//! Service discovery (`zk-discovery`) under faults, against real servers: a cut connection
//! (the registration stays, a cache catches up), a session expiry (re-registered on a client
//! that renews sessions, ended on one that does not; a cache converges; a Curator process cut
//! off until its session expired registers again and our cache follows), and kill -9 of a
//! registering process, ours and Curator's (its instance leaves once its session expires,
//! and the caches converge).
//!
//! Every session that is to fail sits behind its own [`zk_testkit::fault::FaultProxy`]. No
//! sleep stands in for an event: every wait is on a cache event, a state or a listing,
//! bounded.

#[path = "../../crates/zk-discovery/tests/support/curator.rs"]
mod curator;

use std::time::Duration;

use zk_discovery::{ServiceCache, ServiceDiscovery, ServiceEvent, ServiceEvents, ServiceInstance};
use zk_proto::SessionState;
use zk_testkit::ZkServer;
use zk_testkit::client::{
    builder, connect, connect_proxied, connect_with, eventually, expire_session, server_builder,
    spawn_test_child, start_server_with, wait_child_line, within,
};

/// Bound of every wait.
const LIMIT: Duration = Duration::from_secs(30);
const WAIT: Option<Duration> = Some(LIMIT);
/// The sessions that crash or expire here (the server's tick allows 2 s).
const SESSION: Duration = Duration::from_secs(2);

async fn server() -> ZkServer {
    start_server_with(server_builder().tick_time(Duration::from_millis(500))).await
}

fn instance(id: &str, port: u16) -> ServiceInstance {
    ServiceInstance::builder("api")
        .id(id)
        .address("10.0.0.9")
        .port(port)
        .build()
}

async fn next(events: &mut ServiceEvents) -> ServiceEvent {
    within("a service event", LIMIT, events.next())
        .await
        .expect("service event")
}

/// The cache's instances as `id:port`, sorted.
fn view(cache: &ServiceCache) -> Vec<String> {
    cache
        .instances()
        .iter()
        .map(|i| format!("{}:{}", i.id, i.port.unwrap_or(0)))
        .collect()
}

/// Waits (bounded) until `cache` shows `expected`, on its events: no polling.
async fn wait_view(cache: &ServiceCache, expected: &[&str]) {
    let (_, mut events) = cache.subscribe();
    let result = tokio::time::timeout(LIMIT, async {
        loop {
            if view(cache) == expected {
                return;
            }
            events.next().await.expect("cache events");
        }
    })
    .await;
    assert!(
        result.is_ok(),
        "the cache shows {:?}, not {expected:?}, after {LIMIT:?}",
        view(cache)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_keeps_the_registration_and_a_cut_off_cache_catches_up() {
    let server = server().await;
    let registering = connect_proxied(
        server.addr(),
        builder().session_timeout(Duration::from_secs(8)),
    )
    .await;
    let watching = connect_proxied(
        server.addr(),
        builder().session_timeout(Duration::from_secs(8)),
    )
    .await;
    let other = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&registering.client, "/services");
    let a = discovery
        .register(&instance("a", 1), WAIT)
        .await
        .expect("register a");
    let (_, before) = other.get_data("/services/api/a").await.expect("a");

    let cache = ServiceDiscovery::new(&watching.client, "/services")
        .cache("api")
        .start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    assert_eq!(view(&cache), ["a:1"]);

    // The registering session's connection is cut: it reconnects in the same session, and its
    // ephemeral node stays the same node (never deleted and created again).
    let connections = registering.proxy.accepted();
    registering.proxy.cut();
    eventually("a reconnection through the proxy", LIMIT, || async {
        registering.proxy.accepted() > connections
            && registering.client.state() == SessionState::Connected
    })
    .await;
    a.wait_registered(WAIT).await.expect("registered");
    let (_, after) = other.get_data("/services/api/a").await.expect("a");
    assert_eq!(
        (after.czxid, after.ephemeral_owner),
        (before.czxid, before.ephemeral_owner)
    );

    // The cache is cut off while the service changes; back, it shows exactly the changes.
    watching.proxy.isolate();
    let others = ServiceDiscovery::new(&other, "/services");
    let b = others
        .register(&instance("b", 2), WAIT)
        .await
        .expect("register b");
    a.update(&instance("a", 11)).await.expect("update a");
    watching.proxy.restore();
    wait_view(&cache, &["a:11", "b:2"]).await;
    b.unregister().await.expect("unregister b");
    wait_view(&cache, &["a:11"]).await;
    assert_eq!(a.ended(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_re_registers_on_a_renewing_client_and_ends_on_a_plain_one() {
    let server = server().await;
    let renewing = connect_with(
        builder()
            .session_timeout(SESSION)
            .renew_expired_sessions(true),
        &server.connect_string(),
    )
    .await;
    let plain = connect_with(builder().session_timeout(SESSION), &server.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let cache = ServiceDiscovery::new(&watcher, "/services")
        .cache("api")
        .start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    let mut events = cache.events();

    let kept = ServiceDiscovery::new(&renewing, "/services")
        .register(&instance("kept", 1), WAIT)
        .await
        .expect("register kept");
    let lost = ServiceDiscovery::new(&plain, "/services")
        .register(&instance("lost", 2), WAIT)
        .await
        .expect("register lost");
    for _ in 0..2 {
        assert!(matches!(next(&mut events).await, ServiceEvent::Added(_)));
    }

    let old_session = renewing.session_id();
    expire_session(&renewing, &server.connect_string()).await;
    // The node goes with the session, then comes back in the client's next session.
    match next(&mut events).await {
        ServiceEvent::Removed { id, .. } => assert_eq!(id, "kept"),
        other => panic!("expected kept Removed, got {other:?}"),
    }
    match next(&mut events).await {
        ServiceEvent::Added(instance) => assert_eq!(instance.id, "kept"),
        other => panic!("expected kept Added, got {other:?}"),
    }
    kept.wait_registered(WAIT).await.expect("registered again");
    let (_, stat) = watcher.get_data("/services/api/kept").await.expect("kept");
    assert_ne!(stat.ephemeral_owner, old_session);
    assert_eq!(stat.ephemeral_owner, renewing.session_id());
    assert_eq!(kept.ended(), None);

    // Without renewal the registration ends, saying why; the instance is gone for good.
    expire_session(&plain, &server.connect_string()).await;
    let why = within("the registration's end", LIMIT, lost.wait_ended()).await;
    assert_eq!(
        why,
        zk_discovery::Error::Zk(zk_proto::Error::SessionExpired)
    );
    match next(&mut events).await {
        ServiceEvent::Removed { id, .. } => assert_eq!(id, "lost"),
        other => panic!("expected lost Removed, got {other:?}"),
    }
    cache.sync(WAIT).await.expect("sync");
    assert_eq!(view(&cache), ["kept:1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_whose_session_expired_converges_on_a_renewing_client() {
    let server = server().await;
    let watching = connect_proxied(
        server.addr(),
        builder()
            .session_timeout(SESSION)
            .renew_expired_sessions(true),
    )
    .await;
    let other = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&other, "/services");
    let a = discovery
        .register(&instance("a", 1), WAIT)
        .await
        .expect("a");
    let cache = ServiceDiscovery::new(&watching.client, "/services")
        .cache("api")
        .start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    assert_eq!(view(&cache), ["a:1"]);

    watching.proxy.isolate();
    let b = discovery
        .register(&instance("b", 2), WAIT)
        .await
        .expect("b");
    a.unregister().await.expect("unregister a");
    expire_session(&watching.client, &server.connect_string()).await;
    watching.proxy.restore();
    wait_view(&cache, &["b:2"]).await;
    assert_eq!(cache.ended(), None);
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_curator_process_leaves_once_its_session_expires() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    let cache = ServiceDiscovery::new(&client, "/services")
        .cache("api")
        .start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    let mut events = cache.events();

    let mut curator =
        curator::CuratorDiscovery::start(&server.connect_string(), "/services", SESSION).await;
    curator.call("register api c1 10.1.0.1 8080 east").await;
    assert!(matches!(next(&mut events).await, ServiceEvent::Added(i) if i.id == "c1"));
    curator.kill9().await;
    // Gone once the server expires the dead session (its timeout, 2 s, plus a tick or two).
    match next(&mut events).await {
        ServiceEvent::Removed { id, .. } => assert_eq!(id, "c1"),
        other => panic!("expected Removed, got {other:?}"),
    }
    assert!(cache.instances().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_curator_instance_cut_off_until_its_session_expires_comes_back_and_caches_follow() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    let cache = ServiceDiscovery::new(&client, "/services")
        .cache("api")
        .start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    let mut events = cache.events();

    let proxy = zk_testkit::fault::FaultProxy::start(server.addr())
        .await
        .expect("proxy");
    let mut curator =
        curator::CuratorDiscovery::start(&proxy.connect_string(), "/services", SESSION).await;
    curator.call("register api c1 10.1.0.1 8080 east").await;
    let first = match next(&mut events).await {
        ServiceEvent::Added(instance) => instance,
        other => panic!("expected Added, got {other:?}"),
    };
    let (_, before) = client.get_data("/services/api/c1").await.expect("c1");

    // Cut off until the ensemble expires Curator's session: its instance goes.
    proxy.isolate();
    match next(&mut events).await {
        ServiceEvent::Removed { id, .. } => assert_eq!(id, "c1"),
        other => panic!("expected Removed, got {other:?}"),
    }
    // Back: Curator opens a new session and registers the instance again (on RECONNECTED).
    proxy.restore();
    match next(&mut events).await {
        ServiceEvent::Added(instance) => assert_eq!(*instance, *first),
        other => panic!("expected Added, got {other:?}"),
    }
    let (_, after) = client.get_data("/services/api/c1").await.expect("c1");
    assert_ne!(after.ephemeral_owner, before.ephemeral_owner);
    assert_eq!(view(&cache), ["c1:8080"]);
    curator.quit().await;
}

/// The environment variable that turns [`registering_child`] into the registering process of
/// [`a_killed_registering_process_leaves_once_its_session_expires`]: the connect string.
const CHILD_ENV: &str = "ZK_DISCOVERY_FAULT_CHILD";

/// Not a test of its own: run by [`a_killed_registering_process_leaves_once_its_session_expires`]
/// as a child process (this test binary, filtered to this test, with [`CHILD_ENV`] set), it
/// registers an instance, prints `child-registered`, and waits to be killed. Without the variable
/// it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_child() {
    let Ok(connect_string) = std::env::var(CHILD_ENV) else {
        return;
    };
    let client = connect_with(builder().session_timeout(SESSION), &connect_string).await;
    let registration = ServiceDiscovery::new(&client, "/services")
        .register(&instance("child", 7), WAIT)
        .await
        .expect("register");
    // libtest has printed "test registering_child ... " without a newline: this ends that line.
    println!("child-registered");
    // The child's lifetime: the parent kills it long before (a bound, should the parent die).
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(registration);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_registering_process_leaves_once_its_session_expires() {
    let server = server().await;
    let client = connect(&server.connect_string()).await;
    let cache = ServiceDiscovery::new(&client, "/services")
        .cache("api")
        .start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    let mut events = cache.events();

    let mut child = spawn_test_child("registering_child", CHILD_ENV, &server.connect_string());
    let _stdout = wait_child_line(&mut child, "child-registered", LIMIT).await;
    match next(&mut events).await {
        ServiceEvent::Added(instance) => assert_eq!(instance.id, "child"),
        other => panic!("expected Added, got {other:?}"),
    }
    child.start_kill().expect("kill -9");
    let _ = child.wait().await;
    match next(&mut events).await {
        ServiceEvent::Removed { id, .. } => assert_eq!(id, "child"),
        other => panic!("expected Removed, got {other:?}"),
    }
}
