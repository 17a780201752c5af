//! Hand-made scripts through the checks, and checks of the checker itself.

use super::*;

/// Bits of the first configuration byte.
const TIMEOUT_3S: u8 = 2;
/// A ConnectResponse's argument: a read-only server's answer.
const READ_ONLY_ANSWER: u8 = 2 << 3;
const READ_ONLY_OK: u8 = 4;
const CHROOT: u8 = 32;
const SMALL_FRAMES: u8 = 64;
/// Bits of the second one.
const TWO_HOSTS: u8 = 1;
const MAX_IN_FLIGHT_2: u8 = 1 << 2;
const MAX_IN_FLIGHT_1024: u8 = 3 << 2;

/// Submit flags.
const WATCH: u8 = 1;
const PATH_A: u8 = 1 << 1;
const PATH_AB: u8 = 2 << 1;
/// A deadline 50 ms ahead.
const DEADLINE_50MS: u8 = 8 | (2 << 4);

/// Templates.
const GET_DATA: u8 = 0;
const EXISTS: u8 = 1;
const GET_CHILDREN: u8 = 2;
const CREATE: u8 = 4;
const SET_DATA: u8 = 6;
const MULTI: u8 = 12;
const ADD_WATCH: u8 = 14;
const REMOVE_WATCHES: u8 = 15;
const WHO_AM_I: u8 = 18;
const INVALID: u8 = 19;

/// Notifications: event type (`EVENT_TYPES` index), path.
const CREATED: u8 = 0;
const DATA_CHANGED: u8 = 2;
const ON_A: u8 = 1 << 3;
const ON_AB: u8 = 2 << 3;

/// `ADVANCES_MS` indexes.
const ONE_SECOND: u8 = 5;
const TEN_SECONDS: u8 = 10;
const TEN_MINUTES: u8 = 15;

/// A script: configuration bytes, then actions.
fn script(config: [u8; 3], actions: &[&[u8]]) -> Vec<u8> {
    let mut bytes = config.to_vec();
    for action in actions {
        bytes.extend_from_slice(action);
    }
    bytes
}

/// Dial, connect, and accept a read/write session (timeout as asked, id 0x100 + 0).
const ESTABLISH: [&[u8]; 3] = [&[DIAL], &[CONNECTED], &[CONNECT_RESPONSE, 0, 0]];

fn establish_then(config: [u8; 3], actions: &[&[u8]]) -> Vec<u8> {
    let mut all: Vec<&[u8]> = ESTABLISH.to_vec();
    all.extend_from_slice(actions);
    script(config, &all)
}

fn happy_path() -> Vec<u8> {
    establish_then(
        [CHROOT, MAX_IN_FLIGHT_1024, 7],
        &[
            &[SUBMIT, GET_DATA, WATCH | PATH_A, 0],
            &[SUBMIT, CREATE, 0, 2],
            &[SUBMIT, MULTI, PATH_AB, 0],
            &[SUBMIT, WHO_AM_I, 0, 0],
            &[ADD_AUTH, 0],
            &[TRANSMIT, 15],
            &[AUTH_REPLY, 0],
            &[REPLY, 1],
            &[REPLY, 2],
            &[REPLY, 3],
            &[REPLY, 4],
            &[NOTIFY, DATA_CHANGED | ON_A],
            &[ADVANCE, TEN_SECONDS],
            &[TRANSMIT, 0],
            &[PING_REPLY],
            &[CLOSE],
            &[TRANSMIT, 0],
            &[REPLY, 0],
        ],
    )
}

