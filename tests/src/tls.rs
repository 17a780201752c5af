//! TLS for the test servers: a throw-away certificate authority, server and client
//! certificates made with `rcgen`, written as PEM files that ZooKeeper 3.8 reads directly
//! (`ssl.keyStore.type=PEM`, `ssl.trustStore.type=PEM`), and the zoo.cfg lines of a server
//! with a `secureClientPort` on the Netty connection factory.
//!
//! Files written by [`TestCerts::generate`] into a directory:
//!
//! | file | what |
//! | --- | --- |
//! | `ca.pem` | the test CA's certificate: the client trusts it, and so does the server (for client certificates) |
//! | `server.pem` | the server's private key and certificate (valid for `127.0.0.1` and `localhost`), issued by the test CA: ZooKeeper's key store |
//! | `client.pem`, `client-key.pem` | a client certificate (valid for `127.0.0.1` and `localhost`, as ZooKeeper's client hostname check wants) and its key, issued by the test CA |
//! | `other-ca.pem` | a second CA that nobody trusts |
//! | `other-client.pem`, `other-client-key.pem` | a client certificate issued by the other CA: the server refuses it |
//!
//! Keys are ECDSA P-256; the certificates are valid from 1975 to 4096 (rcgen's default).
//!
//! Client identities in other forms, made on demand from these files by the real tools
//! (`openssl` and Java's `keytool` must be on `PATH`, or `keytool` in `$JAVA_HOME/bin`):
//! PKCS#12 bundles ([`TestCerts::client_pkcs12`], [`TestCerts::pkcs12_with`]) and encrypted
//! PKCS#8 keys ([`TestCerts::client_key_encrypted`]). Passwords reach the tools through their
//! environment, not their command line.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::error::{Error, Result};

/// The server's `ssl.clientAuth`: whether it asks the client for a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `none`: no client certificate asked for.
    None,
    /// `want`: asked for; a client without one is served, one with an untrusted one is not.
    Want,
    /// `need`: required.
    Need,
}

impl fmt::Display for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClientAuth::None => "none",
            ClientAuth::Want => "want",
            ClientAuth::Need => "need",
        })
    }
}

/// The tool that writes a PKCS#12 bundle ([`TestCerts::client_pkcs12`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pkcs12Tool {
    /// `openssl pkcs12 -export` with OpenSSL 3's defaults: PBES2 (PBKDF2 with HMAC-SHA256,
    /// AES-256-CBC) for the key and the certificates, an HMAC-SHA256 MAC.
    OpenSsl,
    /// `openssl pkcs12 -export -legacy`: OpenSSL 1's defaults, 40-bit RC2 for the
    /// certificates, triple DES for the key, an HMAC-SHA1 MAC (needs OpenSSL's legacy
    /// provider).
    OpenSslLegacy,
    /// Java's `keytool -importkeystore` from OpenSSL's bundle into a new `PKCS12` key store:
    /// the key and certificates re-encoded the Java way (Java 17: PBES2 with HMAC-SHA256 and
    /// AES-256-CBC, 10,000 iterations, an HMAC-SHA256 MAC). Passwords of at least 6
    /// characters (keytool's rule).
    Keytool,
}

impl Pkcs12Tool {
    fn file_tag(self) -> &'static str {
        match self {
            Pkcs12Tool::OpenSsl => "openssl",
            Pkcs12Tool::OpenSslLegacy => "openssl-legacy",
            Pkcs12Tool::Keytool => "keytool",
        }
    }
}

/// The environment variable that carries a password to the tools.
const PASSWORD_VARIABLE: &str = "ZK_TESTKIT_PASSWORD";

/// Runs a tool to its end; an error with its output when it fails.
fn run_tool(mut command: Command, what: &str) -> Result<()> {
    let output = command
        .output()
        .map_err(|e| Error::io(format!("running {what} ({:?})", command.get_program()), e))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::io(
        format!("{what} failed ({})", output.status),
        std::io::Error::other(format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )),
    ))
}

/// `keytool`: on `PATH`, else in `$JAVA_HOME/bin`.
fn keytool() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("keytool").is_file()));
    match std::env::var_os("JAVA_HOME") {
        Some(home) if !on_path => PathBuf::from(home).join("bin").join("keytool"),
        _ => PathBuf::from("keytool"),
    }
}

/// The PEM files of a test CA, a server and clients (see the module documentation).
#[derive(Debug, Clone)]
pub struct TestCerts {
    dir: PathBuf,
}

fn failed(what: &str, error: impl fmt::Display) -> Error {
    Error::io(
        format!("generating the test certificates: {what}"),
        std::io::Error::other(error.to_string()),
    )
}

