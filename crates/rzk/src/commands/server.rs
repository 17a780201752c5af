//! `server start|stop|status`: a local standalone ZooKeeper on 127.0.0.1 for development,
//! started the way the test kit starts one (the same Java and jars, found by
//! `zk_testkit::ZkInstall`, the same zoo.cfg settings and JVM options), that stays up after
//! rzk exits: its zoo.cfg, data, log and pid file are in a directory of its own
//! (`--dir`, default `$XDG_STATE_HOME/rzk/server-PORT` or `~/.local/state/rzk/server-PORT`).
//! No session: these commands run without a runtime.

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use zk_testkit::{Mode, ZkInstall, four_letter};

use crate::cli::{ServerAction, ServerArgs};
use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::Output;

/// How long `start` waits for the server to serve.
const START_LIMIT: Duration = Duration::from_secs(60);
/// How long `stop` waits after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// The timeout of one four-letter probe.
const PROBE: Duration = Duration::from_secs(2);
/// The main class of a standalone server.
const MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
/// The pid file in the server's directory.
const PID_FILE: &str = "zookeeper.pid";
/// The server's `tickTime` in ms: session timeouts from 4 s to 40 s, as the test kit's
/// default.
const TICK_MS: u32 = 2000;

/// Where a server's files are.
#[derive(Debug, Clone)]
struct Place {
    dir: PathBuf,
    addr: SocketAddr,
}

impl Place {
    fn new(args: &ServerArgs) -> Result<Place, Failure> {
        let dir = match &args.dir {
            Some(dir) => dir.clone(),
            None => default_dir(args.port).ok_or_else(|| {
                Failure::usage("no state directory: set XDG_STATE_HOME or HOME, or give --dir")
            })?,
        };
        Ok(Place {
            dir,
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, args.port)),
        })
    }

    fn config(&self) -> PathBuf {
        self.dir.join("zoo.cfg")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("zookeeper.log")
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.join(PID_FILE)
    }

    /// The pid of the server this directory started, if it still runs: the pid file's
    /// process, when its command line names this directory's zoo.cfg (a pid reused by
    /// another process is not ours).
    fn running_pid(&self) -> Option<i32> {
        let pid: i32 = fs::read_to_string(self.pid_file())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let config = self.config();
        let ours = cmdline
            .split(|b| *b == 0)
            .any(|arg| Path::new(std::ffi::OsStr::from_bytes(arg)) == config);
        ours.then_some(pid)
    }
}

/// `$XDG_STATE_HOME/rzk/server-PORT`, else `~/.local/state/rzk/server-PORT`.
fn default_dir(port: u16) -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|p| !p.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join(format!("rzk/server-{port}")))
}

/// The zoo.cfg: the test kit's settings (tickTime, dataDir, maxSessionTimeout, forceSync,
/// no admin server, every four-letter command), on 127.0.0.1 only.
fn zoo_cfg(dir: &Path, port: u16) -> String {
    let mut cfg = String::new();
    let _ = writeln!(cfg, "# written by rzk server start");
    let _ = writeln!(cfg, "tickTime={TICK_MS}");
    let _ = writeln!(cfg, "dataDir={}", dir.join("data").display());
    let _ = writeln!(cfg, "maxSessionTimeout={}", 20 * TICK_MS);
    let _ = writeln!(cfg, "forceSync=no");
    let _ = writeln!(cfg, "admin.enableServer=false");
    let _ = writeln!(cfg, "4lw.commands.whitelist=*");
    let _ = writeln!(cfg, "clientPort={port}");
    let _ = writeln!(cfg, "clientPortAddress=127.0.0.1");
    cfg
}

