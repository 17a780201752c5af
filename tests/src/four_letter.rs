//! ZooKeeper's four-letter-word admin commands (`ruok`, `srvr`, `mntr`, `conf`, ...) over TCP.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Default timeout for [`four_letter`] calls made through the kit's handles.
pub const FOUR_LETTER_TIMEOUT: Duration = Duration::from_secs(10);

/// Sends the four-letter command `cmd` (exactly 4 ASCII bytes, e.g. `"srvr"`) to `addr` and returns
/// everything the server answers before it closes the connection.
///
/// `timeout` bounds the connect and every read/write. A command that is not whitelisted gets a
/// short refusal text; the kit's servers whitelist all (`4lw.commands.whitelist=*`).
pub fn four_letter(addr: SocketAddr, cmd: &str, timeout: Duration) -> io::Result<String> {
    if cmd.len() != 4 || !cmd.is_ascii() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("four-letter command must be 4 ASCII bytes, got {cmd:?}"),
        ));
    }
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(cmd.as_bytes())?;
    let mut out = Vec::new();
    stream.read_to_end(&mut out)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A server's role as reported by the `Mode:` line of `srvr`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// A standalone server (`ZooKeeperServerMain`).
    Standalone,
    /// The quorum leader.
    Leader,
    /// A quorum follower.
    Follower,
    /// An observer.
    Observer,
    /// A read-only server (`readonlymode.enabled`, partitioned from its quorum).
    ReadOnly,
    /// The server is up but not serving requests (starting, or looking for a leader).
    NotServing,
    /// Something else; the raw `srvr` answer.
    Other(String),
}

impl Mode {
    /// Parses the answer of `srvr` (or `stat`).
    pub fn from_srvr(answer: &str) -> Mode {
        if answer.contains("not currently serving requests") {
            return Mode::NotServing;
        }
        let mode = answer
            .lines()
            .find_map(|l| l.trim().strip_prefix("Mode:"))
            .map(str::trim);
        match mode {
            Some("standalone") => Mode::Standalone,
            Some("leader") => Mode::Leader,
            Some("follower") => Mode::Follower,
            Some("observer") => Mode::Observer,
            Some("read-only") => Mode::ReadOnly,
            _ => Mode::Other(answer.trim().to_owned()),
        }
    }

    /// True for modes in which the server answers client requests as a quorum member
    /// (leader, follower, observer) or as a standalone server.
    pub fn is_serving(&self) -> bool {
        matches!(
            self,
            Mode::Standalone | Mode::Leader | Mode::Follower | Mode::Observer | Mode::ReadOnly
        )
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Standalone => f.write_str("standalone"),
            Mode::Leader => f.write_str("leader"),
            Mode::Follower => f.write_str("follower"),
            Mode::Observer => f.write_str("observer"),
            Mode::ReadOnly => f.write_str("read-only"),
            Mode::NotServing => f.write_str("not serving"),
            Mode::Other(s) => write!(f, "other({s:?})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_srvr() {
        let srvr = "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\n\
                    Latency min/avg/max: 0/0.0/0\nReceived: 1\nSent: 0\nConnections: 1\n\
                    Outstanding: 0\nZxid: 0x0\nMode: follower\nNode count: 5\n";
        assert_eq!(Mode::from_srvr(srvr), Mode::Follower);
        assert_eq!(
            Mode::from_srvr("This ZooKeeper instance is not currently serving requests\n"),
            Mode::NotServing
        );
        assert!(matches!(Mode::from_srvr(""), Mode::Other(_)));
    }

    #[test]
    fn rejects_bad_commands() {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let err = four_letter(addr, "ruokk", Duration::from_millis(10)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }
}
