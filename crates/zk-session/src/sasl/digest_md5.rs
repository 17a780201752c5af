//! DIGEST-MD5 (RFC 2831), client side, as ZooKeeper's server runs it: quality of protection
//! `auth` only (no integrity or confidentiality layer), algorithm `md5-sess`, digest URI
//! `zookeeper/zk-sasl-md5` (the service and server name the Java client uses).
//!
//! The exchange: an empty first token; the server's challenge (realm, nonce, qop, charset,
//! algorithm); our response (the digest of the password, bound to the nonces); the server's
//! `rspauth`, which proves it knows the password too and which we check.

use md5::{Digest as _, Md5};

use super::{SaslError, SaslMechanism, SaslStep};

/// The service and server name of the digest URI (Java's `ZooKeeperSaslClient`).
const DIGEST_URI: &str = "zookeeper/zk-sasl-md5";
/// The nonce count of the only response we send.
const NONCE_COUNT: &str = "00000001";
/// RFC 2831 bounds a challenge at 2,048 bytes.
const MAX_CHALLENGE_LEN: usize = 2048;

/// The DIGEST-MD5 mechanism for one connection.
#[derive(Debug)]
pub struct DigestMd5 {
    user: String,
    password: Password,
    cnonce: String,
    state: State,
}

/// Kept out of `Debug` output, wiped when dropped.
struct Password(zeroize::Zeroizing<String>);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<hidden>")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// The empty first token is (about to be) sent; the challenge comes next.
    Start,
    /// Our response is sent; the server's `rspauth` must be this.
    Responded { rspauth: String },
    /// Authenticated.
    Done,
}

impl DigestMd5 {
    /// The mechanism for `user` with `password`, with a client nonce from the operating
    /// system's random source.
    ///
    /// # Errors
    ///
    /// [`SaslError::Mechanism`] if the system has no random source.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Result<Self, SaslError> {
        let mut bytes = [0u8; 24];
        getrandom::fill(&mut bytes)
            .map_err(|e| SaslError::Mechanism(format!("no random source for the nonce: {e}")))?;
        Ok(Self::with_cnonce(user, password, hex(&bytes)))
    }

    /// The mechanism with a given client nonce (tests and known-answer vectors).
    pub fn with_cnonce(
        user: impl Into<String>,
        password: impl Into<String>,
        cnonce: impl Into<String>,
    ) -> Self {
        DigestMd5 {
            user: user.into(),
            password: Password(zeroize::Zeroizing::new(password.into())),
            cnonce: cnonce.into(),
            state: State::Start,
        }
    }

    /// Our response to a challenge, and the `rspauth` the server must answer with.
    fn respond(&self, challenge: &Challenge) -> Result<(String, String), SaslError> {
        let utf8 = challenge.utf8;
        let realm = challenge.realm.as_deref().unwrap_or("");
        let mut secret = Md5::new();
        secret.update(encode(&self.user, utf8)?);
        secret.update(b":");
        secret.update(encode(realm, utf8)?);
        secret.update(b":");
        secret.update(encode(&self.password.0, utf8)?);
        let mut a1 = Md5::new();
        a1.update(secret.finalize());
        a1.update(format!(":{}:{}", challenge.nonce, self.cnonce));
        let ha1 = hex(&a1.finalize());
        let digest = |a2: &str| {
            let ha2 = hex(&Md5::digest(a2.as_bytes()));
            let kd = format!(
                "{ha1}:{}:{NONCE_COUNT}:{}:auth:{ha2}",
                challenge.nonce, self.cnonce
            );
            hex(&Md5::digest(kd.as_bytes()))
        };
        let response = digest(&format!("AUTHENTICATE:{DIGEST_URI}"));
        let rspauth = digest(&format!(":{DIGEST_URI}"));
        let mut token = String::new();
        if utf8 {
            token.push_str("charset=utf-8,");
        }
        token.push_str(&format!("username={}", quoted(&self.user)));
        if let Some(realm) = &challenge.realm {
            token.push_str(&format!(",realm={}", quoted(realm)));
        }
        token.push_str(&format!(
            ",nonce={},nc={NONCE_COUNT},cnonce={},digest-uri=\"{DIGEST_URI}\",maxbuf=65536,\
             response={response},qop=auth",
            quoted(&challenge.nonce),
            quoted(&self.cnonce)
        ));
        Ok((token, rspauth))
    }
}

