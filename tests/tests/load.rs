//! Load: 500 concurrent sessions in one process against one standalone server, each with
//! watches, 200,000 mixed operations pipelined across them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_util::FutureExt;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout};
use zk_proto::{
    AddWatchMode, Client, CreateOptions, EventType, OneshotWatcher, PersistentWatcher, WatchedEvent,
};
use zk_testkit::ZkServer;
use zk_testkit::client::start_server_with;

/// Concurrent sessions.
const SESSIONS: usize = 500;
/// Operations of the load phase, spread evenly over the sessions.
const OPERATIONS: usize = 200_000;
const OPS_PER_SESSION: usize = OPERATIONS / SESSIONS;
/// Each session runs its operations in blocks of this many (see [`run_block`]).
const BLOCK: usize = 10;
const BLOCKS: usize = OPS_PER_SESSION / BLOCK;
/// setData calls per block (so per-session sets, and data events per persistent watch).
const SETS_PER_BLOCK: usize = 2;
/// Bound of each phase.
const PHASE_WITHIN: Duration = Duration::from_secs(120);

type Check = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

fn node(s: usize) -> String {
    format!("/load/n{s}")
}

fn dir(s: usize) -> String {
    format!("/load/d{s}")
}

const QUIET: &str = "/load/quiet";

/// The watches session `s` holds on its neighbour `s + 1`'s nodes, and on the quiet node.
struct Watches {
    /// One-shot data watch on the neighbour's node: fires on its first setData.
    data: OneshotWatcher,
    /// One-shot child watch on the neighbour's directory: fires on its first create.
    children: OneshotWatcher,
    /// Persistent watch on the neighbour's node: one event per setData.
    persistent: PersistentWatcher,
    /// One-shot data watch on a node nobody changes during the load.
    quiet: OneshotWatcher,
}

async fn start_server() -> ZkServer {
    start_server_with(
        ZkServer::builder()
            // The default maxClientCnxns=60 limits connections from one address; 0 = no limit.
            .config("maxClientCnxns", 0)
            .max_heap_mb(512),
    )
    .await
}

/// Connects one of the [`SESSIONS`], with timeouts long enough for hundreds of sessions sharing
/// a small machine; not bounded by itself (unlike the kit's `connect`): the phase that connects
/// them is ([`PHASE_WITHIN`]).
async fn connect(connect_string: &str) -> Client {
    Client::builder()
        .session_timeout(Duration::from_secs(30))
        .request_timeout(Some(Duration::from_secs(90)))
        .connect(connect_string)
        .await
        .expect("connect")
}

/// Queues one block of `BLOCK` operations of session `s` (all sent at once, in this order,
/// replies in the same order) and returns their checks:
/// get, set, exists, create child, get child, exists child, list, delete child, set,
/// exists child (gone).
fn run_block(client: &Client, s: usize, k: usize, checks: &mut Vec<Check>) {
    let n = node(s);
    let child = format!("{}/c{k}", dir(s));
    let value = format!("s{s}-b{k}");

    let get = client.get_data(&n);
    checks.push(Box::pin(async move {
        get.await.map(drop).map_err(|e| format!("get: {e}"))
    }));
    let set = client.set_data(&n, value.clone(), None);
    let expected_version = i32::try_from(SETS_PER_BLOCK * k + 1).expect("small");
    checks.push(Box::pin(async move {
        let stat = set.await.map_err(|e| format!("set: {e}"))?;
        (stat.version == expected_version)
            .then_some(())
            .ok_or(format!(
                "set: version {} not {expected_version}",
                stat.version
            ))
    }));
    let exists = client.exists(&n);
    checks.push(Box::pin(async move {
        match exists.await {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("exists: {other:?}")),
        }
    }));
    let create = client.create(&child, value.clone(), &CreateOptions::persistent());
    checks.push(Box::pin(async move {
        create.await.map(drop).map_err(|e| format!("create: {e}"))
    }));
    let read = client.get_data(&child);
    checks.push(Box::pin(async move {
        let (data, _) = read.await.map_err(|e| format!("get child: {e}"))?;
        (data == value.as_bytes())
            .then_some(())
            .ok_or(format!("get child: {data:?}"))
    }));
    let child_exists = client.exists(&child);
    checks.push(Box::pin(async move {
        match child_exists.await {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("exists child: {other:?}")),
        }
    }));
    let list = client.get_children(&dir(s));
    let name = format!("c{k}");
    checks.push(Box::pin(async move {
        let children = list.await.map_err(|e| format!("children: {e}"))?;
        (children == [name])
            .then_some(())
            .ok_or(format!("children: {children:?}"))
    }));
    let delete = client.delete(&child, None);
    checks.push(Box::pin(async move {
        delete.await.map_err(|e| format!("delete: {e}"))
    }));
    let set = client.set_data(&n, "", None);
    checks.push(Box::pin(async move {
        set.await.map(drop).map_err(|e| format!("set: {e}"))
    }));
    let gone = client.exists(&child);
    checks.push(Box::pin(async move {
        match gone.await {
            Ok(None) => Ok(()),
            other => Err(format!("exists deleted child: {other:?}")),
        }
    }));
}

