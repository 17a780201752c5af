//! TLS to the servers (feature `tls`): [`TlsOptions`] says what to trust and how to present
//! the client; the connector built from them wraps every connection (the session's and the
//! read-only probes') in rustls, and turns rustls' failures into [`TlsFailure`]s.
//!
//! ZooKeeper serves TLS on its `secureClientPort` (with the Netty connection factory); the
//! frames inside are the same as over TCP. `docs/security.md` shows the server's settings.

mod classify;
mod identity;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::Secret;
use crate::TlsConfigError;
use crate::connect_string::{HostAddr, TlsParams};

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
///   either the certificate chain (PEM, the client's certificate first) and its private key
///   (PEM: PKCS#8, PKCS#1 or SEC1; an encrypted PKCS#8 key with
///   [`client_key_password`](Self::client_key_password)), or a PKCS#12 bundle and its
///   password ([`client_identity_pkcs12_file`](Self::client_identity_pkcs12_file): what
///   `openssl pkcs12 -export` and Java's `keytool` write, the Java client's key store).
///   Encryption read: PBES2 (PBKDF2 or scrypt, with AES or triple DES), OpenSSL 3's and
///   Java 17's default; and the legacy PKCS#12 schemes (triple DES, RC2), OpenSSL 1's and
///   Java 8's. Anything else is an [`UnsupportedAlgorithm`](TlsConfigError::UnsupportedAlgorithm)
///   error naming it. Passwords are held as [`Secret`]s, and the decrypted key in memory
///   that is wiped when dropped until rustls takes it.
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
    client_identity: Option<ClientIdentity>,
    key_password: Option<Password>,
    server_name: Option<String>,
}

/// How the client presents itself.
#[derive(Clone, Debug)]
enum ClientIdentity {
    /// A PEM certificate chain and its PEM private key.
    Pem { chain: Pem, key: Pem },
    /// A PKCS#12 bundle and its password.
    Pkcs12 { bundle: Pem, password: Password },
}

/// A password, given or to be read from a file (a connect string's `*_password_file`).
#[derive(Clone, Debug)]
enum Password {
    Given(Secret),
    File(PathBuf),
}

impl Password {
    /// The password: read from its file (without one line end after it) when it is in one.
    fn load(&self, what: &'static str) -> Result<Secret, TlsConfigError> {
        match self {
            Password::Given(secret) => Ok(secret.clone()),
            Password::File(path) => {
                let mut bytes = std::fs::read(path).map_err(|error| TlsConfigError::ReadFile {
                    what,
                    path: path.clone(),
                    message: error.to_string(),
                })?;
                // `echo secret > file` writes a line: its end is not part of the password.
                if bytes.last() == Some(&b'\n') {
                    bytes.pop();
                    if bytes.last() == Some(&b'\r') {
                        bytes.pop();
                    }
                }
                // Moved, not copied: the wiping covers the whole allocation.
                Ok(Secret::new(bytes))
            }
        }
    }
}

/// Bytes (PEM text, or a PKCS#12 bundle), given or to be read from a file.
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
            Pem::Text(text) => write!(f, "<{} bytes>", text.len()),
            Pem::File(path) => write!(f, "{}", path.display()),
        }
    }
}

