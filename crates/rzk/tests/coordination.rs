//! `rzk leader`, `rzk gate`, `rzk barrier` and `rzk bench` run as a user would against a real
//! ZooKeeper server: the leadership failing over between two invocations and coming back,
//! gates and barriers opening when their count is reached, the benchmark's help and a tiny
//! run.

mod support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use support::{
    append, command, finish, lines, rzk, scratch, signal, until_terminated, wait_lines, with_script,
};
use zk_testkit::client::{children, connect, serial, start_server, wait_children};
use zk_testkit::fault::FaultProxy;

const LIMIT: Duration = Duration::from_secs(20);

/// A candidate's script: logs `<name> start`, runs until SIGTERM (then logs `<name>
/// stopped` and exits 0) or, with `until_stdin`, until its standard input closes (then logs
/// `<name> end`).
fn candidate(log: &std::path::Path, name: &str, until_stdin: bool) -> String {
    if until_stdin {
        format!(
            "{}; read line; {}",
            append(log, &format!("{name} start")),
            append(log, &format!("{name} end"))
        )
    } else {
        until_terminated(log, &format!("{name} start"), &format!("{name} stopped"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_fails_over_between_two_invocations_and_comes_back() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let dir = scratch("leader");
    let log = dir.join("log");

    // A leads, through a proxy the test can freeze.
    let script_a = candidate(&log, "A", false);
    let a = with_script(
        &proxy.connect_string(),
        &["leader", "--session-timeout", "4s", "--id", "A", "/svc"],
        &script_a,
    )
    .spawn()
    .expect("start A");
    wait_lines(&log, LIMIT, "A leads", |l| l == ["A start"]).await;

    // B stands behind it, straight to the server.
    let script_b = candidate(&log, "B", true);
    let mut b = with_script(
        &server.connect_string(),
        &["leader", "--id", "B", "/svc"],
        &script_b,
    )
    .stdin(Stdio::piped())
    .spawn()
    .expect("start B");
    wait_children(&client, "/svc", LIMIT, "B stands", |c| c.len() == 2).await;
    let election = rzk(&server.connect_string(), &["locks", "--json", "/svc"])
        .await
        .expect(0, "locks")
        .json();
    assert_eq!(election["recipe"], "latch");
    let who: Vec<(Value, Value)> = election["contenders"]
        .as_array()
        .expect("contenders")
        .iter()
        .map(|c| (c["role"].clone(), c["data"].clone()))
        .collect();
    assert_eq!(
        who,
        [
            (Value::from("leader"), Value::from("A")),
            (Value::from("candidate"), Value::from("B"))
        ]
    );
    assert_eq!(lines(&log), ["A start"], "B does not run while A leads");

    // A's connection goes silent: A stops its command when it gives the connection up, B
    // leads once the server expired A's session.
    proxy.freeze();
    wait_lines(&log, LIMIT, "B leads", |l| {
        l.last().is_some_and(|l| l == "B start")
    })
    .await;
    assert_eq!(lines(&log), ["A start", "A stopped", "B start"]);

    // A comes back with a new session and stands again, behind B.
    proxy.thaw();
    wait_children(&client, "/svc", LIMIT, "A stands again", |c| c.len() == 2).await;
    // B's command ends: B leaves the election with its status, A leads again.
    drop(b.stdin.take());
    finish(b, &["B"]).await.expect(0, "B's command's status");
    wait_lines(&log, LIMIT, "A leads again", |l| l.len() == 5).await;
    assert_eq!(lines(&log)[3..], ["B end", "A start"]);

    // SIGTERM to rzk reaches the command; rzk leaves the election.
    signal(&a, "TERM");
    let run = finish(a, &["A"]).await.expect(0, "A's command's status");
    assert!(
        run.stderr.contains("the leadership of /svc is lost"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("standing again"), "{}", run.stderr);
    assert_eq!(lines(&log).last().map(String::as_str), Some("A stopped"));
    assert!(children(&client, "/svc").await.is_empty(), "nobody stands");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_exit_on_loss_exits_with_status_7() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let dir = scratch("exit-on-loss");
    let log = dir.join("log");
    let script = candidate(&log, "A", false);
    let a = with_script(
        &proxy.connect_string(),
        &[
            "leader",
            "--session-timeout",
            "3s",
            "--exit-on-loss",
            "/svc",
        ],
        &script,
    )
    .spawn()
    .expect("start");
    wait_lines(&log, LIMIT, "A leads", |l| l.len() == 1).await;
    proxy.freeze();
    finish(a, &["leader --exit-on-loss"])
        .await
        .expect(7, "lost");
    assert_eq!(lines(&log), ["A start", "A stopped"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_opens_when_its_count_joined_and_barriers_run_together() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;

    // Two of three joined: both wait.
    let mut waiting: Vec<_> = (0..2)
        .map(|_| {
            command(&zk, &["gate", "--json", "/g", "3"])
                .spawn()
                .expect("start")
        })
        .collect();
    wait_children(&client, "/g", LIMIT, "two members", |c| c.len() == 2).await;
    for member in &mut waiting {
        assert!(
            member.try_wait().expect("try_wait").is_none(),
            "a member went early"
        );
    }
    let third = rzk(&zk, &["gate", "--json", "/g", "3"])
        .await
        .expect(0, "the third");
    let mut created = vec![third.json()["created_start"].clone()];
    for member in waiting {
        let run = finish(member, &["gate"]).await.expect(0, "a member");
        assert_eq!(run.json()["started"], true);
        created.push(run.json()["created_start"].clone());
    }
    assert_eq!(
        created.iter().filter(|c| **c == Value::Bool(true)).count(),
        1
    );
    let reset = rzk(&zk, &["gate", "--reset", "--json", "/g"])
        .await
        .expect(0, "reset");
    assert_eq!(reset.json()["reset"], true);
    assert!(client.exists("/g/start").await.expect("exists").is_none());

    // A gate that does not fill up: timeout, and the member is gone.
    let run = rzk(&zk, &["gate", "--timeout", "300ms", "/lonely", "2"]).await;
    run.expect(8, "gate --timeout")
        .one_error_line("not done within 300ms");
    assert!(children(&client, "/lonely").await.is_empty());

    // A double barrier: the command runs once both entered; each exits with its status.
    let dir = scratch("barrier");
    let log = dir.join("log");
    let script = |name: &str, status: u8| format!("{}; exit {status}", append(&log, name));
    let first = with_script(&zk, &["barrier", "/b", "2"], &script("first", 0))
        .spawn()
        .expect("start");
    wait_children(&client, "/b", LIMIT, "the first entered", |c| c.len() == 1).await;
    assert!(lines(&log).is_empty(), "ran before the second entered");
    let second = rzk(
        &zk,
        &["barrier", "/b", "2", "--", "sh", "-c", &script("second", 4)],
    )
    .await;
    second.expect(4, "the second's status");
    finish(first, &["barrier"])
        .await
        .expect(0, "the first's status");
    let mut ran = lines(&log);
    ran.sort();
    assert_eq!(ran, ["first", "second"]);
}

// `rzk bench` is in rzk only with the feature `bench` (scripts/test.sh runs this with it).
#[cfg(feature = "bench")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_prints_its_help_and_measures_a_server() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let help = rzk(&zk, &["bench", "--help"])
        .await
        .expect(0, "bench --help");
    assert!(
        help.stdout.starts_with("usage: rzk bench [options]"),
        "{}",
        help.stdout
    );
    assert!(help.stdout.contains("--connect"));
    rzk(&zk, &["bench", "--bogus"])
        .await
        .expect(2, "bench --bogus")
        .one_error_line("--bogus");
    let run = rzk(
        &zk,
        &[
            "--json",
            "bench",
            "--connect",
            &zk,
            "--only",
            "raw_get",
            "--scale",
            "0.01",
            "--compare",
            "none",
            "--quiet",
        ],
    )
    .await
    .expect(0, "a tiny run");
    let metrics = run.json_lines();
    assert_eq!(metrics.len(), 1, "{}", run.stdout);
    assert_eq!(metrics[0]["metric"], "raw_get");
    assert!(
        metrics[0]["n"].as_f64().is_some_and(|n| n >= 1.0),
        "{}",
        run.stdout
    );
}

/// Each leader's command gets `RZK_FENCING_TOKEN`, and it grows from one leader to the next,
/// also when the first stands again; `rzk locks` shows the same number for the leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_leader_gets_a_larger_fencing_token() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let dir = scratch("leader-token");
    let log = dir.join("log");
    let script = |name: &str| {
        until_terminated(
            &log,
            &format!("{name} start $RZK_FENCING_TOKEN"),
            &format!("{name} stopped"),
        )
    };
    let first = with_script(&zk, &["leader", "/e"], &script("1"))
        .spawn()
        .expect("start the first");
    wait_lines(&log, LIMIT, "the first leads", |l| l.len() == 1).await;
    let second = with_script(&zk, &["leader", "/e"], &script("2"))
        .spawn()
        .expect("start the second");
    wait_children(&client, "/e", LIMIT, "the second stands", |c| c.len() == 2).await;
    let locks = rzk(&zk, &["locks", "/e"]).await.expect(0, "locks");
    let first_token = token_of(&lines(&log)[0]);
    assert!(
        locks.stdout.contains(&format!("token {first_token} ")),
        "{}",
        locks.stdout
    );
    signal(&first, "TERM");
    finish(first, &["first"]).await.expect(0, "the first");
    wait_lines(&log, LIMIT, "the second leads", |l| l.len() == 3).await;
    signal(&second, "TERM");
    finish(second, &["second"]).await.expect(0, "the second");
    let third = with_script(&zk, &["leader", "/e"], &script("3"))
        .spawn()
        .expect("start the third");
    wait_lines(&log, LIMIT, "the third leads", |l| l.len() == 5).await;
    signal(&third, "TERM");
    finish(third, &["third"]).await.expect(0, "the third");
    let log = lines(&log);
    let tokens: Vec<i64> = [&log[0], &log[2], &log[4]]
        .iter()
        .map(|l| token_of(l))
        .collect();
    assert!(
        tokens[0] > 0 && tokens[0] < tokens[1] && tokens[1] < tokens[2],
        "{log:?}"
    );
}

/// The fencing token a log line `<who> start <token>` carries.
fn token_of(line: &str) -> i64 {
    line.rsplit(' ')
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no token in {line:?}"))
}
