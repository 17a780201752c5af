//! A client behind a follower cut off from its leader (issue 23), on a real partitioned
//! ensemble (`zk_testkit::partition`: each server and each client in a network namespace of its
//! own, nftables cutting one follower from the other two servers but not from its clients;
//! ZooKeeper 3.8 with `tickTime` 2000 and `syncLimit` 5, so the follower gives up on its leader
//! only after 10 s; 4 s sessions).
//!
//! The cut-off follower keeps answering its clients' pings while the leader expires their
//! sessions after 4 s and hands their locks and leaderships to others. The session's quorum
//! check (a `sync` every `T/16`, unanswered after `T/2`) makes the client leave that server
//! first. Each recipe test runs once with the leader on each server in turn, the holder on a
//! follower, the contender on the leader's side, the cut at a random moment; it asserts that the
//! holder knew before the contender was granted. The raw-client test runs a client without the
//! check beside one with it, to show the window the check closes is real on this ensemble.
//!
//! Each test skips (one line on stderr) on a machine that does not allow network namespaces.
//! The tests of this file run one at a time: they measure who learns first, and three JVMs per
//! bed are what two cores can carry.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use zk_proto::{Client, CreateOptions, EventType, SessionState};
use zk_recipes::cache::TreeCache;
use zk_recipes::election::LeaderLatch;
use zk_recipes::lock::Lock;
use zk_testkit::client::StateLog;
use zk_testkit::partition::{ClientNamespace, PartitionBed, random_pause};
use zk_testkit::started;

/// The session timeout of every client here: the shortest the ensemble grants (two ticks).
const SESSION: Duration = Duration::from_secs(4);
/// The read timeout of such a session (`2T/3`).
const READ_TIMEOUT: Duration = Duration::from_millis(2_667);
/// Bounds every wait for something the scenario must bring (a grant, a connection).
const LIMIT: Duration = Duration::from_secs(30);

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The bed and two client namespaces: the holder's and the contender's.
struct Scene {
    bed: PartitionBed,
    holder_rt: Runtime,
    contender_rt: Runtime,
    _namespaces: (ClientNamespace, ClientNamespace),
}

impl Scene {
    fn start() -> Option<Scene> {
        let bed = started(PartitionBed::start(3))?;
        let holder = bed.client_namespace("holder").expect("holder namespace");
        let contender = bed
            .client_namespace("contender")
            .expect("contender namespace");
        Some(Scene {
            holder_rt: holder.runtime().expect("holder runtime"),
            contender_rt: contender.runtime().expect("contender runtime"),
            _namespaces: (holder, contender),
            bed,
        })
    }

    /// The servers in the order the rounds give them the leadership: the current leader
    /// first (no election needed), then the others.
    fn leaders(&self) -> Vec<usize> {
        let first = self.bed.wait_for_quorum().expect("a quorum");
        (0..3).map(|k| (first + k) % 3).collect()
    }

    /// Makes `leader` lead; returns (the holder's follower, the other follower).
    fn round(&self, leader: usize) -> (usize, usize) {
        let led = self.bed.make_leader(leader).expect("move the leadership");
        eprintln!("round: server {leader} leads (leaders on the way: {led:?})");
        ((leader + 1) % 3, (leader + 2) % 3)
    }

    fn connect(&self, rt: &Runtime, servers: &[usize], check: bool) -> Client {
        let connect = self.bed.connect_string(servers);
        rt.block_on(async {
            tokio::time::timeout(
                LIMIT,
                Client::builder()
                    .session_timeout(SESSION)
                    .quorum_check(check)
                    .connect(&connect),
            )
            .await
            .expect("connect within the limit")
            .expect("connect")
        })
    }

    /// Cuts `follower` from the other servers after a random pause; returns when it was cut.
    fn cut(&self, follower: usize) -> Instant {
        std::thread::sleep(random_pause());
        let at = Instant::now();
        self.bed.isolate_from_servers(follower).expect("cut");
        at
    }

    /// Heals and waits until the three servers serve together again.
    fn heal(&self) {
        self.bed.heal().expect("heal");
        self.bed.wait_for_quorum().expect("the quorum again");
    }
}

