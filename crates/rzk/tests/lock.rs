//! `rzk lock` and `rzk locks` run as a user would against a real ZooKeeper server: two
//! competing invocations (the second waits and runs only after the first exits), `--try`,
//! `--timeout`, `--once`, signals passed on to the command, and the command stopped when the
//! session is lost (through a fault proxy that freezes rzk's connection), before another
//! contender can take the lock.
//!
//! The commands are `sh -c` scripts that append to a log file; the order of the log's lines
//! is the order of events. A command that must wait for the test reads its standard input.

mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use support::{
    append, command, finish, lines, rzk, scratch, signal, until_terminated, wait_lines,
    wait_stderr, with_script,
};
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_recipes::lock::Lock;
use zk_testkit::DigestJaas;
use zk_testkit::client::{
    children, connect, serial, server_builder, start_server, start_server_with, wait_children,
    within,
};
use zk_testkit::fault::FaultProxy;

const LIMIT: Duration = Duration::from_secs(15);

/// The fencing token a log line `<who> start <token>` carries.
fn token(line: &str) -> i64 {
    line.rsplit(' ')
        .next()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no token in {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_invocation_waits_and_runs_only_after_the_first_exits() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let dir = scratch("order");
    let log = dir.join("log");

    // The first holds the lock until the test closes its standard input.
    let first_script = format!(
        "{}; read line; {}",
        append(&log, "1 start $RZK_FENCING_TOKEN"),
        append(&log, "1 end")
    );
    let mut first = with_script(&zk, &["lock", "/jobs/nightly"], &first_script)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start the first");
    wait_lines(&log, LIMIT, "the first runs", |l| l.len() == 1).await;

    let second_script = format!("{}; exit 42", append(&log, "2 start $RZK_FENCING_TOKEN"));
    let second = with_script(&zk, &["lock", "/jobs/nightly"], &second_script)
        .spawn()
        .expect("start the second");
    wait_children(&client, "/jobs/nightly", LIMIT, "the second in line", |c| {
        c.len() == 2
    })
    .await;

    // Queued behind the first, which holds: `locks` shows it, and it has not run.
    let queue = rzk(&zk, &["locks", "--json", "/jobs/nightly"])
        .await
        .expect(0, "locks")
        .json();
    assert_eq!(queue["recipe"], "mutex");
    let contenders = queue["contenders"].as_array().expect("contenders");
    let roles: Vec<&str> = contenders
        .iter()
        .filter_map(|c| c["role"].as_str())
        .collect();
    assert_eq!(roles, ["holder", "waiting"]);
    let sessions: Vec<&str> = contenders
        .iter()
        .filter_map(|c| c["session_id"].as_str())
        .collect();
    assert_eq!(sessions.len(), 2);
    assert_ne!(sessions[0], sessions[1], "two invocations, two sessions");
    assert!(sessions.iter().all(|s| s.starts_with("0x")));
    let text = rzk(&zk, &["locks", "/jobs/nightly"])
        .await
        .expect(0, "locks text");
    assert!(
        text.stdout
            .starts_with("/jobs/nightly (mutex): 2 contenders\n"),
        "{}",
        text.stdout
    );
    assert_eq!(
        lines(&log).len(),
        1,
        "the second ran while the first held the lock"
    );

    // The first's command ends: it exits 0, the lock passes, the second runs and its status
    // (42) is rzk's.
    drop(first.stdin.take());
    finish(first, &["first"]).await.expect(0, "the first");
    finish(second, &["second"]).await.expect(42, "the second");
    let log = lines(&log);
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(log[0].starts_with("1 start "), "{log:?}");
    assert_eq!(log[1], "1 end");
    assert!(log[2].starts_with("2 start "), "{log:?}");
    assert!(
        token(&log[2]) > token(&log[0]),
        "fencing tokens grow: {log:?}"
    );
    assert!(
        children(&client, "/jobs/nightly").await.is_empty(),
        "released"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_timeout_and_interrupt_give_up_and_leave_no_node() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let holder = within("acquire", LIMIT, Lock::new(&client, "/l").acquire(None))
        .await
        .expect("the test holds /l");
    let held = children(&client, "/l").await;
    assert_eq!(held.len(), 1);

    // --try: refused at once from the listing, nothing created.
    let run = rzk(&zk, &["lock", "--try", "/l", "--", "true"])
        .await
        .expect(8, "--try");
    run.one_error_line(&format!("is held (first in line: {})", held[0]));
    assert_eq!(children(&client, "/l").await, held);

    // --timeout: queued, gave up, its node is gone.
    let run = rzk(&zk, &["lock", "--timeout", "300ms", "/l", "--", "true"]).await;
    run.expect(8, "--timeout")
        .one_error_line("not acquired within 300ms");
    assert_eq!(children(&client, "/l").await, held);

    // Interrupted while waiting: exits 128 + SIGINT, its node is gone.
    let waiting = command(&zk, &["lock", "/l", "--", "true"])
        .spawn()
        .expect("start");
    wait_children(&client, "/l", LIMIT, "rzk in line", |c| c.len() == 2).await;
    signal(&waiting, "INT");
    finish(waiting, &["interrupted"])
        .await
        .expect(130, "interrupted");
    assert_eq!(children(&client, "/l").await, held);

    // Free: --try takes it and runs the command, with the lock in its environment.
    holder.release().await.expect("release");
    let run = rzk(
        &zk,
        &[
            "lock",
            "--try",
            "/l",
            "--",
            "sh",
            "-c",
            "echo $RZK_LOCK_PATH $RZK_LOCK_NODE",
        ],
    )
    .await
    .expect(0, "--try on a free lock");
    let printed: Vec<&str> = run.stdout.split_whitespace().collect();
    assert_eq!(printed[0], "/l");
    assert!(
        printed[1].starts_with("/l/_c_") && printed[1].contains("-lock-"),
        "{printed:?}"
    );
    // A command that cannot be run: 127, and the lock is released.
    let run = rzk(&zk, &["lock", "/l", "--", "/nonexistent/command"]).await;
    run.expect(127, "missing command")
        .one_error_line("cannot run /nonexistent/command");
    assert!(children(&client, "/l").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_reach_the_command_and_the_lock_is_released_after_it() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let dir = scratch("signals");
    let log = dir.join("log");
    let script = format!(
        "trap '{}; exit 3' TERM; {}; while :; do sleep 0.05; done",
        append(&log, "got TERM"),
        append(&log, "start $RZK_SESSION_ID $RZK_LOCK_NODE")
    );
    let rzk_lock = with_script(&zk, &["lock", "/svc"], &script)
        .spawn()
        .expect("start");
    let started = wait_lines(&log, LIMIT, "the command runs", |l| l.len() == 1).await;
    let words: Vec<&str> = started[0].split(' ').collect();
    let queue = rzk(&zk, &["locks", "--json", "/svc"])
        .await
        .expect(0, "locks")
        .json();
    let holder = &queue["contenders"][0];
    assert_eq!(
        holder["session_id"], words[1],
        "RZK_SESSION_ID is the holder's session"
    );
    assert_eq!(
        format!("/svc/{}", holder["node"].as_str().unwrap_or_default()),
        words[2]
    );

    signal(&rzk_lock, "TERM");
    finish(rzk_lock, &["lock"])
        .await
        .expect(3, "the command's status");
    assert_eq!(lines(&log)[1], "got TERM");
    assert!(children(&client, "/svc").await.is_empty(), "released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_once_runs_a_job_once_and_only_when_it_succeeded() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let dir = scratch("once");
    let log = dir.join("log");
    let job = format!(
        "{}; exit $JOB_STATUS",
        append(&log, "ran $RZK_FENCING_TOKEN")
    );
    let once = |status: &'static str| {
        let job = job.clone();
        let zk = zk.clone();
        async move {
            let child = with_script(&zk, &["lock", "/l", "--once", "/done/report"], &job)
                .env("JOB_STATUS", status)
                .spawn()
                .expect("start");
            finish(child, &["lock --once"]).await
        }
    };

    // A failed run leaves no marker: the next one runs again.
    once("1").await.expect(1, "a failing job");
    assert!(
        client
            .exists("/done/report")
            .await
            .expect("exists")
            .is_none()
    );
    once("0").await.expect(0, "the job");
    assert_eq!(lines(&log).len(), 2);
    let (marker, _) = client.get_data("/done/report").await.expect("the marker");
    let marker: serde_json::Value = serde_json::from_slice(&marker).expect("JSON marker");
    assert_eq!(
        marker["fencing_token"].as_i64(),
        Some(token(&lines(&log)[1]))
    );

    // Done: not run again.
    let run = once("0").await.expect(0, "already done");
    run.one_error_line("done already");
    assert_eq!(lines(&log).len(), 2, "run once");
}

/// The session timeout of the session-loss tests: the client gives up a silent connection
/// after two thirds of it (2.7 s), the server expires the session after all of it (4 s, the
/// test kit's session timeout): the command is stopped more than a second before another
/// contender can get the lock.
const SESSION: &str = "4s";

/// A contender for `/l` behind rzk's holder, with a session of its own: once it gets the lock
/// it appends `line(guard)` to `log`. Returns when it is in line.
async fn contender_in_line(
    client: &zk_proto::Client,
    log: &Path,
    line: fn(&zk_recipes::lock::LockGuard) -> String,
) -> tokio::task::JoinHandle<zk_recipes::lock::LockGuard> {
    let contender = {
        let (client, log) = (client.clone(), log.to_owned());
        tokio::spawn(async move {
            let guard = Lock::new(&client, "/l")
                .acquire(None)
                .await
                .expect("acquire");
            append_line(&log, &line(&guard));
            guard
        })
    };
    wait_children(client, "/l", LIMIT, "the contender in line", |c| {
        c.len() == 2
    })
    .await;
    contender
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_is_stopped_when_the_session_is_lost_before_another_holder_starts() {
    let _serial = serial().await;
    let server = start_server().await;
    let client = connect(&server.connect_string()).await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let dir = scratch("lost");
    let log = dir.join("log");
    let script = until_terminated(&log, "1 start", "1 stopped");
    let rzk_lock = with_script(
        &proxy.connect_string(),
        &["lock", "--session-timeout", SESSION, "/l"],
        &script,
    )
    .spawn()
    .expect("start");
    wait_lines(&log, LIMIT, "the command runs", |l| l.len() == 1).await;

    // Another contender, with its own session straight to the server, waits in line.
    let contender = contender_in_line(&client, &log, |_| "2 acquired".to_owned()).await;

    // rzk's connection goes silent: it stops the command when it gives the connection up,
    // before the server expires its session and hands the lock over; then it exits at once,
    // without waiting for a server to release the node (the session's end does).
    proxy.freeze();
    wait_lines(&log, LIMIT, "the command stopped", |l| l.len() == 2).await;
    let stopped = tokio::time::Instant::now();
    let run = finish(rzk_lock, &["lock"]).await.expect(7, "lost");
    let exited_after = stopped.elapsed();
    assert!(
        exited_after < Duration::from_secs(1),
        "rzk exited {exited_after:?} after its command was stopped"
    );
    assert!(
        run.stderr.contains("the lock /l is suspended"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("stopping the command"),
        "{}",
        run.stderr
    );
    let guard = within("the contender gets the lock", LIMIT, contender)
        .await
        .expect("the contender");
    assert_eq!(lines(&log), ["1 start", "1 stopped", "2 acquired"]);
    guard.release().await.expect("release");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_holder_stops_its_command_when_it_finds_its_session_expired() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let dir = scratch("paused");
    let log = dir.join("log");
    let script = until_terminated(&log, "1 start $RZK_FENCING_TOKEN", "1 stopped");
    let rzk_lock = with_script(&zk, &["lock", "--session-timeout", "2s", "/l"], &script)
        .spawn()
        .expect("start");
    wait_lines(&log, LIMIT, "the command runs", |l| l.len() == 1).await;
    let contender = contender_in_line(&client, &log, |guard| {
        format!("2 acquired {}", guard.fencing_token())
    })
    .await;

    // rzk is paused (SIGSTOP) while its command runs on: nothing can stop the command in
    // time, the server expires rzk's session and the contender gets the lock.
    signal(&rzk_lock, "STOP");
    let guard = within("the contender gets the lock", LIMIT, contender)
        .await
        .expect("the contender");
    // When rzk runs again, it finds its session gone and stops its command.
    signal(&rzk_lock, "CONT");
    let run = finish(rzk_lock, &["lock"]).await.expect(7, "lost");
    assert!(
        run.stderr.contains("stopping the command"),
        "{}",
        run.stderr
    );
    let log = lines(&log);
    assert_eq!(log.len(), 3, "{log:?}");
    assert!(
        log[1].starts_with("2 acquired ") && log[2] == "1 stopped",
        "{log:?}"
    );
    // The overlap is what fencing tokens are for: the new holder's token is higher.
    assert!(token(&log[1]) > token(&log[0]), "{log:?}");
    guard.release().await.expect("release");
}

/// Appends `line` to `log` (the test's own entries).
fn append_line(log: &Path, line: &str) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log)
        .expect("open the log");
    writeln!(file, "{line}").expect("append");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let dir = scratch("kill");
    let log = dir.join("log");
    // The shell ignores SIGTERM and becomes `sleep`, which inherits that.
    let script = format!("trap '' TERM; {}; exec sleep 60", append(&log, "$$"));
    let rzk_lock = with_script(
        &proxy.connect_string(),
        &[
            "lock",
            "--session-timeout",
            SESSION,
            "--grace",
            "300ms",
            "/l",
        ],
        &script,
    )
    .spawn()
    .expect("start");
    let pid = wait_lines(&log, LIMIT, "the command runs", |l| l.len() == 1).await[0].clone();
    proxy.freeze();
    let run = finish(rzk_lock, &["lock"]).await.expect(7, "lost");
    assert!(run.stderr.contains("SIGKILL"), "{}", run.stderr);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the command (pid {pid}) is still there"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_on_loss_warn_the_command_keeps_running_and_its_status_is_rzks() {
    let _serial = serial().await;
    let server = start_server().await;
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    let dir = scratch("warn");
    let log = dir.join("log");
    let script = format!(
        "{}; read line; {}",
        append(&log, "start"),
        append(&log, "end")
    );
    let mut rzk_lock = with_script(
        &proxy.connect_string(),
        &[
            "lock",
            "--session-timeout",
            SESSION,
            "--on-loss",
            "warn",
            "/l",
        ],
        &script,
    )
    .stdin(Stdio::piped())
    .spawn()
    .expect("start");
    let mut stderr = BufReader::new(rzk_lock.stderr.take().expect("stderr")).lines();
    wait_lines(&log, LIMIT, "the command runs", |l| l.len() == 1).await;
    proxy.freeze();
    let warning = wait_stderr(&mut stderr, "keeps running").await;
    assert!(warning.contains("the lock /l is suspended"), "{warning}");
    assert_eq!(lines(&log), ["start"], "not stopped");
    drop(rzk_lock.stdin.take());
    let run = finish(rzk_lock, &["lock --on-loss warn"])
        .await
        .expect(0, "the command's status");
    assert_eq!(lines(&log), ["start", "end"]);
    drop(run);
}

/// Whether process `pid` runs (a zombie waiting for its reaper counts as gone: it runs
/// nothing).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.get(stat.rfind(')')? + 2..)?.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

/// `kill -9` of a supervising rzk ends its command at once (the kernel's death signal), every
/// time, and the next holder, which gets the lock once the dead rzk's session expires, never
/// runs beside it. 20 rounds, each with a fresh pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_rzk_takes_its_command_with_it_before_the_next_holder_starts() {
    let _serial = serial().await;
    let server = start_server().await;
    let zk = server.connect_string();
    let client = connect(&zk).await;
    let dir = scratch("killed");
    for round in 0..20 {
        let log = dir.join(format!("log{round}"));
        let pid_file = dir.join(format!("pid{round}"));
        // The command writes its pid, then becomes `sleep` (same pid).
        let first_script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
        let mut first = with_script(
            &zk,
            &["lock", "--session-timeout", "1s", "/k"],
            &first_script,
        )
        .spawn()
        .expect("start the first");
        let pid = within("the command's pid", LIMIT, async {
            loop {
                let read = std::fs::read_to_string(&pid_file).unwrap_or_default();
                if let Ok(pid) = read.trim().parse::<u32>() {
                    return pid;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        assert!(running(pid));
        let second = with_script(
            &zk,
            &["lock", "--session-timeout", "1s", "/k"],
            &append(&log, "2 start"),
        )
        .spawn()
        .expect("start the second");
        wait_children(&client, "/k", LIMIT, "the second in line", |c| c.len() == 2).await;

        let killed = tokio::time::Instant::now();
        first.start_kill().expect("kill -9 rzk");
        first.wait().await.expect("rzk reaped");
        let gone = within("the command gone", LIMIT, async {
            while running(pid) {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            killed.elapsed()
        })
        .await;
        assert!(
            gone <= Duration::from_millis(100),
            "round {round}: the command ran {gone:?} after rzk was killed"
        );
        assert!(
            lines(&log).is_empty(),
            "round {round}: the second started too early"
        );
        finish(second, &["second"]).await.expect(0, "the second");
        assert_eq!(lines(&log), ["2 start"]);
    }
    assert!(children(&client, "/k").await.is_empty());
}

/// rzk's secret variables (`RZK_AUTH`, `RZK_SASL`, `RZK_TLS_KEYSTORE_PASSWORD`,
/// `RZK_TLS_KEY_PASSWORD`) are used by rzk and never reach the command; its own
/// (`RZK_LOCK_PATH`, ...) and the rest of the environment do. The TLS passwords alone do not
/// turn TLS on (they open files that only options name): the server here is plaintext, with
/// SASL for `RZK_SASL`. (The unit test
/// `every_secret_variable_of_the_options_is_kept_from_the_command` checks that the list holds
/// every secret option's variable.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_does_not_get_rzks_secret_variables() {
    let _serial = serial().await;
    let jaas = DigestJaas::write(&[("bob", "sasl-very-secret")]).expect("write the JAAS file");
    let server = start_server_with(server_builder().sasl_digest(&jaas)).await;
    let zk = server.connect_string();
    let dir = scratch("secrets");
    let env_file = dir.join("env");
    let script = format!("env > '{}'", env_file.display());
    let run = with_script(&zk, &["lock", "/s"], &script)
        .env("RZK_AUTH", "digest:someone:very-secret")
        .env("RZK_SASL", "bob:sasl-very-secret")
        .env("RZK_TLS_KEYSTORE_PASSWORD", "keystore-very-secret")
        .env("RZK_TLS_KEY_PASSWORD", "key-very-secret")
        .env("RZK_TEST_VISIBLE", "yes")
        .spawn()
        .expect("start");
    finish(run, &["lock"]).await.expect(0, "lock");
    let env = std::fs::read_to_string(&env_file).expect("the command's environment");
    assert!(!env.contains("very-secret"), "{env}");
    for secret in [
        "RZK_AUTH",
        "RZK_SASL",
        "RZK_TLS_KEYSTORE_PASSWORD",
        "RZK_TLS_KEY_PASSWORD",
    ] {
        assert!(!env.contains(secret), "{secret}: {env}");
    }
    assert!(env.contains("RZK_TEST_VISIBLE=yes"), "{env}");
    assert!(env.contains("RZK_LOCK_PATH=/s"), "{env}");
}
