//! Sessions, by hand: resumed on a new connection, ended with closeSession, and an expired
//! session that cannot be resumed.

use std::net::Shutdown;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jute::{CreateMode, ErrorCode, GetEphemeralsRequest, OpCode, Response};
use zk_testkit::raw::{RawSession, closed_by_server, handshake, s};
use zk_testkit::{ZkServer, started};

#[test]
fn sessions_resume_on_a_new_connection_and_end_with_close() {
    let server = started(ZkServer::start());
    let mut zk = RawSession::connect(server.addr());
    zk.create("/eph", b"", CreateMode::EPHEMERAL);
    assert_eq!(
        zk.exists("/eph", false).unwrap().ephemeral_owner,
        zk.session_id
    );
    let (_, ephemerals) = zk.ok(
        OpCode::GET_EPHEMERALS,
        GetEphemeralsRequest {
            prefix_path: s("/"),
        },
    );
    assert!(
        matches!(&ephemerals, Response::GetEphemerals(r) if r.ephemerals.as_ref().is_some_and(|e| *e == ["/eph"])),
        "{ephemerals:?}"
    );

    // Resume on a second connection; the server closes the first.
    let (stream, response) = handshake(server.addr(), &zk.resume_request());
    let response = response.expect("resumed");
    assert_eq!(response.session_id, zk.session_id);
    assert_eq!(response.time_out, zk.time_out);
    assert_eq!(response.passwd.as_ref(), Some(&zk.passwd));
    assert!(
        closed_by_server(&mut zk.stream),
        "the old connection is closed"
    );
    let mut resumed = RawSession::from_response(stream, response);
    assert_eq!(
        resumed.exists("/eph", false).unwrap().ephemeral_owner,
        zk.session_id
    );

    // A wrong password gets a ConnectResponse with timeout 0, then the connection closes.
    // The server closes the session's current connection before it checks the password, so
    // the attempt also disconnects `resumed` (the session itself lives on).
    let mut wrong = zk.resume_request();
    wrong.passwd = Some(Bytes::from_static(&[7; 16]));
    let (mut stream, response) = handshake(server.addr(), &wrong);
    let response = response.expect("an answer");
    assert_eq!(
        (response.time_out, response.session_id),
        (0, 0),
        "{response:?}"
    );
    assert!(closed_by_server(&mut stream));
    assert!(closed_by_server(&mut resumed.stream));

    // A client that has seen a later zxid than the server is refused without an answer.
    let mut ahead = zk.resume_request();
    ahead.last_zxid_seen = resumed.last_zxid + 1_000_000;
    let (_, response) = handshake(server.addr(), &ahead);
    assert!(response.is_err(), "{response:?}");

    // The right password still resumes the session.
    let (stream, response) = handshake(server.addr(), &zk.resume_request());
    let response = response.expect("resumed again");
    assert_eq!(response.session_id, zk.session_id);
    let resumed = RawSession::from_response(stream, response);

    // closeSession deletes the session's ephemeral nodes.
    let mut other = RawSession::connect(server.addr());
    resumed.close();
    assert_eq!(other.exists("/eph", false), Err(ErrorCode::NO_NODE));
}

#[test]
fn an_expired_session_cannot_be_resumed() {
    let server = started(
        ZkServer::builder()
            .tick_time(Duration::from_millis(200))
            .start(),
    );
    let mut zk = RawSession::connect_with_timeout(server.addr(), 100);
    assert_eq!(zk.time_out, 400, "raised to the minimum of 2 ticks");
    zk.create("/eph", b"", CreateMode::EPHEMERAL);
    let resume = zk.resume_request();
    zk.stream.shutdown(Shutdown::Both).unwrap();
    drop(zk);

    let mut observer = RawSession::connect(server.addr());
    let deadline = Instant::now() + Duration::from_secs(20);
    while observer.exists("/eph", false).is_ok() {
        assert!(Instant::now() < deadline, "the session did not expire");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (mut stream, response) = handshake(server.addr(), &resume);
    let response = response.expect("an answer");
    assert_eq!(
        response.time_out, 0,
        "timeout 0 means expired: {response:?}"
    );
    assert!(closed_by_server(&mut stream));
}