impl SaslMechanism for DigestMd5 {
    fn name(&self) -> &str {
        "DIGEST-MD5"
    }

    fn initial_token(&mut self) -> Result<Vec<u8>, SaslError> {
        self.state = State::Start;
        Ok(Vec::new())
    }

    fn step(&mut self, token: &[u8]) -> Result<SaslStep, SaslError> {
        match &self.state {
            State::Start => {
                let challenge = Challenge::parse(token)?;
                let (response, rspauth) = self.respond(&challenge)?;
                // Without `charset=utf-8` the server reads the response as ISO 8859-1 (every
                // character of it fits: `respond` checked the user name and the realm).
                let response = if challenge.utf8 {
                    response.into_bytes()
                } else {
                    encode(&response, false)?
                };
                self.state = State::Responded { rspauth };
                Ok(SaslStep::Send(response))
            }
            State::Responded { rspauth } => {
                let directives = parse_directives(token)?;
                let got = single(&directives, "rspauth")?
                    .ok_or_else(|| SaslError::MalformedChallenge("no rspauth".into()))?;
                if got != *rspauth {
                    return Err(SaslError::ServerNotAuthenticated);
                }
                self.state = State::Done;
                Ok(SaslStep::Done)
            }
            State::Done => Err(SaslError::Mechanism(
                "a server token after authentication completed".into(),
            )),
        }
    }
}

/// The parts of a digest challenge that the response depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Challenge {
    realm: Option<String>,
    nonce: String,
    utf8: bool,
}

impl Challenge {
    fn parse(token: &[u8]) -> Result<Challenge, SaslError> {
        let directives = parse_directives(token)?;
        let nonce = single(&directives, "nonce")?
            .ok_or_else(|| SaslError::MalformedChallenge("no nonce".into()))?;
        match single(&directives, "algorithm")? {
            Some(algorithm) if algorithm.eq_ignore_ascii_case("md5-sess") => {}
            Some(other) => return Err(SaslError::Unsupported(format!("algorithm {other}"))),
            None => return Err(SaslError::MalformedChallenge("no algorithm".into())),
        }
        let utf8 = match single(&directives, "charset")? {
            None => false,
            Some(charset) if charset.eq_ignore_ascii_case("utf-8") => true,
            Some(other) => return Err(SaslError::Unsupported(format!("charset {other}"))),
        };
        // qop defaults to `auth`; the others need a security layer this client does not have.
        if let Some(qop) = single(&directives, "qop")?
            && !qop
                .split(',')
                .any(|q| q.trim().eq_ignore_ascii_case("auth"))
        {
            return Err(SaslError::Unsupported(format!("qop {qop} (only auth)")));
        }
        // Several realms may be offered; the first is taken, as Java's client does by default.
        let realm = directives
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case("realm"))
            .map(|(_, value)| value.clone());
        Ok(Challenge { realm, nonce, utf8 })
    }
}

/// The value of a directive that may appear at most once.
fn single(directives: &[(String, String)], name: &str) -> Result<Option<String>, SaslError> {
    let mut values = directives
        .iter()
        .filter(|(key, _)| key.eq_ignore_ascii_case(name));
    let first = values.next().map(|(_, value)| value.clone());
    if values.next().is_some() {
        return Err(SaslError::MalformedChallenge(format!(
            "{name} appears twice"
        )));
    }
    Ok(first)
}

