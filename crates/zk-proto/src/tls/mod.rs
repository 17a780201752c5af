//! TLS to the servers (feature `tls`): [`TlsOptions`] says what to trust and how to present
//! the client; the connector built from them wraps every connection (the session's and the
//! read-only probes') in rustls, and turns rustls' failures into [`TlsFailure`]s.
//!
//! ZooKeeper serves TLS on its `secureClientPort` (with the Netty connection factory); the
//! frames inside are the same as over TCP. `docs/security.md` shows the server's settings.

mod classify;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::connect_string::{HostAddr, TlsParams};
use crate::error::TlsConfigError;

pub(crate) use classify::Classified;

/// TLS settings for the connections to every server of the ensemble, for
/// [`ClientBuilder::tls`](crate::ClientBuilder::tls).
///
/// ```no_run
/// use zk_proto::{Client, TlsOptions};
///
/// # async fn example() -> zk_proto::Result<()> {
/// let tls = TlsOptions::new()
///     .ca_pem_file("/etc/zookeeper/ca.pem")
///     .client_cert_pem_files("/etc/zookeeper/client.pem", "/etc/zookeeper/client.key");
/// let client = Client::builder()
///     .tls(tls)
///     .connect("zk1.example.com:2281,zk2.example.com:2281")
///     .await?;
/// # Ok(())
/// # }
/// ```
///
/// - **Trust**: the CA certificates given (PEM, one or more certificates per text or file);
///   when none is given, the platform's trusted roots. [`platform_roots`](Self::platform_roots)
///   adds the platform's roots to the CAs given.
/// - **Client certificate** (mutual TLS, for a server with `ssl.clientAuth=want` or `need`):
///   the certificate chain (PEM, the client's certificate first) and its private key (PEM:
///   PKCS#8, PKCS#1 or SEC1).
/// - **Server name**: the name the server's certificate must be valid for; by default the
///   host of each connect string entry (a DNS name, or an IP address, which the certificate
///   must then name as an IP address).
///
/// Files are read, and PEM texts parsed, when [`connect`](crate::ClientBuilder::connect)
/// runs: a problem is an [`Error::TlsConfig`](crate::Error::TlsConfig) before anything is
/// dialed. TLS 1.2 and 1.3 are offered, with rustls' default cipher suites (ring).
#[derive(Clone, Default)]
pub struct TlsOptions {
    ca: Vec<Pem>,
    platform_roots: bool,
    client_cert: Option<(Pem, Pem)>,
    server_name: Option<String>,
}

/// A PEM text, given or to be read from a file.
#[derive(Clone)]
enum Pem {
    Text(Arc<[u8]>),
    File(PathBuf),
}

impl Pem {
    fn load(&self, what: &'static str) -> Result<Arc<[u8]>, TlsConfigError> {
        match self {
            Pem::Text(text) => Ok(text.clone()),
            Pem::File(path) => {
                std::fs::read(path)
                    .map(Arc::from)
                    .map_err(|error| TlsConfigError::ReadFile {
                        what,
                        path: path.clone(),
                        message: error.to_string(),
                    })
            }
        }
    }
}

