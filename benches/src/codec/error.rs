//! Why the codec benchmark could not produce a report.

use std::fmt;
use std::io;

use super::INSTALL_HINT;
use super::reference::JAVA_MAIN;

/// Why the benchmark could not produce a report.
#[derive(Debug)]
pub enum BenchError {
    /// Java, javac or the ZooKeeper jars are missing.
    MissingJava(String),
    /// A file or process operation failed.
    Io(String, io::Error),
    /// javac failed.
    Compile(String),
    /// The reference encoding differs from ours, or decoding ours gave other records.
    CrossCheck(String),
    /// The Java program failed otherwise, or printed something unexpected.
    Java(String),
    /// Our own frame does not decode back to the message.
    SelfCheck(String),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::MissingJava(what) => write!(f, "{what}; {INSTALL_HINT}"),
            BenchError::Io(what, e) => write!(f, "{what}: {e}"),
            BenchError::Compile(out) => write!(f, "javac failed on {JAVA_MAIN}.java:\n{out}"),
            BenchError::CrossCheck(out) => write!(
                f,
                "the reference serializer disagrees with our codec; nothing was timed:\n{out}"
            ),
            BenchError::Java(out) => write!(f, "the reference benchmark failed:\n{out}"),
            BenchError::SelfCheck(out) => write!(f, "our codec failed its own round trip: {out}"),
        }
    }
}

impl From<zk_testkit::Error> for BenchError {
    /// The test kit's [`zk_testkit::Error::NotInstalled`] names what is missing; the benchmark
    /// adds its own hint ([`INSTALL_HINT`], which mentions `--no-java`).
    fn from(e: zk_testkit::Error) -> Self {
        match e {
            zk_testkit::Error::NotInstalled { missing } => BenchError::MissingJava(missing),
            other => BenchError::MissingJava(other.to_string()),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Io(_, e) => Some(e),
            _ => None,
        }
    }
}

/// A `map_err` that names what was being done.
pub(super) fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> BenchError {
    let what = what.into();
    move |e| BenchError::Io(what, e)
}
