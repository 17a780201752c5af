//! How `rzk` fails: listings that print what they can read and name the nodes they could not
//! (`ls -R`, `tree`), errors as JSON on stderr with `--json`, a server's refusal of an
//! argument classed as a server error (not usage), and a session that expired worded as rzk
//! knows it.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{command, finish, rzk, signal, wait_stderr};
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_proto::acl::digest_acl;
use zk_proto::{CreateOptions, Perms};
use zk_testkit::client::{connect, create_node, serial, start_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_print_what_they_can_read_and_name_the_rest_at_the_end() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    create_node(&client, "/pub", "").await;
    create_node(&client, "/pub/a", "12345").await;
    let alice = digest_acl("alice", "secret", Perms::ALL).expect("acl");
    client
        .create(
            "/secret",
            "",
            &CreateOptions::persistent().with_acl(vec![alice.clone()]),
        )
        .await
        .expect("create /secret");
    client
        .create(
            "/zz",
            "",
            &CreateOptions::persistent().with_acl(vec![alice]),
        )
        .await
        .expect("create /zz");

    // ls -R: every readable node on stdout, then one line per unreadable node and a last
    // line, exit 5 (auth).
    let run = rzk(&zk, &["ls", "-R", "/"]).await.expect(5, "ls -R /");
    let nodes: Vec<&str> = run.stdout.lines().collect();
    for node in ["/", "/pub", "/secret", "/zz", "/pub/a", "/zookeeper"] {
        assert!(nodes.contains(&node), "{node} not in {nodes:?}");
    }
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(errors.len(), 3, "{}", run.stderr);
    assert!(errors[0].starts_with("rzk: ls -R /: cannot read /secret: NoAuth"));
    assert!(errors[1].starts_with("rzk: ls -R /: cannot read /zz: NoAuth"));
    assert!(
        errors[2].contains("2 nodes could not be read"),
        "{}",
        errors[2]
    );

    // tree: the same, the unreadable nodes marked in place.
    let run = rzk(&zk, &["tree", "/"]).await.expect(5, "tree /");
    assert!(
        run.stdout.contains("├── secret  (unreadable: NoAuth)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("│   └── a  [5 B]"), "{}", run.stdout);
    assert!(run.stderr.contains("cannot read /zz"), "{}", run.stderr);

    // With the credentials, everything is read: exit 0, nothing on stderr.
    let run = rzk(&zk, &["ls", "-R", "/", "--auth", "digest:alice:secret"])
        .await
        .expect(0, "ls -R / as alice");
    assert!(run.stderr.is_empty(), "{}", run.stderr);

    // --json: the listing on stdout names the unreadable nodes; every error on stderr is a
    // JSON object.
    let run = rzk(&zk, &["ls", "-R", "/", "--json"])
        .await
        .expect(5, "ls -R --json");
    let listing = run.json();
    assert_eq!(listing["unreadable"][0]["path"], "/secret");
    assert_eq!(listing["unreadable"][0]["class"], "auth");
    let errors: Vec<Value> = run
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(errors.len(), 3);
    assert_eq!(errors[0]["path"], "/secret");
    assert_eq!(errors[0]["status"], 5);
    assert_eq!(errors[2]["class"], "auth");
    let tree = rzk(&zk, &["tree", "/", "--json"])
        .await
        .expect(5, "tree --json");
    let tree = tree.json();
    let secret = tree["children"]
        .as_array()
        .and_then(|c| c.iter().find(|n| n["path"] == "/secret"))
        .expect("/secret in the tree");
    assert!(
        secret["error"]
            .as_str()
            .is_some_and(|e| e.contains("NoAuth")),
        "{secret}"
    );

    // Any failure is JSON on stderr with --json.
    let run = rzk(&zk, &["get", "/missing", "--json"])
        .await
        .expect(3, "get --json");
    let error: Value = serde_json::from_str(run.stderr.trim()).expect("a JSON error");
    assert_eq!(error["class"], "not-found");
    assert_eq!(error["status"], 3);
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|e| e.contains("/missing")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_not_said_to_be_the_servers_doing() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    // A watcher paused past its session timeout: when it runs again, its client finds that no
    // server answered for the whole timeout and gives the session up (or the server says it
    // expired it): rzk cannot tell which, and does not claim either.
    let mut watch = command(&zk, &["watch", "--session-timeout", "1s", "-v", "/w"])
        .spawn()
        .expect("start");
    let mut stderr = BufReader::new(watch.stderr.take().expect("stderr")).lines();
    // The watch is set: the session is up.
    wait_stderr(&mut stderr, "watching /w").await;
    signal(&watch, "STOP");
    // The pause's duration (the schedule of the fault): three of its 1 s session timeouts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    signal(&watch, "CONT");
    let stdout = watch.stdout.take();
    drop(stdout);
    finish(watch, &["watch"]).await.expect(6, "expired");
    // The rest of what it said, up to its exit.
    let mut said = String::new();
    while let Some(line) = stderr.next_line().await.expect("read stderr") {
        said.push_str(&line);
        said.push('\n');
    }
    assert!(said.contains("the session expired"), "{said}");
    assert!(!said.contains("by the server"), "{said}");
}
