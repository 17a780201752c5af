//! Which host to dial next and how long to wait first: the host rotation and the reconnect
//! backoff, as pure logic (no I/O, no clock of its own).
//!
//! The [`Session`](super::Session) owns a [`HostList`] and a [`Backoff`]: it takes the next host
//! from the list when it wants a connection, tells the backoff how each attempt ended, and arms
//! a timer for the delay. The driver only dials the host it is handed.

use std::collections::VecDeque;
use std::time::Duration;

use super::rebalance;
use crate::connect_string::{ConnectStringError, HostAddr};

/// The round-robin host rotation.
///
/// - The hosts are shuffled once at construction (if asked), then visited round-robin.
/// - [`HostList::next`] hands out the next host.
/// - [`HostList::mark_connected`] records that the last host handed out worked: the next cycle
///   (after a disconnect) starts with the host after that one and ends with it, as Java's
///   `StaticHostProvider` does.
///
/// Hosts are unresolved names: the driver resolves the returned host on each attempt, so a
/// reconnect always sees current DNS (the Java client re-resolves since ZOOKEEPER-2184).
#[derive(Debug, Clone)]
pub struct HostList {
    hosts: Vec<HostAddr>,
    /// Index of the host the next call to `next` returns.
    cursor: usize,
    /// Index of the last host handed out by `next`.
    current: Option<usize>,
    /// Index of the last host marked connected.
    last_connected: Option<usize>,
    /// Visit the hosts in a random order.
    shuffle: bool,
    /// After a new list that moves the session: the hosts to try first, in order (see
    /// [`HostList::update`]); cleared once a host accepts the session.
    moving: VecDeque<usize>,
}

impl HostList {
    /// A host list over `hosts`, shuffled once with `rng` if `shuffle`.
    ///
    /// # Errors
    ///
    /// [`ConnectStringError::NoHosts`] if `hosts` is empty.
    pub fn new(
        mut hosts: Vec<HostAddr>,
        shuffle: bool,
        rng: &mut fastrand::Rng,
    ) -> Result<HostList, ConnectStringError> {
        if hosts.is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        if shuffle {
            rng.shuffle(&mut hosts);
        }
        Ok(HostList {
            hosts,
            cursor: 0,
            current: None,
            last_connected: None,
            shuffle,
            moving: VecDeque::new(),
        })
    }

    /// Replaces the hosts (shuffled if the list was), for a session connected to `current`
    /// (`None`: not connected). Returns whether the session must move now; the hosts to move
    /// to are then handed out first. See the rebalancing rule in `rebalance.rs`: a session
    /// whose server left the list always moves, and one whose server stays moves with the
    /// probability that evens the load across a grown list.
    ///
    /// # Errors
    ///
    /// [`ConnectStringError::NoHosts`] if `hosts` is empty (the list is left as it was).
    pub fn update(
        &mut self,
        mut hosts: Vec<HostAddr>,
        current: Option<&HostAddr>,
        rebalance: bool,
        rng: &mut fastrand::Rng,
    ) -> Result<bool, ConnectStringError> {
        if hosts.is_empty() {
            return Err(ConnectStringError::NoHosts);
        }
        if self.shuffle {
            rng.shuffle(&mut hosts);
        }
        // Without rebalancing, a session whose server stays listed stays.
        let plan = match current {
            Some(current) if !rebalance && hosts.contains(current) => None,
            _ => rebalance::plan(&self.hosts, &hosts, current, rng),
        };
        let position =
            |host: Option<&HostAddr>| host.and_then(|h| hosts.iter().position(|x| x == h));
        let current_index = position(current);
        let last_connected = position(self.last_connected());
        self.moving = match plan {
            Some(mut to) => std::iter::from_fn(|| to.next(rng)).collect(),
            None => VecDeque::new(),
        };
        self.current = current_index;
        self.last_connected = last_connected;
        self.cursor = current_index
            .or(last_connected)
            .map_or(0, |index| (index + 1) % hosts.len());
        self.hosts = hosts;
        Ok(!self.moving.is_empty())
    }

    /// The hosts, in visiting order (after the shuffle); never empty.
    pub fn hosts(&self) -> &[HostAddr] {
        &self.hosts
    }

