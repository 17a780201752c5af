//! Curator's bytes and names: the item data (`ItemSerializer`: a version, then each item as a
//! marker and length-prefixed bytes, then an end marker) and the item node names of each queue
//! kind (`DistributedQueue`, `DistributedIdQueue`, `DistributedPriorityQueue`,
//! `DistributedDelayQueue`, Curator 5.4).

use std::cmp::Ordering;

use bytes::{BufMut, Bytes, BytesMut};

/// The name prefix of every item node (Curator's `QUEUE_ITEM_NAME`); the server appends a
/// 10-digit sequence number, after the kind's part (an id, a priority, a time).
pub const ITEM_PREFIX: &str = "queue-";

/// `ItemSerializer.VERSION`: the first 4 bytes (big-endian) of every item node's data.
const VERSION: i32 = 0x0001_0001;
/// `ItemSerializer.ITEM_OPCODE`: an item follows (4-byte big-endian length, then its bytes).
const ITEM_OPCODE: u8 = 0x01;
/// `ItemSerializer.EOF_OPCODE`: no more items.
const EOF_OPCODE: u8 = 0x02;
/// The separator around an id (`DistributedIdQueue`) or a time (`DistributedDelayQueue`).
const SEPARATOR: char = '|';

/// Why an item node's data is not in Curator's `ItemSerializer` format. The node was written
/// by another process (network data): it is reported, never a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ItemFormatError {
    /// The data ends before the version, a marker, a length or an item's bytes.
    #[error("the item data ends early (at byte {at})")]
    Truncated {
        /// Where the missing bytes start.
        at: usize,
    },
    /// The version is not Curator's `0x00010001`.
    #[error("item data version {found:#010x}, not 0x00010001")]
    Version {
        /// The version found.
        found: i32,
    },
    /// A marker is neither 1 (an item) nor 2 (the end).
    #[error("item marker {found} at byte {at}, not 1 (item) or 2 (end)")]
    Marker {
        /// The marker found.
        found: u8,
        /// Its position.
        at: usize,
    },
    /// An item's length is negative.
    #[error("negative item length {found} at byte {at}")]
    Length {
        /// The length found.
        found: i32,
        /// Its position.
        at: usize,
    },
    /// Bytes follow the end marker (Curator ignores them; they are reported, not dropped
    /// silently).
    #[error("{count} bytes after the end marker")]
    Trailing {
        /// How many.
        count: usize,
    },
}

/// The data of one item node holding `items`, as Curator's `ItemSerializer.serialize` writes
/// it.
pub fn serialize<I>(items: I) -> Bytes
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut out = BytesMut::with_capacity(16);
    out.put_i32(VERSION);
    for item in items {
        let item = item.as_ref();
        out.put_u8(ITEM_OPCODE);
        // An item over 2 GiB cannot be in a ZooKeeper node (the server's packet limit is far
        // lower); saturate rather than wrap, the server refuses the create.
        out.put_i32(i32::try_from(item.len()).unwrap_or(i32::MAX));
        out.put_slice(item);
    }
    out.put_u8(EOF_OPCODE);
    out.freeze()
}

/// The items of one item node's data (`ItemSerializer.deserialize`), each a slice of `data`.
pub fn deserialize(data: &Bytes) -> Result<Vec<Bytes>, ItemFormatError> {
    let mut at = 0;
    let version = i32::from_be_bytes(take(data, &mut at, 4)?.try_into().unwrap_or([0; 4]));
    if version != VERSION {
        return Err(ItemFormatError::Version { found: version });
    }
    let mut items = Vec::new();
    loop {
        let marker_at = at;
        let marker = take(data, &mut at, 1)?[0];
        match marker {
            EOF_OPCODE => break,
            ITEM_OPCODE => {}
            found => {
                return Err(ItemFormatError::Marker {
                    found,
                    at: marker_at,
                });
            }
        }
        let length_at = at;
        let length = i32::from_be_bytes(take(data, &mut at, 4)?.try_into().unwrap_or([0; 4]));
        let Ok(length) = usize::try_from(length) else {
            return Err(ItemFormatError::Length {
                found: length,
                at: length_at,
            });
        };
        let start = at;
        take(data, &mut at, length)?;
        items.push(data.slice(start..at));
    }
    match data.len() - at {
        0 => Ok(items),
        count => Err(ItemFormatError::Trailing { count }),
    }
}

