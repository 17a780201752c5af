//! The checks behind the fuzz targets in `fuzz/`, one per decode entry point a ZooKeeper server
//! can reach: the frame codec, the connect response, every reply and notification by op code,
//! watcher events, multi responses, and every record by name.
//!
//! **This module is for fuzzing and tests, not a stable API.** Each check takes arbitrary bytes
//! and **panics when it finds a bug, by design**: a panic inside the codec, an allocation sized
//! by an untrusted length, or a successful decode that does not encode back the way the codec
//! promises: byte for byte, except for the fields its decoders document as ignored, and for
//! what decodes to a value whose encoding is other bytes (strings in Java's surrogate form, see
//! [`crate::primitive`], and a ConnectRequest without its readOnly byte), whose re-encoding
//! must decode to the same value. Decoding errors are the expected outcome for most inputs and
//! are not reported.
//!
//! The fuzz targets are one-liners over these functions (`cargo +nightly fuzz run <target>`
//! from the repository root), and `tests/fuzz_corpus.rs` replays the checked-in corpus through
//! them on stable Rust. Each function documents its input format; [`seed_corpus`] maps the
//! conformance vectors to those formats (`scripts/seed-fuzz-corpus.sh`).

use std::cell::Cell;
use std::fmt::Debug;
use std::ops::Range;

use bytes::Bytes;

use crate::codes::{ErrorCode, EventType, KeeperState, OpCode, xid};
use crate::error::DecodeError;
use crate::message::{Response, ServerMessage};
use crate::multi::{MultiResponse, MultiResult};
use crate::reader::{Decode, Encode, decode_exact};
use crate::records::{
    ConnectRequest, ConnectResponse, CreateResponse, MultiHeader, RECORD_NAMES, ReplyHeader,
    SetDataResponse, Stat, WatcherEvent, reencode_named, same_value_named, view_agrees_named,
};

/// The checked-in corpus of a fuzz target (`fuzz/corpus/<target>/` under `fuzz_dir`): every
/// file, sorted by name, with its bytes. The corpus replay tests of this crate and of
/// `zk-proto` read it this way.
///
/// # Panics
///
/// When the directory or a file cannot be read (a test setup error).
pub fn corpus_files(
    fuzz_dir: &std::path::Path,
    target: &str,
) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = fuzz_dir.join("corpus").join(target);
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("no corpus at {}: {e}", dir.display()));
    let mut paths: Vec<std::path::PathBuf> = entries
        .map(|entry| entry.expect("readable corpus directory").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, data)
        })
        .collect()
}

/// The fuzz targets declared in `fuzz/Cargo.toml` (its `[[bin]]` names), whichever crate's
/// checks they run.
///
/// # Panics
///
/// When `fuzz/Cargo.toml` cannot be read.
pub fn declared_targets(fuzz_dir: &std::path::Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(fuzz_dir.join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("{}/Cargo.toml: {e}", fuzz_dir.display()));
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin
            && let Some(name) = line
                .strip_prefix("name = \"")
                .and_then(|r| r.strip_suffix('"'))
        {
            names.push(name.to_owned());
        }
    }
    names.sort_unstable();
    names
}

/// Every fuzz target, by name: each is a function of this module and a file
/// `fuzz/fuzz_targets/<name>.rs`, and has a corpus in `fuzz/corpus/<name>/`.
pub const TARGETS: &[&str] = &[
    "frame_decoder",
    "connect_response",
    "server_message",
    "watcher_event",
    "multi_response",
    "record_by_name",
];

/// Runs the check of the fuzz target `target` on `data`; `false` if there is no such target
/// (`frame_decoder` needs the `frame` feature).
///
/// # Panics
///
/// When the check finds a bug, as the target's function does.
pub fn run(target: &str, data: &[u8]) -> bool {
    match target {
        #[cfg(feature = "frame")]
        "frame_decoder" => frame_decoder(data),
        "connect_response" => connect_response(data),
        "server_message" => server_message(data),
        "watcher_event" => watcher_event(data),
        "multi_response" => multi_response(data),
        "record_by_name" => record_by_name(data),
        _ => return false,
    }
    true
}

/// The length prefix of a frame.
#[cfg(feature = "frame")]
const PREFIX_LEN: usize = 4;

