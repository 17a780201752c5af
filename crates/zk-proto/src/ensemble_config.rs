//! The ensemble's configuration as `/zookeeper/config` holds it (ZooKeeper 3.5+ with dynamic
//! reconfiguration), read for the client addresses of its members.
//!
//! Each member is a line `server.<id>=<address>:<quorum port>:<election port>[:<role>];[<client
//! address>:]<client port>`: the address may be an IPv6 literal in brackets, 3.6+ may list
//! several quorum addresses separated by `|` (the first is taken), the role is `participant`
//! or `observer` (both serve clients), and a client address that is a wildcard (`0.0.0.0`,
//! `::`) or absent means the member's own address. A member without a client port serves no
//! clients and is left out. Other lines (`version=...`) are ignored.

use crate::connect_string::HostAddr;

/// The node holding the ensemble's configuration (`ZooDefs.CONFIG_NODE`), read outside any
/// chroot.
pub const CONFIG_NODE: &str = "/zookeeper/config";

/// Why the configuration could not be read as a list of servers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The data is not UTF-8 text.
    #[error("the configuration is not UTF-8 text")]
    NotText,
    /// A `server.N` line does not follow the grammar.
    #[error("malformed member line {line:?}: {why}")]
    MalformedLine {
        /// The line.
        line: String,
        /// What is wrong with it.
        why: String,
    },
    /// No member serves clients.
    #[error("the configuration lists no server with a client port")]
    NoClientServers,
}

/// The client addresses of the members `config` lists, in the order of their lines.
///
/// # Errors
///
/// [`ConfigError`] for data that is not text, a malformed `server.N` line, or no member with
/// a client port.
pub fn client_hosts(config: &[u8]) -> Result<Vec<HostAddr>, ConfigError> {
    let text = std::str::from_utf8(config).map_err(|_| ConfigError::NotText)?;
    let mut hosts = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let Some(id) = key.trim().strip_prefix("server.") else {
            continue;
        };
        let malformed = |why: &str| ConfigError::MalformedLine {
            line: line.to_owned(),
            why: why.to_owned(),
        };
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed("the id is not a number"));
        }
        let Some((quorum, client)) = value.split_once(';') else {
            // A member without a client port.
            continue;
        };
        let quorum_host = quorum_host(quorum.split('|').next().unwrap_or(quorum))
            .ok_or_else(|| malformed("no quorum address"))?;
        let host = client_host(client.trim(), quorum_host).map_err(|why| malformed(&why))?;
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return Err(ConfigError::NoClientServers);
    }
    Ok(hosts)
}

/// The host of `address:port:port[:role]` (an IPv6 literal keeps no brackets).
fn quorum_host(quorum: &str) -> Option<&str> {
    let quorum = quorum.trim();
    let host = match quorum.strip_prefix('[') {
        Some(bracketed) => bracketed.split_once(']')?.0,
        None => quorum.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// `[address:]port`, with the quorum host standing in for a missing or wildcard address.
fn client_host(client: &str, quorum_host: &str) -> Result<HostAddr, String> {
    let is_port = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if is_port(client) {
        return HostAddr::parse(&format_host(quorum_host, client)).map_err(|e| e.to_string());
    }
    let parsed = HostAddr::parse(client).map_err(|e| e.to_string())?;
    if is_wildcard(&parsed.host) {
        let port = parsed.port.to_string();
        return HostAddr::parse(&format_host(quorum_host, &port)).map_err(|e| e.to_string());
    }
    Ok(parsed)
}

fn format_host(host: &str, port: &str) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn is_wildcard(host: &str) -> bool {
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn h(host: &str, port: u16) -> HostAddr {
        HostAddr::new(host, port)
    }

    #[test]
    fn the_3_5_forms_give_the_client_addresses() {
        let config = b"server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
                       server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2182\n\
                       server.3=zk3.example:2888:3888;2183\n\
                       server.4=[fe80::1]:2888:3888:participant;[::]:2184\n\
                       server.5=[::1]:2888:3888;[::1]:2185\n\
                       server.6=10.0.0.6:2888:3888:participant\n\
                       version=100000003\n";
        assert_eq!(
            client_hosts(config),
            Ok(vec![
                h("127.0.0.1", 2181),
                h("10.0.0.2", 2182),
                h("zk3.example", 2183),
                h("fe80::1", 2184),
                h("::1", 2185),
            ])
        );
    }

    #[test]
    fn multi_address_members_take_their_first_address() {
        assert_eq!(
            client_hosts(b"server.1=10.0.0.1:2888:3888|10.1.0.1:2888:3888;0.0.0.0:2181"),
            Ok(vec![h("10.0.0.1", 2181)])
        );
    }

    #[test]
    fn bad_configurations_are_typed_errors() {
        assert_eq!(client_hosts(b"\xff"), Err(ConfigError::NotText));
        assert_eq!(
            client_hosts(b"version=1\n"),
            Err(ConfigError::NoClientServers)
        );
        assert!(matches!(
            client_hosts(b"server.x=h:1:2;3"),
            Err(ConfigError::MalformedLine { .. })
        ));
        assert!(matches!(
            client_hosts(b"server.1=h:1:2;h:0"),
            Err(ConfigError::MalformedLine { .. })
        ));
        assert!(matches!(
            client_hosts(b"server.1=[::1:1:2;2181"),
            Err(ConfigError::MalformedLine { .. })
        ));
    }

    proptest! {
        /// No configuration text makes the parser panic.
        #[test]
        fn never_panics(config in "[a-z0-9.=:;\\[\\]|\n ]{0,120}") {
            let _ = client_hosts(config.as_bytes());
        }
    }
}
