//! The `main` of a Kerberos test target (`harness = false`): one KDC for the run, and each test
//! in a process of its own whose environment is a Kerberos client's.
//!
//! Why processes: the client's Kerberos library reads `KRB5_CONFIG`, `KRB5CCNAME` and
//! `KRB5_CLIENT_KTNAME` from the environment, and changing the environment of a running,
//! multi-threaded test process is unsound (`std::env::set_var` is `unsafe`, and the workspace
//! forbids unsafe code). A process started with the variables set needs no change.
//!
//! The command line follows libtest's where it matters: test names as filters (substring, or
//! whole with `--exact`), `--skip FILTER`, `--list`; the other flags are accepted and ignored.
//! The output ends with libtest's `test result:` line; a failure exits with 101.

use std::ffi::OsString;
use std::fs;
use std::process::{Command, ExitCode};
use std::thread;
use std::time::{Duration, Instant};

use super::{Kdc, Realm};

/// The variable that makes a process of the test binary run one test.
const ENV_TEST: &str = "ZK_TESTKIT_KRB5_TEST";
/// How long one test process may run before it is killed and counted as failed.
const TEST_TIMEOUT: Duration = Duration::from_secs(240);
/// How often a running test process is checked.
const POLL: Duration = Duration::from_millis(50);

/// One test of a Kerberos test target.
///
/// It runs in a process started with:
///
/// - `KRB5_CONFIG`: the realm's `krb5.conf` (KDC on 127.0.0.1, no DNS);
/// - `KRB5CCNAME`: `DIR:` a fresh, empty credential cache collection of its own (`kinit`
///   into it with [`Realm::kinit`]);
/// - `KRB5_CLIENT_KTNAME`: the keytab of `client_keytab` ([`Realm::keytab`]), or a keytab
///   that does not exist;
/// - `KRB5_KTNAME`: the ZooKeeper server's keytab (for an acceptor in the test process);
/// - [`ENV_REALM_DIR`](super::ENV_REALM_DIR): the realm's directory ([`Realm::from_env`]).
#[derive(Debug, Clone, Copy)]
pub struct KdcTest {
    /// The test's name (filters match it).
    pub name: &'static str,
    /// The principal (without the realm) whose keytab is the client keytab, if any.
    pub client_keytab: Option<&'static str>,
    /// The test; a panic fails it.
    pub run: fn(&Realm),
}

/// The `main` of a Kerberos test target: starts a [`Kdc`], lets `setup` add the principals the
/// tests need, then runs each selected test in a process of its own (sequentially) and reports
/// as libtest does. In a test's process it runs that test.
pub fn run_tests(setup: fn(&Realm) -> crate::Result<()>, tests: &[KdcTest]) -> ExitCode {
    if let Some(name) = std::env::var_os(ENV_TEST) {
        return run_one(&name, tests);
    }
    let args = Args::parse(std::env::args().skip(1));
    let selected: Vec<&KdcTest> = tests.iter().filter(|t| args.selects(t.name)).collect();
    if args.list {
        for test in &selected {
            println!("{}: test", test.name);
        }
        return ExitCode::SUCCESS;
    }
    let filtered_out = tests.len() - selected.len();
    let started = Instant::now();
    println!();
    println!(
        "running {} test{}",
        selected.len(),
        if selected.len() == 1 { "" } else { "s" }
    );
    if selected.is_empty() {
        summary(0, &[], filtered_out, started);
        return ExitCode::SUCCESS;
    }
    let kdc = match Kdc::start() {
        Ok(kdc) => kdc,
        Err(error) => {
            eprintln!("zk-testkit: the test KDC did not start: {error}");
            return ExitCode::from(101);
        }
    };
    if let Err(error) = setup(kdc.realm()) {
        eprintln!("zk-testkit: setting up the test realm failed: {error}");
        return ExitCode::from(101);
    }
    let mut passed = 0;
    let mut failed = Vec::new();
    for test in selected {
        match run_process(kdc.realm(), kdc.pid(), test) {
            Ok(()) => {
                println!("test {} ... ok", test.name);
                passed += 1;
            }
            Err(why) => {
                println!("test {} ... FAILED ({why})", test.name);
                failed.push(test.name);
            }
        }
    }
    drop(kdc);
    summary(passed, &failed, filtered_out, started);
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}