/// Feeds a byte stream to [`crate::FrameCodec`]'s `tokio_util` decoder in chunks, and checks
/// it against a reference splitter.
///
/// Input: a config byte, a chunking byte, then the stream. The config byte's high bit selects
/// the [default maximum](crate::DEFAULT_MAX_FRAME_LEN); otherwise its value (0 to 127) is the
/// maximum frame length. A chunking byte of 0 feeds the stream at once; `n` feeds it in
/// pseudo-random chunks of 1 to `n` bytes, calling the decoder until it wants more after each.
///
/// # Panics
///
/// When the decoder panics, yields other frames than the reference (or a frame over the
/// maximum), fails elsewhere or otherwise, consumes bytes while asking for more, reserves
/// buffer space for a frame it rejects, grows the buffer beyond what the input and the maximum
/// justify, or when the encoder does not reproduce the consumed bytes from the frames.
#[cfg(feature = "frame")]
pub fn frame_decoder(data: &[u8]) {
    use bytes::BytesMut;
    use tokio_util::codec::{Decoder, Encoder};

    use crate::frame::{FrameCodec, FrameError};

    let [config, chunking, stream @ ..] = data else {
        return;
    };
    let mut codec = if config & 0x80 == 0 {
        FrameCodec::with_max_frame_len(usize::from(*config))
    } else {
        FrameCodec::new()
    };
    let max = codec.max_frame_len();
    let (expected_frames, expected_end) = split_frames(stream, max);
    // The decoder may reserve room for one frame of at most `max` bytes beyond what it holds; the
    // buffer holds at most the stream, and `BytesMut` may double its allocation and keep up to
    // the consumed bytes in front. Anything beyond was sized by an untrusted length.
    let capacity_bound = 2 * (3 * stream.len() + PREFIX_LEN + max) + 64;

    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut failure = None;
    'feed: for chunk in chunks(stream, *chunking) {
        buf.extend_from_slice(chunk);
        loop {
            let (len, capacity) = (buf.len(), buf.capacity());
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    assert!(
                        frame.len() <= max,
                        "frame of {} bytes, max {max}",
                        frame.len()
                    );
                    assert_eq!(buf.len(), len - PREFIX_LEN - frame.len(), "bytes lost");
                    frames.push(frame);
                }
                Ok(None) => {
                    assert_eq!(buf.len(), len, "bytes consumed by a decode that wants more");
                    assert!(
                        buf.capacity() <= capacity_bound,
                        "buffer grew to {} bytes for a {}-byte stream with max frame {max}",
                        buf.capacity(),
                        stream.len(),
                    );
                    break;
                }
                Err(error) => {
                    assert_eq!(buf.capacity(), capacity, "reserved for a rejected frame");
                    failure = Some(error);
                    break 'feed;
                }
            }
        }
    }

    assert_eq!(
        frames.len(),
        expected_frames.len(),
        "frames decoded from {}",
        hex(stream)
    );
    for (frame, expected) in frames.iter().zip(&expected_frames) {
        assert!(
            frame == expected,
            "frame {} is not {}",
            hex(frame),
            hex(expected)
        );
    }
    match (failure, expected_end) {
        (None, End::Incomplete(rest)) => {
            assert!(buf == rest, "left {}, expected {}", hex(&buf), hex(rest));
            // At the end of the stream, leftover bytes are an error and nothing is a frame.
            match codec.decode_eof(&mut buf) {
                Ok(None) => assert!(rest.is_empty(), "decode_eof accepted leftover bytes"),
                Err(FrameError::Io(_)) => assert!(!rest.is_empty(), "decode_eof failed"),
                other => panic!("decode_eof on {} gave {other:?}", hex(rest)),
            }
        }
        (Some(FrameError::NegativeLength(len)), End::Negative(expected)) => {
            assert_eq!(len, expected);
        }
        (
            Some(FrameError::TooLong {
                len, max: limit, ..
            }),
            End::TooLong(expected),
        ) => {
            assert_eq!((len, limit), (expected, max));
        }
        (failure, end) => panic!("the decoder ended with {failure:?}, the reference with {end:?}"),
    }

    // The encoder writes the same prefixes back.
    let consumed: usize = frames.iter().map(|frame| PREFIX_LEN + frame.len()).sum();
    let mut encoded = BytesMut::new();
    for frame in &frames {
        codec
            .encode(Raw(frame), &mut encoded)
            .expect("a decoded frame must encode again");
    }
    assert!(
        encoded == stream[..consumed],
        "frames encode as {}, were {}",
        hex(&encoded),
        hex(&stream[..consumed])
    );
}

