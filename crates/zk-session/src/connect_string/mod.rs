//! The connect string (`host:port,host:port/chroot`), and its URL form saying whether to use
//! TLS (`zk+tls://host:port,host:port/chroot?ca=...`, see [`Security`]).
//!
//! [`ConnectString`] parses the format of Java's `ConnectStringParser`, more strictly: where
//! Java silently guesses (an empty entry, `host:` without a port, an unbracketed IPv6 address)
//! this parser returns a [`ConnectStringError`] saying what and where.
//!
//! Hosts stay **unresolved** names: the connection driver resolves the chosen host on every
//! attempt, so DNS changes are picked up on every reconnect (see
//! [`HostList`](crate::session::HostList), the rotation over them).

use std::fmt;
use std::str::FromStr;

use crate::path::{Chroot, InvalidPath};

mod security;

pub use security::{Security, TlsParams};

/// The port used when an entry of the connect string has none.
pub const DEFAULT_PORT: u16 = 2181;

/// One server address of a connect string: an unresolved host name or IP literal and a port.
///
/// `host` holds an IPv6 literal without brackets (`::1`); [`Display`](fmt::Display) adds them
/// back (`[::1]:2181`), so the output parses again. The fields are ready for
/// `tokio::net::lookup_host((addr.host.as_str(), addr.port))`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostAddr {
    /// Host name, IPv4 literal or IPv6 literal (without brackets, maybe with a `%zone`).
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl HostAddr {
    /// An address from its parts, unchecked.
    pub fn new(host: impl Into<String>, port: u16) -> HostAddr {
        HostAddr {
            host: host.into(),
            port,
        }
    }

    /// Parses one entry: `host`, `host:port`, `1.2.3.4:port`, `[::1]` or `[::1]:port`,
    /// surrounding whitespace ignored. The default port is [`DEFAULT_PORT`].
    ///
    /// # Errors
    ///
    /// A [`ConnectStringError`] with entry index 0.
    pub fn parse(entry: &str) -> Result<HostAddr, ConnectStringError> {
        parse_entry(0, entry)
    }
}

impl FromStr for HostAddr {
    type Err = ConnectStringError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HostAddr::parse(s)
    }
}

impl fmt::Display for HostAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Why a connect string (or one host entry) does not parse.
///
/// `index` is the 0-based position of the entry among the comma-separated entries, `entry` its
/// text (trimmed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectStringError {
    /// No host at all (empty string, only whitespace, or only a chroot).
    #[error("connect string has no hosts")]
    NoHosts,
    /// An empty entry between commas, or a leading or trailing comma.
    #[error("host entry {index} of the connect string is empty")]
    EmptyEntry {
        /// Position of the entry.
        index: usize,
    },
    /// An entry with an empty host (`:2181`, `[]:2181`).
    #[error("host entry {index} ({entry:?}): empty host name")]
    EmptyHost {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
    },
    /// A port that is empty, not decimal digits, 0, or above 65535.
    #[error("host entry {index} ({entry:?}): invalid port {port:?} (expected 1 to 65535)")]
    InvalidPort {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
        /// The port text.
        port: String,
    },
    /// `[` without a matching `]`.
    #[error("host entry {index} ({entry:?}): unclosed '[' of an IPv6 address")]
    UnclosedBracket {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
    },
    /// Text after `]` that is not `:port`.
    #[error("host entry {index} ({entry:?}): unexpected {rest:?} after ']' (expected \":port\")")]
    TrailingAfterBracket {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
        /// The text after `]`.
        rest: String,
    },
    /// Brackets around something that is not an IPv6 address.
    #[error("host entry {index} ({entry:?}): {address:?} is not an IPv6 address")]
    InvalidIpv6 {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
        /// The text between the brackets.
        address: String,
    },
    /// More than one `:` outside brackets: an IPv6 address must be written `[addr]:port`.
    #[error(
        "host entry {index} ({entry:?}): more than one ':'; write IPv6 addresses as [addr]:port"
    )]
    UnbracketedIpv6 {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
    },
    /// A character that cannot be part of a host name: whitespace, a control character, `[`,
    /// `]` or `/`.
    #[error("host entry {index} ({entry:?}): invalid character {ch:?} in host name")]
    InvalidHostChar {
        /// Position of the entry.
        index: usize,
        /// The entry.
        entry: String,
        /// The character.
        ch: char,
    },
    /// The chroot (everything from the first `/`) is not a valid path.
    #[error("invalid chroot in connect string: {0}")]
    Chroot(#[from] InvalidPath),
    /// A scheme other than `zk://` and `zk+tls://`.
    #[error("unknown scheme {scheme:?} in connect string (expected zk:// or zk+tls://)")]
    UnknownScheme {
        /// The scheme, without `://`.
        scheme: String,
    },
    /// An option after `?` that is unknown, malformed, repeated, or does not fit the scheme.
    #[error("invalid option {option:?} in connect string: {reason}")]
    InvalidOption {
        /// The option (or all options, when they do not fit together).
        option: String,
        /// What is wrong.
        reason: &'static str,
    },
}

