//! Opening a session from the global options: the connect string (`--server` or
//! `ZOOKEEPER`, and `--chroot`), the timeouts, read-only servers and credentials.

use std::time::Duration;

use zk_proto::connect_string::ConnectString;
use zk_proto::path::Chroot;
use zk_proto::{Client, SessionState};

use crate::cli::Global;
use crate::exit::{ExitClass, Failure};
use crate::spec::{Auth, parse_auth};

/// The shortest `--session-timeout`: the first connection attempt gets a third of it, and a
/// handshake needs a few milliseconds at least.
const MIN_SESSION_TIMEOUT: Duration = Duration::from_millis(100);

/// Everything needed to open a session, checked: opening one more later (`leader` after its
/// session expired) takes the same settings.
#[derive(Debug, Clone)]
pub(crate) struct Connector {
    connect: String,
    session_timeout: Duration,
    connect_timeout: Duration,
    read_only: bool,
    auth: Vec<Auth>,
    /// SASL DIGEST-MD5 user and password.
    sasl: Option<(String, String)>,
    /// TLS settings from the options (`None`: plaintext, or the connect string's own).
    tls: Option<zk_proto::TlsOptions>,
    verbose: bool,
}

/// The connect string of `server` with `chroot` appended.
///
/// # Errors
///
/// A usage failure for a malformed connect string or chroot, or a chroot given both ways.
pub(crate) fn connect_string(server: &str, chroot: Option<&str>) -> Result<String, Failure> {
    let parsed: ConnectString = server
        .parse()
        .map_err(|e| Failure::usage(format!("invalid --server {server:?}: {e}")))?;
    let Some(chroot) = chroot else {
        return Ok(server.to_owned());
    };
    if !parsed.chroot().is_none() {
        return Err(Failure::usage(format!(
            "--chroot {chroot:?} and a chroot in --server {server:?}: give one"
        )));
    }
    Chroot::new(chroot).map_err(|e| Failure::usage(format!("invalid --chroot: {e}")))?;
    if chroot == "/" {
        return Ok(server.to_owned());
    }
    Ok(format!("{server}{chroot}"))
}

/// The TLS settings the options ask for: any `--tls*` option means TLS.
fn tls_options(global: &Global) -> Option<zk_proto::TlsOptions> {
    if !global.tls && global.tls_ca.is_none() && global.tls_cert.is_none() {
        return None;
    }
    let mut options = zk_proto::TlsOptions::new();
    if let Some(ca) = &global.tls_ca {
        options = options.ca_pem_file(ca.clone());
    }
    if let (Some(cert), Some(key)) = (&global.tls_cert, &global.tls_key) {
        options = options.client_cert_pem_files(cert.clone(), key.clone());
    }
    Some(options)
}

impl Connector {
    /// Checks the global options.
    ///
    /// # Errors
    ///
    /// A usage failure naming the bad option.
    pub(crate) fn new(global: &Global) -> Result<Connector, Failure> {
        if global.session_timeout < MIN_SESSION_TIMEOUT {
            return Err(Failure::usage(
                "--session-timeout must be at least 100ms (the server raises it to two ticks anyway)",
            ));
        }
        if global.connect_timeout.is_zero() {
            return Err(Failure::usage("--connect-timeout must be more than 0"));
        }
        let auth = global
            .auth
            .iter()
            .map(|a| parse_auth(a).map_err(Failure::usage))
            .collect::<Result<_, _>>()?;
        let sasl = match &global.sasl {
            None => None,
            Some(spec) => match spec.split_once(':') {
                Some((user, password)) if !user.is_empty() => {
                    Some((user.to_owned(), password.to_owned()))
                }
                _ => return Err(Failure::usage("--sasl takes user:password")),
            },
        };
        let tls = tls_options(global);
        Ok(Connector {
            sasl,
            tls,
            connect: connect_string(&global.server, global.chroot.as_deref())?,
            session_timeout: global.session_timeout,
            connect_timeout: global.connect_timeout,
            read_only: global.read_only,
            auth,
            verbose: global.verbose,
        })
    }

    /// Opens a session and adds the credentials; gives up once every host failed once, or
    /// after the connect timeout.
    ///
    /// # Errors
    ///
    /// A connection failure, an auth failure.
    pub(crate) async fn connect(&self) -> Result<Client, Failure> {
        self.open(true).await
    }

    /// Opens a session as [`connect`](Self::connect) does, but keeps trying until a server
    /// gives one (for `leader`, standing again after its session expired).
    ///
    /// # Errors
    ///
    /// An auth failure.
    pub(crate) async fn reconnect(&self) -> Result<Client, Failure> {
        self.open(false).await
    }

    async fn open(&self, give_up: bool) -> Result<Client, Failure> {
        let mut builder = Client::builder()
            .session_timeout(self.session_timeout)
            .connect_timeout(give_up.then_some(self.connect_timeout))
            .fail_fast(give_up)
            .read_only(self.read_only);
        if let Some((user, password)) = &self.sasl {
            builder = builder.sasl_digest(user.as_str(), password.as_str());
        }
        if let Some(tls) = &self.tls {
            builder = builder.tls(tls.clone());
        }
        let client = builder.connect(&self.connect).await.map_err(|e| {
            Failure::new(
                ExitClass::of_zk(&e),
                format!(
                    "cannot connect to {}: {}",
                    self.connect,
                    crate::exit::describe(&e)
                ),
            )
        })?;
        for auth in &self.auth {
            let added = if auth.scheme == zk_proto::acl::DIGEST_SCHEME {
                let (user, password) = auth.credential.split_once(':').unwrap_or_default();
                client.add_digest_auth(user, password).await
            } else {
                client
                    .add_auth(&auth.scheme, auth.credential.clone().into_bytes())
                    .await
            };
            if let Err(e) = added {
                client.close().await.ok();
                return Err(Failure::new(
                    ExitClass::of_zk(&e),
                    format!("authentication ({}) failed: {e}", auth.scheme),
                ));
            }
        }
        if self.verbose {
            say!(
                "session {} on {} (timeout {:?}{})",
                crate::output::session_hex(client.session_id()),
                self.connect,
                client.negotiated_timeout().unwrap_or(self.session_timeout),
                if client.state() == SessionState::ConnectedReadOnly {
                    ", read-only server"
                } else {
                    ""
                }
            );
        }
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chroot_is_appended_once() {
        assert_eq!(connect_string("h:1", None).expect("plain"), "h:1");
        assert_eq!(
            connect_string("h:1,h:2", Some("/app")).expect("chroot"),
            "h:1,h:2/app"
        );
        assert_eq!(
            connect_string("h:1/app", None).expect("in server"),
            "h:1/app"
        );
        assert_eq!(connect_string("h:1", Some("/")).expect("root"), "h:1");
        for (server, chroot) in [
            ("h:1/app", Some("/other")),
            ("h:1", Some("app")),
            ("h:1", Some("/a/")),
            ("h:notaport", None),
            ("", None),
        ] {
            let failure = connect_string(server, chroot).expect_err(server);
            assert_eq!(failure.class, ExitClass::Usage, "{server} {chroot:?}");
        }
    }
}
