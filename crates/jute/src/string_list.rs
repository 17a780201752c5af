//! [`StringList`]: a list of strings in one buffer, the type of every `vector<ustring>` field.

use std::fmt;

use bytes::BufMut;

use crate::error::{DecodeError, DecodeErrorKind};
use crate::primitive::{NULL_LEN, encode_len, push_string};
use crate::reader::{Decode, Encode, Reader};

/// The flag of a null entry in [`StringList::ends`]. A `String` is never longer than
/// `isize::MAX` bytes, so no offset has this bit set.
const NULL_FLAG: usize = 1 << (usize::BITS - 1);

/// A list of strings held in one buffer: the type of every `vector<ustring>` field (children
/// names, ephemeral paths, the paths of SetWatches).
///
/// All the strings are stored back to back in one `String`, with one end offset per entry, so
/// a decoded list costs three allocations whatever its length (see [Size](Self#size); a
/// `Vec<String>` costs one per string), and entries are read as `&str` borrowed from the list. [`to_vec`](Self::to_vec)
/// (or `Vec::from`) gives a `Vec<String>`; [`FromIterator`] and `From<Vec<String>>` build one.
///
/// ```
/// use jute::StringList;
///
/// let children: StringList = ["b", "a"].into_iter().collect();
/// assert_eq!(children.len(), 2);
/// assert_eq!(children.get(0), Some("b"));
/// assert!(children.contains("a"));
/// let mut names: Vec<&str> = children.iter().collect();
/// names.sort_unstable();
/// assert_eq!(names, ["a", "b"]);
/// assert_eq!(children.to_vec(), vec!["b".to_owned(), "a".to_owned()]);
/// assert_eq!(children, ["b", "a"]);
/// ```
///
/// # Nulls
///
/// A jute vector may be null, and so may each of its strings; both survive decoding and
/// encoding byte for byte. A null vector is `None` (record fields are `Option<StringList>`, as
/// every jute vector is an `Option`). A null entry is an entry flagged as null: it counts in
/// [`len`](Self::len) and reads as `""` through [`get`](Self::get), [`iter`](Self::iter),
/// [`contains`](Self::contains) and [`to_vec`](Self::to_vec), and
/// [`is_null`](Self::is_null), [`iter_nullable`](Self::iter_nullable) and
/// [`has_nulls`](Self::has_nulls) tell it from an empty string. It is made by
/// [`push_null`](Self::push_null) or [`from_nullable`](Self::from_nullable), and it is never
/// equal to a string (`""` included) when a list is compared with a slice or a `Vec`. ZooKeeper
/// servers never send null entries; the client drops any (see `zk_proto::Client::get_children`).
///
/// # Decoding
///
/// Decoding checks that the whole vector is present before allocating: the buffer is reserved
/// for exactly the string bytes that are in the input, and the offsets for the entries whose
/// length prefix is, so no allocation is sized by a count or length the input does not back.
/// Strings are read as [Java writes them](crate::primitive#strings-from-java).
///
/// # Size
///
/// A `StringList` is one pointer (an empty list allocates nothing), so that records holding
/// several lists (SetWatches2 holds five) and the enums holding those records stay small; a
/// non-empty list makes one more allocation for that (three in all).
#[derive(Clone, Default)]
pub struct StringList {
    /// `None` for an empty list.
    inner: Option<Box<Inner>>,
}

#[derive(Clone, Default)]
struct Inner {
    /// Every entry's text, back to back.
    text: String,
    /// Per entry: the offset in `text` where it ends, with [`NULL_FLAG`] set on a null entry
    /// (which is empty: it ends where the one before it does).
    ends: Vec<usize>,
}

impl PartialEq for StringList {
    fn eq(&self, other: &Self) -> bool {
        self.ends() == other.ends() && self.text() == other.text()
    }
}

impl Eq for StringList {}

impl std::hash::Hash for StringList {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.ends().hash(state);
        self.text().hash(state);
    }
}

impl StringList {
    /// An empty list (no allocation).
    pub const fn new() -> Self {
        Self { inner: None }
    }

    /// A list with room for `entries` entries of `text_len` bytes in all.
    fn with_capacity(entries: usize, text_len: usize) -> Self {
        if entries == 0 {
            return Self::new();
        }
        Self {
            inner: Some(Box::new(Inner {
                text: String::with_capacity(text_len),
                ends: Vec::with_capacity(entries),
            })),
        }
    }

