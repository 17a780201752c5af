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
//! | `ustring` | `Option<String>` (written as UTF-8, read as Java writes it, below) | `None`, length -1 |
//! | `vector<T>` | `Option<Vec<T>>` | `None`, count -1 |
//! | `vector<ustring>` | `Option<StringList>` (one buffer for all the strings: see [`StringList`](crate::StringList)) | `None`, count -1; a null entry is flagged in the list |
//! | trailing optional `boolean` | `Option<bool>` | `None`: the byte is absent |
//!
//! A record may also declare its last field with a value for when the input ends before it
//! (`read_only: bool = false` in `ConnectRequest`): see [`crate::records`].
//!
//! # Strings from Java
//!
//! ZooKeeper 3.8's writer (`BinaryOutputArchive.writeString`) does not call a UTF-8 encoder: it
//! encodes each UTF-16 code unit on its own. Every character of the Basic Multilingual Plane
//! comes out as standard UTF-8, but a character outside it (a surrogate pair, such as `😀`,
//! U+1F600) becomes two 3-byte surrogate sequences, `ed a0..af xx` `ed b0..bf xx` (CESU-8), and
//! a lone surrogate one such sequence. Servers send strings that way in GetACL, WhoAmI,
//! GetChildren, GetEphemerals and create replies, and in watch events, whenever a string holds
//! such a character (an ACL id or a digest user name can; a path cannot, the server rejects it).
//!
//! Decoding accepts exactly what that writer can produce, plus standard UTF-8:
//!
//! - **Fast path.** Valid UTF-8 (everything a BMP-only string gives, and what we write) is
//!   checked by [`std::str::from_utf8`] alone; only when that fails are surrogate sequences
//!   looked for.
//! - **A surrogate pair** written as a high surrogate sequence (`ed a0..af xx`) followed by a
//!   low one (`ed b0..bf xx`) becomes the character it encodes: the value the Java side
//!   serialized.
//! - **Any other surrogate sequence** (a lone high or low surrogate, a low before a high)
//!   becomes one U+FFFD per 3-byte sequence, never an error. Rust strings cannot hold a lone
//!   surrogate; this is what Java's own reader gives for each surrogate sequence
//!   (`BinaryInputArchive.readString` is `new String(bytes, UTF_8)`, which on Java 17 yields one
//!   U+FFFD per 3-byte surrogate sequence, so a Java reader turns a valid pair into two U+FFFD
//!   where we give the character), and it equals `String::from_utf16_lossy` of the code units
//!   the Java side wrote.
//! - **Every other invalid byte** (`ff`, an overlong form, a truncated sequence, a stray
//!   continuation byte) is still [`DecodeErrorKind::InvalidUtf8`]. No Java writer produces
//!   them: its output for any Java string is UTF-8 except for the surrogate sequences above.
//!   Such bytes mean a corrupted stream or a peer that is not ZooKeeper, and (as with booleans)
//!   we report that rather than let Java's reader hide it behind U+FFFD.
//!
//! Decoding a string allocates at most its own (already received) length. Encoding always writes
//! standard UTF-8 (a character outside the BMP as its 4 bytes), which Java's reader decodes
//! correctly; so a string decoded from the Java form re-encodes to other bytes than it came from
//! (6 bytes of a pair become 4, a lone surrogate's 3 become U+FFFD's 3), but to the same value.

use std::borrow::Cow;

use bytes::{BufMut, Bytes};

use crate::error::{DecodeError, DecodeErrorKind};
use crate::reader::{Decode, Encode, Reader};

/// The length prefix written for a null buffer, string or vector.
pub(crate) const NULL_LEN: i32 = -1;

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
/// appends to ConnectResponse by hand, which servers older than 3.4 (and 3.4+ servers answering
/// a client that did not send the flag) do not send. `None` encodes as nothing.
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

pub(crate) fn encode_len<B: BufMut>(len: Option<usize>, buf: &mut B) {
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

/// `ustring`: a length-prefixed string, written as standard UTF-8 and read as Java writes it
/// (see [Strings from Java](self#strings-from-java)).
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
            Some(len) => reader.read_borrowed(len, decode_string)?.map(Some),
        }
    }
}

/// Decodes the bytes of a `ustring` as [Java writes them](self#strings-from-java), owned.
fn decode_string(raw: &[u8]) -> Result<String, DecodeError> {
    decode_str(raw).map(Cow::into_owned)
}

