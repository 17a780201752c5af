//! The bed's ZooKeeper servers: configuration, starting each JVM inside its namespace, and the
//! four-letter words and waits, made from the hub namespace.

use std::fmt::Write as _;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use crate::ensemble::{QUORUM_MAIN, quorum_config};
use crate::error::{Error, Result};
use crate::four_letter::{Mode, four_letter};
use crate::install::ZkInstall;
use crate::process::{Instance, Options, Spec};

use super::net::bed_ip;
use super::netns;

/// The client port of every server (each on its own address).
pub(crate) const CLIENT_PORT: u16 = 2181;
/// The port followers use to talk to the leader.
pub(crate) const QUORUM_PORT: u16 = 2888;
/// The leader election port.
pub(crate) const ELECTION_PORT: u16 = 3888;
/// The last byte of server 0's address; server `i` has `198.18.0.(10 + i)`.
pub(crate) const FIRST_SERVER: u8 = 10;
/// The last byte of client namespace 0's address; client `k` has `198.18.0.(100 + k)`.
pub(crate) const FIRST_CLIENT: u8 = 100;
/// The most servers a bed has (their addresses stay below the clients').
pub(crate) const MAX_SERVERS: usize = (FIRST_CLIENT - FIRST_SERVER) as usize;
/// The most client namespaces a bed has (up to `.253`).
pub(crate) const MAX_CLIENTS: usize = (254 - FIRST_CLIENT) as usize;
/// How long one four-letter word of the bed's inspection may take (a paused server never
/// answers).
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The pause between two polls of the servers' modes.
const POLL: Duration = Duration::from_millis(50);

/// Server `i`'s address.
pub(crate) fn server_ip(i: usize) -> Ipv4Addr {
    bed_ip(FIRST_SERVER + u8::try_from(i).unwrap_or(u8::MAX - FIRST_SERVER))
}

/// Client namespace `k`'s address.
pub(crate) fn client_ip(k: usize) -> Ipv4Addr {
    bed_ip(FIRST_CLIENT + u8::try_from(k).unwrap_or(u8::MAX - FIRST_CLIENT))
}

/// One server of the bed.
#[derive(Debug)]
pub(crate) struct BedServer {
    pub(crate) ns: String,
    pub(crate) ip: Ipv4Addr,
    pub(crate) inst: Instance,
}

/// Server `i`'s zoo.cfg (of `n`): the kit's quorum settings, the server lines on the bed's
/// addresses, the client port on its own address.
pub(crate) fn config(opts: &Options, data_dir: &Path, i: usize, n: usize) -> String {
    let mut cfg = quorum_config(opts, data_dir);
    let _ = writeln!(cfg, "reconfigEnabled=false");
    let _ = writeln!(cfg, "clientPort={CLIENT_PORT}");
    let _ = writeln!(cfg, "clientPortAddress={}", server_ip(i));
    for j in 0..n {
        let _ = writeln!(
            cfg,
            "server.{}={}:{QUORUM_PORT}:{ELECTION_PORT}",
            j + 1,
            server_ip(j)
        );
    }
    cfg.push_str(&opts.user_config());
    cfg
}

/// Prepares server `i` of `n` in `dir` (zoo.cfg, `data/myid`), living in namespace `ns`.
pub(crate) fn prepare(
    install: &ZkInstall,
    opts: &Options,
    dir: &Path,
    ns: String,
    i: usize,
    n: usize,
) -> Result<BedServer> {
    let id = u32::try_from(i + 1).unwrap_or(u32::MAX);
    let dir = dir.join(format!("server-{id}"));
    let ip = server_ip(i);
    let spec = Spec {
        name: format!("partition bed server {id} (index {i}, namespace {ns})"),
        main_class: QUORUM_MAIN,
        config: config(opts, &Instance::data_dir_of(&dir), i, n),
        dir,
        addr: SocketAddr::from((ip, CLIENT_PORT)),
        myid: Some(id),
    };
    let inst = Instance::prepare(install, opts, spec)?;
    Ok(BedServer { ns, ip, inst })
}

impl BedServer {
    /// Starts the JVM inside the server's namespace (a child inherits the namespace of the
    /// thread that starts it), with the kit's log file and pid file.
    pub(crate) fn spawn(&self) -> Result<()> {
        netns::run_in(&self.ns, || self.inst.spawn())
            .map_err(|e| Error::io(format!("entering namespace {}", self.ns), e))?
    }
}

