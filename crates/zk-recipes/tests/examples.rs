//! Runs every program of `examples/` against a real ZooKeeper server from the test kit: they
//! must exit successfully and print what their comments promise. With no server, they must
//! fail at once with one readable line. An unfiltered `cargo test`
//! (as `scripts/test.sh` runs it) builds the examples' executables first; with `--test
//! examples` alone, build them with `cargo build -p zk-recipes --examples`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use zk_testkit::client::start_server_with;
use zk_testkit::{ClientAuth, ZkServer};

/// An example's executable: `target/<profile>/examples/<name>`, beside this test's directory.
fn example(name: &str) -> PathBuf {
    let test_exe = std::env::current_exe().expect("the test's path");
    let profile_dir = test_exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps/<test>");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.is_file(),
        "{} is missing: run the examples' tests with `cargo test` (which builds them)",
        path.display()
    );
    path
}

/// Runs example `name` against `server` (bounded) and returns its standard output.
async fn run(server: &ZkServer, name: &str) -> String {
    run_with(name, &[server.connect_string()]).await
}

/// Runs example `name` with `args` (bounded) and returns its standard output.
async fn run_with(name: &str, args: &[String]) -> String {
    let mut command = tokio::process::Command::from(Command::new(example(name)));
    command.args(args).kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .unwrap_or_else(|_| panic!("example {name} did not finish within 60 s"))
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "example {name} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_runs_against_a_real_server() {
    let server = start_server_with(ZkServer::builder()).await;

    let out = run(&server, "get_set_watch").await;
    assert!(out.contains("read \"hello\" (version 0)"), "{out}");
    assert!(
        out.contains("watch fired: NodeDataChanged on /example-greeting"),
        "{out}"
    );
    assert!(out.contains("read \"hi\" (version 1)"), "{out}");

    let out = run(&server, "lock").await;
    let order: Vec<&str> = out
        .lines()
        .map(|l| l.split(',').next().unwrap_or(l))
        .collect();
    assert_eq!(
        order,
        [
            "alice holds the lock",
            "alice released",
            "bob holds the lock",
            "bob released; tokens increased"
        ],
        "{out}"
    );

    let out = run(&server, "leader_latch").await;
    let expected: Vec<String> = ["first", "second"]
        .iter()
        .flat_map(|name| {
            (1..=3)
                .map(move |step| format!("{name} leads: step {step}"))
                .chain([format!("{name} finished its work; stepping down")])
        })
        .collect();
    assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");

    let out = run(&server, "persistent_watch").await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "watching /example-tree and everything under it",
            "NodeCreated on /example-tree/a",
            "NodeDataChanged on /example-tree/a",
            "NodeDeleted on /example-tree/a",
            "watch removed",
        ],
        "{out}"
    );

    let out = run(&server, "multi").await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "created 2 nodes in one transaction",
            "the transaction failed (BadVersion (-103): version conflict), nothing applied",
            "/example-config holds \"v1\" (version 0)",
            "/example-config-ready has 0 children",
        ],
        "{out}"
    );

    let out = run(&server, "tree_cache").await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "loaded 2 nodes",
            "db is at 10.0.0.5:5432 (read from the cache)",
            "added /example-services/api",
            "done",
        ],
        "{out}"
    );

    let out = run(&server, "barrier").await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    // Nobody leaves before everyone entered.
    let last_enter = lines.iter().rposition(|l| l.contains("entered"));
    let first_leave = lines.iter().position(|l| l.contains("left"));
    assert!(last_enter < first_leave, "{out}");
    assert_eq!(lines.last(), Some(&"the round is over"), "{out}");
}

/// Over TLS with a client certificate, against a server that requires one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tls_example_connects_with_a_client_certificate() {
    let server = start_server_with(ZkServer::builder().tls(ClientAuth::Need)).await;
    let certs = server.tls_certs().expect("a TLS server has certificates");
    let path = |p: std::path::PathBuf| p.display().to_string();
    let args = [
        server.tls_connect_string().expect("a secure port"),
        path(certs.ca()),
        path(certs.client_cert()),
        path(certs.client_key()),
    ];
    let out = run_with("tls", &args).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("connected over TLS: session 0x"),
        "{out}"
    );
    assert_eq!(lines[1..], ["read / (version 0)", "closed"], "{out}");
}

/// Every example that takes only a connect string, as a newcomer runs it first.
const EXAMPLES: [&str; 7] = [
    "get_set_watch",
    "persistent_watch",
    "multi",
    "tree_cache",
    "lock",
    "leader_latch",
    "barrier",
];

/// Runs example `name` against `connect`, where no ZooKeeper server answers, and checks that it
/// fails within `limit` with exactly one line on standard error, which names the address and
/// says how to start a server (not a `Debug` dump after the 30 s of the default connect
/// timeout). Returns that line.
async fn run_without_server(name: &str, connect: &str, limit: Duration) -> String {
    let mut command = tokio::process::Command::from(Command::new(example(name)));
    command.arg(connect).kill_on_drop(true);
    let started = Instant::now();
    let output = tokio::time::timeout(limit, command.output())
        .await
        .unwrap_or_else(|_| panic!("example {name} with no server ran for more than {limit:?}"))
        .expect("run the example");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let context = format!(
        "example {name} against {connect}, after {:?}, {}; stderr:\n{stderr}",
        started.elapsed(),
        output.status
    );
    assert_eq!(output.status.code(), Some(1), "{context}");
    assert!(output.stdout.is_empty(), "{context}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{context}");
    let prefix = format!("error: no ZooKeeper server answered at {connect}");
    assert!(lines[0].starts_with(&prefix), "{context}");
    assert!(lines[0].contains("`rzk server start`"), "{context}");
    assert!(
        !lines[0].contains("NoServerReachable"),
        "not Debug: {context}"
    );
    lines[0].to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_fails_at_once_with_one_line_when_no_server_answers() {
    // A port nothing listens on: connections are refused, so fail-fast ends them at once.
    let refused = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        listener.local_addr().expect("its address")
    };
    for name in EXAMPLES {
        let line = run_without_server(name, &refused.to_string(), Duration::from_secs(3)).await;
        assert_eq!(
            line,
            format!(
                "error: no ZooKeeper server answered at {refused} \
                 (start one with `rzk server start`, or pass a connect string)"
            ),
            "a refused connection needs no more words"
        );
    }

    // A port that accepts connections but never answers the handshake: the examples' connect
    // timeout (5 s) ends it, and the line names the last failure.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let silent_addr = silent.local_addr().expect("its address").to_string();
    let line = run_without_server("get_set_watch", &silent_addr, Duration::from_secs(10)).await;
    assert!(line.contains("the handshake timed out"), "{line}");
    drop(silent);
}
