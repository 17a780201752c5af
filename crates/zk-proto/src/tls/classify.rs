//! From rustls' errors to [`TlsFailure`]: what went wrong, in the user's terms.
//!
//! - The server's certificate: `NotValidForName` is a name mismatch, any other certificate
//!   error an untrusted certificate.
//! - An alert from the server about a certificate (the only certificate it judges is the
//!   client's): a client certificate required when none was configured, refused otherwise.
//!   With TLS 1.3 the alert comes after the client's side of the handshake is done, on the
//!   first read: [`Classified`] maps errors on the open stream the same way.
//! - A plaintext peer: [`Counting`] remembers the first byte the server sent. Bytes that do
//!   not start a TLS record (content types 20 to 24) mean a server that does not speak TLS;
//!   a connection closed or reset before any byte means the server gave up on the client
//!   hello, as a plaintext ZooKeeper port does (it reads the hello's first four bytes as a
//!   frame length of about 369 MB, refuses it and closes).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::task::{Context as TaskContext, Poll};

use rustls::{AlertDescription, CertificateError};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::TlsFailure;

/// What the classification needs to know about the connection.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// The name the server's certificate was verified against.
    pub(crate) server_name: String,
    /// Whether the client presented a certificate.
    pub(crate) client_cert: bool,
}

/// The first byte the server sent, once there is one.
#[derive(Debug, Clone)]
pub(crate) struct FirstByte(Arc<AtomicU16>);

const NO_BYTE: u16 = u16::MAX;

impl FirstByte {
    pub(crate) fn get(&self) -> Option<u8> {
        u8::try_from(self.0.load(Ordering::Relaxed)).ok()
    }
}

/// Whether `byte` can start a TLS record (change_cipher_spec, alert, handshake,
/// application_data, heartbeat).
fn starts_a_tls_record(byte: u8) -> bool {
    (20..=24).contains(&byte)
}

impl Context {
    /// The error for a failed TLS handshake: a [`TlsFailure`] inside an I/O error when it is
    /// one, the I/O error as it was otherwise (a timeout, a refused connection).
    pub(crate) fn classify_handshake(&self, error: io::Error, first: Option<u8>) -> io::Error {
        let failure = match rustls_error(&error) {
            Some(tls) => self.failure(tls, first),
            None => match (error.kind(), first) {
                (
                    io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe,
                    None,
                ) => TlsFailure::ClosedBeforeHandshake {
                    detail: error.to_string(),
                },
                (_, Some(byte)) if !starts_a_tls_record(byte) => TlsFailure::NotTls {
                    detail: format!("first byte {byte:#04x}, then: {error}"),
                },
                _ => return error,
            },
        };
        io::Error::new(error.kind(), failure)
    }

    /// The error for a failure on the open stream: rustls' errors (an alert) classified, any
    /// other as it was.
    fn classify_open(&self, error: io::Error) -> io::Error {
        match rustls_error(&error) {
            Some(tls) => io::Error::new(error.kind(), self.failure(tls, None)),
            None => error,
        }
    }

    fn failure(&self, error: &rustls::Error, first: Option<u8>) -> TlsFailure {
        let detail = error.to_string();
        match error {
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            ) => TlsFailure::NameMismatch {
                server_name: self.server_name.clone(),
                detail,
            },
            rustls::Error::InvalidCertificate(_) => TlsFailure::UntrustedCertificate { detail },
            rustls::Error::AlertReceived(alert) => self.alert(*alert),
            _ if first.is_some_and(|byte| !starts_a_tls_record(byte)) => TlsFailure::NotTls {
                detail: format!("first byte {:#04x}: {detail}", first.unwrap_or_default()),
            },
            _ => TlsFailure::Handshake { detail },
        }
    }

    fn alert(&self, alert: AlertDescription) -> TlsFailure {
        let name = format!("{alert:?}");
        let about_a_certificate = matches!(
            alert,
            AlertDescription::CertificateRequired
                | AlertDescription::BadCertificate
                | AlertDescription::UnsupportedCertificate
                | AlertDescription::CertificateRevoked
                | AlertDescription::CertificateExpired
                | AlertDescription::CertificateUnknown
                | AlertDescription::UnknownCA
                | AlertDescription::AccessDenied
        );
        match (about_a_certificate, self.client_cert) {
            (true, false) => TlsFailure::ClientCertificateRequired { alert: name },
            (true, true) => TlsFailure::ClientCertificateRejected { alert: name },
            (false, _) => TlsFailure::Handshake {
                detail: format!("the server sent the alert {name}"),
            },
        }
    }
}

