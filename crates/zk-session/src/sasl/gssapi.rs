//! GSSAPI (RFC 4752): Kerberos V5 through the system's GSSAPI library (MIT krb5 or Heimdal,
//! through the `libgssapi` crate), as ZooKeeper's server runs it: mutual authentication, no
//! security layer (the server's `auth` quality of protection).
//!
//! The exchange:
//!
//! 1. the first token is the Kerberos AP-REQ for the server's host-based service name
//!    `<service>@<host>` (`zookeeper@<host>` by default), made with the client's credentials
//!    (a ticket-granting ticket from the credential cache, or keys from the client keytab);
//! 2. the server answers with its AP-REP, which proves it holds the service's key (mutual
//!    authentication); the context is then established and the client answers with an empty
//!    token (or the library's last token, if it has one);
//! 3. the server sends its security-layer offer, wrapped (integrity-protected) with the
//!    context: one octet of supported layers (1: none, 2: integrity, 4: confidentiality) and
//!    three octets of the largest message it accepts;
//! 4. the client answers, wrapped without confidentiality: layer 1 (none) and a largest
//!    message of 0, without an authorization identity (ZooKeeper derives the session's
//!    identity from the authenticated principal);
//! 5. the server's last reply carries no token: authenticated.
//!
//! The credentials come from a credential cache that holds a ticket-granting ticket, or from
//! a client keytab that holds the principal's keys (the library then asks the KDC for a
//! ticket with them). By default they are the process's: `KRB5CCNAME` (or
//! `default_ccache_name` in krb5.conf) and MIT's `KRB5_CLIENT_KTNAME` (or
//! `default_client_keytab_name`). [`KerberosOptions::with_ccache`] and
//! [`KerberosOptions::with_client_keytab`] name them per client instead (MIT's credential
//! store, `gss_acquire_cred_from`), so one process can hold sessions as several principals.
//! [`KerberosOptions::with_principal`] picks the principal (a cache of a collection, or an
//! entry of the keytab).

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext as _};
use libgssapi::credential::{Cred, CredUsage};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE, GSS_NT_KRB5_PRINCIPAL, OidSet};

use super::{SaslError, SaslMechanism, SaslStep};

/// The service name of ZooKeeper's servers (Java's `zookeeper.sasl.client.username`).
pub const DEFAULT_SERVICE: &str = "zookeeper";

/// Security layer bit: no security layer.
const LAYER_NONE: u8 = 1;
/// Security layer bit: integrity protection.
const LAYER_INTEGRITY: u8 = 2;
/// Security layer bit: confidentiality protection.
const LAYER_CONFIDENTIALITY: u8 = 4;

/// The Kerberos settings of [`SaslConfig::kerberos`](super::SaslConfig::kerberos): which
/// server to ask a ticket for, and as whom.
///
/// ```
/// use zk_session::sasl::KerberosOptions;
///
/// let options = KerberosOptions::default()
///     .with_principal("alice@EXAMPLE.COM")
///     .with_host("zk1.example.com");
/// assert_eq!(options.target("zk2.example.com"), "zookeeper@zk1.example.com");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KerberosOptions {
    /// The service part of the server's name `<service>@<host>`: [`DEFAULT_SERVICE`]
    /// (`zookeeper`) unless the servers run under another principal (`<service>/<host>@REALM`).
    pub service: String,
    /// The host part of the server's name; `None` (the default): the host of the
    /// connect-string entry being connected to, as written there (a session that moves to
    /// another server asks a ticket for that server).
    pub host: Option<String>,
    /// The client's principal, e.g. `alice@EXAMPLE.COM` (`alice` takes the default realm);
    /// `None` (the default): the default credential cache's principal, or the first of the
    /// client keytab.
    pub principal: Option<String>,
    /// The credential cache to read the ticket-granting ticket from (and to keep tickets
    /// in), e.g. `FILE:/run/app/krb5cc` or `DIR:/run/app/cc`; `None` (the default): the
    /// process's default cache, unless a client keytab is set (see
    /// [`client_keytab`](Self::client_keytab)).
    pub ccache: Option<String>,
    /// The client keytab holding the principal's keys, e.g. `/etc/app/client.keytab`;
    /// `None` (the default): the process's default client keytab. When set without a
    /// credential cache, the tickets obtained with it are kept in a memory cache of this
    /// process named after the keytab and the principal, so they are neither read from nor
    /// written to the default cache.
    pub client_keytab: Option<String>,
}