/// How a reference split of a frame stream ends.
#[cfg(feature = "frame")]
#[derive(Debug)]
enum End<'a> {
    /// The stream ends inside the prefix or the body of a frame (or between frames): the rest.
    Incomplete(&'a [u8]),
    /// A negative length prefix.
    Negative(i32),
    /// A length over the maximum.
    TooLong(usize),
}

/// Splits a stream of length-prefixed frames the simplest way, for [`frame_decoder`].
#[cfg(feature = "frame")]
fn split_frames(mut stream: &[u8], max: usize) -> (Vec<&[u8]>, End<'_>) {
    let mut frames = Vec::new();
    loop {
        let Some((prefix, rest)) = stream.split_first_chunk::<PREFIX_LEN>() else {
            return (frames, End::Incomplete(stream));
        };
        let declared = i32::from_be_bytes(*prefix);
        let Ok(len) = usize::try_from(declared) else {
            return (frames, End::Negative(declared));
        };
        if len > max {
            return (frames, End::TooLong(len));
        }
        if rest.len() < len {
            return (frames, End::Incomplete(stream));
        }
        let (frame, rest) = rest.split_at(len);
        frames.push(frame);
        stream = rest;
    }
}

/// Cuts `stream` into chunks of 1 to `seed` bytes (pseudo-random, deterministic), or one chunk
/// if `seed` is 0.
#[cfg(feature = "frame")]
fn chunks(mut stream: &[u8], seed: u8) -> impl Iterator<Item = &[u8]> {
    let mut state = u32::from(seed);
    std::iter::from_fn(move || {
        if stream.is_empty() {
            return None;
        }
        let size = if seed == 0 {
            stream.len()
        } else {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            1 + (state >> 16) as usize % usize::from(seed)
        };
        let (chunk, rest) = stream.split_at(size.min(stream.len()));
        stream = rest;
        Some(chunk)
    })
}

/// Raw bytes as an [`Encode`] value: a frame body without a length prefix of its own.
#[cfg(feature = "frame")]
struct Raw<'a>(&'a [u8]);

#[cfg(feature = "frame")]
impl Encode for Raw<'_> {
    fn encoded_len(&self) -> usize {
        self.0.len()
    }
    fn encode<B: bytes::BufMut>(&self, buf: &mut B) {
        buf.put_slice(self.0);
    }
}

/// Decodes a [`ConnectResponse`], the first frame a server sends, both with and without the
/// trailing `readOnly` byte that servers before 3.4 omit.
///
/// Input: the frame body.
///
/// # Panics
///
/// When decoding panics; when a decoded response does not encode back to the input; when the
/// same response with the `readOnly` byte removed (if present) or appended as 0 or 1 (if
/// absent) does not decode to the same fields, or decodes with any other appended byte.
pub fn connect_response(data: &[u8]) {
    let Ok(response) = decode_exact::<ConnectResponse>(Bytes::copy_from_slice(data)) else {
        return;
    };
    assert_reencodes(data, &response);
    if response.read_only.is_some() {
        let short = &data[..data.len() - 1];
        let old = decode_exact::<ConnectResponse>(Bytes::copy_from_slice(short))
            .expect("a ConnectResponse without its readOnly byte must decode");
        let expected = ConnectResponse {
            read_only: None,
            ..response.clone()
        };
        assert_eq!(old, expected);
        assert_reencodes(short, &old);
    } else {
        for flag in [false, true] {
            let mut long = data.to_vec();
            long.push(u8::from(flag));
            let new = decode_exact::<ConnectResponse>(Bytes::copy_from_slice(&long))
                .expect("a ConnectResponse with a readOnly byte appended must decode");
            let expected = ConnectResponse {
                read_only: Some(flag),
                ..response.clone()
            };
            assert_eq!(new, expected);
            assert_reencodes(&long, &new);
        }
        let mut bad = data.to_vec();
        bad.push(2);
        assert!(
            decode_exact::<ConnectResponse>(Bytes::from(bad)).is_err(),
            "readOnly byte 2 accepted"
        );
    }
}

