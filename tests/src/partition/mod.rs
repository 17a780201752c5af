//! Real network partitions between ZooKeeper servers on one machine, with Linux network
//! namespaces and nftables (needs root, `ip` and `nft`: `scripts/install-partition.sh`).
//!
//! # Layout
//!
//! A [`PartitionBed`] is a small network of its own, attached to nothing else:
//!
//! - the **hub** namespace `rzkp<pid>x<n>-hub` holds a bridge, `br0`, with the address
//!   `198.18.0.1/24`; the bed asks the servers' four-letter words from there, and no rule ever
//!   drops its packets;
//! - server `i` runs in namespace `rzkp<pid>x<n>-s<i>` with address `198.18.0.(10 + i)/24`, its
//!   client port 2181, quorum port 2888 and election port 3888 all on that address;
//! - client namespace `k` ([`ClientNamespace`], for the test's client code) is
//!   `rzkp<pid>x<n>-c<k>` with `198.18.0.(100 + k)/24`;
//! - every node namespace is joined to the bridge by a veth pair: `eth0` in the node's
//!   namespace, `s<i>` or `c<k>` in the hub as a bridge port.
//!
//! Nothing is in the root namespace, so the addresses (from `198.18.0.0/24`, the benchmarking
//! range of RFC 2544) never meet a real network, and beds running at once (tests of one binary
//! run in parallel threads) reuse them, each on its own bridge. Namespace names carry the test
//! process's pid and a counter; a new bed deletes the namespaces of processes that no longer
//! run (a test killed before its `Drop`), killing what still runs in them.
//!
//! # Cuts
//!
//! A cut from node A to node B drops, in B's namespace, every packet whose source is A's
//! address: an nftables table of the bed's own (`inet rzk_partition`) whose `input` chain drops
//! the listed sources. Packets are dropped, not rejected: connections hang as they do in a real
//! partition (a connect times out, data is retransmitted), until the peers' own timeouts fire
//! or the cut is healed. [`PartitionBed::cut`] cuts both ways, [`PartitionBed::cut_one_way`] one,
//! [`PartitionBed::isolate_from_servers`] cuts a server from every other server (clients still
//! reach it), [`PartitionBed::heal`] removes every rule. ARP is not filtered, and neither is the
//! hub's address.
//!
//! What the 3.8.0 servers do, as measured with the defaults (`tickTime=2000`, `syncLimit=5`):
//! a follower cut from the other servers says `not currently serving requests` about 10 s
//! later (`syncLimit` × `tickTime`); a leader so cut stops leading after about 11 s and the
//! other two elect one of them within a second more. After a heal, a server rejoins in a
//! fraction of a second when the cut was short, but about 10 s after a 45 s cut: its election
//! messages wait in TCP connections opened before the cut, whose retransmissions back off
//! exponentially (up to 2 minutes apart). Wait for the rejoin with
//! [`PartitionBed::wait_for_quorum`], whose bound ([`REJOIN_BOUND`]) covers the worst case.
//!
//! # Threads and namespaces
//!
//! Linux keeps the network namespace per thread. The test's own threads stay in the root
//! namespace, which cannot reach the bed: client code runs in a [`ClientNamespace`], through
//! [`ClientNamespace::runtime`] (a tokio runtime whose threads are all inside),
//! [`ClientNamespace::run`] (a closure on a thread inside) or [`ClientNamespace::command`] (a
//! program inside). The bed's own methods enter the hub or a server's namespace by themselves.
//!
//! # Availability
//!
//! [`PartitionBed::start`] returns `Ok(None)` after printing one line, `partition bed
//! unavailable: <reason>; skipping`, when the machine does not allow it (not root, `ip` or `nft`
//! missing, namespaces, bridges or nftables not permitted); tests then return early. With
//! [`ENV_REQUIRE`] set, that is an error instead. A missing Java or ZooKeeper is an error as
//! everywhere in the kit ([`Error::NotInstalled`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use zk_testkit::Mode;
//! use zk_testkit::partition::{Node, PartitionBed};
//!
//! let Some(bed) = PartitionBed::start(3)? else { return Ok(()) };
//! let leader = bed.leader()?;
//! let follower = (leader + 1) % 3;
//! let clients = bed.client_namespace("app")?;
//! let rt = clients.runtime()?;
//! let connect = bed.connect_string(&[follower]);
//! rt.block_on(async {
//!     // zk_proto::Client::builder().connect(&connect).await ... (the driver is a spawned task)
//! });
//! bed.isolate_from_servers(follower)?;
//! bed.wait_until("the follower to give up", Duration::from_secs(15), |m| {
//!     m[follower] != Some(Mode::Follower)
//! })?;
//! bed.cut(Node::Client(&clients), Node::Server(leader))?;
//! bed.heal()?;
//! drop(rt);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod client;
mod ensemble;
mod net;
mod netns;
mod nft;

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};

