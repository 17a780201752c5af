//! The node, ACL and watch commands of the `rzk` binary, run as a user would against a real
//! ZooKeeper server (the test kit's), checked with a client of the test's own: what they
//! print (text and JSON), what they change, and their exit statuses.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{Run, command, finish, rzk, rzk_with_input, signal, wait_stderr};
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_proto::acl::{digest_acl, world_acl};
use zk_proto::{CreateOptions, Perms};
use zk_testkit::client::{children, connect, serial, start_server, within};

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_commands_write_and_read_as_a_user_would() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;

    // create: plain, with parents, from stdin, sequential; prints the path.
    let run = rzk(&zk, &["create", "/app", "v1"])
        .await
        .expect(0, "create");
    assert_eq!(run.stdout, "/app\n");
    rzk(&zk, &["create", "-p", "/app/config/db", "host=a"])
        .await
        .expect(0, "create -p");
    let run = rzk_with_input(&zk, &["create", "/app/blob", "-"], &[0xff, 0x00, b'x']).await;
    run.expect(0, "create from stdin");
    let run = rzk(&zk, &["create", "-s", "--json", "/app/job-", "j"])
        .await
        .expect(0, "create -s");
    let created = run.json();
    let seq_path = created["path"].as_str().expect("path").to_owned();
    assert!(seq_path.starts_with("/app/job-") && seq_path.len() == "/app/job-".len() + 10);
    assert_eq!(created["stat"]["data_length"], 1);
    let run = rzk(&zk, &["create", "-c", "/app/container"])
        .await
        .expect(0, "create -c");
    assert_eq!(run.stdout, "/app/container\n");
    let (data, _) = client.get_data("/app/config/db").await.expect("read back");
    assert_eq!(&data[..], b"host=a");

    // get: raw bytes as stored (not a terminal: no newline added); JSON: text or base64.
    let run = rzk(&zk, &["get", "/app"]).await.expect(0, "get");
    assert_eq!(run.stdout, "v1");
    let json = rzk(&zk, &["get", "--json", "/app"])
        .await
        .expect(0, "get --json")
        .json();
    assert_eq!(json["data"], "v1");
    assert_eq!(json["path"], "/app");
    assert_eq!(json["stat"]["version"], 0);
    let json = rzk(&zk, &["get", "/app/blob", "--json"])
        .await
        .expect(0, "get binary")
        .json();
    assert_eq!(json["data"], Value::Null);
    assert_eq!(json["data_base64"], "/wB4");

    // set: from an argument, from stdin, at a version.
    rzk(&zk, &["set", "/app", "v2"]).await.expect(0, "set");
    let json = rzk_with_input(&zk, &["set", "--json", "/app", "-"], b"v3\n")
        .await
        .expect(0, "set from stdin")
        .json();
    assert_eq!(json["stat"]["version"], 2);
    rzk(&zk, &["set", "--version", "2", "/app", "v4"])
        .await
        .expect(0, "set at version");
    let (data, stat) = client.get_data("/app").await.expect("read back");
    assert_eq!((&data[..], stat.version), (&b"v4"[..], 3));

    // stat: text with the shell's names, JSON with every field.
    let run = rzk(&zk, &["stat", "/app"]).await.expect(0, "stat");
    assert!(run.stdout.contains("dataVersion = 3"), "{}", run.stdout);
    assert!(
        run.stdout.contains("ephemeralOwner = 0x0"),
        "{}",
        run.stdout
    );
    let json = rzk(&zk, &["stat", "/app", "--json"])
        .await
        .expect(0, "stat --json")
        .json();
    assert_eq!(json["stat"]["version"], 3);
    assert_eq!(json["stat"]["czxid"], stat.czxid);
    assert_eq!(json["stat"]["num_children"], 4);

    // ls, ls -R, in text and JSON.
    let run = rzk(&zk, &["ls", "/app"]).await.expect(0, "ls");
    let job = seq_path.trim_start_matches("/app/");
    assert_eq!(run.stdout, format!("blob\nconfig\ncontainer\n{job}\n"));
    let json = rzk(&zk, &["ls", "--json", "/app"])
        .await
        .expect(0, "ls --json")
        .json();
    assert_eq!(json["children"].as_array().map(Vec::len), Some(4));
    let run = rzk(&zk, &["ls", "-R", "/app/config"])
        .await
        .expect(0, "ls -R");
    assert_eq!(run.stdout, "/app/config\n/app/config/db\n");
    let json = rzk(&zk, &["ls", "-R", "--json", "/app"])
        .await
        .expect(0, "ls -R --json")
        .json();
    assert_eq!(json["nodes"].as_array().map(Vec::len), Some(6));

    // tree: indented, with sizes; JSON nested.
    let run = rzk(&zk, &["tree", "/app"]).await.expect(0, "tree");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "/app  [2 B]");
    assert!(lines.contains(&"├── config  [0 B]"), "{}", run.stdout);
    assert!(lines.contains(&"│   └── db  [6 B]"), "{}", run.stdout);
    assert_eq!(lines.last(), Some(&"6 nodes, 12 B of data"));
    let json = rzk(&zk, &["tree", "--json", "/app"])
        .await
        .expect(0, "tree --json")
        .json();
    assert_eq!(json["path"], "/app");
    let config = json["children"]
        .as_array()
        .and_then(|c| c.iter().find(|n| n["path"] == "/app/config"))
        .expect("config in the tree");
    assert_eq!(config["children"][0]["data_length"], 6);
    let run = rzk(&zk, &["tree", "--max-depth", "1", "/app"])
        .await
        .expect(0, "tree --max-depth");
    assert!(
        run.stdout.contains("config  [0 B] (+1 children)"),
        "{}",
        run.stdout
    );

    // sync.
    let json = rzk(&zk, &["sync", "/app", "--json"])
        .await
        .expect(0, "sync")
        .json();
    assert_eq!(json["synced"], true);

    // rm: one node at a version, then a subtree.
    rzk(&zk, &["rm", "--version", "0", "/app/blob"])
        .await
        .expect(0, "rm at version");
    let json = rzk(&zk, &["rm", "-r", "--json", "/app"])
        .await
        .expect(0, "rm -r")
        .json();
    assert_eq!(json["deleted"], 5);
    assert!(client.exists("/app").await.expect("exists").is_none());
    assert_eq!(children(&client, "/").await, ["zookeeper"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_class_of_failure_has_its_exit_status_and_one_line() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    client
        .create("/full", "x", &CreateOptions::persistent())
        .await
        .expect("create");
    client
        .create("/full/child", "", &CreateOptions::persistent())
        .await
        .expect("create");

    // 3: not found.
    for args in [
        &["get", "/missing"][..],
        &["stat", "/missing"],
        &["ls", "/missing"],
        &["rm", "/missing"],
        &["set", "/missing", "x"],
        &["getacl", "/missing"],
        &["locks", "/missing"],
    ] {
        rzk(&zk, args)
            .await
            .expect(3, &format!("{args:?}"))
            .one_error_line("/missing");
    }
    let run = rzk(&zk, &["create", "/missing/child"])
        .await
        .expect(3, "create without parent");
    run.one_error_line("-p creates it");

    // 4: conflict.
    rzk(&zk, &["create", "/full"])
        .await
        .expect(4, "create existing")
        .one_error_line("NodeExists");
    rzk(&zk, &["rm", "/full"])
        .await
        .expect(4, "rm non-empty")
        .one_error_line("NotEmpty");
    rzk(&zk, &["set", "--version", "7", "/full", "y"])
        .await
        .expect(4, "set at a wrong version")
        .one_error_line("BadVersion");

    // 2: usage; checked before anything is sent: the server address is never dialled (an
    // address where nothing listens would be a connection failure, 6).
    let nowhere = format!("127.0.0.1:{}", zk_testkit::free_port().expect("free port"));
    for (args, says) in [
        (&["get", "/a//b"][..], "empty segment"),
        (&["get", "a"], "must start with '/'"),
        (&["create", "/a/"], "must not end with '/'"),
        (&["rm", "-r", "/"], "root"),
        (&["setacl", "/a", "world:anyone:rx"], "invalid permission"),
        (&["lock", "/a/../b", "--", "true"], "relative segment"),
        (
            &["lock", "/l", "--once", "done", "--", "true"],
            "must start with '/'",
        ),
        (
            &["get", "/a", "--auth", "digest:nopassword"],
            "user:password",
        ),
        (&["get", "/a", "--chroot", "app"], "chroot"),
    ] {
        rzk(&nowhere, args)
            .await
            .expect(2, &format!("{args:?}"))
            .one_error_line(says);
    }
    rzk(&zk, &["get", "/a", "--session-timeout", "soon"])
        .await
        .expect(2, "bad duration");
    rzk(&zk, &["get", "/a", "--session-timeout", "1ms"])
        .await
        .expect(2, "too short a session")
        .one_error_line("at least 100ms");
    rzk(&zk, &["frobnicate"]).await.expect(2, "unknown command");
    rzk("not a connect string:x", &["get", "/a"])
        .await
        .expect(2, "bad connect string")
        .one_error_line("invalid --server");

    // 6: connection.
    let run = rzk(&nowhere, &["get", "/a", "--connect-timeout", "5s"]).await;
    run.expect(6, "nobody listening")
        .one_error_line("cannot connect");

    // 5: auth. A node readable only by digest user alice.
    let alice = digest_acl("alice", "secret", Perms::ALL).expect("acl");
    client
        .create(
            "/private",
            "p",
            &CreateOptions::persistent().with_acl(vec![alice]),
        )
        .await
        .expect("create");
    rzk(&zk, &["get", "/private"])
        .await
        .expect(5, "no auth")
        .one_error_line("NoAuth");
    let run = rzk(&zk, &["get", "/private", "--auth", "digest:alice:wrong"]).await;
    run.expect(5, "wrong password").one_error_line("NoAuth");
    let run = rzk(&zk, &["get", "/private", "--auth", "digest:alice:secret"]).await;
    assert_eq!(run.expect(0, "alice").stdout, "p");

    // 0, with the help listing every status.
    let run = rzk(&zk, &["--help"]).await.expect(0, "help");
    for status in ["  3 ", "  4 ", "  5 ", "  6 ", "  7 ", "  8 "] {
        assert!(run.stdout.contains(status), "help without {status:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_identities_chroot_and_the_environment() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    client
        .create("/shared", "s", &CreateOptions::persistent())
        .await
        .expect("create");

    let run = rzk(&zk, &["getacl", "/shared"]).await.expect(0, "getacl");
    assert_eq!(run.stdout, "world:anyone:cdrwa\n");
    rzk(
        &zk,
        &[
            "setacl",
            "/shared",
            "world:anyone:r,auth::cdrwa",
            "--auth",
            "digest:bob:pw",
        ],
    )
    .await
    .expect(0, "setacl");
    let json = rzk(&zk, &["getacl", "--json", "/shared"])
        .await
        .expect(0, "getacl --json")
        .json();
    assert_eq!(json["aversion"], 1);
    let acl = json["acl"].as_array().expect("acl");
    assert_eq!(acl.len(), 2);
    assert_eq!(acl[0]["scheme"], "world");
    assert_eq!(acl[0]["perms"], "r");
    assert_eq!(acl[1]["scheme"], "digest");
    assert!(
        acl[1]["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("bob:"))
    );
    let (read, _) = client.get_acl("/shared").await.expect("getACL");
    assert_eq!(read[0], world_acl(Perms::READ));
    // Now only bob may write; anyone may read.
    rzk(&zk, &["set", "/shared", "x"])
        .await
        .expect(5, "write without auth");
    rzk(&zk, &["get", "/shared"])
        .await
        .expect(0, "read without auth");
    rzk(
        &zk,
        &[
            "setacl",
            "--version",
            "0",
            "/shared",
            "world:anyone:cdrwa",
            "--auth",
            "digest:bob:pw",
        ],
    )
    .await
    .expect(4, "setacl at an old version");

    // whoami: the session's identities.
    let run = rzk(&zk, &["whoami"]).await.expect(0, "whoami");
    assert_eq!(run.stdout, "ip 127.0.0.1\n");
    let json = rzk(&zk, &["whoami", "--json", "--auth", "digest:bob:pw"])
        .await
        .expect(0, "whoami")
        .json();
    let ids = json["identities"].as_array().expect("identities");
    assert!(
        ids.iter()
            .any(|i| i["scheme"] == "digest" && i["user"] == "bob"),
        "{json}"
    );

    // The connect string from ZOOKEEPER; credentials from RZK_AUTH; a chroot.
    let run = finish(
        command(&zk, &["whoami"])
            .env("RZK_AUTH", "digest:carol:pw")
            .spawn()
            .expect("start"),
        &["whoami"],
    )
    .await
    .expect(0, "RZK_AUTH");
    assert!(run.stdout.contains("digest carol"), "{}", run.stdout);
    client
        .create("/tenant", "", &CreateOptions::persistent())
        .await
        .expect("the chroot");
    let mut from_env = tokio::process::Command::new(support::RZK);
    from_env
        .args(["create", "-p", "--chroot", "/tenant", "/x", "in-chroot"])
        .env("ZOOKEEPER", &zk)
        .env_remove("RZK_AUTH")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let run = finish(from_env.spawn().expect("start"), &["create"]).await;
    assert_eq!(run.expect(0, "ZOOKEEPER and --chroot").stdout, "/x\n");
    let (data, _) = client
        .get_data("/tenant/x")
        .await
        .expect("under the chroot");
    assert_eq!(&data[..], b"in-chroot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_each_change_made_by_another_client() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;

    // One node, JSON, until interrupted.
    let mut watch = command(&zk, &["watch", "--json", "-v", "/cfg"])
        .spawn()
        .expect("start");
    let mut stderr = BufReader::new(watch.stderr.take().expect("stderr")).lines();
    let mut stdout = BufReader::new(watch.stdout.take().expect("stdout")).lines();
    wait_stderr(&mut stderr, "watching /cfg").await;
    client
        .create("/cfg", "a", &CreateOptions::persistent())
        .await
        .expect("create");
    client.set_data("/cfg", "b", None).await.expect("set");
    let mut events = Vec::new();
    for _ in 0..2 {
        let line = within("an event", LIMIT, stdout.next_line())
            .await
            .expect("read")
            .expect("a line");
        let event: Value = serde_json::from_str(&line).expect("JSON event");
        events.push((event["type"].clone(), event["path"].clone()));
    }
    assert_eq!(
        events,
        [
            (Value::from("NodeCreated"), Value::from("/cfg")),
            (Value::from("NodeDataChanged"), Value::from("/cfg")),
        ]
    );
    signal(&watch, "INT");
    let status = within("watch ends on SIGINT", LIMIT, watch.wait())
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(0), "interrupted watch exits 0");

    // A subtree, text, a fixed number of events.
    let mut subtree = command(&zk, &["watch", "-R", "-v", "--count", "2", "/tree"])
        .spawn()
        .expect("start");
    let mut stderr = BufReader::new(subtree.stderr.take().expect("stderr")).lines();
    wait_stderr(&mut stderr, "watching /tree and its subtree").await;
    client
        .create("/tree", "", &CreateOptions::persistent())
        .await
        .expect("create");
    client
        .create("/tree/leaf", "", &CreateOptions::persistent())
        .await
        .expect("create");
    let run: Run = finish(subtree, &["watch", "-R"])
        .await
        .expect(0, "watch --count 2");
    assert_eq!(run.stdout, "NodeCreated /tree\nNodeCreated /tree/leaf\n");
}
