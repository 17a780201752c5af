//! Runs every program of `examples/` against a real ZooKeeper server from the test kit: they
//! must exit successfully and print what their comments promise. An unfiltered `cargo test`
//! (as `scripts/test.sh` runs it) builds the examples' executables first; with `--test
//! examples` alone, build them with `cargo build -p zk-recipes --examples`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use zk_testkit::ZkServer;
use zk_testkit::client::start_server_with;

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
    let mut command = tokio::process::Command::from(Command::new(example(name)));
    command.arg(server.connect_string()).kill_on_drop(true);
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

    let out = run(&server, "barrier").await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    // Nobody leaves before everyone entered.
    let last_enter = lines.iter().rposition(|l| l.contains("entered"));
    let first_leave = lines.iter().position(|l| l.contains("left"));
    assert!(last_enter < first_leave, "{out}");
    assert_eq!(lines.last(), Some(&"the round is over"), "{out}");
}