impl Default for KerberosOptions {
    fn default() -> Self {
        KerberosOptions {
            service: DEFAULT_SERVICE.to_owned(),
            host: None,
            principal: None,
            ccache: None,
            client_keytab: None,
        }
    }
}

impl KerberosOptions {
    /// These options with another service name.
    #[must_use]
    pub fn with_service(mut self, service: impl Into<String>) -> Self {
        self.service = service.into();
        self
    }

    /// These options with a fixed server host (e.g. the name in the servers' principals when
    /// the connect string has addresses).
    #[must_use]
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// These options with the client's principal.
    #[must_use]
    pub fn with_principal(mut self, principal: impl Into<String>) -> Self {
        self.principal = Some(principal.into());
        self
    }

    /// These options with a credential cache of their own (see
    /// [`ccache`](Self::ccache)).
    #[must_use]
    pub fn with_ccache(mut self, ccache: impl Into<String>) -> Self {
        self.ccache = Some(ccache.into());
        self
    }

    /// These options with a client keytab of their own (see
    /// [`client_keytab`](Self::client_keytab)).
    #[must_use]
    pub fn with_client_keytab(mut self, keytab: impl Into<String>) -> Self {
        self.client_keytab = Some(keytab.into());
        self
    }

    /// The credential store these options name, if any: `None` takes the process's
    /// defaults.
    fn store(&self) -> Option<zk_gss_store::CredStore> {
        if self.ccache.is_none() && self.client_keytab.is_none() {
            return None;
        }
        let mut store = zk_gss_store::CredStore::default();
        store.ccache = self.ccache.clone().or_else(|| {
            // A keytab alone: its tickets stay in this process, one cache per identity.
            let keytab = self.client_keytab.as_deref().unwrap_or_default();
            let principal = self.principal.as_deref().unwrap_or_default();
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            std::hash::Hash::hash(&(keytab, principal), &mut hasher);
            Some(format!(
                "MEMORY:zk-proto-{:016x}",
                std::hash::Hasher::finish(&hasher)
            ))
        });
        store.client_keytab = self.client_keytab.clone();
        Some(store)
    }

    /// The server's host-based service name for a connection to `connected_host`:
    /// `<service>@<host>`.
    pub fn target(&self, connected_host: &str) -> String {
        format!(
            "{}@{}",
            self.service,
            self.host.as_deref().unwrap_or(connected_host)
        )
    }
}

/// The GSSAPI mechanism for one connection.
#[derive(Debug)]
pub struct Gssapi {
    target: String,
    principal: Option<String>,
    /// The client's own credential cache or keytab; `None`: the process's defaults.
    store: Option<zk_gss_store::CredStore>,
    state: State,
}

#[derive(Debug)]
enum State {
    /// The first token is not made yet.
    Start,
    /// The context is being established: the server's next token goes to the library.
    Negotiating(ClientCtx),
    /// The context is established: the server's security-layer offer comes next.
    Established(ClientCtx),
    /// Our choice is sent: the server's last (empty) reply comes next.
    Chosen,
    /// Authenticated.
    Done,
    /// A step failed; the mechanism is not usable any more.
    Failed,
}

