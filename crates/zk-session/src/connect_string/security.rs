//! The URL form of a connect string: `zk://` (plaintext) or `zk+tls://` (TLS), with TLS
//! options after `?`.
//!
//! ```text
//! zk+tls://zk1:2281,zk2:2281/app?ca=/etc/zk/ca.pem&cert=/etc/zk/client.pem&key=/etc/zk/client.key
//! ```
//!
//! Options (`name=value`, separated by `&`; each at most once; values taken as written, so
//! they cannot contain `&`):
//!
//! - `ca`: a PEM file of CA certificates to trust (without it, the platform's roots);
//! - `cert` and `key` (together): the client certificate chain and its private key, PEM
//!   files, for mutual TLS;
//! - `keystore`: instead of `cert` and `key`, a PKCS#12 bundle (`.p12`, a Java PKCS12 key
//!   store) holding the client's key and certificate chain;
//! - `keystore_password_file`: a file holding the bundle's password (without it, the empty
//!   password);
//! - `key_password_file`: a file holding the password of an encrypted `key` (PKCS#8), or of
//!   the bundle's key when it is not the bundle's;
//! - `server_name`: the name every server's certificate must be valid for (by default the
//!   host of each entry).
//!
//! Passwords are never written in the connect string itself, which is shown in errors and
//! logs: each is read from its file when connecting, one line end after it ignored.
//!
//! In the URL form the chroot ends at the first `?`: a chroot containing `?` needs the plain
//! form (and zk-proto's `ClientBuilder::tls` for TLS).

use std::fmt;
use std::path::PathBuf;

use super::ConnectStringError;

/// The TLS scheme.
pub(super) const TLS_SCHEME: &str = "zk+tls://";
/// The explicit plaintext scheme.
pub(super) const PLAIN_SCHEME: &str = "zk://";

/// What a connect string says about TLS.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Security {
    /// No scheme (`host:port,...`): the client's settings decide (plaintext unless the
    /// builder was given TLS options).
    #[default]
    Unspecified,
    /// `zk://`: plaintext, whatever the builder says.
    Plain,
    /// `zk+tls://`: TLS to every host, with these options.
    Tls(TlsParams),
}

/// The TLS options of a `zk+tls://` connect string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TlsParams {
    /// `ca`: the PEM file of the CA certificates to trust; `None`: the platform's roots.
    pub ca_file: Option<PathBuf>,
    /// `cert`: the PEM file of the client certificate chain (with `key_file`).
    pub cert_file: Option<PathBuf>,
    /// `key`: the PEM file of the client's private key (with `cert_file`).
    pub key_file: Option<PathBuf>,
    /// `keystore`: the PKCS#12 bundle of the client's key and certificate chain (instead of
    /// `cert_file` and `key_file`).
    pub keystore_file: Option<PathBuf>,
    /// `keystore_password_file`: the file holding the password of `keystore_file`.
    pub keystore_password_file: Option<PathBuf>,
    /// `key_password_file`: the file holding the password of the client's private key (an
    /// encrypted `key_file`, or a bundle's key protected by a password of its own).
    pub key_password_file: Option<PathBuf>,
    /// `server_name`: the name to verify instead of each entry's host.
    pub server_name: Option<String>,
}

impl TlsParams {
    /// Whether any option is set.
    pub fn is_empty(&self) -> bool {
        *self == TlsParams::default()
    }
}

/// Splits the scheme and the options off `s`: the security, the rest (hosts and chroot).
pub(super) fn split(s: &str) -> Result<(Security, &str), ConnectStringError> {
    let (tls, rest) = if let Some(rest) = s.strip_prefix(TLS_SCHEME) {
        (true, rest)
    } else if let Some(rest) = s.strip_prefix(PLAIN_SCHEME) {
        (false, rest)
    } else if let Some((scheme, _)) = s.split_once("://") {
        return Err(ConnectStringError::UnknownScheme {
            scheme: scheme.to_owned(),
        });
    } else {
        return Ok((Security::Unspecified, s));
    };
    let (rest, options) = match rest.split_once('?') {
        Some((rest, options)) => (rest, Some(options)),
        None => (rest, None),
    };
    let params = match options {
        Some(options) => parse_options(options)?,
        None => TlsParams::default(),
    };
    if !tls {
        if params.is_empty() {
            return Ok((Security::Plain, rest));
        }
        return Err(ConnectStringError::InvalidOption {
            option: options.unwrap_or_default().to_owned(),
            reason: "TLS options need the zk+tls:// scheme",
        });
    }
    Ok((Security::Tls(params), rest))
}

