//! A local MIT Kerberos KDC on 127.0.0.1, for the Kerberos (SASL GSSAPI) tests.
//!
//! [`Kdc::start`] creates the realm [`REALM`] in a fresh directory (like the servers'
//! directories, under [`base_dir`](crate::base_dir), and reaped the same way when a test
//! process dies): its database (`kdb5_util create -s`), the ZooKeeper server's principal
//! [`SERVER_PRINCIPAL`] and its keytab, a `kdc.conf` and a `krb5.conf` naming the KDC on a free
//! port of 127.0.0.1 (TCP, no DNS), and a JAAS file for the server. It then runs `krb5kdc -n`
//! and returns once a `kinit` with the server's keytab succeeds. The KDC is stopped on drop.
//!
//! [`Realm`] is the realm's directory: principals and keytabs (`kadmin.local`), `kinit`, and
//! [`Realm::configure_server`], which makes a [`ZkServerBuilder`] authenticate with Kerberos
//! (`SASLAuthenticationProvider`, the JAAS `Server` section with `Krb5LoginModule` and the
//! service keytab, `java.security.krb5.conf`). A process that did not start the KDC reaches
//! the realm with [`Realm::from_env`].
//!
//! The Kerberos library of a client reads its configuration, credential cache and client
//! keytab from its process environment (`KRB5_CONFIG`, `KRB5CCNAME`, `KRB5_CLIENT_KTNAME`),
//! which a multi-threaded test process cannot change safely. [`run_tests`] (the `main` of a
//! `harness = false` test target) therefore starts the KDC and runs every test in a process
//! of its own, started with that environment.
//!
//! The tools come from Debian's `krb5-kdc`, `krb5-admin-server` and `krb5-user` packages
//! (`scripts/install-kerberos.sh`); without them [`Kdc::start`] fails with
//! [`Error::KerberosNotInstalled`].

mod harness;

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use crate::ZkServerBuilder;
use crate::error::{Error, Result};
use crate::ports::free_port;
use crate::workdir::{KDC_PID_FILE, WorkDir};

pub use harness::{KdcTest, run_tests};

/// The test realm.
pub const REALM: &str = "ZKTEST.LOCAL";
/// The ZooKeeper server's principal (without the realm): the service `zookeeper` on
/// `localhost`, the name a client asks a ticket for when it connects to `localhost`.
pub const SERVER_PRINCIPAL: &str = "zookeeper/localhost";
/// Environment variable: the realm directory, for [`Realm::from_env`].
pub const ENV_REALM_DIR: &str = "ZK_TESTKIT_KRB5_DIR";

/// The environment variable that gives a Kerberos test's process the pid of the running KDC
/// (set by [`run_tests`]), for [`FrozenKdc`].
pub const ENV_KDC_PID: &str = "ZK_TESTKIT_KDC_PID";

/// The test KDC frozen (SIGSTOP) until this value is dropped (SIGCONT): a KDC that accepts
/// requests and never answers, as a hung or partitioned one. For the Kerberos tests, which
/// [`run_tests`] runs one at a time.
#[derive(Debug)]
pub struct FrozenKdc {
    pid: rustix::process::Pid,
}

impl FrozenKdc {
    /// Freezes the KDC whose pid [`ENV_KDC_PID`] gives.
    ///
    /// # Errors
    ///
    /// The variable is missing or the signal cannot be sent.
    pub fn freeze() -> Result<FrozenKdc> {
        let pid = std::env::var(ENV_KDC_PID)
            .ok()
            .and_then(|pid| pid.parse::<i32>().ok())
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| {
                Error::io(
                    "freezing the KDC",
                    std::io::Error::other(format!("{ENV_KDC_PID} is not set")),
                )
            })?;
        rustix::process::kill_process(pid, rustix::process::Signal::STOP)
            .map_err(|e| Error::io("freezing the KDC", e.into()))?;
        Ok(FrozenKdc { pid })
    }
}

impl Drop for FrozenKdc {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(self.pid, rustix::process::Signal::CONT);
    }
}

/// How long the KDC may take to answer after it was started.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// How often readiness is polled.
const POLL: Duration = Duration::from_millis(50);
/// How many times a start is retried on a fresh port when the port turns out to be taken.
const PORT_ATTEMPTS: u32 = 5;
/// The master password of the throw-away database.
const MASTER_PASSWORD: &str = "zk-testkit-master";

