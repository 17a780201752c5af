//! A ZooKeeper quorum (`QuorumPeerMain`) on loopback.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::Mode;
use crate::options::{instance_methods, option_methods};
use crate::ports::free_ports;
use crate::process::PORT_ATTEMPTS;
use crate::process::{Instance, Options, Spawned, Spec, spawn_all_ready, wait_all_ready};
use crate::server::{dump_log_if_panicking, restart_instance};
use crate::tls::TestCerts;
use crate::workdir::WorkDir;

/// Main class of a quorum peer.
pub const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

pub(crate) fn quorum_member_ready(mode: &Mode) -> bool {
    matches!(mode, Mode::Leader | Mode::Follower | Mode::Observer)
}

/// The zoo.cfg lines every quorum peer gets: the common ones, `initLimit`/`syncLimit` scaled to
/// at least 10 s / 5 s, and `standaloneEnabled=false`; the caller adds its own.
pub(crate) fn quorum_config(opts: &Options, data_dir: &Path) -> String {
    let tick = opts.tick_ms();
    let init_limit = (10_000u128.div_ceil(tick)).max(10);
    let sync_limit = (5_000u128.div_ceil(tick)).max(5);
    let mut cfg = opts.common_config(data_dir);
    let _ = writeln!(cfg, "initLimit={init_limit}");
    let _ = writeln!(cfg, "syncLimit={sync_limit}");
    let _ = writeln!(cfg, "standaloneEnabled=false");
    cfg
}

/// Builder for [`Ensemble`]; from [`Ensemble::builder`].
#[derive(Debug, Clone)]
pub struct EnsembleBuilder {
    size: usize,
    opts: Options,
}

impl EnsembleBuilder {
    option_methods!();

    /// Starts the ensemble and waits for a leader (see [`Ensemble::start`]).
    pub fn start(self) -> Result<Ensemble> {
        Ensemble::start_with(self.size, self.opts)
    }
}

/// One server of an [`Ensemble`].
#[derive(Debug)]
pub struct EnsembleServer {
    id: u32,
    quorum_port: u16,
    election_port: u16,
    secure_port: Option<u16>,
    inst: Instance,
}

impl EnsembleServer {
    /// The server's `myid` (index + 1).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The port followers use to talk to the leader.
    pub fn quorum_port(&self) -> u16 {
        self.quorum_port
    }

    /// The leader election port.
    pub fn election_port(&self) -> u16 {
        self.election_port
    }

    /// With TLS ([`EnsembleBuilder::tls`]): the secure client port (on 127.0.0.1).
    pub fn secure_port(&self) -> Option<u16> {
        self.secure_port
    }

    instance_methods!();
}

/// A ZooKeeper ensemble of `n` servers on 127.0.0.1, each with its own data directory (with a
/// `myid` file) and its own client, quorum and election ports.
///
/// Servers are addressed by 0-based index `i` (`myid` is `i + 1`); methods taking an index
/// panic when it is out of range, like slice indexing. All JVMs are killed (SIGKILL) and the
/// directories removed on drop; a drop during a panic prints the tail of every server log.
/// The defaults are `tickTime=250` (fast elections; `initLimit`/`syncLimit` are scaled to
/// at least 10 s / 5 s), `forceSync=no` and a 60 s startup timeout.
#[derive(Debug)]
pub struct Ensemble {
    servers: Vec<EnsembleServer>,
    opts: Options,
    certs: Option<TestCerts>,
    root: WorkDir,
}

impl Ensemble {
    /// Starts an ensemble of `size` servers with the defaults and waits until every server
    /// answers `ruok`, reports `Mode: leader` or `Mode: follower` in `srvr`, and exactly one
    /// is the leader.
    ///
    /// # Panics
    /// When `size` is 0.
    pub fn start(size: usize) -> Result<Ensemble> {
        Ensemble::builder(size).start()
    }

    /// A builder for an ensemble of `size` servers.
    ///
    /// # Panics
    /// When `size` is 0.
    pub fn builder(size: usize) -> EnsembleBuilder {
        assert!(size > 0, "an ensemble needs at least one server");
        EnsembleBuilder {
            size,
            opts: Options::new(Duration::from_millis(250), Duration::from_secs(60)),
        }
    }

