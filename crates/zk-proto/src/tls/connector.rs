//! From [`TlsOptions`] to a [`Connector`]: reading and checking the CA certificates and the
//! client identity (PEM, encrypted PKCS#8, PKCS#12 through [`identity`](super::identity)), the
//! server names to verify, and the TLS handshake over a TCP stream.

use std::fmt;
use std::io;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::classify::{self, Classified};
use super::{ClientIdentity, TlsOptions, identity};
use crate::Secret;
use crate::TlsConfigError;
use crate::connect_string::HostAddr;

#[cfg(test)]
mod tests;

impl TlsOptions {
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