impl fmt::Debug for Pem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Never the bytes: one of them may be a private key.
            Pem::Text(text) => write!(f, "<{} bytes of PEM>", text.len()),
            Pem::File(path) => write!(f, "{}", path.display()),
        }
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca", &self.ca)
            .field("platform_roots", &self.platform_roots)
            .field("client_cert", &self.client_cert)
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl TlsOptions {
    /// No CA given yet (the platform's roots are trusted unless one is), no client
    /// certificate, the server name from the connect string.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts the CA certificates of this PEM text (one or more `CERTIFICATE` blocks).
    #[must_use]
    pub fn ca_pem(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.ca.push(Pem::Text(Arc::from(pem.as_ref())));
        self
    }

    /// Trusts the CA certificates of this PEM file (read when connecting).
    #[must_use]
    pub fn ca_pem_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca.push(Pem::File(path.into()));
        self
    }

    /// Trusts the platform's roots too (the system's certificate store), besides the CAs
    /// given. Without any CA given they are trusted anyway.
    #[must_use]
    pub fn platform_roots(mut self) -> Self {
        self.platform_roots = true;
        self
    }

    /// Presents this client certificate (mutual TLS): `chain` is the PEM certificate chain,
    /// the client's own certificate first; `key` its private key in PEM.
    #[must_use]
    pub fn client_cert_pem(mut self, chain: impl AsRef<[u8]>, key: impl AsRef<[u8]>) -> Self {
        self.client_cert = Some((
            Pem::Text(Arc::from(chain.as_ref())),
            Pem::Text(Arc::from(key.as_ref())),
        ));
        self
    }

    /// [`client_cert_pem`](Self::client_cert_pem) from files (read when connecting).
    #[must_use]
    pub fn client_cert_pem_files(
        mut self,
        chain: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Self {
        self.client_cert = Some((Pem::File(chain.into()), Pem::File(key.into())));
        self
    }

    /// The name every server's certificate must be valid for (a DNS name or an IP address),
    /// instead of the host of each connect string entry: for servers dialed by address
    /// whose certificates name them otherwise.
    #[must_use]
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// The options a `zk+tls://` connect string's parameters say.
    pub(crate) fn from_params(params: &TlsParams) -> Self {
        let mut options = TlsOptions::new();
        if let Some(ca) = &params.ca_file {
            options = options.ca_pem_file(ca.clone());
        }
        if let (Some(cert), Some(key)) = (&params.cert_file, &params.key_file) {
            options = options.client_cert_pem_files(cert.clone(), key.clone());
        }
        if let Some(name) = &params.server_name {
            options = options.server_name(name.clone());
        }
        options
    }

    /// Reads and checks everything: the connector every connection of a client uses.
    pub(crate) fn connector(&self) -> Result<Connector, TlsConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for pem in &self.ca {
            let text = pem.load("the CA certificates")?;
            let certs = parse_certs(&text, "the CA certificates")?;
            for cert in certs {
                roots.add(cert).map_err(|error| TlsConfigError::Pem {
                    what: "the CA certificates",
                    message: format!("a certificate rustls cannot use as a CA: {error}"),
                })?;
            }
        }
        if self.ca.is_empty() || self.platform_roots {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map_or_else(|| "the store is empty".to_owned(), ToString::to_string);
                return Err(TlsConfigError::NoTrustAnchors(format!(
                    "no CA given and no usable certificate in the platform's store ({why})"
                )));
            }
        }
        let server_name = match &self.server_name {
            Some(name) => Some(server_name(name)?),
            None => None,
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| TlsConfigError::Rejected(error.to_string()))?
            .with_root_certificates(roots);
        let config = match &self.client_cert {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => {
                let chain_text = chain.load("the client certificate")?;
                let chain = parse_certs(&chain_text, "the client certificate")?;
                let key_text = key.load("the client key")?;
                let key = PrivateKeyDer::from_pem_slice(&key_text).map_err(|error| {
                    TlsConfigError::Pem {
                        what: "the client key",
                        message: format!(
                            "no private key found: {error}{}",
                            not_pem(&key_text).unwrap_or_default()
                        ),
                    }
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|error| TlsConfigError::Rejected(error.to_string()))?
            }
        };
        Ok(Connector {
            inner: TlsConnector::from(Arc::new(config)),
            server_name,
            client_cert: self.client_cert.is_some(),
        })
    }
}

fn parse_certs(
    text: &[u8],
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs = CertificateDer::pem_slice_iter(text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsConfigError::Pem {
            what,
            message: format!("malformed PEM: {error}"),
        })?;
    if certs.is_empty() {
        let hint = not_pem(text).unwrap_or_default();
        return Err(TlsConfigError::Pem {
            what,
            message: format!("no CERTIFICATE block found{hint}"),
        });
    }
    Ok(certs)
}

