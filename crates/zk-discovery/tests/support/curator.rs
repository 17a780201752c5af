//! [`CuratorDiscovery`]: a Curator 5.4 service-discovery process (`tests/curator/
//! CuratorDiscovery.java`, whose comment lists the commands), driven command by command.
//! Shared by this crate's interop tests and `tests/tests/fault_discovery.rs` (included there
//! by path: it needs only the test kit and tokio).

#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use zk_testkit::line_program::LineProgram;

/// How long one command may take (the JVM's start included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `CuratorDiscovery.java`. Killed when dropped.
pub struct CuratorDiscovery {
    program: LineProgram,
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
        let mut command = zk_testkit::java::source_program(&classpath, &source).expect("java");
        command
            .arg(connect_string)
            .arg(base)
            .arg(session_timeout.as_millis().to_string());
        let mut program = LineProgram::spawn(command, "the Curator process", COMMAND_TIMEOUT);
        assert_eq!(program.reply("start").await, "ready");
        CuratorDiscovery { program }
    }

    /// Sends one command and returns its reply; panics on an `error` reply.
    pub async fn call(&mut self, command: &str) -> String {
        self.program.call(command).await
    }

    /// `query <name>`, parsed: Curator's view of the service's instances.
    pub async fn query(&mut self, name: &str) -> Vec<zk_discovery::serde_json::Value> {
        let reply = self.call(&format!("query {name}")).await;
        zk_discovery::serde_json::from_str(&reply)
            .unwrap_or_else(|e| panic!("query reply {reply:?}: {e}"))
    }

    /// Kills the process with SIGKILL (no goodbye: its session lives until it expires).
    pub async fn kill9(self) {
        self.program.kill9().await;
    }

    /// Tells the process to close everything and exit, and waits for it.
    pub async fn quit(mut self) {
        assert_eq!(self.call("quit").await, "bye");
        self.program.wait_success().await;
    }
}
