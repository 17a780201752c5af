//! Failed connection attempts: permanent failures (untrusted, TLS alerts) against transient
//! ones (refused), when the session gives up and with which error.

use super::*;

fn hosts(n: u16) -> Vec<crate::connect_string::HostAddr> {
    (1..=n)
        .map(|p| crate::connect_string::HostAddr::new("h", p))
        .collect()
}

fn untrusted() -> ConnectFailure {
    ConnectFailure::Tls(crate::TlsFailure::UntrustedCertificate {
        detail: "UnknownIssuer".into(),
    })
}

fn refused() -> ConnectFailure {
    ConnectFailure::Io {
        kind: std::io::ErrorKind::ConnectionRefused,
        message: "refused".into(),
    }
}

/// Dials when the backoff allows and fails the attempt with `failure`; returns the host.
fn fail_next_attempt(h: &mut Harness, failure: ConnectFailure) -> usize {
    dial_when_allowed(h);
    let host = h.session.current_host().expect("dialing a host");
    h.session.handle_connect_failed(h.now, failure);
    host
}

/// A session of `config`, established (a 30 s session) and then disconnected: the harness,
/// and when the connection was lost.
fn lost_after_establishing(config: SessionConfig) -> (Harness, Instant) {
    let mut h = Harness::new(config);
    dial_when_allowed(&mut h);
    h.establish(9, 30_000);
    h.events();
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    let lost = h.now;
    (h, lost)
}

fn gave_up(events: &[SessionEvent]) -> Option<&Error> {
    events.iter().find_map(|e| match e {
        SessionEvent::GaveUp(error) => Some(error),
        _ => None,
    })
}

#[test]
fn a_permanent_failure_on_every_host_gives_up_at_once_with_it() {
    let mut h = Harness::new(SessionConfig {
        hosts: hosts(3),
        shuffle_hosts: false,
        rng_seed: Some(3),
        ..config()
    });
    let start = h.now;
    let mut dialed = Vec::new();
    for _ in 0..2 {
        dialed.push(fail_next_attempt(&mut h, untrusted()));
        assert_eq!(gave_up(&h.events()), None, "a host is left to try");
    }
    dialed.push(fail_next_attempt(&mut h, untrusted()));
    assert_eq!(dialed, [0, 1, 2], "each host once");
    let events = h.events();
    let error = gave_up(&events).expect("gave up after one attempt per host");
    assert_eq!(
        *error,
        Error::NoServerReachable {
            attempts: 3,
            hosts: vec!["h:1".into(), "h:2".into(), "h:3".into()],
            last_error: untrusted(),
        }
    );
    assert!(error.tls_failure().is_some());
    assert_eq!(h.session.state(), SessionState::Closed);
    // Long before the connect timeout (30 s): only the two backoffs (at most 40 + 80 ms).
    assert!(
        h.now - start <= Duration::from_millis(120),
        "{:?}",
        h.now - start
    );
    h.advance(Duration::from_secs(60));
    assert_eq!(h.session.poll_connect(h.now), None, "no more attempts");
}

#[test]
fn a_transient_failure_starts_the_count_of_permanent_ones_again() {
    let mut h = Harness::new(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(4),
        ..config()
    });
    fail_next_attempt(&mut h, untrusted());
    // The second host is down for now (refused): not a verdict on the settings.
    fail_next_attempt(&mut h, refused());
    fail_next_attempt(&mut h, untrusted());
    assert_eq!(
        gave_up(&h.events()),
        None,
        "one host failed for good in a row"
    );
    assert!(h.session.wants_connection() || h.session.poll_timeout().is_some());
    fail_next_attempt(&mut h, untrusted());
    let events = h.events();
    assert!(
        matches!(
            gave_up(&events),
            Some(Error::NoServerReachable { attempts: 4, last_error, .. }) if *last_error == untrusted()
        ),
        "{events:?}"
    );
}

#[test]
fn a_tls_alert_during_the_session_handshake_is_the_attempts_permanent_failure() {
    // TLS 1.3: the server judges the client certificate after the client's handshake is
    // done, so its alert arrives while the ConnectRequest waits for an answer.
    let mut h = Harness::new(config());
    let required = ConnectFailure::Tls(crate::TlsFailure::ClientCertificateRequired {
        alert: "CertificateRequired".into(),
    });
    dial_when_allowed(&mut h);
    h.connect();
    h.session.handle_connection_failed(h.now, required.clone());
    let events = h.events();
    assert!(
        matches!(
            gave_up(&events),
            Some(Error::NoServerReachable { attempts: 1, last_error, .. }) if *last_error == required
        ),
        "{events:?}"
    );
    assert_eq!(h.session.state(), SessionState::Closed);
}

