//! A new host list for a running session: whether the session moves, and where to (the
//! load-balancing rule of ZOOKEEPER-1355, as the Java client's `StaticHostProvider.
//! updateServerList` applies it), as pure logic over a seeded random source.
//!
//! With `n` hosts before, `N` after, of which `k` were already in the list:
//!
//! - the current server is gone: the session moves at once. If the list grew (`N > n`) it
//!   moves to one of the added servers; else to an added server with probability `1 - p` and
//!   to a kept one with `p = k (n - N) / (N (n - k))`, which keeps the kept servers' share of
//!   the clients even;
//! - the current server stays and the list grew: the session moves to one of the added
//!   servers with probability `1 - n / N`, so that in expectation every server of the new list
//!   holds the same share of clients, and stays otherwise;
//! - the current server stays and the list did not grow: the session stays.
//!
//! Hosts are compared as written (`host:port`), not resolved.

use crate::connect_string::HostAddr;

/// Where the next attempts go after a move: the added hosts and the kept ones, each tried in
/// a random order (the new list may be in the caller's order, and every session must not pick
/// the same one), an added one with probability `p_added` while both kinds are left.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Move {
    /// Indices (in the new list) of the hosts the old list did not have, not tried yet.
    added: Vec<usize>,
    /// Indices (in the new list) of the hosts both lists have, but the current one, not tried
    /// yet.
    kept: Vec<usize>,
    /// The probability of taking an added host while both kinds are left.
    p_added: f64,
}

impl Move {
    /// The next host to try (index in the new list); `None` once every candidate was tried
    /// (the rotation takes over).
    pub(super) fn next(&mut self, rng: &mut fastrand::Rng) -> Option<usize> {
        let take_added = rng.f64() < self.p_added;
        let group = if !self.added.is_empty() && (take_added || self.kept.is_empty()) {
            &mut self.added
        } else if !self.kept.is_empty() {
            &mut self.kept
        } else {
            return None;
        };
        Some(group.swap_remove(rng.usize(..group.len())))
    }
}

/// What a new list means for a session on `current` (`None`: not connected): `Some` when it
/// must move now, with where to.
pub(super) fn plan(
    old: &[HostAddr],
    new: &[HostAddr],
    current: Option<&HostAddr>,
    rng: &mut fastrand::Rng,
) -> Option<Move> {
    let current = current?;
    let stays_listed = new.contains(current);
    let (mut added, mut kept) = (Vec::new(), Vec::new());
    for (index, host) in new.iter().enumerate() {
        if !old.contains(host) {
            added.push(index);
        } else if host != current {
            kept.push(index);
        }
    }
    let (n, big_n) = (old.len() as f64, new.len() as f64);
    let k = (new.len() - added.len()) as f64;
    let p_added = if new.len() > old.len() {
        if stays_listed && rng.f64() >= 1.0 - n / big_n {
            return None;
        }
        1.0
    } else if stays_listed {
        return None;
    } else if n > k {
        1.0 - k * (n - big_n) / (big_n * (n - k))
    } else {
        // Every old host is kept and the current one is not among them: impossible, since
        // the current host came from the old list; stay safe and take the kept ones.
        0.0
    };
    Some(Move {
        added,
        kept,
        p_added,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(ports: impl IntoIterator<Item = u16>) -> Vec<HostAddr> {
        ports
            .into_iter()
            .map(|p| HostAddr::new("127.0.0.1", p))
            .collect()
    }

    #[test]
    fn not_connected_or_unchanged_lists_do_not_move() {
        let mut rng = fastrand::Rng::with_seed(1);
        let old = hosts(1..=3);
        assert_eq!(plan(&old, &hosts(1..=5), None, &mut rng), None);
        for _ in 0..100 {
            assert_eq!(plan(&old, &old, Some(&old[1]), &mut rng), None);
            assert_eq!(plan(&old, &hosts(1..=2), Some(&old[1]), &mut rng), None);
        }
    }

    #[test]
    fn a_removed_current_server_moves_at_once_to_an_added_server_first_when_the_list_grew() {
        let mut rng = fastrand::Rng::with_seed(2);
        let old = hosts(1..=3);
        let new = hosts([2, 3, 4, 5]);
        let mut to = plan(&old, &new, Some(&old[0]), &mut rng).expect("moves");
        let first = to.next(&mut rng).expect("a host");
        assert!([2, 3].contains(&first), "an added host first: {first}");
        let mut rest: Vec<usize> = std::iter::from_fn(|| to.next(&mut rng)).collect();
        rest.push(first);
        rest.sort_unstable();
        assert_eq!(rest, [0, 1, 2, 3], "every other host is a candidate once");
    }

    /// Simulates `clients` sessions spread evenly over `old`, applies the new list to each,
    /// and counts where they end up (a moved session takes the first host its move offers).
    fn spread(old: &[HostAddr], new: &[HostAddr], clients: usize, seed: u64) -> Vec<usize> {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut counts = vec![0; new.len()];
        for client in 0..clients {
            let current = &old[client % old.len()];
            let index = match plan(old, new, Some(current), &mut rng) {
                Some(mut to) => to.next(&mut rng).expect("a host"),
                None => new.iter().position(|h| h == current).expect("listed"),
            };
            counts[index] += 1;
        }
        counts
    }

    #[test]
    fn growing_from_three_to_five_servers_evens_the_load_out() {
        let counts = spread(&hosts(1..=3), &hosts(1..=5), 30_000, 3);
        for count in counts {
            assert!(
                (5_700..=6_300).contains(&count),
                "{count} of 30,000 (6,000 expected)"
            );
        }
    }

    #[test]
    fn replacing_a_server_moves_only_its_clients_and_evens_the_load_out() {
        // 1, 2, 3 -> 2, 3, 4: the clients of 1 go to 4; the others stay.
        let counts = spread(&hosts(1..=3), &hosts([2, 3, 4]), 3_000, 4);
        assert_eq!(counts, [1_000, 1_000, 1_000]);
    }

    #[test]
    fn shrinking_moves_the_removed_servers_clients_evenly_onto_the_rest() {
        // 1..=5 -> 1..=3: the clients of 4 and 5 spread over 1, 2, 3.
        let counts = spread(&hosts(1..=5), &hosts(1..=3), 30_000, 5);
        for count in counts {
            assert!(
                (9_700..=10_300).contains(&count),
                "{count} of 30,000 (10,000 expected)"
            );
        }
    }

    #[test]
    fn shrinking_while_adding_keeps_the_share_even() {
        // 1..=4 -> 3, 4, 5: the clients of 1 and 2 go to 5 mostly, some to 3 and 4.
        let counts = spread(&hosts(1..=4), &hosts([3, 4, 5]), 30_000, 6);
        for count in counts {
            assert!(
                (9_700..=10_300).contains(&count),
                "{count} of 30,000 (10,000 expected)"
            );
        }
    }
}