/// What a file that is not the PEM expected holds, when that can be told, as a hint to append
/// to the error: DER, a PKCS#12 bundle, or an encrypted PKCS#8 key.
fn not_pem(bytes: &[u8]) -> Option<String> {
    if bytes
        .windows(b"ENCRYPTED PRIVATE KEY".len())
        .any(|w| w == b"ENCRYPTED PRIVATE KEY")
    {
        return Some(
            ": it is an encrypted PKCS#8 key, which is not supported; decrypt it \
             (openssl pkcs8 -in KEY -out KEY.pem)"
                .into(),
        );
    }
    // DER: an ASN.1 SEQUENCE, with a long-form length; PKCS#12 (PFX) then starts with its
    // version, INTEGER 3.
    let body = match bytes {
        [0x30, 0x82, _, _, rest @ ..] => rest,
        [0x30, 0x81, _, rest @ ..] => rest,
        _ => return None,
    };
    if body.starts_with(&[0x02, 0x01, 0x03]) {
        Some(
            ": it is a PKCS#12 bundle (binary), which is not supported; extract PEM \
             (openssl pkcs12 -in FILE -nodes -out FILE.pem)"
                .into(),
        )
    } else {
        Some(": it is DER (binary), not PEM; convert it (openssl x509 -inform der / openssl pkey -inform der)".into())
    }
}

/// The name to verify for `host`: a DNS name or an IP address (an IPv6 zone dropped).
fn server_name(host: &str) -> Result<ServerName<'static>, TlsConfigError> {
    let host = host
        .split_once('%')
        .map_or(host, |(address, _zone)| address);
    ServerName::try_from(host.to_owned())
        .map_err(|_| TlsConfigError::InvalidServerName(host.to_owned()))
}

/// Opens TLS connections over TCP streams: the rustls configuration of one client, its
/// server name (if fixed), and whether it presents a client certificate (to tell a
/// refused certificate from a missing one).
#[derive(Clone)]
pub(crate) struct Connector {
    inner: TlsConnector,
    server_name: Option<ServerName<'static>>,
    client_cert: bool,
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector")
            .field("server_name", &self.server_name)
            .field("client_cert", &self.client_cert)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// Checks that every host can be verified: with no fixed server name, each host must be
    /// a DNS name or an IP address rustls accepts (caught before anything is dialed).
    pub(crate) fn check_hosts(&self, hosts: &[HostAddr]) -> Result<(), TlsConfigError> {
        if self.server_name.is_none() {
            for host in hosts {
                server_name(&host.host)?;
            }
        }
        Ok(())
    }

