//! The connect string (`host:port,host:port/chroot`) and the round-robin host list.
//!
//! [`ConnectString`] parses the format of Java's `ConnectStringParser`, more strictly: where
//! Java silently guesses (an empty entry, `host:` without a port, an unbracketed IPv6 address)
//! this parser returns a [`ConnectStringError`] saying what and where.
//!
//! [`HostList`] is the host provider as pure logic: which host to dial next and how long to wait
//! first. Hosts stay **unresolved** names; the connection driver resolves the chosen host on
//! every attempt, so DNS changes are picked up on every reconnect (the Java client re-resolves
//! since ZOOKEEPER-2184).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::path::{Chroot, InvalidPath};

/// The port used when an entry of the connect string has none.
pub const DEFAULT_PORT: u16 = 2181;

/// One server address of a connect string: an unresolved host name or IP literal and a port.
///
/// `host` holds an IPv6 literal without brackets (`::1`); [`Display`](fmt::Display) adds them
/// back (`[::1]:2181`), so the output parses again. The fields are ready for
/// `tokio::net::lookup_host((addr.host.as_str(), addr.port))`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
}

/// A parsed connect string: `host:port[,host:port...][/chroot]`.
///
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
}

impl ConnectString {
    /// Parses a connect string (see the type documentation).
    ///
    /// # Errors
    ///
    /// The first problem found: the chroot is checked before the hosts, hosts left to right.
    pub fn parse(s: &str) -> Result<ConnectString, ConnectStringError> {
        let s = s.trim();
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
        Ok(ConnectString { hosts, chroot })
    }

    /// A connect string from its parts.
    ///
    /// # Errors
    ///
    /// [`ConnectStringError::NoHosts`] if `hosts` is empty.
    pub fn new(hosts: Vec<HostAddr>, chroot: Chroot) -> Result<ConnectString, ConnectStringError> {
        if hosts.is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        Ok(ConnectString { hosts, chroot })
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
        for (i, host) in self.hosts.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{host}")?;
        }
        if let Some(chroot) = self.chroot.as_str() {
            f.write_str(chroot)?;
        }
        Ok(())
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

/// The default smallest reconnect backoff of [`HostList`].
pub const DEFAULT_MIN_BACKOFF: Duration = Duration::from_millis(100);
/// The default largest reconnect backoff of [`HostList`] (before jitter).
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The round-robin host provider, as pure logic (no I/O, no clock).
///
/// - The hosts are shuffled once at construction (if asked), then visited round-robin.
/// - [`HostList::next`] gives the host to dial and the delay to wait before dialing it. There is
///   no delay while walking through the list for the first time (at start, or after a
///   successful connection). Each time a **full cycle** of the list has been tried without
///   success, the next attempt waits a backoff: the minimum (default 100 ms) after the first
///   failed cycle, doubling after each further one up to the maximum (default 1 s), plus a random
///   jitter of 0 to 50% of that value; so a delay never exceeds 1.5 times the maximum. All other
///   attempts of a cycle are not delayed.
/// - [`HostList::mark_connected`] records that the last host handed out worked: the backoff
///   and the failed-cycle count reset, and the next cycle (after a disconnect) starts with the
///   host after that one and ends with it, as Java's `StaticHostProvider` does.
///
/// Hosts are unresolved names: the driver resolves the returned host on each attempt, so a
/// reconnect always sees current DNS.
///
/// The Java client paces differently (a random 0–1 s sleep before every reconnect attempt, and
/// 1 s more on coming back to the last server that worked); this list tries each server of a
/// cycle immediately and backs off only between cycles.
#[derive(Debug, Clone)]
pub struct HostList {
    hosts: Vec<HostAddr>,
    /// Index of the host the next call to `next` returns.
    cursor: usize,
    /// Index of the last host handed out by `next`.
    current: Option<usize>,
    /// Index of the last host marked connected.
    last_connected: Option<usize>,
    /// Hosts handed out in the current cycle.
    attempts_in_cycle: usize,
    /// Full cycles completed without success since the last success (or construction).
    failed_cycles: u32,
    min_backoff: Duration,
    max_backoff: Duration,
    rng: fastrand::Rng,
}

impl HostList {
    /// A host list over `hosts`, shuffled once if `shuffle`. `rng_seed` makes the shuffle and
    /// the jitter deterministic (tests); `None` seeds from the system.
    ///
    /// # Errors
    ///
    /// [`ConnectStringError::NoHosts`] if `hosts` is empty.
    pub fn new(
        hosts: Vec<HostAddr>,
        shuffle: bool,
        rng_seed: Option<u64>,
    ) -> Result<HostList, ConnectStringError> {
        if hosts.is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        Ok(HostList::new_non_empty(hosts, shuffle, rng_seed))
    }

