//! The probe of the search for a read/write server: the I/O of one
//! [`Probe`](crate::session::Probe) the session hands out while it is read-only. Which host
//! to ask, when, and what the answer does are the session's (`zk_session`'s
//! `session::read_only_search`, its schedule and the probe's deadline included): this module
//! connects, sends the four-letter word `isro` and reads the answer until the server closes
//! the connection. `rw` means read/write; a read-only server answers `ro`, a server that is not
//! serving `null`. The host name is resolved again on every probe.
//!
//! Over TLS the probes are TLS connections too, with the client's settings: ZooKeeper's
//! Netty server answers four-letter words on its secure port inside TLS, and a TLS ensemble
//! may have no plaintext port at all. A probe over TLS sends `isro` and waits for the answer
//! and the close without half-closing first (a TLS half-close is a `close_notify`, which the
//! server may take as the end of the conversation before it answers).

use std::io;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connect_string::HostAddr;
use crate::session::ProbeOutcome;
use crate::transport::Transport;

/// The most bytes of an answer read (the answers are `rw`, `ro` and `null`).
const MAX_ANSWER: u64 = 64;

/// Asks `host` whether it serves read/write (`isro` answered by `rw`), over `transport`.
/// Unbounded: the session gives up on it at its deadline, and the driver drops it then.
pub(crate) async fn probe(host: HostAddr, transport: Transport) -> ProbeOutcome {
    match ask(&host, &transport).await {
        Ok(true) => ProbeOutcome::ReadWrite,
        Ok(false) => ProbeOutcome::NotReadWrite,
        Err(error) => ProbeOutcome::Failed(error.to_string()),
    }
}

/// `isro` to `host`: whether it answered `rw`.
///
/// # Errors
///
/// The host name did not resolve, or the connection (or its TLS handshake) failed.
async fn ask(host: &HostAddr, transport: &Transport) -> io::Result<bool> {
    let mut stream = transport.open(host).await?;
    stream.write_all(b"isro").await?;
    if transport.is_tls() {
        stream.flush().await?;
    } else {
        stream.shutdown().await?;
    }
    let mut answer = Vec::new();
    match (&mut stream)
        .take(MAX_ANSWER)
        .read_to_end(&mut answer)
        .await
    {
        Ok(_) => {}
        // A TLS server that closed without close_notify, after its answer.
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof && !answer.is_empty() => {}
        Err(error) => return Err(error),
    }
    Ok(is_read_write_answer(&answer))
}

/// Whether the answer to `isro` names a read/write server (its first line is `rw`).
fn is_read_write_answer(answer: &[u8]) -> bool {
    let line = answer.split(|&b| b == b'\n').next().unwrap_or_default();
    line.trim_ascii() == b"rw"
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[test]
    fn answers() {
        assert!(is_read_write_answer(b"rw"));
        assert!(is_read_write_answer(b"rw\n"));
        assert!(!is_read_write_answer(b"ro"));
        assert!(!is_read_write_answer(b"null"));
        assert!(!is_read_write_answer(b""));
        assert!(!is_read_write_answer(b"rwx"));
    }

    /// A fake server answering every `isro` with `answer`; returns its address.
    async fn fake(answer: &'static [u8]) -> HostAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("address").port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut word = [0; 4];
                    if stream.read_exact(&mut word).await.is_ok() && &word == b"isro" {
                        let _ = stream.write_all(answer).await;
                    }
                });
            }
        });
        HostAddr::new("127.0.0.1", port)
    }

    #[tokio::test]
    async fn probe_reads_the_answer() {
        let rw = fake(b"rw").await;
        let ro = fake(b"ro").await;
        let null = fake(b"null").await;
        assert_eq!(probe(rw, Transport::Tcp).await, ProbeOutcome::ReadWrite);
        assert_eq!(probe(ro, Transport::Tcp).await, ProbeOutcome::NotReadWrite);
        assert_eq!(
            probe(null, Transport::Tcp).await,
            ProbeOutcome::NotReadWrite
        );
        let closed = HostAddr::new("127.0.0.1", zk_testkit::free_port().expect("free port"));
        assert!(matches!(
            probe(closed, Transport::Tcp).await,
            ProbeOutcome::Failed(_)
        ));
    }
}