/// The realm's files: database, configuration, keytabs, JAAS file.
#[derive(Debug, Clone)]
pub struct Realm {
    dir: PathBuf,
}

impl Realm {
    /// The realm whose directory [`ENV_REALM_DIR`] names (set by [`run_tests`] for its test
    /// processes); `None` when it is not set.
    pub fn from_env() -> Option<Realm> {
        std::env::var_os(ENV_REALM_DIR)
            .filter(|dir| !dir.is_empty())
            .map(|dir| Realm {
                dir: PathBuf::from(dir),
            })
    }

    /// The realm's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The realm's name, [`REALM`].
    pub fn name(&self) -> &str {
        REALM
    }

    /// The `krb5.conf` for clients (`KRB5_CONFIG`) and for Java (`java.security.krb5.conf`).
    pub fn krb5_conf(&self) -> PathBuf {
        self.dir.join("krb5.conf")
    }

    /// The KDC's `kdc.conf` (`KRB5_KDC_PROFILE`).
    pub fn kdc_conf(&self) -> PathBuf {
        self.dir.join("kdc.conf")
    }

    /// The JAAS file of the ZooKeeper server (its `Server` section).
    pub fn server_jaas(&self) -> PathBuf {
        self.dir.join("server.jaas")
    }

    /// `name@REALM`.
    pub fn principal(&self, name: &str) -> String {
        format!("{name}@{REALM}")
    }

    /// Where [`add_principal`](Self::add_principal) put the keytab of `name` (its `/` as `_`).
    pub fn keytab(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{}.keytab", name.replace('/', "_")))
    }

    /// Adds the principal `name` with a random key and exports it to
    /// [`keytab(name)`](Self::keytab); returns the keytab's path.
    ///
    /// # Errors
    ///
    /// `kadmin.local` is missing or fails.
    pub fn add_principal(&self, name: &str) -> Result<PathBuf> {
        let keytab = self.keytab(name);
        self.kadmin(&format!("addprinc -randkey {name}"))?;
        self.kadmin(&format!("ktadd -k {} {name}", keytab.display()))?;
        Ok(keytab)
    }

    /// Removes the principal `name` from the database (its keytab stays).
    ///
    /// # Errors
    ///
    /// `kadmin.local` is missing or fails.
    pub fn delete_principal(&self, name: &str) -> Result<()> {
        self.kadmin(&format!("delprinc -force {name}")).map(drop)
    }

    /// Gives the principal `name` a new random key: its exported keytab is stale.
    ///
    /// # Errors
    ///
    /// `kadmin.local` is missing or fails.
    pub fn change_key(&self, name: &str) -> Result<()> {
        self.kadmin(&format!("cpw -randkey {name}")).map(drop)
    }

    /// Runs one `kadmin.local` query on the realm's database; its output.
    ///
    /// # Errors
    ///
    /// `kadmin.local` is missing or fails (the query's errors are in its output: a query that
    /// prints one of them fails too).
    pub fn kadmin(&self, query: &str) -> Result<String> {
        let output = self.run(
            Command::new(tool("kadmin.local")?)
                .arg("-r")
                .arg(REALM)
                .arg("-q")
                .arg(query),
            &format!("kadmin.local -q {query:?}"),
        )?;
        // kadmin.local exits 0 when the query itself fails; its message says so.
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let failed = text.lines().any(|line| {
            let line = line.to_ascii_lowercase();
            line.contains("does not exist")
                || line.contains("while ")
                || line.contains("error")
                || line.contains("unknown")
        });
        if failed {
            return Err(self.tool_failed(&format!("kadmin.local -q {query:?}"), &text));
        }
        Ok(text)
    }

    /// Gets a ticket-granting ticket for `name` with its keytab into the credential cache
    /// `ccache` (`kinit -k -t <keytab> -c <ccache> name@REALM`).
    ///
    /// # Errors
    ///
    /// `kinit` is missing or fails (no such principal, a stale keytab, no KDC).
    pub fn kinit(&self, name: &str, ccache: &str) -> Result<()> {
        self.kinit_with(name, &self.keytab(name), ccache)
    }

