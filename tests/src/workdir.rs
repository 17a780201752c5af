//! Temporary directories for servers, and clean-up after test processes that died.
//!
//! Every server (or ensemble) gets a fresh directory under `<base>/zk-testkit/`, where `<base>` is
//! `$ZK_TESTKIT_DIR`, else `/dev/shm` when it is a writable directory, else the system temp dir.
//! The directory holds an `owner.pid` file (the test process) and, per JVM, a `java.pid` file
//! (a KDC's directory: a `kdc.pid` file). When a test process is killed (e.g. by a harness
//! timeout) its `Drop`s never run; the next process using the kit kills the orphaned JVMs and
//! KDCs (after checking that their command line names the directory) and removes such
//! directories.

use std::env;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::process::{Pid, Signal, kill_process};

use crate::error::{Error, Result};

/// Environment variable: parent directory for the servers' temporary directories.
pub const ENV_DIR: &str = "ZK_TESTKIT_DIR";
/// Environment variable: when set (non-empty, not `0`), server directories are kept after `Drop`
/// (their path is printed); they are removed by the next run of the kit.
pub const ENV_KEEP: &str = "ZK_TESTKIT_KEEP_DIRS";

const OWNER_FILE: &str = "owner.pid";
pub(crate) const JAVA_PID_FILE: &str = "java.pid";
/// The pid of a KDC ([`Kdc`](crate::kdc::Kdc)); reaped like a JVM.
pub(crate) const KDC_PID_FILE: &str = "kdc.pid";

/// The directory under which the kit creates its server directories.
pub fn base_dir() -> PathBuf {
    if let Some(dir) = env::var_os(ENV_DIR).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("zk-testkit");
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let candidate = shm.join("zk-testkit");
        if fs::create_dir_all(&candidate).is_ok() && writable(&candidate) {
            return candidate;
        }
    }
    env::temp_dir().join("zk-testkit")
}

fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".probe-{}", std::process::id()));
    let ok = fs::write(&probe, b"").is_ok();
    let _ = fs::remove_file(&probe);
    ok
}

/// A directory removed on drop (unless [`ENV_KEEP`] is set).
#[derive(Debug)]
pub(crate) struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    /// Creates `<base>/<kind>-<pid>-<n>` with an `owner.pid` file.
    pub(crate) fn create(kind: &str) -> Result<WorkDir> {
        static REAP: Once = Once::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);

        let base = base_dir();
        fs::create_dir_all(&base)
            .map_err(|e| Error::io(format!("creating {}", base.display()), e))?;
        REAP.call_once(|| reap_orphans_in(&base));

        let pid = std::process::id();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = base.join(format!("{kind}-{pid}-{n}-{nanos:08x}"));
            match fs::create_dir(&path) {
                Ok(()) => {
                    fs::write(path.join(OWNER_FILE), pid.to_string()).map_err(|e| {
                        Error::io(format!("writing {}", path.join(OWNER_FILE).display()), e)
                    })?;
                    return Ok(WorkDir { path });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(format!("creating {}", path.display()), e)),
            }
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if env::var_os(ENV_KEEP).is_some_and(|v| !v.is_empty() && v != "0") {
            eprintln!("zk-testkit: keeping {}", self.path.display());
            return;
        }
        let _ = fs::remove_dir_all(&self.path);
    }
}

fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Kills the JVMs (and KDCs) of test processes that died without cleaning up (their `Drop`s
/// never ran) and removes their directories under [`base_dir`]. A process is killed only when
/// its command line names the directory. Best effort; the kit calls it once per process before the first start.
pub fn reap_orphans() {
    reap_orphans_in(&base_dir());
}

fn reap_orphans_in(base: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    // The listing is taken whole before anything is removed: removing entries while the
    // directory is being read leaves it unspecified whether the others are all returned.
    let dirs: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    let me = std::process::id();
    for dir in dirs {
        let Some(owner) = read_pid(&dir.join(OWNER_FILE)) else {
            continue;
        };
        if owner == me || process_alive(owner) {
            continue;
        }
        let mut java_pids = Vec::new();
        collect_java_pids(&dir, 2, &mut java_pids);
        for pid in java_pids {
            if command_line_mentions(pid, &dir)
                && let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw)
            {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

fn read_pid(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn collect_java_pids(dir: &Path, depth: u32, out: &mut Vec<u32>) {
    for file in [JAVA_PID_FILE, KDC_PID_FILE] {
        if let Some(pid) = read_pid(&dir.join(file)) {
            out.push(pid);
        }
    }
    if depth == 0 {
        return;
    }
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_java_pids(&e.path(), depth - 1, out);
            }
        }
    }
}

fn command_line_mentions(pid: u32, dir: &Path) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let needle = dir.to_string_lossy();
    String::from_utf8_lossy(&cmdline).contains(needle.as_ref())
}
