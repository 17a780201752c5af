//! [`CuratorDiscovery`]: a Curator 5.4 service-discovery process (`tests/curator/
//! CuratorDiscovery.java`, whose comment lists the commands), driven command by command.
//! Shared by this crate's interop tests and `tests/tests/fault_discovery.rs` (included there
//! by path: it needs only the test kit and tokio).

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long one command may take (the JVM's start included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `CuratorDiscovery.java`. Killed when dropped.
pub struct CuratorDiscovery {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl CuratorDiscovery {
    /// Starts the program against `connect_string`, its discovery under `base`, its session
    /// asking for `session_timeout`, and waits until it is connected.
    pub async fn start(connect_string: &str, base: &str, session_timeout: Duration) -> Self {
        let Some(classpath) = zk_testkit::java::curator_classpath() else {
            panic!("Apache Curator is not installed: run scripts/install-curator.sh");
        };
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../crates/zk-discovery/tests/curator/CuratorDiscovery.java");
        let source = if source.is_file() {
            source
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/curator/CuratorDiscovery.java")
        };
        let command = zk_testkit::java::source_program(&classpath, &source).expect("java");
        let mut command = tokio::process::Command::from(command);
        command
            .arg(connect_string)
            .arg(base)
            .arg(session_timeout.as_millis().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("start java CuratorDiscovery");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut peer = CuratorDiscovery {
            child,
            stdin,
            lines,
        };
        assert_eq!(peer.reply("start").await, "ready");
        peer
    }

    /// Sends one command and returns its reply; panics on an `error` reply.
    pub async fn call(&mut self, command: &str) -> String {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write to the Curator process");
        self.stdin.flush().await.expect("flush");
        let reply = self.reply(command).await;
        assert!(!reply.starts_with("error"), "{command}: {reply}");
        reply
    }

    /// `query <name>`, parsed: Curator's view of the service's instances.
    pub async fn query(&mut self, name: &str) -> Vec<zk_discovery::serde_json::Value> {
        let reply = self.call(&format!("query {name}")).await;
        zk_discovery::serde_json::from_str(&reply)
            .unwrap_or_else(|e| panic!("query reply {reply:?}: {e}"))
    }

    async fn reply(&mut self, command: &str) -> String {
        match tokio::time::timeout(COMMAND_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => panic!("{command}: the Curator process exited"),
            Ok(Err(e)) => panic!("{command}: reading the Curator process: {e}"),
            Err(_) => panic!("{command}: no reply within {COMMAND_TIMEOUT:?}"),
        }
    }

    /// Kills the process with SIGKILL (no goodbye: its session lives until it expires).
    pub async fn kill9(mut self) {
        self.child
            .start_kill()
            .expect("kill -9 the Curator process");
        let _ = self.child.wait().await;
    }

    /// Tells the process to close everything and exit, and waits for it.
    pub async fn quit(mut self) {
        assert_eq!(self.call("quit").await, "bye");
        let status = tokio::time::timeout(COMMAND_TIMEOUT, self.child.wait()).await;
        assert!(
            matches!(status, Ok(Ok(s)) if s.success()),
            "exit: {status:?}"
        );
    }
}
