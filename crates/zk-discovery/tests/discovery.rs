//! Service discovery against a healthy real server: registering (each service type),
//! querying, updating, unregistering; the layout and JSON on the server; unknown JSON fields
//! kept through an update; malformed instance nodes skipped with a reason; the service
//! cache's view and events; the provider's strategies, disabled instances and `note_error`.

use std::sync::Arc;
use std::time::Duration;

use zk_discovery::serde_json::{Value, json};
use zk_discovery::{
    DownInstancePolicy, Error, ServiceDiscovery, ServiceEvent, ServiceEvents, ServiceInstance,
    ServiceType, Strategy,
};
use zk_proto::{Client, CreateOptions};
use zk_testkit::client::{connect, start_server, within};

const LIMIT: Duration = Duration::from_secs(20);
const WAIT: Option<Duration> = Some(LIMIT);

async fn next(events: &mut ServiceEvents) -> ServiceEvent {
    within("a service event", LIMIT, events.next())
        .await
        .expect("service event")
}

async fn raw(client: &Client, path: &str) -> Value {
    let (data, _) = client.get_data(path).await.expect("read the instance node");
    zk_discovery::serde_json::from_slice(&data).expect("instance JSON")
}

fn instance(id: &str, port: u16) -> ServiceInstance {
    ServiceInstance::builder("api")
        .id(id)
        .address("10.0.0.7")
        .port(port)
        .payload(json!({"zone": "a"}))
        .uri_spec("{scheme}://{address}:{port}")
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_query_update_unregister_in_curators_layout() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    assert!(discovery.query_for_names().await.expect("names").is_empty());
    assert!(
        discovery
            .query_for_instances("api")
            .await
            .expect("none")
            .instances
            .is_empty()
    );

    let one = instance("one", 8080);
    let registration = discovery.register(&one, WAIT).await.expect("register");
    assert_eq!(registration.path().as_deref(), Some("/services/api/one"));

    // The node: ephemeral, of this session, holding Curator's JSON in Curator's order.
    let (data, stat) = client.get_data("/services/api/one").await.expect("node");
    assert_eq!(stat.ephemeral_owner, client.session_id());
    let text = String::from_utf8(data.to_vec()).expect("utf-8");
    let keys = [
        "\"name\"",
        "\"id\"",
        "\"address\"",
        "\"port\"",
        "\"sslPort\"",
        "\"payload\"",
        "\"registrationTimeUTC\"",
        "\"serviceType\"",
        "\"uriSpec\"",
    ];
    let at: Vec<usize> = keys.iter().map(|k| text.find(k).expect(k)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "field order: {text}");
    assert!(
        !text.contains("enabled"),
        "enabled is written only when false: {text}"
    );
    let json = raw(&client, "/services/api/one").await;
    assert_eq!(json["serviceType"], "DYNAMIC");
    assert_eq!(json["port"], 8080);

    assert_eq!(discovery.query_for_names().await.expect("names"), ["api"]);
    let found = discovery
        .query_for_instances("api")
        .await
        .expect("instances");
    assert_eq!(found.instances, std::slice::from_ref(&one));
    assert!(found.skipped.is_empty());
    assert_eq!(
        discovery
            .query_for_instance("api", "one")
            .await
            .expect("one"),
        Some(one.clone())
    );
    assert_eq!(
        discovery
            .query_for_instance("api", "two")
            .await
            .expect("none"),
        None
    );

    let mut changed = one.clone();
    changed.port = Some(9090);
    changed.enabled = false;
    registration.update(&changed).await.expect("update");
    assert_eq!(raw(&client, "/services/api/one").await["port"], 9090);
    assert_eq!(raw(&client, "/services/api/one").await["enabled"], false);
    let mut renamed = changed.clone();
    renamed.id = "other".into();
    assert!(matches!(
        registration.update(&renamed).await,
        Err(Error::Unwritable { .. })
    ));

    registration.unregister().await.expect("unregister");
    assert_eq!(
        client.exists("/services/api/one").await.expect("exists"),
        None
    );
    // The service's node is a container: the server removes it once empty, in its own time.
    assert!(
        discovery
            .query_for_instances("api")
            .await
            .expect("none")
            .instances
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_types_choose_the_node_kind_and_names_are_checked() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");

    let fixed = ServiceInstance::builder("db")
        .id("fixed")
        .service_type(ServiceType::Static)
        .build();
    let registration = discovery.register(&fixed, WAIT).await.expect("static");
    let stat = client
        .exists("/services/db/fixed")
        .await
        .expect("exists")
        .expect("node");
    assert_eq!(stat.ephemeral_owner, 0, "a STATIC instance is persistent");
    registration.unregister().await.expect("unregister");

    let numbered = ServiceInstance::builder("db")
        .id("seq-")
        .service_type(ServiceType::DynamicSequential)
        .build();
    let registration = discovery
        .register(&numbered, WAIT)
        .await
        .expect("sequential");
    let path = registration.path().expect("path");
    assert!(path.starts_with("/services/db/seq-") && path.len() == "/services/db/seq-".len() + 10);
    let stat = client.exists(&path).await.expect("exists").expect("node");
    assert_eq!(stat.ephemeral_owner, client.session_id());
    registration.unregister().await.expect("unregister");

    for (name, id) in [("a/b", "x"), ("", "x"), ("a", ".."), ("a", "x/y")] {
        let bad = ServiceInstance::builder(name).id(id).build();
        assert!(
            matches!(
                discovery.register(&bad, WAIT).await,
                Err(Error::InvalidName { .. })
            ),
            "{name:?}/{id:?}"
        );
    }
    let unknown = ServiceInstance::builder("db")
        .service_type(ServiceType::Other("FUTURE".into()))
        .build();
    assert!(matches!(
        discovery.register(&unknown, WAIT).await,
        Err(Error::Unwritable { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_are_kept_and_malformed_nodes_skipped_with_a_reason() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    client
        .create("/services", "", &CreateOptions::persistent())
        .await
        .expect("base");
    client
        .create("/services/api", "", &CreateOptions::persistent())
        .await
        .expect("service");
    // An instance from a newer writer: a field and a service type this crate does not know.
    let newer = json!({
        "name": "api", "id": "newer", "address": "10.0.0.8", "port": 81, "sslPort": null,
        "payload": {"@class": "com.example.Details", "zone": "b"},
        "registrationTimeUTC": 7, "serviceType": "DYNAMIC", "uriSpec": null,
        "weight": 5, "tags": ["x", "y"]
    });
    client
        .create(
            "/services/api/newer",
            newer.to_string(),
            &CreateOptions::persistent(),
        )
        .await
        .expect("newer");
    for (id, data) in [
        ("garbage", "not json"),
        ("port", r#"{"id":"port","port":99999}"#),
    ] {
        client
            .create(
                &format!("/services/api/{id}"),
                data,
                &CreateOptions::persistent(),
            )
            .await
            .expect("malformed");
    }

    let found = discovery
        .query_for_instances("api")
        .await
        .expect("instances");
    assert_eq!(found.instances.len(), 1);
    let mut read = found.instances[0].clone();
    assert_eq!(read.extra.get("weight"), Some(&json!(5)));
    let paths: Vec<&str> = found.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(paths, ["/services/api/garbage", "/services/api/port"]);
    assert!(found.skipped.iter().all(|s| !s.reason.is_empty()));
    assert!(matches!(
        discovery.query_for_instance("api", "garbage").await,
        Err(Error::BadInstance { .. })
    ));

    #[derive(serde::Deserialize, serde::Serialize, PartialEq, Debug)]
    struct Details {
        zone: String,
    }
    assert_eq!(
        read.payload_as::<Details>().expect("typed payload"),
        Some(Details { zone: "b".into() })
    );
    read.port = Some(82);
    discovery.update_instance(&read).await.expect("update");
    let written = raw(&client, "/services/api/newer").await;
    assert_eq!(written["weight"], 5);
    assert_eq!(written["tags"], json!(["x", "y"]));
    assert_eq!(written["payload"]["@class"], "com.example.Details");
    assert_eq!(written["port"], 82);

    // A cache shows the same, and says why it skips.
    let cache = discovery.cache("api").start();
    cache.wait_initialized(WAIT).await.expect("initialized");
    let ids: Vec<String> = cache.instances().iter().map(|i| i.id.clone()).collect();
    assert_eq!(ids, ["newer"]);
    assert_eq!(cache.skipped().len(), 2);
    let mut events = cache.events();
    client
        .set_data("/services/api/newer", "{", None)
        .await
        .expect("break it");
    match next(&mut events).await {
        ServiceEvent::Malformed(skipped) => assert_eq!(skipped.path, "/services/api/newer"),
        other => panic!("expected Malformed, got {other:?}"),
    }
    assert!(cache.instances().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_started_before_the_service_exists_reports_every_change() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let watcher = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let cache = ServiceDiscovery::new(&watcher, "/services")
        .cache("api")
        .start();
    let mut events = cache.events();
    cache.wait_initialized(WAIT).await.expect("initialized");
    assert_eq!(next(&mut events).await, ServiceEvent::Initialized);
    assert!(cache.instances().is_empty());

    let first = instance("one", 1);
    let one = discovery.register(&first, WAIT).await.expect("one");
    match next(&mut events).await {
        ServiceEvent::Added(added) => assert_eq!(*added, first),
        other => panic!("expected Added, got {other:?}"),
    }
    let two = discovery
        .register(&instance("two", 2), WAIT)
        .await
        .expect("two");
    assert!(matches!(next(&mut events).await, ServiceEvent::Added(i) if i.id == "two"));

    one.update(&instance("one", 11)).await.expect("update");
    match next(&mut events).await {
        ServiceEvent::Updated { old, new } => {
            assert_eq!((old.port, new.port), (Some(1), Some(11)));
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    assert_eq!(cache.get("one").and_then(|i| i.port), Some(11));

    two.unregister().await.expect("unregister");
    match next(&mut events).await {
        ServiceEvent::Removed { id, last } => {
            assert_eq!(id, "two");
            assert_eq!(last.map(|i| i.port), Some(Some(2)));
        }
        other => panic!("expected Removed, got {other:?}"),
    }
    cache.sync(WAIT).await.expect("sync");
    let ids: Vec<String> = cache.instances().iter().map(|i| i.id.clone()).collect();
    assert_eq!(ids, ["one"]);
    drop(one);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_picks_by_strategy_among_usable_instances() {
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let mut registrations = Vec::new();
    for (id, port) in [("a", 1), ("b", 2), ("c", 3)] {
        registrations.push(
            discovery
                .register(&instance(id, port), WAIT)
                .await
                .expect("register"),
        );
    }
    let mut off = instance("d", 4);
    off.enabled = false;
    registrations.push(discovery.register(&off, WAIT).await.expect("disabled"));

    let pick = |provider: &zk_discovery::ServiceProvider| -> String {
        provider
            .get_instance()
            .map(|i| i.id.clone())
            .unwrap_or_default()
    };
    let round_robin = discovery
        .provider("api")
        .down_instance_policy(DownInstancePolicy {
            timeout: Duration::from_secs(3600),
            error_threshold: 2,
        })
        .start();
    round_robin
        .wait_initialized(WAIT)
        .await
        .expect("initialized");
    assert_eq!(round_robin.all_instances().len(), 4);
    let picks: Vec<String> = (0..6).map(|_| pick(&round_robin)).collect();
    assert_eq!(
        picks,
        ["a", "b", "c", "a", "b", "c"],
        "never the disabled d"
    );

    // Two errors set b aside (Curator's default threshold).
    let b = round_robin.cache().get("b").expect("b");
    round_robin.note_error(&b);
    assert!((0..3).map(|_| pick(&round_robin)).any(|id| id == "b"));
    round_robin.note_error(&b);
    assert!((0..6).map(|_| pick(&round_robin)).all(|id| id != "b"));

    let sticky = discovery
        .provider("api")
        .strategy(Strategy::sticky(Strategy::Random))
        .start();
    sticky.wait_initialized(WAIT).await.expect("initialized");
    let first = pick(&sticky);
    assert!((0..10).all(|_| pick(&sticky) == first));
    // Its instance goes: another one, kept from then on.
    let index = ["a", "b", "c"]
        .iter()
        .position(|id| *id == first)
        .expect("one of a, b, c");
    let mut events = sticky.cache().events();
    registrations
        .remove(index)
        .unregister()
        .await
        .expect("unregister");
    assert!(matches!(
        next(&mut events).await,
        ServiceEvent::Removed { .. }
    ));
    let second = pick(&sticky);
    assert!(second != first && !second.is_empty() && second != "d");
    assert!((0..10).all(|_| pick(&sticky) == second));

    let random = discovery.provider("api").strategy(Strategy::Random).start();
    random.wait_initialized(WAIT).await.expect("initialized");
    let seen: std::collections::BTreeSet<String> = (0..200).map(|_| pick(&random)).collect();
    assert_eq!(seen.len(), 2, "both usable instances, never d: {seen:?}");
    assert!(!seen.contains("d"));

    let target = second.clone();
    let filtered = discovery
        .provider("api")
        .filter(move |i| i.id == target)
        .start();
    filtered.wait_initialized(WAIT).await.expect("initialized");
    let only: Option<Arc<ServiceInstance>> = filtered.get_instance();
    assert_eq!(only.map(|i| i.id.clone()), Some(second));
}