/// How long [`alert_after_write_failure`] reads for the alert the server sent.
const ALERT_READ: std::time::Duration = std::time::Duration::from_millis(200);

/// When the handshake failed on a write to a connection the server closed (broken pipe,
/// reset), reads what the server sent before closing and, if it holds a plaintext TLS alert
/// record, returns that alert as the error: the server's reason, which a retry would meet
/// again, rather than a lost connection, which a retry may cure. Any other error as it was.
pub(crate) async fn alert_after_write_failure<S: AsyncRead + Unpin>(
    error: io::Error,
    stream: &mut S,
) -> io::Error {
    let closed_by_peer = matches!(
        error.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
    );
    if rustls_error(&error).is_some() || !closed_by_peer {
        return error;
    }
    let mut received = Vec::new();
    let read = async {
        let mut chunk = [0u8; 1024];
        // Bounded: a handshake's worth of records at most.
        while received.len() < 16 * 1024 {
            match tokio::io::AsyncReadExt::read(stream, &mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let _ = tokio::time::timeout(ALERT_READ, read).await;
    match find_alert(&received) {
        Some(alert) => io::Error::new(error.kind(), rustls::Error::AlertReceived(alert)),
        None => error,
    }
}

/// The description of the first plaintext alert record in `bytes` (content type 21, a TLS
/// version 3.x, length 2), walking the records from the start.
fn find_alert(bytes: &[u8]) -> Option<AlertDescription> {
    let mut rest = bytes;
    while let [content_type, 3, _, len_hi, len_lo, body @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*len_hi, *len_lo]));
        if *content_type == 21 && len == 2 {
            return body.get(1).map(|d| AlertDescription::from(*d));
        }
        rest = body.get(len..)?;
    }
    None
}

fn rustls_error(error: &io::Error) -> Option<&rustls::Error> {
    error.get_ref()?.downcast_ref::<rustls::Error>()
}

/// A stream that remembers the first byte read from it.
#[derive(Debug)]
pub(crate) struct Counting<S> {
    inner: S,
    first: FirstByte,
}