/// A CA's parameters and key, to issue with.
struct Authority {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

fn authority(name: &str) -> Result<Authority> {
    let key = KeyPair::generate().map_err(|e| failed("a CA key", e))?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| failed(name, e))?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).map_err(|e| failed(name, e))?;
    Ok(Authority {
        issuer: Issuer::new(params, key),
        pem: cert.pem(),
    })
}

/// Issues a leaf certificate for `127.0.0.1` and `localhost`: (certificate PEM, key PEM).
fn leaf(ca: &Authority, name: &str, usage: ExtendedKeyUsagePurpose) -> Result<(String, String)> {
    let key = KeyPair::generate().map_err(|e| failed("a key", e))?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
        .map_err(|e| failed(name, e))?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyAgreement,
    ];
    params.extended_key_usages = vec![usage];
    let cert = params
        .signed_by(&key, &ca.issuer)
        .map_err(|e| failed(name, e))?;
    Ok((cert.pem(), key.serialize_pem()))
}

impl TestCerts {
    /// Generates a CA, a server certificate, a client certificate and an untrusted CA with
    /// its own client certificate, and writes them into `dir` (created if needed).
    pub fn generate(dir: &Path) -> Result<TestCerts> {
        fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let ca = authority("zk-testkit CA")?;
        let other = authority("zk-testkit untrusted CA")?;
        let (server, server_key) = leaf(
            &ca,
            "zk-testkit server",
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let (client, client_key) = leaf(
            &ca,
            "zk-testkit client",
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let (other_client, other_client_key) = leaf(
            &other,
            "zk-testkit untrusted client",
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let certs = TestCerts {
            dir: dir.to_path_buf(),
        };
        // ZooKeeper's PEM key store: the key and the certificate chain in one file.
        for (path, text) in [
            (certs.ca(), ca.pem.clone()),
            (certs.server(), format!("{server_key}{server}{}", ca.pem)),
            (certs.client_cert(), client),
            (certs.client_key(), client_key),
            (certs.other_ca(), other.pem),
            (certs.other_client_cert(), other_client),
            (certs.other_client_key(), other_client_key),
        ] {
            fs::write(&path, text)
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        }
        Ok(certs)
    }

    /// The directory of the files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `ca.pem`: the test CA's certificate.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// `server.pem`: the server's key and certificate chain (ZooKeeper's PEM key store).
    pub fn server(&self) -> PathBuf {
        self.dir.join("server.pem")
    }

    /// `client.pem`: a client certificate issued by the test CA.
    pub fn client_cert(&self) -> PathBuf {
        self.dir.join("client.pem")
    }

    /// `client-key.pem`: the key of [`client_cert`](Self::client_cert).
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client-key.pem")
    }

    /// `other-ca.pem`: a CA nobody trusts.
    pub fn other_ca(&self) -> PathBuf {
        self.dir.join("other-ca.pem")
    }

    /// `other-client.pem`: a client certificate issued by the untrusted CA.
    pub fn other_client_cert(&self) -> PathBuf {
        self.dir.join("other-client.pem")
    }

    /// `other-client-key.pem`: the key of [`other_client_cert`](Self::other_client_cert).
    pub fn other_client_key(&self) -> PathBuf {
        self.dir.join("other-client-key.pem")
    }

    /// A PKCS#12 bundle of the client certificate ([`client_cert`](Self::client_cert)), its
    /// key and the test CA's certificate (the chain), protected by `password` and written by
    /// `tool`: `client-<tool>.p12`, rewritten on each call.
    pub fn client_pkcs12(&self, password: &str, tool: Pkcs12Tool) -> Result<PathBuf> {
        self.identity_pkcs12("client", password, tool)
    }

    /// [`client_pkcs12`](Self::client_pkcs12) of the client certificate issued by the
    /// untrusted CA ([`other_client_cert`](Self::other_client_cert)), with that CA:
    /// `other-client-<tool>.p12`.
    pub fn other_client_pkcs12(&self, password: &str, tool: Pkcs12Tool) -> Result<PathBuf> {
        self.identity_pkcs12("other-client", password, tool)
    }

    fn identity_pkcs12(&self, who: &str, password: &str, tool: Pkcs12Tool) -> Result<PathBuf> {
        let (cert, key, ca) = match who {
            "client" => (self.client_cert(), self.client_key(), self.ca()),
            _ => (
                self.other_client_cert(),
                self.other_client_key(),
                self.other_ca(),
            ),
        };
        let file = format!("{who}-{}.p12", tool.file_tag());
        let ca = ca.display().to_string();
        match tool {
            Pkcs12Tool::OpenSsl => {
                self.pkcs12_with(&file, &cert, &key, password, &["-certfile", &ca])
            }
            Pkcs12Tool::OpenSslLegacy => {
                self.pkcs12_with(&file, &cert, &key, password, &["-certfile", &ca, "-legacy"])
            }
            Pkcs12Tool::Keytool => {
                let source = self.pkcs12_with(
                    &format!("{who}-for-keytool.p12"),
                    &cert,
                    &key,
                    password,
                    &["-certfile", &ca, "-name", who],
                )?;
                let target = self.dir.join(&file);
                // keytool refuses to import into an existing store's alias: start anew.
                let _ = fs::remove_file(&target);
                let mut command = Command::new(keytool());
                command
                    .args(["-importkeystore", "-noprompt", "-srcstoretype", "PKCS12"])
                    .arg("-srckeystore")
                    .arg(&source)
                    .args(["-srcstorepass:env", PASSWORD_VARIABLE])
                    .args(["-deststoretype", "PKCS12"])
                    .arg("-destkeystore")
                    .arg(&target)
                    .args(["-deststorepass:env", PASSWORD_VARIABLE])
                    .env(PASSWORD_VARIABLE, password);
                run_tool(command, "keytool -importkeystore")?;
                Ok(target)
            }
        }
    }

    /// `openssl pkcs12 -export` of the certificate `cert` and the key `key` (PEM files) into
    /// `file` in the directory, protected by `password`, with `extra` arguments (`-nokeys`,
    /// `-keypbe ALG`, `-legacy`, ...): for bundles of every shape.
    pub fn pkcs12_with(
        &self,
        file: &str,
        cert: &Path,
        key: &Path,
        password: &str,
        extra: &[&str],
    ) -> Result<PathBuf> {
        let target = self.dir.join(file);
        let mut command = Command::new("openssl");
        command
            .args(["pkcs12", "-export"])
            .arg("-in")
            .arg(cert)
            .arg("-inkey")
            .arg(key)
            .args(["-passout", &format!("env:{PASSWORD_VARIABLE}")])
            .arg("-out")
            .arg(&target)
            .args(extra)
            .env(PASSWORD_VARIABLE, password);
        run_tool(command, "openssl pkcs12 -export")?;
        Ok(target)
    }

    /// The client key ([`client_key`](Self::client_key)) as an encrypted PKCS#8 PEM key
    /// (`-----BEGIN ENCRYPTED PRIVATE KEY-----`), encrypted under `password` by
    /// `openssl pkcs8 -topk8` with `scheme` (`-v2 aes-256-cbc`, `-v2 des3`, `-scrypt`,
    /// `-v1 PBE-SHA1-3DES`, ...): `client-key-<file_tag>.pem`.
    pub fn client_key_encrypted(
        &self,
        password: &str,
        scheme: &[&str],
        file_tag: &str,
    ) -> Result<PathBuf> {
        let target = self.dir.join(format!("client-key-{file_tag}.pem"));
        let mut command = Command::new("openssl");
        command
            .args(["pkcs8", "-topk8"])
            .args(scheme)
            .arg("-in")
            .arg(self.client_key())
            .args(["-passout", &format!("env:{PASSWORD_VARIABLE}")])
            .arg("-out")
            .arg(&target)
            .env(PASSWORD_VARIABLE, password);
        run_tool(command, "openssl pkcs8 -topk8")?;
        Ok(target)
    }

    /// [`client_key_encrypted`](Self::client_key_encrypted), checked: the file openssl wrote
    /// is an encrypted PKCS#8 PEM key. For tests (it panics).
    ///
    /// # Panics
    ///
    /// When openssl fails, or wrote anything else.
    pub fn encrypted_client_key(&self, password: &str, scheme: &[&str], file_tag: &str) -> PathBuf {
        let key = self
            .client_key_encrypted(password, scheme, file_tag)
            .unwrap_or_else(|e| panic!("the encrypted key: {e}"));
        assert!(
            std::fs::read_to_string(&key)
                .unwrap_or_else(|e| panic!("read the key {}: {e}", key.display()))
                .starts_with("-----BEGIN ENCRYPTED PRIVATE KEY-----"),
            "openssl wrote an encrypted PKCS#8 key"
        );
        key
    }

    /// The zoo.cfg lines of a server with TLS on `secure_port` (bound to 127.0.0.1), on the
    /// Netty connection factory (which serves the plaintext `clientPort` too), with these
    /// files as its key and trust stores.
    pub fn server_config(&self, secure_port: u16, client_auth: ClientAuth) -> String {
        format!(
            "secureClientPort={secure_port}\n\
             secureClientPortAddress=127.0.0.1\n\
             serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
             ssl.keyStore.location={}\n\
             ssl.keyStore.type=PEM\n\
             ssl.trustStore.location={}\n\
             ssl.trustStore.type=PEM\n\
             ssl.clientAuth={client_auth}\n",
            self.server().display(),
            self.ca().display(),
        )
    }
}