/// Decodes a server frame after the connect response with [`ServerMessage::decode`]: the reply
/// header, then a notification or the body for the request's op code.
///
/// Input: the op code of the request the frame answers (4 bytes, big-endian), then the frame
/// body.
///
/// # Panics
///
/// When decoding panics; when [`ServerMessage::decode_notification`] disagrees with it on a
/// frame with the notification xid; when the op code is asked for on a notification or an error reply,
/// or not asked for the header's xid on a successful one; when the body disagrees with
/// [`Response::decode`]; when the message does not encode back to the input: exactly for
/// notifications and successful replies (or to the same message, for strings in Java's
/// surrogate form), the header alone for error replies (whose body is ignored), and up to the
/// ignored multi header fields for multi replies.
pub fn server_message(data: &[u8]) {
    let Some((op, frame)) = data.split_first_chunk::<4>() else {
        return;
    };
    let op = OpCode(i32::from_be_bytes(*op));
    let asked = Cell::new(None);
    let decoded = ServerMessage::decode(Bytes::copy_from_slice(frame), |xid| {
        asked.set(Some(xid));
        op
    });
    assert_notification_view_agrees(frame, &decoded);
    let Ok(message) = decoded else {
        return;
    };
    let (header_bytes, body_bytes) = frame.split_at(ReplyHeader::MIN_LEN);
    let header = decode_exact::<ReplyHeader>(Bytes::copy_from_slice(header_bytes))
        .expect("a frame that decodes starts with a reply header");
    match &message {
        ServerMessage::Notification(decoded_header, _) => {
            assert_eq!(decoded_header, &header);
            assert_eq!(
                header.xid,
                xid::NOTIFICATION,
                "notification with another xid"
            );
            assert_eq!(asked.get(), None, "op code asked for a notification");
            assert_reencodes_to_same(frame, &message, |bytes| {
                ServerMessage::decode(bytes, |_| op)
            });
        }
        ServerMessage::Reply {
            header: decoded_header,
            body: None,
        } => {
            assert_eq!(decoded_header, &header);
            assert_ne!(
                header.xid,
                xid::NOTIFICATION,
                "notification xid decoded as reply"
            );
            assert_ne!(header.err, ErrorCode::OK, "successful reply without a body");
            assert_eq!(asked.get(), None, "op code asked for an error reply");
            assert_reencodes(header_bytes, &message);
        }
        ServerMessage::Reply {
            header: decoded_header,
            body: Some(body),
        } => {
            assert_eq!(decoded_header, &header);
            assert_ne!(
                header.xid,
                xid::NOTIFICATION,
                "notification xid decoded as reply"
            );
            assert_eq!(header.err, ErrorCode::OK, "error reply with a body");
            assert_eq!(
                asked.get(),
                Some(header.xid),
                "op code not asked for the xid"
            );
            let alone = Response::decode(op, Bytes::copy_from_slice(body_bytes));
            assert_eq!(alone.as_ref(), Ok(body), "Response::decode disagrees");
            if let Response::Multi(multi) = body {
                assert_reencodes(header_bytes, &header);
                assert_multi_reencodes(body_bytes, multi);
            } else {
                assert_reencodes_to_same(frame, &message, |bytes| {
                    ServerMessage::decode(bytes, |_| op)
                });
            }
        }
    }
}

/// Checks [`ServerMessage::decode_notification`] against [`ServerMessage::decode`] of the same
/// frame, when its xid is the notification's: the same header and event, or the same error.
fn assert_notification_view_agrees(frame: &[u8], decoded: &Result<ServerMessage, DecodeError>) {
    if frame.get(..4) != Some(&xid::NOTIFICATION.to_be_bytes()[..]) {
        return;
    }
    let view = ServerMessage::decode_notification(frame)
        .map(|(header, event)| ServerMessage::Notification(header, event.into_owned()));
    assert!(
        &view == decoded,
        "notification {} decodes as {decoded:?}, its view as {view:?}",
        hex(frame)
    );
}

/// Decodes a [`WatcherEvent`], alone and as the body of a notification frame.
///
/// Input: the event's encoding.
///
/// # Panics
///
/// When decoding panics; when the two decodings (or the notification's borrowed view,
/// [`ServerMessage::decode_notification`]) disagree; when the event does not encode back
/// to the input (or to the same event, for a path in Java's surrogate form).
pub fn watcher_event(data: &[u8]) {
    let alone = decode_exact::<WatcherEvent>(Bytes::copy_from_slice(data));
    let header = ReplyHeader {
        xid: xid::NOTIFICATION,
        zxid: -1,
        err: ErrorCode::OK,
    };
    let mut frame = header.to_bytes().to_vec();
    frame.extend_from_slice(data);
    let notification = ServerMessage::decode(Bytes::copy_from_slice(&frame), |xid| {
        panic!("op code asked for xid {xid} of a notification")
    });
    assert_notification_view_agrees(&frame, &notification);
    match (alone, notification) {
        (Ok(event), Ok(ServerMessage::Notification(decoded_header, notified))) => {
            assert_eq!(decoded_header, header);
            assert_eq!(notified, event);
            assert_reencodes_to_same(data, &event, decode_exact::<WatcherEvent>);
        }
        (Err(_), Err(_)) => {}
        (alone, notification) => {
            panic!("WatcherEvent decodes as {alone:?} alone, as {notification:?} in a frame")
        }
    }
}