    fn text(&self) -> &str {
        self.inner.as_ref().map_or("", |inner| &inner.text)
    }

    fn ends(&self) -> &[usize] {
        self.inner.as_ref().map_or(&[], |inner| &inner.ends)
    }

    fn inner_mut(&mut self) -> &mut Inner {
        self.inner.get_or_insert_with(Box::default)
    }

    /// A list from entries that may be null (`None` for a null entry).
    pub fn from_nullable<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = Option<S>>,
        S: AsRef<str>,
    {
        let mut list = Self::new();
        for entry in entries {
            match entry {
                Some(text) => list.push(text.as_ref()),
                None => list.push_null(),
            }
        }
        list
    }

    /// The number of entries (null ones included).
    pub fn len(&self) -> usize {
        self.ends().len()
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.ends().is_empty()
    }

    /// Appends `entry`.
    pub fn push(&mut self, entry: &str) {
        let inner = self.inner_mut();
        inner.text.push_str(entry);
        inner.ends.push(inner.text.len());
    }

    /// Appends a null entry (see [Nulls](Self#nulls)).
    pub fn push_null(&mut self) {
        let inner = self.inner_mut();
        inner.ends.push(inner.text.len() | NULL_FLAG);
    }

    /// The entry at `index`, `None` past the end; a null entry reads as `""`.
    pub fn get(&self, index: usize) -> Option<&str> {
        entry_at(self.text(), self.ends(), index).map(|(_, entry)| entry)
    }

    /// Whether the entry at `index` is null (`false` past the end).
    pub fn is_null(&self, index: usize) -> bool {
        self.ends()
            .get(index)
            .is_some_and(|end| end & NULL_FLAG != 0)
    }

    /// Whether any entry is null.
    pub fn has_nulls(&self) -> bool {
        self.ends().iter().any(|end| end & NULL_FLAG != 0)
    }

    /// The list without its null entries: itself, without copying, when it has none.
    pub fn without_nulls(self) -> Self {
        if self.has_nulls() {
            self.iter_nullable().flatten().collect()
        } else {
            self
        }
    }

    /// The first entry.
    pub fn first(&self) -> Option<&str> {
        self.get(0)
    }

    /// The last entry.
    pub fn last(&self) -> Option<&str> {
        self.get(self.len().checked_sub(1)?)
    }

    /// The entries in order, borrowed; a null entry reads as `""`.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            text: self.text(),
            ends: self.ends(),
            front: 0,
            back: self.len(),
        }
    }

    /// The entries in order, `None` for a null one.
    pub fn iter_nullable(&self) -> impl DoubleEndedIterator<Item = Option<&str>> + '_ {
        let (text, ends) = (self.text(), self.ends());
        (0..self.len()).map(move |i| match entry_at(text, ends, i) {
            Some((false, entry)) => Some(entry),
            _ => None,
        })
    }

    /// Whether some entry equals `entry` (a null entry reads as `""`).
    pub fn contains(&self, entry: &str) -> bool {
        self.iter().any(|e| e == entry)
    }

    /// Sorts the entries by their bytes (a null entry before every string). The entries are
    /// copied into a new buffer in their new order: three allocations, none per entry, and
    /// none when the list is already sorted.
    pub fn sort(&mut self) {
        let entry = |i: usize| (!self.is_null(i)).then(|| self.get(i).unwrap_or_default());
        if (1..self.len()).all(|i| entry(i - 1) <= entry(i)) {
            return;
        }
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by(|&a, &b| entry(a).cmp(&entry(b)));
        let mut sorted = Self::with_capacity(self.len(), self.text().len());
        for i in order {
            match entry(i) {
                Some(text) => sorted.push(text),
                None => sorted.push_null(),
            }
        }
        *self = sorted;
    }

    /// The entries as owned strings (a null entry as `""`): one allocation per entry.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }

    /// The entries as owned strings, `None` for a null entry.
    pub fn to_nullable_vec(&self) -> Vec<Option<String>> {
        self.iter_nullable()
            .map(|entry| entry.map(str::to_owned))
            .collect()
    }
}