/// A parsed connect string: `[scheme://]host:port[,host:port...][/chroot][?options]`.
///
/// - The scheme, if any, is `zk://` (plaintext) or `zk+tls://` (TLS, with options after `?`:
///   `ca`, `cert`, `key`, `server_name`); see [`Security`]. Without one, the client's
///   settings decide.
/// - Everything from the first `/` is the chroot, validated with the path rules; `/` alone means
///   no chroot.
/// - The hosts are separated by `,`; whitespace around the whole string and around each entry is
///   ignored; an empty entry is an error.
/// - Each entry is `host[:port]` (host name or IPv4 literal) or `[ipv6][:port]`; the port is
///   1 to 65535, [`DEFAULT_PORT`] when absent. An IPv6 address must be in brackets.
///
/// [`Display`](fmt::Display) gives the canonical form, which parses back to an equal value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectString {
    hosts: Vec<HostAddr>,
    chroot: Chroot,
    security: Security,
}

impl ConnectString {
    /// Parses a connect string (see the type documentation).
    ///
    /// # Errors
    ///
    /// The first problem found: the chroot is checked before the hosts, hosts left to right.
    pub fn parse(s: &str) -> Result<ConnectString, ConnectStringError> {
        let (security, s) = security::split(s.trim())?;
        let (hosts_part, chroot) = match s.find('/') {
            Some(slash) => (&s[..slash], Chroot::new(&s[slash..])?),
            None => (s, Chroot::none()),
        };
        if hosts_part.trim().is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        let hosts = hosts_part
            .split(',')
            .enumerate()
            .map(|(index, entry)| parse_entry(index, entry))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ConnectString {
            hosts,
            chroot,
            security,
        })
    }

    /// A connect string from its parts (no scheme: [`Security::Unspecified`]).
    ///
    /// # Errors
    ///
    /// [`ConnectStringError::NoHosts`] if `hosts` is empty.
    pub fn new(hosts: Vec<HostAddr>, chroot: Chroot) -> Result<ConnectString, ConnectStringError> {
        if hosts.is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        Ok(ConnectString {
            hosts,
            chroot,
            security: Security::Unspecified,
        })
    }

    /// The same connect string with the scheme (and TLS options) `security`.
    #[must_use]
    pub fn with_security(mut self, security: Security) -> ConnectString {
        self.security = security;
        self
    }

    /// What the connect string says about TLS.
    pub fn security(&self) -> &Security {
        &self.security
    }

    /// The hosts in the order written; never empty.
    pub fn hosts(&self) -> &[HostAddr] {
        &self.hosts
    }

    /// The chroot ([`Chroot::none`] if there was none).
    pub fn chroot(&self) -> &Chroot {
        &self.chroot
    }

    /// The hosts and the chroot.
    pub fn into_parts(self) -> (Vec<HostAddr>, Chroot) {
        (self.hosts, self.chroot)
    }
}

impl FromStr for ConnectString {
    type Err = ConnectStringError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ConnectString::parse(s)
    }
}

