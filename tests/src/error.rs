//! The kit's error type.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// What to do when Java or ZooKeeper is missing; part of every [`Error::NotInstalled`] message.
pub const INSTALL_HINT: &str = "run `scripts/install-deps.sh` (Debian: apt-get install -y \
     default-jre-headless default-jdk-headless zookeeper), or point ZK_CLASSPATH at the \
     ZooKeeper 3.8 jars and ZK_JAVA at a java binary";

/// What to do when the Kerberos tools are missing; part of every
/// [`Error::KerberosNotInstalled`] message.
pub const KERBEROS_INSTALL_HINT: &str = "run `scripts/install-kerberos.sh` (Debian: apt-get \
     install -y krb5-kdc krb5-admin-server krb5-user libkrb5-dev libclang-dev pkgconf)";

/// Result with the kit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the test kit.
///
/// `Debug` prints the same text as `Display`, so `.unwrap()`/`.expect()` in a test show the
/// readable message (with the install hint or the server's log tail).
#[non_exhaustive]
pub enum Error {
    /// Java or the ZooKeeper jars were not found. The message says to run `scripts/install-deps.sh`.
    NotInstalled {
        /// What is missing, e.g. `/usr/share/java/zookeeper.jar`.
        missing: String,
    },
    /// A Kerberos tool of the local KDC ([`Kdc`](crate::kdc::Kdc)) was not found. The message
    /// says to run `scripts/install-kerberos.sh`.
    KerberosNotInstalled {
        /// The missing tool, e.g. `krb5kdc`.
        missing: String,
    },
    /// An I/O operation of the kit failed (directories, configuration files, spawning `java`).
    Io {
        /// What the kit was doing.
        context: String,
        /// The underlying error.
        source: io::Error,
    },
    /// A server did not start, exited early, or did not become ready in time.
    StartFailed {
        /// Which server and why.
        reason: String,
        /// The server's log file (its stdout and stderr).
        log: PathBuf,
        /// The last lines of the log file.
        log_tail: String,
    },
    /// Waiting for a condition of running servers (serving, one leader) timed out.
    Timeout {
        /// What was awaited.
        what: String,
        /// What was observed last.
        last_seen: String,
    },
}

/// The value of a server or ensemble start in a test, or a panic with the error.
///
/// When Java or ZooKeeper is missing ([`Error::NotInstalled`]) the panic message is one line,
/// the error's: what is missing and "run `scripts/install-deps.sh` ...". That is how `cargo
/// test` fails on a machine without them; other errors keep their detail (the server's log
/// tail).
///
/// ```no_run
/// let server = zk_testkit::started(zk_testkit::ZkServer::start());
/// # drop(server);
/// ```
#[track_caller]
pub fn started<T>(result: Result<T>) -> T {
    match result {
        Ok(value) => value,
        Err(e @ (Error::NotInstalled { .. } | Error::KerberosNotInstalled { .. })) => {
            panic!("{e}")
        }
        Err(e) => panic!("start ZooKeeper: {e}"),
    }
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotInstalled { missing } => {
                write!(
                    f,
                    "ZooKeeper test servers unavailable: {missing}; {INSTALL_HINT}"
                )
            }
            Error::KerberosNotInstalled { missing } => {
                write!(
                    f,
                    "Kerberos test KDC unavailable: {missing} not found; {KERBEROS_INSTALL_HINT}"
                )
            }
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::StartFailed {
                reason,
                log,
                log_tail,
            } => write!(
                f,
                "{reason}\n--- last lines of {} ---\n{log_tail}\n--- end of log ---",
                log.display()
            ),
            Error::Timeout { what, last_seen } => {
                write!(f, "timed out waiting for {what}; last seen: {last_seen}")
            }
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_install_fails_a_start_with_one_line_naming_the_script() {
        let failed = std::panic::catch_unwind(|| {
            started::<()>(Err(Error::NotInstalled {
                missing: "/usr/share/java/zookeeper.jar not found (package zookeeper)".into(),
            }))
        })
        .expect_err("must panic");
        let message = failed
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(!message.contains('\n'), "{message}");
        assert!(
            message
                .starts_with("ZooKeeper test servers unavailable: /usr/share/java/zookeeper.jar"),
            "{message}"
        );
        assert!(
            message.contains("run `scripts/install-deps.sh`"),
            "{message}"
        );
    }
}