/// Runs `future` on `rt`, bounded by [`LIMIT`] (polled on the calling thread, so any socket
/// it opens itself is in the root namespace: zk-proto's are opened by its driver task, which
/// runs on `rt`'s threads, in the client's namespace).
fn on<F: Future>(rt: &Runtime, what: &str, future: F) -> F::Output {
    rt.block_on(async {
        tokio::time::timeout(LIMIT, future)
            .await
            .unwrap_or_else(|_| panic!("{what}: not within {LIMIT:?}"))
    })
}

/// Waits until `path` has `n` children, seen from `client` (a watch per listing).
fn wait_children(rt: &Runtime, client: &Client, path: &str, n: usize) {
    let client = client.clone();
    let path = path.to_owned();
    on(rt, "the contender in line", async move {
        loop {
            let (children, watcher) = client
                .get_children_watch(&path)
                .await
                .expect("list the contenders");
            if children.len() >= n {
                return;
            }
            watcher.changed().await.expect("children changed");
        }
    });
}

/// Asserts that the holder learned (at `learned`) before the contender was granted (at
/// `granted`), and says by how much.
fn learned_first(what: &str, cut: Instant, learned: Option<Instant>, granted: Instant) {
    let granted_after = granted.duration_since(cut);
    let Some(learned) = learned else {
        panic!(
            "{what}: the contender was granted {granted_after:?} after the cut while the holder \
             still believed it held"
        );
    };
    eprintln!(
        "{what}: the holder learned {:?} after the cut, the contender was granted {:?} after \
         it ({:?} later)",
        learned.duration_since(cut),
        granted_after,
        granted.saturating_duration_since(learned)
    );
    assert!(
        learned < granted,
        "{what}: the holder learned {:?} after the contender was granted",
        learned.duration_since(granted)
    );
}

#[test]
fn a_lock_holder_behind_a_cut_off_follower_is_suspended_before_another_is_granted() {
    let _serial = serial();
    let Some(scene) = Scene::start() else { return };
    for leader in scene.leaders() {
        let (follower, other) = scene.round(leader);
        let path = format!("/lock-{leader}");
        let holder = scene.connect(&scene.holder_rt, &[follower], false);
        let contender = scene.connect(&scene.contender_rt, &[leader, other], false);
        let lock = Lock::new(&holder, &path);
        let guard = on(&scene.holder_rt, "acquire", async move {
            lock.acquire(None).await
        })
        .expect("the holder acquires");
        let holding = scene.holder_rt.spawn(async move {
            let lost = guard.wait_lost(None).await;
            (Instant::now(), lost, guard)
        });
        let lock = Lock::new(&contender, &path);
        let contending = scene.contender_rt.spawn(async move {
            let granted = lock.acquire(None).await;
            (Instant::now(), granted)
        });
        wait_children(&scene.contender_rt, &contender, &path, 2);

        let cut = scene.cut(follower);
        let (granted, second) = on(&scene.contender_rt, "the contender's grant", contending)
            .expect("the contender's task");
        let second = second.expect("the contender acquires");
        // The holder's task stamped the moment it learned; it has had every chance to run.
        let learned = holding
            .is_finished()
            .then(|| on(&scene.holder_rt, "the holder's task", holding))
            .map(|joined| joined.expect("the holder's task").0);
        learned_first(&format!("lock, leader {leader}"), cut, learned, granted);
        assert!(second.fencing_token() > 0);

        scene.heal();
        on(&scene.contender_rt, "release", second.release()).expect("release");
        drop((holder, contender));
    }
}

