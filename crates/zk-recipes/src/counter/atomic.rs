//! An atomic 64-bit long on one node, compatible with Apache Curator's
//! `DistributedAtomicLong` (optimistic mode).

use std::time::{Duration, Instant};

use bytes::Bytes;
use zk_proto::Client;

use super::{RetryPolicy, create, decode, force_set, normalize, read};
#[cfg(doc)]
use crate::Error;
use crate::Result;

/// The outcome of an [`AtomicLong`] call, as Curator's `AtomicValue`: **always check
/// [`succeeded`](Self::succeeded)**; only [`AtomicLong::get`] always succeeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtomicValue {
    /// Whether the update was applied.
    pub succeeded: bool,
    /// The value the (last) try read before its update (0 when the node was missing).
    pub pre_value: i64,
    /// The value after the update when it succeeded; when it did not, `pre_value` (Curator
    /// leaves it undefined).
    pub post_value: i64,
    /// How many tries the update took, and how long.
    pub stats: AtomicStats,
}

/// How an [`AtomicLong`] update went (Curator's `AtomicStats`, without the lock promotion).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AtomicStats {
    /// The optimistic tries (1 when the first try won).
    pub optimistic_tries: u32,
    /// The time the tries took, back-offs included.
    pub optimistic_time: Duration,
}

/// A distributed atomic long, compatible with Apache Curator's `DistributedAtomicLong` on the
/// same path: the node holds the value as 8 bytes, big-endian (Java's `ByteBuffer.putLong`),
/// and every update is an optimistic compare-and-set: read the value and the node's version,
/// then set the new value at that version (or create the node if it was missing). A try that
/// loses to a concurrent writer (`BadVersion`, `NodeExists`, `NoNode`) is retried as the
/// [`RetryPolicy`] allows; when no retry is left, the result says
/// [`succeeded`](AtomicValue::succeeded) `false` and nothing was changed.
///
/// A missing node reads as 0, and so does an empty one (as in Curator); data of any other
/// length than 8 bytes is refused with [`Error::BadValue`]. Arithmetic wraps as Java's
/// `long` does. The node's ancestors are created as container nodes when missing; the node
/// itself is persistent.
///
/// Not supported: Curator's promotion to an `InterProcessMutex` after the optimistic tries
/// (`PromotedToLock`); the optimistic tries alone decide.
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::counter::{AtomicLong, RetryPolicy};
///
/// let hits = AtomicLong::new(&client, "/app/hits", RetryPolicy::default());
/// let result = hits.increment().await?;
/// if result.succeeded {
///     println!("{} -> {}", result.pre_value, result.post_value);
/// } // else: too many concurrent writers for the retry policy; nothing was changed
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct AtomicLong {
    client: Client,
    path: String,
    retry: RetryPolicy,
}

fn encode(value: i64) -> Bytes {
    Bytes::copy_from_slice(&value.to_be_bytes())
}

/// One read: the value (0 for a missing or empty node) and the version, `None` when the node
/// is missing.
struct Current {
    value: i64,
    version: Option<i32>,
}

impl AtomicLong {
    /// The atomic long on the node `path`, its updates retried as `retry` allows.
    pub fn new(client: &Client, path: &str, retry: RetryPolicy) -> AtomicLong {
        AtomicLong {
            client: client.clone(),
            path: normalize(path),
            retry,
        }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The current value (0 when the node is missing), one round trip. Always succeeds;
    /// `pre_value` and `post_value` are both the value.
    ///
    /// # Errors
    ///
    /// [`Error::BadValue`]; [`Error::Zk`] with the session's end or a refusal.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: it only reads.
    pub async fn get(&self) -> Result<AtomicValue> {
        let started = Instant::now();
        let current = self.read().await?;
        Ok(AtomicValue {
            succeeded: true,
            pre_value: current.value,
            post_value: current.value,
            stats: AtomicStats {
                optimistic_tries: 0,
                optimistic_time: started.elapsed(),
            },
        })
    }

    /// Adds 1 (see [`add`](Self::add)).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub async fn increment(&self) -> Result<AtomicValue> {
        self.add(1).await
    }

