//! The leader selector under faults: a leader cut off is interrupted (its future dropped) as
//! soon as its connection goes, before anyone else leads; a short cut requeues it behind the
//! next candidate; an expired leader is interrupted and its selector ends; a leading process
//! killed with SIGKILL (Curator's `LeaderSelector` and ours) is replaced once its session
//! expires, and the tenure log shows no overlap.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zk_proto::{Client, CreateMode, CreateOptions, SessionState};
use zk_recipes::Error as RecipeError;
use zk_recipes::election::LeaderSelector;
use zk_testkit::client::{
    builder, connect_with, eventually, expire_session, mkdirs, serial, spawn_test_child,
    wait_child_line, wait_for_state, within,
};

use super::{RECIPE_SESSION, RECIPE_TICK, WITHIN, proxied, server};

/// What happened, in order: `<id> leads` when a tenure's future starts, `<id> dropped` when
/// it is dropped.
#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl Events {
    fn push(&self, event: String) {
        if let Ok(mut events) = self.0.lock() {
            events.push(event);
        }
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

/// Records `<id> dropped` when dropped.
struct OnDrop(Events, String);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.push(format!("{} dropped", self.1));
    }
}

/// A selector whose tenures never end by themselves, recorded in `events`.
fn endless(client: &Client, path: &str, id: &str, events: &Events) -> LeaderSelector {
    let (events, owned) = (events.clone(), id.to_owned());
    LeaderSelector::builder(client, path, move |_tenure| {
        events.push(format!("{owned} leads"));
        let dropped = OnDrop(events.clone(), owned.clone());
        async move {
            let _dropped = dropped;
            std::future::pending::<()>().await;
        }
    })
    .id(id.to_owned())
    .start()
}

