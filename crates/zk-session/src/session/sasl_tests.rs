//! The SASL exchange, scripted: what is held back while it runs, what ends it, and that it
//! starts over on every connection.

use std::time::Duration;

use bytes::Bytes;
use jute::*;

use super::tests::{Harness, config, failed, frame, ok, replies};
use super::*;
use crate::sasl::{SaslConfig, SaslError, SaslMechanism, SaslStep};

/// A two-step mechanism: sends `hello`; to `challenge` answers `answer`; `welcome` ends it.
#[derive(Debug)]
struct Scripted;

impl SaslMechanism for Scripted {
    fn name(&self) -> &str {
        "SCRIPTED"
    }

    fn initial_token(&mut self) -> Result<Vec<u8>, SaslError> {
        Ok(b"hello".to_vec())
    }

    fn step(&mut self, token: &[u8]) -> Result<SaslStep, SaslError> {
        match token {
            b"challenge" => Ok(SaslStep::Send(b"answer".to_vec())),
            b"welcome" => Ok(SaslStep::Done),
            _ => Err(SaslError::ServerNotAuthenticated),
        }
    }
}

fn sasl_config() -> SessionConfig {
    SessionConfig {
        sasl: Some(SaslConfig::custom("SCRIPTED", |_| Ok(Box::new(Scripted)))),
        ..config()
    }
}

/// The token of a SASL request the session sent.
fn sasl_token(sent: &(RequestHeader, Bytes)) -> Bytes {
    assert_eq!(sent.0.op_code, OpCode::SASL, "a SASL request");
    decode_exact::<GetSaslRequest>(sent.1.clone())
        .expect("a GetSASLRequest")
        .token
        .unwrap_or_default()
}

fn sasl_reply(xid: i32, token: &[u8]) -> Bytes {
    frame(
        ok(xid, 0),
        SetSaslResponse {
            token: Some(Bytes::copy_from_slice(token)),
        },
    )
}

#[test]
fn the_exchange_runs_first_and_holds_back_everything_else_until_it_succeeds() {
    let mut h = Harness::new(sasl_config());
    let request = h.submit(Op::Sync { path: "/".into() });
    let auth = h
        .session
        .add_auth("digest".into(), Bytes::from_static(b"u:p"))
        .expect("open session");
    h.establish(0x51, 30_000);
    let sent = h.sent();
    assert_eq!(sent.len(), 1, "only the first token: {sent:?}");
    assert_eq!(sasl_token(&sent[0]), &b"hello"[..]);
    assert_eq!(h.session.state(), SessionState::Connecting);

    // Past the ping interval: no ping either, while the exchange runs.
    h.advance(Duration::from_secs(11));
    assert!(h.sent().is_empty(), "nothing else while authenticating");
    h.server_says(sasl_reply(sent[0].0.xid, b"challenge"));
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sasl_token(&sent[0]), &b"answer"[..]);
    assert_eq!(h.session.state(), SessionState::Connecting);

    h.server_says(sasl_reply(sent[0].0.xid, b"welcome"));
    assert_eq!(h.session.state(), SessionState::Connected);
    // Now the credentials, then the caller's request, in that order.
    let sent = h.sent();
    let ops: Vec<OpCode> = sent.iter().map(|(header, _)| header.op_code).collect();
    assert_eq!(ops, [OpCode::AUTH, OpCode::SYNC]);
    h.server_says(frame(failed(jute::codes::xid::AUTH, 0, ErrorCode::OK), ()));
    h.server_says(frame(
        ok(sent[1].0.xid, 5),
        SyncResponse {
            path: Some("/".into()),
        },
    ));
    let events = h.events();
    let replies = replies(&events);
    assert_eq!(replies.len(), 2, "{events:?}");
    assert!(replies.iter().all(|(_, result)| result.is_ok()));
    assert!(replies.iter().any(|(id, _)| *id == auth));
    assert!(replies.iter().any(|(id, _)| *id == request));
}

#[test]
fn a_refused_exchange_ends_the_session_in_auth_failed_without_retrying() {
    let mut h = Harness::new(sasl_config());
    let request = h.submit(Op::Sync { path: "/".into() });
    h.establish(0x52, 30_000);
    let sent = h.sent();
    h.server_says(frame(
        failed(sent[0].0.xid, 0, ErrorCode::AUTH_FAILED),
        SetSaslResponse { token: None },
    ));
    assert_eq!(h.session.state(), SessionState::AuthFailed);
    let events = h.events();
    let replied = replies(&events);
    assert!(
        matches!(
            &replied[..],
            [(id, Err(Error::AuthFailed(failure)))]
                if *id == request && failure.reason == crate::AuthReason::RefusedByServer
        ),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_))),
        "the connection is dropped: {events:?}"
    );
    h.advance(Duration::from_secs(60));
    assert_eq!(h.session.poll_connect(h.now), None, "no new attempt");
}

#[test]
fn a_server_that_fails_mutual_authentication_ends_the_session() {
    let mut h = Harness::new(sasl_config());
    h.establish(0x53, 30_000);
    let sent = h.sent();
    h.server_says(sasl_reply(sent[0].0.xid, b"not the expected token"));
    assert_eq!(h.session.state(), SessionState::AuthFailed);
    assert!(h.sent().is_empty());
    // The cause stays for every later call.
    assert!(
        matches!(
            h.session.ended_with(),
            Some(Error::AuthFailed(crate::AuthFailure {
                reason: crate::AuthReason::ServerNotAuthenticated,
                ..
            }))
        ),
        "{:?}",
        h.session.ended_with()
    );
}