    fn kinit_with(&self, name: &str, keytab: &Path, ccache: &str) -> Result<()> {
        let what = format!("kinit {} into {ccache}", self.principal(name));
        self.run(
            Command::new(tool("kinit")?)
                .arg("-k")
                .arg("-t")
                .arg(keytab)
                .arg("-c")
                .arg(ccache)
                .arg(self.principal(name)),
            &what,
        )
        .map(drop)
    }

    /// Configures a ZooKeeper server to authenticate clients with Kerberos: the
    /// `SASLAuthenticationProvider`, the JAAS `Server` section (`Krb5LoginModule` with the
    /// keytab of [`SERVER_PRINCIPAL`]), and the realm's `krb5.conf`. The server logs in to
    /// the KDC when it starts: start the KDC first.
    pub fn configure_server(&self, builder: ZkServerBuilder) -> ZkServerBuilder {
        builder
            .config("authProvider.1", crate::SASL_PROVIDER)
            .system_property(
                "java.security.auth.login.config",
                self.server_jaas().display(),
            )
            .system_property("java.security.krb5.conf", self.krb5_conf().display())
    }

    /// Runs a Kerberos tool with the realm's configuration; fails unless it exits with 0.
    fn run(&self, command: &mut Command, what: &str) -> Result<Output> {
        let output = command
            .env("KRB5_CONFIG", self.krb5_conf())
            .env("KRB5_KDC_PROFILE", self.kdc_conf())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::io(format!("running {what}"), e))?;
        if !output.status.success() {
            let text = format!(
                "exit status {}\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            return Err(self.tool_failed(what, &text));
        }
        Ok(output)
    }

    fn tool_failed(&self, what: &str, output: &str) -> Error {
        Error::StartFailed {
            reason: format!("{what} failed: {}", output.trim()),
            log: self.dir.join("kdc.log"),
            log_tail: tail(&self.dir.join("kdc.log")),
        }
    }

    /// Writes `kdc.conf` and `krb5.conf` for a KDC on `port`.
    fn write_config(&self, port: u16) -> Result<()> {
        let dir = self.dir.display();
        let mut kdc = String::new();
        let _ = writeln!(kdc, "# generated by zk-testkit");
        let _ = writeln!(kdc, "[kdcdefaults]");
        let _ = writeln!(kdc, "    kdc_listen = 127.0.0.1:{port}");
        let _ = writeln!(kdc, "    kdc_tcp_listen = 127.0.0.1:{port}");
        let _ = writeln!(kdc, "[realms]");
        let _ = writeln!(kdc, "    {REALM} = {{");
        let _ = writeln!(kdc, "        database_name = {dir}/principal");
        let _ = writeln!(kdc, "        key_stash_file = {dir}/stash");
        let _ = writeln!(kdc, "        acl_file = {dir}/kadm5.acl");
        // Clients prove they hold the key before the KDC answers (as real realms demand).
        let _ = writeln!(kdc, "        default_principal_flags = +preauth");
        let _ = writeln!(kdc, "    }}");
        let _ = writeln!(kdc, "[logging]");
        let _ = writeln!(kdc, "    kdc = FILE:{dir}/kdc.log");
        let _ = writeln!(kdc, "    admin_server = FILE:{dir}/kadmin.log");
        let _ = writeln!(kdc, "    default = FILE:{dir}/krb5.log");
        write(&self.kdc_conf(), &kdc)?;

        let mut krb5 = String::new();
        let _ = writeln!(krb5, "# generated by zk-testkit");
        let _ = writeln!(krb5, "[libdefaults]");
        let _ = writeln!(krb5, "    default_realm = {REALM}");
        // Everything comes from this file: no DNS lookups, no host name canonicalization
        // (`zookeeper@localhost` is `zookeeper/localhost`), TCP to the KDC.
        let _ = writeln!(krb5, "    dns_lookup_kdc = false");
        let _ = writeln!(krb5, "    dns_lookup_realm = false");
        let _ = writeln!(krb5, "    dns_canonicalize_hostname = false");
        let _ = writeln!(krb5, "    rdns = false");
        let _ = writeln!(krb5, "    udp_preference_limit = 1");
        // For Java (the server's login): a KDC that does not answer is given up on within
        // seconds. MIT's library has no such settings (it gives up after about 15 s).
        let _ = writeln!(krb5, "    kdc_timeout = 1000");
        let _ = writeln!(krb5, "    max_retries = 1");
        let _ = writeln!(krb5, "[realms]");
        let _ = writeln!(krb5, "    {REALM} = {{");
        let _ = writeln!(krb5, "        kdc = 127.0.0.1:{port}");
        let _ = writeln!(krb5, "    }}");
        let _ = writeln!(krb5, "[domain_realm]");
        let _ = writeln!(krb5, "    localhost = {REALM}");
        write(&self.krb5_conf(), &krb5)
    }

