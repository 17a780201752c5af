//! `rzk server start|status|stop`: a local ZooKeeper that outlives the rzk that started it,
//! found again by `status` and `stop` through its directory's pid file, on the port asked
//! for; a missing Java or ZooKeeper is said with the install script to run.

mod support;

use std::net::TcpListener;
use std::path::Path;

use support::{command, finish, rzk};
use zk_testkit::client::serial;

/// Stops the server of `dir` when the test ends, also when it fails.
struct StopOnDrop<'a>(&'a Path);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.0.join("zookeeper.pid")) {
            let _ = std::process::Command::new("kill")
                .args(["-9", pid.trim()])
                .status();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_outlives_rzk_until_stopped() {
    let _serial = serial().await;
    let dir = support::scratch("server").join("zk");
    let _stop = StopOnDrop(&dir);
    let port = zk_testkit::free_port().expect("a free port").to_string();
    let server = format!("127.0.0.1:{port}");
    let dir_arg = dir.display().to_string();
    let args = |action: &'static str| ["server", action, "--port", &port, "--dir", &dir_arg];

    // Start: rzk returns once the server serves, and has exited; the server runs on. rzk's
    // own secret variables are set, and must not reach the server's JVM.
    let start_args = args("start");
    let mut start = support::command(&server, &start_args);
    start
        .env("RZK_AUTH", "digest:alice:not-for-the-server")
        .env("RZK_TLS_KEYSTORE_PASSWORD", "not-for-the-server-either");
    let run = support::finish(start.spawn().expect("start rzk"), &start_args)
        .await
        .expect(0, "start");
    assert_eq!(
        run.stdout
            .lines()
            .next()
            .map(|l| l.starts_with(&format!("running at {server} (pid "))),
        Some(true),
        "{}",
        run.stdout
    );
    rzk(&server, &["create", "/made", "here"])
        .await
        .expect(0, "a command against it");
    let run = rzk(&server, &["get", "/made"]).await.expect(0, "read back");
    assert_eq!(run.stdout, "here");

    // Start again: nothing more (the same pid); status says where it runs.
    let again = rzk(&server, &args("start")).await.expect(0, "start again");
    assert!(again.stderr.contains("already running"), "{}", again.stderr);
    let mut status_args = args("status").to_vec();
    status_args.push("--json");
    let status = rzk(&server, &status_args).await.expect(0, "status").json();
    assert_eq!(status["running"], true);
    assert_eq!(status["serving"], true);
    assert_eq!(status["address"], server.as_str());
    let pid = std::fs::read_to_string(dir.join("zookeeper.pid")).expect("pid file");
    assert_eq!(status["pid"].to_string(), pid.trim());
    let environ = std::fs::read(format!("/proc/{}/environ", pid.trim())).expect("its environment");
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        !environ.contains("RZK_AUTH") && !environ.contains("not-for-the-server"),
        "rzk's secrets reached the server's JVM"
    );

    // Stop: gone, the port free, status exit 3; the data stays for the next start.
    rzk(&server, &args("stop")).await.expect(0, "stop");
    rzk(&server, &args("status"))
        .await
        .expect(3, "status when stopped")
        .stdout
        .contains("not running")
        .then_some(())
        .expect("says not running");
    TcpListener::bind(("127.0.0.1", port.parse::<u16>().expect("port")))
        .expect("the port is free again");
    rzk(&server, &args("start"))
        .await
        .expect(0, "start after stop");
    let run = rzk(&server, &["get", "/made"])
        .await
        .expect(0, "the data kept");
    assert_eq!(run.stdout, "here");
    rzk(&server, &args("stop")).await.expect(0, "stop");
    assert!(!dir.join("zookeeper.pid").exists());

    // Without Java: said, with the script that installs it.
    let run = finish(
        command(&server, &args("start"))
            .env("ZK_JAVA", "/nonexistent/java")
            .spawn()
            .expect("start"),
        &["server start"],
    )
    .await
    .expect(1, "no java");
    run.one_error_line("scripts/install-deps.sh");

    // The default directory is per port under XDG_STATE_HOME.
    let state = support::scratch("server-state");
    let run = finish(
        command(&server, &["server", "status", "--port", &port, "--json"])
            .env("XDG_STATE_HOME", &state)
            .spawn()
            .expect("start"),
        &["server status"],
    )
    .await
    .expect(3, "status of a default directory");
    let expected = state.join(format!("rzk/server-{port}"));
    assert_eq!(run.json()["dir"], expected.display().to_string().as_str());
}