fn summary(passed: usize, failed: &[&str], filtered_out: usize, started: Instant) {
    if !failed.is_empty() {
        println!();
        println!("failures:");
        for name in failed {
            println!("    {name}");
        }
    }
    println!();
    println!(
        "test result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {filtered_out} \
         filtered out; finished in {:.2}s",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    println!();
}

/// In a test's process: runs the test (a panic exits with 101).
fn run_one(name: &OsString, tests: &[KdcTest]) -> ExitCode {
    let Some(test) = tests.iter().find(|t| name == t.name) else {
        eprintln!("zk-testkit: no Kerberos test named {name:?}");
        return ExitCode::from(101);
    };
    let Some(realm) = Realm::from_env() else {
        eprintln!(
            "zk-testkit: {} is not set in a test process",
            super::ENV_REALM_DIR
        );
        return ExitCode::from(101);
    };
    (test.run)(&realm);
    ExitCode::SUCCESS
}

/// Runs `test` in a process of the test binary; `Err` says why it failed.
fn run_process(realm: &Realm, kdc_pid: Option<u32>, test: &KdcTest) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("the test binary: {e}"))?;
    let ccache = realm.dir().join(format!("ccache-{}", test.name));
    fs::create_dir_all(&ccache).map_err(|e| format!("creating {}: {e}", ccache.display()))?;
    let client_keytab = match test.client_keytab {
        Some(principal) => realm.keytab(principal),
        None => realm.dir().join("no-client.keytab"),
    };
    let mut child = Command::new(exe)
        .env(ENV_TEST, test.name)
        .env(super::ENV_REALM_DIR, realm.dir())
        .env(
            super::ENV_KDC_PID,
            kdc_pid.map(|pid| pid.to_string()).unwrap_or_default(),
        )
        .env("KRB5_CONFIG", realm.krb5_conf())
        .env("KRB5CCNAME", format!("DIR:{}", ccache.display()))
        .env("KRB5_CLIENT_KTNAME", &client_keytab)
        .env("KRB5_KTNAME", realm.keytab(super::SERVER_PRINCIPAL))
        .spawn()
        .map_err(|e| format!("spawning the test process: {e}"))?;
    let deadline = Instant::now() + TEST_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("the test process exited with {status}")),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("killed after {TEST_TIMEOUT:?}"));
            }
            Ok(None) => thread::sleep(POLL),
            Err(e) => return Err(format!("waiting for the test process: {e}")),
        }
    }
}

/// The command line, as libtest reads it (the parts that select tests).
#[derive(Debug, Default, PartialEq, Eq)]
struct Args {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
}

impl Args {
    fn parse(args: impl IntoIterator<Item = String>) -> Args {
        let mut parsed = Args::default();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--exact" => parsed.exact = true,
                "--list" => parsed.list = true,
                "--skip" => parsed.skip.extend(args.next()),
                // Flags with a value, accepted and ignored.
                "--test-threads" | "--color" | "--format" | "-Z" | "--logfile"
                | "--shuffle-seed" | "--report-time" => {
                    args.next();
                }
                flag if flag.starts_with('-') => {}
                filter => parsed.filters.push(filter.to_owned()),
            }
        }
        parsed
    }

    fn selects(&self, name: &str) -> bool {
        let matches = |filter: &String| {
            if self.exact {
                name == filter
            } else {
                name.contains(filter.as_str())
            }
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skip.iter().any(matches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Args {
        Args::parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn the_command_line_selects_tests_as_libtest_does() {
        let all = args("");
        assert!(all.selects("a_keytab_login"));
        let some = args("--nocapture keytab --test-threads 2 --skip stale");
        assert_eq!(some.filters, ["keytab"]);
        assert!(some.selects("a_keytab_login"));
        assert!(!some.selects("a_stale_keytab_fails"));
        assert!(!some.selects("a_ccache_login"));
        let exact = args("--exact a_keytab");
        assert!(!exact.selects("a_keytab_login"));
        assert!(exact.selects("a_keytab"));
        assert!(args("--list").list);
    }
}
