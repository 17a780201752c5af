//! Running small Java programs from tests (interop oracles: the ZooKeeper Java client, Apache
//! Curator) by the single-file source launch, `java -cp <jars> Prog.java <args>`: the JDK
//! compiles the one source file in memory, there is no build step and no class file.
//!
//! - [`zookeeper_client_program`]: a program that uses the ZooKeeper Java client, on the
//!   classpath the servers use ([`ZkInstall`], so `ZK_CLASSPATH` and `ZK_JAVA` apply).
//! - [`debian_classpath`] and [`source_program`]: any other set of jars from
//!   [`DEBIAN_JAR_DIR`] (Curator's, for example).
//!
//! The commands are plain [`std::process::Command`]s; async tests convert them with
//! `tokio::process::Command::from`. Keep program sources ASCII (write other characters as
//! `\uXXXX` escapes) and pass non-ASCII arguments in an encoding of your own (hex, say): the
//! JVM decodes both the source file and the command line with the platform charset, which
//! depends on the locale the tests run under.

use std::path::Path;
use std::process::Command;

use crate::error::Result;
use crate::install::{DEBIAN_JAR_DIR, ZkInstall};

/// The classpath (`:`-separated) of jars in [`DEBIAN_JAR_DIR`]: every jar of `required`,
/// then those of `optional` that are present, in the order given. `None` when one of
/// `required` is missing.
pub fn debian_classpath(required: &[&str], optional: &[&str]) -> Option<String> {
    let dir = Path::new(DEBIAN_JAR_DIR);
    let mut entries = Vec::with_capacity(required.len() + optional.len());
    for jar in required {
        let path = dir.join(jar);
        if !path.is_file() {
            return None;
        }
        entries.push(path.display().to_string());
    }
    entries.extend(
        optional
            .iter()
            .map(|jar| dir.join(jar))
            .filter(|path| path.is_file())
            .map(|path| path.display().to_string()),
    );
    Some(entries.join(":"))
}

/// The classpath of Apache Curator's recipes, its service discovery (`curator-x-discovery`,
/// with the Jackson jars it needs) and the ZooKeeper client from Debian's packages
/// (`scripts/install-curator.sh`), for the Curator programs of the interop tests and the
/// partition suite; `None` when Curator is not installed. `CURATOR_CLASSPATH` overrides it.
pub fn curator_classpath() -> Option<String> {
    if let Ok(classpath) = std::env::var("CURATOR_CLASSPATH") {
        return Some(classpath);
    }
    debian_classpath(
        &["curator-recipes.jar"],
        &[
            "curator-framework.jar",
            "curator-client.jar",
            "curator-x-discovery.jar",
            "jackson-databind.jar",
            "jackson-core.jar",
            "jackson-annotations.jar",
            "zookeeper.jar",
            "zookeeper-jute.jar",
            "guava.jar",
            "slf4j-api.jar",
            "slf4j-nop.jar",
        ],
    )
}

/// `java -cp <classpath> <source>` (single-file source launch), with the `java` that
/// [`ZkInstall::detect`] finds; the caller adds the program's arguments.
///
/// # Errors
///
/// [`Error::NotInstalled`](crate::Error::NotInstalled) when Java or the ZooKeeper jars are
/// missing.
pub fn source_program(classpath: &str, source: &Path) -> Result<Command> {
    let install = ZkInstall::detect()?;
    let mut command = Command::new(install.java());
    command.arg("-cp").arg(classpath).arg(source);
    Ok(command)
}

/// `java -cp <ZooKeeper> <source>`: a program using the ZooKeeper Java client
/// (`org.apache.zookeeper.ZooKeeper`, its NIO socket, the jute records), on the servers'
/// classpath ([`ZkInstall::classpath`]). The client logs at `warn` and above only (to
/// stderr, through `slf4j-simple` when it is on the classpath).
///
/// # Errors
///
/// [`Error::NotInstalled`](crate::Error::NotInstalled) when Java or the ZooKeeper jars are
/// missing.
pub fn zookeeper_client_program(source: &Path) -> Result<Command> {
    let install = ZkInstall::detect()?;
    let mut command = Command::new(install.java());
    command
        .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
        .arg("-cp")
        .arg(install.classpath())
        .arg(source);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classpath_needs_the_required_jars_and_keeps_the_order() {
        assert_eq!(debian_classpath(&["no-such-jar-here.jar"], &[]), None);
        if Path::new(DEBIAN_JAR_DIR).join("zookeeper.jar").is_file() {
            assert_eq!(
                debian_classpath(
                    &["zookeeper.jar"],
                    &["no-such-jar-here.jar", "zookeeper-jute.jar"]
                ),
                Some(format!(
                    "{DEBIAN_JAR_DIR}/zookeeper.jar:{DEBIAN_JAR_DIR}/zookeeper-jute.jar"
                ))
            );
        }
    }
}