fn reconnect_with_pending_requests() -> Vec<u8> {
    establish_then(
        [0, TWO_HOSTS | MAX_IN_FLIGHT_2, 3],
        &[
            &[SUBMIT, EXISTS, WATCH | PATH_A, 0],
            &[TRANSMIT, 0],
            &[ERROR_REPLY, 0], // NoNode: the exist watch is armed anyway
            &[SUBMIT, ADD_WATCH, PATH_AB, 1],
            &[SUBMIT, GET_DATA, 0, 0],
            &[SUBMIT, SET_DATA, PATH_A, 3],
            &[SUBMIT, GET_CHILDREN, WATCH, 0],
            &[TRANSMIT, 15],
            &[REPLY, 1],
            &[TRANSMIT, 15],
            &[DISCONNECT, 0],
            &[ADVANCE, ONE_SECOND],
            &[DIAL],
            &[CONNECTED],
            &[CONNECT_RESPONSE, 0, 0],
            &[TRANSMIT, 15],
            &[REPLY, 0], // SetWatches
            &[REPLY, 1],
            &[REPLY, 2],
            &[TRANSMIT, 15],
            &[REPLY, 3],
            &[NOTIFY, DATA_CHANGED | ON_AB], // the recursive watch
            &[NOTIFY, CREATED | ON_A],       // the exist watch
        ],
    )
}

fn close_during_disconnect() -> Vec<u8> {
    establish_then(
        [READ_ONLY_OK, 0, 9],
        &[
            &[SUBMIT, GET_DATA, WATCH | PATH_A, 0],
            &[TRANSMIT, 3],
            &[REPLY, 1],
            &[SUBMIT, GET_DATA, PATH_A | DEADLINE_50MS, 0],
            &[ADD_AUTH, 1],
            &[RECONNECT_TO, 0],
            &[CLOSE],
            &[SUBMIT, GET_DATA, 0, 0],
            &[CLOSE],
        ],
    )
}

/// A read-only session on one of two hosts searches for a read/write one: nothing is due at
/// once, the first probe finds none, the second finds the other host, and the session moves.
fn read_only_search() -> Vec<u8> {
    script(
        [READ_ONLY_OK, TWO_HOSTS, 3],
        &[
            &[DIAL],
            &[CONNECTED],
            &[CONNECT_RESPONSE, READ_ONLY_ANSWER, 0],
            &[PROBE, 0],
            &[ADVANCE, ONE_SECOND],
            &[PROBE, 1],
            &[ADVANCE, ONE_SECOND],
            &[PROBE, 0],
            &[DIAL],
            &[CONNECTED],
            &[CONNECT_RESPONSE, 0, 0],
            &[PROBE, 0],
            &[CLOSE],
        ],
    )
}

#[test]
fn a_read_only_session_probes_and_moves_to_the_read_write_server_it_finds() {
    let report = run(&read_only_search());
    assert_eq!(
        report.states,
        [
            SessionState::ConnectedReadOnly,
            SessionState::Disconnected,
            SessionState::Connected,
            SessionState::Closed
        ],
        "{report:?}"
    );
    assert_eq!(
        report.drops, 2,
        "the read-only connection, left, and the last one, closed: {report:?}"
    );
}

fn expiry() -> Vec<u8> {
    establish_then(
        [TIMEOUT_3S, 0, 1],
        &[
            &[SUBMIT, GET_CHILDREN, WATCH | PATH_A, 0],
            &[TRANSMIT, 0],
            &[REPLY, 1],
            &[SUBMIT, GET_DATA, 0, 0],
            &[ADVANCE, TEN_SECONDS],
            &[ADVANCE, TEN_SECONDS],
            &[DIAL],
            &[CONNECTED],
            &[ADVANCE, TEN_MINUTES],
        ],
    )
}

fn malformed_frames() -> Vec<u8> {
    establish_then(
        [SMALL_FRAMES, MAX_IN_FLIGHT_2, 5],
        &[
            &[SUBMIT, GET_DATA, PATH_A, 0],
            &[SUBMIT, SET_DATA, 0, 200], // 1,000 bytes: over the 512-byte limit
            &[SUBMIT, INVALID, 0, 0],
            &[SUBMIT, REMOVE_WATCHES, PATH_A, 2],
            &[TRANSMIT, 15],
            &[MALFORMED, 4, 1], // trailing bytes: that call fails, the connection stays
            &[MALFORMED, 5, 3, 1, 2, 3],
            &[MALFORMED, 0, 5, 1, 2, 3, 4, 5],
            &[CONNECTED],
            &[MALFORMED, 0, 3, 0, 0, 0], // a truncated ConnectResponse
            &[ADVANCE, ONE_SECOND],
            &[CONNECTED],
            &[CONNECT_RESPONSE, 0, 0],
            &[SUBMIT, GET_DATA, 0, 0],
            &[SUBMIT, EXISTS, 0, 0],
            &[TRANSMIT, 15],
            &[OVERSIZED, 1], // the reply to the oldest request is too large
            &[CONNECTED],
            &[CONNECT_RESPONSE, 0, 0],
            &[SUBMIT, GET_DATA, 0, 0],
            &[SUBMIT, EXISTS, 0, 0],
            &[TRANSMIT, 15],
            &[MALFORMED, 3], // the second request answered first
        ],
    )
}