/// The next `n` bytes of `data` from `*at`, advancing `*at`; checked before any use.
fn take<'a>(data: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], ItemFormatError> {
    let end = at
        .checked_add(n)
        .filter(|end| *end <= data.len())
        .ok_or(ItemFormatError::Truncated { at: *at })?;
    let slice = &data[*at..end];
    *at = end;
    Ok(slice)
}

/// `DistributedPriorityQueue.priorityToString`: `1` then the 8 hex digits of a priority >= 0,
/// `0` then those of the two's complement of a negative one, so that the names sort as the
/// priorities do (lower first).
pub(super) fn priority_part(priority: i32) -> String {
    let sign = if priority >= 0 { '1' } else { '0' };
    // Java's `(long) priority & 0xFFFFFFFFL`: the bits of the `int`.
    format!("{sign}{:08X}", priority as u32)
}

/// `DistributedDelayQueue.epochToString`: `|<hex millis since the epoch>|`.
pub(super) fn delay_part(epoch_ms: i64) -> String {
    format!("{SEPARATOR}{epoch_ms:08X}{SEPARATOR}")
}

/// `DistributedIdQueue.makeIdPath`'s part: `|<id>|`, with `/` and `|` in the id replaced by
/// `_` (Curator's `fixId`).
pub(super) fn id_part(id: &str) -> String {
    let fixed: String = id
        .chars()
        .map(|c| if c == '/' || c == SEPARATOR { '_' } else { c })
        .collect();
    format!("{SEPARATOR}{fixed}{SEPARATOR}")
}

/// `DistributedIdQueue.parseId`: the id of an item node and its name without `|<id>|` (the
/// order key). A name without two separators is its own id and key, as in Curator.
pub(super) fn parse_id(name: &str) -> (&str, String) {
    let Some(first) = name.find(SEPARATOR) else {
        return (name, name.to_owned());
    };
    let Some(second) = name[first + 1..].find(SEPARATOR).map(|i| first + 1 + i) else {
        return (name, name.to_owned());
    };
    (
        &name[first + 1..second],
        format!("{}{}", &name[..first], &name[second + 1..]),
    )
}

/// `DistributedDelayQueue.getEpoch`: the time (milliseconds since the epoch) between the last
/// two separators of an item node's name; 0 (due now) when there is none or it is not hex.
pub(super) fn epoch_of(name: &str) -> i64 {
    let Some(second) = name.rfind(SEPARATOR) else {
        return 0;
    };
    let Some(first) = name[..second].rfind(SEPARATOR) else {
        return 0;
    };
    if first == 0 || second <= first + 1 {
        return 0;
    }
    i64::from_str_radix(&name[first + 1..second], 16).unwrap_or(0)
}