#[test]
fn a_leader_behind_a_cut_off_follower_stops_leading_before_another_leads() {
    let _serial = serial();
    let Some(scene) = Scene::start() else { return };
    for leader in scene.leaders() {
        let (follower, other) = scene.round(leader);
        let path = format!("/latch-{leader}");
        let holder = scene.connect(&scene.holder_rt, &[follower], false);
        let contender = scene.connect(&scene.contender_rt, &[leader, other], false);
        let first = {
            let _entered = scene.holder_rt.enter();
            LeaderLatch::builder(&holder, &path, "first").start()
        };
        on(&scene.holder_rt, "the first leads", async {
            first.wait_leader(None).await
        })
        .expect("the first leads");
        let mut leading = first.leadership().receiver();
        let holding = scene.holder_rt.spawn(async move {
            while *leading.borrow_and_update() {
                if leading.changed().await.is_err() {
                    break;
                }
            }
            Instant::now()
        });
        let second = {
            let _entered = scene.contender_rt.enter();
            LeaderLatch::builder(&contender, &path, "second").start()
        };
        wait_children(&scene.contender_rt, &contender, &path, 2);

        let cut = scene.cut(follower);
        on(&scene.contender_rt, "the second leads", async {
            second.wait_leader(None).await
        })
        .expect("the second leads");
        let granted = Instant::now();
        let learned = holding
            .is_finished()
            .then(|| on(&scene.holder_rt, "the first's task", holding))
            .map(|joined| joined.expect("the first's task"));
        learned_first(&format!("latch, leader {leader}"), cut, learned, granted);

        scene.heal();
        on(&scene.contender_rt, "close", second.close()).expect("close");
        drop((first, holder, contender));
    }
}

/// The number the cache holds at `path`.
fn cached_number(cache: &TreeCache, path: &str) -> Option<usize> {
    let node = cache.get(path)?;
    std::str::from_utf8(node.data()?).ok()?.parse().ok()
}

/// The cache's data at the moment its client says the connection is lost is younger than the
/// read timeout: measured from the first write it missed, which the writer stamped when the
/// ensemble confirmed it.
#[test]
fn a_tree_cache_behind_a_cut_off_follower_says_so_before_its_data_is_older_than_the_read_timeout() {
    let _serial = serial();
    let Some(scene) = Scene::start() else { return };
    for leader in scene.leaders() {
        let (follower, other) = scene.round(leader);
        let root = format!("/cache-{leader}");
        let value = format!("{root}/v");
        let reader = scene.connect(&scene.holder_rt, &[follower], false);
        let writer = scene.connect(&scene.contender_rt, &[leader, other], false);
        on(&scene.contender_rt, "create", {
            let (writer, root, value) = (writer.clone(), root.clone(), value.clone());
            async move {
                writer
                    .create(&root, "", &CreateOptions::persistent())
                    .await
                    .expect("create the root");
                writer
                    .create(&value, "0", &CreateOptions::persistent())
                    .await
                    .expect("create the value");
            }
        });
        let cache = {
            let _entered = scene.holder_rt.enter();
            TreeCache::builder(&reader, &root).start()
        };
        on(
            &scene.holder_rt,
            "initialized",
            cache.wait_initialized(None),
        )
        .expect("initialized");

        // The writer writes 1, 2, ... every 50 ms and stamps each when it is confirmed.
        let confirmed: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(vec![Instant::now()]));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writing = scene.contender_rt.spawn({
            let (writer, value, confirmed, stop) = (
                writer.clone(),
                value.clone(),
                confirmed.clone(),
                stop.clone(),
            );
            async move {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    n += 1;
                    writer
                        .set_data(&value, n.to_string(), None)
                        .await
                        .expect("write");
                    confirmed.lock().expect("stamps").push(Instant::now());
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        });
        let mut states = reader.state_watcher();
        let cache = Arc::new(cache);
        let watching = scene.holder_rt.spawn({
            let (cache, value) = (cache.clone(), value.clone());
            async move {
                while *states.borrow_and_update() == SessionState::Connected {
                    states.changed().await.expect("states");
                }
                let at = Instant::now();
                let held = cached_number(&cache, &value).expect("a cached value");
                (at, held)
            }
        });
        // Some writes reach the cache first.
        on(&scene.holder_rt, "the cache follows the writes", {
            let (cache, value) = (cache.clone(), value.clone());
            async move {
                let mut events = cache.events();
                loop {
                    let held = cached_number(&cache, &value);
                    if held.is_some_and(|v| v >= 5) {
                        return;
                    }
                    events.next().await.expect("cache events");
                }
            }
        });

        let cut = scene.cut(follower);
        let (lost_at, held) =
            on(&scene.holder_rt, "the reader's connection lost", watching).expect("the task");
        let missed = confirmed.lock().expect("stamps").get(held + 1).copied();
        let staleness = missed.map_or(Duration::ZERO, |m| lost_at.saturating_duration_since(m));
        eprintln!(
            "cache, leader {leader}: connection lost {:?} after the cut, holding value {held}, \
             its data then {staleness:?} out of date",
            lost_at.duration_since(cut)
        );
        assert!(
            staleness < READ_TIMEOUT,
            "cache, leader {leader}: data {staleness:?} out of date when the loss was reported"
        );

        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        on(&scene.contender_rt, "the writer stops", writing).expect("the writer");
        scene.heal();
        drop((cache, reader, writer));
    }
}

