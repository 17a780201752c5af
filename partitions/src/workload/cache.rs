//! The tree cache and group membership: a side B writer changes a small tree all the time
//! (data of ten nodes, and extra nodes created and deleted); a `TreeCache` on each side follows
//! it; each side is a member of one group (`Group::join`, kept by a persistent ephemeral node)
//! and watches it (`Group::view`).
//!
//! Judged:
//! - **events never go back**: for every path, the `mzxid` of the node an `Added` or `Updated`
//!   event carries never decreases (a violation otherwise);
//! - **after the heal, equal to the server**: once the workloads stop, each cache is synced
//!   and compared node by node (path, data, `mzxid`) with the tree read from the leader's side
//!   after a `sync` (a difference is a violation);
//! - **membership**: after the heal both views hold both members; when side A's member session
//!   expired during the fault, side B's view saw it leave and come back (it must not miss
//!   either).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_proto::{Client, CreateOptions, Error as ZkError};
use zk_recipes::cache::{CacheEvent, TreeCache};
use zk_recipes::group::{Group, GroupView, Member, MembershipEvent};

use super::{Finished, Workload};
use crate::world::World;

const TREE: &str = "/partitions-tree";
const GROUP: &str = "/partitions-group";
/// The nodes whose data the writer changes.
const NODES: usize = 10;
/// Bounds each wait of the final checks.
const LIMIT: Duration = Duration::from_secs(30);

/// What the event consumers saw.
#[derive(Default)]
struct Seen {
    /// Events per side.
    events: [u64; 2],
    /// Events that went back in `mzxid` for their path: (side, path, from, to).
    backwards: Vec<(usize, String, i64, i64)>,
    /// Side B's view of side A's member: left, then joined again.
    a_left: bool,
    a_rejoined_after_leaving: bool,
}

/// Everything a side runs.
struct SideParts {
    client: Client,
    cache: TreeCache,
    view: GroupView,
    member: Member,
}

/// The tree-cache and group workload.
#[derive(Default)]
pub struct CacheWorkload {
    sides: Vec<SideParts>,
    seen: Arc<Mutex<Seen>>,
    tasks: Vec<(usize, JoinHandle<Result<u64, String>>)>,
    a_session: i64,
}

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(|e| e.into_inner())
}

impl Workload for CacheWorkload {
    fn name(&self) -> &'static str {
        "cache"
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        let writer = world.b().connect(&world.bed)?;
        world.b().runtime.block_on(async {
            for path in
                std::iter::once(TREE.to_owned()).chain((0..NODES).map(|i| format!("{TREE}/n{i}")))
            {
                match writer
                    .create(&path, "0", &CreateOptions::persistent())
                    .await
                {
                    Ok(_) | Err(ZkError::NodeExists) => {}
                    Err(e) => return Err(format!("creating {path}: {e}")),
                }
            }
            Ok(())
        })?;
        for (index, side) in world.sides.iter().enumerate() {
            let client = side.connect(&world.bed)?;
            let label = side.label;
            let parts = side.runtime.block_on(async {
                let cache = TreeCache::builder(&client, TREE).start();
                cache
                    .wait_initialized(Some(LIMIT))
                    .await
                    .map_err(|e| format!("side {label}'s cache: {e}"))?;
                let group = Group::new(&client, GROUP);
                let member = group
                    .join(label, "", Some(LIMIT))
                    .await
                    .map_err(|e| format!("side {label} joining: {e}"))?;
                let view = group
                    .view(Some(LIMIT))
                    .await
                    .map_err(|e| format!("side {label}'s view: {e}"))?;
                Ok::<_, String>(SideParts {
                    client: client.clone(),
                    cache,
                    view,
                    member,
                })
            })?;
            let events = parts.cache.events();
            let task = side
                .runtime
                .spawn(follow(index, events, self.seen.clone(), stop.clone()));
            self.tasks.push((index, task));
            if index == 1 {
                let members = parts.view.events();
                let seen = self.seen.clone();
                let stop = stop.clone();
                let task = side.runtime.spawn(watch_a(members, seen, stop));
                self.tasks.push((index, task));
            }
            self.sides.push(parts);
        }
        self.a_session = self.sides[0].client.session_id();
        let task = world.b().runtime.spawn(write(writer, stop));
        self.tasks.push((1, task));
        Ok(())
    }

    fn finish(self: Box<Self>, world: &World, _fault_at: Duration) -> Result<Finished, String> {
        let mut writes = 0;
        for (side, task) in self.tasks {
            writes += world.sides[side]
                .runtime
                .block_on(task)
                .map_err(|e| format!("a cache task: {e}"))??;
        }
        let mut finished = Finished::default();
        // The server's tree, from side B after a sync.
        let reader = world.b().connect(&world.bed)?;
        let server = world.b().runtime.block_on(read_tree(&reader))?;
        for (index, parts) in self.sides.iter().enumerate() {
            let label = world.sides[index].label;
            let cached = world.sides[index].runtime.block_on(async {
                parts.client.sync(TREE).await.map_err(|e| e.to_string())?;
                parts
                    .cache
                    .sync(Some(LIMIT))
                    .await
                    .map_err(|e| format!("side {label}'s cache sync: {e}"))?;
                parts
                    .view
                    .sync(Some(LIMIT))
                    .await
                    .map_err(|e| format!("side {label}'s view sync: {e}"))?;
                Ok::<_, String>(
                    parts
                        .cache
                        .snapshot()
                        .nodes()
                        .map(|node| {
                            let data = node.data().map(|d| d.to_vec()).unwrap_or_default();
                            (node.path().to_owned(), (data, node.stat().mzxid))
                        })
                        .collect::<BTreeMap<_, _>>(),
                )
            })?;
            if cached != server {
                let differ: Vec<&String> = server
                    .keys()
                    .chain(cached.keys())
                    .filter(|path| server.get(*path) != cached.get(*path))
                    .take(5)
                    .collect();
                finished.violations.push(format!(
                    "side {label}'s cache differs from the server after the heal at {differ:?}"
                ));
            }
            let members: Vec<String> = parts.view.members().into_keys().collect();
            if members != ["a", "b"] {
                finished.violations.push(format!(
                    "side {label}'s group view after the heal: {members:?}, not [\"a\", \"b\"]"
                ));
            }
        }
        let seen = lock(&self.seen);
        for (side, path, from, to) in &seen.backwards {
            finished.violations.push(format!(
                "side {}'s cache went back for {path}: mzxid {from:#x} then {to:#x}",
                world.sides[*side].label
            ));
        }
        let a_expired = self.sides[0].client.session_id() != self.a_session;
        if a_expired && !(seen.a_left && seen.a_rejoined_after_leaving) {
            finished.violations.push(format!(
                "side A's session expired, but side B's view saw it leave: {}, and come back: {}",
                seen.a_left, seen.a_rejoined_after_leaving
            ));
        }
        finished.operations = writes + seen.events.iter().sum::<u64>();
        finished.details = serde_json::json!({
            "writes": writes,
            "events": seen.events,
            "nodes": server.len(),
            "a_session_expired": a_expired,
            "b_saw_a_leave": seen.a_left,
            "b_saw_a_come_back": seen.a_rejoined_after_leaving,
        });
        drop(seen);
        for parts in self.sides {
            drop(parts.member);
        }
        Ok(finished)
    }
}

