//! The search for a read/write server while read-only, scripted on a virtual clock: which host
//! is probed when, what each outcome does, and when the search ends.

use std::time::Duration;

use super::hosts_tests::host;
use super::tests::{Harness, config, frame, ok};
use super::*;

/// A read-only session on host 1 of hosts 1, 2, 3, 4 (in that order), ready at `h.now`.
fn read_only_on_first_of_four() -> Harness {
    let mut h = Harness::new(SessionConfig {
        hosts: vec![host(1), host(2), host(3), host(4)],
        shuffle_hosts: false,
        read_only: true,
        rng_seed: Some(7),
        ..config()
    });
    assert_eq!(h.session.poll_connect(h.now), Some((0, host(1))));
    h.establish_on(9, 30_000, true);
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    h.events();
    h
}

/// Runs the clock until the next probe is handed out; returns it and the time waited.
fn next_probe(h: &mut Harness) -> (Probe, Duration) {
    let start = h.now;
    for _ in 0..100 {
        if let Some(probe) = h.session.poll_probe(h.now) {
            return (probe, h.now - start);
        }
        let at = h.session.poll_timeout().expect("a timer while searching");
        h.now = h.now.max(at);
        h.session.handle_timeout(h.now);
        // The connection stays alive meanwhile: the server answers its pings.
        for (header, _) in h.sent() {
            if header.xid == jute::codes::xid::PING {
                h.server_says(frame(ok(header.xid, 0), ()));
            }
        }
    }
    panic!("no probe handed out");
}

#[test]
fn probes_go_round_robin_from_the_next_host_with_the_wait_doubling_up_to_a_minute() {
    let mut h = read_only_on_first_of_four();
    let mut seen = Vec::new();
    for _ in 0..13 {
        let (probe, waited) = next_probe(&mut h);
        assert!(h.session.is_probing(probe.id));
        seen.push((probe.host.port, waited.as_millis()));
        // The answer takes 50 ms; the next wait counts from its end.
        h.now += Duration::from_millis(50);
        h.session
            .handle_probe_done(h.now, probe.id, ProbeOutcome::NotReadWrite);
        assert!(!h.session.is_probing(probe.id));
    }
    let first = seen[0].1;
    assert_eq!(
        first, 100,
        "the first probe 100 ms after the session was ready"
    );
    assert_eq!(
        seen,
        [
            (2, 100),
            (3, 200),
            (4, 400),
            (2, 800),
            (3, 1600),
            (4, 3200),
            (2, 6400),
            (3, 12800),
            (4, 25600),
            (2, 51200),
            (3, 60000),
            (4, 60000),
            (2, 60000)
        ]
    );
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
}

#[test]
fn a_read_write_answer_leaves_the_read_only_server_for_that_host() {
    let mut h = read_only_on_first_of_four();
    let (probe, _) = next_probe(&mut h);
    h.session
        .handle_probe_done(h.now, probe.id, ProbeOutcome::Failed("refused".into()));
    let (probe, _) = next_probe(&mut h);
    assert_eq!(probe.host, host(3));
    h.session
        .handle_probe_done(h.now, probe.id, ProbeOutcome::ReadWrite);
    assert!(
        h.events()
            .iter()
            .any(|e| matches!(e, SessionEvent::DropConnection(_))),
        "the read-only connection is dropped"
    );
    assert_eq!(
        h.session.poll_connect(h.now),
        Some((2, host(3))),
        "the read/write host is dialed next, at once"
    );
    assert_eq!(
        h.session.poll_probe(h.now),
        None,
        "no search without a connection"
    );
}

#[test]
fn a_probe_without_an_answer_fails_at_its_deadline_and_its_late_answer_is_ignored() {
    let mut h = read_only_on_first_of_four();
    let (probe, _) = next_probe(&mut h);
    let deadline = h.session.poll_timeout().expect("the probe's deadline");
    assert!(deadline <= h.now + PROBE_TIMEOUT);
    h.advance(PROBE_TIMEOUT);
    assert!(
        !h.session.is_probing(probe.id),
        "given up: the driver drops it"
    );
    // Its answer after the deadline changes nothing.
    h.session
        .handle_probe_done(h.now, probe.id, ProbeOutcome::ReadWrite);
    assert_eq!(h.session.state(), SessionState::ConnectedReadOnly);
    assert!(h.events().is_empty());
    let (next, waited) = next_probe(&mut h);
    assert_eq!((next.host, waited), (host(3), Duration::from_millis(200)));
}

#[test]
fn the_search_ends_with_the_read_only_connection_and_starts_again_on_the_next() {
    let mut h = read_only_on_first_of_four();
    let (probe, _) = next_probe(&mut h);
    h.session.handle_disconnected(h.now, Error::ConnectionLoss);
    assert!(!h.session.is_probing(probe.id));
    assert_eq!(h.session.poll_probe(h.now), None);
    h.advance(Duration::from_secs(5));
    // The next read-only connection, to host 2, starts the schedule again from 100 ms and
    // probes from the host after it.
    let (index, to) = h.session.poll_connect(h.now).expect("a reconnection");
    assert_eq!(to, host(u16::try_from(index + 1).expect("small")));
    h.establish_on(9, 30_000, true);
    let (probe, waited) = next_probe(&mut h);
    assert_eq!(waited, PROBE_MIN_INTERVAL);
    assert_ne!(probe.host, to, "never the current host");
}

#[test]
fn a_closing_session_does_not_search() {
    let mut h = read_only_on_first_of_four();
    let (probe, _) = next_probe(&mut h);
    h.session.close(h.now);
    assert!(!h.session.is_probing(probe.id));
    h.advance(Duration::from_secs(1));
    assert_eq!(h.session.poll_probe(h.now), None);
}

#[test]
fn a_single_host_has_nothing_to_probe() {
    let mut h = Harness::new(SessionConfig {
        read_only: true,
        ..config()
    });
    assert!(h.session.poll_connect(h.now).is_some());
    h.establish_on(9, 30_000, true);
    h.advance(Duration::from_secs(10));
    assert_eq!(h.session.poll_probe(h.now), None);
}
