//! A ZooKeeper quorum whose membership changes at run time (`reconfigEnabled=true`, dynamic
//! configuration files), on loopback. What ZooKeeper 3.8.0 does and why the kit configures it
//! so: the crate documentation's "Dynamic reconfiguration".

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use crate::ensemble::{QUORUM_MAIN, quorum_config, quorum_member_ready};
use crate::error::{Error, Result};
use crate::four_letter::Mode;
use crate::install::ZkInstall;
use crate::options::{instance_methods, option_methods};
use crate::ports::free_ports;
use crate::process::PORT_ATTEMPTS;
use crate::process::{Instance, Options, Spawned, Spec, spawn_all_ready};
use crate::server::{dump_log_if_panicking, restart_instance};
use crate::workdir::WorkDir;

/// Name of the dynamic configuration file the kit writes into each server's directory.
const DYNAMIC_FILE: &str = "zoo.cfg.dynamic";
/// How often the waits of this module poll.
const POLL: Duration = Duration::from_millis(50);

/// Builder for [`DynamicEnsemble`]; from [`DynamicEnsemble::builder`].
#[derive(Debug, Clone)]
pub struct DynamicEnsembleBuilder {
    size: usize,
    opts: Options,
}

impl DynamicEnsembleBuilder {
    option_methods!();

    /// Starts the ensemble and waits for a leader (see [`DynamicEnsemble::start`]).
    pub fn start(self) -> Result<DynamicEnsemble> {
        DynamicEnsemble::start_with(self.size, self.opts)
    }
}

/// One server started by a [`DynamicEnsemble`]: a first member or a joiner.
#[derive(Debug)]
pub struct DynamicMember {
    id: u32,
    quorum_port: u16,
    election_port: u16,
    line: String,
    inst: Instance,
}

impl DynamicMember {
    /// The server's `myid`.
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

    /// The server's line in the dynamic configuration, as ZooKeeper writes it in
    /// `/zookeeper/config`: `server.N=127.0.0.1:<quorum>:<election>:participant;127.0.0.1:<client>`.
    pub fn server_line(&self) -> &str {
        &self.line
    }

    /// The dynamic configuration file the kit wrote before the first start. The server
    /// keeps its current membership in `zoo.cfg.dynamic.<version>` files next to it, named
    /// by the `dynamicConfigFile` line of its (rewritten) zoo.cfg.
    pub fn dynamic_config_path(&self) -> PathBuf {
        self.inst.dir().join(DYNAMIC_FILE)
    }

    instance_methods!();
}

/// A server started by [`DynamicEnsemble::spawn_joiner`], running and synced with the leader,
/// not yet a member of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Joiner {
    /// The new server's `myid`.
    pub id: u32,
    /// Its line for `reconfig -add` (the `joiningServers` of a reconfig request), in the form
    /// of [`DynamicMember::server_line`].
    pub server_line: String,
}