#[test]
fn once_a_session_exists_permanent_failures_are_retried_until_it_expires_and_then_named() {
    let (mut h, lost) = lost_after_establishing(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(5),
        ..config()
    });
    // The servers came back with a certificate the client does not trust (a rotation gone
    // wrong, fixed by the operator while the session is still alive): keep trying, with the
    // backoff, as for any failure.
    let mut attempts = 0u32;
    while h.session.state() == SessionState::Disconnected {
        if h.session.poll_connect(h.now).is_some() {
            h.session.handle_connect_failed(h.now, untrusted());
            attempts += 1;
            assert!(
                gave_up(&h.events()).is_none(),
                "no giving up with a session"
            );
        }
        let Some(at) = h.session.poll_timeout() else {
            break;
        };
        h.advance(at.saturating_duration_since(h.now));
    }
    // Ended at the local expiry (T after the last answered send), not before, and with the
    // cause: every server refused the client's TLS, which an expiry would hide.
    assert_eq!(h.session.state(), SessionState::Closed);
    assert!(
        h.now - lost >= Duration::from_secs(29),
        "{:?}",
        h.now - lost
    );
    let events = h.events();
    match gave_up(&events) {
        Some(
            error @ Error::NoServerReachable {
                attempts: counted,
                hosts,
                last_error,
            },
        ) => {
            assert_eq!(*last_error, untrusted());
            assert_eq!(
                *counted, attempts,
                "the attempts since the connection was lost"
            );
            assert_eq!(*hosts, vec!["h:1".to_owned(), "h:2".to_owned()]);
            assert!(error.is_terminal());
            assert!(error.tls_failure().is_some());
        }
        other => panic!("expected NoServerReachable naming the TLS failure: {other:?}"),
    }
    // The backoff held the attempts to a handful per second (capped at 1 s, 500 ms at least).
    assert!((20..=80).contains(&attempts), "{attempts} attempts in 30 s");
}

#[test]
fn an_attempt_cut_short_by_the_expiry_does_not_hide_that_every_host_refused_for_good() {
    // Under load, the last attempt may begin just before the local expiry: it is counted,
    // but the session still ends naming the refusal, not a connect that timed out after 2 ms.
    let (mut h, lost) = lost_after_establishing(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(5),
        ..config()
    });
    let mut attempts = 0u32;
    let mut in_flight = false;
    while h.session.state() == SessionState::Disconnected {
        if !in_flight && h.session.poll_connect(h.now).is_some() {
            attempts += 1;
            // The session expires 30 s after the connection was lost; an attempt's budget is
            // longer than what is left after 28 s.
            if h.now - lost > Duration::from_secs(28) {
                // This one is still dialing when the session's time runs out.
                in_flight = true;
            } else {
                h.session.handle_connect_failed(h.now, untrusted());
            }
        }
        let Some(at) = h.session.poll_timeout() else {
            break;
        };
        h.advance(at.saturating_duration_since(h.now));
    }
    assert!(in_flight, "an attempt was under way at the expiry");
    let events = h.events();
    match gave_up(&events) {
        Some(Error::NoServerReachable {
            attempts: counted,
            last_error,
            ..
        }) => {
            assert_eq!(*last_error, untrusted());
            assert_eq!(*counted, attempts, "the attempt cut short counts");
        }
        other => panic!("expected NoServerReachable naming the TLS failure: {other:?}"),
    }
}

#[test]
fn attempts_that_time_out_after_a_refusal_for_good_do_not_hide_it() {
    // Under load, a server that refuses the client for good may also be too slow to answer
    // within an attempt's budget: a timed-out attempt says nothing of its verdict, so the
    // session still ends naming the refusal, not expired as if the server could be fixed.
    let (mut h, lost) = lost_after_establishing(SessionConfig {
        hosts: hosts(1),
        rng_seed: Some(7),
        ..config()
    });
    let (mut refused, mut unanswered) = (0u32, 0u32);
    while h.session.state() == SessionState::Disconnected {
        if h.session.poll_connect(h.now).is_some() {
            // Refused for the first 10 s; after that every attempt is left to time out.
            if h.now - lost < Duration::from_secs(10) {
                h.session.handle_connect_failed(h.now, untrusted());
                refused += 1;
            } else {
                unanswered += 1;
            }
        }
        let Some(at) = h.session.poll_timeout() else {
            break;
        };
        h.advance(at.saturating_duration_since(h.now));
    }
    // Every unanswered attempt but the last (which the end may have cut short) timed out.
    let timed_out = unanswered.saturating_sub(1);
    assert!(
        refused > 0 && timed_out > 0,
        "{refused} refused, {timed_out} timed out"
    );
    assert_eq!(h.session.state(), SessionState::Closed);
    let events = h.events();
    match gave_up(&events) {
        Some(Error::NoServerReachable { last_error, .. }) => {
            assert_eq!(*last_error, untrusted());
        }
        other => panic!("expected NoServerReachable naming the TLS failure: {other:?}"),
    }
}

#[test]
fn a_session_whose_reconnections_failed_transiently_on_some_host_just_expires() {
    let (mut h, _) = lost_after_establishing(SessionConfig {
        hosts: hosts(2),
        shuffle_hosts: false,
        rng_seed: Some(6),
        ..config()
    });
    // One server refuses the certificate, the other is down: the TLS failure is not the
    // whole story, so the expiry is the news.
    while !h.session.state().is_terminal() {
        match h.session.poll_connect(h.now) {
            Some((0, _)) => h.session.handle_connect_failed(h.now, untrusted()),
            Some(_) => h.session.handle_connect_failed(h.now, refused()),
            None => {}
        }
        let Some(at) = h.session.poll_timeout() else {
            break;
        };
        h.advance(at.saturating_duration_since(h.now));
    }
    assert_eq!(h.session.state(), SessionState::Expired);
    assert_eq!(gave_up(&h.events()), None);
}
