//! Clients of an ensemble whose membership changes, on real 3.8 servers: a session that follows
//! its ensemble while every original member is replaced, sessions spread over servers that
//! join, and a session handed from one client to another.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use zk_proto::connect_string::HostAddr;
use zk_proto::{ClientBuilder, CreateOptions, Error, EventType, SessionState};
use zk_recipes::lock::{Lock, Validity};
use zk_testkit::client::{
    add_member, blocking, builder, connect, connect_with, eventually, mkdirs, replace_member,
    serial, start_dynamic_ensemble, start_ensemble, start_server, wait_children, wait_for_state,
    within,
};
use zk_testkit::{DynamicEnsemble, Ensemble, started};

const CALL: Duration = Duration::from_secs(10);

/// Sessions that outlive a leader's removal (every server drops its clients then) and the
/// election after it.
fn patient() -> ClientBuilder {
    builder().session_timeout(Duration::from_secs(20))
}

fn live_hosts(ensemble: &DynamicEnsemble) -> BTreeSet<HostAddr> {
    ensemble
        .live_ids()
        .into_iter()
        .map(|id| {
            let addr = ensemble.addr(id);
            HostAddr::new(addr.ip().to_string(), addr.port())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_follows_its_ensemble_replaced_member_by_member_keeping_its_lock() {
    let _serial = serial().await;
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    let admin = connect_with(patient(), &ensemble.connect_string()).await;
    let holder = connect_with(patient(), &ensemble.connect_string()).await;
    let waiter = connect_with(patient(), &ensemble.connect_string()).await;
    mkdirs(&admin, "/changing").await;
    within(
        "create",
        CALL,
        admin.create("/changing/w", "", &CreateOptions::persistent()),
    )
    .await
    .expect("create the watched node");

    let lock_path = "/changing/lock";
    let guard = within("acquire", CALL, Lock::new(&holder, lock_path).acquire(None))
        .await
        .expect("the holder acquires");
    let waiting = {
        let lock = Lock::new(&waiter, lock_path);
        tokio::spawn(async move { lock.acquire(None).await })
    };
    wait_children(
        &admin,
        lock_path,
        Duration::from_secs(10),
        "the waiter queued",
        |c| c.len() == 2,
    )
    .await;
    let ephemeral = CreateOptions::ephemeral();
    within(
        "create",
        CALL,
        holder.create("/changing/eph", "", &ephemeral),
    )
    .await
    .expect("the holder's ephemeral");
    let (_, _, watch) = within("watch", CALL, holder.get_data_watch("/changing/w"))
        .await
        .expect("the holder's watch");
    let session = holder.session_id();

    for old in ensemble.ids() {
        replace_member(&ensemble, &admin, old).await;
    }
    // The holder follows the configuration: its list is the new members only.
    let members = live_hosts(&ensemble);
    eventually(
        "the holder follows the ensemble",
        Duration::from_secs(30),
        || {
            let hosts: BTreeSet<HostAddr> = holder.hosts().into_iter().collect();
            // On a server: the state stays `Connected` during a move.
            let ready = hosts == members
                && holder.state() == SessionState::Connected
                && holder.server().is_some();
            async move { ready }
        },
    )
    .await;
    assert_eq!(holder.session_id(), session, "the same session");
    let server = holder.server().expect("connected to a server");
    assert!(members.contains(&server), "{server} is a new member");

    // Its ephemeral node, its lock and its watch are all still there.
    let stat = within("exists", CALL, admin.exists("/changing/eph"))
        .await
        .expect("exists")
        .expect("the ephemeral survived");
    assert_eq!(stat.ephemeral_owner, session);
    assert_eq!(guard.validity(), Validity::Held);
    assert!(!waiting.is_finished(), "the waiter still waits");
    within("set", CALL, admin.set_data("/changing/w", "x", None))
        .await
        .expect("set");
    let event = within("the watch", CALL, watch.changed())
        .await
        .expect("the watch fired");
    assert_eq!(event.event_type, EventType::NODE_DATA_CHANGED);

    // And the lock goes to the waiter once released.
    within("release", CALL, guard.release())
        .await
        .expect("release");
    let granted = within("the waiter's grant", CALL, waiting)
        .await
        .expect("the task")
        .expect("the waiter acquires");
    drop(granted);
}

/// The documented bound (docs/client.md, "Changing ensembles"): 30 sessions on 3 servers, after
/// a 4th and a 5th join, end up with every server holding at least 2 and at most 12 of them
/// (6 each in expectation). The sessions are seeded, so a run is reproducible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_sessions_spread_over_five_servers_after_two_join() {
    let _serial = serial().await;
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    let admin = connect_with(patient(), &ensemble.connect_string()).await;
    let mut clients = Vec::new();
    for seed in 0..30 {
        clients.push(connect_with(patient().rng_seed(seed), &ensemble.connect_string()).await);
    }
    for _ in 0..2 {
        let e = ensemble.clone();
        let joiner = started(blocking(move || e.spawn_joiner()).await);
        add_member(&admin, &joiner.server_line).await;
    }
    let members = live_hosts(&ensemble);
    assert_eq!(members.len(), 5);
    eventually(
        "every session follows the ensemble",
        Duration::from_secs(30),
        || {
            // On a server, not only `Connected`: the state stays `Connected` while a client
            // moves to its new server (docs/client.md, "A move is not a disconnection").
            let ready = clients.iter().all(|c| {
                c.state() == SessionState::Connected
                    && c.server().is_some()
                    && c.hosts().into_iter().collect::<BTreeSet<_>>() == members
            });
            async move { ready }
        },
    )
    .await;
    let mut per_server: BTreeMap<HostAddr, usize> =
        members.iter().map(|m| (m.clone(), 0)).collect();
    for client in &clients {
        let server = client.server().expect("connected");
        *per_server.get_mut(&server).expect("a member") += 1;
    }
    println!("sessions per server: {per_server:?}");
    assert_eq!(per_server.values().sum::<usize>(), 30);
    for (server, count) in &per_server {
        assert!(
            (2..=12).contains(count),
            "{server} holds {count} of 30 sessions: {per_server:?}"
        );
    }
}

#[tokio::test]
async fn a_detached_session_resumed_by_another_client_keeps_its_ephemerals() {
    let server = start_server().await;
    let first = connect(&server.connect_string()).await;
    within(
        "create",
        CALL,
        first.create("/handed", "", &CreateOptions::ephemeral()),
    )
    .await
    .expect("an ephemeral");
    let (id, password) = (first.session_id(), first.session_password());
    first.detach().await;
    assert_eq!(first.state(), SessionState::Closed);
    assert_eq!(first.get_data("/handed").await, Err(Error::Closed));

    let second = connect_with(
        builder().resume(id, password.clone()),
        &server.connect_string(),
    )
    .await;
    assert_eq!(second.session_id(), id);
    let stat = within("exists", CALL, second.exists("/handed"))
        .await
        .expect("exists")
        .expect("the ephemeral was kept");
    assert_eq!(stat.ephemeral_owner, id);

    // A wrong password, and a session that is over, are SessionExpired.
    let mut wrong = password.expose().to_vec();
    wrong[0] ^= 0xff;
    let refused = builder()
        .resume(id, wrong)
        .connect(&server.connect_string())
        .await;
    assert_eq!(refused.err(), Some(Error::SessionExpired));

    // A session the server expired: its ephemeral is gone, and resuming it is refused.
    let third = connect(&server.connect_string()).await;
    within(
        "create",
        CALL,
        third.create("/gone", "", &CreateOptions::ephemeral()),
    )
    .await
    .expect("an ephemeral");
    let (id, password) = (third.session_id(), third.session_password());
    third.detach().await;
    eventually(
        "the server expires the session",
        Duration::from_secs(20),
        || {
            let read = second.exists("/gone");
            async move { matches!(read.await, Ok(None)) }
        },
    )
    .await;
    let over = builder()
        .resume(id, password)
        .connect(&server.connect_string())
        .await;
    assert_eq!(over.err(), Some(Error::SessionExpired));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_resumed_on_another_server_leaves_the_old_client_unable_to_write() {
    let _serial = serial().await;
    let ensemble = start_ensemble(Ensemble::builder(3)).await;
    let addrs = ensemble.addrs();
    let old = connect_with(patient().follow_ensemble(false), &addrs[0].to_string()).await;
    within(
        "create",
        CALL,
        old.create("/moved", "", &CreateOptions::ephemeral()),
    )
    .await
    .expect("an ephemeral");
    let new = connect_with(
        patient()
            .follow_ensemble(false)
            .resume(old.session_id(), old.session_password()),
        &addrs[1].to_string(),
    )
    .await;
    assert_eq!(new.session_id(), old.session_id());
    // ZooKeeper takes the session from the old server: the old client's connection is
    // closed (or, on a server that has not heard yet, its writes are refused with
    // SessionMoved). Either way its write does not apply.
    let refused = within("set", CALL, old.set_data("/moved", "old", None)).await;
    assert!(
        matches!(refused, Err(Error::ConnectionLoss | Error::SessionMoved)),
        "the old client's write: {refused:?}"
    );
    // The old owner steps aside (two live clients would take the session from each other).
    old.detach().await;
    // The new owner writes; a connection the old client closed by reconnecting in between
    // is a ConnectionLoss, and the write is made again once connected.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        match within("set", CALL, new.set_data("/moved", "new", None)).await {
            Ok(_) => break,
            Err(Error::ConnectionLoss) if tokio::time::Instant::now() < deadline => {
                wait_for_state(&new, SessionState::Connected, Duration::from_secs(20)).await;
            }
            Err(error) => panic!("the new owner's write: {error:?}"),
        }
    }
    let stat = within("exists", CALL, new.exists("/moved"))
        .await
        .expect("exists")
        .expect("the ephemeral was kept");
    assert_eq!(stat.ephemeral_owner, new.session_id());
    assert_eq!(
        &within("get", CALL, new.get_data("/moved"))
            .await
            .expect("get")
            .0[..],
        b"new"
    );
}

/// A client on only one server of a static ensemble learns the others from the
/// configuration, and survives that server's death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_listed_on_one_server_learns_the_others_from_the_configuration() {
    let _serial = serial().await;
    let ensemble = start_ensemble(Ensemble::builder(3)).await;
    let addrs = ensemble.addrs();
    let client = connect_with(patient(), &addrs[0].to_string()).await;
    let all: BTreeSet<HostAddr> = addrs
        .iter()
        .map(|a| HostAddr::new(a.ip().to_string(), a.port()))
        .collect();
    eventually(
        "the client learns the ensemble",
        Duration::from_secs(10),
        || {
            let ready = client.hosts().into_iter().collect::<BTreeSet<_>>() == all;
            async move { ready }
        },
    )
    .await;
    let session = client.session_id();
    let on = client.server().expect("connected");
    let index = addrs
        .iter()
        .position(|a| a.port() == on.port)
        .expect("one of the servers");
    let e = ensemble.clone();
    blocking(move || e.kill(index)).await;
    eventually("connected elsewhere", Duration::from_secs(30), || {
        let ready = client.state() == SessionState::Connected
            && client.server().is_some_and(|s| s.port != on.port);
        async move { ready }
    })
    .await;
    assert_eq!(client.session_id(), session);
    within("sync", CALL, client.sync("/"))
        .await
        .expect("served by another server");
}
