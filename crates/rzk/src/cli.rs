//! The command line: every command, argument and option (clap's derive), and nothing else.
//! Values are checked here when clap can (numbers, durations, choices); paths are checked by
//! the commands before anything is sent.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::exit::EXIT_STATUS_HELP;
use crate::spec::parse_duration;

/// rzk: operate ZooKeeper from the shell.
#[derive(Debug, Parser)]
#[command(
    name = "rzk",
    version,
    about = "Operate ZooKeeper from the shell: read, write and watch nodes, run a command under a lock or while leader.",
    after_help = EXIT_STATUS_HELP,
    max_term_width = 100
)]
pub(crate) struct Cli {
    /// Same as --server, before the command only (after it, -s is create's --sequential)
    #[arg(short = 's', value_name = "CONNECT", conflicts_with = "server")]
    pub(crate) server_short: Option<String>,
    /// Connection and output options, accepted before or after the command.
    #[command(flatten)]
    pub(crate) global: Global,
    /// What to do; none starts the shell.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

impl Cli {
    /// Parses the command line (exits with status 2 and clap's message when it is bad, 0
    /// after `--help` and `--version`), with `-s` folded into `--server`.
    pub(crate) fn parse_args() -> Cli {
        Cli::parse().folded()
    }

    /// `-s` folded into `--server`.
    fn folded(mut self) -> Cli {
        if let Some(server) = self.server_short.take() {
            self.global.server = server;
        }
        self
    }
}

/// A password, held as a [`zk_proto::Secret`]: wiped when dropped, and never in a `Debug`.
fn parse_secret(value: &str) -> Result<zk_proto::Secret, String> {
    Ok(zk_proto::Secret::from(value))
}

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub(crate) struct Global {
    /// The ensemble: host:port,host:port,.../chroot (more hosts and the chroot optional; -s before the command)
    #[arg(
        long = "server",
        env = "ZOOKEEPER",
        default_value = "127.0.0.1:2181",
        global = true,
        help_heading = "Global options",
        value_name = "CONNECT"
    )]
    pub(crate) server: String,
    /// A chroot for every path (same as /chroot at the end of --server)
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "PATH"
    )]
    pub(crate) chroot: Option<String>,
    /// The session timeout to ask for (the server clamps it to its bounds)
    #[arg(long, global = true, help_heading = "Global options", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) session_timeout: Duration,
    /// How long to try to reach a server before giving up (exit 6)
    #[arg(long, global = true, help_heading = "Global options", default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) connect_timeout: Duration,
    /// Credentials to add to the session, scheme:credential (digest:user:password); repeatable
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        env = "RZK_AUTH",
        hide_env_values = true,
        value_name = "SCHEME:CREDENTIAL"
    )]
    pub(crate) auth: Vec<String>,
    /// SASL DIGEST-MD5 as user:password (the server's JAAS user_NAME); prefer RZK_SASL, kept out of ps
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        env = "RZK_SASL",
        hide_env_values = true,
        value_name = "USER:PASSWORD"
    )]
    pub(crate) sasl: Option<String>,
    /// TLS: trust these CA certificates (PEM file); --tls alone trusts the platform's roots
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FILE"
    )]
    pub(crate) tls_ca: Option<std::path::PathBuf>,
    /// TLS: the client certificate chain for mutual TLS (PEM file; with --tls-key)
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_keystore"
    )]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// TLS: the client certificate's private key (PEM file; with --tls-cert; an encrypted PKCS#8 key takes --tls-key-password)
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FILE",
        requires = "tls_cert",
        conflicts_with = "tls_keystore"
    )]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// TLS: the client certificate chain and its key as one PKCS#12 file (.p12, .pfx, a Java PKCS12 key store), instead of --tls-cert/--tls-key
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        value_name = "FILE"
    )]
    pub(crate) tls_keystore: Option<std::path::PathBuf>,
    /// TLS: the password of --tls-keystore (without it: the empty password); prefer RZK_TLS_KEYSTORE_PASSWORD, kept out of ps
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        env = "RZK_TLS_KEYSTORE_PASSWORD",
        hide_env_values = true,
        value_name = "PASSWORD",
        value_parser = parse_secret
    )]
    pub(crate) tls_keystore_password: Option<zk_proto::Secret>,
    /// TLS: the password of an encrypted --tls-key, or of the key in --tls-keystore when it has one of its own; prefer RZK_TLS_KEY_PASSWORD, kept out of ps
    #[arg(
        long,
        global = true,
        help_heading = "Global options",
        env = "RZK_TLS_KEY_PASSWORD",
        hide_env_values = true,
        value_name = "PASSWORD",
        value_parser = parse_secret
    )]
    pub(crate) tls_key_password: Option<zk_proto::Secret>,
    /// Connect over TLS (implied by --tls-ca, --tls-cert, --tls-keystore and by a zk+tls:// connect string)
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) tls: bool,
    /// Accept a read-only server (one that lost its quorum); writes then fail
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) read_only: bool,
    /// Print JSON: one object per command, one per line for watch
    #[arg(long, global = true, help_heading = "Global options")]
    pub(crate) json: bool,
    /// Say on stderr what happens (session, lock, leadership, signals)
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub(crate) verbose: bool,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the children of a node (sorted), or with -R every node below it
    Ls {
        /// Every descendant, as full paths, breadth first
        #[arg(short = 'R', long, conflicts_with = "watch")]
        recursive: bool,
        /// Leave a one-shot child watch and print its event when it fires (rzk waits for it;
        /// the shell prints it when it comes)
        #[arg(short = 'w', long)]
        watch: bool,
        /// The node
        path: String,
    },
    /// Print a node's data (raw bytes; --json: text or base64, and the Stat)
    Get {
        /// Leave a one-shot data watch and print its event when it fires
        #[arg(short = 'w', long)]
        watch: bool,
        /// The node
        path: String,
    },
    /// Print a node's Stat
    Stat {
        /// Leave a one-shot watch (creation, change, deletion) and print its event when it fires
        #[arg(short = 'w', long)]
        watch: bool,
        /// The node
        path: String,
    },
    /// Set a node's data
    Set {
        /// Only if the node is at this data version (exit 4 otherwise)
        #[arg(long)]
        version: Option<i32>,
        /// The node
        path: String,
        /// The data; - reads standard input
        data: OsString,
    },
    /// Create a node; prints its path (with the sequence number for -s)
    Create(CreateArgs),
    /// Delete a node; with -r its children first (zkCli: delete, deleteall)
    #[command(alias = "delete")]
    Rm {
        /// Delete the node's whole subtree, deepest nodes first
        #[arg(short, long)]
        recursive: bool,
        /// With -r: delete in transactions (multi) of at most N nodes each, as zkCli's
        /// deleteall -b does; by default each delete is its own request
        #[arg(short, long, value_name = "N", requires = "recursive", value_parser = clap::value_parser!(u32).range(1..))]
        batch: Option<u32>,
        /// Only if the node is at this data version (not with -r)
        #[arg(long, conflicts_with = "recursive")]
        version: Option<i32>,
        /// The node
        path: String,
    },
    /// Print the subtree of a node, indented, with each node's data size
    Tree {
        /// Go at most this many levels below the node
        #[arg(long, value_name = "N")]
        max_depth: Option<usize>,
        /// The node
        #[arg(default_value = "/")]
        path: String,
    },
    /// Delete a node and its whole subtree (rm -r; zkCli's deleteall)
    Deleteall {
        /// Delete in transactions (multi) of at most N nodes each
        #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        batch: Option<u32>,
        /// The node
        path: String,
    },
    /// Print a node's ACL, one scheme:id:perms per line
    #[command(alias = "getAcl")]
    Getacl {
        /// The node
        path: String,
    },
    /// Set a node's ACL (with -R, of its whole subtree)
    #[command(alias = "setAcl")]
    Setacl {
        /// Only if the node is at this ACL version (exit 4 otherwise)
        #[arg(long, conflicts_with = "recursive")]
        version: Option<i32>,
        /// Set the ACL of every node of the subtree, the node first
        #[arg(short = 'R', long)]
        recursive: bool,
        /// The node
        path: String,
        /// scheme:id:perms,... with perms letters of cdrwa (world:anyone:r,auth::cdrwa)
        acl: String,
    },
    /// Print the identities the session is authenticated as
    Whoami,
    /// Wait until the server the session is on has every committed write of PATH
    Sync {
        /// The node
        #[arg(default_value = "/")]
        path: String,
    },
    /// How many nodes are below a node (all descendants, one request)
    #[command(name = "children-count", alias = "getAllChildrenNumber")]
    ChildrenCount {
        /// The node
        path: String,
    },
    /// The session's ephemeral nodes under a path (in a one-shot rzk, none: use the shell)
    #[command(alias = "getEphemerals")]
    Ephemerals {
        /// Only those whose path starts with this
        #[arg(default_value = "/")]
        path: String,
    },
    /// Remove the session's watches on a node (useful in the shell)
    #[command(alias = "removewatches")]
    Unwatch {
        /// Child watches only
        #[arg(short, conflicts_with_all = ["data", "any"])]
        children: bool,
        /// Data and exists watches only
        #[arg(short, conflicts_with = "any")]
        data: bool,
        /// Every watch (the default)
        #[arg(short)]
        any: bool,
        /// The node
        path: String,
    },
    /// Print the ensemble's configuration (/zookeeper/config), parsed, or as stored with --raw
    Config {
        /// The data as the server stores it
        #[arg(long, conflicts_with = "connect_string")]
        raw: bool,
        /// Only the members' client addresses as a connect string (zkCli's config -c), for
        /// --server or ZOOKEEPER
        #[arg(short = 'c', long)]
        connect_string: bool,
    },
    /// Change the ensemble's membership (needs reconfigEnabled on the servers and, with
    /// ACLs on, the super user); prints the new configuration
    Reconfig(ReconfigArgs),
    /// Set a quota on a node's subtree: -n nodes and/or -b bytes (soft: logged when
    /// exceeded), -N/-B hard (refused when exceeded, with enforceQuota on the server)
    Setquota(QuotaLimits),
    /// Print a node's quota and what its subtree uses
    Listquota {
        /// The node
        path: String,
    },
    /// Remove a node's quota, or with -n/-b/-N/-B only those limits
    Delquota {
        /// The node-count (soft) limit only
        #[arg(short = 'n')]
        count: bool,
        /// The bytes (soft) limit only
        #[arg(short = 'b')]
        bytes: bool,
        /// The node-count hard limit only
        #[arg(short = 'N')]
        count_hard: bool,
        /// The bytes hard limit only
        #[arg(short = 'B')]
        bytes_hard: bool,
        /// The node
        path: String,
    },
    /// Print the changes of a node (-R: of its subtree) as they come, until interrupted
    Watch {
        /// The node's whole subtree (creations, deletions and data changes below it)
        #[arg(short = 'R', long)]
        recursive: bool,
        /// Exit after this many events
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        count: Option<u64>,
        /// The node (need not exist)
        path: String,
    },
    /// The services registered under BASE in Curator's service-discovery layout, the
    /// instances of one (NAME), or with --watch those instances and then their changes
    Services {
        /// Print the instances, then every change as it comes (+ added, ~ updated, - removed),
        /// until interrupted
        #[arg(short = 'w', long, requires = "name")]
        watch: bool,
        /// With --watch: exit after this many changes
        #[arg(long, value_name = "N", requires = "watch", value_parser = clap::value_parser!(u64).range(1..))]
        count: Option<u64>,
        /// The discovery's base path (Curator's ServiceDiscoveryBuilder.basePath)
        base: String,
        /// A service's name
        name: Option<String>,
    },
    /// Run a command while holding a lock (a Curator-compatible mutex)
    Lock(LockArgs),
    /// Run a command while this process is the leader of an election, and stand again
    Leader(LeaderArgs),
    /// Wait until N members entered a double barrier, run the command, wait until all left
    Barrier(BarrierArgs),
    /// Wait until N members joined a start gate (scripts that must start together)
    Gate(GateArgs),
    /// Who holds a lock (or leads an election) and who waits, in order, with session ids
    Locks {
        /// The lock's (or election's) path
        path: String,
    },
    /// An interactive shell on one session (also rzk without a command): zkCli's commands and
    /// rzk's, line editing, history, tab completion of node paths, watches printed as they fire
    Shell,
    /// A local ZooKeeper on 127.0.0.1 for development: start (it stays up after rzk exits),
    /// status, stop
    Server(ServerArgs),
    /// Run the lock-latency benchmark (rzk bench --help for its options; only in an rzk built
    /// with the feature `bench`)
    #[command(disable_help_flag = true, hide = cfg!(not(feature = "bench")))]
    Bench {
        /// The benchmark's options (see rzk bench --help); without --connect it starts a
        /// local ZooKeeper (needs Java and ZooKeeper installed); --server is not used; --sasl,
        /// which rzk takes with a value, goes after --: rzk bench -- --sasl
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "OPTIONS"
        )]
        args: Vec<OsString>,
    },
}