/// Decodes a [`MultiResponse`], the body of the reply to multi and multiRead.
///
/// Input: the body.
///
/// # Panics
///
/// When decoding panics; when [`Response::decode`] disagrees for multi or multiRead; when the
/// response does not encode back to the input up to the header fields the decoder ignores (see
/// the private `assert_multi_reencodes`), or the encoding does not decode to the same response.
pub fn multi_response(data: &[u8]) {
    let alone = decode_exact::<MultiResponse>(Bytes::copy_from_slice(data));
    for op in [OpCode::MULTI, OpCode::MULTI_READ] {
        let reply = Response::decode(op, Bytes::copy_from_slice(data));
        assert_eq!(
            reply.ok(),
            alone.clone().ok().map(Response::Multi),
            "Response::decode({op}) disagrees with decode_exact::<MultiResponse>"
        );
    }
    if let Ok(response) = alone {
        assert_multi_reencodes(data, &response);
    }
}

/// Decodes and re-encodes a record by its reference class name with [`reencode_named`].
///
/// Input: an index into [`RECORD_NAMES`] (one byte, modulo the number of records), then the
/// record's encoding.
///
/// # Panics
///
/// When decoding panics, when [`reencode_named`] does not know a name of [`RECORD_NAMES`], when
/// the record's borrowed view disagrees with the owned decode ([`view_agrees_named`]: another
/// value or another error), or when a decoded record does not encode back to the input byte for
/// byte. Only two kinds of
/// input may encode back to other bytes, and then they must decode to the same value
/// ([`same_value_named`]): strings in Java's surrogate form (see the private
/// `assert_reencodes_to_same`) and a ConnectRequest without its trailing readOnly byte (which comes back with it, as 0).
pub fn record_by_name(data: &[u8]) {
    let Some((&index, bytes)) = data.split_first() else {
        return;
    };
    let name = RECORD_NAMES[usize::from(index) % RECORD_NAMES.len()];
    match view_agrees_named(name, bytes) {
        None => panic!("{name} is in RECORD_NAMES, but view_agrees_named does not know it"),
        Some(Err(disagreement)) => panic!("from {}: {disagreement}", hex(bytes)),
        Some(Ok(())) => {}
    }
    match reencode_named(name, Bytes::copy_from_slice(bytes)) {
        None => panic!("{name} is in RECORD_NAMES, but reencode_named does not know it"),
        Some(Err(_)) => {}
        Some(Ok(output)) if output == bytes => {}
        Some(Ok(output)) => {
            let read_only_added = name == "proto.ConnectRequest"
                && output.len() == bytes.len() + 1
                && output.starts_with(bytes)
                && output.ends_with(&[0]);
            let strings_recoded = has_surrogate_sequence(bytes) && output.len() <= bytes.len();
            assert!(
                read_only_added || strings_recoded,
                "{name} decoded from {} re-encodes as {}",
                hex(bytes),
                hex(&output)
            );
            let same = same_value_named(name, Bytes::copy_from_slice(bytes), output.clone());
            assert!(
                matches!(same, Some(Ok(true))),
                "{name} decoded from {} re-encodes as {}, which decodes {}",
                hex(bytes),
                hex(&output),
                match same {
                    Some(Ok(_)) => "to another value".to_owned(),
                    Some(Err(e)) => format!("with an error: {e}"),
                    None => "as an unknown record".to_owned(),
                }
            );
        }
    }
}

/// Encodes `value`, checking that [`Encode::encoded_len`] agrees with what is written.
fn encode_checked<T: Encode + Debug>(value: &T) -> Bytes {
    let bytes = value.to_bytes();
    assert_eq!(
        bytes.len(),
        value.encoded_len(),
        "encoded_len disagrees with encode for {value:?}"
    );
    bytes
}

