//! A standalone ZooKeeper server (`ZooKeeperServerMain`).

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::four_letter::Mode;
use crate::options::{instance_methods, option_methods};
use crate::ports::free_ports;
use crate::process::PORT_ATTEMPTS;
use crate::process::{
    Instance, Options, Spawned, Spec, StartFailure, TAIL_LINES, spawn_all_ready, wait_all_ready,
};
use crate::tls::TestCerts;
use crate::workdir::WorkDir;

/// Main class of a standalone server.
pub const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";

/// Builder for [`ZkServer`]; from [`ZkServer::builder`].
#[derive(Debug, Clone)]
pub struct ZkServerBuilder {
    opts: Options,
}

impl ZkServerBuilder {
    option_methods!();

    /// Starts the server and waits until it serves (see [`ZkServer::start`]).
    pub fn start(self) -> Result<ZkServer> {
        ZkServer::start_with(self.opts)
    }
}

/// A real standalone ZooKeeper server on `127.0.0.1` with a throw-away data directory.
///
/// The JVM is killed (SIGKILL) and its directory removed on drop. If the drop happens while the
/// thread panics (a failing test), the tail of the server log is printed to stderr.
/// All methods take `&self`; the type is `Send + Sync`, so it can be shared in an `Arc`.
#[derive(Debug)]
pub struct ZkServer {
    inst: Instance,
    opts: Options,
    /// With TLS: the certificates and the secure client port.
    tls: Option<(TestCerts, u16)>,
    _root: WorkDir,
}

fn standalone_ready(mode: &Mode) -> bool {
    *mode == Mode::Standalone
}

impl ZkServer {
    /// Starts a server with the defaults: `tickTime=2000`, `forceSync=no`, 30 s startup timeout.
    ///
    /// Returns once `ruok` answers `imok` and `srvr` reports `Mode: standalone`. Fails with
    /// [`Error::NotInstalled`] when Java or ZooKeeper is missing (the message says to run
    /// `scripts/install-deps.sh`), and with [`Error::StartFailed`] (including the log tail)
    /// when the server does not come up.
    pub fn start() -> Result<ZkServer> {
        ZkServer::builder().start()
    }

    /// A builder to set `tickTime`, zoo.cfg lines, system properties, JVM options.
    pub fn builder() -> ZkServerBuilder {
        ZkServerBuilder {
            opts: Options::new(Duration::from_millis(2000), Duration::from_secs(30)),
        }
    }

    fn start_with(opts: Options) -> Result<ZkServer> {
        let install = opts.install()?;
        let root = WorkDir::create("standalone")?;
        let certs = match opts.tls {
            Some(_) => Some(TestCerts::generate(&root.path().join("tls"))?),
            None => None,
        };
        let mut last_conflict = None;
        for _ in 0..PORT_ATTEMPTS {
            let ports =
                free_ports(2).map_err(|e| Error::io("picking free ports on 127.0.0.1", e))?;
            let (port, secure_port) = (ports[0], ports[1]);
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let dir = root.path().to_path_buf();
            let mut cfg = opts.common_config(&Instance::data_dir_of(&dir));
            let _ = writeln!(cfg, "clientPort={port}");
            let _ = writeln!(cfg, "clientPortAddress=127.0.0.1");
            if let (Some(certs), Some(client_auth)) = (&certs, opts.tls) {
                cfg.push_str(&certs.server_config(secure_port, client_auth));
            }
            cfg.push_str(&opts.user_config());
            let spec = Spec {
                name: "standalone ZooKeeper".into(),
                main_class: STANDALONE_MAIN,
                dir,
                addr,
                config: cfg,
                myid: None,
            };
            let inst = Instance::prepare(&install, &opts, spec)?;
            let deadline = Instant::now() + opts.startup_timeout;
            match spawn_all_ready(&[&inst], deadline, standalone_ready, "standalone ZooKeeper")? {
                Spawned::Ready => {
                    if certs.is_some() {
                        crate::process::wait_port_open(secure_port, deadline)?;
                    }
                    return Ok(ZkServer {
                        inst,
                        opts,
                        tls: certs.map(|certs| (certs, secure_port)),
                        _root: root,
                    });
                }
                Spawned::PortTaken(error) => last_conflict = Some(error),
            }
        }
        Err(last_conflict.unwrap_or_else(|| Error::Timeout {
            what: "a standalone server".into(),
            last_seen: "no start attempt".into(),
        }))
    }

    instance_methods!();

    /// With TLS ([`ZkServerBuilder::tls`]): the generated certificates.
    pub fn tls_certs(&self) -> Option<&TestCerts> {
        self.tls.as_ref().map(|(certs, _)| certs)
    }

    /// With TLS: the secure client port (on 127.0.0.1).
    pub fn secure_port(&self) -> Option<u16> {
        self.tls.as_ref().map(|&(_, port)| port)
    }

    /// With TLS: `127.0.0.1:<secure port>`, for a TLS client's connect string.
    pub fn tls_connect_string(&self) -> Option<String> {
        self.secure_port()
            .map(|port| SocketAddr::from((Ipv4Addr::LOCALHOST, port)).to_string())
    }

    /// Stops the server: SIGTERM, then SIGKILL after 5 s. No-op when not running.
    pub fn stop(&self) {
        self.inst.stop();
    }

    /// Kills the server with SIGKILL (`Child::kill`) and reaps it. No-op when not running.
    pub fn kill(&self) {
        self.inst.kill();
    }

    /// Stops the server if it runs, starts it again with the same port and data directory, and
    /// waits until it serves. Also starts a server that was stopped or killed.
    pub fn restart(&self) -> Result<()> {
        self.inst.stop();
        restart_instance(&self.inst, self.opts.startup_timeout, standalone_ready)
    }

    /// Waits (up to the startup timeout) until the server answers `ruok` and serves.
    pub fn wait_until_serving(&self) -> Result<()> {
        let deadline = Instant::now() + self.opts.startup_timeout;
        wait_all_ready(&[&self.inst], deadline, standalone_ready)
            .map_err(|f| f.into_error(&self.inst))
    }
}

/// Starts `inst` again on its old ports, retrying while a port is (transiently) taken.
pub(crate) fn restart_instance(
    inst: &Instance,
    timeout: Duration,
    accept: fn(&Mode) -> bool,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        inst.spawn()?;
        match wait_all_ready(&[inst], deadline, accept) {
            Ok(()) => return Ok(()),
            Err(StartFailure::PortConflict(reason)) => {
                inst.kill();
                if Instant::now() >= deadline {
                    return Err(inst.start_failed(format!(
                        "{}: its port stayed taken: {reason}",
                        inst.name()
                    )));
                }
                thread::sleep(Duration::from_millis(250));
            }
            Err(StartFailure::Failed(e)) => {
                inst.kill();
                return Err(e);
            }
        }
    }
}

pub(crate) fn dump_log_if_panicking(inst: &Instance) {
    if thread::panicking() {
        eprintln!(
            "zk-testkit: {} ({}, {}): last lines of {}:\n{}",
            inst.name(),
            inst.addr(),
            inst.state(),
            inst.log_path().display(),
            inst.log_tail(TAIL_LINES)
        );
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        dump_log_if_panicking(&self.inst);
        self.inst.kill();
    }
}
