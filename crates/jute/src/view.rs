//! Borrowed views of records: decoded from a `&[u8]` without allocating for strings or buffers.
//!
//! Every record `X` of [`crate::records`] has a view `XRef<'a>`, derived by the same table
//! entry, with the same fields in borrowed form ([`DecodeView::View`]):
//!
//! | owned field | view field |
//! | --- | --- |
//! | `i32`, `i64`, `bool`, `Option<bool>`, codes, [`Perms`] | the same |
//! | `Option<String>` | `Option<Cow<'a, str>>`: borrowed from the input, owned only for a string in [Java's surrogate form](crate::primitive#strings-from-java) |
//! | `Option<Bytes>` | `Option<&'a [u8]>` |
//! | a record `Y` | its view `YRef<'a>` |
//! | `Option<Vec<T>>` | `Option<`[`ListRef<'a, T>`]`>`: validated when decoded, iterated as views |
//! | `Option<StringList>` | `Option<`[`StringListRef<'a>`]`>`: validated when decoded, iterated as `Cow<'a, str>` |
//!
//! A view decodes exactly when the owned record decodes from the same bytes, to the same value
//! (`into_owned`, or `From`), and fails with the same [`DecodeError`] (kind and location)
//! otherwise: both follow the same table, and the property tests and fuzz targets check it.
//!
//! ```
//! use std::borrow::Cow;
//! use jute::{decode_view_exact, Encode, WatcherEvent, WatcherEventRef, EventType, KeeperState};
//!
//! let event = WatcherEvent {
//!     event_type: EventType::NODE_DELETED,
//!     state: KeeperState::SYNC_CONNECTED,
//!     path: Some("/a".into()),
//! };
//! let bytes = event.to_bytes();
//! let view: WatcherEventRef<'_> = decode_view_exact::<WatcherEvent>(&bytes).unwrap();
//! assert!(matches!(view.path, Some(Cow::Borrowed("/a"))));
//! assert_eq!(view.into_owned(), event);
//! ```

use std::borrow::Cow;
use std::fmt;

use bytes::Bytes;

use crate::codes::{
    AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, Perms, WatcherType,
};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::primitive::decode_str;
use crate::reader::{Decode, nothing_left};
use crate::string_list::StringList;

/// A cursor over borrowed bytes: the [`Reader`](crate::Reader) of views. Slices it gives out
/// borrow the input, so no reference count is touched and nothing is copied.
#[derive(Debug, Clone)]
pub struct SliceReader<'a> {
    buf: &'a [u8],
}

impl<'a> SliceReader<'a> {
    /// A reader over `buf`.
    pub const fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// Bytes not read yet.
    pub const fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Whether every byte has been read.
    pub const fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes not read yet, without consuming them.
    pub const fn rest(&self) -> &'a [u8] {
        self.buf
    }

    /// Fails with [`DecodeErrorKind::TrailingBytes`] if bytes are left; `T` names the record.
    pub fn finish<T>(&self) -> Result<(), DecodeError> {
        nothing_left::<T>(self.buf.len())
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        match self.buf.split_first_chunk::<N>() {
            Some((first, rest)) => {
                self.buf = rest;
                Ok(*first)
            }
            None => Err(DecodeError::new(DecodeErrorKind::UnexpectedEnd {
                needed: N,
                remaining: self.buf.len(),
            })),
        }
    }

    /// Reads one byte.
    pub fn read_u8(&mut self) -> Result<u8, DecodeError> {
        self.take::<1>().map(|[byte]| byte)
    }

    /// Reads a big-endian `int`.
    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        self.take().map(i32::from_be_bytes)
    }

    /// Reads a big-endian `long`.
    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        self.take().map(i64::from_be_bytes)
    }

    /// Reads a length prefix: `None` for -1 (null), an error below -1.
    pub fn read_len(&mut self) -> Result<Option<usize>, DecodeError> {
        match self.read_i32()? {
            -1 => Ok(None),
            len if len < -1 => Err(DecodeError::new(DecodeErrorKind::NegativeLength(len))),
            len => Ok(Some(len as usize)),
        }
    }

    /// Takes the next `len` bytes, after checking they are there.
    pub fn read_slice(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        match self.buf.split_at_checked(len) {
            Some((taken, rest)) => {
                self.buf = rest;
                Ok(taken)
            }
            None => Err(DecodeError::new(DecodeErrorKind::LengthExceedsInput {
                len,
                remaining: self.buf.len(),
            })),
        }
    }

    /// Checks that `count` values of at least `min_len` bytes each can be in the input, as
    /// the owned decoding of a vector does before reserving anything.
    fn check_count(&self, count: usize, min_len: usize) -> Result<(), DecodeError> {
        let needed = count.saturating_mul(min_len.max(1));
        if needed > self.buf.len() {
            return Err(DecodeError::new(DecodeErrorKind::CountExceedsInput {
                count,
                needed,
                remaining: self.buf.len(),
            }));
        }
        Ok(())
    }
}