/// `key=value` pairs separated by commas (empty elements allowed); a value is a token or a
/// quoted string with backslash escapes.
fn parse_directives(token: &[u8]) -> Result<Vec<(String, String)>, SaslError> {
    if token.len() > MAX_CHALLENGE_LEN {
        return Err(SaslError::MalformedChallenge(format!(
            "{} bytes (at most {MAX_CHALLENGE_LEN})",
            token.len()
        )));
    }
    let text = std::str::from_utf8(token)
        .map_err(|_| SaslError::MalformedChallenge("not UTF-8".into()))?;
    let mut chars = text.chars().peekable();
    let mut directives = Vec::new();
    loop {
        while chars
            .peek()
            .is_some_and(|c| c.is_ascii_whitespace() || *c == ',')
        {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(directives);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c == ',' || c.is_ascii_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || key.is_empty() {
            return Err(SaslError::MalformedChallenge(format!(
                "expected key=value near {key:?}"
            )));
        }
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => {
                            return Err(SaslError::MalformedChallenge(
                                "unterminated escape".into(),
                            ));
                        }
                    },
                    Some(c) => value.push(c),
                    None => {
                        return Err(SaslError::MalformedChallenge(format!(
                            "unterminated quoted value of {key}"
                        )));
                    }
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' || c.is_ascii_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some(',') => directives.push((key, value)),
            Some(c) => {
                return Err(SaslError::MalformedChallenge(format!(
                    "unexpected {c:?} after {key}"
                )));
            }
        }
    }
}