    /// The next host to dial and its index in [`HostList::hosts`].
    #[allow(clippy::should_implement_trait)] // Endless, and lends the host: not an Iterator.
    pub fn next(&mut self) -> (usize, &HostAddr) {
        if let Some(index) = self.moving.pop_front() {
            self.current = Some(index);
            self.cursor = (index + 1) % self.hosts.len();
            return (index, &self.hosts[index]);
        }
        let index = self.cursor % self.hosts.len();
        self.cursor = (index + 1) % self.hosts.len();
        self.current = Some(index);
        (index, &self.hosts[index])
    }

    /// Makes host `index` the next one handed out (a read/write server found while
    /// read-only). Out-of-range indices are ignored.
    pub fn prefer(&mut self, index: usize) {
        self.moving.clear();
        if index < self.hosts.len() {
            self.cursor = index;
        }
    }

    /// Records that the host last returned by [`HostList::next`] accepted the connection (the
    /// session handshake succeeded): the next cycle starts after it. Does nothing if `next` was
    /// never called.
    pub fn mark_connected(&mut self) {
        self.moving.clear();
        if let Some(index) = self.current {
            self.last_connected = Some(index);
            self.cursor = (index + 1) % self.hosts.len();
        }
    }

    /// The host last marked connected, if any.
    pub fn last_connected(&self) -> Option<&HostAddr> {
        self.last_connected.and_then(|i| self.hosts.get(i))
    }
}

/// The default base of the reconnect backoff.
pub const DEFAULT_MIN_BACKOFF: Duration = Duration::from_millis(20);
/// The default largest reconnect backoff.
pub const DEFAULT_MAX_BACKOFF: Duration = Duration::from_secs(1);

/// The reconnect backoff: how long to wait before the next connection attempt.
///
/// Every attempt but a new client's very first waits, whatever ended the one before it (a
/// refused connect, a failed or timed-out handshake, a protocol violation, a read timeout, a
/// server that closed the connection):
///
/// - after a connection that stayed up for a while (at least the largest delay), the next
///   attempt waits a random `0..=min`: the session is resumed at once, and the clients of a
///   server that died do not all arrive at the next one in the same instant;
/// - after each further failure in a row (an attempt that did not connect, or a connection
///   that ended sooner), the nominal delay doubles from `2 * min`, up to the cap, and the wait
///   is a random value between half the nominal delay and all of it: a server that breaks
///   every connection sees a handful of attempts per second from each client, not thousands;
/// - the cap is the configured maximum, and never more than a sixth of the session timeout
///   `T`: a loss noticed at the read timeout (`2T/3`) leaves `T/3`, half of it for waiting
///   and half for the attempt, so the session can still be resumed before it expires.
///
/// The Java client sleeps a random 0–1 s before every reconnect; this backoff reconnects
/// sooner after a healthy connection and backs off harder when connections keep failing.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    /// Failures in a row since the last healthy connection.
    failures: u32,
}

impl Backoff {
    /// A backoff from `min` (the base; zero disables the backoff) to `max` (raised to `min`).
    pub fn new(min: Duration, max: Duration) -> Self {
        Self {
            min,
            max: max.max(min),
            failures: 0,
        }
    }

    /// Failures in a row since the last healthy connection.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// The largest delay for session timeout `session_timeout`.
    pub fn cap(&self, session_timeout: Duration) -> Duration {
        self.max.min(session_timeout / 6)
    }

    /// A connection (or an attempt) ended after lasting `lasted` (zero for an attempt that
    /// never connected).
    pub fn ended(&mut self, lasted: Duration, session_timeout: Duration) {
        let cap = self.cap(session_timeout);
        if !lasted.is_zero() && lasted >= cap {
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
        }
    }

    /// The delay before the next attempt: a random value between
    /// [`shortest_delay`](Self::shortest_delay) and the nominal delay.
    pub fn delay(&self, session_timeout: Duration, rng: &mut fastrand::Rng) -> Duration {
        let nominal = self.nominal(session_timeout);
        random_between(self.shortest_delay(session_timeout), nominal, rng)
    }