/// An auth packet answered by a frame with xid -4 and a byte too many.
fn undecodable_auth_reply() -> Vec<u8> {
    establish_then(
        [0, MAX_IN_FLIGHT_1024, 0],
        &[&[ADD_AUTH, 0], &[TRANSMIT, 0], &[MALFORMED, 17, 4]],
    )
}

/// Two closes while connected: the second while closeSession is queued.
fn second_close() -> Vec<u8> {
    establish_then([0, MAX_IN_FLIGHT_1024, 0], &[&[CLOSE], &[CLOSE]])
}

/// A close whose closeSession the server refuses with -124 (authentication required).
fn close_refused_for_want_of_sasl() -> Vec<u8> {
    const REQUIRE_SASL: u8 = 16;
    establish_then(
        [0, MAX_IN_FLIGHT_1024, 0],
        &[&[CLOSE], &[TRANSMIT, 0], &[ERROR_REPLY, REQUIRE_SASL]],
    )
}

fn run(data: &[u8]) -> Report {
    run_script(data)
}

#[test]
fn happy_path_resolves_everything_with_the_right_replies() {
    let report = run(&happy_path());
    // getData, create, multi, whoAmI, auth and close, all answered by the server, and
    // the script's final close.
    assert_eq!(report.submitted, 4);
    assert_eq!(report.ok_replies, 7, "{report:?}");
    assert_eq!(report.error_replies, 0, "{report:?}");
    assert_eq!(report.watch_events, 1);
    assert_eq!(
        report.states,
        [SessionState::Connected, SessionState::Closed]
    );
}

#[test]
fn requests_survive_a_reconnect_and_watches_are_rearmed() {
    let report = run(&reconnect_with_pending_requests());
    assert!(report.errors.contains(&Error::ConnectionLoss), "{report:?}");
    assert!(report.errors.contains(&Error::NoNode), "{report:?}");
    // Two notifications, and the persistent watch's markers: connection lost, then ready.
    assert_eq!(report.watch_events, 4, "{report:?}");
    assert!(report.watches_lost >= 1, "{report:?}");
    assert_eq!(
        report.states,
        [
            SessionState::Connected,
            SessionState::Disconnected,
            SessionState::Connected,
            SessionState::Closed
        ]
    );
}

#[test]
fn close_during_a_disconnect_resolves_everything() {
    let report = run(&close_during_disconnect());
    assert_eq!(report.drops, 1, "{report:?}");
    assert!(report.errors.contains(&Error::ConnectionLoss), "{report:?}");
    assert!(report.errors.contains(&Error::Closed), "{report:?}");
    assert_eq!(report.watches_lost, 1);
    assert_eq!(report.states.last(), Some(&SessionState::Closed));
}

#[test]
fn a_session_cut_off_for_its_timeout_expires() {
    let report = run(&expiry());
    assert!(report.states.contains(&SessionState::Expired), "{report:?}");
    assert!(report.errors.contains(&Error::SessionExpired), "{report:?}");
    assert_eq!(report.watches_lost, 1);
}

