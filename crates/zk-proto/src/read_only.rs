//! The background search for a read/write server while the session is read-only.
//!
//! While the session is [`ConnectedReadOnly`](crate::SessionState::ConnectedReadOnly), the
//! driver asks the **other** hosts of the list, one at a time and round-robin starting after
//! the current one, whether they serve read/write, with the four-letter word `isro`: connect,
//! send `isro`, read the answer until the server closes the connection. `rw` means read/write;
//! a read-only server answers `ro`, a server that is not serving `null`; a refused, reset or
//! timed-out probe counts as "not found". The host name is resolved again on every probe.
//!
//! Schedule, as the Java client's (`ClientCnxn.pingRwServer`): the first probe
//! [`MIN_INTERVAL`] (100 ms) after the read-only session was established, then the wait
//! doubles after every probe, whatever its outcome, up to [`MAX_INTERVAL`] (60 s). The wait
//! runs from the end of one probe to the start of the next, and each probe is bounded by
//! [`PROBE_TIMEOUT`] (the Java client uses a 1 s read timeout and blocks its whole I/O thread
//! meanwhile; here the probe is a future raced in the driver's loop, so the connection keeps
//! moving). Every new read-only connection starts the schedule again from 100 ms.
//!
//! When a probe answers `rw`, the driver drops the read-only connection (requests in flight
//! fail with `ConnectionLoss`, as on any disconnect) and dials that host next.
//!
//! Over TLS the probes are TLS connections too, with the client's settings: ZooKeeper's
//! Netty server answers four-letter words on its secure port inside TLS, and a TLS ensemble
//! may have no plaintext port at all. A probe over TLS sends `isro` and waits for the answer
//! and the close without half-closing first (a TLS half-close is a `close_notify`, which the
//! server may take as the end of the conversation before it answers).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::connect_string::HostAddr;
use crate::transport::Transport;

/// The wait before the first probe.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The longest wait between two probes.
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(60);
/// The bound on one probe: resolving, connecting, sending `isro` and reading the answer.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most bytes of an answer read (the answers are `rw`, `ro` and `null`).
const MAX_ANSWER: u64 = 64;

/// The wait after `interval`: doubled, at most [`MAX_INTERVAL`].
pub(crate) fn next_interval(interval: Duration) -> Duration {
    interval.saturating_mul(2).min(MAX_INTERVAL)
}

/// Probes `targets` (index in the host list, host) round-robin on the schedule above until one
/// answers `rw`, and returns it. Never completes when `targets` is empty. Cancel by dropping.
pub(crate) async fn search(
    targets: Vec<(usize, HostAddr)>,
    transport: Transport,
) -> (usize, HostAddr) {
    if targets.is_empty() {
        return std::future::pending().await;
    }
    let mut interval = MIN_INTERVAL;
    let mut next = 0;
    loop {
        tokio::time::sleep(interval).await;
        let (index, host) = &targets[next];
        match probe(host, PROBE_TIMEOUT, &transport).await {
            Ok(true) => return (*index, host.clone()),
            Ok(false) => tracing::debug!(%host, "not a read/write server"),
            Err(error) => tracing::debug!(%host, %error, "read/write probe failed"),
        }
        interval = next_interval(interval);
        next = (next + 1) % targets.len();
    }
}

/// Asks `host` whether it serves read/write (`isro` answered by `rw`), within `timeout`,
/// over `transport`.
///
/// # Errors
///
/// The host name did not resolve, the connection (or its TLS handshake) failed, or the probe
/// timed out.
pub(crate) async fn probe(
    host: &HostAddr,
    timeout: Duration,
    transport: &Transport,
) -> io::Result<bool> {
    let ask = async {
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
    };
    match tokio::time::timeout(timeout, ask).await {
        Ok(result) => result,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the read/write probe timed out",
        )),
    }
}

/// Whether the answer to `isro` names a read/write server (its first line is `rw`).
fn is_read_write_answer(answer: &[u8]) -> bool {
    let line = answer.split(|&b| b == b'\n').next().unwrap_or_default();
    line.trim_ascii() == b"rw"
}

/// Resolves `host` now (a changed DNS entry is picked up) and picks one of its addresses at
/// random.
///
/// # Errors
///
/// The lookup failed or gave no address.
pub(crate) async fn resolve(host: &HostAddr) -> io::Result<SocketAddr> {
    let addrs: Vec<_> = tokio::net::lookup_host((host.host.as_str(), host.port))
        .await?
        .collect();
    if addrs.is_empty() {
        return Err(io::Error::other("the host name resolved to no address"));
    }
    Ok(addrs[fastrand::usize(..addrs.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    #[test]
    fn intervals_double_up_to_a_minute() {
        let mut interval = MIN_INTERVAL;
        let mut seen = vec![interval];
        for _ in 0..12 {
            interval = next_interval(interval);
            seen.push(interval);
        }
        let ms: Vec<u128> = seen.iter().map(Duration::as_millis).collect();
        assert_eq!(
            ms,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000, 60000, 60000
            ]
        );
    }

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
        let tcp = Transport::Tcp;
        assert!(probe(&rw, PROBE_TIMEOUT, &tcp).await.expect("probe"));
        assert!(!probe(&ro, PROBE_TIMEOUT, &tcp).await.expect("probe"));
        let closed = HostAddr::new("127.0.0.1", zk_testkit::free_port().expect("free port"));
        assert!(probe(&closed, PROBE_TIMEOUT, &tcp).await.is_err());
    }

    #[tokio::test]
    async fn probe_times_out_on_a_silent_server() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let host = HostAddr::new("127.0.0.1", listener.local_addr().expect("address").port());
        // Accepted by the backlog, never answered.
        let error = probe(&host, Duration::from_millis(200), &Transport::Tcp)
            .await
            .expect_err("no answer");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        drop(listener);
    }

    #[tokio::test]
    async fn search_skips_servers_that_are_not_read_write() {
        let ro = fake(b"ro").await;
        let null = fake(b"null").await;
        let rw = fake(b"rw").await;
        let targets = vec![(1, ro), (2, null), (4, rw.clone())];
        let start = tokio::time::Instant::now();
        let found = tokio::time::timeout(Duration::from_secs(10), search(targets, Transport::Tcp))
            .await
            .expect("found");
        assert_eq!(found, (4, rw));
        // 100 + 200 + 400 ms of waits before the third probe.
        assert!(start.elapsed() >= Duration::from_millis(700));
    }
}
