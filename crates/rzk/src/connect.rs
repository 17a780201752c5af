//! Opening a session from the global options: the connect string (`--server` or
//! `ZOOKEEPER`, and `--chroot`), the timeouts, read-only servers, credentials and TLS (a
//! password that does not open its file is said with the option and variable it came from).

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
    /// Where the client identity's passwords come from, to name them when one is wrong.
    passwords: Option<PasswordSource>,
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

/// The TLS settings the options ask for: `--tls`, or an option naming a file (`--tls-ca`,
/// `--tls-cert` with `--tls-key`, `--tls-keystore`), means TLS. The passwords alone do not:
/// their variables may be set for every run, and are used only with the file they open.
fn tls_options(global: &Global) -> Option<zk_proto::TlsOptions> {
    if !global.tls
        && global.tls_ca.is_none()
        && global.tls_cert.is_none()
        && global.tls_keystore.is_none()
    {
        return None;
    }
    let mut options = zk_proto::TlsOptions::new();
    if let Some(ca) = &global.tls_ca {
        options = options.ca_pem_file(ca.clone());
    }
    if let (Some(cert), Some(key)) = (&global.tls_cert, &global.tls_key) {
        options = options.client_cert_pem_files(cert.clone(), key.clone());
    }
    if let Some(keystore) = &global.tls_keystore {
        let password = global.tls_keystore_password.clone().unwrap_or_default();
        options = options.client_identity_pkcs12_file(keystore.clone(), password);
    }
    if (global.tls_key.is_some() || global.tls_keystore.is_some())
        && let Some(password) = &global.tls_key_password
    {
        options = options.client_key_password(password.clone());
    }
    Some(options)
}

/// The options a password can come from, for a file given by rzk's own options (not a
/// `zk+tls://` connect string's, whose passwords come from files it names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PasswordSource {
    /// `--tls-keystore`: its password, and its key's own when one is given.
    KeyStore {
        /// Whether `--tls-keystore-password` (or its variable) gave one.
        password: bool,
        /// Whether `--tls-key-password` (or its variable) gave one.
        key_password: bool,
    },
    /// `--tls-key`: an encrypted key's password.
    Key,
}

/// The password options of [`PasswordSource::Key`], as the hints name them.
const KEY_PASSWORD: &str = "--tls-key-password or RZK_TLS_KEY_PASSWORD";
/// The password options of [`PasswordSource::KeyStore`], as the hints name them.
const KEYSTORE_PASSWORD: &str = "--tls-keystore-password or RZK_TLS_KEYSTORE_PASSWORD";

impl PasswordSource {
    /// Where the passwords of the client identity come from, when rzk's options give one.
    fn of(global: &Global) -> Option<PasswordSource> {
        if global.tls_keystore.is_some() {
            Some(PasswordSource::KeyStore {
                password: global.tls_keystore_password.is_some(),
                key_password: global.tls_key_password.is_some(),
            })
        } else if global.tls_key.is_some() {
            Some(PasswordSource::Key)
        } else {
            None
        }
    }

    /// What to add to a wrong-password error: the option (and variable) whose password did
    /// not open `what` (the part of the file the error names).
    fn hint(self, what: &str) -> String {
        match self {
            PasswordSource::Key => format!("the password of --tls-key, from {KEY_PASSWORD}"),
            PasswordSource::KeyStore {
                key_password: true, ..
            } => format!(
                "the passwords of --tls-keystore, from {KEYSTORE_PASSWORD} and (for its \
                 key) {KEY_PASSWORD}"
            ),
            // The key store's password passed its integrity check; its key has another.
            PasswordSource::KeyStore { .. } if what.contains("private key") => {
                format!(
                    "the key in --tls-keystore has a password of its own: give it with {KEY_PASSWORD}"
                )
            }
            PasswordSource::KeyStore { password: true, .. } => {
                format!("the password of --tls-keystore, from {KEYSTORE_PASSWORD}")
            }
            PasswordSource::KeyStore {
                password: false, ..
            } => format!(
                "no password was given for --tls-keystore ({KEYSTORE_PASSWORD}): the empty \
                 one was tried"
            ),
        }
    }
}