use crate::error::{Error, Result};
use crate::four_letter::{FOUR_LETTER_TIMEOUT, Mode};
use crate::process::{Instance, Options, wait_all_ready};
use crate::server::{dump_log_if_panicking, restart_instance};
use crate::workdir::WorkDir;

pub use client::ClientNamespace;
pub use nft::TABLE as NFT_TABLE;

use ensemble::{BedServer, CLIENT_PORT, MAX_CLIENTS, MAX_SERVERS};
use net::{HUB_IP, Net};
use netns::{NS_PREFIX, Tools};

/// Environment variable: when set (non-empty, not `0`), an unavailable bed is an error
/// instead of a skip (for CI machines that are known to allow it).
pub const ENV_REQUIRE: &str = "ZK_TESTKIT_REQUIRE_PARTITION";

/// A node of the bed's network, for the cuts.
#[derive(Debug, Clone, Copy)]
pub enum Node<'a> {
    /// Server `i` (0-based index).
    Server(usize),
    /// A client namespace of the bed.
    Client(&'a ClientNamespace),
}

impl<'a> From<&'a ClientNamespace> for Node<'a> {
    fn from(client: &'a ClientNamespace) -> Node<'a> {
        Node::Client(client)
    }
}

/// The default bound of a bed's waits for its servers: a start, a restart, the quorum
/// ([`PartitionBed::wait_for_quorum`], [`PartitionBed::make_leader`]). It follows from the
/// timers that decide when a server that was cut off (or whose peers restarted meanwhile) takes
/// part in an election again: the election messages it wrote during a cut sit in TCP
/// connections whose retransmissions back off up to TCP's largest retransmission timeout
/// (`net.ipv4.tcp_rto_max_ms`, 120 s by default), and a server left looking for a leader sends
/// again only every `zookeeper.fastleader.maxNotificationInterval` (60 s by default) once it
/// has waited that long; 20 s more for the election itself on a loaded machine. Measured under
/// load: a follower cut for 34 s while the other two restarted was still not serving 60 s
/// after the heal, and moving the leadership after such rounds once took more than 60 s.
pub const REJOIN_BOUND: Duration = Duration::from_secs(120 + 60 + 20);

/// Builder for [`PartitionBed`]; from [`PartitionBed::builder`].
#[derive(Debug, Clone)]
pub struct PartitionBedBuilder {
    servers: usize,
    opts: Options,
}

impl PartitionBedBuilder {
    /// ZooKeeper's `tickTime` (default 2 s). `initLimit` and `syncLimit` are scaled to at least
    /// 10 s and 5 s (at least 10 and 5 ticks); `syncLimit` × `tickTime` is how long a follower
    /// cut from its leader keeps serving.
    pub fn tick_time(mut self, tick: Duration) -> Self {
        self.opts.tick_time = tick;
        self
    }

    /// Adds a `key=value` line to every server's zoo.cfg, after the bed's own lines.
    pub fn config(mut self, key: impl std::fmt::Display, value: impl std::fmt::Display) -> Self {
        self.opts.config_lines.push(format!("{key}={value}"));
        self
    }

