//! A process of the test's own to kill in the middle of a recipe (`kill -9`): the test binary
//! run again as a child that runs one test alone, which does its part only when an environment
//! variable tells it to.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use super::within;

/// This test binary started again as a child process that runs test `test` alone
/// (`--exact`, `--nocapture`, one thread) with the environment variable `env` set to
/// `value`: its standard output piped, the process killed when dropped. The test `test`
/// returns at once without `env`, and otherwise does its part, prints a line the parent waits
/// for ([`wait_child_line`]) and waits to be killed.
///
/// # Panics
///
/// When the test binary cannot be found or started.
pub fn spawn_test_child(test: &str, env: &str, value: &str) -> Child {
    let exe = std::env::current_exe().expect("this test binary");
    Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(env, value)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start the child process running {test}: {e}"))
}

/// Reads the standard output of `child` (from [`spawn_test_child`], or any child with its
/// standard output piped) until a line ends with `ready`, at most `limit`, and returns the
/// lines that follow: keep them while the child lives, so that its output has a reader.
///
/// # Panics
///
/// When the child exits first, or `limit` passes.
pub async fn wait_child_line(
    child: &mut Child,
    ready: &str,
    limit: Duration,
) -> Lines<BufReader<ChildStdout>> {
    let stdout = child.stdout.take().expect("the child's stdout, piped");
    let mut lines = BufReader::new(stdout).lines();
    within(&format!("the child's {ready:?}"), limit, async {
        while let Some(line) = lines.next_line().await.expect("the child's output") {
            if line.ends_with(ready) {
                return;
            }
        }
        panic!("the child process exited before {ready:?}");
    })
    .await;
    lines
}
