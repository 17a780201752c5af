//! The SASL exchange of a connection: after the ConnectResponse and before anything else (no
//! credentials, SetWatches, pings or callers' requests go out until it is done, as the Java
//! client holds them back, and a server enforcing authentication would close the session on
//! them). The session is `Connected` once the exchange succeeds; a failure ends it in
//! `AuthFailed`.

use jute::{Encode, ErrorCode, GetSaslRequest, OpCode, Response};

use super::request::{AfterReply, Encoded};
use super::{Outgoing, Session, SessionState};
use crate::error::Error;
use crate::sasl::{SaslMechanism, SaslStep};

/// The exchange under way on the current connection.
#[derive(Debug)]
pub(super) struct SaslRun {
    mechanism: Box<dyn SaslMechanism>,
    /// What the ConnectResponse said, for when the session becomes connected.
    read_only: bool,
}

impl Session {
    /// Whether a SASL exchange holds back everything but its own tokens.
    pub(super) fn authenticating(&self) -> bool {
        self.sasl.is_some()
    }

    /// Begins the exchange if the session authenticates with SASL; `false` if it does not.
    pub(super) fn start_sasl(&mut self, read_only: bool) -> bool {
        let Some(config) = &self.config.sasl else {
            return false;
        };
        // The host of this connection (scripted tests may connect without one handed out).
        let host = self
            .current_host()
            .and_then(|index| self.hosts().get(index))
            .map_or("", |addr| addr.host.as_str());
        let started = config
            .start(host)
            .and_then(|mut mechanism| Ok((mechanism.initial_token()?, mechanism)));
        match started {
            Ok((token, mechanism)) => {
                tracing::debug!(mechanism = mechanism.name(), "SASL authentication");
                self.sasl = Some(SaslRun {
                    mechanism,
                    read_only,
                });
                self.send_sasl_token(token);
            }
            Err(error) => self.sasl_failed(&error.to_string()),
        }
        true
    }

    fn send_sasl_token(&mut self, token: Vec<u8>) {
        let body = GetSaslRequest {
            token: Some(token.into()),
        };
        self.control.push_back(Outgoing::Request {
            id: None,
            encoded: Encoded {
                op_code: OpCode::SASL,
                body: body.to_bytes(),
                after: AfterReply::Sasl,
            },
        });
    }

    /// The server answered a SASL token: `err` its code, `body` its token when OK (`None`
    /// also when the body could not be decoded).
    pub(super) fn handle_sasl_reply(&mut self, err: ErrorCode, body: Option<Response>) {
        let Some(run) = &mut self.sasl else {
            // The exchange of a connection that is gone.
            return;
        };
        if err != ErrorCode::OK {
            let reason = Error::from_code(err).map_or_else(|| err.to_string(), |e| e.to_string());
            self.sasl_failed(&format!("the server refused: {reason}"));
            return;
        }
        let token = match body {
            Some(Response::Sasl(response)) => response.token.unwrap_or_default(),
            _ => {
                self.sasl_failed("undecodable SASL reply");
                return;
            }
        };
        match run.mechanism.step(&token) {
            Ok(SaslStep::Send(next)) => self.send_sasl_token(next),
            Ok(SaslStep::Done) => {
                let read_only = run.read_only;
                self.sasl = None;
                tracing::debug!("SASL authentication succeeded");
                self.session_ready(read_only);
            }
            Err(error) => self.sasl_failed(&error.to_string()),
        }
    }

    /// Authentication failed: the session ends in `AuthFailed` (the server closes such a
    /// connection; another attempt would fail the same way).
    fn sasl_failed(&mut self, why: &str) {
        tracing::warn!(reason = why, "SASL authentication failed");
        self.sasl = None;
        self.terminate(SessionState::AuthFailed, Error::AuthFailed);
    }
}
