//! What the tests of the `rzk` binary share: running it as a user would (bounded), reading
//! its JSON, files its commands write, and bounded waits for them.

// Each test binary uses its own part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, Lines};
use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How long one run of rzk may take before the test fails.
pub(crate) const RUN_LIMIT: Duration = Duration::from_secs(30);

/// The built binary.
pub(crate) const RZK: &str = env!("CARGO_BIN_EXE_rzk");

/// `rzk` with `args` against `server`, with no ZooKeeper settings from the environment.
pub(crate) fn command(server: &str, args: &[&str]) -> Command {
    let mut command = Command::new(RZK);
    command
        .arg("--server")
        .arg(server)
        .args(args)
        .env_remove("ZOOKEEPER")
        .env_remove("RZK_AUTH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// `rzk` with `args` against `server` (as [`command`]), supervising `script` run by `sh -c`
/// (after `--`): for `rzk lock`, `leader`, `barrier`.
pub(crate) fn with_script(server: &str, args: &[&str], script: &str) -> Command {
    let mut all = args.to_vec();
    all.extend(["--", "sh", "-c", script]);
    command(server, &all)
}

/// How a run ended.
#[derive(Debug)]
pub(crate) struct Run {
    /// The exit status (-1 when killed by a signal).
    pub(crate) code: i32,
    /// Standard output.
    pub(crate) stdout: String,
    /// Standard error.
    pub(crate) stderr: String,
}

impl Run {
    /// Asserts the exit status, showing the output when it is another.
    pub(crate) fn expect(self, code: i32, what: &str) -> Run {
        assert_eq!(
            self.code, code,
            "{what}: exit status {} (expected {code})\nstdout: {}\nstderr: {}",
            self.code, self.stdout, self.stderr
        );
        self
    }

    /// Standard output as one JSON value.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.stdout))
    }

    /// Each line of standard output as JSON.
    pub(crate) fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}")))
            .collect()
    }

    /// Asserts that standard error is exactly one line starting `rzk: ` and containing `part`.
    pub(crate) fn one_error_line(&self, part: &str) {
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "stderr: {:?}", self.stderr);
        assert!(
            lines[0].starts_with("rzk: ") && lines[0].contains(part),
            "stderr {:?} does not say {part:?}",
            self.stderr
        );
    }
}

/// Runs rzk with `args` against `server` to its end (at most [`RUN_LIMIT`]).
pub(crate) async fn rzk(server: &str, args: &[&str]) -> Run {
    finish(command(server, args).spawn().expect("start rzk"), args).await
}

/// Runs rzk with `args` against `server`, `input` on its standard input.
pub(crate) async fn rzk_with_input(server: &str, args: &[&str], input: &[u8]) -> Run {
    use tokio::io::AsyncWriteExt;
    let mut child = command(server, args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start rzk");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input).await.expect("write stdin");
    drop(stdin);
    finish(child, args).await
}

/// Waits (at most [`RUN_LIMIT`]) for a started rzk to end.
pub(crate) async fn finish(child: Child, what: &[&str]) -> Run {
    let output = tokio::time::timeout(RUN_LIMIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("rzk {what:?} did not end within {RUN_LIMIT:?}"))
        .expect("wait for rzk");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Sends `signal` (`"TERM"`, `"INT"`, ...) to `child` with kill(1).
pub(crate) fn signal(child: &Child, signal: &str) {
    let pid = child.id().expect("the child is running").to_string();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// A fresh directory for a test's files.
pub(crate) fn scratch(test: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "rzk-{test}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The lines of `path` (none when it does not exist yet).
pub(crate) fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Polls the lines of `path` (every 10 ms) until `done` holds, at most `limit`, and returns
/// them; panics with `what` and the last lines otherwise.
pub(crate) async fn wait_lines(
    path: &Path,
    limit: Duration,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + limit;
    loop {
        let now = lines(path);
        if done(&now) {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {limit:?}; {} has {now:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Reads lines of a running rzk's stderr (`lines`, from a `BufReader` over it) until one
/// contains `text`, at most [`RUN_LIMIT`], and returns that line.
pub(crate) async fn wait_stderr<R: AsyncBufRead + Unpin>(
    lines: &mut Lines<R>,
    text: &str,
) -> String {
    let read = async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            if line.contains(text) {
                return line;
            }
        }
        panic!("stderr ended before {text:?}");
    };
    tokio::time::timeout(RUN_LIMIT, read)
        .await
        .unwrap_or_else(|_| panic!("stderr saying {text:?}: not within {RUN_LIMIT:?}"))
}

/// A shell command line (for `sh -c`) that appends `text` to `log` (`text` may use shell
/// variables).
pub(crate) fn append(log: &Path, text: &str) -> String {
    format!("echo \"{text}\" >> '{}'", log.display())
}

/// A shell command line that appends `start` to `log`, then runs until SIGTERM, on which it
/// appends `stopped` and exits 0.
pub(crate) fn until_terminated(log: &Path, start: &str, stopped: &str) -> String {
    format!(
        "trap 'kill $! 2>/dev/null; {}; exit 0' TERM; {}; sleep 60 & wait",
        append(log, stopped),
        append(log, start)
    )
}