impl fmt::Debug for StringList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Null;
        impl fmt::Debug for Null {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("null")
            }
        }
        let mut list = f.debug_list();
        for entry in self.iter_nullable() {
            match entry {
                Some(text) => list.entry(&text),
                None => list.entry(&Null),
            };
        }
        list.finish()
    }
}

/// The entry at `index`; a null entry reads as `""`.
///
/// # Panics
///
/// When `index` is past the end, as a slice's index does.
impl std::ops::Index<usize> for StringList {
    type Output = str;
    fn index(&self, index: usize) -> &str {
        match self.get(index) {
            Some(entry) => entry,
            None => panic!("index {index} out of range for a list of {}", self.len()),
        }
    }
}

/// The borrowed entries of a [`StringList`], from [`StringList::iter`].
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    text: &'a str,
    ends: &'a [usize],
    front: usize,
    back: usize,
}

/// Whether the entry at `index` is null, and its text; `None` past the end.
fn entry_at<'a>(text: &'a str, ends: &[usize], index: usize) -> Option<(bool, &'a str)> {
    let end = *ends.get(index)?;
    let start = match index.checked_sub(1) {
        Some(before) => ends.get(before).map_or(0, |e| e & !NULL_FLAG),
        None => 0,
    };
    // Offsets are char boundaries by construction; `get` keeps this free of panics.
    let entry = text.get(start..end & !NULL_FLAG).unwrap_or_default();
    Some((end & NULL_FLAG != 0, entry))
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;
    fn next(&mut self) -> Option<&'a str> {
        if self.front == self.back {
            return None;
        }
        let entry = entry_at(self.text, self.ends, self.front);
        self.front += 1;
        entry.map(|(_, entry)| entry)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.back - self.front;
        (left, Some(left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front == self.back {
            return None;
        }
        self.back -= 1;
        entry_at(self.text, self.ends, self.back).map(|(_, entry)| entry)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl std::iter::FusedIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a StringList {
    type Item = &'a str;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<S: AsRef<str>> FromIterator<S> for StringList {
    fn from_iter<I: IntoIterator<Item = S>>(entries: I) -> Self {
        let mut list = Self::new();
        list.extend(entries);
        list
    }
}

impl<S: AsRef<str>> Extend<S> for StringList {
    fn extend<I: IntoIterator<Item = S>>(&mut self, entries: I) {
        let entries = entries.into_iter();
        let reserve = entries.size_hint().0;
        if reserve > 0 {
            self.inner_mut().ends.reserve(reserve);
        }
        for entry in entries {
            self.push(entry.as_ref());
        }
    }
}

impl From<Vec<String>> for StringList {
    fn from(entries: Vec<String>) -> Self {
        entries.into_iter().collect()
    }
}

impl From<&[&str]> for StringList {
    fn from(entries: &[&str]) -> Self {
        entries.iter().collect()
    }
}

impl From<StringList> for Vec<String> {
    fn from(list: StringList) -> Self {
        list.to_vec()
    }
}

impl From<&StringList> for Vec<String> {
    fn from(list: &StringList) -> Self {
        list.to_vec()
    }
}

/// Entry by entry; a null entry equals no string.
fn same_entries<S: AsRef<str>>(list: &StringList, other: &[S]) -> bool {
    list.len() == other.len()
        && list
            .iter_nullable()
            .zip(other)
            .all(|(entry, other)| entry == Some(other.as_ref()))
}

impl<S: AsRef<str>> PartialEq<[S]> for StringList {
    fn eq(&self, other: &[S]) -> bool {
        same_entries(self, other)
    }
}

impl<S: AsRef<str>> PartialEq<&[S]> for StringList {
    fn eq(&self, other: &&[S]) -> bool {
        same_entries(self, other)
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for StringList {
    fn eq(&self, other: &[S; N]) -> bool {
        same_entries(self, other)
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for StringList {
    fn eq(&self, other: &Vec<S>) -> bool {
        same_entries(self, other)
    }
}

impl<S: AsRef<str>> PartialEq<StringList> for Vec<S> {
    fn eq(&self, other: &StringList) -> bool {
        same_entries(other, self)
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<StringList> for [S; N] {
    fn eq(&self, other: &StringList) -> bool {
        same_entries(other, self)
    }
}

/// `vector<ustring>`: a count, then each string (length -1 for a null entry).
impl Encode for StringList {
    fn encoded_len(&self) -> usize {
        4 + 4 * self.len() + self.text().len()
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        encode_len(Some(self.len()), buf);
        let text = self.text().as_bytes();
        let mut start = 0;
        for &end in self.ends() {
            if end & NULL_FLAG != 0 {
                buf.put_i32(NULL_LEN);
                continue;
            }
            let entry = text.get(start..end).unwrap_or_default();
            encode_len(Some(entry.len()), buf);
            buf.put_slice(entry);
            start = end;
        }
    }
}

/// A null vector is `None`.
impl Encode for Option<StringList> {
    fn encoded_len(&self) -> usize {
        self.as_ref().map_or(4, Encode::encoded_len)
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        match self {
            Some(list) => list.encode(buf),
            None => encode_len(None, buf),
        }
    }
}

/// A null vector is `None`; see [Decoding](StringList#decoding) for what is allocated.
impl Decode for Option<StringList> {
    const MIN_LEN: usize = 4;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        let Some(count) = reader.read_len()? else {
            return Ok(None);
        };
        let needed = count.saturating_mul(4);
        if needed > reader.remaining() {
            return Err(DecodeError::new(DecodeErrorKind::CountExceedsInput {
                count,
                needed,
                remaining: reader.remaining(),
            }));
        }
        let scanned = scan(reader.rest(), count);
        // Fast path: the whole vector is there and its text is standard UTF-8, checked in one
        // pass over all the strings (then each end must be a char boundary).
        if scanned.present == count
            && let Some(list) = reader
                .rest()
                .get(..scanned.consumed)
                .and_then(|raw| copy_utf8(raw, count, scanned.text_len))
        {
            reader.read_borrowed(scanned.consumed, |_| ())?;
            return Ok(Some(list));
        }
        // Slow path, string by string: Java's surrogate forms, and the errors.
        let mut list = StringList::with_capacity(scanned.present, scanned.text_len);
        for _ in 0..count {
            match reader.read_len()? {
                None => list.push_null(),
                Some(len) => {
                    let inner = list.inner_mut();
                    reader.read_borrowed(len, |raw| push_string(&mut inner.text, raw))??;
                    inner.ends.push(inner.text.len());
                }
            }
        }
        Ok(Some(list))
    }
}

/// What [`scan`] found at the front of the input.
#[derive(Debug, PartialEq, Eq)]
struct Scanned {
    /// How many strings are whole (prefix and bytes).
    present: usize,
    /// The bytes of their text.
    text_len: usize,
    /// The bytes they take in the input.
    consumed: usize,
}

/// How many of `count` encoded strings at the front of `raw` are whole, the bytes of their
/// text (what decoding them reserves) and the bytes they take. Stops at the first one that is
/// not whole or has an invalid length; decoding then reports it.
fn scan(raw: &[u8], count: usize) -> Scanned {
    let (mut at, mut text_len) = (0usize, 0usize);
    for present in 0..count {
        let scanned = Scanned {
            present,
            text_len,
            consumed: at,
        };
        let Some(&[a, b, c, d]) = raw.get(at..at + 4) else {
            return scanned;
        };
        match i32::from_be_bytes([a, b, c, d]) {
            NULL_LEN => at += 4,
            len if len < 0 => return scanned,
            len => {
                let len = len as usize;
                if len > raw.len() - at - 4 {
                    return scanned;
                }
                at += 4 + len;
                text_len += len;
            }
        }
    }
    Scanned {
        present: count,
        text_len,
        consumed: at,
    }
}

/// The `count` strings encoded in `raw` (all whole, as [`scan`] found), copied into one buffer
/// and checked as UTF-8 all at once: `None` when they are not all standard UTF-8 (Java's
/// surrogate forms are decoded string by string instead).
fn copy_utf8(raw: &[u8], count: usize, text_len: usize) -> Option<StringList> {
    if count == 0 {
        return Some(StringList::new());
    }
    let mut bytes = Vec::with_capacity(text_len);
    let mut ends = Vec::with_capacity(count);
    let mut at = 0;
    for _ in 0..count {
        let &[a, b, c, d] = raw.get(at..at + 4)? else {
            return None;
        };
        at += 4;
        match i32::from_be_bytes([a, b, c, d]) {
            NULL_LEN => ends.push(bytes.len() | NULL_FLAG),
            len => {
                let len = usize::try_from(len).ok()?;
                bytes.extend_from_slice(raw.get(at..at + len)?);
                at += len;
                ends.push(bytes.len());
            }
        }
    }
    let text = String::from_utf8(bytes).ok()?;
    // A valid whole cut at char boundaries is valid pieces: each string is valid on its own.
    if !ends
        .iter()
        .all(|end| text.is_char_boundary(end & !NULL_FLAG))
    {
        return None;
    }
    Some(StringList {
        inner: Some(Box::new(Inner { text, ends })),
    })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use proptest::prelude::*;

    use super::*;
    use crate::reader::decode_exact;

    fn nullable() -> impl Strategy<Value = Option<Vec<Option<String>>>> {
        proptest::option::of(proptest::collection::vec(
            proptest::option::of(prop_oneof![
                Just(String::new()),
                "\\PC{0,8}",
                "[a-z]{500,700}",
            ]),
            0..8,
        ))
    }

    /// A count, then pieces that are strings, nulls, invalid lengths or stray bytes.
    fn pieces() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            "\\PC{0,6}".prop_map(|s: String| Some(s).to_bytes().to_vec()),
            Just(vec![0xff, 0xff, 0xff, 0xff]),
            (i32::MIN..-1).prop_map(|len| len.to_be_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..6),
        ];
        (-2i32..6, proptest::collection::vec(piece, 0..6)).prop_map(|(count, pieces)| {
            let mut raw = count.to_be_bytes().to_vec();
            raw.extend(pieces.concat());
            raw
        })
    }

    #[test]
    fn nulls_are_kept_and_read_as_empty() {
        let list = StringList::from_nullable([None, Some("x"), Some(""), None]);
        assert_eq!(list.len(), 4);
        assert!(list.has_nulls());
        assert_eq!(list.iter().collect::<Vec<_>>(), ["", "x", "", ""]);
        assert_eq!(
            list.iter_nullable().collect::<Vec<_>>(),
            [None, Some("x"), Some(""), None]
        );
        assert!(list.is_null(0) && !list.is_null(1) && !list.is_null(2) && list.is_null(3));
        assert!(!list.is_null(4));
        assert_ne!(list, ["", "x", "", ""]);
        assert_eq!(format!("{list:?}"), r#"[null, "x", "", null]"#);
        assert_eq!(list.clone().without_nulls(), ["x", ""]);
        assert_eq!(
            &Some(list).to_bytes()[..],
            b"\x00\x00\x00\x04\xff\xff\xff\xff\x00\x00\x00\x01x\x00\x00\x00\x00\xff\xff\xff\xff"
        );
        assert_eq!(&None::<StringList>.to_bytes()[..], b"\xff\xff\xff\xff");
    }

    #[test]
    fn entries_read_back_in_order() {
        let list: StringList = ["a", "", "ünï", "/x/y"].into_iter().collect();
        assert_eq!(list.first(), Some("a"));
        assert_eq!(list.last(), Some("/x/y"));
        assert_eq!(&list[2], "ünï");
        assert_eq!(list.get(4), None);
        assert_eq!(
            list.iter().rev().collect::<Vec<_>>(),
            ["/x/y", "ünï", "", "a"]
        );
        assert_eq!(list.iter().len(), 4);
        assert!(list.contains("") && list.contains("ünï") && !list.contains("b"));
        assert_eq!(Vec::from(list.clone()), ["a", "", "ünï", "/x/y"]);
        assert_eq!(StringList::from(list.to_vec()), list);
        assert!(StringList::new().is_empty() && StringList::new().first().is_none());
    }

    #[test]
    fn a_list_is_one_pointer() {
        assert_eq!(size_of::<StringList>(), size_of::<usize>());
        assert_eq!(
            StringList::new(),
            StringList::from_nullable(Vec::<Option<&str>>::new())
        );
        let mut emptied: StringList = ["x"].into_iter().collect();
        emptied = emptied.iter().filter(|e| e.is_empty()).collect();
        assert_eq!(emptied, StringList::new());
    }

    #[test]
    fn sorting_moves_the_entries_and_nulls_go_first() {
        let mut list = StringList::from_nullable([Some("b"), None, Some("a"), Some(""), Some("b")]);
        list.sort();
        assert_eq!(
            list.iter_nullable().collect::<Vec<_>>(),
            [None, Some(""), Some("a"), Some("b"), Some("b")]
        );
        let mut sorted: StringList = ["a", "b"].into_iter().collect();
        sorted.sort();
        assert_eq!(sorted, ["a", "b"]);
    }

    #[test]
    fn a_count_or_length_the_input_does_not_hold_is_an_error_before_any_allocation() {
        // 2^31 - 1 entries announced in 8 bytes.
        let error = decode_exact::<Option<StringList>>(Bytes::from_static(
            b"\x7f\xff\xff\xff\x00\x00\x00\x00",
        ))
        .unwrap_err();
        assert!(matches!(
            error.kind(),
            DecodeErrorKind::CountExceedsInput { .. }
        ));
        // One entry announcing 2^31 - 1 bytes.
        let error = decode_exact::<Option<StringList>>(Bytes::from_static(
            b"\x00\x00\x00\x01\x7f\xff\xff\xffab",
        ))
        .unwrap_err();
        assert!(matches!(
            error.kind(),
            DecodeErrorKind::LengthExceedsInput { .. }
        ));
        let scanned = |present, text_len, consumed| Scanned {
            present,
            text_len,
            consumed,
        };
        assert_eq!(scan(b"\x7f\xff\xff\xffab", 1), scanned(0, 0, 0));
        assert_eq!(
            scan(b"\x00\x00\x00\x01a\xff\xff\xff\xfe", 2),
            scanned(1, 1, 5)
        );
        assert_eq!(
            scan(b"\x00\x00\x00\x01a\xff\xff\xff\xff!", 2),
            scanned(2, 1, 9)
        );
        // A multi-byte character split across two strings: each string is invalid.
        let error = decode_exact::<Option<StringList>>(Bytes::from_static(
            b"\x00\x00\x00\x02\x00\x00\x00\x01\xc3\x00\x00\x00\x01\xbc",
        ))
        .unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::InvalidUtf8);
        let error = decode_exact::<Option<StringList>>(Bytes::from_static(
            b"\x00\x00\x00\x02\x00\x00\x00\x01a\xff\xff\xff\xfe",
        ))
        .unwrap_err();
        assert_eq!(error.kind(), &DecodeErrorKind::NegativeLength(-2));
    }

    #[test]
    fn java_surrogate_forms_decode_into_the_buffer() {
        let list = decode_exact::<Option<StringList>>(Bytes::from_static(
            b"\x00\x00\x00\x02\x00\x00\x00\x06\xed\xa0\xbd\xed\xb8\x80\x00\x00\x00\x03\xed\xa0\x80",
        ))
        .unwrap();
        assert_eq!(list, Some(["😀", "\u{fffd}"].into_iter().collect()));
    }

    proptest! {
        /// Byte for byte the encoding of the same entries as `Option<Vec<Option<String>>>`,
        /// the generic vector encoding, and back to the same entries.
        #[test]
        fn encodes_as_a_vector_of_strings_and_back(entries in nullable()) {
            let list = entries.as_ref().map(|e| StringList::from_nullable(e.iter().map(Option::as_ref)));
            let bytes = list.to_bytes();
            prop_assert_eq!(&bytes, &entries.to_bytes());
            prop_assert_eq!(bytes.len(), list.encoded_len());
            let back = decode_exact::<Option<StringList>>(bytes.clone()).unwrap();
            prop_assert_eq!(back.as_ref().map(StringList::to_nullable_vec), entries);
            prop_assert_eq!(&back, &list);
            if let Some(inner) = back.and_then(|back| back.inner) {
                prop_assert!(inner.text.capacity() == inner.text.len());
                prop_assert!(inner.ends.capacity() == inner.ends.len());
                prop_assert!(!inner.ends.is_empty());
            }
        }

        /// Any bytes decode as a string list exactly when they decode as a vector of strings,
        /// to the same entries.
        #[test]
        fn decodes_what_the_vector_decodes(raw in pieces()) {
            let ours = decode_exact::<Option<StringList>>(Bytes::from(raw.clone()));
            let generic = decode_exact::<Option<Vec<Option<String>>>>(Bytes::from(raw));
            prop_assert_eq!(
                ours.map(|list| list.map(|l| l.to_nullable_vec())).map_err(|e| e.kind().clone()),
                generic.map_err(|e| e.kind().clone())
            );
        }
    }
}