/// The tree under [`TREE`] as the server has it: path to (data, mzxid).
async fn read_tree(client: &Client) -> Result<BTreeMap<String, (Vec<u8>, i64)>, String> {
    client.sync(TREE).await.map_err(|e| e.to_string())?;
    let mut tree = BTreeMap::new();
    let (data, stat) = client.get_data(TREE).await.map_err(|e| e.to_string())?;
    tree.insert(TREE.to_owned(), (data.to_vec(), stat.mzxid));
    for child in &client.get_children(TREE).await.map_err(|e| e.to_string())? {
        let path = format!("{TREE}/{child}");
        match client.get_data(&path).await {
            Ok((data, stat)) => {
                tree.insert(path, (data.to_vec(), stat.mzxid));
            }
            Err(ZkError::NoNode) => {}
            Err(e) => return Err(format!("reading {path}: {e}")),
        }
    }
    Ok(tree)
}

/// Side B's writer: a change every 10 ms until `stop`. Returns the changes applied.
async fn write(client: Client, stop: watch::Receiver<bool>) -> Result<u64, String> {
    let mut rng = fastrand::Rng::with_seed(7);
    let mut applied = 0;
    let mut value = 0u64;
    while !*stop.borrow() {
        value += 1;
        let result = match rng.u8(0..10) {
            0 => client
                .create(
                    &format!("{TREE}/x{}", rng.u8(0..5)),
                    value.to_string(),
                    &CreateOptions::persistent(),
                )
                .await
                .map(drop),
            1 => {
                client
                    .delete(&format!("{TREE}/x{}", rng.u8(0..5)), None)
                    .await
            }
            _ => client
                .set_data(
                    &format!("{TREE}/n{}", rng.usize(0..NODES)),
                    value.to_string(),
                    None,
                )
                .await
                .map(drop),
        };
        if result.is_ok() {
            applied += 1;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(client);
    Ok(applied)
}

/// A cache's events until `stop`: checks that no path's `mzxid` goes back.
async fn follow(
    side: usize,
    mut events: zk_recipes::cache::CacheEvents,
    seen: Arc<Mutex<Seen>>,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, String> {
    let mut last: BTreeMap<String, i64> = BTreeMap::new();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = stop.wait_for(|stop| *stop) => return Ok(0),
        };
        let node = match event {
            Ok(CacheEvent::Added(node)) | Ok(CacheEvent::Updated { new: node, .. }) => node,
            Ok(_) => {
                lock(&seen).events[side] += 1;
                continue;
            }
            Err(e) => return Err(format!("side {side}'s cache events: {e}")),
        };
        let mut seen = lock(&seen);
        seen.events[side] += 1;
        let mzxid = node.stat().mzxid;
        if let Some(&before) = last.get(node.path())
            && mzxid < before
        {
            seen.backwards
                .push((side, node.path().to_owned(), before, mzxid));
        }
        last.insert(node.path().to_owned(), mzxid);
    }
}

/// Side B's view of side A's member until `stop`.
async fn watch_a(
    mut events: zk_recipes::group::MembershipEvents,
    seen: Arc<Mutex<Seen>>,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, String> {
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = stop.wait_for(|stop| *stop) => return Ok(0),
        };
        match event {
            Ok(MembershipEvent::Left { name }) if name == "a" => lock(&seen).a_left = true,
            Ok(MembershipEvent::Joined { name, .. }) if name == "a" => {
                let mut seen = lock(&seen);
                if seen.a_left {
                    seen.a_rejoined_after_leaving = true;
                }
            }
            Ok(_) => {}
            Err(e) => return Err(format!("side B's group events: {e}")),
        }
    }
}
