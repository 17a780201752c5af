//! Exit statuses and the error that ends a command: [`ExitClass`] (one status per class of
//! failure), [`Failure`] (one line for stderr and its class), and the mapping of the client's
//! and the recipes' errors to classes.

use std::fmt;

/// The exit statuses, as `rzk --help` and `docs/cli.md` list them. `lock`, `leader` and
/// `barrier` exit with the status of the command they ran once it ran.
pub(crate) const EXIT_STATUS_HELP: &str = "\
Exit status:
  0    success
  1    any other failure (the server refused for another reason, BadArguments
       included, an I/O error)
  2    usage: bad arguments, an invalid path, ACL, duration or connect string
       (nothing was sent)
  3    not found: the node does not exist (server status: no server runs)
  4    conflict: the node exists, has children, or is not at the version given
  5    auth: not allowed by the node's ACL, or authentication failed
  6    connection: no server reachable, connection lost, session expired
  7    lost: the lock or leadership was lost while the command ran, and the
       command was stopped
  8    timeout: --timeout passed first, or --try found the lock held
  126  the command could not be executed
  127  the command was not found
  lock, leader, barrier: the command's own status once it ran (128+N when
  it was killed by signal N, as shells report it)
With --json a failure is a JSON object on stderr (error, class, status).
Without a command rzk starts its shell.";

/// A class of outcome, and its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitClass {
    /// Any other failure.
    Failure,
    /// Bad arguments or input; nothing was sent.
    Usage,
    /// The node does not exist.
    NotFound,
    /// The node exists, is not empty, or has another version.
    Conflict,
    /// Not allowed, or authentication failed.
    Auth,
    /// No server, connection lost, session expired.
    Connection,
    /// The lock or leadership was lost while the command ran, and the command was stopped.
    Lost,
    /// A `--timeout` passed, or `--try` found the lock held.
    Timeout,
    /// The command exists but could not be executed.
    CannotExecute,
    /// The command was not found.
    CommandNotFound,
    /// Standard output was closed early (a pipe reader went away): 128 + SIGPIPE, as a
    /// tool killed by the signal would report.
    BrokenPipe,
}

impl ExitClass {
    /// The exit status.
    pub(crate) fn code(self) -> u8 {
        match self {
            ExitClass::Failure => 1,
            ExitClass::Usage => 2,
            ExitClass::NotFound => 3,
            ExitClass::Conflict => 4,
            ExitClass::Auth => 5,
            ExitClass::Connection => 6,
            ExitClass::Lost => 7,
            ExitClass::Timeout => 8,
            ExitClass::CannotExecute => 126,
            ExitClass::CommandNotFound => 127,
            ExitClass::BrokenPipe => 128 + 13,
        }
    }

    /// The class of a client error.
    pub(crate) fn of_zk(error: &zk_proto::Error) -> ExitClass {
        use zk_proto::Error as E;
        match error {
            E::NoNode => ExitClass::NotFound,
            E::NodeExists | E::NotEmpty | E::BadVersion | E::NoChildrenForEphemerals => {
                ExitClass::Conflict
            }
            E::NoAuth | E::AuthFailed { .. } | E::SessionClosedRequireSaslAuth => ExitClass::Auth,
            // Refused by the client before anything was sent. The server's own refusals
            // (BadArguments, InvalidAcl) were sent: they are server errors, not usage.
            E::InvalidPath(_)
            | E::InvalidConnectString(_)
            | E::InvalidArgument(_)
            | E::PacketTooLarge { .. } => ExitClass::Usage,
            E::ConnectionLoss
            | E::SessionExpired
            | E::SessionMoved
            | E::OperationTimeout
            | E::RequestTimeout
            | E::Closed
            | E::NoServerReachable { .. } => ExitClass::Connection,
            _ => ExitClass::Failure,
        }
    }

    /// The class's name in JSON errors (`auth`, `not-found`, ...).
    pub(crate) fn name(self) -> &'static str {
        match self {
            ExitClass::Failure => "failure",
            ExitClass::Usage => "usage",
            ExitClass::NotFound => "not-found",
            ExitClass::Conflict => "conflict",
            ExitClass::Auth => "auth",
            ExitClass::Connection => "connection",
            ExitClass::Lost => "lost",
            ExitClass::Timeout => "timeout",
            ExitClass::CannotExecute => "cannot-execute",
            ExitClass::CommandNotFound => "command-not-found",
            ExitClass::BrokenPipe => "broken-pipe",
        }
    }

    /// The class of a recipe error.
    pub(crate) fn of_recipe(error: &zk_recipes::Error) -> ExitClass {
        match error {
            zk_recipes::Error::Zk(e) => ExitClass::of_zk(e),
            zk_recipes::Error::Timeout => ExitClass::Timeout,
            zk_recipes::Error::Lost => ExitClass::Lost,
            _ => ExitClass::Failure,
        }
    }
}

/// What ends a command early: the line for stderr (without the `rzk: ` prefix; empty for
/// none) and the class of the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The class, hence the exit status.
    pub(crate) class: ExitClass,
    /// One line saying what failed; empty when nothing is to be said (a closed pipe).
    pub(crate) message: String,
}

impl Failure {
    /// A failure of `class` with `message`.
    pub(crate) fn new(class: ExitClass, message: impl Into<String>) -> Failure {
        Failure {
            class,
            message: message.into(),
        }
    }

    /// Bad input: nothing was sent.
    pub(crate) fn usage(message: impl Into<String>) -> Failure {
        Failure::new(ExitClass::Usage, message)
    }

    /// A client error while doing `what` (`"get /a"`).
    pub(crate) fn zk(what: &str, error: &zk_proto::Error) -> Failure {
        Failure::new(
            ExitClass::of_zk(error),
            format!("{what}: {}", describe(error)),
        )
    }

