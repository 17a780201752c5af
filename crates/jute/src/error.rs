//! Decoding errors.

/// Why bytes could not be decoded into a record.
///
/// Every error names the place where decoding stopped ([`DecodeError::location`]): the
/// innermost record field being read, such as `Stat.czxid`, or the record type for errors
/// about the whole input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} (at {at})")]
pub struct DecodeError {
    kind: DecodeErrorKind,
    at: &'static str,
}

/// The kinds of [`DecodeError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeErrorKind {
    /// The input ended inside a value.
    #[error("input ended: {needed} bytes needed, {remaining} left")]
    UnexpectedEnd {
        /// Bytes the value needs.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A buffer, string or vector length below -1 (-1 itself means null).
    #[error("negative length {0}")]
    NegativeLength(i32),
    /// A buffer or string length larger than the bytes that are left.
    #[error("length {len} exceeds the {remaining} bytes left")]
    LengthExceedsInput {
        /// The declared length.
        len: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A vector count whose smallest possible encoding is larger than the bytes that are left.
    #[error("vector of {count} elements needs at least {needed} bytes, {remaining} left")]
    CountExceedsInput {
        /// The declared element count.
        count: usize,
        /// The fewest bytes that many elements can take.
        needed: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// A boolean byte other than 0 or 1.
    #[error("invalid boolean byte {0:#04x}")]
    InvalidBool(u8),
    /// A string that is not valid UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// Bytes left over after a record that must fill its input.
    #[error("{0} trailing bytes")]
    TrailingBytes(usize),
    /// A multi header with an operation type the multi format does not allow.
    #[error("operation type {0} is not allowed in a multi")]
    InvalidMultiOp(i32),
    /// A frame decoded as a notification ([`ServerMessage::decode_notification`]) whose
    /// reply header has another xid than -1.
    ///
    /// [`ServerMessage::decode_notification`]: crate::ServerMessage::decode_notification
    #[error("xid {0} is not the notification xid -1")]
    NotANotification(i32),
    /// A response was requested for an op code that has none or is unknown.
    #[error("op code {0} has no response record")]
    NoResponseForOpCode(i32),
}

impl DecodeError {
    /// An error of `kind`, not yet placed in a record.
    pub(crate) const fn new(kind: DecodeErrorKind) -> Self {
        Self { kind, at: "" }
    }

    /// An error of `kind` placed at `at`.
    pub(crate) const fn at(kind: DecodeErrorKind, at: &'static str) -> Self {
        Self { kind, at }
    }

    /// Places the error at `at` unless an inner record already placed it.
    pub(crate) fn within(mut self, at: &'static str) -> Self {
        if self.at.is_empty() {
            self.at = at;
        }
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &DecodeErrorKind {
        &self.kind
    }

    /// Where decoding stopped: `Record.field`, or a record or type name.
    pub fn location(&self) -> &'static str {
        self.at
    }
}
