//! An ensemble, by hand: followers forward writes to the leader and `sync` makes a read see
//! them.

use jute::{CreateMode, CreateRequest, OpCode, SyncRequest};
use zk_testkit::raw::{RawSession, b, handshake, s, world_acl};
use zk_testkit::{Ensemble, started};

#[test]
fn an_ensemble_forwards_writes_and_syncs_reads() {
    let ensemble = started(Ensemble::start(3));
    let leader = ensemble.wait_for_leader().unwrap();
    let followers: Vec<usize> = (0..3).filter(|&i| i != leader).collect();

    // A write through a follower is forwarded to the leader and committed by the quorum.
    let mut writer = RawSession::connect(ensemble.server(followers[0]).addr());
    let (zxid, _) = writer.ok(
        OpCode::CREATE,
        CreateRequest {
            path: s("/q"),
            data: b(b"quorum"),
            acl: world_acl(),
            flags: CreateMode::PERSISTENT,
        },
    );
    // RawSession ids carry the id of the server that created them in the top byte.
    let creator = ensemble.server(followers[0]).id();
    assert_eq!(
        (writer.session_id >> 56) as u32,
        creator,
        "{:#x}",
        writer.session_id
    );

    for &i in &[leader, followers[1]] {
        let mut reader = RawSession::connect(ensemble.server(i).addr());
        reader.ok(OpCode::SYNC, SyncRequest { path: s("/q") });
        let (data, stat) = reader.get_data("/q", false);
        assert_eq!(data, b(b"quorum"));
        assert_eq!(stat.czxid, zxid);
        assert!(reader.last_zxid >= zxid);
    }

    // The session survives moving to another server.
    let (stream, response) = handshake(ensemble.server(leader).addr(), &writer.resume_request());
    let response = response.expect("resumed on the leader");
    assert_eq!(response.session_id, writer.session_id);
    let mut moved = RawSession::from_response(stream, response);
    moved.create("/q/eph", b"", CreateMode::EPHEMERAL);
    moved.close();
}