fn parse_options(options: &str) -> Result<TlsParams, ConnectStringError> {
    let mut params = TlsParams::default();
    for option in options.split('&') {
        let invalid = |reason| ConnectStringError::InvalidOption {
            option: option.to_owned(),
            reason,
        };
        let Some((name, value)) = option.split_once('=') else {
            return Err(invalid("expected name=value"));
        };
        if value.is_empty() {
            return Err(invalid("empty value"));
        }
        let slot = match name {
            "ca" => &mut params.ca_file,
            "cert" => &mut params.cert_file,
            "key" => &mut params.key_file,
            "keystore" => &mut params.keystore_file,
            "keystore_password_file" => &mut params.keystore_password_file,
            "key_password_file" => &mut params.key_password_file,
            "server_name" => {
                if params.server_name.replace(value.to_owned()).is_some() {
                    return Err(invalid("given twice"));
                }
                continue;
            }
            _ => {
                return Err(invalid(
                    "unknown option (known: ca, cert, key, keystore, keystore_password_file, \
                     key_password_file, server_name)",
                ));
            }
        };
        if slot.replace(PathBuf::from(value)).is_some() {
            return Err(invalid("given twice"));
        }
    }
    let invalid = |reason| ConnectStringError::InvalidOption {
        option: options.to_owned(),
        reason,
    };
    if params.cert_file.is_some() != params.key_file.is_some() {
        return Err(invalid("cert and key go together"));
    }
    if params.keystore_file.is_some() && params.cert_file.is_some() {
        return Err(invalid("keystore or cert and key, not both"));
    }
    if params.keystore_password_file.is_some() && params.keystore_file.is_none() {
        return Err(invalid("keystore_password_file needs keystore"));
    }
    if params.key_password_file.is_some()
        && params.key_file.is_none()
        && params.keystore_file.is_none()
    {
        return Err(invalid("key_password_file needs key or keystore"));
    }
    Ok(params)
}

/// Writes the scheme of `security` (nothing when unspecified).
pub(super) fn fmt_scheme(security: &Security, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match security {
        Security::Unspecified => Ok(()),
        Security::Plain => f.write_str(PLAIN_SCHEME),
        Security::Tls(_) => f.write_str(TLS_SCHEME),
    }
}