/// The JVM's arguments: the test kit's options, then the classpath, main class and config.
fn jvm_args(install: &ZkInstall, dir: &Path, config: &Path) -> Vec<String> {
    vec![
        "-Xmx256m".into(),
        "-XX:+UseSerialGC".into(),
        "-XX:TieredStopAtLevel=1".into(),
        "-XX:-UsePerfData".into(),
        "-XX:+ExitOnOutOfMemoryError".into(),
        "-Djava.net.preferIPv4Stack=true".into(),
        "-Djava.awt.headless=true".into(),
        format!("-Dzookeeper.log.dir={}", dir.display()),
        "-Dzookeeper.preAllocSize=4096".into(),
        "-Dzookeeper.jmx.log4j.disable=true".into(),
        "-Dorg.slf4j.simpleLogger.showDateTime=true".into(),
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS".into(),
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=info".into(),
        "-cp".into(),
        install.classpath().into(),
        MAIN.into(),
        config.display().to_string(),
    ]
}

/// Whether the server at `addr` serves as a standalone server.
fn serving(addr: SocketAddr) -> bool {
    four_letter(addr, "ruok", PROBE).is_ok_and(|a| a == "imok")
        && four_letter(addr, "srvr", PROBE).is_ok_and(|a| Mode::from_srvr(&a) == Mode::Standalone)
}