    fn start_with(size: usize, opts: Options) -> Result<Ensemble> {
        let install = opts.install()?;
        let root = WorkDir::create("ensemble")?;
        let certs = match opts.tls {
            Some(_) => Some(TestCerts::generate(&root.path().join("tls"))?),
            None => None,
        };
        let mut last_conflict = None;
        for _ in 0..PORT_ATTEMPTS {
            // Client, quorum and election ports of each server, then the secure ports.
            let ports = free_ports(4 * size)
                .map_err(|e| Error::io("picking free ports on 127.0.0.1", e))?;
            // server.N=127.0.0.1:quorum:election;127.0.0.1:client
            let mut cluster = String::new();
            for i in 0..size {
                let _ = writeln!(
                    cluster,
                    "server.{}=127.0.0.1:{}:{};127.0.0.1:{}",
                    i + 1,
                    ports[3 * i + 1],
                    ports[3 * i + 2],
                    ports[3 * i]
                );
            }
            let mut servers = Vec::with_capacity(size);
            for i in 0..size {
                let id = u32::try_from(i + 1).unwrap_or(u32::MAX);
                let dir = root.path().join(format!("server-{id}"));
                let mut cfg = quorum_config(&opts, &Instance::data_dir_of(&dir));
                let _ = writeln!(cfg, "reconfigEnabled=false");
                cfg.push_str(&cluster);
                let secure_port = ports[3 * size + i];
                if let (Some(certs), Some(client_auth)) = (&certs, opts.tls) {
                    cfg.push_str(&certs.server_config(secure_port, client_auth));
                }
                cfg.push_str(&opts.user_config());
                let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, ports[3 * i]));
                let spec = Spec {
                    name: format!("ensemble server {id} (index {i})"),
                    main_class: QUORUM_MAIN,
                    dir,
                    addr,
                    config: cfg,
                    myid: Some(id),
                };
                let inst = Instance::prepare(&install, &opts, spec)?;
                servers.push(EnsembleServer {
                    id,
                    quorum_port: ports[3 * i + 1],
                    election_port: ports[3 * i + 2],
                    secure_port: certs.as_ref().map(|_| secure_port),
                    inst,
                });
            }
            let deadline = Instant::now() + opts.startup_timeout;
            let insts: Vec<&Instance> = servers.iter().map(|s| &s.inst).collect();
            match spawn_all_ready(&insts, deadline, quorum_member_ready, "ensemble")? {
                Spawned::Ready => {
                    for port in servers.iter().filter_map(|s| s.secure_port) {
                        crate::process::wait_port_open(port, deadline)?;
                    }
                    let ensemble = Ensemble {
                        servers,
                        opts,
                        certs,
                        root,
                    };
                    ensemble.wait_for_leader_until(deadline)?;
                    return Ok(ensemble);
                }
                Spawned::PortTaken(error) => last_conflict = Some(error),
            }
        }
        Err(last_conflict.unwrap_or_else(|| Error::Timeout {
            what: "an ensemble".into(),
            last_seen: "no start attempt".into(),
        }))
    }

    /// The number of servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True for an ensemble without servers (never the case for a started one).
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The server with 0-based index `i`.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn server(&self, i: usize) -> &EnsembleServer {
        &self.servers[i]
    }

    /// All servers, by index.
    pub fn servers(&self) -> &[EnsembleServer] {
        &self.servers
    }

    /// The ensemble's root directory (one `server-<myid>` directory per server).
    pub fn dir(&self) -> &Path {
        self.root.path()
    }

    /// All client addresses, by index.
    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.servers.iter().map(EnsembleServer::addr).collect()
    }

    /// `127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3`: every server's client address.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(EnsembleServer::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// With TLS ([`EnsembleBuilder::tls`]): the generated certificates (one CA and one
    /// server certificate for every server).
    pub fn tls_certs(&self) -> Option<&TestCerts> {
        self.certs.as_ref()
    }

    /// With TLS: every server's secure client address, `127.0.0.1:s1,127.0.0.1:s2,...`.
    pub fn tls_connect_string(&self) -> Option<String> {
        self.servers
            .iter()
            .map(|s| {
                s.secure_port
                    .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)).to_string())
            })
            .collect::<Option<Vec<_>>>()
            .map(|addrs| addrs.join(","))
    }

    /// Stops server `i`: SIGTERM, then SIGKILL after 5 s. No-op when not running.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn stop(&self, i: usize) {
        self.servers[i].inst.stop();
    }

    /// Kills server `i` with SIGKILL (`Child::kill`). No-op when not running.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn kill(&self, i: usize) {
        self.servers[i].inst.kill();
    }

    /// Stops server `i` if it runs, starts it again with the same ports and data, and waits
    /// until it serves as leader, follower or observer (which needs a quorum of running servers).
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn restart(&self, i: usize) -> Result<()> {
        let inst = &self.servers[i].inst;
        inst.stop();
        restart_instance(inst, self.opts.startup_timeout, quorum_member_ready)
    }

    /// Waits (up to the startup timeout) until server `i` answers `ruok` and serves as leader,
    /// follower or observer.
    ///
    /// # Panics
    /// When `i >= self.len()`.
    pub fn wait_until_serving(&self, i: usize) -> Result<()> {
        let inst = &self.servers[i].inst;
        let deadline = Instant::now() + self.opts.startup_timeout;
        wait_all_ready(&[inst], deadline, quorum_member_ready).map_err(|f| f.into_error(inst))
    }

    /// The index of a server whose `srvr` currently reports `Mode: leader`, if any.
    /// Right after a leader change two servers may briefly disagree; see
    /// [`Ensemble::wait_for_leader`] for a settled answer.
    pub fn leader_index(&self) -> Option<usize> {
        self.servers
            .iter()
            .position(|s| s.inst.is_running() && matches!(s.mode(), Ok(Mode::Leader)))
    }

    /// Waits (up to the startup timeout) until the running servers agree: exactly one reports
    /// `leader` and every other running server reports `follower` or `observer`. Returns the
    /// leader's index.
    pub fn wait_for_leader(&self) -> Result<usize> {
        self.wait_for_leader_until(Instant::now() + self.opts.startup_timeout)
    }

    fn wait_for_leader_until(&self, deadline: Instant) -> Result<usize> {
        loop {
            let mut leaders = Vec::new();
            let mut settled = true;
            let mut seen = Vec::new();
            for (i, s) in self.servers.iter().enumerate() {
                if !s.inst.is_running() {
                    seen.push(format!("{i}: {}", s.inst.state()));
                    continue;
                }
                let mode = s.mode();
                match &mode {
                    Ok(Mode::Leader) => leaders.push(i),
                    Ok(Mode::Follower | Mode::Observer) => {}
                    Ok(_) | Err(_) => settled = false,
                }
                seen.push(format!(
                    "{i}: {}",
                    mode.map_or_else(|e| e.to_string(), |m| m.to_string())
                ));
            }
            if settled && leaders.len() == 1 {
                return Ok(leaders[0]);
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: "exactly one leader among the running servers".into(),
                    last_seen: seen.join(", "),
                });
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for s in &self.servers {
            dump_log_if_panicking(&s.inst);
        }
        for s in &self.servers {
            s.inst.kill();
        }
    }
}