impl Gssapi {
    /// The mechanism for a connection to `connected_host` (as written in the connect string).
    /// Nothing is asked of the library until [`initial_token`](SaslMechanism::initial_token).
    ///
    /// # Errors
    ///
    /// [`SaslError::Mechanism`] if the service or the host is empty, or a name holds a NUL.
    pub fn new(options: &KerberosOptions, connected_host: &str) -> Result<Gssapi, SaslError> {
        let host = options.host.as_deref().unwrap_or(connected_host);
        if options.service.is_empty() || host.is_empty() {
            return Err(SaslError::Mechanism(format!(
                "the server's Kerberos name needs a service and a host (got {:?})",
                options.target(connected_host)
            )));
        }
        let target = options.target(connected_host);
        let named = [&options.principal, &options.ccache, &options.client_keytab];
        for name in std::iter::once(&target).chain(named.into_iter().flatten()) {
            if name.contains('\0') {
                return Err(SaslError::Mechanism(format!(
                    "a Kerberos name with a NUL: {name:?}"
                )));
            }
        }
        Ok(Gssapi {
            target,
            principal: options.principal.clone(),
            store: options.store(),
            state: State::Start,
        })
    }

    /// The server's host-based service name this mechanism asks a ticket for.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// A new security context: the client's credentials and the server's name.
    fn new_context(&self) -> Result<ClientCtx, SaslError> {
        const ACQUIRING: &str = "acquiring the client's Kerberos credentials";
        let credentials = match &self.store {
            Some(store) => zk_gss_store::acquire_initiator(self.principal.as_deref(), store)
                .map_err(|error| match error {
                    zk_gss_store::AcquireError::Gss(error) => gss(ACQUIRING)(error),
                    other => SaslError::Mechanism(other.to_string()),
                })?,
            None => {
                let mut mechanisms = OidSet::new();
                mechanisms
                    .add(GSS_MECH_KRB5)
                    .map_err(gss("building the mechanism set"))?;
                let principal = self
                    .principal
                    .as_ref()
                    .map(|principal| {
                        Name::new(principal.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL))
                            .map_err(gss("reading the client principal"))
                    })
                    .transpose()?;
                Cred::acquire(
                    principal.as_ref(),
                    None,
                    CredUsage::Initiate,
                    Some(&mechanisms),
                )
                .map_err(gss(ACQUIRING))?
            }
        };
        let target = Name::new(self.target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE))
            .map_err(gss("reading the server's name"))?;
        Ok(ClientCtx::new(
            Some(credentials),
            target,
            CtxFlags::GSS_C_MUTUAL_FLAG | CtxFlags::GSS_C_INTEG_FLAG,
            Some(GSS_MECH_KRB5),
        ))
    }

    /// One step of the context's establishment with the server's `token` (`None`: the
    /// first); the token to send.
    fn establish(&mut self, mut context: ClientCtx, token: Option<&[u8]>) -> StepResult {
        let out = context
            .step(token, None)
            .map_err(gss("establishing the security context"))?;
        let out = out.map(|buf| buf.to_vec()).unwrap_or_default();
        if !context.is_complete() {
            self.state = State::Negotiating(context);
            return Ok(SaslStep::Send(out));
        }
        let flags = context
            .flags()
            .map_err(gss("reading the security context's flags"))?;
        if !flags.contains(CtxFlags::GSS_C_MUTUAL_FLAG) {
            return Err(SaslError::ServerNotAuthenticated);
        }
        self.state = State::Established(context);
        // RFC 4752: the client answers the server's last context token with an empty one
        // when the library has nothing more to send.
        Ok(SaslStep::Send(out))
    }
}

type StepResult = Result<SaslStep, SaslError>;

impl SaslMechanism for Gssapi {
    fn name(&self) -> &str {
        "GSSAPI"
    }

    fn initial_token(&mut self) -> Result<Vec<u8>, SaslError> {
        self.state = State::Failed;
        let context = self.new_context()?;
        match self.establish(context, None)? {
            SaslStep::Send(token) => Ok(token),
            SaslStep::Done => Err(SaslError::Mechanism(
                "the security context produced no first token".into(),
            )),
        }
    }

