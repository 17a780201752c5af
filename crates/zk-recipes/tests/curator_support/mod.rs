//! Support of the Curator interop tests: the Java programs of `tests/curator/` (see
//! `java.rs`) and [`CuratorPeer`], a Curator process driven command by command.

#![allow(dead_code, unreachable_pub)]

mod java;

use std::process::Stdio;
use std::time::Duration;

pub use java::curator_program;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long one command of the peer may take (its JVM start included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `tests/curator/CuratorPeer.java` (its comment lists the commands): one Curator
/// process whose slots (each its own session and thread) take Curator's locks and leader
/// latches when told to. Killed when dropped.
pub struct CuratorPeer {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl CuratorPeer {
    /// Starts the peer against `connect_string` and waits until it is ready.
    pub async fn start(connect_string: &str) -> CuratorPeer {
        let mut command = tokio::process::Command::from(curator_program("CuratorPeer"));
        command
            .arg(connect_string)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("start java CuratorPeer");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut peer = CuratorPeer {
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
            .expect("write to the peer");
        self.stdin.flush().await.expect("flush to the peer");
        let reply = self.reply(command).await;
        assert!(!reply.starts_with("error"), "{command}: {reply}");
        reply
    }

    async fn reply(&mut self, command: &str) -> String {
        match tokio::time::timeout(COMMAND_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => panic!("{command}: the Curator peer exited"),
            Ok(Err(e)) => panic!("{command}: reading the Curator peer: {e}"),
            Err(_) => {
                panic!("{command}: no reply from the Curator peer within {COMMAND_TIMEOUT:?}")
            }
        }
    }

    /// Tells the peer to quit (closing its sessions) and waits for it.
    pub async fn quit(mut self) {
        let _ = self.stdin.write_all(b"- quit\n").await;
        let _ = self.stdin.flush().await;
        let status = tokio::time::timeout(COMMAND_TIMEOUT, self.child.wait()).await;
        assert!(
            matches!(status, Ok(Ok(s)) if s.success()),
            "peer exit: {status:?}"
        );
    }
}

/// One critical section of the lock interop tests (`lock_interop.rs`,
/// `multi_lock_interop.rs`), checked the same way as the Java side does (see
/// `tests/curator/CuratorLock.java`): an ephemeral marker node that must not exist, and a
/// counter incremented by a read then an unconditional write. Returns the violations and the
/// counter's value read.
pub async fn checked_critical_section(
    client: &zk_proto::Client,
    marker: &str,
    counter: &str,
) -> (usize, u64) {
    let mut violations = 0;
    match client
        .create(marker, "", &zk_proto::CreateOptions::ephemeral())
        .await
    {
        Ok(_) => {}
        Err(zk_proto::Error::NodeExists) => violations += 1,
        Err(e) => panic!("create marker: {e}"),
    }
    let (data, _) = client.get_data(counter).await.expect("read counter");
    let value: u64 = std::str::from_utf8(&data)
        .expect("utf-8")
        .parse()
        .expect("number");
    client
        .set_data(counter, (value + 1).to_string(), None)
        .await
        .expect("write counter");
    match client.delete(marker, None).await {
        Ok(()) => {}
        Err(zk_proto::Error::NoNode) => violations += 1,
        Err(e) => panic!("delete marker: {e}"),
    }
    (violations, value)
}