/// What rzk says when the client refused to connect: the client's error, with the options
/// (and variables) that gave a password that does not open its file.
fn connect_failure_message(error: &zk_proto::Error, passwords: Option<PasswordSource>) -> String {
    let text = crate::exit::describe(error);
    match (error, passwords) {
        (
            zk_proto::Error::TlsConfig(zk_proto::TlsConfigError::WrongPassword { what }),
            Some(source),
        ) => format!("{text}; {}", source.hint(what)),
        _ => text,
    }
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
            passwords: PasswordSource::of(global),
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
                    connect_failure_message(&e, self.passwords)
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
    use clap::Parser as _;

    /// The global options of `rzk ARGS ls /`.
    fn global(args: &[&str]) -> Global {
        let line = std::iter::once("rzk")
            .chain(args.iter().copied())
            .chain(["ls", "/"]);
        crate::cli::Cli::try_parse_from(line).expect("parse").global
    }

    #[test]
    fn files_mean_tls_and_passwords_alone_do_not() {
        for args in [
            &["--tls"][..],
            &["--tls-ca", "ca.pem"],
            &["--tls-cert", "c.pem", "--tls-key", "k.pem"],
            &["--tls-keystore", "c.p12"],
        ] {
            assert!(tls_options(&global(args)).is_some(), "{args:?}");
        }
        let passwords = global(&["--tls-keystore-password", "a", "--tls-key-password", "b"]);
        assert!(tls_options(&passwords).is_none());
        assert_eq!(PasswordSource::of(&passwords), None);
    }

    #[test]
    fn a_wrong_password_names_the_option_that_gave_it() {
        let wrong =
            |what| zk_proto::Error::TlsConfig(zk_proto::TlsConfigError::WrongPassword { what });
        let bundle = wrong("the client PKCS#12 bundle");
        let message = |args: &[&str], error: &zk_proto::Error| {
            connect_failure_message(error, PasswordSource::of(&global(args)))
        };
        let said = message(
            &["--tls-keystore", "c.p12", "--tls-keystore-password", "x"],
            &bundle,
        );
        assert!(said.contains("wrong password"), "{said}");
        assert!(
            said.ends_with(&format!(
                "; the password of --tls-keystore, from {KEYSTORE_PASSWORD}"
            )),
            "{said}"
        );
        let said = message(&["--tls-keystore", "c.p12"], &bundle);
        assert!(
            said.contains("no password was given for --tls-keystore"),
            "{said}"
        );
        let said = message(
            &[
                "--tls-keystore",
                "c.p12",
                "--tls-keystore-password",
                "x",
                "--tls-key-password",
                "y",
            ],
            &bundle,
        );
        assert!(
            said.contains(KEYSTORE_PASSWORD) && said.contains(KEY_PASSWORD),
            "{said}"
        );
        let own_key = wrong(
            "the private key of the client PKCS#12 bundle (its password is not the bundle's: give it as the key password)",
        );
        let said = message(
            &["--tls-keystore", "c.p12", "--tls-keystore-password", "x"],
            &own_key,
        );
        assert!(
            said.ends_with(&format!("give it with {KEY_PASSWORD}")),
            "{said}"
        );
        let said = message(
            &[
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "k.pem",
                "--tls-key-password",
                "x",
            ],
            &wrong("the client key (encrypted PKCS#8)"),
        );
        assert!(
            said.ends_with(&format!("; the password of --tls-key, from {KEY_PASSWORD}")),
            "{said}"
        );
        // A connect string's password files are named by the client's error itself; other
        // errors are said as they are.
        assert_eq!(message(&[], &bundle), crate::exit::describe(&bundle));
        let other =
            zk_proto::Error::TlsConfig(zk_proto::TlsConfigError::NoTrustAnchors("none".into()));
        assert_eq!(
            message(&["--tls-keystore", "c.p12"], &other),
            crate::exit::describe(&other)
        );
    }

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
