//! Test kit: starts real Apache ZooKeeper 3.8 servers on 127.0.0.1.
//!
//! - [`ZkServer`]: a standalone server (`ZooKeeperServerMain`) on a free port with a throw-away
//!   data directory (on `/dev/shm` when possible).
//! - [`Ensemble`]: a quorum of `n` servers (`QuorumPeerMain`) on loopback, with per-server
//!   stop/kill/restart and leader lookup.
//! - [`DynamicEnsemble`]: a quorum whose membership tests change with `reconfig`: joiners
//!   started on demand, servers addressed by id (see [Dynamic
//!   reconfiguration](#dynamic-reconfiguration)).
//! - [`four_letter`]: ZooKeeper's four-letter admin commands (`ruok`, `srvr`, `mntr`, ...).
//! - [`fault`]: fault injection on tokio: a TCP proxy that cuts, refuses, freezes, delays or
//!   cuts right after a chosen request, and a hostile scripted server.
//! - [`java`]: small Java programs run from tests (the ZooKeeper Java client, Apache Curator).
//! - `client` (feature `client`, which adds a dependency on `zk-proto`): the helpers the async
//!   integration tests of the workspace share: servers started off the runtime's threads,
//!   bounded connects, `within`/`eventually`/`wait_for_state` and the other bounded waits, a
//!   session-state log, node listings, and a `serial()` guard for tests that start JVMs. Turn
//!   it on in a dev-dependency: `zk-testkit = { workspace = true, features = ["client"] }`.
//!   It also runs reconfigs from tests: `add_member`, `remove_member`, `replace_member`.
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
//! # Dynamic reconfiguration
//!
//! [`DynamicEnsemble::start`] starts `n` participants (ids `1..=n`) with the settings that
//! let a test change the membership, each chosen for a reason:
//!
//! - `reconfigEnabled=true`: 3.8 refuses every reconfig without it (`ReconfigDisabled`).
//! - `dynamicConfigFile=<server dir>/zoo.cfg.dynamic`, a file with the
//!   `server.N=127.0.0.1:<quorum>:<election>:participant;127.0.0.1:<client>` lines (the client
//!   address is part of the server line, so zoo.cfg has no `clientPort`): the documented
//!   layout (the guide says a zoo.cfg with server lines would also be split by the server;
//!   the kit does not rely on that). 3.8.0 writes `zoo.cfg.dynamic.<version>` on boot and
//!   after every committed reconfig, and points zoo.cfg's `dynamicConfigFile` at it, so
//!   [`DynamicEnsemble::restart`] brings a server back with the membership it last saw.
//! - `standaloneEnabled=false`: the quorum code even with one participant, so an ensemble
//!   may start with one server, grow from it and shrink to it.
//! - `-Dzookeeper.skipACL=yes`: since 3.5.3 reconfig needs write access to
//!   `/zookeeper/config`, which only the super user has; 3.8.0 answers `NoAuth` to any other
//!   session. skipACL is the documented way around it, and switches off every ACL check on
//!   these servers (only these: [`Ensemble`] and [`ZkServer`] keep ACLs). A test of the
//!   authorization itself overrides it with `.system_property("zookeeper.skipACL", "no")`
//!   and authenticates as the super user
//!   (`zookeeper.DigestAuthenticationProvider.superDigest`).
//! - `tickTime=250` and the other defaults of [`Ensemble`].
//!
//! [`DynamicEnsemble::spawn_joiner`] starts a server that is not yet a member: its dynamic
//! file has the configuration the leader reports in `conf` plus itself as a participant (the
//! second of the ways ZooKeeper's guide lists; one joiner per file, never two, so that joiners
//! cannot form a quorum of their own). 3.8.0 then finds the leader, syncs, adopts the
//! committed configuration (in which it is absent) and serves as a non-voting follower: `srvr`
//! says `Mode: follower`, which is what the kit waits for. The test adds it with a reconfig
//! (`client::add_member` with [`Joiner::server_line`]).
//!
//! What else 3.8.0 does, as checked against the installed server:
//!
//! - A removed server is not shut down: it stays a non-voting follower (`srvr` still says
//!   `Mode: follower`) until stopped; [`DynamicEnsemble::wait_for_membership`] waits until
//!   every live server runs with the new configuration, after which it is safe to stop.
//! - Removing the leader hands leadership over and every server drops its client
//!   connections: the reconfig's reply may be lost (`ConnectionLoss`) although it was
//!   committed. The `client` helpers then read `/zookeeper/config` to learn the outcome.
//! - The leader answers `NewConfigNoQuorum` while no quorum of the new configuration is
//!   connected and synced, and `ReconfigInProgress` while another reconfig is not finished;
//!   the `client` helpers wait through both, boundedly. It does not check that an added
//!   server runs: adding a server that is down succeeds when the others are a quorum of the
//!   new configuration. Adding a present server or removing an absent one commits an
//!   unchanged configuration with a new version.
//!
//! ```no_run
//! use zk_testkit::DynamicEnsemble;
//!
//! let ensemble = DynamicEnsemble::start(3)?;
//! let joiner = ensemble.spawn_joiner()?; // id 4, a non-voting follower until added
//! // ... a client runs reconfig with joiner.server_line, then removes server 1 ...
//! ensemble.wait_for_membership(&[2, 3, 4])?;
//! ensemble.stop(1);
//! println!("live: {:?} at {}", ensemble.live_ids(), ensemble.connect_string());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Environment variables: [`ENV_CLASSPATH`] (`ZK_CLASSPATH`), [`ENV_JAVA`] (`ZK_JAVA`),
//! [`ENV_DIR`] (`ZK_TESTKIT_DIR`, parent of the server directories), [`ENV_KEEP`]
//! (`ZK_TESTKIT_KEEP_DIRS=1` keeps the directories and logs after the test).

#[cfg(feature = "client")]
pub mod client;
mod dynamic;
mod ensemble;
mod error;
pub mod fault;
mod four_letter;
mod install;
pub mod java;
mod options;
mod ports;
mod process;
mod server;
mod workdir;

pub use dynamic::{DynamicEnsemble, DynamicEnsembleBuilder, DynamicMember, Joiner};
pub use ensemble::{Ensemble, EnsembleBuilder, EnsembleServer, QUORUM_MAIN};
pub use error::{Error, INSTALL_HINT, Result, started};
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
        assert_send_sync::<crate::DynamicEnsemble>();
        assert_send_sync::<crate::Error>();
    }
}