/// A type with a borrowed view: the field mapping of the record views (see the
/// [module](self) table).
pub trait DecodeView: Decode {
    /// The borrowed form of `Self`, decoded from bytes that live for `'a`.
    type View<'a>: fmt::Debug + Clone + PartialEq;

    /// Reads one view from the front of `reader`: it fails exactly where [`Decode::decode`]
    /// fails on the same bytes, with the same error, and leaves the reader at the same place.
    fn decode_view<'a>(reader: &mut SliceReader<'a>) -> Result<Self::View<'a>, DecodeError>;

    /// The owned value of a view: what [`Decode::decode`] gives for the same bytes.
    fn from_view(view: Self::View<'_>) -> Self;

    /// Moves past one value at the front of `reader` without building its view: it fails
    /// exactly where [`decode_view`](Self::decode_view) fails, with the same error. Lists
    /// validate their elements this way when they are decoded (a string is checked without
    /// being made a `&str`: an ASCII check, the full decoding only for other bytes).
    fn skip_view(reader: &mut SliceReader<'_>) -> Result<(), DecodeError> {
        Self::decode_view(reader).map(drop)
    }
}

/// Decodes the view of a `T` that must fill `bytes` exactly (trailing bytes are an error): the
/// borrowed counterpart of [`decode_exact`](crate::decode_exact), with the same errors.
pub fn decode_view_exact<T: DecodeView>(bytes: &[u8]) -> Result<T::View<'_>, DecodeError> {
    let mut reader = SliceReader::new(bytes);
    let view = T::decode_view(&mut reader).map_err(|e| e.within(std::any::type_name::<T>()))?;
    reader.finish::<T>()?;
    Ok(view)
}

/// Types whose view is themselves, read by `$read`.
macro_rules! copy_views {
    ($( $ty:ty => $read:expr; )*) => {
        $(
            impl DecodeView for $ty {
                type View<'a> = $ty;
                fn decode_view<'a>(reader: &mut SliceReader<'a>) -> Result<$ty, DecodeError> {
                    let read: fn(&mut SliceReader<'a>) -> Result<$ty, DecodeError> = $read;
                    read(reader)
                }
                fn from_view(view: $ty) -> $ty {
                    view
                }
            }
        )*
    };
}

copy_views! {
    i32 => SliceReader::read_i32;
    i64 => SliceReader::read_i64;
    bool => decode_bool;
    Option<bool> => |reader| {
        if reader.is_empty() { Ok(None) } else { decode_bool(reader).map(Some) }
    };
    AddWatchMode => |reader| reader.read_i32().map(AddWatchMode);
    CreateMode => |reader| reader.read_i32().map(CreateMode);
    ErrorCode => |reader| reader.read_i32().map(ErrorCode);
    EventType => |reader| reader.read_i32().map(EventType);
    KeeperState => |reader| reader.read_i32().map(KeeperState);
    OpCode => |reader| reader.read_i32().map(OpCode);
    Perms => |reader| reader.read_i32().map(Perms);
    WatcherType => |reader| reader.read_i32().map(WatcherType);
}

/// As `impl Decode for bool`: only 0 and 1.
fn decode_bool(reader: &mut SliceReader<'_>) -> Result<bool, DecodeError> {
    match reader.read_u8()? {
        0 => Ok(false),
        1 => Ok(true),
        other => Err(DecodeError::new(DecodeErrorKind::InvalidBool(other))),
    }
}

