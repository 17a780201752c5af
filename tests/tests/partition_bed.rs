//! The partition bed itself (`zk_testkit::partition`): a quorum in network namespaces that a
//! client namespace reaches and the root namespace does not, cuts that make a follower cut off
//! from its leader stop serving and a heal that brings it back, and nothing left after `Drop`.
//!
//! Each test skips (one line on stderr) on a machine that does not allow a bed (not root, no
//! `ip`/`nft`). One bed is shared by the assertions of the long test: it starts three JVMs.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use zk_proto::{Client, CreateOptions};
use zk_testkit::partition::{
    ClientNamespace, Node, PartitionBed, namespaces_with_prefix, sweep_stale_namespaces,
};
use zk_testkit::{ENV_KEEP, FOUR_LETTER_TIMEOUT, Mode, four_letter, started};

/// How long a follower cut from its leader may keep saying it follows: `syncLimit` ×
/// `tickTime` (10 s), plus slack.
const GIVES_UP: Duration = Duration::from_secs(15);
/// How long a healed server may take to follow again.
const REJOINS: Duration = Duration::from_secs(60);
/// A connect that a cut makes hang.
const HANGS: Duration = Duration::from_millis(1500);
/// Bounds every client call.
const CALL: Duration = Duration::from_secs(20);

/// A TCP connect from the calling thread, bounded by `timeout`.
fn connects(addr: SocketAddr, timeout: Duration) -> bool {
    TcpStream::connect_timeout(&addr, timeout).is_ok()
}

/// `ruok` from the calling thread.
fn ruok(addr: SocketAddr) -> String {
    let mut stream = TcpStream::connect_timeout(&addr, FOUR_LETTER_TIMEOUT).expect("connect");
    stream
        .set_read_timeout(Some(FOUR_LETTER_TIMEOUT))
        .expect("read timeout");
    stream.write_all(b"ruok").expect("send ruok");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read the answer");
    answer
}

/// The threads of `rt` are in `ns`, spawned work and blocking work alike, and reach a server.
fn runtime_lives_in(ns: &ClientNamespace, rt: &tokio::runtime::Runtime, server: SocketAddr) {
    let inside = ns.clone();
    let task = rt.spawn(async move {
        let stream = tokio::net::TcpStream::connect(server).await;
        (
            inside.contains_current_thread().expect("ns"),
            stream.is_ok(),
        )
    });
    let inside = ns.clone();
    let blocking = rt.spawn_blocking(move || {
        (
            inside.contains_current_thread().expect("ns"),
            connects(server, FOUR_LETTER_TIMEOUT),
        )
    });
    let (task, blocking) = rt.block_on(async {
        (
            task.await.expect("task"),
            blocking.await.expect("blocking task"),
        )
    });
    assert_eq!(
        task,
        (true, true),
        "a spawned task: (in the namespace, connected)"
    );
    assert_eq!(
        blocking,
        (true, true),
        "a blocking task: (in the namespace, connected)"
    );
    // The test's own thread is in the root namespace, which has no route into the bed.
    assert!(!ns.contains_current_thread().expect("ns"));
}

