//! TLS to the servers (feature `tls`): [`TlsOptions`] says what to trust and how to present
//! the client; the connector built from them wraps every connection (the session's and the
//! read-only probes') in rustls, and turns rustls' failures into [`TlsFailure`]s.
//!
//! ZooKeeper serves TLS on its `secureClientPort` (with the Netty connection factory); the
//! frames inside are the same as over TCP. `docs/security.md` shows the server's settings.

mod classify;
mod connector;
mod identity;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::Secret;
use crate::TlsConfigError;
use crate::connect_string::TlsParams;

pub(crate) use connector::Connector;

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
}