/// `srvr` of every running server, asked at once from the calling thread (which must be in the
/// hub namespace); `None` for a server that does not run or does not answer in time.
pub(crate) fn poll_modes(servers: &[BedServer]) -> Vec<Option<Mode>> {
    thread::scope(|scope| {
        let probes: Vec<_> = servers
            .iter()
            .map(|s| {
                scope.spawn(move || {
                    if !s.inst.is_running() {
                        return None;
                    }
                    four_letter(s.inst.addr(), "srvr", PROBE_TIMEOUT)
                        .ok()
                        .map(|answer| Mode::from_srvr(&answer))
                })
            })
            .collect();
        probes
            .into_iter()
            .map(|probe| probe.join().unwrap_or(None))
            .collect()
    })
}

/// `0: leader, 1: follower, 2: no answer`.
pub(crate) fn describe(modes: &[Option<Mode>]) -> String {
    modes
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Some(m) => format!("{i}: {m}"),
            None => format!("{i}: no answer"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Polls the modes (from the calling thread, in the hub) until `pred` holds for them, at most
/// until `deadline`.
pub(crate) fn wait_modes(
    servers: &[BedServer],
    what: &str,
    deadline: Instant,
    mut pred: impl FnMut(&[Option<Mode>]) -> bool,
) -> Result<Vec<Option<Mode>>> {
    loop {
        let modes = poll_modes(servers);
        if pred(&modes) {
            return Ok(modes);
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: what.to_owned(),
                last_seen: describe(&modes),
            });
        }
        thread::sleep(POLL);
    }
}

/// True when exactly one server leads and every running one answers as leader or follower.
pub(crate) fn settled(servers: &[BedServer], modes: &[Option<Mode>]) -> bool {
    let agrees = |(s, m): (&BedServer, &Option<Mode>)| {
        matches!(m, Some(Mode::Leader | Mode::Follower)) || !s.inst.is_running()
    };
    sole_leader(modes).is_some() && servers.iter().zip(modes).all(agrees)
}

/// The index of the one leader in `modes`, if exactly one server says it leads.
pub(crate) fn sole_leader(modes: &[Option<Mode>]) -> Option<usize> {
    let mut leaders = modes
        .iter()
        .enumerate()
        .filter(|(_, m)| **m == Some(Mode::Leader))
        .map(|(i, _)| i);
    match (leaders.next(), leaders.next()) {
        (Some(i), None) => Some(i),
        _ => None,
    }
}

/// One four-letter word to server `s` from the calling thread.
pub(crate) fn ask(s: &BedServer, cmd: &str, timeout: Duration) -> io::Result<String> {
    four_letter(s.inst.addr(), cmd, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_listens_on_its_own_address() {
        let opts = Options::new(Duration::from_millis(2000), Duration::from_secs(60));
        let cfg = config(&opts, Path::new("/tmp/x/data"), 1, 3);
        for line in [
            "tickTime=2000",
            "initLimit=10",
            "syncLimit=5",
            "clientPort=2181",
            "clientPortAddress=198.18.0.11",
            "server.1=198.18.0.10:2888:3888",
            "server.2=198.18.0.11:2888:3888",
            "server.3=198.18.0.12:2888:3888",
            "4lw.commands.whitelist=*",
            "dataDir=/tmp/x/data",
        ] {
            assert!(cfg.lines().any(|l| l == line), "{line} missing in:\n{cfg}");
        }
        assert_eq!(client_ip(3), bed_ip(103));
        assert_eq!(server_ip(MAX_SERVERS - 1), bed_ip(99));
        assert_eq!(client_ip(MAX_CLIENTS - 1), bed_ip(253));
    }

    #[test]
    fn one_leader_is_found() {
        let modes = [Some(Mode::Follower), Some(Mode::Leader), None];
        assert_eq!(sole_leader(&modes), Some(1));
        assert_eq!(sole_leader(&[Some(Mode::Leader), Some(Mode::Leader)]), None);
        assert_eq!(sole_leader(&[None, Some(Mode::NotServing)]), None);
        assert_eq!(describe(&modes), "0: follower, 1: leader, 2: no answer");
    }
}