/// A quoted string, with `"` and `\` escaped.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The bytes hashed for a user name, realm or password: ISO 8859-1 when every character fits
/// in it (also under `charset=utf-8`, as RFC 2831 says and Java does), else UTF-8, which only
/// `charset=utf-8` allows.
fn encode(value: &str, utf8: bool) -> Result<Vec<u8>, SaslError> {
    if let Some(latin1) = value
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect::<Option<Vec<u8>>>()
    {
        return Ok(latin1);
    }
    if utf8 {
        Ok(value.as_bytes().to_vec())
    } else {
        Err(SaslError::Unsupported(
            "a character outside ISO 8859-1 without charset=utf-8".into(),
        ))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// RFC 2831's example, with the digest URI ZooKeeper uses: the expected values are
    /// computed by this test's independent formula below, and the formula is checked
    /// against the RFC's own example (`imap/elwood.innosoft.com`).
    fn rfc_response(
        user: &str,
        realm: &str,
        password: &str,
        nonce: &str,
        cnonce: &str,
        uri: &str,
        a2_prefix: &str,
    ) -> String {
        let secret = Md5::digest(format!("{user}:{realm}:{password}").as_bytes());
        let mut a1 = secret.to_vec();
        a1.extend_from_slice(format!(":{nonce}:{cnonce}").as_bytes());
        let ha1 = hex(&Md5::digest(&a1));
        let ha2 = hex(&Md5::digest(format!("{a2_prefix}:{uri}").as_bytes()));
        hex(&Md5::digest(
            format!("{ha1}:{nonce}:00000001:{cnonce}:auth:{ha2}").as_bytes(),
        ))
    }

    #[test]
    fn the_formula_gives_rfc_2831_example_values() {
        let args = (
            "chris",
            "elwood.innosoft.com",
            "secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
            "imap/elwood.innosoft.com",
        );
        let response = rfc_response(
            args.0,
            args.1,
            args.2,
            args.3,
            args.4,
            args.5,
            "AUTHENTICATE",
        );
        assert_eq!(response, "d388dad90d4bbd760a152321f2143af7");
        let rspauth = rfc_response(args.0, args.1, args.2, args.3, args.4, args.5, "");
        assert_eq!(rspauth, "ea40f60335c427b5527b84dbabcdfffd");
    }

    const CHALLENGE: &[u8] = b"realm=\"zk-sasl-md5\",nonce=\"OA6MG9tEQGm2hh\",qop=\"auth\",\
                               charset=utf-8,algorithm=md5-sess";

    #[test]
    fn a_full_exchange_sends_the_expected_response_and_checks_rspauth() {
        let mut mechanism = DigestMd5::with_cnonce("bob", "secret", "OA6MHXh6VqTrRk");
        assert_eq!(mechanism.initial_token(), Ok(Vec::new()));
        let SaslStep::Send(response) = mechanism.step(CHALLENGE).expect("a response") else {
            panic!("no response");
        };
        let response = String::from_utf8(response).expect("text");
        let expected = rfc_response(
            "bob",
            "zk-sasl-md5",
            "secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
            DIGEST_URI,
            "AUTHENTICATE",
        );
        assert_eq!(
            response,
            format!(
                "charset=utf-8,username=\"bob\",realm=\"zk-sasl-md5\",nonce=\"OA6MG9tEQGm2hh\",\
                 nc=00000001,cnonce=\"OA6MHXh6VqTrRk\",digest-uri=\"zookeeper/zk-sasl-md5\",\
                 maxbuf=65536,response={expected},qop=auth"
            )
        );
        let rspauth = rfc_response(
            "bob",
            "zk-sasl-md5",
            "secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
            DIGEST_URI,
            "",
        );
        assert_eq!(
            mechanism.step(format!("rspauth={rspauth}").as_bytes()),
            Ok(SaslStep::Done)
        );
        assert!(matches!(
            mechanism.step(b"rspauth=0"),
            Err(SaslError::Mechanism(_))
        ));
    }

    #[test]
    fn a_wrong_rspauth_fails_mutual_authentication() {
        let mut mechanism = DigestMd5::with_cnonce("bob", "secret", "c");
        mechanism.step(CHALLENGE).expect("a response");
        assert_eq!(
            mechanism.step(b"rspauth=00000000000000000000000000000000"),
            Err(SaslError::ServerNotAuthenticated)
        );
    }

    #[test]
    fn latin1_names_hash_as_latin1_and_others_as_utf8() {
        assert_eq!(encode("bé", true), Ok(vec![b'b', 0xe9]));
        assert_eq!(encode("b😀", true), Ok("b😀".as_bytes().to_vec()));
        assert!(matches!(
            encode("b😀", false),
            Err(SaslError::Unsupported(_))
        ));
    }

    #[test]
    fn challenges_that_cannot_be_answered_are_typed_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"realm=\"r\",qop=\"auth\",algorithm=md5-sess", "no nonce"),
            (b"nonce=\"n\",qop=\"auth\"", "no algorithm"),
            (b"nonce=\"n\",algorithm=md5", "algorithm"),
            (b"nonce=\"n\",qop=\"auth-conf\",algorithm=md5-sess", "qop"),
            (b"nonce=\"n\",nonce=\"m\",algorithm=md5-sess", "twice"),
            (b"nonce=\"n,algorithm=md5-sess", "unterminated"),
            (b"nonce", "key=value"),
            (b"=x", "key=value"),
            (b"nonce=\"n\"x,algorithm=md5-sess", "unexpected"),
            (b"\xff", "UTF-8"),
            (b"nonce=\"n\",algorithm=md5-sess,charset=latin9", "charset"),
        ];
        for (challenge, why) in cases {
            let error = Challenge::parse(challenge).expect_err(why);
            assert!(error.to_string().contains(why), "{error} for {why}");
        }
        let long = vec![b' '; MAX_CHALLENGE_LEN + 1];
        assert!(matches!(
            Challenge::parse(&long),
            Err(SaslError::MalformedChallenge(_))
        ));
    }

    #[test]
    fn directives_allow_spaces_empty_elements_escapes_and_several_realms() {
        let challenge = Challenge::parse(
            b" , realm = \"a\\\"b\" ,, realm=\"second\", nonce=\"n\\\\1\" , \
              qop=\"auth,auth-int\",algorithm=MD5-SESS,",
        )
        .expect("parses");
        assert_eq!(
            challenge,
            Challenge {
                realm: Some("a\"b".into()),
                nonce: "n\\1".into(),
                utf8: false,
            }
        );
        assert_eq!(quoted("a\"b\\c"), "\"a\\\"b\\\\c\"");
    }

    proptest! {
        /// No challenge makes the mechanism panic.
        #[test]
        fn arbitrary_tokens_never_panic(token in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut mechanism = DigestMd5::with_cnonce("u", "p", "c");
            let _ = mechanism.step(&token);
            let _ = mechanism.step(&token);
        }

        /// A quoted value reads back as itself.
        #[test]
        fn quoted_values_round_trip(value in "[ -~é😀]{0,20}") {
            let token = format!("nonce={},algorithm=md5-sess", quoted(&value));
            let challenge = Challenge::parse(token.as_bytes()).expect("parses");
            prop_assert_eq!(challenge.nonce, value);
        }
    }
}
