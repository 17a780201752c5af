//! `rzk services` as a user runs it against a real server, on instances registered by
//! `zk-discovery` in Curator's layout: the services, one service's instances (text and JSON,
//! a malformed node skipped and said on stderr), and `--watch` printing the instances and then
//! each change.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{command, rzk, signal};
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_discovery::{ServiceDiscovery, ServiceInstance};
use zk_proto::CreateOptions;
use zk_testkit::client::{connect, serial, start_server, within};

const LIMIT: Duration = Duration::from_secs(20);
const WAIT: Option<Duration> = Some(LIMIT);

fn instance(id: &str, port: u16) -> ServiceInstance {
    ServiceInstance::builder("api")
        .id(id)
        .address("10.0.0.5")
        .port(port)
        .payload(serde_json::json!({"zone": "a"}))
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_lists_services_and_instances() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let _a = discovery
        .register(&instance("a", 80), WAIT)
        .await
        .expect("a");
    let _b = discovery
        .register(&instance("b", 81), WAIT)
        .await
        .expect("b");
    let db = ServiceInstance::builder("db").id("d").build();
    let _d = discovery.register(&db, WAIT).await.expect("d");
    client
        .create(
            "/services/api/junk",
            "not json",
            &CreateOptions::persistent(),
        )
        .await
        .expect("junk");

    let names = rzk(&zk, &["services", "/services"])
        .await
        .expect(0, "services");
    assert_eq!(names.stdout, "api\ndb\n");
    let listed = rzk(&zk, &["services", "/services", "api"])
        .await
        .expect(0, "api");
    assert_eq!(
        listed.stdout,
        "a 10.0.0.5:80 {\"zone\":\"a\"}\nb 10.0.0.5:81 {\"zone\":\"a\"}\n"
    );
    assert!(
        listed.stderr.contains("skipped /services/api/junk"),
        "{}",
        listed.stderr
    );
    let json = rzk(&zk, &["--json", "services", "/services", "api"])
        .await
        .expect(0, "api --json");
    let instances = json.json_lines();
    assert_eq!(instances.len(), 2);
    assert_eq!(instances[0]["id"], "a");
    assert_eq!(instances[0]["port"], 80);
    assert_eq!(instances[0]["serviceType"], "DYNAMIC");
    let none = rzk(&zk, &["services", "/nothing"])
        .await
        .expect(0, "no base");
    assert_eq!(none.stdout, "");
    rzk(&zk, &["services", "/services", "a/b"])
        .await
        .expect(2, "a name that is not one node");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_watch_prints_the_instances_then_each_change() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let discovery = ServiceDiscovery::new(&client, "/services");
    let a = discovery
        .register(&instance("a", 80), WAIT)
        .await
        .expect("a");

    let mut watch = command(
        &zk,
        &["--json", "-v", "services", "--watch", "/services", "api"],
    )
    .spawn()
    .expect("start");
    let mut stderr = BufReader::new(watch.stderr.take().expect("stderr")).lines();
    let mut stdout = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    let mut next_line = async || -> Value {
        let line = within("a line of rzk services --watch", LIMIT, stdout.next_line())
            .await
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("JSON")
    };
    assert_eq!(next_line().await["id"], "a");
    within("watching", LIMIT, async {
        while let Some(line) = stderr.next_line().await.expect("stderr") {
            if line.contains("watching the instances of /services/api") {
                return;
            }
        }
        panic!("stderr ended");
    })
    .await;

    let b = discovery
        .register(&instance("b", 81), WAIT)
        .await
        .expect("b");
    let added = next_line().await;
    assert_eq!(
        (added["event"].clone(), added["id"].clone()),
        ("added".into(), "b".into())
    );
    assert_eq!(added["instance"]["port"], 81);
    a.update(&instance("a", 90)).await.expect("update");
    let updated = next_line().await;
    assert_eq!(updated["event"], "updated");
    assert_eq!(updated["instance"]["port"], 90);
    b.unregister().await.expect("unregister");
    let removed = next_line().await;
    assert_eq!(
        (removed["event"].clone(), removed["id"].clone()),
        ("removed".into(), "b".into())
    );

    signal(&watch, "INT");
    let status = within("services --watch ends on SIGINT", LIMIT, watch.wait())
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(0));
}