/// `reconfig`'s arguments: incremental (`--add`, `--remove`) or the whole new membership
/// (`--members`, `--file`).
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("change").required(true).multiple(true).args(["add", "remove", "members", "file"])))]
pub(crate) struct ReconfigArgs {
    /// Servers to add, `server.ID=HOST:QUORUM:ELECTION[:ROLE];[HOST:]CLIENT` (repeatable, or
    /// comma-separated)
    #[arg(long, value_name = "SERVER", conflicts_with_all = ["members", "file"])]
    pub(crate) add: Vec<String>,
    /// Server ids to remove (repeatable, or comma-separated)
    #[arg(long, value_name = "ID", conflicts_with_all = ["members", "file"])]
    pub(crate) remove: Vec<String>,
    /// The whole new membership, server lines separated by commas (repeatable)
    #[arg(long, value_name = "SERVERS", conflicts_with = "file")]
    pub(crate) members: Vec<String>,
    /// The whole new membership from a file of server.N= lines (other lines ignored)
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<std::path::PathBuf>,
    /// Only if the current configuration is this version (hex, as config prints it; zkCli's -v)
    #[arg(long, value_name = "VERSION")]
    pub(crate) from_config: Option<String>,
}

/// What `server` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ServerAction {
    /// Start it (Java and ZooKeeper must be installed: scripts/install-deps.sh), and wait
    /// until it serves; nothing when it runs already
    Start,
    /// Stop it (SIGTERM, SIGKILL after 10 s); its data stays for the next start
    Stop,
    /// Whether it runs (exit 0) or not (exit 3), and its address
    Status,
}

