//! How connections to the servers are opened: TCP, or TLS over TCP (feature `tls`). The
//! session's connections and the read-only search's probes go the same way, so a TLS
//! ensemble is only ever spoken to over TLS.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::connect_string::HostAddr;

/// The read side of a connection.
pub(crate) type ReadHalf = Box<dyn ReadSide>;

/// What the driver reads from: a byte stream that may also take a read low-water mark.
pub(crate) trait ReadSide: AsyncRead + Send + Unpin {
    /// Asks the kernel to report the connection readable only once `bytes` bytes are in
    /// ([`Session::read_low_water`](crate::session::Session::read_low_water)). `Ok(false)`:
    /// this side has no such mark (TLS, whose reader may hold a record's plaintext already;
    /// an in-memory stream; a platform other than Linux), and is read as it comes.
    ///
    /// # Errors
    ///
    /// The socket refused the mark.
    fn set_read_low_water(&mut self, bytes: usize) -> io::Result<bool> {
        let _ = bytes;
        Ok(false)
    }
}

/// Plain TCP: the mark is the socket's `SO_RCVLOWAT` (Linux).
impl ReadSide for tokio::net::tcp::OwnedReadHalf {
    #[cfg(target_os = "linux")]
    fn set_read_low_water(&mut self, bytes: usize) -> io::Result<bool> {
        let socket: &TcpStream = self.as_ref();
        nix::sys::socket::setsockopt(socket, low_water::RecvLowWater, &bytes)?;
        Ok(true)
    }
}

/// TLS, and the in-memory streams of tests: no mark.
impl<T: AsyncRead + Send> ReadSide for tokio::io::ReadHalf<T> {}

#[cfg(target_os = "linux")]
mod low_water {
    use nix::{setsockopt_impl, sockopt_impl};

    sockopt_impl!(
        /// `SO_RCVLOWAT`: the bytes a TCP socket gathers before it reports itself readable
        /// (a non-blocking read still returns fewer). Linux caps it at half the receive
        /// buffer, and still wakes a reader whose receive window is nearly full.
        RecvLowWater,
        SetOnly,
        libc::SOL_SOCKET,
        libc::SO_RCVLOWAT,
        usize
    );
}
/// The write side of a connection.
pub(crate) type WriteHalf = Box<dyn AsyncWrite + Send + Unpin>;
/// A connection attempt in progress.
pub(crate) type Connecting =
    Pin<Box<dyn Future<Output = io::Result<(ReadHalf, WriteHalf)>> + Send>>;
/// Opens a connection to a host: TCP in production, an in-memory stream in tests.
pub(crate) type Dialer = Arc<dyn Fn(HostAddr) -> Connecting + Send + Sync>;

/// A byte stream to a server.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// How to open a connection.
#[derive(Debug, Clone)]
pub(crate) enum Transport {
    /// Plain TCP.
    Tcp,
    /// TLS over TCP, with one client's settings.
    #[cfg(feature = "tls")]
    Tls(Arc<crate::tls::Connector>),
}

impl Transport {
    /// Resolves `host` (again on every call: a DNS change is picked up on reconnect), opens
    /// a TCP connection with Nagle off, and runs the TLS handshake over it if this is TLS.
    /// A TLS failure comes as an I/O error carrying a [`TlsFailure`](crate::TlsFailure).
    pub(crate) async fn open(&self, host: &HostAddr) -> io::Result<Box<dyn Stream>> {
        let tcp = Self::tcp(host).await?;
        match self {
            Transport::Tcp => Ok(Box::new(tcp)),
            #[cfg(feature = "tls")]
            Transport::Tls(connector) => Ok(Box::new(connector.connect(host, tcp).await?)),
        }
    }

    async fn tcp(host: &HostAddr) -> io::Result<TcpStream> {
        let addr = resolve(host).await?;
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// Whether connections are TLS.
    pub(crate) fn is_tls(&self) -> bool {
        !matches!(self, Transport::Tcp)
    }

    /// The session's dialer over this transport. The attempt's budget is the session's.
    pub(crate) fn dialer(&self) -> Dialer {
        let transport = self.clone();
        Arc::new(move |host: HostAddr| {
            let transport = transport.clone();
            Box::pin(async move {
                match transport {
                    Transport::Tcp => {
                        // Owned halves: no lock between reading and writing.
                        let (read, write) = Self::tcp(&host).await?.into_split();
                        Ok((Box::new(read) as ReadHalf, Box::new(write) as WriteHalf))
                    }
                    #[cfg(feature = "tls")]
                    Transport::Tls(_) => {
                        let (read, write) = tokio::io::split(transport.open(&host).await?);
                        Ok((Box::new(read) as ReadHalf, Box::new(write) as WriteHalf))
                    }
                }
            }) as Connecting
        })
    }
}

/// Resolves `host` now (a changed DNS entry is picked up) and picks one of its addresses at
/// random.
///
/// # Errors
///
/// The lookup failed or gave no address.
async fn resolve(host: &HostAddr) -> io::Result<SocketAddr> {
    let addrs: Vec<_> = tokio::net::lookup_host((host.host.as_str(), host.port))
        .await?
        .collect();
    if addrs.is_empty() {
        return Err(io::Error::other("the host name resolved to no address"));
    }
    Ok(addrs[fastrand::usize(..addrs.len())])
}
