//! A shared 32-bit count on one node, compatible with Apache Curator's `SharedCount`.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use zk_proto::{Client, OneshotWatcher};

use super::{create, decode, force_set, normalize, read};
#[cfg(doc)]
use crate::Error;
use crate::Result;
use crate::deadline::within;

/// A count and the version of the node it was read from (the version a
/// [`set_if_version`](SharedCount::set_if_version) must name to win).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionedCount {
    /// The count.
    pub value: i32,
    /// The node's data version when the count was read or written.
    pub version: i32,
}

/// A shared integer on one node, compatible with Apache Curator's `SharedCount` on the same
/// path: the node holds the count as 4 bytes, big-endian (Java's `ByteBuffer.putInt`), so a
/// Curator `SharedCount` and this one read and update the same count, and a versioned set of
/// either loses to a write of the other made since its read.
///
/// The node is created, holding the `seed`, by the first [`get`](Self::get) that finds it
/// missing (as Curator's `start()` does), its missing ancestors as container nodes. A node
/// whose data is not 4 bytes is refused with [`Error::BadValue`].
///
/// Arithmetic wraps as Java's `int` does (`i32::MAX + 1` is `i32::MIN`).
///
/// ```no_run
/// # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
/// use zk_recipes::counter::SharedCount;
///
/// let count = SharedCount::new(&client, "/app/workers", 0);
/// let seen = count.get().await?;
/// if !count.set_if_version(seen.value + 1, seen.version).await? {
///     // Someone else wrote since our read: read again.
/// }
/// let after = count.add(5, None).await?; // retries until it wins
/// let mut changes = count.watch();
/// let latest = changes.changed(Some(std::time::Duration::from_secs(1))).await?;
/// # let _ = (after, latest);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct SharedCount {
    client: Client,
    path: String,
    seed: i32,
}

fn encode(value: i32) -> Bytes {
    Bytes::copy_from_slice(&value.to_be_bytes())
}

impl SharedCount {
    /// The count on the node `path`; `seed` is its value when the node has to be created.
    pub fn new(client: &Client, path: &str, seed: i32) -> SharedCount {
        SharedCount {
            client: client.clone(),
            path: normalize(path),
            seed,
        }
    }

    /// The node's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Reads the count and its version (one round trip). When the node is missing it is
    /// created with the seed (and the seed is returned, at version 0).
    ///
    /// # Errors
    ///
    /// [`Error::BadValue`] when the node's data is not 4 bytes; [`Error::Zk`] with the
    /// session's end, a refusal (ACL), or a create whose outcome is unknown.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: at most the seed's create is left to be applied.
    pub async fn get(&self) -> Result<VersionedCount> {
        loop {
            if let Some((data, stat)) = read(&self.client, &self.path).await? {
                return Ok(VersionedCount {
                    value: i32::from_be_bytes(decode(&self.path, &data)?),
                    version: stat.version,
                });
            }
            if create(&self.client, &self.path, encode(self.seed)).await? {
                return Ok(VersionedCount {
                    value: self.seed,
                    version: 0,
                });
            }
        }
    }