/// `server`'s arguments.
#[derive(Debug, Clone, Args)]
#[command(after_help = "\
The server is a standalone ZooKeeper (ZooKeeperServerMain) listening on 127.0.0.1 only,
with the test kit's configuration (tickTime 2000 ms: session timeouts from 4 s to 40 s).
Its zoo.cfg, data, log (zookeeper.log) and pid file are in its directory, by default
$XDG_STATE_HOME/rzk/server-PORT (or ~/.local/state/rzk/server-PORT).")]
pub(crate) struct ServerArgs {
    /// start, stop or status
    #[arg(value_enum)]
    pub(crate) action: ServerAction,
    /// The client port on 127.0.0.1
    #[arg(long, default_value_t = 2181)]
    pub(crate) port: u16,
    /// The server's directory (default $XDG_STATE_HOME/rzk/server-PORT)
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<std::path::PathBuf>,
}

/// `setquota`'s limits: at least one.
#[derive(Debug, Clone, Args)]
#[command(group(clap::ArgGroup::new("limit").required(true).multiple(true).args(["count", "bytes", "count_hard", "bytes_hard"])))]
pub(crate) struct QuotaLimits {
    /// At most this many nodes in the subtree, the node included (soft limit)
    #[arg(short = 'n', value_name = "N")]
    pub(crate) count: Option<i64>,
    /// At most this many bytes of data in the subtree (soft limit)
    #[arg(short = 'b', value_name = "BYTES")]
    pub(crate) bytes: Option<i64>,
    /// Hard limit on the number of nodes
    #[arg(short = 'N', value_name = "N")]
    pub(crate) count_hard: Option<i64>,
    /// Hard limit on the bytes
    #[arg(short = 'B', value_name = "BYTES")]
    pub(crate) bytes_hard: Option<i64>,
    /// The node
    pub(crate) path: String,
}