/// Expiry by the server on the next handshake, then (renewing) a new session that serves a
/// call; the seed's low bit chooses renewal.
fn expiry_then_work(seed: u8) -> Vec<u8> {
    establish_then(
        [TIMEOUT_3S, 0, seed],
        &[
            &[SUBMIT, GET_CHILDREN, WATCH | PATH_A, 0],
            &[TRANSMIT, 0],
            &[REPLY, 1],
            &[DISCONNECT, 0],
            &[ADVANCE, ONE_SECOND],
            &[DIAL],
            &[CONNECTED],
            // time_out 0: the server says the session expired.
            &[CONNECT_RESPONSE, 5, 1],
            &[SUBMIT, GET_DATA, PATH_A, 0],
            &[DIAL],
            &[CONNECTED],
            &[CONNECT_RESPONSE, 0, 1],
            &[TRANSMIT, 0],
            &[REPLY, 2],
        ],
    )
}

#[test]
fn a_renewing_session_goes_on_after_an_expiry_and_serves_calls() {
    let report = run(&expiry_then_work(1));
    assert_eq!(report.renewals, 1, "{report:?}");
    let after = report
        .states
        .iter()
        .skip_while(|s| **s != SessionState::Expired)
        .copied()
        .collect::<Vec<_>>();
    // (The run ends with a close.)
    assert_eq!(
        after,
        [
            SessionState::Expired,
            SessionState::Connecting,
            SessionState::Connected,
            SessionState::Closed
        ],
        "{report:?}"
    );
    assert_eq!(report.watches_lost, 1);
    assert!(report.ok_replies >= 2, "{report:?}");
}

#[test]
fn without_renewal_the_same_script_ends_at_the_expiry() {
    let report = run(&expiry_then_work(0));
    assert_eq!(report.renewals, 0);
    assert_eq!(
        report.states.last(),
        Some(&SessionState::Expired),
        "{report:?}"
    );
    assert_eq!(report.watches_lost, 1);
}

#[test]
fn malformed_frames_fail_calls_or_drop_connections() {
    let report = run(&malformed_frames());
    assert!(
        report
            .errors
            .iter()
            .any(|error| matches!(error, Error::Protocol(_))),
        "{report:?}"
    );
    assert!(report.drops >= 2, "{report:?}");
    assert!(
        report
            .errors
            .iter()
            .any(|error| matches!(error, Error::ReplyTooLarge { .. })),
        "{report:?}"
    );
}

#[test]
fn arbitrary_bytes_run_clean() {
    // Deterministic pseudo-random scripts, a cheap stand-in for the fuzzer.
    let mut rng = fastrand::Rng::with_seed(0x5e55_1017);
    for _ in 0..300 {
        let len = rng.usize(0..400);
        let data: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        session_script(&data);
    }
}

/// Regression (found by this target): an auth reply that does not decode used to lose
/// its add_auth caller; it now fails with the dropped connection.
#[test]
fn an_undecodable_auth_reply_still_answers_its_caller() {
    run(&undecodable_auth_reply());
}

/// Regression (found by this target): a second close used to be answered at once, in a
/// live state; it now waits for the session to be closed.
#[test]
fn a_second_close_is_answered_once_the_session_is_closed() {
    run(&second_close());
}

/// Regression (found by this target): a closeSession refused with -124 used to answer its
/// close with that error (and then again with the success every closer gets); the session
/// ends as AuthFailed, and the close is answered once, with success.
#[test]
fn a_close_refused_for_want_of_sasl_is_answered_once_with_success() {
    let report = run(&close_refused_for_want_of_sasl());
    assert_eq!(
        report.states,
        [SessionState::Connected, SessionState::AuthFailed]
    );
}

#[test]
fn a_well_formed_auth_reply_answers_its_caller() {
    let script = establish_then(
        [0, MAX_IN_FLIGHT_1024, 0],
        &[&[ADD_AUTH, 0], &[TRANSMIT, 0], &[AUTH_REPLY, 0]],
    );
    assert_eq!(run(&script).ok_replies, 2);
}

fn checker_with(kind: CallerKind) -> (Checker, RequestId) {
    let mut checker = Checker::new(Instant::now(), false);
    let id = RequestId(1);
    checker.handed_out(id, kind, None);
    (checker, id)
}

