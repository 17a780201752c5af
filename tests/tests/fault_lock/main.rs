//! The lock recipe (`zk_recipes::lock::Lock`) under faults, against real ZooKeeper 3.8 servers
//! and ensembles: a killed leader, a killed server, lost replies, frozen and cut connections,
//! cancellation, panics and real session expiry. This file holds what the scenarios share;
//! the scenarios are in one module per kind of fault.
//!
//! Every wait is bounded; the only sleeps are the durations of faults (how long a proxy stays
//! frozen or cut off) or the schedule of a fault, never a stand-in for an event.

mod cancellation;
mod cuts;
mod ensemble;
mod expiry;
mod freezes;

use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jute::OpCode;
use tokio::time::Instant;
use zk_proto::{Client, CreateMode, CreateOptions, Error, SessionState};
use zk_recipes::lock::{Lock, LockGuard, Validity};
use zk_testkit::client::{
    SESSION_TIMEOUT, StateLog, blocking, builder, children, connect, connect_with, mkdirs, serial,
    start_ensemble, start_server, wait_children, wait_state, within,
};
use zk_testkit::fault::FaultProxy;
use zk_testkit::{Ensemble, ZkServer};

/// A bound for a single acquire or release that must succeed.
const CALL: Duration = Duration::from_secs(30);

/// The session timeout every client asks for (the kit's; the servers grant it as is).
const SESSION: Duration = SESSION_TIMEOUT;

/// The client's read timeout for [`SESSION`] (`2T/3`, `zk_proto::session::timing`).
const READ_TIMEOUT: Duration = Duration::from_millis(4000 * 2 / 3);

/// The children of `path` with their ephemeral owner (a child deleted meanwhile is left out).
async fn owners(client: &Client, path: &str) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for child in children(client, path).await {
        let full = format!("{path}/{child}");
        match within("stat", Duration::from_secs(10), client.exists(&full)).await {
            Ok(Some(stat)) => out.push((child, stat.ephemeral_owner)),
            Ok(None) => {}
            Err(e) => panic!("stat {full}: {e}"),
        }
    }
    out
}

/// The kit's standalone server, a session behind a proxy of its own to it (the one a scenario
/// cuts, freezes or isolates) and a session straight to it.
async fn proxied_and_direct() -> (ZkServer, FaultProxy, Client, Client) {
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let proxied = connect(&proxy.connect_string()).await;
    let direct = connect(&server.connect_string()).await;
    (server, proxy, proxied, direct)
}

/// An in-process check of mutual exclusion: the critical section of every holder.
#[derive(Clone, Default)]
struct Exclusion {
    inside: Arc<AtomicBool>,
    violations: Arc<AtomicUsize>,
    entries: Arc<AtomicUsize>,
}

impl Exclusion {
    /// Enters the critical section (counting a violation if someone else is inside), yields,
    /// and leaves.
    async fn critical_section(&self) {
        if self.inside.swap(true, Ordering::SeqCst) {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        self.entries.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        self.inside.store(false, Ordering::SeqCst);
    }

    fn violations(&self) -> usize {
        self.violations.load(Ordering::SeqCst)
    }
}

/// The name of a node (the last path segment).
fn name(node: &str) -> String {
    node.rsplit('/').next().unwrap_or(node).to_owned()
}

/// Takes the lock at `path`, bounded, expecting success.
async fn acquire(client: &Client, path: &str) -> LockGuard {
    within("acquire", CALL, Lock::new(client, path).acquire(None))
        .await
        .expect("acquire")
}

/// Releases a guard, bounded, expecting success.
async fn release(guard: LockGuard) {
    within("release", CALL, guard.release())
        .await
        .expect("release");
}

/// Spawns `lock.acquire(Some(limit))`; the task returns the result and when it came.
fn spawn_acquire(
    lock: &Lock,
    limit: Duration,
) -> tokio::task::JoinHandle<(zk_recipes::Result<LockGuard>, Instant)> {
    let lock = lock.clone();
    tokio::spawn(async move {
        let result = lock.acquire(Some(limit)).await;
        (result, Instant::now())
    })
}

/// Starts a waiter on `lock` (its acquire bounded by `limit`, as [`spawn_acquire`]) and waits
/// until its node is queued beside the holder's: two children of `path`, as `observer` lists
/// them. Returns the waiter's task and that listing.
async fn queue_waiter(
    lock: &Lock,
    observer: &Client,
    path: &str,
    limit: Duration,
) -> (
    tokio::task::JoinHandle<(zk_recipes::Result<LockGuard>, Instant)>,
    Vec<String>,
) {
    let waiter = spawn_acquire(lock, limit);
    let listing = wait_children(
        observer,
        path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    (waiter, listing)
}

/// Releases `holder` and awaits the queued `waiter` (as [`queue_waiter`] starts it, at most
/// 10 s): its guard, granted after the release.
async fn release_and_hand_over(
    holder: LockGuard,
    waiter: tokio::task::JoinHandle<(zk_recipes::Result<LockGuard>, Instant)>,
) -> LockGuard {
    let released_at = Instant::now();
    release(holder).await;
    let (granted, granted_at) = within("the waiter's grant", Duration::from_secs(10), waiter)
        .await
        .expect("waiter task");
    let granted = granted.expect("the waiter acquires");
    assert!(granted_at >= released_at);
    granted
}

/// Waits (at most 2 s) until the guard reports `validity`: the guard follows the client's
/// state through its own watch, a task hop behind the client's state.
async fn wait_validity(guard: &LockGuard, validity: Validity) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while guard.validity() != validity {
        assert!(
            Instant::now() < deadline,
            "the guard stays {:?}, not {validity:?}",
            guard.validity()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
