//! The jute primitive types: `int`, `long`, `boolean`, `buffer`, `ustring` and `vector`.
//!
//! The Rust type of a record field decides its wire form:
//!
//! | jute | Rust | null |
//! | --- | --- | --- |
//! | `int` | `i32` (or a code newtype over it) | n/a |
//! | `long` | `i64` | n/a |
//! | `boolean` | `bool` (only bytes 0 and 1 are accepted) | n/a |
//! | `buffer` | `Option<Bytes>` | `None`, length -1 |
//! | `ustring` | `Option<String>` (UTF-8 checked) | `None`, length -1 |
//! | `vector<T>` | `Option<Vec<T>>` | `None`, count -1 |
//! | trailing optional `boolean` | `Option<bool>` | `None`: the byte is absent |

use bytes::{BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::reader::{Decode, Encode, Reader};

/// The length prefix written for a null buffer, string or vector.
const NULL_LEN: i32 = -1;

impl Encode for i32 {
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i32(*self);
    }
}

impl Decode for i32 {
    const MIN_LEN: usize = 4;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        reader.read_i32()
    }
}

impl Encode for i64 {
    fn encoded_len(&self) -> usize {
        8
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_i64(*self);
    }
}

impl Decode for i64 {
    const MIN_LEN: usize = 8;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        reader.read_i64()
    }
}

impl Encode for bool {
    fn encoded_len(&self) -> usize {
        1
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        buf.put_u8(u8::from(*self));
    }
}

/// Java's reader takes any non-zero byte as true; we accept only what a writer produces, so a
/// corrupted byte is noticed instead of silently read as true.
impl Decode for bool {
    const MIN_LEN: usize = 1;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        match reader.read_u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(DecodeError::new(DecodeErrorKind::InvalidBool(other))),
        }
    }
}

/// A boolean that may be missing at the very end of a record: the `readOnly` flag that 3.8
/// appends to ConnectRequest and ConnectResponse by hand, which servers and clients older than
/// 3.4 do not send. `None` encodes as nothing.
impl Encode for Option<bool> {
    fn encoded_len(&self) -> usize {
        usize::from(self.is_some())
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        if let Some(flag) = self {
            flag.encode(buf);
        }
    }
}

impl Decode for Option<bool> {
    const MIN_LEN: usize = 0;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        if reader.is_empty() {
            Ok(None)
        } else {
            bool::decode(reader).map(Some)
        }
    }
}

fn encode_len<B: BufMut>(len: Option<usize>, buf: &mut B) {
    let prefix = match len {
        None => NULL_LEN,
        // Lengths come from values we hold in memory; a record over 2 GiB cannot be sent anyway
        // (the frame codec refuses anything over its limit, far below i32::MAX).
        Some(len) => i32::try_from(len).unwrap_or(i32::MAX),
    };
    buf.put_i32(prefix);
}

/// `buffer`: a length-prefixed byte string, decoded as a slice of the input (no copy).
impl Encode for Option<Bytes> {
    fn encoded_len(&self) -> usize {
        4 + self.as_ref().map_or(0, Bytes::len)
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        encode_len(self.as_ref().map(Bytes::len), buf);
        if let Some(data) = self {
            buf.put_slice(data);
        }
    }
}

impl Decode for Option<Bytes> {
    const MIN_LEN: usize = 4;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        match reader.read_len()? {
            None => Ok(None),
            Some(len) => reader.read_slice(len).map(Some),
        }
    }
}

/// `ustring`: a length-prefixed UTF-8 string.
///
/// Java writes characters outside the Basic Multilingual Plane as two 3-byte surrogate
/// sequences (CESU-8); we write standard UTF-8, which every reader (Java's included) decodes
/// correctly, and reject surrogate sequences on input with [`DecodeErrorKind::InvalidUtf8`].
impl Encode for Option<String> {
    fn encoded_len(&self) -> usize {
        4 + self.as_ref().map_or(0, String::len)
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        encode_len(self.as_ref().map(String::len), buf);
        if let Some(text) = self {
            buf.put_slice(text.as_bytes());
        }
    }
}

impl Decode for Option<String> {
    const MIN_LEN: usize = 4;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        match reader.read_len()? {
            None => Ok(None),
            Some(len) => {
                let raw = reader.read_slice(len)?;
                let text = std::str::from_utf8(&raw)
                    .map_err(|_| DecodeError::new(DecodeErrorKind::InvalidUtf8))?;
                Ok(Some(text.to_owned()))
            }
        }
    }
}

/// `vector<T>`: a count followed by the elements.
impl<T: Encode> Encode for Option<Vec<T>> {
    fn encoded_len(&self) -> usize {
        4 + self
            .as_ref()
            .map_or(0, |items| items.iter().map(Encode::encoded_len).sum())
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        encode_len(self.as_ref().map(Vec::len), buf);
        for item in self.iter().flatten() {
            item.encode(buf);
        }
    }
}

/// The count is checked against the bytes left before anything is reserved: `count` elements
/// need at least `count * T::MIN_LEN` bytes. The first reservation is further capped by the bytes
/// left, so no allocation is sized by an untrusted number.
impl<T: Decode> Decode for Option<Vec<T>> {
    const MIN_LEN: usize = 4;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        let Some(count) = reader.read_len()? else {
            return Ok(None);
        };
        let needed = count.saturating_mul(T::MIN_LEN.max(1));
        if needed > reader.remaining() {
            return Err(DecodeError::new(DecodeErrorKind::CountExceedsInput {
                count,
                needed,
                remaining: reader.remaining(),
            }));
        }
        let capacity = count.min(reader.remaining() / std::mem::size_of::<T>().max(1));
        let mut items = Vec::with_capacity(capacity);
        for _ in 0..count {
            items.push(T::decode(reader)?);
        }
        Ok(Some(items))
    }
}
