//! `jute`: the ZooKeeper client protocol codec, byte-exact with Apache ZooKeeper 3.8.
//!
//! ```
//! use bytes::Bytes;
//! use jute::{decode_exact, Encode, GetDataRequest, RequestHeader, OpCode};
//!
//! let request = GetDataRequest { path: Some("/a".into()), watch: true };
//! let frame = (RequestHeader { xid: 1, op_code: OpCode::GET_DATA }, &request).to_bytes();
//! assert_eq!(&frame[8..], b"\x00\x00\x00\x02/a\x01");
//! let back: GetDataRequest = decode_exact(frame.slice(8..)).unwrap();
//! assert_eq!(back, request);
//! ```
//!
//! # Layout
//!
//! - [`records`]: every record of `zookeeper.jute` the client protocol uses,
//!   declared once in a table that derives the struct, [`Encode`] and [`Decode`].
//! - [`multi`]: the multi and multiRead bodies ([`MultiRequest`], [`MultiResponse`]).
//! - [`message`]: a whole server frame by the op code of the request it answers
//!   ([`ServerMessage`], [`Response`]).
//! - [`view`]: borrowed views of the records (`CreateRequestRef<'a>`, `WatcherEventRef<'a>`,
//!   ...; one per record, from the same table): decoded from a `&[u8]` by
//!   [`decode_view_exact`] or `XRef::decode` over a [`SliceReader`], with strings as
//!   `Cow<'a, str>` and buffers as `&'a [u8]` borrowed from the input, vectors and string lists
//!   validated and then iterated in place ([`ListRef`], [`StringListRef`]): no allocation. The
//!   same errors as the owned decode on every input, and `into_owned()` gives the owned record.
//!   [`ServerMessage::decode_notification`] decodes a notification frame that way.
//! - [`string_list`]: [`StringList`], the type of every `vector<ustring>` field (children,
//!   ephemerals, SetWatches paths): all the strings in one buffer, read as `&str`.
//! - [`codes`]: op codes, error codes, event types, keeper states, watcher types, add-watch
//!   modes, create modes and permission bits, each declared in one table; unknown values are
//!   kept, never a panic.
//! - [`frame`] (feature `frame`, on by default): the `tokio_util` length-prefix codec.
//!
//! # Behavior
//!
//! - **Bounded decoding.** Every length and count is checked against the bytes actually
//!   present before anything is allocated, so a hostile `2^31` length in a 20-byte frame is a
//!   [`DecodeError`], not a 2 GiB allocation.
//! - **No copies of payloads.** Buffers decode as [`bytes::Bytes`] slices of the received
//!   frame. A string list decodes into one buffer, not one allocation per string.
//! - **Strict.** Booleans must be 0 or 1, vector counts -1 or more, and [`decode_exact`]
//!   rejects trailing bytes. Strings must be UTF-8 or what Java's writer makes of a string
//!   with characters outside the BMP (surrogate sequences, CESU-8): those decode to the
//!   character, or U+FFFD for a lone surrogate, never an error (see
//!   [`primitive`](crate::primitive#strings-from-java)).
//! - **Nulls are kept.** Jute strings, buffers and vectors can be null (-1) as well as empty;
//!   they are `Option`s here so that decoding then encoding reproduces the input byte for byte
//!   (a null entry of a string list is flagged in the [`StringList`]).
//!   The exceptions re-encode to the same value in other bytes: strings in Java's surrogate
//!   form (re-encoded as standard UTF-8) and a ConnectRequest without its trailing readOnly
//!   byte (re-encoded with it).

pub mod codes;
mod error;
#[cfg(feature = "frame")]
pub mod frame;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod message;
pub mod multi;
pub mod primitive;
mod reader;
#[macro_use]
mod record_macro;
pub mod records;
#[cfg(any(test, feature = "proptest"))]
pub mod strategy;
pub mod string_list;
pub mod view;

pub use codes::{
    AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, Perms, WatcherType,
};
pub use error::{DecodeError, DecodeErrorKind};
#[cfg(feature = "frame")]
pub use frame::{DEFAULT_MAX_FRAME_LEN, FrameCodec, FrameError};
pub use message::{Response, ServerMessage};
pub use multi::{MultiOp, MultiRequest, MultiResponse, MultiResult};
pub use reader::{Decode, Encode, Reader, decode_exact};
pub use records::*;
pub use string_list::StringList;
pub use view::{DecodeView, ListRef, SliceReader, StringListRef, decode_view_exact};