/// A buffer borrows the input; its owned value is a copy.
impl DecodeView for Option<Bytes> {
    type View<'a> = Option<&'a [u8]>;
    fn decode_view<'a>(reader: &mut SliceReader<'a>) -> Result<Option<&'a [u8]>, DecodeError> {
        match reader.read_len()? {
            None => Ok(None),
            Some(len) => reader.read_slice(len).map(Some),
        }
    }
    fn from_view(view: Option<&[u8]>) -> Self {
        view.map(Bytes::copy_from_slice)
    }
}

/// A string borrows the input when it is standard UTF-8, and is decoded into its own buffer
/// (at most its length) only when it holds Java's surrogate form.
impl DecodeView for Option<String> {
    type View<'a> = Option<Cow<'a, str>>;
    fn decode_view<'a>(reader: &mut SliceReader<'a>) -> Result<Option<Cow<'a, str>>, DecodeError> {
        match reader.read_len()? {
            None => Ok(None),
            Some(len) => decode_str(reader.read_slice(len)?).map(Some),
        }
    }
    fn from_view(view: Option<Cow<'_, str>>) -> Self {
        view.map(Cow::into_owned)
    }
    fn skip_view(reader: &mut SliceReader<'_>) -> Result<(), DecodeError> {
        match reader.read_len()? {
            None => Ok(()),
            Some(len) => {
                let raw = reader.read_slice(len)?;
                if raw.is_ascii() {
                    Ok(())
                } else {
                    decode_str(raw).map(drop)
                }
            }
        }
    }
}

/// The view of a `vector<T>`: the encoded elements, validated when the list was decoded and
/// decoded again as views, one at a time, when iterated. Decoding it allocates nothing.
pub struct ListRef<'a, T> {
    raw: &'a [u8],
    count: usize,
    element: std::marker::PhantomData<fn() -> T>,
}

impl<'a, T: DecodeView> ListRef<'a, T> {
    /// The number of elements.
    pub const fn len(&self) -> usize {
        self.count
    }

    /// Whether the list has no elements.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The elements' encoding, as received.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// The elements in order, as views.
    pub fn iter(&self) -> ListIter<'a, T> {
        ListIter {
            reader: SliceReader::new(self.raw),
            left: self.count,
            element: std::marker::PhantomData,
        }
    }

    /// The owned elements: one allocation for the vector, and what each element's owned value
    /// needs.
    pub fn to_vec(&self) -> Vec<T> {
        self.iter().map(T::from_view).collect()
    }
}

impl<T> Clone for ListRef<'_, T> {
    fn clone(&self) -> Self {
        Self {
            raw: self.raw,
            count: self.count,
            element: std::marker::PhantomData,
        }
    }
}

impl<T: DecodeView> fmt::Debug for ListRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Element by element, as views (two encodings of the same values are equal).
impl<T: DecodeView> PartialEq for ListRef<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.iter().eq(other.iter())
    }
}

impl<'a, T: DecodeView> IntoIterator for &ListRef<'a, T> {
    type Item = T::View<'a>;
    type IntoIter = ListIter<'a, T>;
    fn into_iter(self) -> ListIter<'a, T> {
        self.iter()
    }
}

/// The elements of a [`ListRef`], from [`ListRef::iter`] (and the entries of a
/// [`StringListRef`]).
#[derive(Debug, Clone)]
pub struct ListIter<'a, T> {
    reader: SliceReader<'a>,
    left: usize,
    element: std::marker::PhantomData<fn() -> T>,
}