/// `create`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Ephemeral: deleted when the session ends, which for rzk is right after the create
    #[arg(short, long, conflicts_with_all = ["container", "ttl"])]
    pub(crate) ephemeral: bool,
    /// Sequential: the server appends a 10-digit sequence number to the name
    #[arg(short, long)]
    pub(crate) sequential: bool,
    /// Container: deleted by the server once its last child is gone
    #[arg(short, long, conflicts_with_all = ["sequential", "ttl"])]
    pub(crate) container: bool,
    /// Time to live: deleted when unmodified and childless this long (needs a server with
    /// extendedTypesEnabled)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) ttl: Option<Duration>,
    /// Create missing parents (as persistent nodes)
    #[arg(short, long)]
    pub(crate) parents: bool,
    /// The ACL, scheme:id:perms,... (default world:anyone:cdrwa)
    #[arg(long)]
    pub(crate) acl: Option<String>,
    /// The node
    pub(crate) path: String,
    /// The data; - reads standard input; none is empty
    pub(crate) data: Option<OsString>,
}

/// What to do with the command when the lock or leadership is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OnLoss {
    /// SIGTERM, then SIGKILL after --grace
    Stop,
    /// Only warn on stderr; the command keeps running
    Warn,
}

/// How the command is supervised (`lock`, `leader`).
#[derive(Debug, Clone, Args)]
pub(crate) struct Supervision {
    /// When the lock (leadership) is suspended (connection lost) or lost (session ended)
    #[arg(long, value_enum, default_value_t = OnLoss::Stop, value_name = "POLICY")]
    pub(crate) on_loss: OnLoss,
    /// After SIGTERM, how long the command may take to exit before SIGKILL
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) grace: Duration,
}