impl<S> Counting<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self {
            inner,
            first: FirstByte(Arc::new(AtomicU16::new(NO_BYTE))),
        }
    }

    pub(crate) fn first_byte(&self) -> FirstByte {
        self.first.clone()
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counting<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Some(&byte) = buf.filled().get(before) {
            let _ = self.first.0.compare_exchange(
                NO_BYTE,
                u16::from(byte),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counting<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// An open TLS stream whose rustls errors (an alert from the server) come out as
/// [`TlsFailure`]s.
#[derive(Debug)]
pub(crate) struct Classified<S> {
    inner: S,
    context: Context,
}

impl<S> Classified<S> {
    pub(crate) fn new(inner: S, context: Context) -> Self {
        Self { inner, context }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Classified<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Err(error)) => Poll::Ready(Err(self.context.classify_open(error))),
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Classified<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Ready(Err(error)) => Poll::Ready(Err(self.context.classify_open(error))),
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(Err(error)) => Poll::Ready(Err(self.context.classify_open(error))),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_alert_record_is_found_behind_handshake_records() {
        // A server hello (handshake record of 3 bytes), then alert bad_certificate (42).
        let bytes = [22, 3, 3, 0, 3, 2, 0, 0, 21, 3, 3, 0, 2, 2, 42];
        assert_eq!(find_alert(&bytes), Some(AlertDescription::BadCertificate));
        assert_eq!(find_alert(&bytes[..13]), None, "cut short");
        assert_eq!(
            find_alert(&[21, 3, 1, 0, 2, 2, 116]),
            Some(AlertDescription::CertificateRequired)
        );
        assert_eq!(find_alert(b"HTTP/1.1 400"), None);
        assert_eq!(
            find_alert(&[22, 3, 3, 0xff, 0xff, 1]),
            None,
            "a length past the end"
        );
    }

    #[tokio::test]
    async fn a_write_failure_with_an_alert_behind_it_is_the_alert() {
        let broken = || io::Error::new(io::ErrorKind::BrokenPipe, "broken pipe");
        let mut with_alert: &[u8] = &[21, 3, 3, 0, 2, 2, 48];
        let error = alert_after_write_failure(broken(), &mut with_alert).await;
        assert!(
            matches!(
                rustls_error(&error),
                Some(rustls::Error::AlertReceived(AlertDescription::UnknownCA))
            ),
            "{error:?}"
        );
        let mut nothing: &[u8] = &[];
        let error = alert_after_write_failure(broken(), &mut nothing).await;
        assert!(rustls_error(&error).is_none());
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }

    use super::*;

    fn context(client_cert: bool) -> Context {
        Context {
            server_name: "127.0.0.1".into(),
            client_cert,
        }
    }

    fn tls_io(error: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, error)
    }

    fn failure(error: io::Error) -> TlsFailure {
        let carried = error
            .get_ref()
            .and_then(|e| e.downcast_ref::<TlsFailure>())
            .cloned();
        carried.unwrap_or_else(|| panic!("not a TLS failure: {error}"))
    }

    #[test]
    fn certificate_errors() {
        let c = context(false);
        let name = c.classify_handshake(
            tls_io(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName,
            )),
            Some(22),
        );
        assert!(matches!(
            failure(name),
            TlsFailure::NameMismatch { server_name, .. } if server_name == "127.0.0.1"
        ));
        for error in [
            CertificateError::UnknownIssuer,
            CertificateError::Expired,
            CertificateError::BadSignature,
        ] {
            let untrusted =
                c.classify_handshake(tls_io(rustls::Error::InvalidCertificate(error)), Some(22));
            assert!(matches!(
                failure(untrusted),
                TlsFailure::UntrustedCertificate { .. }
            ));
        }
    }

    #[test]
    fn certificate_alerts_name_the_client_certificate() {
        for alert in [
            AlertDescription::CertificateRequired,
            AlertDescription::BadCertificate,
        ] {
            let error = || tls_io(rustls::Error::AlertReceived(alert));
            assert!(matches!(
                failure(context(false).classify_handshake(error(), Some(21))),
                TlsFailure::ClientCertificateRequired { .. }
            ));
            assert!(matches!(
                failure(context(true).classify_open(error())),
                TlsFailure::ClientCertificateRejected { .. }
            ));
        }
        let other = tls_io(rustls::Error::AlertReceived(
            AlertDescription::ProtocolVersion,
        ));
        assert!(matches!(
            failure(context(false).classify_handshake(other, Some(21))),
            TlsFailure::Handshake { .. }
        ));
    }

    #[test]
    fn plaintext_peers() {
        let c = context(false);
        // A server that answered with a ZooKeeper frame, or text.
        let corrupt = c.classify_handshake(
            tls_io(rustls::Error::InvalidMessage(
                rustls::InvalidMessage::InvalidContentType,
            )),
            Some(0),
        );
        assert!(matches!(failure(corrupt), TlsFailure::NotTls { .. }));
        // Closed or reset before any byte: a plaintext ZooKeeper port.
        for kind in [io::ErrorKind::UnexpectedEof, io::ErrorKind::ConnectionReset] {
            let closed = c.classify_handshake(io::Error::new(kind, "gone"), None);
            assert!(matches!(
                failure(closed),
                TlsFailure::ClosedBeforeHandshake { .. }
            ));
        }
        // Other I/O errors stay I/O errors (transient).
        let refused = c.classify_handshake(io::ErrorKind::TimedOut.into(), None);
        assert_eq!(refused.kind(), io::ErrorKind::TimedOut);
        assert!(refused.get_ref().is_none());
    }
}