    /// A recipe error while doing `what`.
    pub(crate) fn recipe(what: &str, error: &zk_recipes::Error) -> Failure {
        let text = match error {
            zk_recipes::Error::Zk(e) => describe(e),
            e => e.to_string(),
        };
        Failure::new(ExitClass::of_recipe(error), format!("{what}: {text}"))
    }

    /// An I/O error while doing `what`; a closed standard output is [`ExitClass::BrokenPipe`]
    /// with no message.
    pub(crate) fn io(what: &str, error: &std::io::Error) -> Failure {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            Failure::new(ExitClass::BrokenPipe, "")
        } else {
            Failure::new(ExitClass::Failure, format!("{what}: {error}"))
        }
    }
}

/// What rzk says of a client error: its own text, except where that text claims more than
/// rzk knows. A `SessionExpired` is also what the client reports when it gave the session up
/// itself after no server answered for a whole session timeout (the server then most likely
/// expired it too, but nobody told rzk): the code's description, "expired by the server", is
/// not said then.
pub(crate) fn describe(error: &zk_proto::Error) -> String {
    match error {
        zk_proto::Error::SessionExpired => {
            "SessionExpired (-112): the session expired (the server \
             ended it, or no server answered for the whole session timeout); its ephemeral \
             nodes and watches are gone"
                .to_owned()
        }
        e => e.to_string(),
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// The result of a command: an exit status, or the failure that ended it.
pub(crate) type Outcome<T = u8> = Result<T, Failure>;

#[cfg(test)]
mod tests {
    use super::*;
    use zk_proto::Error as E;

    #[test]
    fn every_class_has_its_own_status() {
        let classes = [
            ExitClass::Failure,
            ExitClass::Usage,
            ExitClass::NotFound,
            ExitClass::Conflict,
            ExitClass::Auth,
            ExitClass::Connection,
            ExitClass::Lost,
            ExitClass::Timeout,
            ExitClass::CannotExecute,
            ExitClass::CommandNotFound,
            ExitClass::BrokenPipe,
        ];
        let mut codes: Vec<u8> = classes.iter().map(|c| c.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), classes.len());
        assert!(!codes.contains(&0));
        for class in classes {
            let code = class.code().to_string();
            assert!(
                EXIT_STATUS_HELP.contains(&format!("  {code} ")) || class == ExitClass::BrokenPipe,
                "{class:?} ({code}) is not in the help"
            );
        }
    }

    #[test]
    fn client_errors_map_to_their_class() {
        assert_eq!(ExitClass::of_zk(&E::NoNode), ExitClass::NotFound);
        assert_eq!(ExitClass::of_zk(&E::NodeExists), ExitClass::Conflict);
        assert_eq!(ExitClass::of_zk(&E::NotEmpty), ExitClass::Conflict);
        assert_eq!(ExitClass::of_zk(&E::BadVersion), ExitClass::Conflict);
        assert_eq!(ExitClass::of_zk(&E::NoAuth), ExitClass::Auth);
        // Refused by the server: something was sent.
        assert_eq!(ExitClass::of_zk(&E::InvalidAcl), ExitClass::Failure);
        assert_eq!(ExitClass::of_zk(&E::BadArguments), ExitClass::Failure);
        assert_eq!(
            ExitClass::of_zk(&E::InvalidArgument("x".into())),
            ExitClass::Usage
        );
        assert_eq!(ExitClass::of_zk(&E::ConnectionLoss), ExitClass::Connection);
        assert_eq!(ExitClass::of_zk(&E::SessionExpired), ExitClass::Connection);
        assert_eq!(ExitClass::of_zk(&E::Closed), ExitClass::Connection);
        assert_eq!(
            ExitClass::of_zk(&E::NoServerReachable {
                attempts: 1,
                hosts: vec!["127.0.0.1:1".into()],
                last_error: zk_proto::ConnectFailure::NotAttempted,
            }),
            ExitClass::Connection
        );
        assert_eq!(ExitClass::of_zk(&E::Unimplemented), ExitClass::Failure);
    }

    #[test]
    fn recipe_errors_map_to_their_class() {
        assert_eq!(
            ExitClass::of_recipe(&zk_recipes::Error::Timeout),
            ExitClass::Timeout
        );
        assert_eq!(
            ExitClass::of_recipe(&zk_recipes::Error::Lost),
            ExitClass::Lost
        );
        assert_eq!(
            ExitClass::of_recipe(&zk_recipes::Error::Zk(E::NoAuth)),
            ExitClass::Auth
        );
    }

    #[test]
    fn an_expired_session_is_not_said_to_be_the_servers_doing() {
        let failure = Failure::zk("get /a", &E::SessionExpired);
        assert!(
            !failure.message.contains("by the server"),
            "{}",
            failure.message
        );
        assert!(failure.message.contains("the session expired"));
        assert!(failure.message.contains("no server answered"));
        let recipe = Failure::recipe("lock /l", &zk_recipes::Error::Zk(E::SessionExpired));
        assert!(
            !recipe.message.contains("by the server"),
            "{}",
            recipe.message
        );
        assert_eq!(recipe.class, ExitClass::Connection);
    }

    #[test]
    fn a_closed_pipe_is_silent() {
        let failure = Failure::io(
            "write",
            &std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        );
        assert_eq!(failure.class, ExitClass::BrokenPipe);
        assert!(failure.message.is_empty());
        let other = Failure::io("read stdin", &std::io::Error::other("boom"));
        assert_eq!(other.class, ExitClass::Failure);
        assert_eq!(other.message, "read stdin: boom");
    }
}