/// Decodes the bytes of a `ustring` as [Java writes them](self#strings-from-java): standard
/// UTF-8 on the fast path (a plain [`std::str::from_utf8`]), borrowed; only if that fails,
/// surrogate sequences are looked for, into a string of its own. The one string decoder of
/// the owned records and of their views.
pub(crate) fn decode_str(raw: &[u8]) -> Result<Cow<'_, str>, DecodeError> {
    match std::str::from_utf8(raw) {
        Ok(text) => Ok(Cow::Borrowed(text)),
        Err(_) => {
            let mut out = String::with_capacity(raw.len());
            push_with_surrogates(&mut out, raw)
                .ok_or_else(|| DecodeError::new(DecodeErrorKind::InvalidUtf8))?;
            Ok(Cow::Owned(out))
        }
    }
}

/// Appends the bytes of a `ustring`, decoded as [`decode_string`] does, to `out`: at most
/// `raw.len()` bytes. On error `out` may hold part of the string.
pub(crate) fn push_string(out: &mut String, raw: &[u8]) -> Result<(), DecodeError> {
    match std::str::from_utf8(raw) {
        Ok(text) => {
            out.push_str(text);
            Ok(())
        }
        Err(_) => push_with_surrogates(out, raw)
            .ok_or_else(|| DecodeError::new(DecodeErrorKind::InvalidUtf8)),
    }
}

/// The slow path of [`decode_string`]: UTF-8 in which UTF-16 surrogates may appear as 3-byte
/// sequences, appended to `out`. A high surrogate sequence followed by a low one is the
/// character they encode together; any other surrogate sequence is one U+FFFD. `None` for any
/// other invalid byte.
///
/// What is appended is never longer than `raw` (6 bytes become 4, 3 bytes become the 3 of
/// U+FFFD), and `raw` is a slice of received bytes, so any reservation for it is bounded by the
/// input.
fn push_with_surrogates(out: &mut String, raw: &[u8]) -> Option<()> {
    let mut rest = raw;
    loop {
        let valid_len = match std::str::from_utf8(rest) {
            Ok(text) => {
                out.push_str(text);
                return Some(());
            }
            Err(error) => error.valid_up_to(),
        };
        let (valid, tail) = rest.split_at(valid_len);
        // Valid by construction; checked again rather than trusted (no unsafe in this crate).
        out.push_str(std::str::from_utf8(valid).ok()?);
        let first = surrogate_at(tail)?;
        let pair = match (first, tail.get(3..).and_then(surrogate_at)) {
            (0xd800..=0xdbff, Some(second @ 0xdc00..=0xdfff)) => {
                char::from_u32(0x1_0000 + ((first - 0xd800) << 10) + (second - 0xdc00))
            }
            _ => None,
        };
        let (ch, used) = match pair {
            Some(ch) => (ch, 6),
            None => (char::REPLACEMENT_CHARACTER, 3),
        };
        out.push(ch);
        rest = tail.get(used..)?;
    }
}