impl<'a, T: DecodeView> Iterator for ListIter<'a, T> {
    type Item = T::View<'a>;
    fn next(&mut self) -> Option<T::View<'a>> {
        self.left = self.left.checked_sub(1)?;
        // Every element decoded when the list was decoded, from these same bytes, so this
        // cannot fail; if it did, the iteration would end rather than panic.
        match T::decode_view(&mut self.reader) {
            Ok(view) => Some(view),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<T: DecodeView> ExactSizeIterator for ListIter<'_, T> {}

/// The count is checked against the bytes left as the owned decoding checks it, then every
/// element is checked ([`DecodeView::skip_view`]): the same errors at the same places, and
/// nothing allocated (but for an element string in Java's surrogate form, for the time of its
/// check).
impl<T: DecodeView> DecodeView for Option<Vec<T>> {
    type View<'a> = Option<ListRef<'a, T>>;
    fn decode_view<'a>(
        reader: &mut SliceReader<'a>,
    ) -> Result<Option<ListRef<'a, T>>, DecodeError> {
        let Some(count) = reader.read_len()? else {
            return Ok(None);
        };
        reader.check_count(count, T::MIN_LEN)?;
        let start = reader.rest();
        for _ in 0..count {
            T::skip_view(reader)?;
        }
        let raw = start
            .get(..start.len() - reader.remaining())
            .unwrap_or_default();
        Ok(Some(ListRef {
            raw,
            count,
            element: std::marker::PhantomData,
        }))
    }
    fn from_view(view: Option<ListRef<'_, T>>) -> Self {
        view.map(|list| list.to_vec())
    }
    fn skip_view(reader: &mut SliceReader<'_>) -> Result<(), DecodeError> {
        Self::decode_view(reader).map(drop)
    }
}

/// The view of a `vector<ustring>` ([`StringList`]): the encoded entries, validated when the
/// list was decoded, iterated as `Cow<'a, str>` (borrowed unless in Java's surrogate form).
/// Decoding it allocates nothing.
#[derive(Clone)]
pub struct StringListRef<'a> {
    raw: &'a [u8],
    count: usize,
}

impl<'a> StringListRef<'a> {
    /// The number of entries (null ones included).
    pub const fn len(&self) -> usize {
        self.count
    }

    /// Whether the list has no entries.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entries in order, `None` for a null one.
    pub fn iter_nullable(&self) -> StringListIter<'a> {
        ListIter {
            reader: SliceReader::new(self.raw),
            left: self.count,
            element: std::marker::PhantomData,
        }
    }

    /// The entries in order; a null entry reads as `""`, as in [`StringList::iter`].
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Cow<'a, str>> + use<'a> {
        self.iter_nullable().map(Option::unwrap_or_default)
    }

    /// The owned list: three allocations, none per entry.
    pub fn to_string_list(&self) -> StringList {
        StringList::from_nullable(self.iter_nullable())
    }
}

impl fmt::Debug for StringListRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter_nullable()).finish()
    }
}

/// Entry by entry (two encodings of the same strings are equal).
impl PartialEq for StringListRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.iter_nullable().eq(other.iter_nullable())
    }
}

/// The entries of a [`StringListRef`], `None` for a null one: a list of `ustring`s read in
/// place, as any [`ListIter`].
pub type StringListIter<'a> = ListIter<'a, Option<String>>;

/// As the owned decoding: the count checked against the bytes left (4 per entry), then each
/// entry read as a string, with the same errors at the same places.
impl DecodeView for Option<StringList> {
    type View<'a> = Option<StringListRef<'a>>;
    fn decode_view<'a>(
        reader: &mut SliceReader<'a>,
    ) -> Result<Option<StringListRef<'a>>, DecodeError> {
        let Some(count) = reader.read_len()? else {
            return Ok(None);
        };
        reader.check_count(count, 4)?;
        let start = reader.rest();
        for _ in 0..count {
            <Option<String>>::skip_view(reader)?;
        }
        let raw = start
            .get(..start.len() - reader.remaining())
            .unwrap_or_default();
        Ok(Some(StringListRef { raw, count }))
    }
    fn from_view(view: Option<StringListRef<'_>>) -> Self {
        view.map(|list| list.to_string_list())
    }
}