/// Waits until `n` candidates are queued under `path`.
async fn wait_queued(selector: &LeaderSelector, n: usize) {
    eventually("candidates queued", WITHIN, || async {
        selector.participants().await.is_ok_and(|p| p.len() == n)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_leader_is_interrupted_before_the_next_leads_after_its_expiry() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let a = proxied(&server, RECIPE_SESSION).await;
    let b = connect_with(builder(), &server.connect_string()).await;
    let events = Events::default();
    let a_sel = endless(&a.client, "/fsel1", "a", &events);
    within("a leads", WITHIN, a_sel.wait_leader(None))
        .await
        .expect("a leads");
    let b_sel = endless(&b, "/fsel1", "b", &events);
    wait_queued(&b_sel, 2).await;
    a.proxy.isolate();
    within("b leads", WITHIN, b_sel.wait_leader(None))
        .await
        .expect("b leads once a's session expired");
    // a's future was dropped when its connection went, before b could lead (after the
    // server expired a's session, a full session timeout later).
    assert_eq!(events.all(), ["a leads", "a dropped", "b leads"]);
    assert!(!a_sel.is_leader());
    a.proxy.restore();
    let ended = within("a's selector ends", WITHIN, a_sel.wait_ended()).await;
    assert_eq!(ended, RecipeError::Zk(zk_proto::Error::SessionExpired));
    assert_eq!(events.all(), ["a leads", "a dropped", "b leads"]);
    b_sel.close().await.expect("close b");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_cut_interrupts_the_leader_and_requeues_it_behind_the_next() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    // A session long enough to survive the cut: a is back well within it.
    let a = proxied(&server, Duration::from_secs(4)).await;
    let b = connect_with(builder(), &server.connect_string()).await;
    let events = Events::default();
    let a_sel = endless(&a.client, "/fsel2", "a", &events);
    within("a leads", WITHIN, a_sel.wait_leader(None))
        .await
        .expect("a leads");
    let b_sel = endless(&b, "/fsel2", "b", &events);
    wait_queued(&b_sel, 2).await;
    a.proxy.isolate();
    wait_for_state(&a.client, SessionState::Disconnected, WITHIN).await;
    eventually("a's future dropped", WITHIN, || async {
        events.all().len() == 2
    })
    .await;
    assert!(!a_sel.is_leader());
    a.proxy.restore();
    wait_for_state(&a.client, SessionState::Connected, WITHIN).await;
    // Its node's delete, queued while cut off, goes out with the reconnection: b leads, a
    // queues again behind it, in the same session.
    within("b leads", WITHIN, b_sel.wait_leader(None))
        .await
        .expect("b leads");
    eventually("a queued again behind b", WITHIN, || async {
        b_sel
            .participants()
            .await
            .is_ok_and(|p| p.len() == 2 && &p[1].id[..] == b"a")
    })
    .await;
    assert_eq!(events.all(), ["a leads", "a dropped", "b leads"]);
    assert!(a_sel.ended().is_none());
    b_sel.close().await.expect("close b");
    within("a leads again", WITHIN, a_sel.wait_leader(None))
        .await
        .expect("a leads again");
    a_sel.close().await.expect("close a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_leader_is_interrupted_and_its_selector_ends() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let a = connect_with(builder(), &server.connect_string()).await;
    let b = connect_with(builder(), &server.connect_string()).await;
    let events = Events::default();
    let a_sel = endless(&a, "/fsel3", "a", &events);
    within("a leads", WITHIN, a_sel.wait_leader(None))
        .await
        .expect("a leads");
    let b_sel = endless(&b, "/fsel3", "b", &events);
    wait_queued(&b_sel, 2).await;
    expire_session(&a, &server.connect_string()).await;
    let ended = within("a's selector ends", WITHIN, a_sel.wait_ended()).await;
    assert_eq!(ended, RecipeError::Zk(zk_proto::Error::SessionExpired));
    within("b leads", WITHIN, b_sel.wait_leader(None))
        .await
        .expect("b leads");
    assert_eq!(events.all(), ["a leads", "a dropped", "b leads"]);
    b_sel.close().await.expect("close b");
}

/// The tenure log of the kill tests: `start <id>` written by each tenure as it begins (see
/// `crates/zk-recipes/tests/selector_support/mod.rs` and `CuratorSelector.java`).
async fn log_start(client: &Client, id: &str) {
    client
        .create(
            "/fsel-log/e-",
            format!("start {id}"),
            &CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL),
        )
        .await
        .expect("log");
}

/// The ids of the `start` entries of the kill tests' log, in the server's order.
async fn starts(client: &Client) -> Vec<String> {
    let mut children = client.get_children("/fsel-log").await.expect("list");
    children.sort();
    let mut ids = Vec::new();
    for child in &children {
        let (data, _) = client
            .get_data(&format!("/fsel-log/{child}"))
            .await
            .expect("read");
        let text = String::from_utf8_lossy(&data).into_owned();
        if let Some(id) = text.strip_prefix("start ") {
            ids.push(id.to_owned());
        }
    }
    ids
}

/// A selector that logs its tenures' starts, then holds the leadership.
fn logging(client: &Client, path: &str, id: &str) -> LeaderSelector {
    let (writer, owned) = (client.clone(), id.to_owned());
    LeaderSelector::builder(client, path, move |_tenure| {
        let (writer, id) = (writer.clone(), owned.clone());
        async move {
            log_start(&writer, &id).await;
            std::future::pending::<()>().await;
        }
    })
    .id(id.to_owned())
    .start()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_curator_leader_is_replaced_once_its_session_expires() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let ours = connect_with(builder(), &server.connect_string()).await;
    mkdirs(&ours, "/fsel-log").await;
    let classpath = zk_testkit::java::curator_classpath()
        .expect("Apache Curator is installed (scripts/install-curator.sh)");
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/zk-recipes/tests/curator/CuratorSelector.java");
    let session_ms = RECIPE_SESSION.as_millis().to_string();
    let mut java = tokio::process::Command::from(
        zk_testkit::java::source_program(&classpath, &source).expect("java"),
    )
    .args([
        server.connect_string().as_str(),
        "/fsel4",
        "curator",
        "/fsel-log",
        "0",
        "0",
        &session_ms,
    ])
    .stdout(Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .expect("start java");
    let _stdout = wait_child_line(&mut java, "leading", WITHIN * 2).await;
    let selector = logging(&ours, "/fsel4", "rust");
    wait_queued(&selector, 2).await;
    assert!(!selector.is_leader());
    java.start_kill().expect("kill -9");
    let _ = java.wait().await;
    within("ours leads", WITHIN, selector.wait_leader(None))
        .await
        .expect("ours leads once the killed session expired");
    eventually("our tenure logged", WITHIN, || async {
        starts(&ours).await.len() == 2
    })
    .await;
    assert_eq!(starts(&ours).await, ["curator", "rust"]);
    selector.close().await.expect("close");
}

/// The environment variable that turns [`leading_child`] into the leading process of
/// [`a_killed_rust_leader_is_replaced_once_its_session_expires`]: the connect string.
const CHILD_ENV: &str = "ZK_SELECTOR_FAULT_CHILD";

/// Not a test of its own: run by [`a_killed_rust_leader_is_replaced_once_its_session_expires`]
/// as a child process (this test binary, filtered to this test, with [`CHILD_ENV`] set), it
/// leads with a selector, prints `child-leading`, and waits to be killed. Without the variable
/// it does nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leading_child() {
    let Ok(connect_string) = std::env::var(CHILD_ENV) else {
        return;
    };
    let client = connect_with(builder().session_timeout(RECIPE_SESSION), &connect_string).await;
    let selector = logging(&client, "/fsel5", "child");
    selector.wait_leader(Some(WITHIN)).await.expect("lead");
    // libtest has printed "test ... " without a newline: this ends that line.
    println!("child-leading");
    // The child's lifetime: the parent kills it long before (a bound, should the parent die).
    tokio::time::sleep(Duration::from_secs(120)).await;
    drop(selector);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_rust_leader_is_replaced_once_its_session_expires() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let ours = connect_with(builder(), &server.connect_string()).await;
    mkdirs(&ours, "/fsel-log").await;
    let mut child = spawn_test_child(
        "selector::leading_child",
        CHILD_ENV,
        &server.connect_string(),
    );
    let _stdout = wait_child_line(&mut child, "child-leading", WITHIN).await;
    let selector = logging(&ours, "/fsel5", "rust");
    wait_queued(&selector, 2).await;
    assert!(!selector.is_leader());
    child.start_kill().expect("kill -9");
    let _ = child.wait().await;
    within("ours leads", WITHIN, selector.wait_leader(None))
        .await
        .expect("ours leads once the killed session expired");
    eventually("our tenure logged", WITHIN, || async {
        starts(&ours).await.len() == 2
    })
    .await;
    assert_eq!(starts(&ours).await, ["child", "rust"]);
    selector.close().await.expect("close");
}
