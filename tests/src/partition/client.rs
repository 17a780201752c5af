//! Client namespaces: where a test's client code runs, on the bed's bridge.

use std::ffi::OsStr;
use std::io;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Arc;

use tokio::runtime::Runtime;

use crate::error::{Error, Result};

use super::net::Net;
use super::netns;

/// A network namespace on the bed's bridge for client code, with address
/// `198.18.0.(100 + k)` (the `k`-th of the bed); from [`PartitionBed::client_namespace`].
///
/// Network namespaces are per thread in Linux: code reaches the bed's servers only from a thread
/// inside this namespace, which [`ClientNamespace::runtime`], [`ClientNamespace::run`] and
/// [`ClientNamespace::command`] provide. Cheap to clone. The namespace is deleted when the bed is
/// dropped; using it afterwards fails.
///
/// [`PartitionBed::client_namespace`]: super::PartitionBed::client_namespace
#[derive(Debug, Clone)]
pub struct ClientNamespace {
    pub(crate) net: Arc<Net>,
    pub(crate) name: String,
    pub(crate) label: String,
    pub(crate) ip: Ipv4Addr,
}

impl ClientNamespace {
    /// The namespace's name (`rzkp<pid>x<n>-c<k>`), as `ip netns` shows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The label given to [`PartitionBed::client_namespace`].
    ///
    /// [`PartitionBed::client_namespace`]: super::PartitionBed::client_namespace
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The namespace's address on the bridge, `198.18.0.(100 + k)`.
    pub fn ip(&self) -> Ipv4Addr {
        self.ip
    }

    /// A multi-thread tokio runtime (2 workers, I/O and time enabled) whose threads all live in
    /// this namespace: every thread it starts, workers and blocking threads alike, moves itself
    /// into the namespace before it runs anything (whichever thread made the runtime start it),
    /// and the runtime is built on a thread inside the namespace.
    ///
    /// Sockets belong to the namespace of the thread that creates them, so what
    /// [`Runtime::spawn`] and [`Runtime::spawn_blocking`] run is inside; the future given to
    /// [`Runtime::block_on`] is polled on the *calling* thread, so a socket it creates itself
    /// (not in a spawned task) is in the caller's namespace. Spawn the work and await its
    /// handle, or call `block_on` through [`ClientNamespace::run`]. A `zk_proto::Client`'s
    /// connections are made by its driver, a spawned task: connecting inside `block_on` is fine.
    ///
    /// Drop the runtime before the bed: its threads keep the namespace alive.
    pub fn runtime(&self) -> Result<Runtime> {
        let fd = Arc::new(
            netns::open(&self.name)
                .map_err(|e| Error::io(format!("client namespace {}", self.name), e))?,
        );
        let name = self.name.clone();
        let built = netns::run_in(&self.name, move || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .thread_name(format!("{name}-rt"))
                .on_thread_start(move || {
                    if let Err(e) = netns::enter(&*fd) {
                        // A runtime thread outside the namespace would make the test lie.
                        eprintln!("zk-testkit: a runtime thread cannot enter {name}: {e}");
                        std::process::abort();
                    }
                })
                .build()
        });
        built
            .and_then(|runtime| runtime)
            .map_err(|e| Error::io(format!("building a runtime in namespace {}", self.name), e))
    }

    /// `ip netns exec <namespace> <program>`: a command that runs `program` inside the
    /// namespace (add its arguments, then spawn it).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(&self.net.tools().ip);
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// Runs `f` on a new thread inside the namespace and returns its value (blocking until it
    /// ends): for blocking socket code, e.g. a four-letter word from the client's side.
    ///
    /// # Panics
    ///
    /// When the namespace cannot be entered (the bed was dropped); a panic of `f` resumes here.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        netns::run_in(&self.name, f)
            .unwrap_or_else(|e| panic!("cannot run in client namespace {}: {e}", self.name))
    }

    /// True when the calling thread is inside this namespace (compares the namespaces' inodes).
    pub fn contains_current_thread(&self) -> io::Result<bool> {
        Ok(netns::inode(&self.name)? == netns::current_inode()?)
    }
}