#[test]
fn a_connection_lost_mid_exchange_starts_it_over_on_the_next_connection() {
    let mut h = Harness::new(sasl_config());
    h.establish(0x54, 30_000);
    let sent = h.sent();
    h.server_says(sasl_reply(sent[0].0.xid, b"challenge"));
    assert_eq!(h.sent().len(), 1, "the answer went out");
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert_eq!(h.session.state(), SessionState::Connecting);
    h.advance(Duration::from_secs(2));
    let request = h.establish(0x54, 30_000);
    assert_eq!(request.session_id, 0x54, "the same session is resumed");
    let sent = h.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sasl_token(&sent[0]),
        &b"hello"[..],
        "a fresh exchange: its first token again"
    );
    h.server_says(sasl_reply(sent[0].0.xid, b"challenge"));
    let sent = h.sent();
    h.server_says(sasl_reply(sent[0].0.xid, b"welcome"));
    assert_eq!(h.session.state(), SessionState::Connected);
}

#[test]
fn each_connection_gets_a_mechanism_made_for_its_host() {
    let hosts = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = hosts.clone();
    let mut h = Harness::new(SessionConfig {
        hosts: vec![
            crate::connect_string::HostAddr::new("zk1.example", 2181),
            crate::connect_string::HostAddr::new("::1", 2182),
        ],
        shuffle_hosts: false,
        sasl: Some(SaslConfig::custom("SCRIPTED", move |host: &str| {
            seen.lock().expect("not poisoned").push(host.to_owned());
            Ok(Box::new(Scripted))
        })),
        ..config()
    });
    for (session_id, expected) in [(0x55, "zk1.example"), (0x55, "::1")] {
        // Dial the next host when the backoff allows it.
        while h.session.poll_connect(h.now).is_none() {
            let at = h.session.poll_timeout().expect("a reconnect timer");
            h.advance(at - h.now);
        }
        h.establish(session_id, 30_000);
        assert_eq!(
            hosts
                .lock()
                .expect("not poisoned")
                .last()
                .map(String::as_str),
            Some(expected)
        );
        h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    }
    assert_eq!(hosts.lock().expect("not poisoned").len(), 2);
}

fn blocking_config(connect_timeout: Option<Duration>) -> SessionConfig {
    SessionConfig {
        sasl: Some(SaslConfig::custom("SCRIPTED", |_| Ok(Box::new(Scripted))).blocking()),
        connect_timeout,
        ..config()
    }
}

/// A blocking mechanism's steps are handed out as work (run here inline, as the driver runs
/// them on a thread), and the exchange goes on with their results.
#[test]
fn a_blocking_mechanism_runs_its_steps_as_handed_out_work() {
    let mut h = Harness::new(blocking_config(None));
    h.establish(0x51, 30_000);
    assert!(h.sent().is_empty(), "nothing until the first step is done");
    let work = h.session.poll_sasl_work().expect("the start, handed out");
    assert!(h.session.poll_sasl_work().is_none());
    h.session.handle_sasl_done(h.now, work.run());
    let sent = h.sent();
    assert_eq!(sasl_token(&sent[0]), &b"hello"[..]);
    h.server_says(sasl_reply(sent[0].0.xid, b"challenge"));
    assert!(h.sent().is_empty(), "the step is out");
    let work = h.session.poll_sasl_work().expect("the step, handed out");
    h.session.handle_sasl_done(h.now, work.run());
    let sent = h.sent();
    assert_eq!(sasl_token(&sent[0]), &b"answer"[..]);
    h.server_says(sasl_reply(sent[0].0.xid, b"welcome"));
    let work = h.session.poll_sasl_work().expect("the last step");
    h.session.handle_sasl_done(h.now, work.run());
    assert_eq!(h.session.state(), SessionState::Connected);
}

/// A step that never comes back (a library stuck on a KDC): the attempt fails after its budget
/// (`T/3` with one host), and `connect` gives up at its timeout naming the SASL step; the
/// late result is ignored.
#[test]
fn a_blocking_step_that_never_returns_fails_the_attempt_and_connect_names_it() {
    let mut h = Harness::new(blocking_config(Some(Duration::from_secs(5))));
    h.establish(0x51, 6_000);
    let stuck = h.session.poll_sasl_work().expect("the start");
    h.advance(Duration::from_millis(1_999));
    assert!(
        h.events()
            .iter()
            .all(|e| !matches!(e, SessionEvent::DropConnection(_)))
    );
    h.advance(Duration::from_millis(1));
    let events = h.events();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_))),
        "the attempt is given up after its budget: {events:?}"
    );
    // The late result of the stuck step changes nothing.
    h.session.handle_sasl_done(h.now, stuck.run());
    assert!(h.sent().is_empty());
    // Connect's own timeout (5 s from the first attempt) ends it, naming the step.
    h.advance(Duration::from_secs(3));
    let events = h.events();
    let gave_up = events.iter().find_map(|e| match e {
        SessionEvent::GaveUp(error) => Some(error.clone()),
        _ => None,
    });
    match gave_up {
        Some(Error::NoServerReachable { last_error, .. }) => {
            assert!(
                matches!(&last_error, crate::ConnectFailure::Sasl(text) if text.contains("SCRIPTED")),
                "{last_error:?}"
            );
        }
        other => panic!("expected a give-up naming the SASL step, got {other:?} in {events:?}"),
    }
    assert_eq!(h.session.state(), SessionState::Closed);
}
