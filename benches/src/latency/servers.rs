//! The servers under test: their client addresses, and their packet and transaction counters
//! read with four-letter words around each measured section.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// The client addresses of a connect string (every form the client takes: `host:port[,...]`,
/// a chroot, `zk+tls://` and the TLS query parameters; port 2181 by default), resolved, for
/// the four-letter commands.
///
/// # Errors
///
/// A connect string that does not parse, or a host that does not resolve.
pub fn server_addrs(connect: &str) -> Result<Vec<SocketAddr>, String> {
    let parsed = zk_proto::connect_string::ConnectString::parse(connect)
        .map_err(|e| format!("--connect {connect:?}: {e}"))?;
    let mut out = Vec::new();
    for host in parsed.hosts() {
        let addr = (host.host.as_str(), host.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host} resolves to nothing"))?;
        out.push(addr);
    }
    Ok(out)
}

/// The servers of `addrs` whose `srvr` says `Mode: follower`, in order.
pub(crate) fn followers(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    addrs
        .iter()
        .copied()
        .filter(|&addr| {
            zk_testkit::four_letter(addr, "srvr", Duration::from_secs(5))
                .is_ok_and(|answer| is_follower(&answer))
        })
        .collect()
}

/// Whether a `srvr` answer says `Mode: follower`.
fn is_follower(srvr: &str) -> bool {
    srvr.lines()
        .any(|l| l.trim().strip_prefix("Mode:").map(str::trim) == Some("follower"))
}

/// Counters summed (packets) or maxed (zxid) over the servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counters {
    packets_received: Option<u64>,
    zxid: Option<i64>,
}

/// Reads `mntr` (zk_packets_received) and `srvr` (Zxid) of every server.
pub(crate) fn read_counters(addrs: &[SocketAddr]) -> Counters {
    let timeout = Duration::from_secs(5);
    let mut packets = Some(0_u64);
    let mut zxid: Option<i64> = None;
    for &addr in addrs {
        let received = zk_testkit::four_letter(addr, "mntr", timeout)
            .ok()
            .and_then(|answer| {
                answer.lines().find_map(|l| {
                    let (k, v) = l.split_once('\t')?;
                    (k.trim() == "zk_packets_received")
                        .then(|| v.trim().parse::<u64>().ok())
                        .flatten()
                })
            });
        packets = packets.zip(received).map(|(a, b)| a + b);
        let z = zk_testkit::four_letter(addr, "srvr", timeout)
            .ok()
            .and_then(|answer| {
                answer.lines().find_map(|l| {
                    let hex = l.trim().strip_prefix("Zxid: 0x")?;
                    i64::from_str_radix(hex.trim(), 16).ok()
                })
            });
        zxid = match (zxid, z) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
    Counters {
        packets_received: packets,
        zxid,
    }
}

/// What one reading of the counters adds to them: reading them (four-letter words) may itself
/// count as packets. Two readings back to back, with nothing else going on, give what to
/// subtract per measured section.
pub(crate) fn counter_overhead(addrs: &[SocketAddr]) -> u64 {
    let first = read_counters(addrs);
    let second = read_counters(addrs);
    first
        .packets_received
        .zip(second.packets_received)
        .map_or(0, |(a, b)| b.saturating_sub(a))
}

impl Counters {
    /// `(packets per op, transactions per op)` from `self` to `after`, less `overhead` packets
    /// (those of reading the counters themselves, if any).
    pub(crate) fn per_op(
        &self,
        after: &Counters,
        overhead: u64,
        ops: usize,
    ) -> (Option<f64>, Option<f64>) {
        let ops = ops.max(1) as f64;
        let packets = self
            .packets_received
            .zip(after.packets_received)
            .map(|(a, b)| b.saturating_sub(a).saturating_sub(overhead) as f64 / ops);
        let txns = self.zxid.zip(after.zxid).and_then(|(a, b)| {
            // A new leader epoch restarts the counter part: no figure then.
            (a >> 32 == b >> 32).then(|| (b - a) as f64 / ops)
        });
        (packets, txns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_connect_strings() {
        let addrs = server_addrs("127.0.0.1:2182,127.0.0.1/chroot").expect("resolves");
        assert_eq!(addrs.len(), 2);
        assert_eq!(addrs[0].port(), 2182);
        assert_eq!(addrs[1].port(), 2181);
        // Every form the client takes, TLS included (it failed on "zk+tls:" as a host).
        let addrs = server_addrs("zk+tls://127.0.0.1:2281,[::1]:2282/app?server_name=zk")
            .expect("a TLS connect string");
        assert_eq!(
            addrs.iter().map(SocketAddr::port).collect::<Vec<_>>(),
            [2281, 2282]
        );
        assert!(server_addrs("zk+tls://").is_err());
    }

    #[test]
    fn tells_a_follower_by_its_mode() {
        assert!(is_follower(
            "Zookeeper version: 3.8.0\nZxid: 0x1\nMode: follower\n"
        ));
        assert!(!is_follower("Zxid: 0x1\nMode: leader\n"));
        assert!(!is_follower("Mode: standalone"));
    }

    #[test]
    fn per_op_subtracts_the_overhead_and_skips_a_new_epoch() {
        let at = |packets, zxid| Counters {
            packets_received: Some(packets),
            zxid: Some(zxid),
        };
        let (packets, txns) = at(100, 0x1_0000_0010).per_op(&at(130, 0x1_0000_0014), 10, 2);
        assert_eq!((packets, txns), (Some(10.0), Some(2.0)));
        let (_, txns) = at(100, 0x1_0000_0010).per_op(&at(130, 0x2_0000_0001), 0, 2);
        assert_eq!(txns, None);
    }
}