/// `lock`'s arguments.
#[derive(Debug, Args)]
#[command(after_help = "\
The command gets RZK_LOCK_PATH, RZK_LOCK_NODE, RZK_FENCING_TOKEN (the lock node's creation
zxid, which grows from one holder to the next: have the resource reject lower ones) and
RZK_SESSION_ID in its environment. SIGINT, SIGTERM and SIGHUP sent to rzk are passed to it;
the lock is released when it exits, and rzk exits with its status.")]
pub(crate) struct LockArgs {
    /// Give up waiting for the lock after this long (exit 8)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) timeout: Option<Duration>,
    /// Fail at once (exit 8) when the lock is held or has waiters
    #[arg(long = "try", conflicts_with = "timeout")]
    pub(crate) try_only: bool,
    /// Run the command only if node MARKER does not exist, and create MARKER when the
    /// command succeeded (exit 0): a job done once, by whichever host comes first
    #[arg(long, value_name = "MARKER")]
    pub(crate) once: Option<String>,
    /// Supervision of the command.
    #[command(flatten)]
    pub(crate) supervision: Supervision,
    /// The lock's path (the parent of the contenders' nodes)
    pub(crate) path: String,
    /// The command and its arguments, after --
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub(crate) command: Vec<OsString>,
}

/// `leader`'s arguments.
#[derive(Debug, Args)]
#[command(after_help = "\
The command gets RZK_LEADER_PATH, RZK_LEADER_ID and RZK_SESSION_ID in its environment.
When the leadership is lost (connection lost, session expired) the command is stopped
(--on-loss) and rzk stands again (a new session if the old one expired), unless
--exit-on-loss. When the command exits on its own, rzk leaves the election and exits with
its status.")]
pub(crate) struct LeaderArgs {
    /// The candidate's id, stored in its node (default: HOSTNAME:PID)
    #[arg(long)]
    pub(crate) id: Option<String>,
    /// Exit (status 7) when the leadership is lost, instead of standing again
    #[arg(long)]
    pub(crate) exit_on_loss: bool,
    /// Supervision of the command.
    #[command(flatten)]
    pub(crate) supervision: Supervision,
    /// The election's path
    pub(crate) path: String,
    /// The command and its arguments, after --
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub(crate) command: Vec<OsString>,
}

/// `barrier`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct BarrierArgs {
    /// Give up entering (and leaving) after this long (exit 8)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub(crate) timeout: Option<Duration>,
    /// The barrier's path
    pub(crate) path: String,
    /// How many members must enter
    #[arg(value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) count: u32,
    /// A command to run once all entered (optional), after --
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command: Vec<OsString>,
}