#[test]
fn a_bed_forms_a_quorum_survives_an_isolated_follower_and_leaves_nothing_behind() {
    let t = Instant::now();
    let Some(bed) = started(PartitionBed::start(3)) else {
        return;
    };
    eprintln!("bed start took {:.2?}", t.elapsed());
    let prefix = bed.prefix().to_owned();
    let dir = bed.dir().to_owned();
    assert_eq!(
        namespaces_with_prefix(&prefix),
        [
            format!("{prefix}-hub"),
            format!("{prefix}-s0"),
            format!("{prefix}-s1"),
            format!("{prefix}-s2"),
        ]
    );
    assert_eq!(bed.server_addr(0), "198.18.0.10:2181".parse().unwrap());
    assert_eq!(
        bed.connect_string(&[0, 2]),
        "198.18.0.10:2181,198.18.0.12:2181"
    );

    // (a) One leader, two followers; a client namespace reaches them, through a runtime whose
    // threads are all inside, a closure, and a command.
    let modes = bed.modes().unwrap();
    let leader = bed.leader().unwrap();
    assert_eq!(modes[leader], Some(Mode::Leader), "{modes:?}");
    assert_eq!(
        modes.iter().filter(|m| **m == Some(Mode::Follower)).count(),
        2,
        "{modes:?}"
    );
    let follower = (leader + 1) % 3;
    let other = (leader + 2) % 3;
    assert_eq!(bed.mode(follower).unwrap(), Mode::Follower);

    let app = bed.client_namespace("app").unwrap();
    assert_eq!(
        app.ip(),
        "198.18.0.100".parse::<std::net::Ipv4Addr>().unwrap()
    );
    assert_eq!(app.name(), format!("{prefix}-c0"));
    let rt = app.runtime().unwrap();
    runtime_lives_in(&app, &rt, bed.server_addr(follower));
    assert_eq!(app.run(|| ruok(bed.server_addr(follower))), "imok");
    let addrs = app
        .command("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .unwrap();
    let addrs = String::from_utf8_lossy(&addrs.stdout);
    assert!(addrs.contains("198.18.0.100/24"), "{addrs}");

    let connect = bed.connect_string(&[follower]);
    let client: Client = rt.block_on(async {
        let client = tokio::time::timeout(CALL, Client::builder().connect(&connect))
            .await
            .expect("connect in time")
            .expect("connect through the follower");
        tokio::time::timeout(
            CALL,
            client.create("/bed", "one", &CreateOptions::persistent()),
        )
        .await
        .expect("create in time")
        .expect("create through the follower");
        let (data, _) = tokio::time::timeout(CALL, client.get_data("/bed"))
            .await
            .expect("read in time")
            .expect("read through the follower");
        assert_eq!(&data[..], b"one");
        client
    });

    // Cuts between a client and a server, both ways and one way, and their heal.
    let server = bed.server_addr(other);
    bed.cut(Node::Client(&app), Node::Server(other)).unwrap();
    assert!(bed.is_cut(Node::Server(other), (&app).into()));
    assert!(
        !app.run(|| connects(server, HANGS)),
        "the cut drops the connect"
    );
    assert!(app.run(|| connects(bed.server_addr(leader), HANGS)));
    bed.heal().unwrap();
    assert!(bed.cuts().is_empty());
    assert!(app.run(|| connects(server, FOUR_LETTER_TIMEOUT)));
    bed.cut_one_way(Node::Server(other), Node::Client(&app))
        .unwrap();
    assert!(bed.is_cut(Node::Server(other), Node::Client(&app)));
    assert!(!bed.is_cut(Node::Client(&app), Node::Server(other)));
    assert!(
        !app.run(|| connects(server, HANGS)),
        "the server's answers are dropped"
    );
    bed.heal().unwrap();

    // A paused server answers nothing; resumed, it serves again.
    bed.pause_server(other).unwrap();
    assert!(bed.mode(other).is_err(), "a paused server does not answer");
    bed.resume_server(other).unwrap();
    assert_eq!(bed.mode(other).unwrap(), Mode::Follower);

    // (b) A follower cut off from the other servers stops serving within syncLimit × tickTime
    // while the two others keep a leader; clients still reach it.
    let t = Instant::now();
    bed.isolate_from_servers(follower).unwrap();
    let modes = bed
        .wait_until("the isolated follower to stop following", GIVES_UP, |m| {
            !matches!(m[follower], Some(Mode::Follower | Mode::Leader))
        })
        .unwrap();
    eprintln!(
        "the isolated follower gave up after {:.2?}: {modes:?}",
        t.elapsed()
    );
    assert_eq!(modes[follower], Some(Mode::NotServing), "{modes:?}");
    assert_eq!(modes[leader], Some(Mode::Leader), "{modes:?}");
    assert_eq!(modes[other], Some(Mode::Follower), "{modes:?}");
    assert_eq!(bed.leader().unwrap(), leader);
    assert_eq!(app.run(|| ruok(bed.server_addr(follower))), "imok");
    assert_eq!(
        app.run(|| four_letter(bed.server_addr(follower), "srvr", FOUR_LETTER_TIMEOUT))
            .map(|s| Mode::from_srvr(&s))
            .unwrap(),
        Mode::NotServing
    );

    // ... and follows again once healed; the data is there.
    let t = Instant::now();
    bed.heal().unwrap();
    bed.wait_until("the healed server to follow again", REJOINS, |m| {
        m[follower] == Some(Mode::Follower)
    })
    .unwrap();
    eprintln!("the healed follower rejoined after {:.2?}", t.elapsed());
    assert_eq!(bed.wait_for_quorum().unwrap(), leader);
    rt.block_on(async {
        let (data, _) = tokio::time::timeout(CALL, client.get_data("/bed"))
            .await
            .expect("read in time")
            .expect("read after the heal");
        assert_eq!(&data[..], b"one");
        let _ = tokio::time::timeout(CALL, client.close()).await;
    });

    // (c) Nothing of the bed is left after Drop: no namespace, no directory.
    drop(rt);
    drop(app);
    let t = Instant::now();
    drop(bed);
    eprintln!("bed drop took {:.2?}", t.elapsed());
    assert_eq!(namespaces_with_prefix(&prefix), Vec::<String>::new());
    if std::env::var_os(ENV_KEEP).is_none_or(|v| v.is_empty() || v == "0") {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
    let listed = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains(&prefix),
        "ip netns list still shows {prefix}"
    );
}

#[test]
fn namespaces_of_dead_test_processes_are_swept_and_live_ones_are_not() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("partition bed unavailable: not root; skipping");
        return;
    }
    // No process can have this pid (Linux allocates pids below 2^22).
    let dead = format!("rzkp{}x0-s0", 1u32 << 22);
    let mine = format!("rzkp{}x{}-s0", std::process::id(), u32::MAX);
    let add = |name: &str| Command::new("ip").args(["netns", "add", name]).status();
    match add(&dead) {
        Ok(status) if status.success() => {}
        other => {
            eprintln!("partition bed unavailable: ip netns add: {other:?}; skipping");
            return;
        }
    }
    assert!(add(&mine).unwrap().success());
    let swept = sweep_stale_namespaces();
    let left = namespaces_with_prefix("rzkp");
    let _ = Command::new("ip").args(["netns", "delete", &mine]).status();
    // (Another process's sweep may have taken it first.)
    assert!(!left.contains(&dead), "swept {swept:?}, left {left:?}");
    assert!(
        left.contains(&mine),
        "a live process's namespace was swept: {left:?}"
    );
}