    /// The shortest delay [`delay`](Self::delay) can give now (its jitter at the low end).
    pub fn shortest_delay(&self, session_timeout: Duration) -> Duration {
        if self.failures == 0 {
            Duration::ZERO
        } else {
            self.nominal(session_timeout) / 2
        }
    }

    /// The most connection attempts this backoff allows within `window` after a connection
    /// that stayed up was lost, if every attempt fails at once (each wait at its shortest):
    /// the bound on what a server that breaks every connection sees from one client.
    pub fn max_attempts_within(&self, window: Duration, session_timeout: Duration) -> u64 {
        let mut backoff = Backoff::new(self.min, self.max);
        let mut attempts = 0;
        let mut elapsed = Duration::ZERO;
        loop {
            elapsed += backoff.shortest_delay(session_timeout);
            if elapsed > window {
                return attempts;
            }
            attempts += 1;
            backoff.ended(Duration::ZERO, session_timeout);
        }
    }

    /// The delay before jitter: `min` after a healthy connection, then doubling from `2 * min`
    /// with each failure in a row, up to the cap.
    fn nominal(&self, session_timeout: Duration) -> Duration {
        let cap = self.cap(session_timeout);
        if self.failures == 0 {
            return self.min.min(cap);
        }
        let factor = 1u32.checked_shl(self.failures).unwrap_or(u32::MAX);
        self.min.saturating_mul(factor).min(cap)
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new(DEFAULT_MIN_BACKOFF, DEFAULT_MAX_BACKOFF)
    }
}

