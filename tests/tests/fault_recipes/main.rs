//! The recipes under faults, against real servers: leader election through repeated expiry of
//! the leader's session, leadership lost on a cut and handed over after the expiry (latch and
//! master election), a persistent node whose create's reply is lost, a queue consumer that
//! crashes after claiming items, a double barrier whose member crashes, timed recipe calls
//! while no server answers, and the leader selector, the multi-lock and the persistent TTL
//! node under cuts, expiry and SIGKILL (Curator's processes among them). This file holds what
//! the scenarios share; the scenarios are in one module per recipe.
//!
//! Faults come from [`zk_testkit::fault::FaultProxy`]: every session that is to fail sits
//! behind its own proxy, so it alone can be cut off. No sleep stands in for an event: every
//! wait is on a state, a watch or a task, bounded by a timeout.

mod barrier;
mod deadlines;
mod election;
mod leadership;
mod multi_lock;
mod persistent_node;
mod queue;
mod selector;
mod ttl;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jute::OpCode;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_proto::{Client, Error, SessionState};
use zk_recipes::Error as RecipeError;
use zk_recipes::barrier::DoubleBarrier;
use zk_recipes::election::{LeaderLatch, Leadership};
use zk_recipes::queue::Queue;
use zk_testkit::ZkServer;
use zk_testkit::client::{
    Proxied, builder, connect_proxied, connect_with, serial, server_builder, start_server_with,
    wait_for_state, within,
};

/// The sessions of the queue and barrier scenarios (the crashed ones expire after this).
const RECIPE_SESSION: Duration = Duration::from_secs(2);
/// Server tick of the queue and barrier scenarios.
const RECIPE_TICK: Duration = Duration::from_millis(100);
/// Bound of every wait of the queue and barrier scenarios.
const WITHIN: Duration = Duration::from_secs(20);

/// The short deadline given to leave / enter, well inside the crashed member's session (`barrier::CRASHED_SESSION`).
const SHORT: Duration = Duration::from_secs(1);
/// How late a call with a deadline may return on a loaded 2-core machine.
const MARGIN: Duration = Duration::from_millis(1500);

/// Starts a standalone server with tick `tick` (session timeouts from `2 × tick`).
async fn server(tick: Duration) -> ZkServer {
    start_server_with(server_builder().tick_time(tick)).await
}

/// A new proxy to `server` and a session through it, asking for `session_timeout`.
async fn proxied(server: &ZkServer, session_timeout: Duration) -> Proxied {
    connect_proxied(server.addr(), builder().session_timeout(session_timeout)).await
}

/// Waits (bounded) until `path` exists (`true`) or not (`false`), on exists-watches: no polling.
async fn wait_exists(client: &Client, path: &str, present: bool, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let (stat, watch) = client.exists_watch(path).await.expect("exists");
        if stat.is_some() == present {
            return;
        }
        match tokio::time::timeout_at(deadline, watch.changed()).await {
            Ok(event) => {
                event.expect("watch event");
            }
            Err(_) => panic!(
                "{path} {} within {limit:?}",
                if present {
                    "not created"
                } else {
                    "not deleted"
                }
            ),
        }
    }
}

/// Asserts that `elapsed` lies in `[at_least, at_least + margin]`.
fn assert_within(elapsed: Duration, at_least: Duration, margin: Duration, what: &str) {
    assert!(
        elapsed + Duration::from_millis(5) >= at_least && elapsed <= at_least + margin,
        "{what}: took {elapsed:?}, expected between {at_least:?} and {:?}",
        at_least + margin
    );
}