/// Two clients on the follower that is cut off, one with the check and one without, each
/// holding an ephemeral node; a client on the leader's side watches the nodes go. The one with
/// the check is disconnected before the leader deletes its node; the one without is still
/// `Connected` when its node is deleted: the window is real on this ensemble, and the check is
/// what closes it.
#[test]
fn only_the_client_with_the_quorum_check_leaves_a_cut_off_follower_before_its_session_expires() {
    let _serial = serial();
    let Some(scene) = Scene::start() else { return };
    let leader = scene.bed.wait_for_quorum().expect("a quorum");
    let (follower, other) = ((leader + 1) % 3, (leader + 2) % 3);
    let checked = scene.connect(&scene.holder_rt, &[follower], true);
    let unchecked = scene.connect(&scene.holder_rt, &[follower], false);
    let observer = scene.connect(&scene.contender_rt, &[leader, other], false);
    let logs = {
        let _entered = scene.holder_rt.enter();
        (StateLog::record(&checked), StateLog::record(&unchecked))
    };
    let mut deletions = Vec::new();
    for (client, name) in [(&checked, "/checked"), (&unchecked, "/unchecked")] {
        on(
            &scene.holder_rt,
            "create",
            client.create(name, "", &CreateOptions::ephemeral()),
        )
        .expect("create the ephemeral node");
        // The observer's server may be the other follower, which can answer before it has
        // applied the create (ZooKeeper orders each session, not reads across sessions): a
        // `sync` first brings it up to the leader.
        on(&scene.contender_rt, "sync", observer.sync(name)).expect("sync");
        let (stat, watcher) =
            on(&scene.contender_rt, "watch", observer.exists_watch(name)).expect("watch");
        assert!(stat.is_some(), "{name} seen after a sync");
        deletions.push(scene.contender_rt.spawn(async move {
            let event = watcher.changed().await.expect("the node's event");
            assert_eq!(event.event_type, EventType::NODE_DELETED);
            Instant::now()
        }));
    }
    let unchecked_deleted = deletions.pop().expect("two");
    let checked_deleted = deletions.pop().expect("two");

    let cut = scene.cut(follower);
    let checked_deleted = on(
        &scene.contender_rt,
        "the checked node deleted",
        checked_deleted,
    )
    .expect("task");
    let unchecked_deleted = on(
        &scene.contender_rt,
        "the unchecked node deleted",
        unchecked_deleted,
    )
    .expect("task");
    let left = |log: &StateLog| {
        log.first(SessionState::Disconnected)
            .map(tokio::time::Instant::into_std)
    };
    learned_first("with the check", cut, left(&logs.0), checked_deleted);
    assert!(
        left(&logs.1).is_none_or(|at| at > unchecked_deleted),
        "without the check the client was expected Connected when its node went ({:?} after \
         the cut); it left {:?} after the cut",
        unchecked_deleted.duration_since(cut),
        left(&logs.1).map(|at| at.duration_since(cut))
    );
    eprintln!(
        "without the check: node deleted {:?} after the cut while Connected",
        unchecked_deleted.duration_since(cut)
    );
    scene.heal();
    drop((checked, unchecked, observer));
}