/// Curator's order of item nodes for a queue of `kind` (`sortChildren`): plain names for the
/// FIFO and the priority queue (the priority comes before the sequence number), the name
/// without the id for the id queue, the time for the delay queue (then the name, where
/// Curator keeps the listing's order).
pub(crate) fn compare(kind: super::Kind, a: &str, b: &str) -> Ordering {
    use super::Kind;
    match kind {
        Kind::Fifo | Kind::Priority => a.cmp(b),
        Kind::Id => parse_id(a).1.cmp(&parse_id(b).1),
        Kind::Delay => epoch_of(a).cmp(&epoch_of(b)).then_with(|| a.cmp(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bytes_are_curators() {
        // ItemSerializer.serialize of ["ab", ""]: version, 01 len "ab", 01 len 0, 02.
        let data = serialize([&b"ab"[..], &b""[..]]);
        assert_eq!(
            &data[..],
            &[0, 1, 0, 1, 1, 0, 0, 0, 2, b'a', b'b', 1, 0, 0, 0, 0, 2][..]
        );
        assert_eq!(
            deserialize(&data),
            Ok(vec![Bytes::from_static(b"ab"), Bytes::new()])
        );
        assert_eq!(deserialize(&serialize::<[&[u8]; 0]>([])), Ok(vec![]));
    }

    #[test]
    fn malformed_data_is_a_typed_error() {
        let good = serialize([&b"xyz"[..]]);
        for cut in 0..good.len() {
            assert!(
                matches!(
                    deserialize(&good.slice(..cut)),
                    Err(ItemFormatError::Truncated { .. })
                ),
                "cut at {cut}"
            );
        }
        assert_eq!(
            deserialize(&Bytes::from_static(&[0, 1, 0, 2, 2])),
            Err(ItemFormatError::Version { found: 0x0001_0002 })
        );
        assert_eq!(
            deserialize(&Bytes::from_static(&[0, 1, 0, 1, 7])),
            Err(ItemFormatError::Marker { found: 7, at: 4 })
        );
        assert_eq!(
            deserialize(&Bytes::from_static(&[
                0, 1, 0, 1, 1, 0xFF, 0xFF, 0xFF, 0xFF
            ])),
            Err(ItemFormatError::Length { found: -1, at: 5 })
        );
        assert_eq!(
            deserialize(&Bytes::from_static(&[
                0, 1, 0, 1, 1, 0x7F, 0xFF, 0xFF, 0xFF, 2
            ])),
            Err(ItemFormatError::Truncated { at: 9 })
        );
        assert_eq!(
            deserialize(&Bytes::from_static(&[0, 1, 0, 1, 2, 9])),
            Err(ItemFormatError::Trailing { count: 1 })
        );
    }

    #[test]
    fn any_bytes_decode_without_a_panic() {
        let mut rng = fastrand::Rng::with_seed(29);
        for _ in 0..20_000 {
            let len = rng.usize(..24);
            let mut data: Vec<u8> = (0..len).map(|_| rng.u8(..4)).collect();
            if rng.bool() && data.len() >= 4 {
                data[..4].copy_from_slice(&[0, 1, 0, 1]);
            }
            let data = Bytes::from(data);
            if let Ok(items) = deserialize(&data) {
                assert_eq!(
                    serialize(&items),
                    data,
                    "a decoded item re-encodes to its bytes"
                );
            }
        }
    }

    #[test]
    fn names_are_curators() {
        // DistributedPriorityQueue.priorityToString.
        assert_eq!(priority_part(0), "100000000");
        assert_eq!(priority_part(10), "10000000A");
        assert_eq!(priority_part(i32::MAX), "17FFFFFFF");
        assert_eq!(priority_part(-1), "0FFFFFFFF");
        assert_eq!(priority_part(i32::MIN), "080000000");
        let mut sorted = [5, -3, 0, i32::MIN, i32::MAX, -1].map(priority_part);
        sorted.sort();
        assert_eq!(
            sorted,
            [i32::MIN, -3, -1, 0, 5, i32::MAX].map(priority_part)
        );
        // DistributedDelayQueue.epochToString and getEpoch.
        assert_eq!(delay_part(0x18C_0000_0000), "|18C00000000|");
        assert_eq!(delay_part(255), "|000000FF|");
        assert_eq!(epoch_of("queue-|18C00000000|0000000007"), 0x18C_0000_0000);
        assert_eq!(epoch_of("queue-0000000007"), 0);
        assert_eq!(epoch_of("queue-||0000000007"), 0);
        assert_eq!(epoch_of("queue-|zz|0000000007"), 0);
        // DistributedIdQueue.fixId and parseId.
        assert_eq!(id_part("a/b|c"), "|a_b_c|");
        assert_eq!(
            parse_id("queue-|job-1|0000000003"),
            ("job-1", "queue-0000000003".to_owned())
        );
        assert_eq!(
            parse_id("queue-0000000003"),
            ("queue-0000000003", "queue-0000000003".to_owned())
        );
    }
}