    fn step(&mut self, token: &[u8]) -> StepResult {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Negotiating(context) => self.establish(context, Some(token)),
            State::Established(mut context) => {
                let offer = context
                    .unwrap(token)
                    .map_err(gss("unwrapping the server's security layer offer"))?;
                let choice = choose_layer(&offer)?;
                let wrapped = context
                    .wrap(false, &choice)
                    .map_err(gss("wrapping the security layer choice"))?;
                self.state = State::Chosen;
                Ok(SaslStep::Send(wrapped.to_vec()))
            }
            State::Chosen if token.is_empty() => {
                self.state = State::Done;
                Ok(SaslStep::Done)
            }
            State::Chosen => Err(SaslError::MalformedChallenge(format!(
                "a {}-byte token after the security layer was chosen (expected none)",
                token.len()
            ))),
            State::Start => Err(SaslError::Mechanism(
                "a server token before the first token was sent".into(),
            )),
            State::Done => Err(SaslError::Mechanism(
                "a server token after authentication completed".into(),
            )),
            State::Failed => Err(SaslError::Mechanism(
                "a server token after the exchange failed".into(),
            )),
        }
    }
}

/// The server's security-layer offer (unwrapped): which layers it supports and the largest
/// message it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Offer {
    layers: u8,
    max_message: u32,
}

impl Offer {
    fn parse(offer: &[u8]) -> Result<Offer, SaslError> {
        let &[layers, a, b, c] = offer else {
            return Err(SaslError::MalformedChallenge(format!(
                "a security layer offer of {} bytes (expected 4)",
                offer.len()
            )));
        };
        Ok(Offer {
            layers,
            max_message: u32::from_be_bytes([0, a, b, c]),
        })
    }
}

/// Our answer to the server's (unwrapped) offer: no security layer, a largest message of 0
/// (RFC 4752: 0 without a layer), no authorization identity.
///
/// The server's largest message is not used: nothing is wrapped after authentication.
fn choose_layer(offer: &[u8]) -> Result<[u8; 4], SaslError> {
    let offer = Offer::parse(offer)?;
    if offer.layers & LAYER_NONE == 0 {
        let mut wanted = Vec::new();
        if offer.layers & LAYER_INTEGRITY != 0 {
            wanted.push("integrity");
        }
        if offer.layers & LAYER_CONFIDENTIALITY != 0 {
            wanted.push("confidentiality");
        }
        return Err(SaslError::Unsupported(format!(
            "the server requires a security layer ({}; offer {:#04x}), which this client \
             does not have (only authentication)",
            if wanted.is_empty() {
                "an unknown one".to_owned()
            } else {
                wanted.join(" or ")
            },
            offer.layers
        )));
    }
    Ok([LAYER_NONE, 0, 0, 0])
}

