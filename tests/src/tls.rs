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

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

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
