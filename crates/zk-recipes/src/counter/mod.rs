//! Counters on one node: a shared 32-bit count ([`SharedCount`]) and an atomic 64-bit long
//! ([`AtomicLong`]), both updated by versioned compare-and-set (`setData` at the version that
//! was read), both interoperable with Apache Curator on the same path.
//!
//! - [`SharedCount`] is Curator's `SharedCount`: the node holds the count as a **4-byte
//!   big-endian** `int`; a read gives the count and the node's version, a set at that version
//!   wins or loses (a lost race is `false`, never an error), `add` retries until it wins, and
//!   [`SharedCount::watch`] is a stream of the new values.
//! - [`AtomicLong`] is Curator's `DistributedAtomicLong` (optimistic mode): the node holds an
//!   **8-byte big-endian** `long` (a missing or empty node reads as 0); every update returns an
//!   [`AtomicValue`] (succeeded, value before, value after) and is retried on a lost race as
//!   the [`RetryPolicy`] allows. Curator's promotion to a lock (`PromotedToLock`) is not
//!   supported.
//!
//! Data of another length is refused with [`Error::BadValue`] (never read as a number).
//!
//! # Timeouts
//!
//! The calls that only send requests take no timeout ([`SharedCount::get`],
//! [`set`](SharedCount::set), [`set_if_version`](SharedCount::set_if_version) and every
//! [`AtomicLong`] call, whose retries the [`RetryPolicy`] bounds); their requests are bounded
//! by the client's request timeout when one is set. [`SharedCount::add`], which retries until
//! it wins, and [`CountChanges::changed`] take `timeout: Option<Duration>` as their last
//! argument (see the [crate documentation](crate#timeouts)).
//!
//! # Lost replies
//!
//! A read whose connection dropped is sent again. A write whose reply was lost (its error
//! [`is_outcome_unknown`](zk_proto::Error::is_outcome_unknown): `ConnectionLoss`,
//! `RequestTimeout`) may or may not have been applied; a conditional write (a set at a version,
//! an increment) is then **not** retried, since a retry could apply it twice: the error is
//! returned and the caller reads the value again to learn the outcome. An unconditional
//! [`SharedCount::set`] or [`AtomicLong::force_set`] is retried (applying it twice changes
//! nothing).

mod atomic;
mod retry;
mod shared;

use bytes::Bytes;
use zk_proto::{Client, CreateOptions, Stat};

use crate::{Error, Result};

pub use atomic::{AtomicLong, AtomicStats, AtomicValue};
pub use retry::RetryPolicy;
pub use shared::{CountChanges, SharedCount, VersionedCount};

/// A counter node's path without a trailing `/` (the root stays `/`).
fn normalize(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() { "/" } else { trimmed }.to_owned()
}

/// The node's data as a fixed-width big-endian number of `N` bytes; [`Error::BadValue`] for
/// another length.
pub(crate) fn decode<const N: usize>(path: &str, data: &[u8]) -> Result<[u8; N]> {
    <[u8; N]>::try_from(data).map_err(|_| Error::BadValue {
        path: path.to_owned(),
        expected: N,
        found: data.len(),
    })
}

/// Reads the node, sending the read again when its connection dropped. `None`: no node.
async fn read(client: &Client, path: &str) -> Result<Option<(Bytes, Stat)>> {
    loop {
        match client.get_data(path).await {
            Ok(found) => return Ok(Some(found)),
            Err(zk_proto::Error::NoNode) => return Ok(None),
            Err(zk_proto::Error::ConnectionLoss) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Creates the counter node (persistent) holding `data`, and its missing ancestors as
/// container nodes, as Curator's `creatingParentContainersIfNeeded`. `Ok(false)`: the node
/// exists already. An unknown outcome is returned as an error.
async fn create(client: &Client, path: &str, data: Bytes) -> Result<bool> {
    loop {
        match client
            .create(path, data.clone(), &CreateOptions::persistent())
            .await
        {
            Ok(_) => return Ok(true),
            Err(zk_proto::Error::NodeExists) => return Ok(false),
            Err(zk_proto::Error::NoNode) => match path.rsplit_once('/') {
                Some((parent, _)) if !parent.is_empty() => {
                    crate::lock::ensure_parents(client, parent).await?;
                }
                _ => return Err(zk_proto::Error::NoNode.into()),
            },
            Err(e) => return Err(e.into()),
        }
    }
}

/// Sets the node's data whatever its version, creating it when missing; retried when the
/// outcome is unknown (setting the same data twice changes nothing). Returns the node's new
/// version (0 when this created it).
async fn force_set(client: &Client, path: &str, data: Bytes) -> Result<i32> {
    loop {
        match client.set_data(path, data.clone(), None).await {
            Ok(stat) => return Ok(stat.version),
            Err(zk_proto::Error::NoNode) => match create(client, path, data.clone()).await {
                Ok(true) => return Ok(0),
                // Created by someone else in between: set it.
                Ok(false) => {}
                Err(Error::Zk(e)) if e.is_outcome_unknown() => {}
                Err(e) => return Err(e),
            },
            Err(e) if e.is_outcome_unknown() => {}
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_width_decodes() {
        assert_eq!(decode::<4>("/c", &[0, 0, 1, 0]), Ok([0, 0, 1, 0]));
        for bad in [&[][..], &[1, 2, 3], &[1, 2, 3, 4, 5]] {
            assert_eq!(
                decode::<4>("/c", bad),
                Err(Error::BadValue {
                    path: "/c".into(),
                    expected: 4,
                    found: bad.len()
                })
            );
        }
        assert_eq!(normalize("/a/b/"), "/a/b");
        assert_eq!(normalize("/"), "/");
    }
}