fn expect_event(
    event: Result<zk_proto::Result<WatchedEvent>, tokio::time::error::Elapsed>,
    kind: EventType,
    path: &str,
) {
    let event = event
        .unwrap_or_else(|_| panic!("no {kind:?} event on {path}"))
        .unwrap_or_else(|e| panic!("watch on {path} lost: {e}"));
    assert_eq!(
        (event.event_type, event.path.as_str()),
        (kind, path),
        "watch event"
    );
}

async fn join_all<T>(tasks: Vec<JoinHandle<T>>, what: &str) -> Vec<T> {
    let mut out = Vec::with_capacity(tasks.len());
    for task in tasks {
        out.push(
            timeout(PHASE_WITHIN, task)
                .await
                .unwrap_or_else(|_| panic!("{what}: not within {PHASE_WITHIN:?}"))
                .unwrap_or_else(|e| panic!("{what}: {e}")),
        );
    }
    out
}

/// Scenario: one standalone server (`maxClientCnxns=0`, as the default 60 per address would
/// refuse most sessions from one process) and 500 concurrent sessions. Each session owns a
/// node and a directory, and watches its neighbour's: a one-shot data watch and a one-shot
/// child watch (getData / getChildren with a watch), a persistent watch on the neighbour's
/// node, and a one-shot data watch on a node no one changes during the load. Then every
/// session pipelines 400 operations (40 blocks of get, set, exists, create, get, exists,
/// getChildren, delete, set, exists: 200,000 in all, every one sent before the first reply
/// is awaited) while all the others do the same.
///
/// Pass criteria: all 200,000 operations succeed with the expected results (versions, data,
/// listings, a deleted child gone), counted; every one-shot data watch fires once with
/// `NodeDataChanged` on the neighbour's node, every child watch with `NodeChildrenChanged`
/// on its directory; every persistent watch delivers exactly one `NodeDataChanged` per
/// setData of the neighbour (80) and nothing more; no quiet watch fires during the load, and
/// every one fires once the quiet node is finally changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_sessions_two_hundred_thousand_pipelined_ops_with_watches() {
    let started = Instant::now();
    let server = start_server().await;
    let connect_string = server.connect_string();
    let admin = connect(&connect_string).await;

    // Layout: /load/n<s> and /load/d<s> per session, /load/quiet.
    let mut setup = vec![admin.create("/load", "", &CreateOptions::persistent())];
    setup.push(admin.create(QUIET, "", &CreateOptions::persistent()));
    for s in 0..SESSIONS {
        setup.push(admin.create(&node(s), "", &CreateOptions::persistent()));
        setup.push(admin.create(&dir(s), "", &CreateOptions::persistent()));
    }
    for created in futures_util::future::join_all(setup).await {
        created.expect("create layout");
    }

    // 500 sessions, each registering its watches.
    let sessions: Vec<JoinHandle<(Client, Watches)>> = (0..SESSIONS)
        .map(|s| {
            let connect_string = connect_string.clone();
            tokio::spawn(async move {
                let client = connect(&connect_string).await;
                let neighbour = (s + 1) % SESSIONS;
                let data = client.get_data_watch(&node(neighbour));
                let children = client.get_children_watch(&dir(neighbour));
                let persistent = client.add_watch(&node(neighbour), AddWatchMode::PERSISTENT);
                let quiet = client.get_data_watch(QUIET);
                let watches = Watches {
                    data: data.await.expect("data watch").2,
                    children: children.await.expect("child watch").1,
                    persistent: persistent.await.expect("persistent watch"),
                    quiet: quiet.await.expect("quiet watch").2,
                };
                (client, watches)
            })
        })
        .collect();
    let sessions = join_all(sessions, "connect and watch").await;
    let connected = started.elapsed();
    let cons = server.four_letter("cons").expect("cons");
    let connections = cons.lines().filter(|l| l.contains("sid=")).count();
    assert!(
        connections > SESSIONS,
        "the server serves all {SESSIONS} sessions (and the admin's): {connections}"
    );

    // The load: every session queues its 400 operations at once, then checks the replies.
    let succeeded = Arc::new(AtomicUsize::new(0));
    let load_started = Instant::now();
    let load: Vec<JoinHandle<()>> = sessions
        .iter()
        .enumerate()
        .map(|(s, (client, _))| {
            let client = client.clone();
            let succeeded = succeeded.clone();
            tokio::spawn(async move {
                let mut checks = Vec::with_capacity(OPS_PER_SESSION);
                for k in 0..BLOCKS {
                    run_block(&client, s, k, &mut checks);
                }
                for (i, check) in checks.into_iter().enumerate() {
                    if let Err(e) = check.await {
                        panic!("session {s}, operation {i}: {e}");
                    }
                    succeeded.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    join_all(load, "the load").await;
    let load_took = load_started.elapsed();
    assert_eq!(succeeded.load(Ordering::Relaxed), OPERATIONS);

    // The watches: one event each for the one-shot ones, exactly one per set for the
    // persistent ones, none yet for the quiet ones.
    let expected_sets = SETS_PER_BLOCK * BLOCKS;
    let events = Arc::new(AtomicUsize::new(0));
    let checks: Vec<JoinHandle<(Client, Check)>> = sessions
        .into_iter()
        .enumerate()
        .map(|(s, (client, watches))| {
            let events = events.clone();
            tokio::spawn(async move {
                let neighbour = (s + 1) % SESSIONS;
                let within = Duration::from_secs(30);
                let Watches {
                    data,
                    children,
                    mut persistent,
                    quiet,
                } = watches;
                expect_event(
                    timeout(within, data.changed()).await,
                    EventType::NODE_DATA_CHANGED,
                    &node(neighbour),
                );
                expect_event(
                    timeout(within, children.changed()).await,
                    EventType::NODE_CHILDREN_CHANGED,
                    &dir(neighbour),
                );
                for _ in 0..expected_sets {
                    expect_event(
                        timeout(within, persistent.next()).await,
                        EventType::NODE_DATA_CHANGED,
                        &node(neighbour),
                    );
                }
                events.fetch_add(2 + expected_sets, Ordering::Relaxed);
                // A later call: every event of a change made before it was delivered first.
                client.get_data(QUIET).await.expect("sync point");
                let extra = persistent.next().now_or_never();
                assert!(extra.is_none(), "session {s}: an extra event {extra:?}");
                let mut quiet: Check = Box::pin(async move {
                    let event = quiet.changed().await.map_err(|e| e.to_string())?;
                    (event.event_type == EventType::NODE_DATA_CHANGED && event.path == QUIET)
                        .then_some(())
                        .ok_or(format!("quiet: {event:?}"))
                });
                let early = (&mut quiet).now_or_never();
                assert!(
                    early.is_none(),
                    "session {s}: the quiet watch fired: {early:?}"
                );
                (client, quiet)
            })
        })
        .collect();
    let checked = join_all(checks, "the watch checks").await;

    // Changing the quiet node fires all 500 quiet watches.
    admin
        .set_data(QUIET, "changed", None)
        .await
        .expect("set quiet");
    let mut clients = Vec::with_capacity(SESSIONS);
    for (s, (client, quiet)) in checked.into_iter().enumerate() {
        timeout(Duration::from_secs(30), quiet)
            .await
            .unwrap_or_else(|_| panic!("session {s}: the quiet watch did not fire"))
            .unwrap_or_else(|e| panic!("session {s}: {e}"));
        events.fetch_add(1, Ordering::Relaxed);
        clients.push(client);
    }
    let events = events.load(Ordering::Relaxed);
    assert_eq!(events, SESSIONS * (3 + expected_sets));

    eprintln!(
        "load: {SESSIONS} sessions connected with watches in {connected:.1?}; \
         {OPERATIONS} operations in {load_took:.1?} ({:.0} ops/s); {events} watch events; \
         total {:.1?}",
        OPERATIONS as f64 / load_took.as_secs_f64(),
        started.elapsed()
    );
    let closes: Vec<_> = clients
        .iter()
        .map(|c| {
            let c = c.clone();
            tokio::spawn(async move { c.close().await })
        })
        .collect();
    for closed in join_all(closes, "close").await {
        closed.expect("close");
    }
    admin.close().await.expect("close");
}