    /// A host list over the hosts of `connect_string` (never empty); see [`HostList::new`].
    pub fn from_connect_string(
        connect_string: &ConnectString,
        shuffle: bool,
        rng_seed: Option<u64>,
    ) -> HostList {
        HostList::new_non_empty(connect_string.hosts.clone(), shuffle, rng_seed)
    }

    fn new_non_empty(mut hosts: Vec<HostAddr>, shuffle: bool, rng_seed: Option<u64>) -> HostList {
        let mut rng = match rng_seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        if shuffle {
            rng.shuffle(&mut hosts);
        }
        HostList {
            hosts,
            cursor: 0,
            current: None,
            last_connected: None,
            attempts_in_cycle: 0,
            failed_cycles: 0,
            min_backoff: DEFAULT_MIN_BACKOFF,
            max_backoff: DEFAULT_MAX_BACKOFF,
            rng,
        }
    }

    /// Sets the backoff range: the delay after the first failed cycle is `min`, doubling up to
    /// `max` (raised to `min` if smaller), each plus up to 50% jitter. A zero `min` disables
    /// the backoff.
    #[must_use]
    pub fn with_backoff(mut self, min: Duration, max: Duration) -> HostList {
        self.min_backoff = min;
        self.max_backoff = max.max(min);
        self
    }

    /// The hosts, in visiting order (after the shuffle); never empty.
    pub fn hosts(&self) -> &[HostAddr] {
        &self.hosts
    }

    /// The next host to dial: its index in [`HostList::hosts`], the host, and the delay to wait
    /// before dialing it (`None`: dial at once).
    ///
    /// A call that starts a new cycle after a full cycle without success first increments
    /// [`HostList::cycles_without_success`], so a driver that gives up after one failed cycle
    /// checks that count right after this call, before dialing.
    #[allow(clippy::should_implement_trait)] // Endless, and lends the host: not an Iterator.
    pub fn next(&mut self) -> (usize, &HostAddr, Option<Duration>) {
        let mut delay = None;
        if self.attempts_in_cycle >= self.hosts.len() {
            self.attempts_in_cycle = 0;
            self.failed_cycles = self.failed_cycles.saturating_add(1);
            delay = self.backoff();
        }
        let index = self.cursor % self.hosts.len();
        self.cursor = (index + 1) % self.hosts.len();
        self.attempts_in_cycle += 1;
        self.current = Some(index);
        (index, &self.hosts[index], delay)
    }

    /// Records that the host last returned by [`HostList::next`] accepted the connection (the
    /// session handshake succeeded): resets the backoff and the failed-cycle count, and makes
    /// the next cycle start after that host. Does nothing if `next` was never called.
    pub fn mark_connected(&mut self) {
        if let Some(index) = self.current {
            self.last_connected = Some(index);
            self.cursor = (index + 1) % self.hosts.len();
            self.attempts_in_cycle = 0;
            self.failed_cycles = 0;
        }
    }

    /// The host last marked connected, if any.
    pub fn last_connected(&self) -> Option<&HostAddr> {
        self.last_connected.and_then(|i| self.hosts.get(i))
    }

    /// How many full cycles through the list have failed since construction or the last
    /// [`HostList::mark_connected`]. Counted when [`HostList::next`] starts the next cycle.
    pub fn cycles_without_success(&self) -> u32 {
        self.failed_cycles
    }

