//! A program driven line by line: commands written to its standard input, one reply line
//! each read from its standard output, with a bound on every wait. The Curator programs of
//! the interop and fault tests (`CuratorPeer.java`, `CuratorDiscovery.java`,
//! `CuratorBarrier.java`, ...) are driven this way; each test's driver wraps a
//! [`LineProgram`] with the commands of its program.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// A running program with its standard input and output piped; killed when dropped.
pub struct LineProgram {
    name: String,
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    timeout: Duration,
}

impl std::fmt::Debug for LineProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineProgram")
            .field("name", &self.name)
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

impl LineProgram {
    /// Starts `command` (its standard input and output piped, its standard error inherited),
    /// named `name` in messages, each reply awaited at most `timeout`.
    ///
    /// # Panics
    ///
    /// When the program cannot be started.
    pub fn spawn(command: std::process::Command, name: &str, timeout: Duration) -> LineProgram {
        let mut command = tokio::process::Command::from(command);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        let stdin = child.stdin.take().expect("stdin, piped");
        let lines = BufReader::new(child.stdout.take().expect("stdout, piped")).lines();
        LineProgram {
            name: name.to_owned(),
            child,
            stdin,
            lines,
            timeout,
        }
    }

    /// Writes `line` (and a newline), without waiting for a reply.
    ///
    /// # Panics
    ///
    /// When the program's standard input is closed.
    pub async fn send(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{line}: writing to {}: {e}", self.name));
        self.stdin
            .flush()
            .await
            .unwrap_or_else(|e| panic!("{line}: writing to {}: {e}", self.name));
    }

    /// The next line of output, awaited at most the timeout; `what` names it in a panic.
    ///
    /// # Panics
    ///
    /// When the program exits first, its output cannot be read, or the timeout passes.
    pub async fn reply(&mut self, what: &str) -> String {
        match tokio::time::timeout(self.timeout, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => panic!("{what}: {} exited", self.name),
            Ok(Err(e)) => panic!("{what}: reading {}: {e}", self.name),
            Err(_) => panic!(
                "{what}: no reply from {} within {:?}",
                self.name, self.timeout
            ),
        }
    }

    /// The next line of output, however long it takes (for a caller that bounds the whole
    /// scenario, where a program may rightly print nothing for a while).
    ///
    /// # Panics
    ///
    /// When the program exits first or its output cannot be read.
    pub async fn reply_unbounded(&mut self, what: &str) -> String {
        match self.lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("{what}: {} exited", self.name),
            Err(e) => panic!("{what}: reading {}: {e}", self.name),
        }
    }

    /// Sends `command` and returns its reply.
    ///
    /// # Panics
    ///
    /// As [`send`](Self::send) and [`reply`](Self::reply), and on a reply that starts with
    /// `error`.
    pub async fn call(&mut self, command: &str) -> String {
        self.send(command).await;
        let reply = self.reply(command).await;
        assert!(!reply.starts_with("error"), "{command}: {reply}");
        reply
    }

    /// The program's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Kills the program with SIGKILL (no goodbye: its sessions live until they expire) and
    /// reaps it.
    ///
    /// # Panics
    ///
    /// When the signal cannot be sent.
    pub async fn kill9(mut self) {
        self.child
            .start_kill()
            .unwrap_or_else(|e| panic!("kill -9 {}: {e}", self.name));
        let _ = self.child.wait().await;
    }

    /// Waits (at most the timeout) for the program to exit, and checks that it succeeded.
    ///
    /// # Panics
    ///
    /// When it does not exit in time or exits with a failure.
    pub async fn wait_success(mut self) {
        let status = tokio::time::timeout(self.timeout, self.child.wait()).await;
        assert!(
            matches!(status, Ok(Ok(s)) if s.success()),
            "{} exit: {status:?}",
            self.name
        );
    }
}
