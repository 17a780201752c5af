//! How many times an optimistic update is tried again, and how long to back off in between.

use std::time::Duration;

/// The bound on the optimistic retries of an [`AtomicLong`](super::AtomicLong) update, as
/// Curator's `RetryPolicy` bounds `DistributedAtomicLong`'s: after a try lost to a concurrent
/// writer, the update backs off and reads again, at most [`max_retries`](Self::max_retries)
/// times (so at most `max_retries + 1` tries), then gives up with
/// [`AtomicValue::succeeded`](super::AtomicValue::succeeded) `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_retries: u32,
    base_sleep: Duration,
    max_sleep: Duration,
    exponential: bool,
}

impl RetryPolicy {
    /// At most `retries` retries, each after `sleep` (Curator's `RetryNTimes`).
    pub const fn n_times(retries: u32, sleep: Duration) -> RetryPolicy {
        RetryPolicy {
            max_retries: retries,
            base_sleep: sleep,
            max_sleep: sleep,
            exponential: false,
        }
    }

    /// At most `max_retries` retries (capped at 29), the `n`-th (from 0) after `base_sleep`
    /// times a random factor in `1..2^(n+1)`, never longer than `max_sleep` (Curator's
    /// `ExponentialBackoffRetry`): contenders spread out instead of colliding again.
    pub const fn exponential_backoff(
        base_sleep: Duration,
        max_retries: u32,
        max_sleep: Duration,
    ) -> RetryPolicy {
        RetryPolicy {
            max_retries: if max_retries > 29 { 29 } else { max_retries },
            base_sleep,
            max_sleep,
            exponential: true,
        }
    }

    /// One try, no retry.
    pub const fn never() -> RetryPolicy {
        RetryPolicy::n_times(0, Duration::ZERO)
    }

    /// The number of retries allowed after the first try.
    pub const fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The back-off before retry number `retry` (from 0), `None` when no retry is left.
    pub fn sleep_before(&self, retry: u32) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        if !self.exponential {
            return Some(self.base_sleep);
        }
        let factor = fastrand::u32(1..(1u32 << (retry + 1)).max(2));
        Some(self.base_sleep.saturating_mul(factor).min(self.max_sleep))
    }
}

impl Default for RetryPolicy {
    /// Exponential back-off from 10 ms, at most 10 retries, at most 1 s apart.
    fn default() -> RetryPolicy {
        RetryPolicy::exponential_backoff(Duration::from_millis(10), 10, Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_are_bounded_and_back_off_within_limits() {
        let fixed = RetryPolicy::n_times(2, Duration::from_millis(5));
        assert_eq!(fixed.sleep_before(0), Some(Duration::from_millis(5)));
        assert_eq!(fixed.sleep_before(1), Some(Duration::from_millis(5)));
        assert_eq!(fixed.sleep_before(2), None);
        assert_eq!(RetryPolicy::never().sleep_before(0), None);

        let base = Duration::from_millis(10);
        let backoff = RetryPolicy::exponential_backoff(base, 100, Duration::from_millis(200));
        assert_eq!(backoff.max_retries(), 29);
        for retry in 0..29 {
            let sleep = backoff.sleep_before(retry).expect("allowed");
            assert!(
                sleep >= base && sleep <= Duration::from_millis(200),
                "{sleep:?}"
            );
            if retry == 0 {
                assert_eq!(sleep, base);
            }
        }
        assert_eq!(backoff.sleep_before(29), None);
    }
}