/// Checks that `value`, decoded from `input`, encodes back to exactly `input`.
fn assert_reencodes<T: Encode + Debug>(input: &[u8], value: &T) {
    let output = encode_checked(value);
    assert!(
        output == input,
        "{value:?} decoded from {} re-encodes as {}",
        hex(input),
        hex(&output)
    );
}

/// Whether `bytes` hold the start of a 3-byte UTF-16 surrogate sequence (`ed a0..bf`), the form
/// in which Java writes a character outside the BMP or a lone surrogate. Standard UTF-8 never
/// holds that byte pair, so an input without it has every string in standard UTF-8.
fn has_surrogate_sequence(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .any(|pair| pair[0] == 0xed && (0xa0..=0xbf).contains(&pair[1]))
}

/// Checks that `value`, decoded from `input`, encodes back to `input`, or to the same value when
/// bytes may legitimately differ.
///
/// They may only when a string was in Java's surrogate form: such a string decodes to its
/// characters (U+FFFD for an unpaired surrogate), which re-encode as standard UTF-8, 6 bytes of
/// a pair as 4 and a lone surrogate's 3 as U+FFFD's 3. So an input without a surrogate sequence
/// ([`has_surrogate_sequence`]) must come back byte for byte; one with it must come back no
/// longer, and `decode` of the re-encoding must give `value` again.
fn assert_reencodes_to_same<T: Encode + Debug + PartialEq>(
    input: &[u8],
    value: &T,
    decode: impl FnOnce(Bytes) -> Result<T, DecodeError>,
) {
    let output = encode_checked(value);
    if output == input {
        return;
    }
    assert!(
        has_surrogate_sequence(input) && output.len() <= input.len(),
        "{value:?} decoded from {} re-encodes as {}",
        hex(input),
        hex(&output)
    );
    let again = decode(output.clone());
    assert!(
        again.as_ref() == Ok(value),
        "{value:?} decoded from {} re-encodes as {}, which decodes as {again:?}",
        hex(input),
        hex(&output)
    );
}

/// Checks a multi body decoded from `input` against its encoding.
///
/// The decoder ignores the `err` field of every result header (an error result's code is read
/// from its ErrorResponse, as the Java client does) and the type and `err` of the end marker,
/// so only those bytes may differ; every other byte, including each header's type and `done`
/// flag, must be reproduced, and the encoding must decode to the same response. When strings
/// in Java's surrogate form shift the offsets (see [`assert_reencodes_to_same`]), the encoding
/// must be no longer than the input and decode to the same response.
fn assert_multi_reencodes(input: &[u8], response: &MultiResponse) {
    let output = encode_checked(response);
    if has_surrogate_sequence(input) && output != input {
        assert!(
            output.len() <= input.len(),
            "{response:?} decoded from {} re-encodes as {}",
            hex(input),
            hex(&output)
        );
        let again = decode_exact::<MultiResponse>(output).expect("a multi re-encoding must decode");
        assert_eq!(&again, response, "a multi re-encoding decodes differently");
        return;
    }
    assert_eq!(
        output.len(),
        input.len(),
        "{response:?} decoded from {} re-encodes as {}",
        hex(input),
        hex(&output)
    );
    let header_len = MultiHeader::MIN_LEN;
    let mut at = 0;
    for result in &response.results {
        // Type (4 bytes) and done (1 byte); the err field (4 bytes) is not read.
        assert_same(input, &output, at..at + 5, result);
        at += header_len;
        let body = result.encoded_len();
        assert_same(input, &output, at..at + body, result);
        at += body;
    }
    assert_eq!(at + header_len, input.len(), "end marker not last");
    assert_eq!(input[at + 4], 1, "end marker without done");
    let again = decode_exact::<MultiResponse>(output).expect("a multi re-encoding must decode");
    assert_eq!(&again, response, "a multi re-encoding decodes differently");
}

/// Checks that `input` and `output` agree on `range`, the encoding of `result`.
fn assert_same(input: &[u8], output: &[u8], range: Range<usize>, result: &MultiResult) {
    assert!(
        input[range.clone()] == output[range.clone()],
        "{result:?} at {range:?}: decoded from {}, re-encoded as {}",
        hex(input),
        hex(output)
    );
}

/// Lowercase hex, for failure messages.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

mod seeds;
#[cfg(test)]
mod tests;

pub use seeds::{MAX_SEED_VECTOR_LEN, seed_corpus};
