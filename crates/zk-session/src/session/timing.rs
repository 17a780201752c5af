//! The session's timer intervals, all derived from the session timeout in one place.

use std::time::Duration;

/// The intervals the session runs on, computed from the negotiated session timeout `T` and the
/// number of hosts `n`, with the fractions the Java client 3.8 uses (`ClientCnxn`):
///
/// - **read timeout `2T/3`**: a connection on which nothing was received for that long is
///   dropped and the next server tried. It leaves a third of the session timeout to reach
///   another server before the ensemble expires the session.
/// - **ping after `T/3` of send silence** (at most 10 s): a ping goes out when the client has
///   sent nothing for that long, so a healthy idle connection gets at least one ping reply
///   inside each read timeout. Java pings 1 s earlier than `T/3` (`readTimeout/2 - 1s`); the
///   difference does not matter on loopback and makes the rule easy to state.
/// - **connect timeout `T/n`, at most `T/3`**: one attempt (TCP connect plus handshake) may
///   take that long, so a full pass over the hosts fits in one session timeout. Java uses
///   `T/n` alone, so with one or two hosts a single attempt that the server accepts but never
///   answers uses up the session (ZooKeeper 3.8.0 leaves such a connection open when it
///   arrives while the server is starting: `ZooKeeperServer not running`, then a
///   NullPointerException before the socket is closed); the `T/3` cap leaves time for two
///   more attempts.
/// - **local expiry `T`**: when no server has answered for a whole session timeout while the
///   client was cut off, the ensemble has expired the session (it expires it after `T`
///   without hearing from the client); the client reports [`Expired`] itself instead of
///   reconnecting forever (ZooKeeper 3.9.3's ZOOKEEPER-4508 uses `4T/3`; we choose `T`
///   because a lock holder must learn of the loss no later than the ensemble acts on it).
///   `T` counts from the send time of the latest request, ping or handshake the server
///   answered: the server had heard from the client by then. Not from the last frame
///   received: a watch event is sent unprompted and says nothing about the server's clock.
/// - **quorum check every `T/16`, answered within `T/2`** (only while the check is on): a
///   follower answers pings itself, also when it is cut off from its leader, while the
///   leader, no longer told of the session's traffic, expires the session after `T`. A
///   `sync`, which only the leader can complete, goes out every `T/16`; one still unanswered
///   `T/2` after it was sent counts as a lost connection. Cut at `c`, the client learns by
///   `c + T/16 + T/2`, while the leader heard of the session at `c - T/16 - tickTime/2` at
///   the earliest (the follower reports its clients' traffic every half tick) and cannot
///   expire it before `c - T/16 - tickTime/2 + T`. With `tickTime <= T/2` (the server's
///   default `minSessionTimeout` is two ticks) that leaves at least `T/8` (docs/client.md,
///   "The quorum check").
/// - **a move's grace `T/3`** after the send time of the latest request the server answered:
///   when the client drops a healthy connection itself to move the session (a rebalance, its
///   server removed from the list, a read/write server found), the state stays `Connected`
///   until then, and turns `Disconnected` only if the session is not established on the new
///   server by then. The ensemble cannot expire the session before `T - tickTime/2 - T/3`
///   after that send (an idle client pings every `T/3`; a follower reports its clients to the
///   leader every half tick), at least `5T/12` with `tickTime <= T/2`: the grace ends `T/12`
///   before, and `T/3 + 5T/16` before with the quorum check on.
///
/// [`Expired`]: crate::session::SessionState::Expired
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Drop a connection that received nothing for this long.
    pub read_timeout: Duration,
    /// Send a ping after this long without sending.
    pub ping_interval: Duration,
    /// The budget of one connection attempt.
    pub connect_timeout: Duration,
    /// Report the session expired after this long without any server.
    pub local_expiry: Duration,
    /// While the quorum check is on: send a `sync` this long after the previous one.
    pub quorum_interval: Duration,
    /// While the quorum check is on: drop a connection whose `sync` was not answered within
    /// this long.
    pub quorum_bound: Duration,
    /// A move the client makes itself keeps the state `Connected` until this long after the
    /// send time of the latest answered request.
    pub move_grace: Duration,
}

/// Java's `MAX_SEND_PING_INTERVAL`: never stay silent longer than this.
const MAX_PING_INTERVAL: Duration = Duration::from_secs(10);

impl Timing {
    /// The intervals for session timeout `session_timeout` and `hosts` hosts.
    pub fn new(session_timeout: Duration, hosts: usize) -> Self {
        let hosts = u32::try_from(hosts.max(1)).unwrap_or(u32::MAX);
        Self {
            read_timeout: session_timeout * 2 / 3,
            ping_interval: (session_timeout / 3).min(MAX_PING_INTERVAL),
            connect_timeout: session_timeout / hosts.max(3),
            local_expiry: session_timeout,
            quorum_interval: session_timeout / 16,
            quorum_bound: session_timeout / 2,
            move_grace: session_timeout / 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_of_thirty_seconds() {
        let timing = Timing::new(Duration::from_secs(30), 3);
        assert_eq!(timing.read_timeout, Duration::from_secs(20));
        assert_eq!(timing.ping_interval, Duration::from_secs(10));
        assert_eq!(timing.connect_timeout, Duration::from_secs(10));
        assert_eq!(timing.local_expiry, Duration::from_secs(30));
    }

    #[test]
    fn one_attempt_takes_at_most_a_third_of_the_session_timeout() {
        let t = Duration::from_secs(30);
        assert_eq!(Timing::new(t, 1).connect_timeout, Duration::from_secs(10));
        assert_eq!(Timing::new(t, 2).connect_timeout, Duration::from_secs(10));
        assert_eq!(Timing::new(t, 5).connect_timeout, Duration::from_secs(6));
    }

    /// The bound of docs/client.md: a check sent at most `Q` after the cut and given up `B`
    /// after it is sent is noticed before the ensemble can expire the session, whose last
    /// report reached the leader no earlier than `Q + tickTime/2` before the cut:
    /// `2Q + B + tickTime/2 < T` for every `tickTime <= T/2`, with `T/8` to spare.
    #[test]
    fn a_cut_off_follower_is_noticed_before_the_session_can_expire() {
        for millis in [4_000, 6_000, 12_000, 30_000, 40_000] {
            let t = Duration::from_millis(millis);
            let timing = Timing::new(t, 3);
            let half_tick = t / 4;
            let learned = 2 * timing.quorum_interval + timing.quorum_bound + half_tick;
            assert!(learned + t / 8 <= t, "{t:?}: learned after {learned:?}");
            assert!(timing.quorum_bound < timing.read_timeout);
        }
    }

    #[test]
    fn pings_at_most_every_ten_seconds() {
        let timing = Timing::new(Duration::from_secs(60), 1);
        assert_eq!(timing.ping_interval, Duration::from_secs(10));
        assert!(timing.ping_interval < timing.read_timeout);
    }
}
