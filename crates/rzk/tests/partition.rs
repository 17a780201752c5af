//! `rzk lock` behind a follower cut off from its leader, on a real partitioned ensemble
//! (`zk_testkit::partition`; ZooKeeper 3.8, `tickTime` 2000, `syncLimit` 5): the first
//! command is stopped before the second one starts, with the leader on each server in turn.
//!
//! The holder's rzk runs in a client namespace and talks to one follower only; the contender's
//! rzk runs in another and talks to the leader and the other follower. The follower is then cut
//! from the other two servers (not from its client): it goes on answering pings for 10 s while
//! the leader expires the holder's 4 s session and grants the lock to the contender. The
//! session's quorum check, which the lock holds, makes the holder's rzk leave that server and
//! stop its command first. Both commands append to one log, whose order is the order of
//! events. Skips (one line) where the machine does not allow network namespaces.

mod support;

use std::process::Stdio;
use std::time::Duration;

use support::{RZK, append, finish, lines, scratch, until_terminated, wait_lines};
use zk_proto::Client;
use zk_testkit::partition::{PartitionBed, random_pause};
use zk_testkit::started;

const LIMIT: Duration = Duration::from_secs(30);

/// `rzk --server <servers> lock --session-timeout 4s <path> -- sh -c <script>`, started inside
/// `ns`.
fn rzk_lock(
    ns: &zk_testkit::partition::ClientNamespace,
    servers: &str,
    path: &str,
    script: &str,
) -> tokio::process::Child {
    let mut command = ns.command(RZK);
    command
        .args(["--server", servers, "lock", "--session-timeout", "4s", path])
        .args(["--", "sh", "-c", script])
        .env_remove("ZOOKEEPER")
        .env_remove("RZK_AUTH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    command.spawn().expect("start rzk")
}

#[test]
fn rzk_lock_behind_a_cut_off_follower_stops_its_command_before_the_next_starts() {
    let Some(bed) = started(PartitionBed::start(3)) else {
        return;
    };
    let holder_ns = bed.client_namespace("holder").expect("namespace");
    let contender_ns = bed.client_namespace("contender").expect("namespace");
    let rt = contender_ns.runtime().expect("runtime");
    let first = bed.wait_for_quorum().expect("a quorum");
    for leader in (0..3).map(|k| (first + k) % 3) {
        let led = bed.make_leader(leader).expect("move the leadership");
        eprintln!("round: server {leader} leads (leaders on the way: {led:?})");
        let (follower, other) = ((leader + 1) % 3, (leader + 2) % 3);
        let path = format!("/l{leader}");
        let log = scratch(&format!("partition-{leader}")).join("log");
        let majority = bed.connect_string(&[leader, other]);
        let observer: Client = rt.block_on(async {
            tokio::time::timeout(LIMIT, Client::builder().connect(&majority))
                .await
                .expect("connect in time")
                .expect("connect")
        });
        rt.block_on(async {
            let holder = rzk_lock(
                &holder_ns,
                &bed.connect_string(&[follower]),
                &path,
                &until_terminated(&log, "1 start", "1 stopped"),
            );
            wait_lines(&log, LIMIT, "the first command runs", |l| l.len() == 1).await;
            let contender = rzk_lock(&contender_ns, &majority, &path, &append(&log, "2 start"));
            zk_testkit::client::wait_children(&observer, &path, LIMIT, "two in line", |c| {
                c.len() == 2
            })
            .await;

            tokio::time::sleep(random_pause()).await;
            bed.isolate_from_servers(follower).expect("cut");
            let second = finish(contender, &["lock"]).await.expect(0, "the second");
            let first = finish(holder, &["lock"])
                .await
                .expect(7, "the first, stopped");
            assert!(
                first.stderr.contains("suspended"),
                "the first says why: {}",
                first.stderr
            );
            drop(second);
        });
        assert_eq!(
            lines(&log),
            ["1 start", "1 stopped", "2 start"],
            "leader {leader}: the first command stopped before the second started"
        );
        bed.heal().expect("heal");
        bed.wait_for_quorum().expect("the quorum again");
        drop(observer);
    }
}