impl fmt::Display for ConnectString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        security::fmt_scheme(&self.security, f)?;
        for (i, host) in self.hosts.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{host}")?;
        }
        if let Some(chroot) = self.chroot.as_str() {
            f.write_str(chroot)?;
        }
        security::fmt_options(&self.security, f)
    }
}

/// Parses entry number `index` of a connect string.
fn parse_entry(index: usize, raw: &str) -> Result<HostAddr, ConnectStringError> {
    let entry = raw.trim();
    if entry.is_empty() {
        return Err(ConnectStringError::EmptyEntry { index });
    }
    let owned = || entry.to_owned();
    let parse_port = |port: &str| {
        let valid = !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
        match port.parse::<u16>() {
            Ok(p) if valid && p != 0 => Ok(p),
            _ => Err(ConnectStringError::InvalidPort {
                index,
                entry: owned(),
                port: port.to_owned(),
            }),
        }
    };

    if let Some(bracketed) = entry.strip_prefix('[') {
        let Some((address, rest)) = bracketed.split_once(']') else {
            return Err(ConnectStringError::UnclosedBracket {
                index,
                entry: owned(),
            });
        };
        if address.is_empty() {
            return Err(ConnectStringError::EmptyHost {
                index,
                entry: owned(),
            });
        }
        if !is_ipv6_literal(address) {
            return Err(ConnectStringError::InvalidIpv6 {
                index,
                entry: owned(),
                address: address.to_owned(),
            });
        }
        let port = if rest.is_empty() {
            DEFAULT_PORT
        } else if let Some(port) = rest.strip_prefix(':') {
            parse_port(port)?
        } else {
            return Err(ConnectStringError::TrailingAfterBracket {
                index,
                entry: owned(),
                rest: rest.to_owned(),
            });
        };
        return Ok(HostAddr::new(address, port));
    }

    let (host, port) = match entry.split_once(':') {
        None => (entry, DEFAULT_PORT),
        Some((_, port)) if port.contains(':') => {
            return Err(ConnectStringError::UnbracketedIpv6 {
                index,
                entry: owned(),
            });
        }
        Some((host, port)) => (host, parse_port(port)?),
    };
    if host.is_empty() {
        return Err(ConnectStringError::EmptyHost {
            index,
            entry: owned(),
        });
    }
    if let Some(ch) = host
        .chars()
        .find(|&c| c.is_whitespace() || c.is_control() || matches!(c, '[' | ']' | '/'))
    {
        return Err(ConnectStringError::InvalidHostChar {
            index,
            entry: owned(),
            ch,
        });
    }
    Ok(HostAddr::new(host, port))
}