/// A ZooKeeper ensemble on 127.0.0.1 whose membership tests change with `reconfig`: servers
/// run with `reconfigEnabled=true`, `standaloneEnabled=false`, a dynamic configuration file
/// and `-Dzookeeper.skipACL=yes` (see [Dynamic reconfiguration](crate#dynamic-reconfiguration)
/// for why).
///
/// Servers are addressed by their `myid` (`id`); the first `n` have ids `1..=n`, each joiner
/// gets the next free id. Methods taking an id panic when no server with that id was started
/// by this ensemble, like slice indexing. Members are never forgotten: a stopped or removed
/// server keeps its id, directory and log.
///
/// The member list grows while tests hold the ensemble (typically in an `Arc`), so every
/// method takes `&self` and a server is handed out as an `Arc<DynamicMember>`. Starting a
/// joiner is serialized: two concurrent [`spawn_joiner`](DynamicEnsemble::spawn_joiner)
/// calls run one after the other.
///
/// The kit does not run `reconfig` itself: that is a client request (the `client` module
/// has `add_member`, `remove_member` and `replace_member`). "Live" means a running JVM: a
/// server removed from the configuration stays live (a non-voting follower) until it is
/// stopped.
///
/// All JVMs are killed (SIGKILL) and the directories removed on drop; a drop during a panic
/// prints the tail of every server log. The defaults are those of [`crate::Ensemble`]:
/// `tickTime=250` (`initLimit`/`syncLimit` scaled to at least 10 s / 5 s), `forceSync=no`,
/// a 60 s startup timeout.
#[derive(Debug)]
pub struct DynamicEnsemble {
    members: Mutex<Vec<Arc<DynamicMember>>>,
    joining: Mutex<()>,
    install: ZkInstall,
    opts: Options,
    root: WorkDir,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl DynamicEnsemble {
    /// Starts `size` participants with the defaults and waits until every server answers
    /// `ruok` and serves as leader or follower, and exactly one is the leader.
    ///
    /// # Panics
    /// When `size` is 0.
    pub fn start(size: usize) -> Result<DynamicEnsemble> {
        DynamicEnsemble::builder(size).start()
    }

    /// A builder for an ensemble of `size` first members.
    ///
    /// The kit's `-Dzookeeper.skipACL=yes` comes before the builder's system properties: a
    /// test of reconfig's authorization turns it off with
    /// `.system_property("zookeeper.skipACL", "no")` (and then needs the super user, e.g.
    /// `zookeeper.DigestAuthenticationProvider.superDigest`).
    ///
    /// # Panics
    /// When `size` is 0.
    pub fn builder(size: usize) -> DynamicEnsembleBuilder {
        assert!(size > 0, "an ensemble needs at least one server");
        let mut opts = Options::new(Duration::from_millis(250), Duration::from_secs(60));
        opts.system_properties
            .push(("zookeeper.skipACL".into(), "yes".into()));
        DynamicEnsembleBuilder { size, opts }
    }

    fn start_with(size: usize, opts: Options) -> Result<DynamicEnsemble> {
        let install = opts.install()?;
        let root = WorkDir::create("dynamic")?;
        let mut last_conflict = None;
        for _ in 0..PORT_ATTEMPTS {
            let ports = free_ports(3 * size)
                .map_err(|e| Error::io("picking free ports on 127.0.0.1", e))?;
            let planned: Vec<(u32, Ports)> = ports
                .chunks_exact(3)
                .zip(1u32..)
                .map(|(p, id)| (id, Ports::from_slice(p)))
                .collect();
            let cluster: Vec<String> = planned.iter().map(|(id, p)| p.line(*id)).collect();
            let mut members = Vec::with_capacity(size);
            for (id, p) in &planned {
                members.push(Arc::new(prepare_member(
                    &install,
                    &opts,
                    root.path(),
                    *id,
                    p,
                    &cluster,
                )?));
            }
            let deadline = Instant::now() + opts.startup_timeout;
            let insts: Vec<&Instance> = members.iter().map(|m| &m.inst).collect();
            match spawn_all_ready(&insts, deadline, quorum_member_ready, "dynamic ensemble")? {
                Spawned::Ready => {
                    let ensemble = DynamicEnsemble {
                        members: Mutex::new(members),
                        joining: Mutex::new(()),
                        install,
                        opts,
                        root,
                    };
                    ensemble.wait_for_leader_until(deadline)?;
                    return Ok(ensemble);
                }
                Spawned::PortTaken(error) => last_conflict = Some(error),
            }
        }
        Err(last_conflict.unwrap_or_else(|| Error::Timeout {
            what: "a dynamic ensemble".into(),
            last_seen: "no start attempt".into(),
        }))
    }

    /// Every server this ensemble started, running or not, by id.
    pub fn members(&self) -> Vec<Arc<DynamicMember>> {
        lock(&self.members).clone()
    }

    /// The server with this id.
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn member(&self, id: u32) -> Arc<DynamicMember> {
        match self.find(id) {
            Some(m) => m,
            None => panic!("no server with id {id} in this dynamic ensemble"),
        }
    }

    fn find(&self, id: u32) -> Option<Arc<DynamicMember>> {
        lock(&self.members).iter().find(|m| m.id == id).cloned()
    }

    /// The ids of every server this ensemble started, running or not, in increasing order.
    pub fn ids(&self) -> Vec<u32> {
        lock(&self.members).iter().map(|m| m.id).collect()
    }

    /// The ids of the servers whose JVM runs, in increasing order: the members of the
    /// configuration that were not stopped, plus joiners not yet added and removed servers
    /// not yet stopped.
    pub fn live_ids(&self) -> Vec<u32> {
        self.members()
            .iter()
            .filter(|m| m.is_running())
            .map(|m| m.id)
            .collect()
    }

    /// The client address of server `id`.
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn addr(&self, id: u32) -> SocketAddr {
        self.member(id).addr()
    }

    /// The `server.N=...` line of server `id` (see [`DynamicMember::server_line`]).
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn server_line(&self, id: u32) -> String {
        self.member(id).line.clone()
    }

    /// `127.0.0.1:p1,127.0.0.1:p2,...`: the client addresses of the live servers
    /// ([`DynamicEnsemble::live_ids`]).
    pub fn connect_string(&self) -> String {
        self.members()
            .iter()
            .filter(|m| m.is_running())
            .map(|m| m.connect_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The ensemble's root directory (one `server-<id>` directory per server).
    pub fn dir(&self) -> &Path {
        self.root.path()
    }

    /// Stops server `id`: SIGTERM, then SIGKILL after 5 s. No-op when not running. Stopping
    /// a member of the configuration does not change the configuration.
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn stop(&self, id: u32) {
        self.member(id).inst.stop();
    }

    /// Kills server `id` with SIGKILL. No-op when not running.
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn kill(&self, id: u32) {
        self.member(id).inst.kill();
    }

    /// Stops server `id` if it runs, starts it again with the same ports and data, and waits
    /// until it serves as leader or follower. The server reads its zoo.cfg, which ZooKeeper
    /// points at the membership it last saw; a joiner that has not been added cannot start
    /// again (it is absent from that membership: ZooKeeper's guide says to give it an
    /// initial configuration again, which is what a new joiner does).
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn restart(&self, id: u32) -> Result<()> {
        let m = self.member(id);
        m.inst.stop();
        restart_instance(&m.inst, self.opts.startup_timeout, quorum_member_ready)
    }

    /// The id of a live server whose `srvr` reports `Mode: leader`, if any. Right after a
    /// leader change two servers may briefly disagree; see
    /// [`DynamicEnsemble::wait_for_leader`] for a settled answer.
    pub fn leader_id(&self) -> Option<u32> {
        self.members()
            .iter()
            .find(|m| m.is_running() && matches!(m.mode(), Ok(Mode::Leader)))
            .map(|m| m.id)
    }

    /// Waits (up to the startup timeout) until the live servers agree: exactly one reports
    /// `leader` and every other live server `follower` or `observer` (joiners and removed
    /// servers are non-voting followers). Returns the leader's id.
    pub fn wait_for_leader(&self) -> Result<u32> {
        self.wait_for_leader_until(Instant::now() + self.opts.startup_timeout)
    }

    fn wait_for_leader_until(&self, deadline: Instant) -> Result<u32> {
        loop {
            let mut leaders = Vec::new();
            let mut settled = true;
            let mut seen = Vec::new();
            for m in self.members() {
                if !m.inst.is_running() {
                    seen.push(format!("{}: {}", m.id, m.inst.state()));
                    continue;
                }
                let mode = m.mode();
                match &mode {
                    Ok(Mode::Leader) => leaders.push(m.id),
                    Ok(Mode::Follower | Mode::Observer) => {}
                    Ok(_) | Err(_) => settled = false,
                }
                seen.push(format!(
                    "{}: {}",
                    m.id,
                    mode.map_or_else(|e| e.to_string(), |m| m.to_string())
                ));
            }
            if settled && leaders.len() == 1 {
                return Ok(leaders[0]);
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: "exactly one leader among the live servers".into(),
                    last_seen: seen.join(", "),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// The ids of the configuration server `id` is running with, from the `membership:`
    /// section of its `conf` answer, in increasing order.
    ///
    /// # Errors
    /// When `conf` fails, or its answer has no `server.N=` line (the server is not serving).
    ///
    /// # Panics
    /// When this ensemble started no server with this id.
    pub fn membership_seen_by(&self, id: u32) -> io::Result<Vec<u32>> {
        let conf = self.member(id).four_letter("conf")?;
        let ids: Vec<u32> = membership_lines(&conf)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        if ids.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("no membership in conf: {:?}", conf.trim()),
            ));
        }
        Ok(ids)
    }

    /// Waits (up to the startup timeout) until every live server runs with a configuration
    /// of exactly the servers `ids` ([`DynamicEnsemble::membership_seen_by`]): the new
    /// configuration of a committed reconfig has been activated everywhere. After a removal,
    /// that is when ZooKeeper's guide considers the removed server safe to shut down.
    pub fn wait_for_membership(&self, ids: &[u32]) -> Result<()> {
        let expected: BTreeSet<u32> = ids.iter().copied().collect();
        let deadline = Instant::now() + self.opts.startup_timeout;
        loop {
            let mut done = true;
            let mut seen = Vec::new();
            for m in self.members().iter().filter(|m| m.is_running()) {
                let view = self.membership_seen_by(m.id);
                match &view {
                    Ok(v) if v.iter().copied().collect::<BTreeSet<u32>>() == expected => {}
                    _ => done = false,
                }
                seen.push(format!("{}: {view:?}", m.id));
            }
            if done {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: format!("every live server to run with the membership {expected:?}"),
                    last_seen: seen.join(", "),
                });
            }
            thread::sleep(POLL);
        }
    }

    /// Starts a new server that can then be added with `reconfig`, and waits until it runs
    /// and has synced with the leader.
    ///
    /// Waits for a leader, reads the current configuration from the leader's `conf`, picks
    /// three free ports and the next free id (above every id this ensemble started and every
    /// id of the configuration), and writes the new server's dynamic file: the current
    /// configuration plus the new server as a participant (one joiner per file, as ZooKeeper's
    /// guide asks). Returns once it answers `ruok` and `srvr` reports `Mode: follower`: it has
    /// synced and serves as a non-voting follower, absent from the configuration, until a
    /// reconfig adds it ([`Joiner::server_line`]). Retries with fresh ports when one turns out
    /// to be taken.
    ///
    /// # Errors
    /// [`Error::Timeout`] without a leader, [`Error::Io`] when the leader's `conf` fails or
    /// lists no server, [`Error::StartFailed`] when the new server does not come up (its log
    /// tail included).
    pub fn spawn_joiner(&self) -> Result<Joiner> {
        let _joining = lock(&self.joining);
        let leader = self.wait_for_leader()?;
        let conf = self
            .member(leader)
            .four_letter("conf")
            .map_err(|e| Error::io(format!("conf of the leader (server {leader})"), e))?;
        let current = membership_lines(&conf);
        if current.is_empty() {
            return Err(Error::io(
                format!("reading the membership from the leader's (server {leader}) conf"),
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("no server.N= line in {:?}", conf.trim()),
                ),
            ));
        }
        let id = current
            .iter()
            .map(|(id, _)| *id)
            .chain(self.ids())
            .max()
            .unwrap_or(0)
            .saturating_add(1);
        let mut last_conflict = None;
        for _ in 0..PORT_ATTEMPTS {
            let ports =
                free_ports(3).map_err(|e| Error::io("picking free ports on 127.0.0.1", e))?;
            let p = Ports::from_slice(&ports);
            let mut cluster: Vec<String> = current.iter().map(|(_, l)| l.clone()).collect();
            cluster.push(p.line(id));
            let member = prepare_member(
                &self.install,
                &self.opts,
                self.root.path(),
                id,
                &p,
                &cluster,
            )?;
            let deadline = Instant::now() + self.opts.startup_timeout;
            let what = format!("joiner {id}");
            match spawn_all_ready(&[&member.inst], deadline, quorum_member_ready, &what)? {
                Spawned::Ready => {
                    let joiner = Joiner {
                        id,
                        server_line: member.line.clone(),
                    };
                    lock(&self.members).push(Arc::new(member));
                    return Ok(joiner);
                }
                Spawned::PortTaken(error) => last_conflict = Some(error),
            }
        }
        Err(last_conflict.unwrap_or_else(|| Error::Timeout {
            what: format!("joiner {id}"),
            last_seen: "no start attempt".into(),
        }))
    }
}

