//! The interactive shell, driven through a pseudo-terminal (rexpect) as a person would type:
//! tab completion of node paths listed from the server, history kept across two runs (and
//! credentials kept out of it), a watch event printed above the prompt as it fires, zkCli's
//! commands on the shell's one session (getEphemerals, addauth, removewatches), `close` and
//! `connect` shown in the prompt, and how long the shell takes to show its first prompt.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use rexpect::session::{PtySession, spawn_command};
use zk_testkit::client::{blocking, connect, create_node, mkdirs, serial, start_server};

/// How long one expectation may wait.
const EXPECT_MS: u64 = 15_000;

/// `rzk` with no command against `server`, its history in `history`, on a terminal.
fn shell(server: &str, history: &Path) -> PtySession {
    let mut command = std::process::Command::new(support::RZK);
    command
        .arg("--server")
        .arg(server)
        .env("RZK_HISTORY", history)
        .env("TERM", "xterm")
        .env_remove("ZOOKEEPER")
        .env_remove("RZK_AUTH");
    spawn_command(command, Some(EXPECT_MS)).expect("start the shell on a pty")
}

/// Runs `line` at the prompt: waits for `output` (if any), then for the next prompt (a line
/// typed before the prompt is up may be dropped when the editor sets up the terminal).
fn run(sh: &mut PtySession, line: &str, output: Option<&str>) {
    sh.send_line(line).expect(line);
    if let Some(output) = output {
        sh.exp_string(output)
            .unwrap_or_else(|e| panic!("{line}: {output:?} not printed: {e}"));
    }
    sh.exp_regex(r"\(\w+\) \d+\] ")
        .unwrap_or_else(|e| panic!("{line}: no prompt after it: {e}"));
}

/// Types `text` (flushed to the terminal at once).
fn typed(sh: &mut PtySession, text: &str, what: &str) {
    sh.send(text).expect(what);
    sh.flush().expect(what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_completes_remembers_and_prints_watches_as_they_fire() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    mkdirs(&client, "/app").await;
    create_node(&client, "/app/config", "cfg-data").await;
    create_node(&client, "/other", "").await;
    let history = support::scratch("shell").join("history");

    // First run.
    let (zk_first, history_first) = (zk.clone(), history.clone());
    let watcher = client.clone();
    let started = blocking(move || {
        let zk = zk_first;
        let history = history_first;
        let start = Instant::now();
        let mut sh = shell(&zk, &history);
        let prompt = format!("[rzk: {zk}(CONNECTED) 0] ");
        sh.exp_string(&prompt).expect("the first prompt");
        let startup = start.elapsed();

        // Completion: /ap<Tab> lists / on the server and completes /app; /co<Tab> lists
        // /app and completes /app/config; the command then reads the node.
        typed(&mut sh, "get /ap", "type");
        typed(&mut sh, "\t", "tab");
        sh.exp_string("/app").expect("completed /app");
        typed(&mut sh, "/co\t", "type, tab");
        sh.exp_string("/app/config").expect("completed /app/config");
        typed(&mut sh, "\r", "enter");
        sh.exp_string("cfg-data")
            .expect("the data of the completed path");
        sh.exp_string("(CONNECTED) 1] ").expect("the next prompt");

        // A one-shot watch: its event is printed when it fires, while the prompt waits.
        sh.send_line("get -w /app/config").expect("get -w");
        sh.exp_string("(CONNECTED) 2] ")
            .expect("prompt after get -w");
        (sh, startup)
    })
    .await;
    let (sh, startup) = started;
    eprintln!("shell startup to the first prompt (debug build): {startup:.2?}");
    assert!(
        startup < Duration::from_secs(2),
        "the first prompt took {startup:?}"
    );
    watcher
        .set_data("/app/config", "changed", None)
        .await
        .expect("set");
    let zk_again = zk.clone();
    let sh = blocking(move || {
        let mut sh = sh;
        sh.exp_string("WATCHER: NodeDataChanged /app/config")
            .expect("the event, printed as it fired");

        // The session's own commands: its ephemerals, credentials, its watches.
        run(&mut sh, "create -e /app/eph", Some("/app/eph"));
        run(&mut sh, "getEphemerals /app", Some("/app/eph"));
        run(&mut sh, "addauth digest alice:secret", None);
        run(&mut sh, "whoami", Some("digest alice"));
        run(&mut sh, "ls -w /app", Some("config"));
        run(&mut sh, "removewatches /app", None);
        run(&mut sh, "removewatches /app", Some("NoWatcher"));

        // Ctrl-C stops a running command (a watch runs until interrupted), not the shell.
        sh.send_line("watch -v /app").expect("watch");
        sh.exp_string("watching /app").expect("the watch runs");
        sh.send_control('c').expect("ctrl-c");
        sh.exp_regex(r"\(CONNECTED\) \d+\] ")
            .expect("back at the prompt after Ctrl-C");
        run(&mut sh, "whoami", Some("digest alice"));

        // close, then connect: the prompt says so, commands wait for a session.
        sh.send_line("close").expect("close");
        sh.exp_string("(CLOSED)").expect("closed in the prompt");
        run(&mut sh, "ls /", Some("not connected"));
        sh.send_line(&format!("connect {zk_again}"))
            .expect("connect");
        sh.exp_regex(r"\(CONNECTED\) \d+\] ")
            .expect("connected in the prompt");
        run(&mut sh, "ls /", Some("other"));
        sh.send_line("quit").expect("quit");
        sh.exp_eof().expect("the shell ends");
        sh
    })
    .await;
    drop(sh);
    // The ephemeral went with the first session.
    assert!(client.exists("/app/eph").await.expect("exists").is_none());

    // Second run: the history of the first, without the credentials.
    let saved = std::fs::read_to_string(&history).expect("the history file");
    assert!(saved.contains("get -w /app/config"), "{saved}");
    assert!(
        !saved.contains("alice"),
        "credentials in the history: {saved}"
    );
    let zk_second = zk.clone();
    blocking(move || {
        let mut sh = shell(&zk_second, &history);
        sh.exp_string("(CONNECTED) 0] ").expect("the prompt");
        // Up arrow: the last line of the first run.
        typed(&mut sh, "\x1b[A", "up");
        sh.exp_string("quit")
            .expect("the last line of the first run");
        // Ctrl-U clears the line; history lists the first run's commands.
        sh.send_control('u').expect("clear");
        sh.send_line("history").expect("history");
        sh.exp_string("get -w /app/config")
            .expect("an earlier command");
        sh.send_line("exit").expect("exit");
        sh.exp_eof().expect("the shell ends");
    })
    .await;
}