    /// The JAAS file of the server: `Krb5LoginModule` with the service keytab.
    fn write_server_jaas(&self) -> Result<()> {
        let jaas = format!(
            "Server {{\n  com.sun.security.auth.module.Krb5LoginModule required\n  \
             useKeyTab=true\n  keyTab=\"{}\"\n  storeKey=true\n  useTicketCache=false\n  \
             doNotPrompt=true\n  principal=\"{}\";\n}};\n",
            self.keytab(SERVER_PRINCIPAL).display(),
            self.principal(SERVER_PRINCIPAL)
        );
        write(&self.server_jaas(), &jaas)
    }

    /// Creates the database with the server's principal and keytab.
    fn create(&self) -> Result<()> {
        write(&self.dir.join("kadm5.acl"), "")?;
        self.run(
            Command::new(tool("kdb5_util")?)
                .arg("create")
                .arg("-s")
                .arg("-r")
                .arg(REALM)
                .arg("-P")
                .arg(MASTER_PASSWORD),
            "kdb5_util create",
        )?;
        self.add_principal(SERVER_PRINCIPAL)?;
        self.write_server_jaas()
    }
}

/// A running KDC of a fresh [`Realm`]; stopped, and its directory removed, on drop.
#[derive(Debug)]
pub struct Kdc {
    realm: Realm,
    port: u16,
    child: Mutex<Option<Child>>,
    _dir: WorkDir,
}

impl Kdc {
    /// Creates the realm and starts its KDC (see the [module](self) docs); returns once it
    /// issues tickets.
    ///
    /// # Errors
    ///
    /// [`Error::KerberosNotInstalled`] without the KDC tools; [`Error::StartFailed`] (with
    /// the KDC's log) when the realm cannot be created or the KDC does not answer.
    pub fn start() -> Result<Kdc> {
        for tool_name in ["krb5kdc", "kdb5_util", "kadmin.local", "kinit"] {
            tool(tool_name)?;
        }
        let dir = WorkDir::create("kdc")?;
        let realm = Realm {
            dir: dir.path().to_path_buf(),
        };
        realm.write_config(0)?;
        realm.create()?;
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port().map_err(|e| Error::io("finding a free port for the KDC", e))?;
            realm.write_config(port)?;
            match spawn_ready(&realm) {
                Ok(child) => {
                    return Ok(Kdc {
                        realm,
                        port,
                        child: Mutex::new(Some(child)),
                        _dir: dir,
                    });
                }
                Err(Retry::PortTaken(why)) => last = why,
                Err(Retry::Failed(error)) => return Err(error),
            }
        }
        Err(realm.tool_failed("starting krb5kdc", &last))
    }

    /// The realm.
    pub fn realm(&self) -> &Realm {
        &self.realm
    }

    /// The KDC's port on 127.0.0.1 (TCP and UDP).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The KDC's pid while it runs.
    pub fn pid(&self) -> Option<u32> {
        let mut guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(None) => Some(child.id()),
            _ => None,
        }
    }

    /// Stops the KDC (SIGKILL): clients then fail to get tickets. No-op when stopped.
    pub fn stop(&self) {
        let mut guard = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut child) = guard.take() {
            let _ = child.kill();
            let _ = child.wait();
            let _ = fs::remove_file(self.realm.dir.join(KDC_PID_FILE));
        }
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        self.stop();
    }
}

enum Retry {
    PortTaken(String),
    Failed(Error),
}