fn random_between(low: Duration, high: Duration, rng: &mut fastrand::Rng) -> Duration {
    let low_ns = u64::try_from(low.as_nanos()).unwrap_or(u64::MAX);
    let high_ns = u64::try_from(high.as_nanos()).unwrap_or(u64::MAX);
    if high_ns <= low_ns {
        return low;
    }
    Duration::from_nanos(rng.u64(low_ns..=high_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addrs(n: usize) -> Vec<HostAddr> {
        (0..n)
            .map(|i| HostAddr::new(format!("h{i}"), 2181))
            .collect()
    }

    fn rng(seed: u64) -> fastrand::Rng {
        fastrand::Rng::with_seed(seed)
    }

    fn order(list: &mut HostList, n: usize) -> Vec<usize> {
        (0..n).map(|_| list.next().0).collect()
    }

    #[test]
    fn a_new_list_without_the_current_host_moves_to_an_added_host_first() {
        let mut list = HostList::new(addrs(3), false, &mut rng(1)).expect("hosts");
        let (_, current) = list.next();
        let current = current.clone();
        list.mark_connected();
        let new = vec![
            addrs(3)[1].clone(),
            addrs(3)[2].clone(),
            addrs(4)[3].clone(),
        ];
        assert_eq!(
            list.update(new.clone(), Some(&current), true, &mut rng(2)),
            Ok(true)
        );
        assert_eq!(list.hosts(), new);
        assert_eq!(list.next().1, &addrs(4)[3], "the added host first");
        // Then the rotation, over the new list only.
        let mut seen: Vec<HostAddr> = (0..3).map(|_| list.next().1.clone()).collect();
        seen.sort_by(|a, b| a.host.cmp(&b.host));
        assert_eq!(seen, new);
    }

    #[test]
    fn a_new_list_that_keeps_the_current_host_and_does_not_grow_keeps_the_session_there() {
        let mut list = HostList::new(addrs(3), false, &mut rng(1)).expect("hosts");
        let (_, current) = list.next();
        let current = current.clone();
        list.mark_connected();
        let new = vec![addrs(3)[0].clone(), addrs(3)[1].clone()];
        assert_eq!(
            list.update(new, Some(&current), true, &mut rng(3)),
            Ok(false)
        );
        // The next cycle starts after the current host, as after any connection.
        assert_eq!(list.next().1, &addrs(3)[1]);
        assert_eq!(list.last_connected(), Some(&current));
    }

    #[test]
    fn a_learned_list_moves_no_session_whose_server_it_lists() {
        for seed in 0..50 {
            let mut list = HostList::new(addrs(1), false, &mut rng(1)).expect("hosts");
            let (_, current) = list.next();
            let current = current.clone();
            list.mark_connected();
            // Grown from 1 to 5: a rebalancing draw would move most sessions.
            assert_eq!(
                list.update(addrs(5), Some(&current), false, &mut rng(seed)),
                Ok(false)
            );
            assert_eq!(list.hosts(), addrs(5));
        }
        // But a session whose server is not listed moves, rebalancing or not.
        let mut list = HostList::new(addrs(1), false, &mut rng(1)).expect("hosts");
        let (_, current) = list.next();
        let current = current.clone();
        assert_eq!(
            list.update(addrs(5)[1..].to_vec(), Some(&current), false, &mut rng(2)),
            Ok(true)
        );
    }

    #[test]
    fn an_empty_new_list_is_refused_and_changes_nothing() {
        let mut list = HostList::new(addrs(2), false, &mut rng(1)).expect("hosts");
        assert_eq!(
            list.update(Vec::new(), None, true, &mut rng(1)),
            Err(ConnectStringError::NoHosts)
        );
        assert_eq!(list.hosts(), addrs(2));
    }

    #[test]
    fn no_shuffle_keeps_order_and_round_robins() {
        let mut list = HostList::new(addrs(3), false, &mut rng(1)).expect("hosts");
        assert_eq!(list.hosts(), addrs(3));
        assert_eq!(order(&mut list, 7), [0, 1, 2, 0, 1, 2, 0]);
    }

    #[test]
    fn shuffle_keeps_the_hosts_and_is_seeded() {
        let mut shuffled = HostList::new(addrs(20), true, &mut rng(7))
            .expect("hosts")
            .hosts()
            .to_vec();
        let again = HostList::new(addrs(20), true, &mut rng(7)).expect("hosts");
        assert_eq!(shuffled, again.hosts());
        assert_ne!(shuffled, addrs(20), "20 hosts should not stay in order");
        shuffled.sort_by_key(|a| a.host[1..].parse::<usize>().unwrap_or(usize::MAX));
        assert_eq!(shuffled, addrs(20));
    }

    #[test]
    fn the_cycle_after_a_connection_starts_after_the_host_that_worked() {
        let mut list = HostList::new(addrs(4), false, &mut rng(5)).expect("hosts");
        assert_eq!(list.last_connected(), None);
        order(&mut list, 6); // ..., h0, h1
        list.mark_connected();
        assert_eq!(list.last_connected(), Some(&HostAddr::new("h1", 2181)));
        assert_eq!(order(&mut list, 5), [2, 3, 0, 1, 2]);
    }

    #[test]
    fn a_preferred_host_is_next() {
        let mut list = HostList::new(addrs(4), false, &mut rng(5)).expect("hosts");
        list.next();
        list.prefer(3);
        assert_eq!(order(&mut list, 2), [3, 0]);
        list.prefer(9);
        assert_eq!(list.next().0, 1);
    }

    #[test]
    fn mark_connected_before_next_is_a_no_op() {
        let mut list = HostList::new(addrs(2), false, &mut rng(1)).expect("hosts");
        list.mark_connected();
        assert_eq!(list.last_connected(), None);
        assert_eq!(list.next().0, 0);
    }

    #[test]
    fn no_hosts_is_an_error() {
        assert_eq!(
            HostList::new(Vec::new(), true, &mut rng(1)).err(),
            Some(ConnectStringError::NoHosts)
        );
    }

    const T: Duration = Duration::from_secs(30);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn after_a_healthy_connection_the_wait_is_short() {
        let mut backoff = Backoff::new(ms(20), ms(1000));
        let mut r = rng(3);
        backoff.ended(Duration::from_secs(60), T);
        assert_eq!(backoff.failures(), 0);
        for _ in 0..100 {
            assert!(backoff.delay(T, &mut r) <= ms(20));
        }
    }

    #[test]
    fn failures_in_a_row_double_the_wait_up_to_the_cap() {
        let mut backoff = Backoff::new(ms(20), ms(1000));
        let mut r = rng(4);
        let mut nominal = ms(40);
        for failures in 1..=12 {
            backoff.ended(ms(1), T);
            assert_eq!(backoff.failures(), failures);
            let delay = backoff.delay(T, &mut r);
            assert!(
                delay >= nominal / 2 && delay <= nominal,
                "{failures}: {delay:?} vs {nominal:?}"
            );
            nominal = (nominal * 2).min(ms(1000));
        }
        // A connection that lasted as long as the cap resets it.
        backoff.ended(ms(1000), T);
        assert_eq!(backoff.failures(), 0);
    }

    #[test]
    fn the_cap_leaves_time_to_resume_the_session() {
        let mut backoff = Backoff::new(ms(20), ms(5000));
        let t = Duration::from_secs(3);
        assert_eq!(backoff.cap(t), ms(500));
        let mut r = rng(5);
        for _ in 0..20 {
            backoff.ended(Duration::ZERO, t);
        }
        for _ in 0..50 {
            assert!(backoff.delay(t, &mut r) <= ms(500));
        }
        // A 400 ms connection is healthy under a 500 ms cap only when it lasts the cap.
        backoff.ended(ms(400), t);
        assert!(backoff.failures() > 0);
        backoff.ended(ms(500), t);
        assert_eq!(backoff.failures(), 0);
    }

    #[test]
    fn attempts_within_a_window_follow_the_shortest_delays() {
        let backoff = Backoff::new(ms(20), ms(1000));
        // At once, then after the shortest waits 20, 40, 80, 160, 320, then 500 ms (half the
        // 1 s cap) each: attempts at 0, 20, 60, 140, 300, 620, 1120, 1620, ... ms.
        assert_eq!(backoff.max_attempts_within(ms(0), T), 1);
        assert_eq!(backoff.max_attempts_within(ms(19), T), 1);
        assert_eq!(backoff.max_attempts_within(ms(20), T), 2);
        assert_eq!(backoff.max_attempts_within(ms(1119), T), 6);
        assert_eq!(backoff.max_attempts_within(ms(1120), T), 7);
        assert_eq!(backoff.max_attempts_within(ms(2120), T), 9);
        // A 3 s session caps the delay at 500 ms (250 ms at the shortest): attempts at 0, 20,
        // 60, 140, 300, 550, 800, ... ms.
        let t = Duration::from_secs(3);
        assert_eq!(backoff.max_attempts_within(ms(620), t), 6);
        assert_eq!(backoff.max_attempts_within(ms(800), t), 7);
    }

    #[test]
    fn a_zero_base_disables_the_backoff() {
        let mut backoff = Backoff::new(Duration::ZERO, Duration::ZERO);
        let mut r = rng(6);
        for _ in 0..5 {
            backoff.ended(Duration::ZERO, T);
            assert_eq!(backoff.delay(T, &mut r), Duration::ZERO);
        }
    }

    proptest! {
        #[test]
        fn round_robin_visits_every_host_once_per_cycle(
            n in 1usize..8,
            seed in any::<u64>(),
            connect_after in proptest::option::of(0usize..20),
            cycles in 1usize..5,
        ) {
            let mut list = HostList::new(addrs(n), true, &mut rng(seed)).expect("hosts");
            if let Some(k) = connect_after {
                order(&mut list, k + 1);
                list.mark_connected();
            }
            for _ in 0..cycles {
                let mut seen = order(&mut list, n);
                seen.sort_unstable();
                prop_assert_eq!(seen, (0..n).collect::<Vec<_>>());
            }
        }

        #[test]
        fn the_delay_never_exceeds_the_cap(
            seed in any::<u64>(),
            min_ms in 0u64..500,
            max_ms in 0u64..5000,
            t_ms in 1u64..60_000,
            lasted in proptest::collection::vec(0u64..3000, 1..70),
        ) {
            let t = Duration::from_millis(t_ms);
            let mut backoff = Backoff::new(ms(min_ms), ms(max_ms));
            let mut r = rng(seed);
            for lasted in lasted {
                backoff.ended(ms(lasted), t);
                let delay = backoff.delay(t, &mut r);
                prop_assert!(delay <= backoff.cap(t));
                prop_assert!(delay <= ms(max_ms.max(min_ms)));
            }
        }
    }
}
