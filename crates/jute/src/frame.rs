//! The length-prefixed frame codec: a 4-byte big-endian signed length, then that many bytes.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use crate::reader::Encode;

/// The default largest frame, 1,048,575 bytes (`0xfffff`).
///
/// It is ZooKeeper 3.8's client default, `ZKClientConfig.CLIENT_MAX_PACKET_LENGTH_DEFAULT`
/// (the `jute.maxbuffer` client property), which is also the server's default limit on incoming
/// frames: a larger request makes the server drop the connection without a reply.
pub const DEFAULT_MAX_FRAME_LEN: usize = 0xfffff;

/// Bytes of the length prefix.
const PREFIX_LEN: usize = 4;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The peer sent a negative length prefix.
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    /// A frame longer than the configured maximum, received or about to be sent.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    TooLong {
        /// The frame's length.
        len: usize,
        /// The configured maximum.
        max: usize,
        /// The first four bytes of the received frame's body, when they had already arrived
        /// with its length prefix: a reply's xid, naming the request the refused reply
        /// answers. `None` on encode.
        xid: Option<i32>,
    },
    /// The underlying transport failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A [`Decoder`] and [`Encoder`] of length-prefixed frames.
///
/// Decoded frames are the bytes after the prefix, as [`Bytes`] split off the read buffer
/// without copying. A bad length prefix is rejected as soon as its 4 bytes are in, before any
/// buffer space is reserved for the frame. Any [`Encode`] value can be sent; the prefix is
/// computed from [`Encode::encoded_len`], and values over the maximum are refused before
/// anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameCodec {
    max_frame_len: usize,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameCodec {
    /// A codec with the [`DEFAULT_MAX_FRAME_LEN`].
    pub const fn new() -> Self {
        Self {
            max_frame_len: DEFAULT_MAX_FRAME_LEN,
        }
    }

    /// A codec accepting frames of at most `max_frame_len` bytes (capped at `i32::MAX`, the
    /// largest length the prefix can carry).
    pub fn with_max_frame_len(max_frame_len: usize) -> Self {
        Self {
            max_frame_len: max_frame_len.min(i32::MAX as usize),
        }
    }

    /// The largest frame, in bytes, not counting the prefix.
    pub const fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, FrameError> {
        let Some(prefix) = src.get(..PREFIX_LEN) else {
            return Ok(None);
        };
        let declared = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        let len = usize::try_from(declared).map_err(|_| FrameError::NegativeLength(declared))?;
        if len > self.max_frame_len {
            // Refused from its prefix: the body is never buffered, but the bytes after the
            // prefix that are already in say which request the reply was for.
            let xid = src
                .get(PREFIX_LEN..PREFIX_LEN + 4)
                .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            return Err(FrameError::TooLong {
                len,
                max: self.max_frame_len,
                xid,
            });
        }
        if src.len() < PREFIX_LEN + len {
            // Checked against the limit above, so this reservation is bounded.
            src.reserve(PREFIX_LEN + len - src.len());
            return Ok(None);
        }
        src.advance(PREFIX_LEN);
        Ok(Some(src.split_to(len).freeze()))
    }
}

impl<T: Encode> Encoder<T> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), FrameError> {
        let len = item.encoded_len();
        if len > self.max_frame_len {
            return Err(FrameError::TooLong {
                len,
                max: self.max_frame_len,
                xid: None,
            });
        }
        dst.reserve(PREFIX_LEN + len);
        // `len <= max_frame_len <= i32::MAX`, checked above and in `with_max_frame_len`.
        dst.put_i32(len as i32);
        item.encode(dst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::OpCode;
    use crate::records::RequestHeader;

    #[test]
    fn waits_for_prefix_and_body() {
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&[0u8, 0, 0][..]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&[3, 1, 2]);
        assert!(codec.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&[3, 0, 0]);
        assert_eq!(
            codec.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(&[1, 2, 3])
        );
        assert_eq!(&buf[..], &[0, 0]);
    }

    #[test]
    fn rejects_negative_length_before_reserving() {
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xfe][..]);
        let capacity = buf.capacity();
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::NegativeLength(-2))
        ));
        assert_eq!(buf.capacity(), capacity);
    }

    #[test]
    fn rejects_oversized_length_before_reserving() {
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&[0x7fu8, 0xff, 0xff, 0xff, 0][..]);
        let capacity = buf.capacity();
        match codec.decode(&mut buf) {
            Err(FrameError::TooLong { len, max, xid }) => {
                assert_eq!(len, i32::MAX as usize);
                assert_eq!(max, DEFAULT_MAX_FRAME_LEN);
                // One byte of the body only: no xid yet.
                assert_eq!(xid, None);
            }
            other => panic!("expected TooLong, got {other:?}"),
        }
        assert_eq!(buf.capacity(), capacity);
    }

    #[test]
    fn accepts_exactly_the_maximum() {
        let mut codec = FrameCodec::with_max_frame_len(5);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 5, 1, 2, 3, 4, 5][..]);
        assert_eq!(codec.decode(&mut buf).unwrap().unwrap().len(), 5);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 6][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::TooLong {
                len: 6,
                max: 5,
                xid: None
            })
        ));
    }

    #[test]
    fn an_oversized_frame_names_its_xid_when_it_arrived_with_the_prefix() {
        let mut codec = FrameCodec::with_max_frame_len(5);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 6, 0, 0, 0x01, 0x02, 9][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(FrameError::TooLong {
                len: 6,
                max: 5,
                xid: Some(0x0102)
            })
        ));
    }

    #[test]
    fn encodes_prefix_then_record() {
        let mut codec = FrameCodec::new();
        let mut out = BytesMut::new();
        let ping = RequestHeader {
            xid: -2,
            op_code: OpCode::PING,
        };
        codec.encode(&ping, &mut out).unwrap();
        assert_eq!(&out[..], &[0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11]);
    }

    #[test]
    fn refuses_to_encode_oversized() {
        let mut codec = FrameCodec::with_max_frame_len(4);
        let mut out = BytesMut::new();
        let ping = RequestHeader {
            xid: -2,
            op_code: OpCode::PING,
        };
        assert!(matches!(
            codec.encode(&ping, &mut out),
            Err(FrameError::TooLong {
                len: 8,
                max: 4,
                xid: None
            })
        ));
        assert!(out.is_empty());
    }
}