/// Maps a library error to [`SaslError::Gssapi`], naming what was being done.
fn gss(operation: &'static str) -> impl Fn(libgssapi::error::Error) -> SaslError {
    move |error| SaslError::Gssapi {
        operation: operation.to_owned(),
        major: error.major.bits(),
        minor: error.minor,
        message: error.to_string().trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_server_name_is_the_service_at_the_connected_or_the_configured_host() {
        let options = KerberosOptions::default();
        assert_eq!(options.target("zk1.example"), "zookeeper@zk1.example");
        let options = options.with_service("zk").with_host("localhost");
        assert_eq!(options.target("127.0.0.1"), "zk@localhost");
        let mechanism = Gssapi::new(&options, "127.0.0.1").expect("valid names");
        assert_eq!(mechanism.target(), "zk@localhost");
        assert_eq!(mechanism.name(), "GSSAPI");
    }

    #[test]
    fn names_that_cannot_be_asked_for_are_typed_errors() {
        let cases = [
            (KerberosOptions::default(), ""),
            (KerberosOptions::default().with_service(""), "zk1"),
            (KerberosOptions::default().with_host(""), "zk1"),
            (KerberosOptions::default().with_host("a\0b"), "zk1"),
            (KerberosOptions::default().with_principal("alice\0"), "zk1"),
        ];
        for (options, host) in cases {
            assert!(
                matches!(Gssapi::new(&options, host), Err(SaslError::Mechanism(_))),
                "{options:?} {host:?}"
            );
        }
    }

    #[test]
    fn an_offer_with_no_security_layer_is_answered_with_no_layer_and_size_zero() {
        // What ZooKeeper's (Java's) server offers for `auth`: layer 1, 64 KiB.
        assert_eq!(choose_layer(&[0x01, 0x01, 0x00, 0x00]), Ok([1, 0, 0, 0]));
        // Several layers offered, "none" among them.
        assert_eq!(choose_layer(&[0x07, 0xff, 0xff, 0xff]), Ok([1, 0, 0, 0]));
        assert_eq!(choose_layer(&[0x01, 0, 0, 0]), Ok([1, 0, 0, 0]));
        assert_eq!(
            Offer::parse(&[0x07, 0x01, 0x02, 0x03]),
            Ok(Offer {
                layers: 7,
                max_message: 0x0001_0203
            })
        );
    }

    #[test]
    fn offers_that_cannot_be_answered_are_typed_errors() {
        for offer in [&[][..], &[1], &[1, 0, 0], &[1, 0, 0, 0, 0], &[0u8; 64]] {
            assert!(
                matches!(choose_layer(offer), Err(SaslError::MalformedChallenge(_))),
                "{offer:?}"
            );
        }
        for (offer, says) in [
            ([0x02, 0, 0x10, 0], "integrity"),
            ([0x04, 0, 0x10, 0], "confidentiality"),
            ([0x06, 0, 0x10, 0], "integrity or confidentiality"),
            ([0x00, 0, 0, 0], "an unknown one"),
            ([0xf0, 0, 0, 0], "an unknown one"),
        ] {
            let error = choose_layer(&offer).expect_err("no layer this client has");
            assert!(
                matches!(&error, SaslError::Unsupported(why) if why.contains(says)),
                "{offer:?}: {error}"
            );
        }
    }

    #[test]
    fn tokens_out_of_turn_are_typed_errors() {
        let mut mechanism = Gssapi::new(&KerberosOptions::default(), "zk1").expect("valid names");
        assert!(matches!(
            mechanism.step(b"too early"),
            Err(SaslError::Mechanism(_))
        ));
        mechanism.state = State::Chosen;
        assert!(matches!(
            mechanism.step(b"more"),
            Err(SaslError::MalformedChallenge(_))
        ));
        // A failed step leaves the mechanism failed.
        assert!(matches!(mechanism.step(b""), Err(SaslError::Mechanism(_))));
        mechanism.state = State::Chosen;
        assert_eq!(mechanism.step(b""), Ok(SaslStep::Done));
        assert!(matches!(mechanism.step(b""), Err(SaslError::Mechanism(_))));
    }

    proptest! {
        /// No offer makes the choice panic; every answer is "no layer, size 0".
        #[test]
        fn arbitrary_offers_never_panic(offer in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok(choice) = choose_layer(&offer) {
                prop_assert_eq!(choice, [1, 0, 0, 0]);
                prop_assert!(offer.len() == 4 && offer[0] & 1 == 1);
            }
        }

        /// No server token makes a mechanism that has no context panic, whatever its state.
        #[test]
        fn arbitrary_tokens_out_of_turn_never_panic(
            token in proptest::collection::vec(any::<u8>(), 0..300),
            state in 0..4u8,
        ) {
            let mut mechanism =
                Gssapi::new(&KerberosOptions::default(), "zk1").expect("valid names");
            mechanism.state = match state {
                0 => State::Start,
                1 => State::Chosen,
                2 => State::Done,
                _ => State::Failed,
            };
            let _ = mechanism.step(&token);
            let _ = mechanism.step(&token);
        }
    }
}