    /// Subtracts 1 (see [`add`](Self::add)).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub async fn decrement(&self) -> Result<AtomicValue> {
        self.add(-1).await
    }

    /// Subtracts `delta` (see [`add`](Self::add)).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub async fn subtract(&self, delta: i64) -> Result<AtomicValue> {
        self.add(delta.wrapping_neg()).await
    }

    /// Adds `delta` (wrapping): optimistic tries of two round trips each (read, then set at
    /// the version read, or create), retried on a lost race as the retry policy allows.
    /// `succeeded` is `false` when the retries ran out; nothing was changed then.
    ///
    /// # Errors
    ///
    /// [`Error::BadValue`]; [`Error::Zk`] with the session's end, a refusal, or an unknown
    /// outcome of a write (`ConnectionLoss`, `RequestTimeout`: the update may have been
    /// applied; it is not retried, which could apply it twice).
    ///
    /// # Cancellation safety
    ///
    /// Dropping the future while a write is in flight leaves its outcome unknown.
    pub async fn add(&self, delta: i64) -> Result<AtomicValue> {
        self.try_update(|value| value.wrapping_add(delta)).await
    }

    /// Sets the value to `new_value` whatever it is, by the same optimistic tries as
    /// [`add`](Self::add) (Curator's `trySet`): the result tells the value it replaced.
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub async fn try_set(&self, new_value: i64) -> Result<AtomicValue> {
        self.try_update(|_| new_value).await
    }

    /// Sets the value to `new_value` only if it is `expected` now: one try, no retry (Curator's
    /// `compareAndSet`). A missing node never matches (use [`initialize`](Self::initialize)).
    ///
    /// # Errors
    ///
    /// As [`add`](Self::add).
    pub async fn compare_and_set(&self, expected: i64, new_value: i64) -> Result<AtomicValue> {
        let started = Instant::now();
        let current = self.read().await?;
        let mut result = AtomicValue {
            succeeded: false,
            pre_value: current.value,
            post_value: current.value,
            stats: AtomicStats {
                optimistic_tries: 1,
                optimistic_time: Duration::ZERO,
            },
        };
        if let Some(version) = current.version
            && current.value == expected
        {
            match self
                .client
                .set_data(&self.path, encode(new_value), Some(version))
                .await
            {
                Ok(_) => {
                    result.succeeded = true;
                    result.post_value = new_value;
                }
                Err(zk_proto::Error::BadVersion | zk_proto::Error::NoNode) => {}
                Err(e) => return Err(e.into()),
            }
        }
        result.stats.optimistic_time = started.elapsed();
        Ok(result)
    }

    /// Sets the value to `new_value` unconditionally (no atomicity: a concurrent update may be
    /// overwritten), creating the node when missing (Curator's `forceSet`).
    ///
    /// # Errors
    ///
    /// [`Error::Zk`] with the session's end or a refusal; a set whose reply was lost is sent
    /// again (harmless).
    pub async fn force_set(&self, new_value: i64) -> Result<()> {
        force_set(&self.client, &self.path, encode(new_value))
            .await
            .map(drop)
    }

    /// Creates the node with `value` if it does not exist (Curator's `initialize`):
    /// `Ok(true)` when this created it, `Ok(false)` when it existed.
    ///
    /// # Errors
    ///
    /// [`Error::Zk`] with the session's end, a refusal, or an unknown outcome of the create.
    pub async fn initialize(&self, value: i64) -> Result<bool> {
        create(&self.client, &self.path, encode(value)).await
    }

    async fn read(&self) -> Result<Current> {
        Ok(match read(&self.client, &self.path).await? {
            None => Current {
                value: 0,
                version: None,
            },
            Some((data, stat)) => Current {
                value: if data.is_empty() {
                    0
                } else {
                    i64::from_be_bytes(decode(&self.path, &data)?)
                },
                version: Some(stat.version),
            },
        })
    }

    /// The optimistic loop: tries, backs off, tries again, until a try wins or the retry
    /// policy says stop.
    async fn try_update(&self, make: impl Fn(i64) -> i64) -> Result<AtomicValue> {
        let started = Instant::now();
        let mut tries = 0;
        loop {
            tries += 1;
            let current = self.read().await?;
            let new_value = make(current.value);
            let won = match current.version {
                Some(version) => match self
                    .client
                    .set_data(&self.path, encode(new_value), Some(version))
                    .await
                {
                    Ok(_) => true,
                    Err(zk_proto::Error::BadVersion | zk_proto::Error::NoNode) => false,
                    Err(e) => return Err(e.into()),
                },
                None => create(&self.client, &self.path, encode(new_value)).await?,
            };
            let stats = || AtomicStats {
                optimistic_tries: tries,
                optimistic_time: started.elapsed(),
            };
            if won {
                return Ok(AtomicValue {
                    succeeded: true,
                    pre_value: current.value,
                    post_value: new_value,
                    stats: stats(),
                });
            }
            match self.retry.sleep_before(tries - 1) {
                Some(sleep) => tokio::time::sleep(sleep).await,
                None => {
                    return Ok(AtomicValue {
                        succeeded: false,
                        pre_value: current.value,
                        post_value: current.value,
                        stats: stats(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_java_longs() {
        // DistributedAtomicLong.valueToBytes: ByteBuffer.putLong (big-endian).
        assert_eq!(&encode(1)[..], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(
            &encode(-2)[..],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(i64::MAX.wrapping_add(1), i64::MIN);
    }
}
