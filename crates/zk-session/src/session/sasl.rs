//! The SASL exchange of a connection: after the ConnectResponse and before anything else (no
//! credentials, SetWatches, pings or callers' requests go out until it is done, as the Java
//! client holds them back, and a server enforcing authentication would close the session on
//! them). The session is `Connected` once the exchange succeeds; a failure ends it in
//! `AuthFailed`.
//!
//! A mechanism whose steps may block ([`SaslConfig::blocking`]: Kerberos, which may wait for a
//! KDC) is not run here: each step is handed to the driver as a [`SaslWork`]
//! ([`Session::poll_sasl_work`]), which runs it on a blocking thread and hands back the
//! [`SaslDone`] ([`Session::handle_sasl_done`]). Meanwhile the session's timers go on; a step
//! that does not finish within the attempt's budget ends the attempt
//! ([`ConnectFailure::Sasl`]), and its late result is ignored.

use std::collections::VecDeque;
use std::time::Instant;

use jute::{ErrorCode, GetSaslRequest, OpCode, Response};

use super::request::{AfterReply, Encoded};
use super::{Link, Outgoing, Session, SessionState};
use crate::error::{AuthFailure, AuthReason, ConnectFailure, Error};
use crate::sasl::{SaslConfig, SaslError, SaslMechanism, SaslStep};

/// The exchange under way on the current connection.
#[derive(Debug)]
pub(super) struct SaslRun {
    /// `None` while a step runs on a blocking thread.
    mechanism: Option<Box<dyn SaslMechanism>>,
    /// What the ConnectResponse said, for when the session becomes connected.
    read_only: bool,
    /// The step out on a blocking thread, if any: its id and when it was handed out.
    job: Option<(u64, Instant)>,
}

/// A step of a blocking SASL mechanism for the driver to run off the runtime's threads
/// ([`Session::poll_sasl_work`]).
#[derive(Debug)]
pub struct SaslWork {
    id: u64,
    task: SaslTask,
}

#[derive(Debug)]
enum SaslTask {
    /// Make the mechanism for the host and take its first token.
    Start { config: SaslConfig, host: String },
    /// Give the mechanism the server's token.
    Step {
        mechanism: Box<dyn SaslMechanism>,
        token: Vec<u8>,
    },
}

/// What a [`SaslWork`] gave, for [`Session::handle_sasl_done`].
#[derive(Debug)]
pub struct SaslDone {
    id: u64,
    result: Result<(Box<dyn SaslMechanism>, SaslOutput), SaslError>,
}

#[derive(Debug)]
enum SaslOutput {
    Initial(Vec<u8>),
    Step(SaslStep),
}

impl SaslWork {
    /// Runs the step. It may block (that is why it is handed out): call it on a blocking
    /// thread.
    pub fn run(self) -> SaslDone {
        let result = match self.task {
            SaslTask::Start { config, host } => config.start(&host).and_then(|mut mechanism| {
                let token = mechanism.initial_token()?;
                Ok((mechanism, SaslOutput::Initial(token)))
            }),
            SaslTask::Step {
                mut mechanism,
                token,
            } => mechanism
                .step(&token)
                .map(|step| (mechanism, SaslOutput::Step(step))),
        };
        SaslDone {
            id: self.id,
            result,
        }
    }
}

/// The steps handed out and not taken by the driver yet, and the next id.
#[derive(Debug, Default)]
pub(super) struct SaslJobs {
    queue: VecDeque<SaslWork>,
    next_id: u64,
}

impl Session {
    /// Whether a SASL exchange holds back everything but its own tokens.
    pub(super) fn authenticating(&self) -> bool {
        self.sasl.is_some()
    }

    /// The next step of a blocking SASL mechanism to run on a blocking thread; its result goes
    /// to [`handle_sasl_done`](Self::handle_sasl_done).
    pub fn poll_sasl_work(&mut self) -> Option<SaslWork> {
        self.sasl_jobs.queue.pop_front()
    }

    /// A step handed out by [`poll_sasl_work`](Self::poll_sasl_work) finished. A result whose
    /// connection or exchange is gone (the step overran its budget) is dropped.
    pub fn handle_sasl_done(&mut self, now: Instant, done: SaslDone) {
        let Some(run) = &mut self.sasl else {
            return;
        };
        if run.job.map(|(id, _)| id) != Some(done.id) {
            return;
        }
        run.job = None;
        tracing::trace!(?now, "SASL step done");
        match done.result {
            Ok((mechanism, output)) => {
                run.mechanism = Some(mechanism);
                match output {
                    SaslOutput::Initial(token) => self.send_sasl_token(token),
                    SaslOutput::Step(step) => self.sasl_stepped(step),
                }
            }
            Err(error) => self.sasl_failed(AuthFailure::from_sasl(&error)),
        }
    }

    /// When the step out on a blocking thread runs out of time.
    pub(super) fn sasl_deadline(&self) -> Option<Instant> {
        let (_, since) = self.sasl.as_ref()?.job?;
        Some(since + self.timing.connect_timeout)
    }

    /// The step out on a blocking thread ran out of time: the attempt failed (a connection
    /// that is still up is dropped; the next attempt begins after the backoff).
    pub(super) fn sasl_timed_out(&mut self, now: Instant) {
        let failure = self.sasl_unfinished(now);
        tracing::warn!(%failure, "SASL step timed out");
        self.sasl = None;
        self.failed_attempts = self.failed_attempts.saturating_add(1);
        if let Some(host) = self.current_host {
            self.tried.insert(host);
        }
        self.last_failure = Some(failure);
        self.lose_connection(now, Error::ConnectionLoss, true);
    }