/// Starts `krb5kdc` for `realm` and waits until it issues a ticket (a `kinit` with the
/// server's keytab); the KDC is killed when it does not.
fn spawn_ready(realm: &Realm) -> std::result::Result<Child, Retry> {
    let dir = &realm.dir;
    let out = dir.join("krb5kdc.out");
    let log = fs::File::create(&out)
        .map_err(|e| Retry::Failed(Error::io(format!("creating {}", out.display()), e)))?;
    let err = log
        .try_clone()
        .map_err(|e| Retry::Failed(Error::io(format!("opening {}", out.display()), e)))?;
    let pid_file = dir.join(KDC_PID_FILE);
    // The KDC logs a bind failure to its log file ([logging] in kdc.conf), not to stderr: what
    // this attempt logs starts here.
    let kdc_log = dir.join("kdc.log");
    let log_start = fs::metadata(&kdc_log).map_or(0, |m| m.len());
    let mut child = Command::new(tool("krb5kdc").map_err(Retry::Failed)?)
        // Foreground; the pid file's path names the directory, so the reaper recognizes an
        // orphaned KDC by its command line.
        .arg("-n")
        .arg("-P")
        .arg(&pid_file)
        .env("KRB5_CONFIG", realm.krb5_conf())
        .env("KRB5_KDC_PROFILE", realm.kdc_conf())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| Retry::Failed(Error::io("spawning krb5kdc", e)))?;
    let _ = fs::write(&pid_file, child.id().to_string());

    // Why the KDC exited: a taken port (retried on another one) or anything else.
    let exited = |status: std::process::ExitStatus| {
        let _ = fs::remove_file(&pid_file);
        let mut output = fs::read_to_string(&out).unwrap_or_default();
        let logged = fs::read(&kdc_log).unwrap_or_default();
        let from = usize::try_from(log_start).map_or(0, |at| at.min(logged.len()));
        output.push_str(&String::from_utf8_lossy(&logged[from..]));
        let why = format!("krb5kdc exited with {status}: {}", output.trim());
        if output.contains("Address already in use") {
            Retry::PortTaken(why)
        } else {
            Retry::Failed(realm.tool_failed("starting krb5kdc", &why))
        }
    };

    let deadline = Instant::now() + READY_TIMEOUT;
    let probe = format!("MEMORY:zk-testkit-probe-{}", std::process::id());
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(exited(status));
        }
        // (A probe may wait up to krb5.conf's kdc_timeout when something else holds the port.)
        match realm.kinit_with(SERVER_PRINCIPAL, &realm.keytab(SERVER_PRINCIPAL), &probe) {
            Ok(()) => return Ok(child),
            Err(error) if Instant::now() >= deadline => {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(exited(status));
                }
                let _ = child.kill();
                let _ = child.wait();
                let _ = fs::remove_file(&pid_file);
                return Err(Retry::Failed(error));
            }
            Err(_) => thread::sleep(POLL),
        }
    }
}

/// The path of a Kerberos tool: on `PATH`, or in `/usr/sbin` (not on a user's `PATH` on
/// Debian).
fn tool(name: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| Error::KerberosNotInstalled {
            missing: name.to_owned(),
        })
}

fn write(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

fn tail(path: &Path) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(crate::process::TAIL_LINES)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A KDC whose port is taken exits, and the start tells that apart from other failures
    /// (and retries on another port).
    #[test]
    fn a_taken_port_is_told_apart_from_other_failures() {
        let dir = WorkDir::create("kdc-test").expect("a directory");
        let realm = Realm {
            dir: dir.path().to_path_buf(),
        };
        realm.write_config(0).expect("config");
        realm.create().expect("the realm");
        // The TCP port is taken by a socket that is bound but does not listen: the KDC cannot
        // bind it, and the readiness probes are refused at once (a listener that never
        // answers, or a taken UDP port, would hold each probe for MIT's KDC timeouts).
        let taken = rustix::net::socket(
            rustix::net::AddressFamily::INET,
            rustix::net::SocketType::STREAM,
            None,
        )
        .expect("a socket");
        let port = crate::free_port().expect("a free port");
        rustix::net::bind(&taken, &std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .expect("bind the port");
        realm.write_config(port).expect("config");
        match spawn_ready(&realm) {
            Err(Retry::PortTaken(why)) => assert!(why.contains("Address already in use"), "{why}"),
            Err(Retry::Failed(error)) => panic!("not told apart: {error}"),
            Ok(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the KDC started on a taken port");
            }
        }
        // Started normally, it is a running KDC on a free port.
        let kdc = Kdc::start().unwrap_or_else(|e| panic!("{e}"));
        assert!(kdc.pid().is_some());
        assert_ne!(kdc.port(), 0);
    }
}