/// `gate`'s arguments.
#[derive(Debug, Args)]
pub(crate) struct GateArgs {
    /// Give up waiting after this long (exit 8)
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", conflicts_with = "reset")]
    pub(crate) timeout: Option<Duration>,
    /// Open the gate for another round (delete its start node) instead of joining
    #[arg(long)]
    pub(crate) reset: bool,
    /// The gate's path
    pub(crate) path: String,
    /// How many members must join
    #[arg(
        value_parser = clap::value_parser!(u32).range(1..),
        required_unless_present = "reset",
        conflicts_with = "reset"
    )]
    pub(crate) count: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn options_go_before_or_after_the_command() {
        let cli = Cli::try_parse_from(["rzk", "get", "/a", "--json", "--server", "h:1"])
            .expect("parse")
            .folded();
        assert!(cli.global.json);
        assert_eq!(cli.global.server, "h:1");
        let cli = Cli::try_parse_from(["rzk", "-s", "h:2", "create", "-s", "/a/"])
            .expect("parse")
            .folded();
        assert_eq!(cli.global.server, "h:2");
        let Some(Command::Create(args)) = cli.command else {
            panic!("not create");
        };
        assert!(args.sequential);
        assert!(Cli::try_parse_from(["rzk", "-s", "h:1", "--server", "h:2", "ls", "/"]).is_err());
        let cli = Cli::try_parse_from(["rzk", "--json", "get", "/a"]).expect("parse");
        assert!(cli.global.json);
    }

    #[test]
    fn lock_takes_the_command_after_a_double_dash() {
        let cli = Cli::try_parse_from([
            "rzk",
            "lock",
            "--timeout",
            "5s",
            "/l",
            "--",
            "sh",
            "-c",
            "exit 3",
        ])
        .expect("parse");
        let Some(Command::Lock(args)) = cli.command else {
            panic!("not lock");
        };
        assert_eq!(args.timeout, Some(Duration::from_secs(5)));
        assert_eq!(args.command, ["sh", "-c", "exit 3"]);
        assert_eq!(args.supervision.on_loss, OnLoss::Stop);
        assert!(Cli::try_parse_from(["rzk", "lock", "/l"]).is_err());
        assert!(
            Cli::try_parse_from(["rzk", "lock", "--try", "--timeout", "1s", "/l", "--", "x"])
                .is_err()
        );
    }

    #[test]
    fn bench_passes_everything_through() {
        let cli =
            Cli::try_parse_from(["rzk", "bench", "--help", "--scale", "0.01"]).expect("parse");
        let Some(Command::Bench { args }) = cli.command else {
            panic!("not bench");
        };
        assert_eq!(args, ["--help", "--scale", "0.01"]);
    }

    #[test]
    fn a_key_store_replaces_the_certificate_and_key_and_its_passwords_stay_secret() {
        let cli = Cli::try_parse_from([
            "rzk",
            "--tls-keystore",
            "client.p12",
            "--tls-keystore-password",
            "store-hunter2",
            "ls",
            "/",
            "--tls-key-password",
            "key-hunter2",
        ])
        .expect("parse");
        let global = &cli.global;
        assert_eq!(
            global.tls_keystore.as_deref(),
            Some(std::path::Path::new("client.p12"))
        );
        assert_eq!(
            global
                .tls_keystore_password
                .as_ref()
                .map(zk_proto::Secret::expose),
            Some(&b"store-hunter2"[..])
        );
        assert_eq!(
            global
                .tls_key_password
                .as_ref()
                .map(zk_proto::Secret::expose),
            Some(&b"key-hunter2"[..])
        );
        for shown in [format!("{cli:?}"), format!("{cli:#?}")] {
            assert!(!shown.contains("hunter2"), "{shown}");
        }
        // One client identity: a key store, or a certificate and its key.
        for args in [
            &[
                "rzk",
                "--tls-keystore",
                "c.p12",
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "ls",
                "/",
            ][..],
            &[
                "rzk",
                "--tls-keystore",
                "c.p12",
                "--tls-key",
                "k.pem",
                "ls",
                "/",
            ],
            &[
                "rzk",
                "ls",
                "/",
                "--tls-cert",
                "c.pem",
                "--tls-keystore",
                "c.p12",
            ],
        ] {
            let error = Cli::try_parse_from(args).expect_err("a conflict");
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{args:?}: {error}"
            );
        }
    }

    #[test]
    fn bad_values_are_refused_by_the_parser() {
        for args in [
            &["rzk", "gate", "/g", "0"][..],
            &["rzk", "gate", "/g"],
            &["rzk", "watch", "--count", "0", "/w"],
            &["rzk", "get", "/a", "--session-timeout", "soon"],
            &["rzk", "create", "-e", "-c", "/a"],
            &["rzk", "rm", "-r", "--version", "1", "/a"],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?} parsed");
        }
        assert!(Cli::try_parse_from(["rzk", "gate", "--reset", "/g"]).is_ok());
        // No command: the shell.
        assert!(
            Cli::try_parse_from(["rzk"])
                .expect("parse")
                .command
                .is_none()
        );
    }
}
