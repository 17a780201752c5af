//! Interop with Apache Curator 5.4's `curator-x-discovery` (a real Curator process,
//! `tests/curator/CuratorDiscovery.java`), on one real server: Curator registers, updates and
//! unregisters, and this crate queries and watches it; this crate registers, updates and
//! unregisters, and Curator queries it and its service cache follows; the JSON is read both
//! ways, unknown fields kept.

#[path = "support/curator.rs"]
mod curator;

use std::time::Duration;

use curator::CuratorDiscovery;
use zk_discovery::serde_json::{Value, json};
use zk_discovery::{ServiceDiscovery, ServiceEvent, ServiceEvents, ServiceInstance};
use zk_proto::CreateOptions;
use zk_testkit::client::{connect, start_server, within};

const LIMIT: Duration = Duration::from_secs(30);
const WAIT: Option<Duration> = Some(LIMIT);
const SESSION: Duration = Duration::from_secs(10);

async fn next(events: &mut ServiceEvents) -> ServiceEvent {
    within("a service event", LIMIT, events.next())
        .await
        .expect("service event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn we_discover_and_watch_what_curator_registers() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let cache = discovery.cache("api").start();
    let mut events = cache.events();
    cache.wait_initialized(WAIT).await.expect("initialized");
    assert_eq!(next(&mut events).await, ServiceEvent::Initialized);

    let mut curator = CuratorDiscovery::start(&server.connect_string(), "/services", SESSION).await;
    curator.call("register api c1 10.1.0.1 8080 east").await;
    let added = match next(&mut events).await {
        ServiceEvent::Added(instance) => instance,
        other => panic!("expected Added, got {other:?}"),
    };
    assert_eq!(added.name, "api");
    assert_eq!(added.id, "c1");
    assert_eq!(added.address.as_deref(), Some("10.1.0.1"));
    assert_eq!(added.port, Some(8080));
    assert_eq!(added.ssl_port, None);
    assert!(added.enabled);
    assert!(added.registration_time_utc > 0);
    assert_eq!(
        added.payload,
        Some(json!({"@class": "java.util.LinkedHashMap", "zone": "east"}))
    );
    assert_eq!(
        added.uri_spec_template().as_deref(),
        Some("{scheme}://{address}:{port}")
    );
    assert!(added.extra.is_empty(), "{:?}", added.extra);
    // Curator's node: ephemeral, of Curator's session.
    let (_, stat) = client.get_data("/services/api/c1").await.expect("node");
    assert_ne!(stat.ephemeral_owner, 0);
    assert_ne!(stat.ephemeral_owner, client.session_id());

    let found = discovery.query_for_instances("api").await.expect("query");
    assert_eq!(found.instances, [(*added).clone()]);
    assert_eq!(discovery.query_for_names().await.expect("names"), ["api"]);

    curator.call("update c1 west").await;
    match next(&mut events).await {
        ServiceEvent::Updated { old, new } => {
            assert_eq!(
                old.payload.as_ref().map(|p| p["zone"].clone()),
                Some(json!("east"))
            );
            assert_eq!(
                new.payload.as_ref().map(|p| p["zone"].clone()),
                Some(json!("west"))
            );
        }
        other => panic!("expected Updated, got {other:?}"),
    }

    curator.call("unregister c1").await;
    match next(&mut events).await {
        ServiceEvent::Removed { id, .. } => assert_eq!(id, "c1"),
        other => panic!("expected Removed, got {other:?}"),
    }
    assert!(cache.instances().is_empty());
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_discovers_and_watches_what_we_register() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let mut curator = CuratorDiscovery::start(&server.connect_string(), "/services", SESSION).await;
    curator.call("cache api").await;
    assert_eq!(curator.call("cache-wait - 1000").await, "ok");

    let mut ours = ServiceInstance::builder("api")
        .id("r1")
        .address("10.2.0.1")
        .port(9090)
        .ssl_port(9443)
        .uri_spec("{scheme}://{address}:{port}")
        .build();
    ours.set_payload(
        &json!({"zone": "north", "weight": 3}),
        Some("java.util.LinkedHashMap"),
    )
    .expect("payload");
    // A field only a newer writer knows: Curator ignores it, we keep it.
    ours.extra.insert("weight".into(), json!(3));
    let registration = discovery.register(&ours, WAIT).await.expect("register");
    let limit = LIMIT.as_millis();
    assert_eq!(
        curator.call(&format!("cache-wait r1:9090 {limit}")).await,
        "ok"
    );

    let seen = curator.query("api").await;
    assert_eq!(seen.len(), 1);
    let seen = &seen[0];
    assert_eq!(seen["name"], "api");
    assert_eq!(seen["id"], "r1");
    assert_eq!(seen["address"], "10.2.0.1");
    assert_eq!(seen["port"], 9090);
    assert_eq!(seen["sslPort"], 9443);
    assert_eq!(seen["enabled"], true);
    assert_eq!(seen["serviceType"], "DYNAMIC");
    assert_eq!(
        seen["registrationTimeUTC"],
        json!(ours.registration_time_utc)
    );
    // Curator builds {scheme} as https when there is an sslPort, {port} from the port.
    assert_eq!(seen["uri"], "https://10.2.0.1:9090");
    assert_eq!(seen["payload"], json!({"zone": "north", "weight": 3}));
    assert_eq!(curator.call("names").await, "names api");

    // An update: Curator's cache follows, and sees it disabled.
    let mut update = ours.clone();
    update.port = Some(9091);
    update.enabled = false;
    registration.update(&update).await.expect("update");
    assert_eq!(
        curator.call(&format!("cache-wait r1:9091 {limit}")).await,
        "ok"
    );
    let described: Value =
        zk_discovery::serde_json::from_str(&curator.call("cache-get r1").await).expect("describe");
    assert_eq!(described["enabled"], false);
    assert_ne!(curator.call("cache-changes").await, "changes 0");
    let raw: Value = {
        let (data, _) = client.get_data("/services/api/r1").await.expect("node");
        zk_discovery::serde_json::from_slice(&data).expect("json")
    };
    assert_eq!(raw["weight"], 3, "our unknown field stays on the node");

    registration.unregister().await.expect("unregister");
    assert_eq!(curator.call(&format!("cache-wait - {limit}")).await, "ok");
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_from_a_newer_writer_reads_both_ways_and_keeps_its_fields() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let mut curator = CuratorDiscovery::start(&server.connect_string(), "/services", SESSION).await;
    for path in ["/services", "/services/api"] {
        client
            .create(path, "", &CreateOptions::persistent())
            .await
            .expect("parent");
    }
    let newer = json!({
        "name": "api", "id": "n1", "address": "10.3.0.1", "port": 7000, "sslPort": null,
        "payload": {"@class": "java.util.LinkedHashMap", "zone": "south"},
        "registrationTimeUTC": 1234, "serviceType": "DYNAMIC", "uriSpec": null,
        "enabled": true, "region": "eu", "labels": {"tier": "gold"}
    });
    client
        .create(
            "/services/api/n1",
            newer.to_string(),
            &CreateOptions::persistent(),
        )
        .await
        .expect("node");

    // Curator reads it (ignoring what it does not know); so do we (keeping it).
    let seen = curator.query("api").await;
    assert_eq!(seen[0]["port"], 7000);
    assert_eq!(seen[0]["payload"], json!({"zone": "south"}));
    let mut ours = discovery
        .query_for_instance("api", "n1")
        .await
        .expect("query")
        .expect("found");
    assert_eq!(ours.extra.get("region"), Some(&json!("eu")));

    ours.port = Some(7001);
    discovery.update_instance(&ours).await.expect("update");
    let (data, _) = client.get_data("/services/api/n1").await.expect("node");
    let written: Value = zk_discovery::serde_json::from_slice(&data).expect("json");
    assert_eq!(written["region"], "eu");
    assert_eq!(written["labels"], json!({"tier": "gold"}));
    assert_eq!(written["port"], 7001);
    let seen = curator.query("api").await;
    assert_eq!(seen[0]["port"], 7001);
    assert_eq!(seen[0]["registrationTimeUTC"], 1234);
    curator.quit().await;
}