/// The UTF-16 surrogate (U+D800 to U+DFFF) whose 3-byte sequence `ed a0..bf 80..bf` starts
/// `bytes`, as Java's writer encodes it.
fn surrogate_at(bytes: &[u8]) -> Option<u32> {
    match *bytes {
        [0xed, second @ 0xa0..=0xbf, third @ 0x80..=0xbf, ..] => {
            Some(0xd000 | (u32::from(second & 0x3f) << 6) | u32::from(third & 0x3f))
        }
        _ => None,
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
/// need at least `count * T::MIN_LEN` bytes (`count` bytes for a type whose `MIN_LEN` is 0), so
/// `count` is at most the bytes left over `T::MIN_LEN`. Then `count` elements are reserved at
/// once (no reallocation while decoding): that reservation is at most
/// `size_of::<T>() / T::MIN_LEN` times the bytes of the input (an ACL entry takes 56 bytes in
/// memory and at least 12 on the wire: under 5 times), so no allocation is sized by a count the
/// input does not back.
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
        let mut items = Vec::with_capacity(count);
        for _ in 0..count {
            items.push(T::decode(reader)?);
        }
        Ok(Some(items))
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::reader::decode_exact;

    /// What ZooKeeper 3.8's `BinaryOutputArchive.writeString` writes for a string of UTF-16
    /// code units: each unit on its own, 1 to 3 bytes.
    fn java_write(units: &[u16]) -> Vec<u8> {
        let mut out = Vec::new();
        for &unit in units {
            let c = u32::from(unit);
            if c < 0x80 {
                out.push(c as u8);
            } else if c < 0x800 {
                out.extend([0xc0 | (c >> 6) as u8, 0x80 | (c & 0x3f) as u8]);
            } else {
                out.extend([
                    0xe0 | (c >> 12) as u8,
                    0x80 | ((c >> 6) & 0x3f) as u8,
                    0x80 | (c & 0x3f) as u8,
                ]);
            }
        }
        out
    }

    /// An independent, slow reference of the decoding: reads the bytes one sequence at a time
    /// into UTF-16 code units (a 3-byte surrogate sequence gives its unit, anything else must
    /// be a UTF-8 character), then joins them as `String::from_utf16_lossy` does.
    fn reference_decode(bytes: &[u8]) -> Option<String> {
        let mut units = Vec::new();
        let mut at = 0;
        while at < bytes.len() {
            let width = match bytes[at] {
                0x00..=0x7f => 1,
                0xc2..=0xdf => 2,
                0xe0..=0xef => 3,
                0xf0..=0xf4 => 4,
                _ => return None,
            };
            let sequence = bytes.get(at..at + width)?;
            match *sequence {
                [0xed, b1 @ 0xa0..=0xbf, b2 @ 0x80..=0xbf] => {
                    units.push(0xd000 | (u16::from(b1 & 0x3f) << 6) | u16::from(b2 & 0x3f));
                }
                _ => units.extend(std::str::from_utf8(sequence).ok()?.encode_utf16()),
            }
            at += width;
        }
        Some(String::from_utf16_lossy(&units))
    }

    fn decode_str(bytes: &[u8]) -> Result<String, DecodeError> {
        let mut framed = (bytes.len() as i32).to_be_bytes().to_vec();
        framed.extend_from_slice(bytes);
        decode_exact::<Option<String>>(Bytes::from(framed)).map(|s| s.unwrap_or_default())
    }

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// A vector of `count` ACL entries in their smallest form (12 bytes: perms, null scheme,
    /// null id), of which `entries` are present.
    fn smallest_acls(count: i32, entries: usize) -> Vec<u8> {
        let mut raw = count.to_be_bytes().to_vec();
        for _ in 0..entries {
            raw.extend([0, 0, 0, 31]);
            raw.extend((-1i32).to_be_bytes());
            raw.extend((-1i32).to_be_bytes());
        }
        raw
    }

    #[test]
    fn a_vector_reserves_its_count_once_bounded_by_the_input() {
        use crate::records::Acl;
        for count in [0, 1, 2, 3, 50] {
            let raw = smallest_acls(count as i32, count);
            let acl = decode_exact::<Option<Vec<Acl>>>(Bytes::from(raw.clone()))
                .unwrap()
                .unwrap();
            assert_eq!(acl.len(), count);
            // One reservation of exactly `count` (no growth while decoding), and what it takes
            // is within size_of::<Acl>() / Acl::MIN_LEN times the input.
            assert_eq!(acl.capacity(), count);
            let reserved = count * std::mem::size_of::<Acl>();
            assert!(reserved <= raw.len() * std::mem::size_of::<Acl>() / Acl::MIN_LEN);
        }
    }

    #[test]
    fn a_vector_count_the_input_cannot_back_reserves_nothing() {
        use crate::records::Acl;
        // Two entries present, a million declared: refused before any reservation.
        let raw = smallest_acls(1_000_000, 2);
        let err = decode_exact::<Option<Vec<Acl>>>(Bytes::from(raw)).unwrap_err();
        assert_eq!(
            err.kind(),
            &DecodeErrorKind::CountExceedsInput {
                count: 1_000_000,
                needed: 12_000_000,
                remaining: 24
            }
        );
        // A count the input backs at 12 bytes an entry, with longer entries than that: the
        // reservation (count entries) stays within the bound, then the input runs out.
        let mut raw = 4i32.to_be_bytes().to_vec();
        raw.extend([0, 0, 0, 31]);
        raw.extend(Some("x".repeat(40)).to_bytes());
        raw.extend((-1i32).to_be_bytes());
        assert_eq!(raw.len() - 4, 52);
        let err = decode_exact::<Option<Vec<Acl>>>(Bytes::from(raw)).unwrap_err();
        assert!(
            matches!(err.kind(), DecodeErrorKind::UnexpectedEnd { .. }),
            "{err}"
        );
    }

    #[test]
    fn surrogate_sequences_decode_to_the_character_or_one_replacement_each() {
        let cases: &[(&str, &str)] = &[
            // A pair in Java's form, alone and between other characters.
            ("eda0bdedb880", "😀"),
            ("41eda0bdedb88042", "A😀B"),
            // Standard UTF-8 of the same character, and both forms in one string.
            ("f09f9880", "😀"),
            ("f09f9880eda0bdedb880", "😀😀"),
            // Lone high, lone low, reversed pair, high high low, a high at the end: one U+FFFD
            // per unpaired sequence, as Java's reader gives.
            ("eda080", "\u{fffd}"),
            ("edb080", "\u{fffd}"),
            ("edb880eda0bd", "\u{fffd}\u{fffd}"),
            ("eda0bdeda0bdedb880", "\u{fffd}😀"),
            ("2f6c6f6e65eda080", "/lone\u{fffd}"),
            ("eda0bd41", "\u{fffd}A"),
            // A lone high before a standard 4-byte character does not pair with it.
            ("eda0bdf09f9880", "\u{fffd}😀"),
            // The largest pair, U+10FFFF, and the last BMP character before the surrogates.
            ("edafbfedbfbf", "\u{10ffff}"),
            ("ed9fbf", "\u{d7ff}"),
        ];
        for (hex, expected) in cases {
            assert_eq!(decode_str(&unhex(hex)).as_deref(), Ok(*expected), "{hex}");
        }
    }

    #[test]
    fn bytes_no_java_writer_produces_are_invalid_utf8() {
        for hex in [
            "ff",
            "c080",
            "e080",
            "f0808080",
            "f4908080",
            "80",
            "ed",
            "eda0",
            "eda0bdedb8",
            "41eda0",
            "eda0bdff",
        ] {
            let error = decode_str(&unhex(hex)).expect_err(hex);
            assert_eq!(*error.kind(), DecodeErrorKind::InvalidUtf8, "{hex}");
        }
    }

    #[test]
    fn strings_are_written_as_standard_utf8() {
        let text = Some("us😀er".to_owned());
        assert_eq!(
            &text.to_bytes()[..],
            b"\x00\x00\x00\x08us\xf0\x9f\x98\x80er"
        );
    }

    /// Code units as a Java string may hold them: ASCII, other BMP characters, and surrogates
    /// of both kinds in any order (so pairs, lone ones and reversed ones all occur).
    fn java_units() -> impl Strategy<Value = Vec<u16>> {
        proptest::collection::vec(
            prop_oneof![
                0x20u16..0x80,
                0x80u16..0xd800,
                0xe000u16..=0xffff,
                0xd800u16..0xdc00,
                0xdc00u16..0xe000,
                Just(0xd83d),
                Just(0xde00),
            ],
            0..24,
        )
    }

    /// Byte strings made of pieces that matter here: UTF-8 characters, surrogate sequences,
    /// and arbitrary bytes.
    fn mixed_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                any::<char>().prop_map(|c| c.to_string().into_bytes()),
                (0xa0u8..=0xbf, 0x80u8..=0xbf).prop_map(|(b1, b2)| vec![0xed, b1, b2]),
                any::<u8>().prop_map(|b| vec![b]),
            ],
            0..16,
        )
        .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn what_java_writes_decodes_as_java_meant(units in java_units()) {
            let decoded = decode_str(&java_write(&units));
            prop_assert_eq!(decoded, Ok(String::from_utf16_lossy(&units)));
        }

        #[test]
        fn any_string_survives_java_encoding_and_ours(text in "\\PC{0,16}") {
            let units: Vec<u16> = text.encode_utf16().collect();
            prop_assert_eq!(decode_str(&java_write(&units)), Ok(text.clone()));
            prop_assert_eq!(decode_str(text.as_bytes()), Ok(text));
        }

        #[test]
        fn decoding_agrees_with_the_reference_and_never_grows(bytes in mixed_bytes()) {
            let decoded = decode_str(&bytes);
            prop_assert_eq!(decoded.clone().ok(), reference_decode(&bytes));
            match decoded {
                Ok(text) => prop_assert!(text.len() <= bytes.len()),
                Err(e) => prop_assert_eq!(e.kind(), &DecodeErrorKind::InvalidUtf8),
            }
        }
    }
}