    /// The failure of an attempt whose SASL exchange has not finished at `now`.
    pub(super) fn sasl_unfinished(&self, now: Instant) -> ConnectFailure {
        let mechanism = self.config.sasl.as_ref().map_or("", |config| config.name());
        match self.sasl.as_ref().and_then(|run| run.job) {
            Some((_, since)) => ConnectFailure::Sasl(format!(
                "the {mechanism} mechanism did not finish a step in {} ms (its library is \
                 blocked; for Kerberos, usually a KDC that does not answer)",
                now.saturating_duration_since(since).as_millis()
            )),
            None => ConnectFailure::Sasl(format!(
                "the {mechanism} exchange had not finished (the server did not answer it)"
            )),
        }
    }

    /// Begins the exchange if the session authenticates with SASL; `false` if it does not.
    pub(super) fn start_sasl(&mut self, now: Instant, read_only: bool) -> bool {
        let Some(config) = &self.config.sasl else {
            return false;
        };
        // The host of this connection (scripted tests may connect without one handed out).
        let host = self
            .current_host()
            .and_then(|index| self.hosts().get(index))
            .map_or("", |addr| addr.host.as_str())
            .to_owned();
        tracing::debug!(mechanism = config.name(), "SASL authentication");
        if config.is_blocking() {
            let task = SaslTask::Start {
                config: config.clone(),
                host,
            };
            self.sasl = Some(SaslRun {
                mechanism: None,
                read_only,
                job: None,
            });
            self.hand_out(now, task);
            return true;
        }
        let started = config
            .start(&host)
            .and_then(|mut mechanism| Ok((mechanism.initial_token()?, mechanism)));
        match started {
            Ok((token, mechanism)) => {
                self.sasl = Some(SaslRun {
                    mechanism: Some(mechanism),
                    read_only,
                    job: None,
                });
                self.send_sasl_token(token);
            }
            Err(error) => self.sasl_failed(AuthFailure::from_sasl(&error)),
        }
        true
    }

    /// Hands `task` to the driver as the exchange's step under way.
    fn hand_out(&mut self, now: Instant, task: SaslTask) {
        let id = self.sasl_jobs.next_id;
        self.sasl_jobs.next_id += 1;
        if let Some(run) = &mut self.sasl {
            run.job = Some((id, now));
        }
        self.sasl_jobs.queue.push_back(SaslWork { id, task });
    }

    fn send_sasl_token(&mut self, token: Vec<u8>) {
        let body = GetSaslRequest {
            token: Some(token.into()),
        };
        self.control.push_back(Outgoing::Request {
            id: None,
            encoded: Encoded {
                op_code: OpCode::SASL,
                body: body.into(),
                after: AfterReply::Sasl,
            },
        });
    }

    /// The server answered a SASL token: `err` its code, `body` its token when OK (`None`
    /// also when the body could not be decoded).
    pub(super) fn handle_sasl_reply(&mut self, err: ErrorCode, body: Option<Response>) {
        let blocking = self
            .config
            .sasl
            .as_ref()
            .is_some_and(SaslConfig::is_blocking);
        // The reply's arrival (the frame being handled) is now.
        let Link::Up { last_recv: now, .. } = self.link else {
            return;
        };
        let Some(run) = &mut self.sasl else {
            // The exchange of a connection that is gone.
            return;
        };
        if err != ErrorCode::OK {
            let reason = Error::from_code(err).map_or_else(|| err.to_string(), |e| e.to_string());
            self.sasl_failed(AuthFailure {
                reason: AuthReason::RefusedByServer,
                detail: format!("the server refused the SASL exchange: {reason}"),
            });
            return;
        }
        let token = match body {
            Some(Response::Sasl(response)) => response.token.unwrap_or_default(),
            _ => {
                self.sasl_failed(AuthFailure {
                    reason: AuthReason::Mechanism,
                    detail: "undecodable SASL reply".into(),
                });
                return;
            }
        };
        let Some(mut mechanism) = run.mechanism.take() else {
            // A reply while our own step is still out: the server answered a token we have not
            // sent. Not a conversation that can go on.
            self.sasl_failed(AuthFailure {
                reason: AuthReason::Mechanism,
                detail: "a SASL reply while the mechanism was busy".into(),
            });
            return;
        };
        if blocking {
            self.hand_out(
                now,
                SaslTask::Step {
                    mechanism,
                    token: token.to_vec(),
                },
            );
            return;
        }
        let step = mechanism.step(&token);
        run.mechanism = Some(mechanism);
        match step {
            Ok(step) => self.sasl_stepped(step),
            Err(error) => self.sasl_failed(AuthFailure::from_sasl(&error)),
        }
    }

    /// The mechanism took the server's token: send its answer, or the session is ready.
    fn sasl_stepped(&mut self, step: SaslStep) {
        match step {
            SaslStep::Send(next) => self.send_sasl_token(next),
            SaslStep::Done => {
                let read_only = self.sasl.as_ref().is_some_and(|run| run.read_only);
                self.sasl = None;
                tracing::debug!("SASL authentication succeeded");
                self.session_ready(read_only);
            }
        }
    }

    /// Authentication failed: the session ends in `AuthFailed` (the server closes such a
    /// connection; another attempt would fail the same way).
    fn sasl_failed(&mut self, failure: AuthFailure) {
        tracing::warn!(%failure, "SASL authentication failed");
        self.sasl = None;
        self.auth_failure = Some(failure.clone());
        self.terminate(SessionState::AuthFailed, Error::AuthFailed(failure));
    }
}
