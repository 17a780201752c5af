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

/// How a client over TLS finds each member's TLS port: the configuration lists only the
/// plaintext client port (`secureClientPort` is a static setting of each server, not part of
/// the dynamic configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TlsPorts {
    /// Work it out from the connect string (the default): if every entry of the connect
    /// string is listed as is, the listed ports speak TLS (port unification, or a TLS
    /// `clientPort`); otherwise the one port offset that maps every entry to the listed member
    /// on its host (2281 for 2181: 100), counting only hosts that have one member each. When
    /// no offset fits, several do, or a host has several members, the configuration is not
    /// followed (an info log says why): a guessed port could be another server's plaintext
    /// port, or another ensemble's server.
    #[default]
    Infer,
    /// The listed client ports speak TLS.
    Listed,
    /// Each member's TLS port is its listed client port plus this offset.
    Offset(i32),
}

/// The addresses a TLS client dials for the members `listed` (from [`client_hosts`]), by
/// `rule`; `connect` is the connect string's hosts (for [`TlsPorts::Infer`]).
///
/// # Errors
///
/// Why the rule gives no addresses: nothing to infer from, an ambiguous inference, or an
/// offset that takes every port out of range.
pub fn tls_hosts(
    listed: &[HostAddr],
    rule: TlsPorts,
    connect: &[HostAddr],
) -> Result<Vec<HostAddr>, String> {
    let offset = match rule {
        TlsPorts::Listed => 0,
        TlsPorts::Offset(offset) => offset,
        TlsPorts::Infer => infer_offset(listed, connect)?,
    };
    let hosts: Vec<HostAddr> = listed
        .iter()
        .filter_map(|member| {
            let port = u16::try_from(i32::from(member.port) + offset).ok()?;
            (port != 0).then(|| HostAddr::new(member.host.clone(), port))
        })
        .collect();
    if hosts.is_empty() {
        return Err(format!(
            "the TLS port offset {offset} takes every member's port out of range"
        ));
    }
    Ok(hosts)
}

/// The port offset from listed client ports to the connect string's TLS ports.
fn infer_offset(listed: &[HostAddr], connect: &[HostAddr]) -> Result<i32, String> {
    if !connect.is_empty() && connect.iter().all(|entry| listed.contains(entry)) {
        return Ok(0);
    }
    // Otherwise only hosts with one member each say anything: with several servers on one
    // host, an entry's TLS port fits as many offsets as there are members there, and a guess
    // could dial another server's plaintext port, or another ensemble's server.
    let mut offset: Option<i32> = None;
    for entry in connect {
        let mut on_host = listed
            .iter()
            .filter(|member| member.host.eq_ignore_ascii_case(&entry.host));
        let (Some(member), None) = (on_host.next(), on_host.next()) else {
            if listed
                .iter()
                .filter(|member| member.host.eq_ignore_ascii_case(&entry.host))
                .count()
                > 1
            {
                return Err(format!(
                    "several members on host {} (set ClientBuilder::ensemble_tls_ports)",
                    entry.host
                ));
            }
            // A host the configuration no longer lists says nothing.
            continue;
        };
        let this = i32::from(entry.port) - i32::from(member.port);
        match offset {
            Some(offset) if offset != this => {
                return Err(
                    "no single port offset maps the connect string to the configured \
                            members (set ClientBuilder::ensemble_tls_ports)"
                        .to_owned(),
                );
            }
            _ => offset = Some(this),
        }
    }
    offset.ok_or_else(|| {
        "no host of the connect string is a member of the configuration (set \
         ClientBuilder::ensemble_tls_ports)"
            .to_owned()
    })
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
    fn tls_ports_are_inferred_only_when_one_offset_fits() {
        let listed = [h("zk1", 2181), h("zk2", 2181), h("zk3", 2181)];
        // Separate TLS ports, the usual way: one offset for every host.
        assert_eq!(
            tls_hosts(&listed, TlsPorts::Infer, &[h("zk1", 2281), h("ZK2", 2281)]),
            Ok(vec![h("zk1", 2281), h("zk2", 2281), h("zk3", 2281)])
        );
        // The listed port itself (port unification): offset 0, also on one machine.
        let local = [
            h("127.0.0.1", 5001),
            h("127.0.0.1", 5002),
            h("127.0.0.1", 5003),
        ];
        assert_eq!(
            tls_hosts(&local, TlsPorts::Infer, &[h("127.0.0.1", 5002)]),
            Ok(local.to_vec())
        );
        // On one machine an entry's TLS port fits as many offsets as there are members: not
        // guessed (the guess could be another server's plaintext port).
        assert!(
            tls_hosts(&local, TlsPorts::Infer, &[h("127.0.0.1", 6002)])
                .is_err_and(|why| why.contains("several members on host 127.0.0.1"))
        );
        assert!(
            tls_hosts(
                &local,
                TlsPorts::Infer,
                &[h("127.0.0.1", 5011), h("127.0.0.1", 5013)]
            )
            .is_err()
        );
        // ... and entries with different offsets fit none.
        assert!(
            tls_hosts(&listed, TlsPorts::Infer, &[h("zk1", 2281), h("zk2", 2282)])
                .is_err_and(|why| why.contains("no single"))
        );
        // A host that left the ensemble says nothing; none in it at all: not followed.
        assert_eq!(
            tls_hosts(&listed, TlsPorts::Infer, &[h("gone", 1), h("zk3", 3181)]),
            Ok(vec![h("zk1", 3181), h("zk2", 3181), h("zk3", 3181)])
        );
        assert!(
            tls_hosts(&listed, TlsPorts::Infer, &[h("elsewhere", 2281)])
                .is_err_and(|why| why.contains("no host"))
        );
        // Explicit rules; members taken out of the port range are left out.
        assert_eq!(
            tls_hosts(&[h("a", 2181), h("b", 65535)], TlsPorts::Offset(100), &[]),
            Ok(vec![h("a", 2281)])
        );
        assert_eq!(
            tls_hosts(&listed, TlsPorts::Listed, &[]),
            Ok(listed.to_vec())
        );
        assert!(tls_hosts(&listed, TlsPorts::Offset(-2181), &[]).is_err());
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