    /// Adds a JVM system property, `-Dkey=value`, to every server.
    pub fn system_property(
        mut self,
        key: impl std::fmt::Display,
        value: impl std::fmt::Display,
    ) -> Self {
        self.opts
            .system_properties
            .push((key.to_string(), value.to_string()));
        self
    }

    /// How long a start (or a server's restart, or a wait for the quorum) may take. Default
    /// [`REJOIN_BOUND`].
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.opts.startup_timeout = timeout;
        self
    }

    /// The server log level (slf4j-simple), default `info`.
    pub fn log_level(mut self, level: impl Into<String>) -> Self {
        self.opts.log_level = level.into();
        self
    }

    /// Starts the bed (see [`PartitionBed::start`]).
    pub fn start(self) -> Result<Option<PartitionBed>> {
        PartitionBed::start_with(self.servers, self.opts)
    }
}

/// A ZooKeeper ensemble whose servers each live in a network namespace of their own, on a
/// private bridge, so that tests can cut the network between them (see the [module
/// documentation](self) for the layout).
///
/// Servers are addressed by 0-based index `i` (`myid` is `i + 1`); methods taking an index panic
/// when it is out of range. The configuration: `tickTime=2000`, `initLimit=10`, `syncLimit=5`,
/// `clientPort=2181` on the server's own address, `server.N=198.18.0.(9 + N):2888:3888`, all
/// four-letter words, the kit's JVM options and log file (`server-<myid>/zookeeper.log` under
/// [`PartitionBed::dir`]).
///
/// On drop: the JVMs are killed, every namespace of the bed deleted (the veths and the bridge
/// go with them) and the directory removed; a drop during a panic prints every server's log
/// tail. The type is `Send + Sync`.
#[derive(Debug)]
pub struct PartitionBed {
    servers: Vec<BedServer>,
    net: Arc<Net>,
    opts: Options,
    root: WorkDir,
}

/// What [`PartitionBed::start`] does on a machine that does not allow a bed.
fn unavailable(reason: &str) -> Result<Option<PartitionBed>> {
    if std::env::var_os(ENV_REQUIRE).is_some_and(|v| !v.is_empty() && v != "0") {
        return Err(Error::io(
            format!("partition bed unavailable and {ENV_REQUIRE} is set"),
            io::Error::other(reason.to_owned()),
        ));
    }
    eprintln!("partition bed unavailable: {reason}; skipping");
    Ok(None)
}

/// Deletes the namespaces left by test processes that no longer run (their JVMs are killed
/// first), and returns their names. [`PartitionBed::start`] does it before every start; a no-op
/// without `ip`.
pub fn sweep_stale_namespaces() -> Vec<String> {
    match Tools::find() {
        Ok(tools) => netns::sweep_stale(&tools),
        Err(_) => Vec::new(),
    }
}