    /// Runs the TLS handshake with `host` over `tcp`. A failure is an I/O error carrying a
    /// [`TlsFailure`](crate::TlsFailure) (see [`ConnectFailure::from_io`](crate::ConnectFailure::from_io)).
    pub(crate) async fn connect(
        &self,
        host: &HostAddr,
        tcp: TcpStream,
    ) -> io::Result<Classified<tokio_rustls::client::TlsStream<classify::Counting<TcpStream>>>>
    {
        let name = match &self.server_name {
            Some(name) => name.clone(),
            None => server_name(&host.host)
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidInput, error))?,
        };
        let shown = name.to_str().into_owned();
        let counting = classify::Counting::new(tcp);
        let first_byte = counting.first_byte();
        let context = classify::Context {
            server_name: shown,
            client_cert: self.client_cert,
        };
        match self.inner.connect(name, counting).into_fallible().await {
            Ok(stream) => Ok(Classified::new(stream, context)),
            Err((error, mut tcp)) => {
                // A write that fails because the server closed first (TLS 1.2 refusing a
                // client certificate closes right after its alert) hides the alert: read it.
                let error = classify::alert_after_write_failure(error, &mut tcp).await;
                Err(context.classify_handshake(error, first_byte.get()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn certs() -> (tempdir::Dir, zk_testkit::TestCerts) {
        let dir = tempdir::Dir::new();
        let certs = zk_testkit::TestCerts::generate(&dir.0).expect("certificates");
        (dir, certs)
    }

    /// A directory removed on drop.
    mod tempdir {
        pub(super) struct Dir(pub(super) std::path::PathBuf);

        impl Dir {
            pub(super) fn new() -> Dir {
                static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Dir(std::env::temp_dir().join(format!("zk-proto-tls-{}-{n}", std::process::id())))
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    fn error(options: &TlsOptions) -> TlsConfigError {
        options.connector().expect_err("unusable settings")
    }

    #[test]
    fn valid_settings_make_a_connector() {
        let (_dir, certs) = certs();
        let connector = TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_cert_pem_files(certs.client_cert(), certs.client_key())
            .connector()
            .expect("usable");
        assert!(connector.client_cert);
        let pem = std::fs::read(certs.ca()).expect("read");
        TlsOptions::new()
            .ca_pem(&pem)
            .connector()
            .expect("inline PEM");
    }

    #[test]
    fn unusable_settings_are_typed_errors() {
        let (_dir, certs) = certs();
        assert!(matches!(
            error(&TlsOptions::new().ca_pem_file("/nonexistent/ca.pem")),
            TlsConfigError::ReadFile {
                what: "the CA certificates",
                ..
            }
        ));
        assert!(matches!(
            error(&TlsOptions::new().ca_pem("not a certificate")),
            TlsConfigError::Pem {
                what: "the CA certificates",
                ..
            }
        ));
        // A key where the client certificate should be, and the other way round.
        let swapped = TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_cert_pem_files(certs.client_key(), certs.client_cert());
        assert!(matches!(
            error(&swapped),
            TlsConfigError::Pem {
                what: "the client certificate",
                ..
            }
        ));
        // A certificate with another certificate's key.
        let mismatched = TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_cert_pem_files(certs.client_cert(), certs.other_client_key());
        assert!(matches!(error(&mismatched), TlsConfigError::Rejected(_)));
        assert_eq!(
            error(
                &TlsOptions::new()
                    .ca_pem_file(certs.ca())
                    .server_name("not a name")
            ),
            TlsConfigError::InvalidServerName("not a name".into())
        );
    }

    #[test]
    fn hosts_are_checked_unless_a_server_name_is_fixed() {
        let (_dir, certs) = certs();
        let hosts = [
            HostAddr::new("zk1.example", 2281),
            HostAddr::new("fe80::1%eth0", 2281),
        ];
        let options = TlsOptions::new().ca_pem_file(certs.ca());
        options
            .connector()
            .expect("usable")
            .check_hosts(&hosts)
            .expect("names and addresses");
        let odd = [HostAddr::new("zk 1", 2281)];
        assert_eq!(
            options.connector().expect("usable").check_hosts(&odd),
            Err(TlsConfigError::InvalidServerName("zk 1".into()))
        );
        let fixed = options
            .server_name("zk.example")
            .connector()
            .expect("usable");
        fixed
            .check_hosts(&odd)
            .expect("the fixed name is verified instead");
    }

    #[test]
    fn a_file_that_is_not_pem_says_what_it_is() {
        let der = [0x30, 0x82, 0x01, 0x0a, 0x30, 0x82, 0x00, 0x10];
        assert!(not_pem(&der).is_some_and(|hint| hint.contains("DER")));
        let pkcs12 = [0x30, 0x82, 0x09, 0x00, 0x02, 0x01, 0x03, 0x30];
        assert!(not_pem(&pkcs12).is_some_and(|hint| hint.contains("PKCS#12")));
        let encrypted =
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(not_pem(encrypted).is_some_and(|hint| hint.contains("encrypted PKCS#8")));
        assert_eq!(not_pem(b"garbage"), None);
        let error = parse_certs(&pkcs12, "the CA").expect_err("not PEM");
        assert!(error.to_string().contains("PKCS#12"), "{error}");
    }

    #[test]
    fn debug_never_shows_a_key() {
        let options =
            TlsOptions::new().client_cert_pem("CERT", "-----BEGIN PRIVATE KEY-----secret");
        let shown = format!("{options:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("bytes of PEM"), "{shown}");
    }
}