/// Decodes `bytes` as a `T` (exactly), owned and as its view, and tells how they disagree, if
/// they do: the same value (the view made owned) or the same error is agreement.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn view_agrees<T: DecodeView + PartialEq + fmt::Debug>(
    bytes: &[u8],
) -> Result<(), String> {
    let owned = crate::reader::decode_exact::<T>(Bytes::copy_from_slice(bytes));
    let view = decode_view_exact::<T>(bytes).map(T::from_view);
    if owned == view {
        Ok(())
    } else {
        Err(format!(
            "{} decodes as {owned:?}, its view as {view:?}",
            std::any::type_name::<T>()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::xid;
    use crate::message::ServerMessage;
    use crate::reader::{Encode, decode_exact};
    use crate::records::{
        Acl, CreateRequest, CreateRequestRef, GetChildrenResponse, Id, ReplyHeader, WatcherEvent,
    };

    /// A length-prefixed string of raw bytes.
    fn raw_string(raw: &[u8]) -> Vec<u8> {
        let mut out = (raw.len() as i32).to_be_bytes().to_vec();
        out.extend_from_slice(raw);
        out
    }

    /// A pair in Java's surrogate form (U+1F600), a lone high surrogate, and standard UTF-8.
    const SURROGATE_PAIR: &[u8] = b"\xed\xa0\xbd\xed\xb8\x80";
    const LONE_SURROGATE: &[u8] = b"\xed\xa0\xbd";

    #[test]
    fn strings_borrow_unless_in_java_surrogate_form() {
        let plain = raw_string("/a/é".as_bytes());
        let view = decode_view_exact::<Option<String>>(&plain).unwrap();
        assert!(matches!(view, Some(Cow::Borrowed("/a/é"))));
        for (raw, text) in [(SURROGATE_PAIR, "😀"), (LONE_SURROGATE, "\u{fffd}")] {
            let bytes = raw_string(raw);
            let view = decode_view_exact::<Option<String>>(&bytes).unwrap();
            assert!(
                matches!(&view, Some(Cow::Owned(owned)) if owned == text),
                "{view:?}"
            );
            let owned = decode_exact::<Option<String>>(Bytes::copy_from_slice(&bytes)).unwrap();
            assert_eq!(<Option<String>>::from_view(view), owned);
        }
        let invalid = raw_string(b"\xff");
        assert_eq!(
            decode_view_exact::<Option<String>>(&invalid).map(|_| ()),
            decode_exact::<Option<String>>(Bytes::from(invalid)).map(|_| ())
        );
    }

    #[test]
    fn string_lists_keep_nulls_and_java_forms() {
        let mut bytes = 4i32.to_be_bytes().to_vec();
        bytes.extend(raw_string(b"a"));
        bytes.extend((-1i32).to_be_bytes());
        bytes.extend(raw_string(SURROGATE_PAIR));
        bytes.extend(raw_string(b""));
        let view = decode_view_exact::<GetChildrenResponse>(&bytes).unwrap();
        let list = view.children.clone().unwrap();
        assert_eq!(list.len(), 4);
        let entries: Vec<_> = list.iter_nullable().collect();
        assert_eq!(
            entries,
            [Some("a".into()), None, Some("😀".into()), Some("".into())]
        );
        assert_eq!(list.iter().collect::<Vec<_>>(), ["a", "", "😀", ""]);
        let owned = decode_exact::<GetChildrenResponse>(Bytes::copy_from_slice(&bytes)).unwrap();
        assert_eq!(view.into_owned(), owned);
        assert!(owned.children.unwrap().is_null(1));
    }

    #[test]
    fn a_list_iterates_its_elements_as_views() {
        let request = CreateRequest {
            path: Some("/n".into()),
            data: Some(Bytes::from_static(b"xy")),
            acl: Some(vec![
                Acl {
                    perms: Perms::ALL,
                    id: Id {
                        scheme: Some("world".into()),
                        id: Some("anyone".into()),
                    },
                },
                Acl {
                    perms: Perms::READ,
                    id: Id {
                        scheme: None,
                        id: Some("x".into()),
                    },
                },
            ]),
            flags: CreateMode::EPHEMERAL,
        };
        let bytes = request.to_bytes();
        let view: CreateRequestRef<'_> = decode_view_exact::<CreateRequest>(&bytes).unwrap();
        assert_eq!(view.data, Some(&b"xy"[..]));
        let acl = view.acl.clone().unwrap();
        assert_eq!(acl.len(), 2);
        let schemes: Vec<_> = acl.iter().map(|entry| entry.id.scheme).collect();
        assert_eq!(schemes, [Some("world".into()), None]);
        assert_eq!(acl.iter().len(), 2);
        assert_eq!(CreateRequest::from(view), request);
    }

    #[test]
    fn a_count_the_input_cannot_hold_is_the_owned_error() {
        let mut bytes = Some(String::from("/")).to_bytes().to_vec();
        bytes.extend((-1i32).to_be_bytes());
        bytes.extend(i32::MAX.to_be_bytes());
        bytes.extend([0; 16]);
        let view = decode_view_exact::<CreateRequest>(&bytes).map(|_| ());
        let owned = decode_exact::<CreateRequest>(Bytes::from(bytes)).map(|_| ());
        assert!(
            matches!(
                view.as_ref().map_err(DecodeError::kind),
                Err(DecodeErrorKind::CountExceedsInput { .. })
            ),
            "{view:?}"
        );
        assert_eq!(view, owned);
        assert_eq!(view.unwrap_err().location(), "CreateRequest.acl");
    }

    #[test]
    fn list_elements_are_checked_as_the_owned_decode_reads_them() {
        // An ACL whose second entry's id is in Java's surrogate form, then is not UTF-8 at all,
        // then is cut short: the view agrees with the owned decode on each.
        let acl = |id: &[u8]| {
            let mut raw = 2i32.to_be_bytes().to_vec();
            raw.extend(31i32.to_be_bytes());
            raw.extend(raw_string(b"world"));
            raw.extend(raw_string(b"anyone"));
            raw.extend(1i32.to_be_bytes());
            raw.extend(raw_string(b"digest"));
            raw.extend(raw_string(id));
            raw
        };
        let pair = acl(SURROGATE_PAIR);
        let view = decode_view_exact::<Option<Vec<Acl>>>(&pair).unwrap();
        let ids: Vec<_> = view.iter().flatten().map(|entry| entry.id.id).collect();
        assert_eq!(ids, [Some("anyone".into()), Some("😀".into())]);
        let invalid = acl(b"a\xffb");
        let cut = &pair[..pair.len() - 1];
        for bytes in [&pair[..], &invalid, cut] {
            let view =
                decode_view_exact::<Option<Vec<Acl>>>(bytes).map(<Option<Vec<Acl>>>::from_view);
            let owned = decode_exact::<Option<Vec<Acl>>>(Bytes::copy_from_slice(bytes));
            assert_eq!(view, owned);
        }
        assert_eq!(
            decode_view_exact::<Option<Vec<Acl>>>(&invalid).unwrap_err(),
            DecodeError::at(DecodeErrorKind::InvalidUtf8, "Id.id")
        );
    }

    fn notification(event: &WatcherEvent) -> Vec<u8> {
        let header = ReplyHeader {
            xid: xid::NOTIFICATION,
            zxid: -1,
            err: ErrorCode::OK,
        };
        (header, event).to_bytes().to_vec()
    }

    #[test]
    fn a_notification_decodes_as_the_owned_message() {
        let event = WatcherEvent {
            event_type: EventType::NODE_DATA_CHANGED,
            state: KeeperState::SYNC_CONNECTED,
            path: Some("/a/b".into()),
        };
        let frame = notification(&event);
        let (header, view) = ServerMessage::decode_notification(&frame).unwrap();
        assert!(matches!(view.path, Some(Cow::Borrowed("/a/b"))));
        assert_eq!(
            ServerMessage::decode(Bytes::from(frame.clone()), |_| OpCode::PING),
            Ok(ServerMessage::Notification(header, view.into_owned()))
        );
        for cut in 0..frame.len() {
            let view = ServerMessage::decode_notification(&frame[..cut]).map(|_| ());
            let owned =
                ServerMessage::decode(Bytes::copy_from_slice(&frame[..cut]), |_| OpCode::PING)
                    .map(|_| ());
            assert_eq!(view, owned, "cut at {cut}");
        }
        let mut longer = frame;
        longer.push(0);
        assert_eq!(
            ServerMessage::decode_notification(&longer).map(|_| ()),
            ServerMessage::decode(Bytes::from(longer), |_| OpCode::PING).map(|_| ())
        );
    }

    #[test]
    fn another_xid_is_not_a_notification() {
        let mut frame = notification(&WatcherEvent::default());
        frame[..4].copy_from_slice(&7i32.to_be_bytes());
        let err = ServerMessage::decode_notification(&frame).unwrap_err();
        assert_eq!(err.kind(), &DecodeErrorKind::NotANotification(7));
        assert_eq!(err.location(), "ReplyHeader.xid");
    }
}