/// The last `n` lines of the log.
fn log_tail(place: &Place, n: usize) -> String {
    let text = fs::read_to_string(place.log()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `rzk server ACTION`.
pub(super) fn run(args: &ServerArgs, out: Output) -> Outcome {
    let place = Place::new(args)?;
    match args.action {
        ServerAction::Start => start(&place, out),
        ServerAction::Stop => stop(&place, out),
        ServerAction::Status => status(&place, out),
    }
}

fn io_failure(what: &str, path: &Path, error: &std::io::Error) -> Failure {
    Failure::new(
        ExitClass::Failure,
        format!("{what} {}: {error}", path.display()),
    )
}

/// `server start`: starts the server unless this directory's runs already; waits until it
/// serves.
fn start(place: &Place, out: Output) -> Outcome {
    if let Some(pid) = place.running_pid() {
        say!(
            "already running at {} (pid {pid}, {})",
            place.addr,
            place.dir.display()
        );
        return print_status(place, Some(pid), out);
    }
    let install = ZkInstall::detect().map_err(|e| {
        let why = match e {
            zk_testkit::Error::NotInstalled { missing } => {
                format!("{missing}; {}", zk_testkit::INSTALL_HINT)
            }
            e => e.to_string(),
        };
        Failure::new(
            ExitClass::Failure,
            format!("server start: Java or ZooKeeper is missing: {why}"),
        )
    })?;
    // Something else on the port: say so now rather than after the JVM's start.
    TcpListener::bind(place.addr).map_err(|e| {
        Failure::new(
            ExitClass::Failure,
            format!(
                "server start: {} is taken ({e}); choose another with --port",
                place.addr
            ),
        )
    })?;
    fs::create_dir_all(place.dir.join("data"))
        .map_err(|e| io_failure("server start: create", &place.dir, &e))?;
    let config = place.config();
    fs::write(&config, zoo_cfg(&place.dir, place.addr.port()))
        .map_err(|e| io_failure("server start: write", &config, &e))?;
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(place.log())
        .map_err(|e| io_failure("server start: open", &place.log(), &e))?;
    let _ = writeln!(log, "==== rzk server start on {} ====", place.addr);
    let stderr = log
        .try_clone()
        .map_err(|e| io_failure("server start: open", &place.log(), &e))?;
    let mut java = Command::new(install.java());
    java.args(jvm_args(&install, &place.dir, &config))
        .current_dir(&place.dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(stderr);
    // The server is no place for rzk's own credentials and passwords.
    for secret in crate::supervise::SECRET_VARIABLES {
        java.env_remove(secret);
    }
    // A process group of its own: the terminal's Ctrl-C and hang-up do not reach it, and it
    // outlives rzk.
    std::os::unix::process::CommandExt::process_group(&mut java, 0);
    let mut child = java.spawn().map_err(|e| {
        Failure::new(
            ExitClass::Failure,
            format!("server start: {}: {e}", install.java().display()),
        )
    })?;
    let pid = child.id();
    fs::write(place.pid_file(), format!("{pid}\n"))
        .map_err(|e| io_failure("server start: write", &place.pid_file(), &e))?;
    let deadline = Instant::now() + START_LIMIT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let _ = fs::remove_file(place.pid_file());
            return Err(Failure::new(
                ExitClass::Failure,
                format!(
                    "server start: ZooKeeper exited ({status}); the end of {}:\n{}",
                    place.log().display(),
                    log_tail(place, 20)
                ),
            ));
        }
        if serving(place.addr) {
            break;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = fs::remove_file(place.pid_file());
            return Err(Failure::new(
                ExitClass::Timeout,
                format!(
                    "server start: not serving within {START_LIMIT:?}; see {}",
                    place.log().display()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    print_status(place, i32::try_from(pid).ok(), out)
}

/// `server status`: exit 0 and the address when it runs, exit 3 when it does not.
fn status(place: &Place, out: Output) -> Outcome {
    match place.running_pid() {
        Some(pid) => print_status(place, Some(pid), out),
        None => {
            if out.json {
                out.json(&json!({
                    "running": false,
                    "address": place.addr.to_string(),
                    "dir": place.dir.display().to_string(),
                }))?;
            } else {
                out.line(&format!(
                    "not running ({} has no server; rzk server start)",
                    place.dir.display()
                ))?;
            }
            Ok(ExitClass::NotFound.code())
        }
    }
}

fn print_status(place: &Place, pid: Option<i32>, out: Output) -> Outcome {
    let serving = serving(place.addr);
    if out.json {
        out.json(&json!({
            "running": true,
            "serving": serving,
            "address": place.addr.to_string(),
            "pid": pid,
            "dir": place.dir.display().to_string(),
        }))?;
    } else {
        out.line(&format!(
            "running at {} (pid {}, {}){}",
            place.addr,
            pid.map_or_else(|| "?".to_owned(), |p| p.to_string()),
            place.dir.display(),
            if serving { "" } else { ", not serving yet" }
        ))?;
    }
    Ok(0)
}

/// `server stop`: SIGTERM, SIGKILL after [`STOP_GRACE`]; the data stays for the next start.
fn stop(place: &Place, out: Output) -> Outcome {
    let Some(pid) = place.running_pid() else {
        let _ = fs::remove_file(place.pid_file());
        if !out.json {
            say!("not running ({})", place.dir.display());
        } else {
            out.json(&json!({ "stopped": false, "running": false }))?;
        }
        return Ok(0);
    };
    let target = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| Failure::new(ExitClass::Failure, format!("bad pid {pid}")))?;
    let _ = rustix::process::kill_process(target, rustix::process::Signal::TERM);
    let deadline = Instant::now() + STOP_GRACE;
    while place.running_pid().is_some() && alive(target) {
        if Instant::now() >= deadline {
            let _ = rustix::process::kill_process(target, rustix::process::Signal::KILL);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // A zombie until its parent (init) reaps it: gone as far as we care once it no longer
    // answers.
    let _ = fs::remove_file(place.pid_file());
    if out.json {
        out.json(&json!({ "stopped": true, "pid": pid }))?;
    } else {
        out.line(&format!("stopped (pid {pid})"))?;
    }
    Ok(0)
}

/// Whether `pid` is alive and not a zombie.
fn alive(pid: rustix::process::Pid) -> bool {
    let stat =
        fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero())).unwrap_or_default();
    // The state is the field after the command name's closing parenthesis.
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
        .is_some_and(|state| state != 'Z' && state != 'X')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_is_the_test_kits_on_loopback() {
        let cfg = zoo_cfg(Path::new("/s"), 2181);
        for line in [
            "tickTime=2000",
            "dataDir=/s/data",
            "clientPort=2181",
            "clientPortAddress=127.0.0.1",
            "4lw.commands.whitelist=*",
        ] {
            assert!(cfg.lines().any(|l| l == line), "{line} not in {cfg}");
        }
    }

    #[test]
    fn the_state_directory_is_per_port() {
        let dir = default_dir(2182);
        if let Some(dir) = dir {
            assert!(dir.ends_with("rzk/server-2182"), "{}", dir.display());
        }
    }
}
