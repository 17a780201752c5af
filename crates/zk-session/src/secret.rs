//! [`Secret`]: bytes that must not leak (a session password, credentials), kept out of every
//! `Debug` output and wiped from memory when dropped.

use std::fmt;

use bytes::Bytes;
use zeroize::Zeroizing;

/// Secret bytes: a session's password, `addAuth` credentials. `Debug` shows
/// `Secret(<redacted>)`; the memory is overwritten with zeros when the value is dropped (the
/// `zeroize` crate). Copies made to go on the wire (a frame being written) are not: they live
/// as long as the write.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(Zeroizing<Vec<u8>>);

impl Secret {
    /// Wraps `bytes`.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Secret(Zeroizing::new(bytes.into()))
    }

    /// The bytes themselves: for the wire or for handing to another process, never for a log.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }

    /// A copy for a frame about to be sent.
    pub(crate) fn to_wire(&self) -> Bytes {
        Bytes::copy_from_slice(&self.0)
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl From<Vec<u8>> for Secret {
    fn from(bytes: Vec<u8>) -> Self {
        Secret::new(bytes)
    }
}

impl From<&[u8]> for Secret {
    fn from(bytes: &[u8]) -> Self {
        Secret::new(bytes.to_vec())
    }
}

impl From<Bytes> for Secret {
    /// Copies the bytes (a `Bytes` may be shared: it cannot be wiped).
    fn from(bytes: Bytes) -> Self {
        Secret::new(bytes.to_vec())
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Secret::new(text.as_bytes().to_vec())
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Secret::new(text.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_bytes() {
        let secret = Secret::from("hunter2");
        assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
        assert_eq!(
            format!("{:?}", Some(secret.clone())),
            "Some(Secret(<redacted>))"
        );
        assert_eq!(secret.expose(), b"hunter2");
        assert_eq!(secret.to_wire(), Bytes::from_static(b"hunter2"));
    }
}