/// Writes the options of `security`, `?` first, in a fixed order.
pub(super) fn fmt_options(security: &Security, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Security::Tls(params) = security else {
        return Ok(());
    };
    let mut separator = '?';
    let mut option = |f: &mut fmt::Formatter<'_>, name: &str, value: &dyn fmt::Display| {
        let result = write!(f, "{separator}{name}={value}");
        separator = '&';
        result
    };
    if let Some(ca) = &params.ca_file {
        option(f, "ca", &ca.display())?;
    }
    if let Some(cert) = &params.cert_file {
        option(f, "cert", &cert.display())?;
    }
    if let Some(key) = &params.key_file {
        option(f, "key", &key.display())?;
    }
    if let Some(keystore) = &params.keystore_file {
        option(f, "keystore", &keystore.display())?;
    }
    if let Some(file) = &params.keystore_password_file {
        option(f, "keystore_password_file", &file.display())?;
    }
    if let Some(file) = &params.key_password_file {
        option(f, "key_password_file", &file.display())?;
    }
    if let Some(name) = &params.server_name {
        option(f, "server_name", name)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{ConnectString, HostAddr};
    use super::*;

    fn parse(s: &str) -> ConnectString {
        ConnectString::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn tls(s: &str) -> TlsParams {
        match parse(s).security() {
            Security::Tls(params) => params.clone(),
            other => panic!("{s:?}: {other:?}"),
        }
    }

    #[test]
    fn schemes() {
        let cs = parse("zk+tls://a:2281,b:2281/app");
        assert_eq!(
            cs.hosts(),
            [HostAddr::new("a", 2281), HostAddr::new("b", 2281)]
        );
        assert_eq!(cs.chroot().as_str(), Some("/app"));
        assert_eq!(*cs.security(), Security::Tls(TlsParams::default()));
        let cs = parse(" zk://[::1]:2181 ");
        assert_eq!(cs.hosts(), [HostAddr::new("::1", 2181)]);
        assert_eq!(*cs.security(), Security::Plain);
        assert_eq!(*parse("a:1").security(), Security::Unspecified);
    }

    #[test]
    fn options() {
        let params =
            tls("zk+tls://a/app/x?ca=/etc/ca.pem&cert=c.pem&key=/k/c.key&server_name=zk.example");
        assert_eq!(params.ca_file, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(params.cert_file, Some(PathBuf::from("c.pem")));
        assert_eq!(params.key_file, Some(PathBuf::from("/k/c.key")));
        assert_eq!(params.server_name.as_deref(), Some("zk.example"));
        assert_eq!(
            parse("zk+tls://a/app/x?ca=/c").chroot().as_str(),
            Some("/app/x")
        );
        let params = tls(
            "zk+tls://a/x?keystore=/k/client.p12&keystore_password_file=/k/pw&key_password_file=/k/kpw",
        );
        assert_eq!(params.keystore_file, Some(PathBuf::from("/k/client.p12")));
        assert_eq!(params.keystore_password_file, Some(PathBuf::from("/k/pw")));
        assert_eq!(params.key_password_file, Some(PathBuf::from("/k/kpw")));
        let params = tls("zk+tls://a?cert=c.pem&key=k.pem&key_password_file=/k/kpw");
        assert_eq!(params.key_password_file, Some(PathBuf::from("/k/kpw")));
        // Options right after the hosts, no chroot.
        let cs = parse("zk+tls://a:1?ca=/c.pem");
        assert!(cs.chroot().is_none());
        assert_eq!(cs.hosts(), [HostAddr::new("a", 1)]);
    }

    #[test]
    fn bad_schemes_and_options() {
        let err = |s: &str| ConnectString::parse(s).expect_err(s);
        assert_eq!(
            err("tls://a:1"),
            ConnectStringError::UnknownScheme {
                scheme: "tls".into()
            }
        );
        assert!(matches!(
            err("zookeeper://a"),
            ConnectStringError::UnknownScheme { .. }
        ));
        for (s, reason) in [
            ("zk+tls://a?ca", "expected name=value"),
            ("zk+tls://a?ca=", "empty value"),
            ("zk+tls://a?ca=x&ca=y", "given twice"),
            ("zk+tls://a?server_name=x&server_name=y", "given twice"),
            ("zk+tls://a?cert=c", "cert and key go together"),
            ("zk+tls://a?key=k", "cert and key go together"),
            ("zk://a?ca=x", "TLS options need the zk+tls:// scheme"),
            (
                "zk+tls://a?keystore=s&cert=c&key=k",
                "keystore or cert and key, not both",
            ),
            (
                "zk+tls://a?keystore_password_file=p",
                "keystore_password_file needs keystore",
            ),
            (
                "zk+tls://a?cert=c&key_password_file=p",
                "cert and key go together",
            ),
            (
                "zk+tls://a?key_password_file=p",
                "key_password_file needs key or keystore",
            ),
            ("zk+tls://a?keystore=s&keystore=t", "given twice"),
        ] {
            match err(s) {
                ConnectStringError::InvalidOption { reason: r, .. } => assert_eq!(r, reason, "{s}"),
                other => panic!("{s}: {other:?}"),
            }
        }
        assert!(matches!(
            err("zk+tls://a?pass=x"),
            ConnectStringError::InvalidOption { reason, .. } if reason.starts_with("unknown option")
        ));
        assert_eq!(err("zk+tls://"), ConnectStringError::NoHosts);
        assert_eq!(err("zk+tls://?ca=x"), ConnectStringError::NoHosts);
        assert_eq!(
            err("zk+tls://a?ca").to_string(),
            r#"invalid option "ca" in connect string: expected name=value"#
        );
    }

    #[test]
    fn display_keeps_the_scheme_and_options() {
        for s in [
            "zk+tls://a:1,b:2/x?ca=/c.pem&cert=/d.pem&key=/e.key&server_name=n",
            "zk+tls://a:1/x?ca=/c.pem&keystore=/s.p12&keystore_password_file=/p&key_password_file=/q",
            "zk+tls://a:1",
            "zk://a:1/x",
            "a:1/x",
        ] {
            assert_eq!(parse(s).to_string(), s);
        }
    }
}
