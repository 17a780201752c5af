//! rzk's commands of ZooKeeper's shell (zkCli) checked against zkCli itself
//! (`org.apache.zookeeper.ZooKeeperMain` from the installed jars, run with a command as its
//! arguments) on the same server: what one changes the other reads, and both report the same
//! facts (not the same formatting): quotas, the number of descendants, setAcl -R, deleteall
//! with a batch size, removewatches, the ensemble's configuration and reconfig (incremental,
//! whole membership, from a version). Also the one-shot watches of get/ls/stat -w.

mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{Run, command, finish, rzk};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;
use zk_proto::CreateOptions;
use zk_testkit::client::{
    blocking, connect, create_node, mkdirs, read_config, serial, start_dynamic_ensemble,
    start_server, within,
};
use zk_testkit::{DynamicEnsemble, ZkInstall, started};

const LIMIT: Duration = Duration::from_secs(10);

/// Runs zkCli with one command against `server` to its end; its facts are on stdout (its
/// log, at warn, on stderr).
async fn zkcli(server: &str, args: &[&str]) -> Run {
    let install = ZkInstall::detect().unwrap_or_else(|e| panic!("{e}"));
    let mut cli = tokio::process::Command::new(install.java());
    cli.arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=error")
        .arg("-Xshare:auto")
        .arg("-XX:TieredStopAtLevel=1")
        .arg("-cp")
        .arg(install.classpath())
        .arg("org.apache.zookeeper.ZooKeeperMain")
        .arg("-server")
        .arg(server)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let run = finish(cli.spawn().expect("start zkCli"), args).await;
    // Its connection chatter is not a fact.
    let stdout = run
        .stdout
        .lines()
        .filter(|l| {
            !(l.is_empty()
                || l.starts_with("Connecting to")
                || l.starts_with("WATCHER::")
                || l.starts_with("WatchedEvent state:SyncConnected type:None"))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    Run { stdout, ..run }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_commands_agree_with_zkcli() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    mkdirs(&client, "/q/a/b").await;
    create_node(&client, "/q/a/data", "0123456789").await;

    // setquota by rzk, read by zkCli; and the other way round.
    rzk(&zk, &["setquota", "-n", "5", "/q"])
        .await
        .expect(0, "setquota -n");
    let listed = zkcli(&zk, &["listquota", "/q"])
        .await
        .expect(0, "zkCli listquota");
    assert!(
        listed
            .stdout
            .contains("Output quota for /q count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1"),
        "{}",
        listed.stdout
    );
    assert!(
        listed
            .stdout
            .contains("Output stat for /q count=4,bytes=10"),
        "{}",
        listed.stdout
    );
    zkcli(&zk, &["setquota", "-b", "100", "/q"])
        .await
        .expect(0, "zkCli setquota -b");
    let json = rzk(&zk, &["listquota", "--json", "/q"])
        .await
        .expect(0, "listquota")
        .json();
    assert_eq!(json["count"]["limit"], 5);
    assert_eq!(json["count"]["used"], 4);
    assert_eq!(json["bytes"]["limit"], 100);
    assert_eq!(json["bytes"]["used"], 10);
    assert!(json["count"]["hard_limit"].is_null());
    let text = rzk(&zk, &["listquota", "/q"]).await.expect(0, "listquota");
    assert!(text.stdout.contains("nodes  used 4"), "{}", text.stdout);
    // Quotas do not nest, for either tool.
    rzk(&zk, &["setquota", "-n", "2", "/q/a"])
        .await
        .expect(4, "a quota under a quota")
        .one_error_line("ancestor /q has a quota");
    let nested = zkcli(&zk, &["setquota", "-n", "2", "/q/a"]).await;
    assert!(
        nested.stdout.contains("has a parent /q which has a quota")
            || nested.stderr.contains("has a parent /q which has a quota"),
        "{nested:?}"
    );
    // delquota -n: the count limit only; then the whole quota.
    rzk(&zk, &["delquota", "-n", "/q"])
        .await
        .expect(0, "delquota -n");
    let listed = zkcli(&zk, &["listquota", "/q"]).await;
    assert!(
        listed.stdout.contains("count=-1,bytes=100"),
        "{}",
        listed.stdout
    );
    rzk(&zk, &["delquota", "/q"]).await.expect(0, "delquota");
    let listed = zkcli(&zk, &["listquota", "/q"]).await;
    assert!(
        listed.stderr.contains("quota for /q does not exist."),
        "{listed:?}"
    );
    rzk(&zk, &["listquota", "/q"])
        .await
        .expect(3, "no quota")
        .one_error_line("no quota on /q");
    rzk(&zk, &["setquota", "-n", "1", "/zookeeper/quota/x"])
        .await
        .expect(2, "under the quota tree");

    // getAllChildrenNumber: the same count, by either name.
    let count = zkcli(&zk, &["getAllChildrenNumber", "/q"])
        .await
        .expect(0, "zkCli");
    assert_eq!(count.stdout.trim(), "3");
    let ours = rzk(&zk, &["children-count", "/q"])
        .await
        .expect(0, "children-count");
    assert_eq!(ours.stdout, "3\n");
    let alias = rzk(&zk, &["getAllChildrenNumber", "/q"])
        .await
        .expect(0, "alias");
    assert_eq!(alias.stdout, "3\n");

    // setacl -R: every node of the subtree, as zkCli's setAcl -R; zkCli reads it back. (The
    // admin permission stays, for zkCli to change it back.)
    rzk(&zk, &["setacl", "-R", "/q", "world:anyone:cdra"])
        .await
        .expect(0, "setacl -R");
    for node in ["/q", "/q/a", "/q/a/b", "/q/a/data"] {
        let acl = zkcli(&zk, &["getAcl", node])
            .await
            .expect(0, "zkCli getAcl");
        assert_eq!(acl.stdout, "'world,'anyone\n: cdra\n", "{node}");
    }
    zkcli(&zk, &["setAcl", "-R", "/q", "world:anyone:cdrwa"])
        .await
        .expect(0, "zkCli setAcl -R");
    let ours = rzk(&zk, &["getacl", "/q/a/b"]).await.expect(0, "getacl");
    assert_eq!(ours.stdout, "world:anyone:cdrwa\n");

    // deleteall -b: 25 children in transactions of 10; zkCli finds nothing left.
    create_node(&client, "/d", "").await;
    let creates: Vec<_> = (0..25)
        .map(|i| client.create(&format!("/d/n{i}"), "", &CreateOptions::persistent()))
        .collect();
    for create in creates {
        create.await.expect("create");
    }
    let json = rzk(&zk, &["deleteall", "-b", "10", "--json", "/d"])
        .await
        .expect(0, "deleteall -b")
        .json();
    assert_eq!(json["deleted"], 26);
    let gone = zkcli(&zk, &["stat", "/d"]).await.expect(1, "zkCli stat");
    assert!(gone.stderr.contains("Node does not exist: /d"), "{gone:?}");
    create_node(&client, "/d", "").await;
    create_node(&client, "/d/x", "").await;
    rzk(&zk, &["rm", "-r", "--batch", "1", "/d"])
        .await
        .expect(0, "rm -r --batch");
    assert!(client.exists("/d").await.expect("exists").is_none());

    // removewatches in a session without watches: both refuse (no such watcher).
    let theirs = zkcli(&zk, &["removewatches", "/q"])
        .await
        .expect(1, "zkCli");
    assert!(theirs.stderr.contains("No such watcher"), "{theirs:?}");
    rzk(&zk, &["removewatches", "/q"])
        .await
        .expect(1, "unwatch")
        .one_error_line("NoWatcher");

    // getEphemerals of a fresh session: none, for both.
    let theirs = zkcli(&zk, &["getEphemerals", "/"]).await.expect(0, "zkCli");
    assert_eq!(theirs.stdout.trim(), "[]");
    let ours = rzk(&zk, &["getEphemerals", "/"])
        .await
        .expect(0, "ephemerals");
    assert_eq!(ours.stdout, "");
}

/// Starts rzk with `args` and returns it with its stdout lines, once its first line (the
/// result) is out.
async fn watching(
    zk: &str,
    args: &[&str],
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    String,
) {
    let mut child = command(zk, args).spawn().expect("start");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = within("the result", LIMIT, lines.next_line())
        .await
        .expect("read")
        .expect("a line");
    (child, lines, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_watches_print_their_event_and_exit() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    create_node(&client, "/w", "one\n").await;

    let (get, mut lines, first) = watching(&zk, &["get", "-w", "/w"]).await;
    assert_eq!(first, "one");
    client.set_data("/w", "two", None).await.expect("set");
    let event = within("the event", LIMIT, lines.next_line())
        .await
        .expect("read");
    assert_eq!(event.as_deref(), Some("NodeDataChanged /w"));
    let status = within("get -w ends", LIMIT, finish(get, &["get -w"])).await;
    status.expect(0, "get -w");

    let (ls, mut lines, first) = watching(&zk, &["ls", "-w", "--json", "/w"]).await;
    assert_eq!(first, r#"{"children":[],"path":"/w"}"#);
    create_node(&client, "/w/c", "").await;
    let event = within("the event", LIMIT, lines.next_line())
        .await
        .expect("read");
    assert_eq!(
        event.as_deref(),
        Some(r#"{"type":"NodeChildrenChanged","path":"/w"}"#)
    );
    finish(ls, &["ls -w"]).await.expect(0, "ls -w");

    let mut stat = command(&zk, &["stat", "-w", "/w/c"])
        .spawn()
        .expect("start");
    let mut lines = BufReader::new(stat.stdout.take().expect("stdout")).lines();
    for _ in 0..11 {
        within("the Stat", LIMIT, lines.next_line())
            .await
            .expect("read");
    }
    client.delete("/w/c", None).await.expect("delete");
    let event = within("the event", LIMIT, lines.next_line())
        .await
        .expect("read");
    assert_eq!(event.as_deref(), Some("NodeDeleted /w/c"));
    finish(stat, &["stat -w"]).await.expect(0, "stat -w");
}

/// Runs rzk reconfig with `args` again while the leader answers with one of its documented
/// transient refusals (another reconfig in progress, no synced quorum yet).
async fn rzk_reconfig(zk: &str, args: &[&str]) -> Run {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut argv = vec!["reconfig"];
    argv.extend_from_slice(args);
    loop {
        let run = rzk(zk, &argv).await;
        let transient =
            run.stderr.contains("ReconfigInProgress") || run.stderr.contains("NewConfigNoQuorum");
        if !transient || Instant::now() > deadline {
            return run;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `server.N=` lines of a configuration, in order.
fn server_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("server."))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_and_reconfig_agree_with_zkcli() {
    let _serial = serial().await;
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    let zk = ensemble.connect_string();
    let client = connect(&zk).await;

    // config: zkCli's lines are rzk's --raw; the parsed form has the same members.
    let theirs = zkcli(&zk, &["config"]).await.expect(0, "zkCli config");
    let raw = rzk(&zk, &["config", "--raw"])
        .await
        .expect(0, "config --raw");
    assert_eq!(server_lines(&raw.stdout), server_lines(&theirs.stdout));
    let version = theirs
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("version="))
        .expect("a version")
        .to_owned();
    let json = rzk(&zk, &["config", "--json"])
        .await
        .expect(0, "config --json")
        .json();
    assert_eq!(json["version"], version.as_str());
    let members = json["members"].as_array().expect("members");
    assert_eq!(members.len(), 3);
    for (member, id) in members.iter().zip(1..) {
        assert_eq!(member["id"], id);
        assert_eq!(member["role"], "participant");
        let addr = ensemble.addr(id).to_string();
        assert_eq!(member["client"], addr.as_str());
    }
    // config -c: the members' client addresses; zkCli prints "VERSION host,host,..." in an
    // order of its own, rzk a connect string in the order of the members.
    let theirs_c = zkcli(&zk, &["config", "-c"])
        .await
        .expect(0, "zkCli config -c");
    let ours_c = rzk(&zk, &["config", "-c"]).await.expect(0, "config -c");
    let hosts = |text: &str| {
        let mut hosts: Vec<String> = text
            .split_whitespace()
            .last()
            .unwrap_or_default()
            .split(',')
            .map(str::to_owned)
            .collect();
        hosts.sort();
        hosts
    };
    assert_eq!(
        hosts(&ours_c.stdout),
        hosts(&theirs_c.stdout),
        "{theirs_c:?}"
    );
    assert!(theirs_c.stdout.starts_with(&version), "{theirs_c:?}");
    let text = rzk(&zk, &["config"]).await.expect(0, "config");
    assert!(
        text.stdout.starts_with(&format!("version {version}\n")),
        "{}",
        text.stdout
    );

    // A stale version is refused (conflict) and a server line the server cannot read is the
    // server's refusal (exit 1, BadArguments), not a usage error.
    rzk_reconfig(&zk, &["--remove", "3", "--from-config", "1"])
        .await
        .expect(4, "stale version")
        .one_error_line("BadVersion");
    rzk_reconfig(&zk, &["--add", "server.9=not-a-server-line"])
        .await
        .expect(1, "bad server line")
        .one_error_line("BadArguments");

    // Incremental, at the current version: server 4 joins; zkCli sees it.
    let e = Arc::clone(&ensemble);
    let joiner = started(blocking(move || e.spawn_joiner()).await);
    let run = rzk_reconfig(
        &zk,
        &["--add", &joiner.server_line, "--from-config", &version],
    )
    .await
    .expect(0, "reconfig --add");
    assert!(run.stdout.contains("server 4 "), "{}", run.stdout);
    let theirs = zkcli(&zk, &["config"]).await.expect(0, "zkCli config");
    assert!(
        server_lines(&theirs.stdout).contains(&joiner.server_line),
        "{}",
        theirs.stdout
    );

    // zkCli removes it; rzk sees that. rzk adds it back as the whole membership.
    let removed = zkcli(&zk, &["reconfig", "-remove", "4"])
        .await
        .expect(0, "zkCli reconfig");
    assert!(!removed.stdout.contains("server.4="), "{}", removed.stdout);
    let json = rzk(&zk, &["config", "--json"])
        .await
        .expect(0, "config")
        .json();
    assert_eq!(json["members"].as_array().map(Vec::len), Some(3));
    let mut all = server_lines(&read_config(&client).await);
    all.push(joiner.server_line.clone());
    let run = rzk_reconfig(&zk, &["--members", &all.join(",")])
        .await
        .expect(0, "reconfig --members");
    assert!(run.stdout.contains("server 4 "), "{}", run.stdout);
    assert_eq!(server_lines(&read_config(&client).await), all);

    // Incremental removal by id; zkCli agrees.
    rzk_reconfig(&zk, &["--remove", "4"])
        .await
        .expect(0, "reconfig --remove");
    let theirs = zkcli(&zk, &["config"]).await.expect(0, "zkCli config");
    assert_eq!(server_lines(&theirs.stdout).len(), 3, "{}", theirs.stdout);
}
