//! The encode and decode traits, and the cursor decoding reads from.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::{DecodeError, DecodeErrorKind};

/// A value with a jute encoding.
pub trait Encode {
    /// The exact number of bytes [`Encode::encode`] writes.
    fn encoded_len(&self) -> usize;

    /// Appends the encoding to `buf`.
    fn encode<B: BufMut>(&self, buf: &mut B);

    /// The encoding as a new buffer of exactly [`Encode::encoded_len`] bytes.
    fn to_bytes(&self) -> Bytes {
        let mut buf = BytesMut::with_capacity(self.encoded_len());
        self.encode(&mut buf);
        buf.freeze()
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encoded_len(&self) -> usize {
        (**self).encoded_len()
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        (**self).encode(buf)
    }
}

/// Two values back to back, such as a request header and its body.
impl<A: Encode, B: Encode> Encode for (A, B) {
    fn encoded_len(&self) -> usize {
        self.0.encoded_len() + self.1.encoded_len()
    }
    fn encode<W: BufMut>(&self, buf: &mut W) {
        self.0.encode(buf);
        self.1.encode(buf);
    }
}

/// Nothing: the body of a header-only message (ping, closeSession, whoAmI).
impl Encode for () {
    fn encoded_len(&self) -> usize {
        0
    }
    fn encode<B: BufMut>(&self, _buf: &mut B) {}
}

/// A value that can be read from a jute encoding.
pub trait Decode: Sized {
    /// The fewest bytes any encoding of this type takes. Vector counts are checked against it
    /// before anything is allocated.
    const MIN_LEN: usize;

    /// Reads one value from the front of `reader`.
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError>;
}

/// Decodes a `T` that must fill `bytes` exactly: trailing bytes are an error.
pub fn decode_exact<T: Decode>(bytes: Bytes) -> Result<T, DecodeError> {
    let mut reader = Reader::new(bytes);
    let value = T::decode(&mut reader).map_err(|e| e.within(std::any::type_name::<T>()))?;
    reader.finish::<T>()?;
    Ok(value)
}

/// [`DecodeErrorKind::TrailingBytes`] unless `left` is 0; `T` names the record. The end check
/// of both readers.
pub(crate) fn nothing_left<T>(left: usize) -> Result<(), DecodeError> {
    match left {
        0 => Ok(()),
        count => Err(DecodeError::at(
            DecodeErrorKind::TrailingBytes(count),
            std::any::type_name::<T>(),
        )),
    }
}

/// A cursor over received bytes.
///
/// Buffers are returned as [`Bytes`] slices of the input, so decoding a data payload copies
/// nothing. Every read checks the bytes that are left first, so a hostile length can never make
/// decoding allocate more than the input holds.
#[derive(Debug, Clone)]
pub struct Reader {
    buf: Bytes,
}

impl Reader {
    /// A reader over `buf`.
    pub fn new(buf: Bytes) -> Self {
        Self { buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes not read yet, without consuming them.
    pub fn rest(&self) -> &Bytes {
        &self.buf
    }

    /// Consumes the reader, giving the bytes not read.
    pub fn into_rest(self) -> Bytes {
        self.buf
    }

    /// Fails with [`DecodeErrorKind::TrailingBytes`] if bytes are left; `T` names the record.
    pub fn finish<T>(&self) -> Result<(), DecodeError> {
        nothing_left::<T>(self.buf.len())
    }

    fn need(&self, needed: usize) -> Result<(), DecodeError> {
        if self.buf.len() < needed {
            return Err(DecodeError::new(DecodeErrorKind::UnexpectedEnd {
                needed,
                remaining: self.buf.len(),
            }));
        }
        Ok(())
    }

    /// Reads one byte.
    pub fn read_u8(&mut self) -> Result<u8, DecodeError> {
        self.need(1)?;
        Ok(self.buf.get_u8())
    }

    /// Reads a big-endian `int`.
    pub fn read_i32(&mut self) -> Result<i32, DecodeError> {
        self.need(4)?;
        Ok(self.buf.get_i32())
    }

    /// Reads a big-endian `long`.
    pub fn read_i64(&mut self) -> Result<i64, DecodeError> {
        self.need(8)?;
        Ok(self.buf.get_i64())
    }

    /// Reads a length prefix: `None` for -1 (null), an error below -1.
    pub fn read_len(&mut self) -> Result<Option<usize>, DecodeError> {
        match self.read_i32()? {
            -1 => Ok(None),
            len if len < -1 => Err(DecodeError::new(DecodeErrorKind::NegativeLength(len))),
            len => Ok(Some(len as usize)),
        }
    }

    /// Takes the next `len` bytes as a slice of the input, after checking they are there.
    pub fn read_slice(&mut self, len: usize) -> Result<Bytes, DecodeError> {
        self.check_remaining(len)?;
        Ok(self.buf.split_to(len))
    }

    /// Lends the next `len` bytes to `read` and moves past them, after checking they are there.
    /// Unlike [`read_slice`](Self::read_slice), no slice of the input is made, so the input's
    /// reference count is not touched: for values copied out at once (strings).
    pub fn read_borrowed<T>(
        &mut self,
        len: usize,
        read: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, DecodeError> {
        self.check_remaining(len)?;
        let value = read(&self.buf[..len]);
        self.buf.advance(len);
        Ok(value)
    }

    fn check_remaining(&self, len: usize) -> Result<(), DecodeError> {
        if len > self.buf.len() {
            return Err(DecodeError::new(DecodeErrorKind::LengthExceedsInput {
                len,
                remaining: self.buf.len(),
            }));
        }
        Ok(())
    }
}