impl fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca", &self.ca)
            .field("platform_roots", &self.platform_roots)
            .field("client_identity", &self.client_identity)
            .field("key_password", &self.key_password)
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
    /// the client's own certificate first; `key` its private key in PEM (an encrypted PKCS#8
    /// key needs [`client_key_password`](Self::client_key_password) too). Replaces a client
    /// identity given before.
    #[must_use]
    pub fn client_cert_pem(mut self, chain: impl AsRef<[u8]>, key: impl AsRef<[u8]>) -> Self {
        self.client_identity = Some(ClientIdentity::Pem {
            chain: Pem::Text(Arc::from(chain.as_ref())),
            key: Pem::Text(Arc::from(key.as_ref())),
        });
        self
    }

    /// [`client_cert_pem`](Self::client_cert_pem) from files (read when connecting).
    #[must_use]
    pub fn client_cert_pem_files(
        mut self,
        chain: impl Into<PathBuf>,
        key: impl Into<PathBuf>,
    ) -> Self {
        self.client_identity = Some(ClientIdentity::Pem {
            chain: Pem::File(chain.into()),
            key: Pem::File(key.into()),
        });
        self
    }

    /// Presents the identity of this PKCS#12 bundle (mutual TLS): its one private key and
    /// that key's certificate, with the issuers the bundle holds as the chain. `password`
    /// opens the bundle (its MAC, and the encryption of its key and certificates; an empty
    /// one for a bundle written without). The bundle's trusted certificates are not trusted
    /// for the server: give the CA with [`ca_pem`](Self::ca_pem). Replaces a client
    /// identity given before.
    #[must_use]
    pub fn client_identity_pkcs12(
        mut self,
        bundle: impl AsRef<[u8]>,
        password: impl Into<Secret>,
    ) -> Self {
        self.client_identity = Some(ClientIdentity::Pkcs12 {
            bundle: Pem::Text(Arc::from(bundle.as_ref())),
            password: Password::Given(password.into()),
        });
        self
    }

    /// [`client_identity_pkcs12`](Self::client_identity_pkcs12) from a file (`.p12`, `.pfx`,
    /// a Java PKCS12 key store; read when connecting).
    #[must_use]
    pub fn client_identity_pkcs12_file(
        mut self,
        path: impl Into<PathBuf>,
        password: impl Into<Secret>,
    ) -> Self {
        self.client_identity = Some(ClientIdentity::Pkcs12 {
            bundle: Pem::File(path.into()),
            password: Password::Given(password.into()),
        });
        self
    }

    /// The password of the client's private key: for an encrypted PKCS#8 PEM key
    /// (`-----BEGIN ENCRYPTED PRIVATE KEY-----`, as `openssl pkcs8 -topk8` writes) given with
    /// [`client_cert_pem`](Self::client_cert_pem) or
    /// [`client_cert_pem_files`](Self::client_cert_pem_files); for a PKCS#12 bundle, the
    /// password of its key when it is not the bundle's (`keytool -keypass`). Unused for a key
    /// that is not encrypted.
    #[must_use]
    pub fn client_key_password(mut self, password: impl Into<Secret>) -> Self {
        self.key_password = Some(Password::Given(password.into()));
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
        if let Some(keystore) = &params.keystore_file {
            let password = match &params.keystore_password_file {
                Some(path) => Password::File(path.clone()),
                None => Password::Given(Secret::default()),
            };
            options.client_identity = Some(ClientIdentity::Pkcs12 {
                bundle: Pem::File(keystore.clone()),
                password,
            });
        }
        if let Some(path) = &params.key_password_file {
            options.key_password = Some(Password::File(path.clone()));
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
        let config = match self.client_identity()? {
            None => builder.with_no_client_auth(),
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| TlsConfigError::Rejected(error.to_string()))?,
        };
        Ok(Connector {
            inner: TlsConnector::from(Arc::new(config)),
            server_name,
            client_cert: self.client_identity.is_some(),
        })
    }

    /// Reads, decrypts and checks the client identity: its certificate chain and key.
    fn client_identity(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, TlsConfigError>
    {
        let key_password = match &self.key_password {
            Some(password) => Some(password.load("the client key password")?),
            None => None,
        };
        match &self.client_identity {
            None => Ok(None),
            Some(ClientIdentity::Pem { chain, key }) => {
                let chain_text = chain.load("the client certificate")?;
                let chain = parse_certs(&chain_text, "the client certificate")?;
                let key_text = key.load("the client key")?;
                let key = if identity::is_encrypted_pem_key(&key_text) {
                    let password = key_password.ok_or(TlsConfigError::PasswordRequired {
                        what: "the client key",
                    })?;
                    identity::decrypt_pem_key(&key_text, password.expose())?
                } else {
                    PrivateKeyDer::from_pem_slice(&key_text).map_err(|error| {
                        TlsConfigError::Pem {
                            what: "the client key",
                            message: format!(
                                "no private key found: {error}{}",
                                not_pem(&key_text).unwrap_or_default()
                            ),
                        }
                    })?
                };
                Ok(Some((chain, key)))
            }
            Some(ClientIdentity::Pkcs12 { bundle, password }) => {
                let bytes = bundle.load("the client PKCS#12 bundle")?;
                let password = password.load("the client PKCS#12 bundle's password")?;
                let identity = identity::read_pkcs12(
                    &bytes,
                    password.expose(),
                    key_password.as_ref().map(Secret::expose),
                )?;
                Ok(Some((identity.chain, identity.key)))
            }
        }
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
/// to the error: DER, a PKCS#12 bundle, an encrypted PKCS#8 key, or a key in OpenSSL's
/// traditional encrypted form.
fn not_pem(bytes: &[u8]) -> Option<String> {
    let contains = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    if contains(b"ENCRYPTED PRIVATE KEY") {
        return Some(
            ": it is an encrypted PKCS#8 key; give it as the client key with its password \
             (TlsOptions::client_key_password, key_password_file= in a zk+tls:// connect \
             string, rzk's --tls-key-password or RZK_TLS_KEY_PASSWORD)"
                .into(),
        );
    }
    if contains(b"Proc-Type: 4,ENCRYPTED") {
        return Some(
            ": it is a key in OpenSSL's traditional encrypted form (DEK-Info), which is not \
             supported; convert it to encrypted PKCS#8 (openssl pkcs8 -topk8 -v2 aes-256-cbc \
             -in KEY -out KEY.p8)"
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
            ": it is a PKCS#12 bundle (binary); give it as the client identity with its \
             password (TlsOptions::client_identity_pkcs12_file, keystore= and \
             keystore_password_file= in a zk+tls:// connect string, rzk's --tls-keystore)"
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
        assert!(not_pem(&pkcs12).is_some_and(
            |hint| hint.contains("PKCS#12") && hint.contains("client_identity_pkcs12_file")
        ));
        let encrypted =
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n-----END ENCRYPTED PRIVATE KEY-----\n";
        assert!(not_pem(encrypted).is_some_and(
            |hint| hint.contains("encrypted PKCS#8") && hint.contains("client_key_password")
        ));
        let traditional = b"-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n";
        assert!(not_pem(traditional).is_some_and(|hint| hint.contains("pkcs8 -topk8")));
        assert_eq!(not_pem(b"garbage"), None);
        let error = parse_certs(&pkcs12, "the CA").expect_err("not PEM");
        assert!(error.to_string().contains("PKCS#12"), "{error}");
    }

    const PASSWORD: &str = "correct horse";

    fn identity_error(options: TlsOptions) -> TlsConfigError {
        match options.client_identity() {
            Ok(_) => panic!("an unusable identity was read"),
            Err(error) => error,
        }
    }

    /// A bundle of every writer opens with its password: the client's certificate first,
    /// then the CA that issued it, and a key rustls takes.
    #[test]
    fn pkcs12_bundles_of_openssl_and_keytool_are_read() {
        let (_dir, certs) = certs();
        let client = std::fs::read(certs.client_cert()).expect("read");
        let client = CertificateDer::from_pem_slice(&client).expect("PEM");
        let ca = std::fs::read(certs.ca()).expect("read");
        let ca = CertificateDer::from_pem_slice(&ca).expect("PEM");
        for tool in [
            zk_testkit::Pkcs12Tool::OpenSsl,
            zk_testkit::Pkcs12Tool::OpenSslLegacy,
            zk_testkit::Pkcs12Tool::Keytool,
        ] {
            let bundle = certs.client_pkcs12(PASSWORD, tool).expect("bundle");
            let bytes = std::fs::read(&bundle).expect("read");
            let identity = identity::read_pkcs12(&bytes, PASSWORD.as_bytes(), None)
                .unwrap_or_else(|error| panic!("{tool:?}: {error}"));
            assert_eq!(identity.chain, [client.clone(), ca.clone()], "{tool:?}");
            let connector = TlsOptions::new()
                .ca_pem_file(certs.ca())
                .client_identity_pkcs12_file(&bundle, PASSWORD)
                .connector()
                .unwrap_or_else(|error| panic!("{tool:?}: {error}"));
            assert!(connector.client_cert);
            TlsOptions::new()
                .ca_pem_file(certs.ca())
                .client_identity_pkcs12(&bytes, PASSWORD)
                .connector()
                .expect("the bundle's bytes");
        }
    }

    /// Other shapes OpenSSL writes: triple DES with a SHA-1 MAC, no MAC, no password, no CA.
    #[test]
    fn pkcs12_bundles_of_other_shapes_are_read() {
        let (_dir, certs) = certs();
        let (cert, key) = (certs.client_cert(), certs.client_key());
        let read = |file: &str, password: &str, extra: &[&str]| {
            let bundle = certs
                .pkcs12_with(file, &cert, &key, password, extra)
                .expect("bundle");
            let bytes = std::fs::read(bundle).expect("read");
            identity::read_pkcs12(&bytes, password.as_bytes(), None)
        };
        let des = [
            "-certpbe",
            "PBE-SHA1-3DES",
            "-keypbe",
            "PBE-SHA1-3DES",
            "-macalg",
            "sha1",
        ];
        let identity = read("3des.p12", PASSWORD, &des).expect("3DES, SHA-1 MAC");
        assert_eq!(identity.chain.len(), 1, "no CA in the bundle");
        read("nomac.p12", PASSWORD, &["-nomac"]).expect("no MAC");
        read("empty.p12", "", &[]).expect("an empty password");
        read(
            "plain.p12",
            PASSWORD,
            &["-keypbe", "NONE", "-certpbe", "NONE"],
        )
        .expect("nothing encrypted");
        read(
            "sha512.p12",
            PASSWORD,
            &["-macalg", "sha512", "-iter", "5000"],
        )
        .expect("SHA-512 MAC");
        // Without a MAC, a wrong password shows in the decryption.
        let bundle = certs
            .pkcs12_with("nomac.p12", &cert, &key, PASSWORD, &["-nomac"])
            .expect("bundle");
        let bytes = std::fs::read(bundle).expect("read");
        assert!(matches!(
            identity::read_pkcs12(&bytes, b"wrong", None),
            Err(TlsConfigError::WrongPassword { .. })
        ));
    }

    #[test]
    fn unusable_pkcs12_bundles_are_typed_errors() {
        let (_dir, certs) = certs();
        let (cert, key) = (certs.client_cert(), certs.client_key());
        let bundle = |file: &str, extra: &[&str]| {
            certs
                .pkcs12_with(file, &cert, &key, PASSWORD, extra)
                .expect("bundle")
        };
        let options = |path: &std::path::Path, password: &str| {
            TlsOptions::new()
                .ca_pem_file(certs.ca())
                .client_identity_pkcs12_file(path, password)
        };
        let good = bundle("good.p12", &[]);
        let error = identity_error(options(&good, "wrong"));
        assert_eq!(
            error,
            TlsConfigError::WrongPassword {
                what: "the client PKCS#12 bundle"
            }
        );
        assert!(error.to_string().contains("wrong password"), "{error}");
        assert!(matches!(
            identity_error(options(&good, "")),
            TlsConfigError::WrongPassword { .. }
        ));
        let no_key = bundle("nokey.p12", &["-nokeys"]);
        let error = identity_error(options(&no_key, PASSWORD));
        assert!(
            matches!(error, TlsConfigError::NoPrivateKey { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("no private key"), "{error}");
        let no_cert = bundle("nocert.p12", &["-nocerts"]);
        let error = identity_error(options(&no_cert, PASSWORD));
        assert!(
            matches!(error, TlsConfigError::NoCertificate { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("no certificate"), "{error}");
        // RC4 (legacy), and Camellia in PBES2: named in the error.
        let rc4 = bundle(
            "rc4.p12",
            &[
                "-legacy",
                "-keypbe",
                "PBE-SHA1-RC4-128",
                "-certpbe",
                "PBE-SHA1-RC4-128",
            ],
        );
        let error = identity_error(options(&rc4, PASSWORD));
        assert!(
            matches!(&error, TlsConfigError::UnsupportedAlgorithm { algorithm, .. } if algorithm.contains("RC4")),
            "{error:?}"
        );
        let camellia = bundle(
            "camellia.p12",
            &[
                "-keypbe",
                "camellia-256-cbc",
                "-certpbe",
                "camellia-256-cbc",
            ],
        );
        let error = identity_error(options(&camellia, PASSWORD));
        assert!(
            matches!(&error, TlsConfigError::UnsupportedAlgorithm { what: "the client PKCS#12 bundle", algorithm } if algorithm.contains("camellia-256-cbc")),
            "{error:?}"
        );
        assert!(
            error.to_string().contains("unsupported algorithm"),
            "{error}"
        );
        // Not a bundle: PEM, garbage, a truncated bundle.
        let error = identity_error(options(&certs.client_cert(), PASSWORD));
        assert!(
            matches!(error, TlsConfigError::Malformed { .. }),
            "{error:?}"
        );
        let bytes = std::fs::read(&good).expect("read");
        for broken in [
            &bytes[..bytes.len() / 2],
            &b"\x30\x84\xff\xff\xff\xff"[..],
            &[],
        ] {
            let error = identity_error(TlsOptions::new().client_identity_pkcs12(broken, PASSWORD));
            assert!(
                matches!(error, TlsConfigError::Malformed { .. }),
                "{error:?}"
            );
        }
        assert!(matches!(
            identity_error(options(std::path::Path::new("/nonexistent.p12"), PASSWORD)),
            TlsConfigError::ReadFile { .. }
        ));
        // A bundle of another certificate's key and certificate: rustls sees the mismatch.
        let mismatched = certs
            .pkcs12_with(
                "mismatched.p12",
                &certs.other_client_cert(),
                &certs.other_client_key(),
                PASSWORD,
                &[],
            )
            .expect("bundle");
        options(&mismatched, PASSWORD)
            .connector()
            .expect("a consistent bundle of another CA is usable");
    }

    #[test]
    fn encrypted_pkcs8_keys_are_decrypted_with_their_password() {
        let (_dir, certs) = certs();
        for (scheme, tag) in [
            (&["-v2", "aes-256-cbc"][..], "aes256"),
            (
                &["-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"][..],
                "aes128-sha1",
            ),
            (&["-v2", "des3"][..], "des3"),
            (&["-scrypt"][..], "scrypt"),
            (&["-v1", "PBE-SHA1-3DES"][..], "pbe-sha1-3des"),
        ] {
            let key = certs
                .client_key_encrypted(PASSWORD, scheme, tag)
                .expect("encrypted key");
            let connector = TlsOptions::new()
                .ca_pem_file(certs.ca())
                .client_cert_pem_files(certs.client_cert(), &key)
                .client_key_password(PASSWORD)
                .connector()
                .unwrap_or_else(|error| panic!("{tag}: {error}"));
            assert!(connector.client_cert);
        }
        let key = certs
            .client_key_encrypted(PASSWORD, &["-v2", "aes-256-cbc"], "aes256")
            .expect("encrypted key");
        let options = TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_cert_pem_files(certs.client_cert(), &key);
        let error = identity_error(options.clone());
        assert_eq!(
            error,
            TlsConfigError::PasswordRequired {
                what: "the client key"
            }
        );
        assert!(error.to_string().contains("client_key_password"), "{error}");
        let error = identity_error(options.clone().client_key_password("wrong"));
        assert!(
            matches!(error, TlsConfigError::WrongPassword { .. }),
            "{error:?}"
        );
        // A password for a key that is not encrypted is not needed, and harmless.
        TlsOptions::new()
            .ca_pem_file(certs.ca())
            .client_cert_pem_files(certs.client_cert(), certs.client_key())
            .client_key_password("unused")
            .connector()
            .expect("a plain key");
        let camellia = certs
            .client_key_encrypted(PASSWORD, &["-v2", "camellia-256-cbc"], "camellia")
            .expect("encrypted key");
        let error = identity_error(
            TlsOptions::new()
                .client_cert_pem_files(certs.client_cert(), &camellia)
                .client_key_password(PASSWORD),
        );
        assert!(
            matches!(error, TlsConfigError::UnsupportedAlgorithm { .. }),
            "{error:?}"
        );
        // A damaged block.
        let error = identity_error(TlsOptions::new().client_cert_pem(
            std::fs::read(certs.client_cert()).expect("read"),
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB!!\n-----END ENCRYPTED PRIVATE KEY-----\n",
        ).client_key_password(PASSWORD));
        assert!(
            matches!(error, TlsConfigError::Malformed { .. }),
            "{error:?}"
        );
    }

    #[test]
    fn passwords_are_read_from_files_without_their_line_end() {
        let (dir, certs) = certs();
        let bundle = certs
            .client_pkcs12(PASSWORD, zk_testkit::Pkcs12Tool::OpenSsl)
            .expect("bundle");
        let password_file = dir.0.join("password");
        for written in [
            format!("{PASSWORD}\n"),
            format!("{PASSWORD}\r\n"),
            PASSWORD.to_owned(),
        ] {
            std::fs::write(&password_file, written).expect("write");
            // TlsParams is zk-session's, and non-exhaustive: built field by field.
            let mut params = TlsParams::default();
            params.ca_file = Some(certs.ca());
            params.keystore_file = Some(bundle.clone());
            params.keystore_password_file = Some(password_file.clone());
            TlsOptions::from_params(&params)
                .connector()
                .expect("the password from its file");
        }
        let mut params = TlsParams::default();
        params.keystore_file = Some(bundle);
        params.keystore_password_file = Some(dir.0.join("missing"));
        assert!(matches!(
            identity_error(TlsOptions::from_params(&params)),
            TlsConfigError::ReadFile { .. }
        ));
    }

    #[test]
    fn debug_never_shows_a_key() {
        let options =
            TlsOptions::new().client_cert_pem("CERT", "-----BEGIN PRIVATE KEY-----secret");
        let shown = format!("{options:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("bytes>"), "{shown}");
    }
}
