//! Network namespaces: names, creation and deletion with `ip`, entering one from a thread, and
//! the sweep of namespaces left behind by test processes that were killed.

use std::env;
use std::fs::{self, File};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::thread;

use rustix::process::{Pid, Signal, kill_process};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

/// First characters of every namespace a bed creates: `rzkp<pid>x<n>-<node>`.
pub(crate) const NS_PREFIX: &str = "rzkp";
/// Where `ip netns add` puts the namespaces' names (bind mounts of `/proc/<pid>/ns/net`).
pub(crate) const NETNS_DIR: &str = "/run/netns";

/// Serializes `ip netns add` and `delete` within the process: the first `ip netns add` on a
/// machine makes `/run/netns` a shared mount, and two doing it at once stack two mounts.
static NETNS_LOCK: Mutex<()> = Mutex::new(());

fn netns_lock() -> MutexGuard<'static, ()> {
    NETNS_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The prefix of a new bed's namespaces: `rzkp<pid>x<n>`, `n` from a process-wide counter.
pub(crate) fn bed_prefix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{NS_PREFIX}{}x{n}", std::process::id())
}

/// The pid in a bed namespace's name (`rzkp<pid>x<n>-...`), if it is one.
pub(crate) fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let (pid, rest) = rest.split_once('x')?;
    let (counter, _node) = rest.split_once('-')?;
    if counter.is_empty() || !counter.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// `ip` and `nft`, found on `PATH` or in the sbin directories (not always on a user's `PATH`).
#[derive(Debug, Clone)]
pub(crate) struct Tools {
    pub(crate) ip: PathBuf,
    pub(crate) nft: PathBuf,
}

impl Tools {
    /// Finds both tools, or says which one is missing.
    pub(crate) fn find() -> Result<Tools, String> {
        let hint = "install it with scripts/install-partition.sh";
        let ip = find_tool("ip").ok_or_else(|| format!("`ip` not found (iproute2; {hint})"))?;
        let nft = find_tool("nft").ok_or_else(|| format!("`nft` not found (nftables; {hint})"))?;
        Ok(Tools { ip, nft })
    }
}

fn find_tool(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH").unwrap_or_default();
    env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Runs `command`, returning its stdout, or an error with its stderr when it fails.
pub(crate) fn run(command: &mut Command) -> io::Result<String> {
    let out = command.stdin(Stdio::null()).output()?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(io::Error::other(format!(
            "{command:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Runs `ip <args>`.
pub(crate) fn ip(tools: &Tools, args: &[&str]) -> io::Result<String> {
    run(Command::new(&tools.ip).args(args))
}

/// The namespaces of one bed, deleted (in reverse order of creation) on drop.
#[derive(Debug)]
pub(crate) struct Namespaces {
    tools: Tools,
    names: Mutex<Vec<String>>,
}

impl Namespaces {
    pub(crate) fn new(tools: Tools) -> Namespaces {
        Namespaces {
            tools,
            names: Mutex::new(Vec::new()),
        }
    }

    fn names(&self) -> MutexGuard<'_, Vec<String>> {
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `ip netns add <name>`, then `lo` up; the namespace is deleted on drop from then on.
    pub(crate) fn add(&self, name: &str) -> io::Result<()> {
        {
            let _lock = netns_lock();
            ip(&self.tools, &["netns", "add", name])?;
        }
        self.names().push(name.to_owned());
        ip(&self.tools, &["-n", name, "link", "set", "lo", "up"])?;
        Ok(())
    }

    /// Deletes every namespace (processes still inside keep theirs until they end).
    pub(crate) fn delete_all(&self) {
        let names = std::mem::take(&mut *self.names());
        for name in names.iter().rev() {
            delete(&self.tools, name);
        }
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        self.delete_all();
    }
}

fn delete(tools: &Tools, name: &str) {
    let _lock = netns_lock();
    if let Err(e) = ip(tools, &["netns", "delete", name])
        && Path::new(NETNS_DIR).join(name).exists()
    {
        eprintln!("zk-testkit: could not delete network namespace {name}: {e}");
    }
}

/// The namespaces in [`NETNS_DIR`].
pub(crate) fn list() -> Vec<String> {
    let Ok(entries) = fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// Deletes the bed namespaces whose owner process is gone, after killing what still runs in
/// them (the JVMs of a test process that was killed). Returns the names deleted.
pub(crate) fn sweep_stale(tools: &Tools) -> Vec<String> {
    let me = std::process::id();
    let mut deleted = Vec::new();
    for name in list() {
        let Some(owner) = owner_pid(&name) else {
            continue;
        };
        if owner == me || Path::new("/proc").join(owner.to_string()).exists() {
            continue;
        }
        if let Ok(pids) = ip(tools, &["netns", "pids", &name]) {
            for pid in pids
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                if let Some(pid) = Pid::from_raw(pid) {
                    let _ = kill_process(pid, Signal::KILL);
                }
            }
        }
        delete(tools, &name);
        deleted.push(name);
    }
    deleted
}

/// Opens the namespace `name` (its file in [`NETNS_DIR`]).
pub(crate) fn open(name: &str) -> io::Result<OwnedFd> {
    let path = Path::new(NETNS_DIR).join(name);
    File::open(&path)
        .map(OwnedFd::from)
        .map_err(|e| io::Error::new(e.kind(), format!("opening {}: {e}", path.display())))
}

/// Moves the calling thread into the network namespace `fd` refers to (`setns`). Other
/// threads keep theirs; threads the calling thread starts afterwards inherit it.
pub(crate) fn enter(fd: &impl AsFd) -> io::Result<()> {
    move_into_link_name_space(fd.as_fd(), Some(LinkNameSpaceType::Network))
        .map_err(|e| io::Error::other(format!("setns into a network namespace: {e}")))
}

/// Runs `f` on a new thread inside the namespace `name`, and returns what it returns. A panic of
/// `f` resumes on the caller.
pub(crate) fn run_in<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> io::Result<T> {
    let fd = open(name)?;
    thread::scope(|scope| {
        let handle = thread::Builder::new()
            .name(format!("netns {name}"))
            .spawn_scoped(scope, move || {
                enter(&fd)?;
                drop(fd);
                Ok(f())
            })?;
        match handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The identity (inode) of the network namespace `name`.
pub(crate) fn inode(name: &str) -> io::Result<u64> {
    Ok(fs::metadata(Path::new(NETNS_DIR).join(name))?.ino())
}

/// The identity (inode) of the calling thread's network namespace.
pub(crate) fn current_inode() -> io::Result<u64> {
    Ok(fs::metadata("/proc/thread-self/ns/net")?.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner_pid() {
        let prefix = bed_prefix();
        let pid = std::process::id();
        assert!(prefix.starts_with(&format!("rzkp{pid}x")), "{prefix}");
        assert_eq!(owner_pid(&format!("{prefix}-hub")), Some(pid));
        assert_eq!(owner_pid("rzkp12x3-s0"), Some(12));
        assert_eq!(owner_pid("rzkp12x-s0"), None);
        assert_eq!(owner_pid("rzkpx3-s0"), None);
        assert_eq!(owner_pid("rzkp12x3"), None);
        assert_eq!(owner_pid("other-ns"), None);
        assert_ne!(bed_prefix(), bed_prefix());
        // The longest node name stays a short file name.
        assert!(format!("{NS_PREFIX}{}x{}-c153", 1 << 22, u64::MAX).len() < 40);
    }
}