fn get_data_caller() -> CallerKind {
    CallerKind::Op {
        op_code: OpCode::GET_DATA,
        watch: None,
        removes: None,
    }
}

#[test]
#[should_panic(expected = "resolved twice")]
fn the_checker_catches_a_double_reply() {
    let (mut checker, id) = checker_with(get_data_caller());
    let mut in_flight = BTreeSet::new();
    in_flight.insert(id);
    checker.begin(Instant::now(), in_flight);
    let lost = SessionEvent::Reply {
        id,
        result: Err(Error::ConnectionLoss),
        watch_armed: false,
    };
    checker.observe(&lost);
    checker.observe(&lost);
}

#[test]
#[should_panic(expected = "not its own")]
fn the_checker_catches_a_reply_to_the_wrong_caller() {
    let (mut checker, id) = checker_with(get_data_caller());
    checker.handed_out(RequestId(2), get_data_caller(), None);
    checker.step.answered = Some(RequestId(2));
    checker.observe(&SessionEvent::Reply {
        id,
        result: Ok(Response::GetData(GetDataResponse::default())),
        watch_armed: false,
    });
}

#[test]
#[should_panic(expected = "response of another op")]
fn the_checker_catches_a_response_of_another_op() {
    let (mut checker, id) = checker_with(get_data_caller());
    checker.step.answered = Some(id);
    checker.observe(&SessionEvent::Reply {
        id,
        result: Ok(Response::Exists(ExistsResponse::default())),
        watch_armed: false,
    });
}

#[test]
#[should_panic(expected = "whose watch is not live")]
fn the_checker_catches_a_watch_event_for_an_id_without_a_watch() {
    let (mut checker, id) = checker_with(get_data_caller());
    checker.observe(&SessionEvent::Watch {
        id,
        event: WatchedEvent {
            event_type: EventType::NODE_DELETED,
            state: KeeperState::SYNC_CONNECTED,
            path: "/a".into(),
        },
        last: true,
    });
}

#[test]
#[should_panic(expected = "state transition")]
fn the_checker_catches_leaving_a_terminal_state() {
    let mut checker = Checker::new(Instant::now(), false);
    checker.observe(&SessionEvent::State(SessionState::Closed));
    checker.observe(&SessionEvent::State(SessionState::Connected));
}

#[test]
#[should_panic(expected = "never handed out")]
fn the_checker_catches_a_reply_to_an_unknown_id() {
    let mut checker = Checker::new(Instant::now(), false);
    checker.observe(&SessionEvent::Reply {
        id: RequestId(9),
        result: Err(Error::ConnectionLoss),
        watch_armed: false,
    });
}

/// The hand-made scripts, by name: the seed corpus of the fuzz target.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("happy_path", happy_path()),
        (
            "reconnect_with_pending_requests",
            reconnect_with_pending_requests(),
        ),
        ("close_during_disconnect", close_during_disconnect()),
        ("expiry", expiry()),
        ("malformed_frames", malformed_frames()),
        ("undecodable_auth_reply", undecodable_auth_reply()),
        ("second_close", second_close()),
        ("read_only_search", read_only_search()),
    ]
}

/// The hand-made scripts are in the checked-in corpus as `seed-<name>`, so the fuzzer starts
/// from them and the corpus replay runs them on stable. With `WRITE_SEEDS=1` in the
/// environment this test (re)writes them instead:
/// `WRITE_SEEDS=1 cargo test -p zk-session --lib fuzzing::tests::the_seeds_are_in_the_corpus`.
#[test]
fn the_seeds_are_in_the_corpus() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/session_script");
    let write = std::env::var_os("WRITE_SEEDS").is_some_and(|v| v == "1");
    for (name, data) in seeds() {
        let path = dir.join(format!("seed-{name}"));
        if write {
            std::fs::create_dir_all(&dir).expect("the corpus directory");
            std::fs::write(&path, &data).expect("a seed file");
        }
        let stored = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (WRITE_SEEDS=1 writes it)", path.display()));
        assert_eq!(
            stored,
            data,
            "{} is stale (WRITE_SEEDS=1 rewrites it)",
            path.display()
        );
    }
}