/// The namespaces (as `ip netns list` shows them) whose names start with `prefix`; with
/// [`PartitionBed::prefix`], what a bed has (or left behind).
pub fn namespaces_with_prefix(prefix: &str) -> Vec<String> {
    let mut names: Vec<String> = netns::list()
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// The first characters of every bed's namespace names.
pub const NAMESPACE_PREFIX: &str = NS_PREFIX;

impl PartitionBed {
    /// Starts a bed of `servers` ZooKeeper servers with the defaults and waits until exactly one
    /// says `Mode: leader` and every other `Mode: follower` (at most the startup timeout,
    /// [`REJOIN_BOUND`] by default).
    ///
    /// Returns `Ok(None)` when the machine does not allow a bed, after printing one line
    /// (`partition bed unavailable: <reason>; skipping`) to stderr; the test then returns.
    /// Fails with [`Error::NotInstalled`] when Java or ZooKeeper is missing, with
    /// [`Error::StartFailed`] (and the log tail) when a server does not come up.
    ///
    /// # Panics
    ///
    /// When `servers` is 0 or more than 90.
    pub fn start(servers: usize) -> Result<Option<PartitionBed>> {
        PartitionBed::builder(servers).start()
    }

    /// A builder for a bed of `servers` servers.
    ///
    /// # Panics
    ///
    /// When `servers` is 0 or more than 90.
    pub fn builder(servers: usize) -> PartitionBedBuilder {
        assert!(
            (1..=MAX_SERVERS).contains(&servers),
            "a partition bed has 1 to {MAX_SERVERS} servers, not {servers}"
        );
        PartitionBedBuilder {
            servers,
            opts: Options::new(Duration::from_millis(2000), REJOIN_BOUND),
        }
    }

    fn start_with(n: usize, opts: Options) -> Result<Option<PartitionBed>> {
        if !rustix::process::geteuid().is_root() {
            return unavailable("not root (network namespaces and nftables need root)");
        }
        let tools = match Tools::find() {
            Ok(tools) => tools,
            Err(reason) => return unavailable(&reason),
        };
        let install = opts.install()?;
        // Before the sweep: the first WorkDir of the process kills the JVMs of dead processes.
        let root = WorkDir::create("partition")?;
        netns::sweep_stale(&tools);
        let net = match Net::create(tools, netns::bed_prefix()) {
            Ok(net) => Arc::new(net),
            Err(reason) => return unavailable(&reason),
        };
        // Declared after `net` and `root`: on an early return the JVMs go first.
        let mut servers = Vec::with_capacity(n);
        for i in 0..n {
            let ns = net
                .add_node(&format!("s{i}"), ensemble::server_ip(i))
                .map_err(|e| Error::io(format!("creating the namespace of server {i}"), e))?;
            servers.push(ensemble::prepare(&install, &opts, root.path(), ns, i, n)?);
        }
        for s in &servers {
            s.spawn()?;
        }
        let bed = PartitionBed {
            servers,
            net,
            opts,
            root,
        };
        let deadline = Instant::now() + bed.opts.startup_timeout;
        bed.in_hub(|| {
            let insts: Vec<&Instance> = bed.servers.iter().map(|s| &s.inst).collect();
            wait_all_ready(&insts, deadline, |m| {
                matches!(m, Mode::Leader | Mode::Follower)
            })
            .map_err(|failure| failure.into_error(insts[0]))?;
            ensemble::wait_modes(
                &bed.servers,
                "exactly one leader and every other server a follower",
                deadline,
                |modes| ensemble::settled(&bed.servers, modes),
            )
            .map(drop)
        })??;
        Ok(Some(bed))
    }

    /// Runs `f` on a thread in the hub namespace.
    fn in_hub<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        netns::run_in(self.net.hub(), f)
            .map_err(|e| Error::io(format!("entering the hub namespace {}", self.net.hub()), e))
    }

    /// The number of servers.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// Never true for a started bed.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The start of every namespace name of this bed, `rzkp<pid>x<n>` (its namespaces are
    /// `<prefix>-hub`, `<prefix>-s<i>`, `<prefix>-c<k>`).
    pub fn prefix(&self) -> &str {
        self.net.prefix()
    }

    /// The hub namespace's name.
    pub fn hub_namespace(&self) -> &str {
        self.net.hub()
    }

    /// The hub's address on the bridge, `198.18.0.1`.
    pub fn hub_ip(&self) -> Ipv4Addr {
        HUB_IP
    }

    /// Server `i`'s namespace name.
    pub fn server_namespace(&self, i: usize) -> &str {
        &self.servers[i].ns
    }

    /// Server `i`'s address, `198.18.0.(10 + i)`.
    pub fn server_ip(&self, i: usize) -> Ipv4Addr {
        self.servers[i].ip
    }

    /// Server `i`'s client address, `198.18.0.(10 + i):2181` (reachable from the bed's
    /// namespaces only).
    pub fn server_addr(&self, i: usize) -> SocketAddr {
        SocketAddr::from((self.servers[i].ip, CLIENT_PORT))
    }

    /// The connect string of the given servers, in that order: `198.18.0.10:2181,198.18.0.11:2181`.
    pub fn connect_string(&self, servers: &[usize]) -> String {
        servers
            .iter()
            .map(|&i| self.server_addr(i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The connect string of every server.
    pub fn connect_string_all(&self) -> String {
        self.connect_string(&(0..self.len()).collect::<Vec<_>>())
    }

    /// The bed's directory (one `server-<myid>` directory per server).
    pub fn dir(&self) -> &Path {
        self.root.path()
    }

    /// Server `i`'s log file (its JVM's stdout and stderr, kept across restarts).
    pub fn log_path(&self, i: usize) -> &Path {
        self.servers[i].inst.log_path()
    }

    /// The last `lines` lines of server `i`'s log.
    pub fn log_tail(&self, i: usize, lines: usize) -> String {
        self.servers[i].inst.log_tail(lines)
    }

    /// Server `i`'s JVM pid while it runs (also while it is paused).
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.servers[i].inst.pid()
    }

    /// True while server `i`'s JVM runs (also while it is paused).
    pub fn is_running(&self, i: usize) -> bool {
        self.servers[i].inst.is_running()
    }

    /// A new client namespace on the bridge, `198.18.0.(100 + k)` for the `k`-th; `label` is
    /// for messages only. It is deleted with the bed.
    ///
    /// # Panics
    ///
    /// When the bed already has 154 client namespaces.
    pub fn client_namespace(&self, label: &str) -> Result<ClientNamespace> {
        let k = self.net.next_client();
        assert!(
            k < MAX_CLIENTS,
            "a bed has at most {MAX_CLIENTS} client namespaces"
        );
        let ip = ensemble::client_ip(k);
        let name = self
            .net
            .add_node(&format!("c{k}"), ip)
            .map_err(|e| Error::io(format!("creating client namespace {k} ({label})"), e))?;
        Ok(ClientNamespace {
            net: Arc::clone(&self.net),
            name,
            label: label.to_owned(),
            ip,
        })
    }

    // ----- inspection -----

    /// Sends the four-letter word `cmd` to server `i` from the hub (which no cut affects) and
    /// returns the answer ([`FOUR_LETTER_TIMEOUT`]).
    pub fn four_letter(&self, i: usize, cmd: &str) -> io::Result<String> {
        let server = &self.servers[i];
        self.in_hub(|| ensemble::ask(server, cmd, FOUR_LETTER_TIMEOUT))
            .map_err(io::Error::other)?
    }

    /// Server `i`'s mode from `srvr`, asked from the hub: leader, follower, or not serving (a
    /// server looking for a leader). Fails when it does not answer within 2 s (e.g. paused).
    pub fn mode(&self, i: usize) -> io::Result<Mode> {
        let server = &self.servers[i];
        let answer = self
            .in_hub(|| ensemble::ask(server, "srvr", ensemble::PROBE_TIMEOUT))
            .map_err(io::Error::other)??;
        Ok(Mode::from_srvr(&answer))
    }

    /// Every server's mode, asked at once from the hub; `None` for a server that does not run or
    /// does not answer within 2 s.
    pub fn modes(&self) -> Result<Vec<Option<Mode>>> {
        self.in_hub(|| ensemble::poll_modes(&self.servers))
    }

    /// Polls [`PartitionBed::modes`] (every 50 ms) until `pred` holds for them, at most
    /// `timeout`; returns the modes that satisfied it, or [`Error::Timeout`] naming `what` and
    /// the modes seen last.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl FnMut(&[Option<Mode>]) -> bool + Send,
    ) -> Result<Vec<Option<Mode>>> {
        let deadline = Instant::now() + timeout;
        self.in_hub(|| ensemble::wait_modes(&self.servers, what, deadline, pred))?
    }

    /// The index of the server that leads: waits (at most the startup timeout) until exactly
    /// one server says `Mode: leader`, whatever the others say (a server cut off may be looking
    /// for a leader meanwhile).
    pub fn leader(&self) -> Result<usize> {
        let modes = self.wait_until(
            "exactly one server to say it leads",
            self.opts.startup_timeout,
            |modes| ensemble::sole_leader(modes).is_some(),
        )?;
        Ok(ensemble::sole_leader(&modes).unwrap_or_default())
    }

    /// Waits (at most the startup timeout) until the running servers agree: exactly one leads
    /// and every other running one follows. Returns the leader's index. After [`heal`] this is
    /// the wait for a server cut off to rejoin.
    ///
    /// [`heal`]: PartitionBed::heal
    pub fn wait_for_quorum(&self) -> Result<usize> {
        let modes = self.wait_until(
            "exactly one leader and every other running server a follower",
            self.opts.startup_timeout,
            |modes| ensemble::settled(&self.servers, modes),
        )?;
        Ok(ensemble::sole_leader(&modes).unwrap_or_default())
    }

    /// Moves the leadership to server `target` (a 3-server bed), by killing and restarting
    /// servers, and waits until every server serves again with `target` leading. Returns the
    /// servers that led on the way.
    ///
    /// ZooKeeper elects the vote with the highest epoch, then zxid, then id. Killing the leader
    /// `L` makes the higher-id of the other two lead; if that is not `target` but `X`, killing `X`
    /// and restarting `L` leaves `target`, which followed `X` into a newer epoch than `L` saw, to
    /// win against `L`. Then every stopped server is restarted as a follower.
    ///
    /// # Panics
    /// When the bed does not have exactly 3 servers.
    pub fn make_leader(&self, target: usize) -> Result<Vec<usize>> {
        assert_eq!(self.servers.len(), 3, "make_leader needs a 3-server bed");
        let mut led = Vec::new();
        for _ in 0..3 {
            let leader = self.wait_for_quorum()?;
            led.push(leader);
            if leader == target {
                return Ok(led);
            }
            self.kill_server(leader);
            let next = self.leader()?;
            if next != target {
                led.push(next);
                self.kill_server(next);
                self.restart_server(leader)?;
                self.restart_server(next)?;
            } else {
                self.restart_server(leader)?;
            }
        }
        let leader = self.wait_for_quorum()?;
        led.push(leader);
        if leader == target {
            Ok(led)
        } else {
            Err(Error::Timeout {
                what: format!("server {target} to lead"),
                last_seen: format!("the leaders were {led:?}"),
            })
        }
    }

    // ----- faults: the network -----

    fn node_ip(&self, node: Node<'_>) -> Ipv4Addr {
        match node {
            Node::Server(i) => self.servers[i].ip,
            Node::Client(client) => {
                assert!(
                    Arc::ptr_eq(&client.net, &self.net),
                    "client namespace {} belongs to another bed",
                    client.name
                );
                client.ip
            }
        }
    }

    fn cut_pairs(&self, pairs: &[(Ipv4Addr, Ipv4Addr)]) -> Result<()> {
        self.net
            .cut(pairs)
            .map_err(|e| Error::io("updating the partition rules", e))
    }

    /// Cuts `a` and `b` from each other, both ways: every packet between them is dropped.
    ///
    /// # Panics
    ///
    /// When `a` and `b` are the same node, a server index is out of range, or a client
    /// namespace is another bed's.
    pub fn cut(&self, a: Node<'_>, b: Node<'_>) -> Result<()> {
        let (a, b) = (self.node_ip(a), self.node_ip(b));
        assert_ne!(a, b, "a node cannot be cut from itself");
        self.cut_pairs(&[(a, b), (b, a)])
    }

    /// Drops every packet from `from` to `to` (at `to`); `to`'s packets still reach `from`.
    /// A TCP connection needs both ways, so either side's connects hang; one already open
    /// stalls in the cut direction.
    ///
    /// # Panics
    ///
    /// As [`PartitionBed::cut`].
    pub fn cut_one_way(&self, from: Node<'_>, to: Node<'_>) -> Result<()> {
        let (from, to) = (self.node_ip(from), self.node_ip(to));
        assert_ne!(from, to, "a node cannot be cut from itself");
        self.cut_pairs(&[(from, to)])
    }

    /// Cuts server `i` from every other server, both ways; clients (and the hub) still reach
    /// it. A follower so cut stops serving after `syncLimit` × `tickTime` (10 s with the
    /// defaults) and looks for a leader until healed; a leader so cut loses its quorum.
    pub fn isolate_from_servers(&self, i: usize) -> Result<()> {
        let me = self.servers[i].ip;
        let pairs: Vec<_> = (0..self.len())
            .filter(|&j| j != i)
            .flat_map(|j| [(me, self.servers[j].ip), (self.servers[j].ip, me)])
            .collect();
        self.cut_pairs(&pairs)
    }

    /// True when packets from `from` are dropped at `to`.
    pub fn is_cut(&self, from: Node<'_>, to: Node<'_>) -> bool {
        self.net.is_cut(self.node_ip(from), self.node_ip(to))
    }

    /// Every cut in force, as `(from, to)` addresses.
    pub fn cuts(&self) -> Vec<(Ipv4Addr, Ipv4Addr)> {
        self.net.cuts()
    }

    /// Removes every cut (the bed's table goes from every namespace). Connections that hung
    /// resume where TCP had not given up yet, at their next retransmission, which comes later
    /// the longer the cut lasted (see the [module documentation](self)).
    pub fn heal(&self) -> Result<()> {
        self.net
            .heal()
            .map_err(|e| Error::io("removing the partition rules", e))
    }

    // ----- faults: the processes -----

    fn signal(&self, i: usize, signal: Signal, what: &str) -> Result<()> {
        let pid = self
            .pid(i)
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(Pid::from_raw)
            .ok_or_else(|| {
                Error::io(
                    format!("{what} server {i}"),
                    io::Error::other("the server does not run"),
                )
            })?;
        kill_process(pid, signal)
            .map_err(|e| Error::io(format!("{what} server {i} (pid {pid:?})"), e.into()))
    }

    /// Freezes server `i`'s JVM (SIGSTOP): it keeps its connections but answers nothing, as a
    /// server stuck in a long pause. Undone by [`PartitionBed::resume_server`].
    pub fn pause_server(&self, i: usize) -> Result<()> {
        self.signal(i, Signal::STOP, "pausing")
    }

    /// Lets server `i`'s JVM run again (SIGCONT).
    pub fn resume_server(&self, i: usize) -> Result<()> {
        self.signal(i, Signal::CONT, "resuming")
    }

    /// Kills server `i` (SIGKILL) and reaps it. No-op when it does not run.
    pub fn kill_server(&self, i: usize) {
        self.servers[i].inst.kill();
    }

    /// Stops server `i`: SIGTERM, then SIGKILL after 5 s. No-op when it does not run.
    pub fn stop_server(&self, i: usize) {
        self.servers[i].inst.stop();
    }

    /// Stops server `i` if it runs, starts it again in its namespace with the same data, and
    /// waits (at most the startup timeout) until it serves as leader or follower, which needs
    /// a quorum it can reach.
    pub fn restart_server(&self, i: usize) -> Result<()> {
        let server = &self.servers[i];
        server.inst.stop();
        let timeout = self.opts.startup_timeout;
        // Spawned from the server's namespace, which the JVM inherits; the readiness probes
        // go to its own address from there, which no cut affects.
        netns::run_in(&server.ns, || {
            restart_instance(&server.inst, timeout, |m| {
                matches!(m, Mode::Leader | Mode::Follower)
            })
        })
        .map_err(|e| Error::io(format!("entering namespace {}", server.ns), e))?
    }
}

impl Drop for PartitionBed {
    fn drop(&mut self) {
        for s in &self.servers {
            dump_log_if_panicking(&s.inst);
        }
        for s in &self.servers {
            s.inst.kill();
        }
        self.net.delete_all();
    }
}

/// A random pause of up to a second, for a test to cut at a random moment: anywhere in the
/// leader's half-tick cycle of pings to its followers and in the clients' timer cycles.
pub fn random_pause() -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    Duration::from_millis(u64::from(nanos % 1_000))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bed_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<super::PartitionBed>();
        assert_send_sync::<super::ClientNamespace>();
    }
}