impl Drop for DynamicEnsemble {
    fn drop(&mut self) {
        let members = lock(&self.members).clone();
        for m in &members {
            dump_log_if_panicking(&m.inst);
        }
        for m in &members {
            m.inst.kill();
        }
    }
}

/// A server's three ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ports {
    client: u16,
    quorum: u16,
    election: u16,
}

impl Ports {
    /// From three ports picked together: client, quorum, election (a missing one is 0, which
    /// `free_ports` never gives).
    fn from_slice(p: &[u16]) -> Ports {
        let at = |i: usize| p.get(i).copied().unwrap_or(0);
        Ports {
            client: at(0),
            quorum: at(1),
            election: at(2),
        }
    }

    /// `server.N=127.0.0.1:<quorum>:<election>:participant;127.0.0.1:<client>`, the form in
    /// which ZooKeeper 3.8 writes a participant in `/zookeeper/config` and in `conf`.
    fn line(&self, id: u32) -> String {
        let Ports {
            client,
            quorum,
            election,
        } = self;
        format!("server.{id}=127.0.0.1:{quorum}:{election}:participant;127.0.0.1:{client}")
    }
}

/// Prepares `<root>/server-<id>`: zoo.cfg naming a dynamic file with `cluster` (one line each).
fn prepare_member(
    install: &ZkInstall,
    opts: &Options,
    root: &Path,
    id: u32,
    ports: &Ports,
    cluster: &[String],
) -> Result<DynamicMember> {
    let dir = root.join(format!("server-{id}"));
    let dynamic = dir.join(DYNAMIC_FILE);
    let mut cfg = quorum_config(opts, &Instance::data_dir_of(&dir));
    let _ = writeln!(cfg, "reconfigEnabled=true");
    let _ = writeln!(cfg, "dynamicConfigFile={}", dynamic.display());
    cfg.push_str(&opts.user_config());
    let spec = Spec {
        name: format!("dynamic ensemble server {id}"),
        main_class: QUORUM_MAIN,
        dir: dir.clone(),
        addr: SocketAddr::from((Ipv4Addr::LOCALHOST, ports.client)),
        config: cfg,
        myid: Some(id),
    };
    let inst = Instance::prepare(install, opts, spec)?;
    // A start attempt on ports that turned out to be taken may have left the server's own
    // copies (`zoo.cfg.dynamic.<version>`, `zoo.cfg.bak`) behind: start from the kit's files.
    if let Ok(entries) = fs::read_dir(&dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("zoo.cfg.") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let mut text = String::new();
    for line in cluster {
        let _ = writeln!(text, "{line}");
    }
    fs::write(&dynamic, text)
        .map_err(|e| Error::io(format!("writing {}", dynamic.display()), e))?;
    Ok(DynamicMember {
        id,
        quorum_port: ports.quorum,
        election_port: ports.election,
        line: ports.line(id),
        inst,
    })
}

/// The `server.N=` lines of a configuration text (`/zookeeper/config`, a dynamic file, or the
/// `membership:` section of `conf`), with their ids, in the order given. Other lines
/// (`version=`, and the rest of `conf`) are skipped.
pub(crate) fn membership_lines(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            let (id, _) = line.strip_prefix("server.")?.split_once('=')?;
            Some((id.trim().parse().ok()?, line.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_membership_of_a_conf_answer() {
        // `conf` of a 3.8.0 quorum peer (abridged).
        let conf = "clientPort=21000\nserverId=1\ninitLimit=40\nelectionPort=21002\n\
                    quorumPort=21001\npeerType=0\nmembership: \n\
                    server.1=127.0.0.1:21001:21002:participant;127.0.0.1:21000\n\
                    server.12=127.0.0.1:21011:21012:participant;127.0.0.1:21010\n\
                    version=100000000\n";
        assert_eq!(
            membership_lines(conf),
            vec![
                (
                    1,
                    "server.1=127.0.0.1:21001:21002:participant;127.0.0.1:21000".to_owned()
                ),
                (
                    12,
                    "server.12=127.0.0.1:21011:21012:participant;127.0.0.1:21010".to_owned()
                ),
            ]
        );
        assert!(membership_lines("This ZooKeeper instance is not currently serving").is_empty());
        assert!(membership_lines("server.x=1\nserver.2\n").is_empty());
    }

    #[test]
    fn a_server_line_has_the_form_zookeeper_writes() {
        assert_eq!(
            Ports::from_slice(&[3000, 3001, 3002]).line(4),
            "server.4=127.0.0.1:3001:3002:participant;127.0.0.1:3000"
        );
    }
}