/// An IPv6 address, optionally followed by a non-empty `%zone` (`fe80::1%eth0`).
fn is_ipv6_literal(s: &str) -> bool {
    let (address, zone) = match s.split_once('%') {
        Some((address, zone)) => (address, Some(zone)),
        None => (s, None),
    };
    address.parse::<std::net::Ipv6Addr>().is_ok()
        && zone.is_none_or(|z| {
            !z.is_empty()
                && z.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hosts(cs: &str) -> Vec<HostAddr> {
        ConnectString::parse(cs).expect("valid").hosts
    }

    fn h(host: &str, port: u16) -> HostAddr {
        HostAddr::new(host, port)
    }

    fn err(cs: &str) -> ConnectStringError {
        ConnectString::parse(cs).expect_err(cs)
    }

    #[test]
    fn single_hosts() {
        assert_eq!(hosts("localhost:2181"), [h("localhost", 2181)]);
        assert_eq!(hosts("localhost"), [h("localhost", DEFAULT_PORT)]);
        assert_eq!(hosts("zk1.example.com:1234"), [h("zk1.example.com", 1234)]);
        assert_eq!(hosts("10.0.0.1:2182"), [h("10.0.0.1", 2182)]);
        assert_eq!(hosts("10.0.0.1"), [h("10.0.0.1", 2181)]);
        assert_eq!(hosts("a:1"), [h("a", 1)]);
        assert_eq!(hosts("a:65535"), [h("a", 65535)]);
        assert_eq!(hosts("a:02181"), [h("a", 2181)]);
    }

    #[test]
    fn ipv6() {
        assert_eq!(hosts("[::1]:2182"), [h("::1", 2182)]);
        assert_eq!(hosts("[::1]"), [h("::1", 2181)]);
        assert_eq!(
            hosts("[2001:db8::8a2e:370:7334]:1"),
            [h("2001:db8::8a2e:370:7334", 1)]
        );
        assert_eq!(hosts("[fe80::1%eth0]:3"), [h("fe80::1%eth0", 3)]);
        assert_eq!(hosts("[::ffff:10.0.0.1]"), [h("::ffff:10.0.0.1", 2181)]);
        assert_eq!(
            hosts("[::1]:1,127.0.0.1:2,[::2]"),
            [h("::1", 1), h("127.0.0.1", 2), h("::2", 2181)]
        );
    }

    #[test]
    fn several_hosts_keep_order() {
        assert_eq!(
            hosts("c:3,a:1,b"),
            [h("c", 3), h("a", 1), h("b", DEFAULT_PORT)]
        );
    }

    #[test]
    fn whitespace_is_trimmed() {
        assert_eq!(
            hosts("  a:1 , b:2\t,\n c  "),
            [h("a", 1), h("b", 2), h("c", 2181)]
        );
        let cs = ConnectString::parse(" a:1 , [::1] /app \n").expect("valid");
        assert_eq!(cs.hosts(), [h("a", 1), h("::1", 2181)]);
        assert_eq!(cs.chroot().as_str(), Some("/app"));
    }

    #[test]
    fn chroot() {
        let cs = ConnectString::parse("a:1,b:2/app/sub").expect("valid");
        assert_eq!(cs.hosts(), [h("a", 1), h("b", 2)]);
        assert_eq!(cs.chroot().as_str(), Some("/app/sub"));
        let cs = ConnectString::parse("a:1/").expect("valid");
        assert!(cs.chroot().is_none());
        let cs = ConnectString::parse("a:1").expect("valid");
        assert!(cs.chroot().is_none());
        let cs = ConnectString::parse("[::1]/x").expect("valid");
        assert_eq!(cs.hosts(), [h("::1", 2181)]);
        assert_eq!(cs.chroot().as_str(), Some("/x"));
    }

    #[test]
    fn invalid_chroot() {
        for (cs, chroot) in [
            ("a:1/app/", "/app/"),
            ("a:1//app", "//app"),
            ("a:1/app/../x", "/app/../x"),
            ("a:1/a\u{0}", "/a\u{0}"),
        ] {
            match err(cs) {
                ConnectStringError::Chroot(e) => assert_eq!(e.path, chroot),
                other => panic!("{cs:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn no_hosts() {
        for cs in ["", "   ", "/app", " /app", "/"] {
            assert_eq!(err(cs), ConnectStringError::NoHosts, "{cs:?}");
        }
        assert_eq!(
            ConnectString::new(Vec::new(), Chroot::none()),
            Err(ConnectStringError::NoHosts)
        );
    }

    #[test]
    fn empty_entries() {
        assert_eq!(err("a:1,,b:2"), ConnectStringError::EmptyEntry { index: 1 });
        assert_eq!(err(",a:1"), ConnectStringError::EmptyEntry { index: 0 });
        assert_eq!(err("a:1,"), ConnectStringError::EmptyEntry { index: 1 });
        assert_eq!(err("a:1, ,b"), ConnectStringError::EmptyEntry { index: 1 });
        assert_eq!(err("a:1,/app"), ConnectStringError::EmptyEntry { index: 1 });
    }

    #[test]
    fn bad_ports() {
        for (cs, index, entry, port) in [
            ("a:0", 0, "a:0", "0"),
            ("a:65536", 0, "a:65536", "65536"),
            (
                "a:99999999999999999999",
                0,
                "a:99999999999999999999",
                "99999999999999999999",
            ),
            ("a:x", 0, "a:x", "x"),
            ("b:1,a:", 1, "a:", ""),
            ("a:+1", 0, "a:+1", "+1"),
            ("a:-1", 0, "a:-1", "-1"),
            ("a: 1", 0, "a: 1", " 1"),
            ("a:1 2", 0, "a:1 2", "1 2"),
            ("[::1]:0", 0, "[::1]:0", "0"),
            ("[::1]:", 0, "[::1]:", ""),
            ("[::1]:70000", 0, "[::1]:70000", "70000"),
        ] {
            assert_eq!(
                err(cs),
                ConnectStringError::InvalidPort {
                    index,
                    entry: entry.to_owned(),
                    port: port.to_owned()
                },
                "{cs:?}"
            );
        }
    }

    #[test]
    fn empty_hosts() {
        for (cs, entry) in [(":2181", ":2181"), ("[]:1", "[]:1"), ("[]", "[]")] {
            assert_eq!(
                err(cs),
                ConnectStringError::EmptyHost {
                    index: 0,
                    entry: entry.to_owned()
                }
            );
        }
    }

    #[test]
    fn bracket_errors() {
        assert_eq!(
            err("a,[::1:2181"),
            ConnectStringError::UnclosedBracket {
                index: 1,
                entry: "[::1:2181".to_owned()
            }
        );
        assert_eq!(
            err("[::1]2181"),
            ConnectStringError::TrailingAfterBracket {
                index: 0,
                entry: "[::1]2181".to_owned(),
                rest: "2181".to_owned()
            }
        );
        assert_eq!(
            err("[localhost]:1"),
            ConnectStringError::InvalidIpv6 {
                index: 0,
                entry: "[localhost]:1".to_owned(),
                address: "localhost".to_owned()
            }
        );
        assert_eq!(
            err("[10.0.0.1]"),
            ConnectStringError::InvalidIpv6 {
                index: 0,
                entry: "[10.0.0.1]".to_owned(),
                address: "10.0.0.1".to_owned()
            }
        );
        assert!(matches!(
            err("[fe80::1%]"),
            ConnectStringError::InvalidIpv6 { .. }
        ));
        assert!(matches!(
            err("a]:1"),
            ConnectStringError::InvalidHostChar { ch: ']', .. }
        ));
        assert!(matches!(
            err("a[:1"),
            ConnectStringError::InvalidHostChar { ch: '[', .. }
        ));
    }

    #[test]
    fn unbracketed_ipv6() {
        for cs in ["::1", "::1:2181", "2001:db8::1", "a:1:2", "x,fe80::1"] {
            assert!(
                matches!(err(cs), ConnectStringError::UnbracketedIpv6 { .. }),
                "{cs:?}"
            );
        }
        assert_eq!(
            err("a:1,::1:2"),
            ConnectStringError::UnbracketedIpv6 {
                index: 1,
                entry: "::1:2".to_owned()
            }
        );
    }

    #[test]
    fn invalid_host_chars() {
        assert_eq!(
            err("a b:1"),
            ConnectStringError::InvalidHostChar {
                index: 0,
                entry: "a b:1".to_owned(),
                ch: ' '
            }
        );
        assert!(matches!(
            err("a :1"),
            ConnectStringError::InvalidHostChar { ch: ' ', .. }
        ));
        assert!(matches!(
            err("a\u{1}"),
            ConnectStringError::InvalidHostChar { ch: '\u{1}', .. }
        ));
    }

    #[test]
    fn error_messages() {
        assert_eq!(err("").to_string(), "connect string has no hosts");
        assert_eq!(
            err("a:1,,b").to_string(),
            "host entry 1 of the connect string is empty"
        );
        assert_eq!(
            err("a:1,b:x").to_string(),
            r#"host entry 1 ("b:x"): invalid port "x" (expected 1 to 65535)"#
        );
        assert_eq!(
            err("::1").to_string(),
            r#"host entry 0 ("::1"): more than one ':'; write IPv6 addresses as [addr]:port"#
        );
        assert_eq!(
            err("[::1").to_string(),
            r#"host entry 0 ("[::1"): unclosed '[' of an IPv6 address"#
        );
        assert_eq!(
            err("a/b/").to_string(),
            r#"invalid chroot in connect string: invalid path "/b/": must not end with '/'"#
        );
    }

    #[test]
    fn host_addr_display_and_parse() {
        assert_eq!(h("a", 1).to_string(), "a:1");
        assert_eq!(h("10.0.0.1", 2181).to_string(), "10.0.0.1:2181");
        assert_eq!(h("::1", 2181).to_string(), "[::1]:2181");
        assert_eq!(h("fe80::1%eth0", 5).to_string(), "[fe80::1%eth0]:5");
        assert_eq!("[::1]".parse::<HostAddr>(), Ok(h("::1", 2181)));
        assert_eq!(" b:7 ".parse::<HostAddr>(), Ok(h("b", 7)));
        assert_eq!(
            "".parse::<HostAddr>(),
            Err(ConnectStringError::EmptyEntry { index: 0 })
        );
    }

    #[test]
    fn connect_string_display() {
        let cs: ConnectString = " b , [::1]:7,c:3 /x/y".parse().expect("valid");
        assert_eq!(cs.to_string(), "b:2181,[::1]:7,c:3/x/y");
        assert_eq!(cs.to_string().parse::<ConnectString>(), Ok(cs.clone()));
        let (hosts, chroot) = cs.into_parts();
        assert_eq!(hosts.len(), 3);
        assert_eq!(chroot.as_str(), Some("/x/y"));
    }

    fn host_addr() -> impl Strategy<Value = HostAddr> {
        let host = prop_oneof![
            "[a-z][a-z0-9.-]{0,10}",
            any::<std::net::Ipv4Addr>().prop_map(|a| a.to_string()),
            any::<std::net::Ipv6Addr>().prop_map(|a| a.to_string()),
        ];
        (host, 1..=u16::MAX).prop_map(|(host, port)| HostAddr { host, port })
    }

    fn security() -> impl Strategy<Value = Security> {
        let path = "(/[a-z]{1,4}){1,2}".prop_map(std::path::PathBuf::from);
        let file = proptest::option::of(path.clone());
        // No client identity; a PEM certificate and key (perhaps with the key's password);
        // a PKCS#12 bundle (perhaps with its password and its key's).
        let identity = prop_oneof![
            Just((None, None, None, None, None)),
            (path.clone(), path.clone(), file.clone()).prop_map(|(cert, key, key_pw)| (
                Some(cert),
                Some(key),
                None,
                None,
                key_pw
            )),
            (path, file.clone(), file.clone()).prop_map(|(store, store_pw, key_pw)| (
                None,
                None,
                Some(store),
                store_pw,
                key_pw
            )),
        ];
        prop_oneof![
            Just(Security::Unspecified),
            Just(Security::Plain),
            (file, identity, proptest::option::of("[a-z][a-z0-9.]{0,10}")).prop_map(
                |(ca_file, identity, server_name)| {
                    let (
                        cert_file,
                        key_file,
                        keystore_file,
                        keystore_password_file,
                        key_password_file,
                    ) = identity;
                    Security::Tls(TlsParams {
                        ca_file,
                        cert_file,
                        key_file,
                        keystore_file,
                        keystore_password_file,
                        key_password_file,
                        server_name,
                    })
                }
            ),
        ]
    }

    proptest! {
        #[test]
        fn display_parses_back(
            hosts in proptest::collection::vec(host_addr(), 1..5),
            chroot in prop_oneof![Just(String::new()), "(/[a-z]{1,4}){1,3}"],
            security in security(),
        ) {
            let cs = ConnectString::new(hosts, Chroot::new(&chroot).expect("valid"))
                .expect("hosts")
                .with_security(security);
            prop_assert_eq!(cs.to_string().parse::<ConnectString>(), Ok(cs.clone()));
        }

        #[test]
        fn parse_never_panics(s in "(zk(\\+tls)?://)?[a-z0-9:\\[\\], /.%?=&+]{0,24}") {
            if let Ok(cs) = ConnectString::parse(&s) {
                prop_assert!(!cs.hosts().is_empty());
                prop_assert!(cs.hosts().iter().all(|h| h.port != 0 && !h.host.is_empty()));
            }
        }
    }
}
