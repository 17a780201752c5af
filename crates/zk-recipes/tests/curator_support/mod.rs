//! Support of the Curator interop tests: the Java programs of `tests/curator/` (see
//! `java.rs`) and [`CuratorPeer`], a Curator process driven command by command.

#![allow(dead_code, unreachable_pub)]

mod java;

use std::time::Duration;

pub use java::curator_program;
use zk_testkit::line_program::LineProgram;

/// How long one command of the peer may take (its JVM start included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `tests/curator/CuratorPeer.java` (its comment lists the commands): one Curator
/// process whose slots (each its own session and thread) take Curator's locks and leader
/// latches when told to. Killed when dropped.
pub struct CuratorPeer {
    program: LineProgram,
}

impl CuratorPeer {
    /// Starts the peer against `connect_string` and waits until it is ready.
    pub async fn start(connect_string: &str) -> CuratorPeer {
        let mut command = curator_program("CuratorPeer");
        command.arg(connect_string);
        let mut program = LineProgram::spawn(command, "the Curator peer", COMMAND_TIMEOUT);
        assert_eq!(program.reply("start").await, "ready");
        CuratorPeer { program }
    }

    /// Sends one command and returns its reply; panics on an `error` reply.
    pub async fn call(&mut self, command: &str) -> String {
        self.program.call(command).await
    }

    /// Tells the peer to quit (closing its sessions) and waits for it.
    pub async fn quit(mut self) {
        self.program.send("- quit").await;
        self.program.wait_success().await;
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