    /// Sets the count to `value` if the node is still at `version` (a versioned
    /// compare-and-set, one round trip): `Ok(true)` when this won, `Ok(false)` when the node
    /// changed since (or is gone, or `version` is negative: ZooKeeper would read -1 as "any
    /// version"). Losing is not an error.
    ///
    /// # Errors
    ///
    /// [`Error::Zk`] with the session's end, a refusal, or an unknown outcome
    /// (`ConnectionLoss`, `RequestTimeout`: the set may have been applied; it is not
    /// retried, read the count again).
    ///
    /// # Cancellation safety
    ///
    /// The set is queued when this is called: dropping the future leaves its outcome unknown.
    pub async fn set_if_version(&self, value: i32, version: i32) -> Result<bool> {
        if version < 0 {
            return Ok(false);
        }
        match self
            .client
            .set_data(&self.path, encode(value), Some(version))
            .await
        {
            Ok(_) => Ok(true),
            Err(zk_proto::Error::BadVersion | zk_proto::Error::NoNode) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets the count to `value` whatever it was (creating the node when missing); returns
    /// the value at its new version.
    ///
    /// # Errors
    ///
    /// [`Error::Zk`] with the session's end or a refusal. A set whose reply was lost is sent
    /// again (setting the same value twice is harmless).
    ///
    /// # Cancellation safety
    ///
    /// The set is queued when this is called: dropping the future may still apply it.
    pub async fn set(&self, value: i32) -> Result<VersionedCount> {
        let version = force_set(&self.client, &self.path, encode(value)).await?;
        Ok(VersionedCount { value, version })
    }

    /// Adds `delta` to the count (wrapping), retrying on a lost race: read, then set at the
    /// version read, until a set wins (two round trips per try). Returns the new value and
    /// version. Waits at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed first: the add was not applied, unless the
    /// set in flight then wins (read the count to know). [`Error::BadValue`]; [`Error::Zk`]
    /// as [`set_if_version`](Self::set_if_version) (an unknown outcome is not retried).
    ///
    /// # Cancellation safety
    ///
    /// As for a timeout: a set already sent may still win.
    pub async fn add(&self, delta: i32, timeout: Option<Duration>) -> Result<VersionedCount> {
        within(timeout, async {
            loop {
                let current = self.get().await?;
                let value = current.value.wrapping_add(delta);
                match self
                    .client
                    .set_data(&self.path, encode(value), Some(current.version))
                    .await
                {
                    Ok(stat) => {
                        return Ok(VersionedCount {
                            value,
                            version: stat.version,
                        });
                    }
                    Err(zk_proto::Error::BadVersion | zk_proto::Error::NoNode) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        })
        .await?
    }

    /// The changes of the count as a [`Stream`]: first the current value, then a new item
    /// whenever the node changed (see [`CountChanges`]).
    pub fn watch(&self) -> CountChanges {
        let watching = Watching {
            client: self.client.clone(),
            path: self.path.clone(),
            seen: None,
            watch: None,
            ended: false,
        };
        CountChanges {
            inner: Box::pin(futures_util::stream::unfold(watching, Watching::next)),
        }
    }
}

/// The values of a [`SharedCount`] as they change: a [`Stream`] of
/// `Result<`[`VersionedCount`]`>`, from [`SharedCount::watch`].
///
/// The first item is the value when the stream is first polled. Then, each time the node's
/// one-shot data watch fires, the node is read again with a new watch, and the value is an
/// item when the node changed since the last item (its modification zxid differs). Writes
/// that follow each other faster than a watch round trip are seen as one item, the latest:
/// the stream may skip intermediate values, but never ends up behind the node. A missing node
/// is waited for (an `exists` watch) and yields no item; data of the wrong length yields an
/// [`Error::BadValue`] item and the watching goes on. A disconnection is survived (the
/// client re-registers the watches); the end of the session is a last error item, after which
/// the stream ends.
pub struct CountChanges {
    inner: Pin<Box<dyn Stream<Item = Result<VersionedCount>> + Send>>,
}

impl std::fmt::Debug for CountChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountChanges").finish_non_exhaustive()
    }
}

impl CountChanges {
    /// The next item of the stream, waiting at most `timeout` (`None`: no limit).
    ///
    /// # Errors
    ///
    /// [`Error::Timeout`] when `timeout` passed first; the error item itself
    /// ([`Error::BadValue`], the session's end); [`zk_proto::Error::Closed`] (wrapped in
    /// [`Error::Zk`]) once the stream has ended.
    ///
    /// # Cancellation safety
    ///
    /// Cancel-safe: the read or watch in progress stays in the stream for the next call.
    pub async fn changed(&mut self, timeout: Option<Duration>) -> Result<VersionedCount> {
        match within(timeout, self.inner.next()).await? {
            Some(item) => item,
            None => Err(zk_proto::Error::Closed.into()),
        }
    }
}

impl Stream for CountChanges {
    type Item = Result<VersionedCount>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// The state behind [`CountChanges`].
struct Watching {
    client: Client,
    path: String,
    /// The modification zxid of the last item.
    seen: Option<i64>,
    /// The watch set by the last read, to wait on before reading again.
    watch: Option<OneshotWatcher>,
    ended: bool,
}

impl Watching {
    /// Waits for the next change and reads it (with a new watch).
    async fn next(mut self) -> Option<(Result<VersionedCount>, Watching)> {
        if self.ended {
            return None;
        }
        loop {
            if let Some(watch) = self.watch.take()
                && let Err(e) = watch.changed().await
            {
                return Some(self.end(e));
            }
            match self.client.get_data_watch(&self.path).await {
                Ok((data, stat, watch)) => {
                    self.watch = Some(watch);
                    if self.seen == Some(stat.mzxid) {
                        continue;
                    }
                    self.seen = Some(stat.mzxid);
                    let item = decode(&self.path, &data).map(|bytes| VersionedCount {
                        value: i32::from_be_bytes(bytes),
                        version: stat.version,
                    });
                    return Some((item, self));
                }
                Err(zk_proto::Error::NoNode) => {
                    match self.client.exists_watch(&self.path).await {
                        // Created in between: read it.
                        Ok((Some(_), _)) => {}
                        Ok((None, watch)) => self.watch = Some(watch),
                        Err(e) if e.is_retryable() => {}
                        Err(e) => return Some(self.end(e)),
                    }
                }
                Err(e) if e.is_retryable() => {}
                Err(e) => return Some(self.end(e)),
            }
        }
    }

    fn end(mut self, error: zk_proto::Error) -> (Result<VersionedCount>, Watching) {
        self.ended = true;
        (Err(error.into()), self)
    }
}