    /// The delay for the current failed-cycle count (at least 1): `min * 2^(n-1)` capped at
    /// `max`, plus 0..=50% jitter; `None` if that is zero.
    fn backoff(&mut self) -> Option<Duration> {
        let doublings = self.failed_cycles.saturating_sub(1);
        let factor = 1u32.checked_shl(doublings).unwrap_or(u32::MAX);
        let base = self
            .min_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        let base_nanos = u64::try_from(base.as_nanos()).unwrap_or(u64::MAX);
        let jitter = self.rng.u64(0..=base_nanos / 2);
        let delay = base.saturating_add(Duration::from_nanos(jitter));
        (!delay.is_zero()).then_some(delay)
    }
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
        assert_eq!(
            HostList::new(Vec::new(), false, None).err(),
            Some(ConnectStringError::NoHosts)
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

    fn addrs(n: usize) -> Vec<HostAddr> {
        (0..n).map(|i| h(&format!("h{i}"), 2181)).collect()
    }

    fn take(list: &mut HostList, n: usize) -> Vec<(usize, Option<Duration>)> {
        (0..n)
            .map(|_| {
                let (i, host, delay) = list.next();
                assert_eq!(host.host, format!("h{i}"));
                (i, delay)
            })
            .collect()
    }

    #[test]
    fn no_shuffle_keeps_order_and_round_robins() {
        let mut list = HostList::new(addrs(3), false, Some(1)).expect("hosts");
        assert_eq!(list.hosts(), addrs(3));
        let order: Vec<usize> = take(&mut list, 7).into_iter().map(|(i, _)| i).collect();
        assert_eq!(order, [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn shuffle_keeps_the_hosts_and_is_seeded() {
        let mut shuffled = HostList::new(addrs(20), true, Some(7))
            .expect("hosts")
            .hosts()
            .to_vec();
        let again = HostList::new(addrs(20), true, Some(7)).expect("hosts");
        assert_eq!(shuffled, again.hosts());
        assert_ne!(shuffled, addrs(20), "20 hosts should not stay in order");
        shuffled.sort_by_key(|a| a.host[1..].parse::<usize>().unwrap_or(usize::MAX));
        assert_eq!(shuffled, addrs(20));
    }

    #[test]
    fn first_cycle_has_no_delay_then_backoff_grows() {
        let mut list = HostList::new(addrs(2), false, Some(3)).expect("hosts");
        let ms = Duration::from_millis;
        // First cycle: immediately.
        assert_eq!(take(&mut list, 2), [(0, None), (1, None)]);
        assert_eq!(list.cycles_without_success(), 0);
        let mut expected_base = ms(100);
        for cycle in 1..=8u32 {
            let (i, _, delay) = list.next();
            assert_eq!(i, 0);
            assert_eq!(list.cycles_without_success(), cycle);
            let delay = delay.expect("backoff after a failed cycle");
            assert!(delay >= expected_base && delay <= expected_base * 3 / 2);
            // The rest of the cycle: no delay.
            assert_eq!(list.next().2, None);
            expected_base = (expected_base * 2).min(ms(1000));
        }
    }

    #[test]
    fn backoff_resets_and_order_continues_after_the_host_that_worked() {
        let mut list = HostList::new(addrs(4), false, Some(5)).expect("hosts");
        assert_eq!(list.last_connected(), None);
        take(&mut list, 4);
        take(&mut list, 4);
        take(&mut list, 2); // third cycle: h0, h1
        assert_eq!(list.cycles_without_success(), 2);
        list.mark_connected(); // h1 worked
        assert_eq!(list.cycles_without_success(), 0);
        assert_eq!(list.last_connected(), Some(&h("h1", 2181)));
        // Disconnected: start after h1, end with h1, no delay; then back off again.
        let attempts = take(&mut list, 5);
        assert_eq!(attempts[..4], [(2, None), (3, None), (0, None), (1, None)]);
        assert_eq!(attempts[4].0, 2);
        let delay = attempts[4]
            .1
            .expect("a failed cycle delays the next attempt");
        assert!(delay >= Duration::from_millis(100) && delay <= Duration::from_millis(150));
        assert_eq!(list.cycles_without_success(), 1);
    }

    #[test]
    fn delay_after_reconnect_cycle() {
        let mut list = HostList::new(addrs(3), false, Some(9)).expect("hosts");
        list.next();
        list.mark_connected(); // h0
        let attempts = take(&mut list, 4);
        let order: Vec<usize> = attempts.iter().map(|a| a.0).collect();
        assert_eq!(order, [1, 2, 0, 1]);
        assert!(attempts[..3].iter().all(|a| a.1.is_none()));
        let delay = attempts[3].1.expect("delayed");
        assert!(delay >= Duration::from_millis(100) && delay <= Duration::from_millis(150));
        assert_eq!(list.cycles_without_success(), 1);
    }

    #[test]
    fn single_host() {
        let mut list = HostList::new(addrs(1), true, Some(1)).expect("hosts");
        assert_eq!(list.next().2, None);
        assert!(list.next().2.is_some());
        assert_eq!(list.cycles_without_success(), 1);
        list.mark_connected();
        assert_eq!(list.next(), (0, &h("h0", 2181), None));
        assert!(list.next().2.is_some());
    }

    #[test]
    fn mark_connected_before_next_is_a_no_op() {
        let mut list = HostList::new(addrs(2), false, Some(1)).expect("hosts");
        list.mark_connected();
        assert_eq!(list.last_connected(), None);
        assert_eq!(list.next().0, 0);
    }

    #[test]
    fn custom_and_disabled_backoff() {
        let ms = Duration::from_millis;
        let mut list = HostList::new(addrs(1), false, Some(2))
            .expect("hosts")
            .with_backoff(ms(10), ms(40));
        list.next();
        let delays: Vec<Duration> = (0..6).filter_map(|_| list.next().2).collect();
        assert_eq!(delays.len(), 6);
        for (delay, base) in delays.iter().zip([10, 20, 40, 40, 40, 40]) {
            assert!(
                *delay >= ms(base) && *delay <= ms(base) * 3 / 2,
                "{delay:?}"
            );
        }
        let mut list = HostList::new(addrs(1), false, Some(2))
            .expect("hosts")
            .with_backoff(Duration::ZERO, Duration::ZERO);
        assert!((0..5).all(|_| list.next().2.is_none()));
        assert_eq!(list.cycles_without_success(), 4);
        // max below min is raised to min.
        let mut list = HostList::new(addrs(1), false, Some(2))
            .expect("hosts")
            .with_backoff(ms(50), ms(1));
        list.next();
        let delay = list.next().2.expect("delayed");
        assert!(delay >= ms(50) && delay <= ms(75));
    }

    #[test]
    fn from_connect_string() {
        let cs = ConnectString::parse("a:1,b:2,c:3").expect("valid");
        let list = HostList::from_connect_string(&cs, false, None);
        assert_eq!(list.hosts(), cs.hosts());
    }

    fn host_addr() -> impl Strategy<Value = HostAddr> {
        let host = prop_oneof![
            "[a-z][a-z0-9.-]{0,10}",
            any::<std::net::Ipv4Addr>().prop_map(|a| a.to_string()),
            any::<std::net::Ipv6Addr>().prop_map(|a| a.to_string()),
        ];
        (host, 1..=u16::MAX).prop_map(|(host, port)| HostAddr { host, port })
    }

    proptest! {
        #[test]
        fn display_parses_back(
            hosts in proptest::collection::vec(host_addr(), 1..5),
            chroot in prop_oneof![Just(String::new()), "(/[a-z]{1,4}){1,3}"],
        ) {
            let cs = ConnectString::new(hosts, Chroot::new(&chroot).expect("valid"))
                .expect("hosts");
            prop_assert_eq!(cs.to_string().parse::<ConnectString>(), Ok(cs.clone()));
        }

        #[test]
        fn parse_never_panics(s in "[a-z0-9:\\[\\], /.%]{0,20}") {
            if let Ok(cs) = ConnectString::parse(&s) {
                prop_assert!(!cs.hosts().is_empty());
                prop_assert!(cs.hosts().iter().all(|h| h.port != 0 && !h.host.is_empty()));
            }
        }

        #[test]
        fn round_robin_visits_every_host_once_per_cycle(
            n in 1usize..8,
            seed in any::<u64>(),
            connect_after in proptest::option::of(0usize..20),
            cycles in 1usize..5,
        ) {
            let mut list = HostList::new(addrs(n), true, Some(seed)).expect("hosts");
            if let Some(k) = connect_after {
                for _ in 0..=k {
                    list.next();
                }
                list.mark_connected();
            }
            for cycle in 0..cycles {
                let mut seen: Vec<usize> = (0..n)
                    .map(|j| {
                        let (i, _, delay) = list.next();
                        // Only the first attempt of a cycle after the first may wait.
                        assert_eq!(delay.is_some(), j == 0 && cycle > 0);
                        i
                    })
                    .collect();
                seen.sort_unstable();
                prop_assert_eq!(seen, (0..n).collect::<Vec<_>>());
            }
            prop_assert_eq!(list.cycles_without_success() as usize, cycles - 1);
        }

        #[test]
        fn backoff_is_bounded(
            seed in any::<u64>(),
            min_ms in 0u64..500,
            max_ms in 0u64..5000,
            failures in 1usize..70,
        ) {
            let min = Duration::from_millis(min_ms);
            let max = Duration::from_millis(max_ms).max(min);
            let mut list = HostList::new(addrs(1), false, Some(seed))
                .expect("hosts")
                .with_backoff(min, max);
            list.next();
            for _ in 0..failures {
                if let Some(delay) = list.next().2 {
                    prop_assert!(delay >= min);
                    prop_assert!(delay <= max * 3 / 2);
                }
            }
        }
    }
}
