//! Test kit: starts real Apache ZooKeeper 3.8 servers on 127.0.0.1.
//!
//! - [`ZkServer`]: a standalone server (`ZooKeeperServerMain`) on a free port with a throw-away
//!   data directory (on `/dev/shm` when possible).
//! - [`Ensemble`]: a quorum of `n` servers (`QuorumPeerMain`) on loopback, with per-server
//!   stop/kill/restart and leader lookup.
//! - [`four_letter`]: ZooKeeper's four-letter admin commands (`ruok`, `srvr`, `mntr`, ...).
//! - [`fault`]: fault injection on tokio: a TCP proxy that cuts, refuses, freezes, delays or
//!   cuts right after a chosen request, and a hostile scripted server.
//! - [`kdc`]: a local MIT Kerberos KDC on 127.0.0.1 with a throw-away realm, servers that
//!   authenticate with Kerberos, and the runner of the Kerberos test processes.
//! - [`java`]: small Java programs run from tests (the ZooKeeper Java client, Apache Curator).
//! - `client` (feature `client`, which adds a dependency on `zk-proto`): the helpers the async
//!   integration tests of the workspace share: servers started off the runtime's threads,
//!   bounded connects, `within`/`eventually`/`wait_for_state` and the other bounded waits, a
//!   session-state log, node listings, and a `serial()` guard for tests that start JVMs. Turn
//!   it on in a dev-dependency: `zk-testkit = { workspace = true, features = ["client"] }`.
//!
//! The API is synchronous (std processes and sockets); call it from `#[test]` functions, or
//! from async tests through `tokio::task::spawn_blocking` when a start must not block a runtime
//! thread (the starters of `client` do that). Java and the ZooKeeper jars come from Debian's `zookeeper` package (or
//! [`ENV_CLASSPATH`] / [`ENV_JAVA`]); when they are missing every start fails with
//! [`Error::NotInstalled`], whose message says to run `scripts/install-deps.sh`, and a test that
//! unwraps a start with [`started`] (as the `client` starters do) fails with that one line.
//! Tests never skip silently.
//!
//! ```no_run
//! use zk_testkit::{Ensemble, Mode, ZkServer};
//!
//! let server = ZkServer::builder().tick_time(std::time::Duration::from_millis(500)).start()?;
//! assert_eq!(server.four_letter("ruok")?, "imok");
//! assert_eq!(server.mode()?, Mode::Standalone);
//! println!("connect to {}", server.connect_string());
//!
//! let ensemble = Ensemble::start(3)?;
//! let leader = ensemble.wait_for_leader()?;
//! ensemble.kill(leader);
//! let new_leader = ensemble.wait_for_leader()?;
//! assert_ne!(leader, new_leader);
//! ensemble.restart(leader)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Environment variables: [`ENV_CLASSPATH`] (`ZK_CLASSPATH`), [`ENV_JAVA`] (`ZK_JAVA`),
//! [`ENV_DIR`] (`ZK_TESTKIT_DIR`, parent of the server directories), [`ENV_KEEP`]
//! (`ZK_TESTKIT_KEEP_DIRS=1` keeps the directories and logs after the test).

#[cfg(feature = "client")]
pub mod client;
mod ensemble;
mod error;
pub mod fault;
mod four_letter;
mod install;
pub mod java;
pub mod kdc;
mod options;
mod ports;
mod process;
mod server;
mod workdir;

pub use ensemble::{Ensemble, EnsembleBuilder, EnsembleServer, QUORUM_MAIN};
pub use error::{Error, INSTALL_HINT, KERBEROS_INSTALL_HINT, Result, started};
pub use four_letter::{FOUR_LETTER_TIMEOUT, Mode, four_letter};
pub use install::{DEBIAN_JAR_DIR, ENV_CLASSPATH, ENV_JAVA, ZkInstall};
pub use ports::{free_port, free_ports};
pub use server::{STANDALONE_MAIN, ZkServer, ZkServerBuilder};
pub use workdir::{ENV_DIR, ENV_KEEP, base_dir, reap_orphans};

#[cfg(test)]
mod tests {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_can_be_shared_across_threads() {
        assert_send_sync::<crate::ZkServer>();
        assert_send_sync::<crate::Ensemble>();
        assert_send_sync::<crate::Error>();
    }
}
