//! `rzk lock` while the ensemble changes under it: a move the client makes itself (servers
//! join and the client rebalances onto them; its server is removed and it moves away) is not a
//! lost lock. Ten commands under ten locks on a 3-server dynamic ensemble while servers 4 and 5
//! join and a follower leaves: no command is stopped, no session is lost.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use support::{finish, lines, scratch, signal, until_terminated, wait_lines, with_script};
use zk_proto::Client;
use zk_testkit::client::{
    add_member, blocking, builder, children, connect_with, eventually, remove_member, serial,
    start_dynamic_ensemble, within,
};
use zk_testkit::{DynamicEnsemble, started};

const LIMIT: Duration = Duration::from_secs(30);
const COMMANDS: usize = 10;

/// Which server serves each session (from every live server's `cons`).
async fn servers_of(ensemble: &std::sync::Arc<DynamicEnsemble>) -> BTreeMap<i64, u32> {
    let ensemble = ensemble.clone();
    blocking(move || {
        let mut serving = BTreeMap::new();
        for id in ensemble.live_ids() {
            let Ok(cons) = ensemble.member(id).four_letter("cons") else {
                continue;
            };
            for sid in cons.split("sid=0x").skip(1) {
                let hex: String = sid.chars().take_while(char::is_ascii_hexdigit).collect();
                if let Ok(sid) = i64::from_str_radix(&hex, 16) {
                    serving.insert(sid, id);
                }
            }
        }
        serving
    })
    .await
}

/// The owner of the lock node under `path` (its only child).
async fn owner(admin: &Client, path: &str) -> i64 {
    // The command's session may be on another server than `admin`'s: without a sync, the
    // listing may not have its node yet.
    within("sync", LIMIT, admin.sync(path)).await.expect("sync");
    let nodes = children(admin, path).await;
    assert_eq!(nodes.len(), 1, "{path}: {nodes:?}");
    admin
        .exists(&format!("{path}/{}", nodes[0]))
        .await
        .expect("exists")
        .expect("the lock node")
        .ephemeral_owner
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_commands_ride_through_servers_joining_and_leaving() {
    let _serial = serial().await;
    let ensemble = start_dynamic_ensemble(DynamicEnsemble::builder(3)).await;
    let admin = connect_with(
        builder().session_timeout(Duration::from_secs(20)),
        &ensemble.connect_string(),
    )
    .await;
    let dir = scratch("moves");
    let mut runs = Vec::new();
    for i in 0..COMMANDS {
        let log = dir.join(format!("log{i}"));
        let script = until_terminated(&log, "start", "stopped");
        let path = format!("/moves/{i}");
        let child = with_script(
            &ensemble.connect_string(),
            &["lock", "--session-timeout", "6s", &path],
            &script,
        )
        .spawn()
        .expect("start rzk");
        runs.push((child, log, path));
    }
    let mut owners = Vec::new();
    for (_, log, path) in &runs {
        wait_lines(log, LIMIT, "the command runs", |l| l.len() == 1).await;
        owners.push(owner(&admin, path).await);
    }
    let before = servers_of(&ensemble).await;

    // Servers 4 and 5 join: the clients follow the configuration and a fair share moves.
    for _ in 0..2 {
        let e = ensemble.clone();
        let joiner = started(blocking(move || e.spawn_joiner()).await);
        add_member(&admin, &joiner.server_line).await;
    }
    // A follower of the first three leaves: its clients move away.
    let leader = ensemble.leader_id();
    let leaving = [1, 2, 3]
        .into_iter()
        .find(|id| Some(*id) != leader)
        .expect("a follower");
    remove_member(&admin, leaving).await;
    eventually("every command's session on a member", LIMIT, || async {
        let now = servers_of(&ensemble).await;
        owners
            .iter()
            .all(|sid| now.get(sid).is_some_and(|id| *id != leaving))
    })
    .await;
    let after = servers_of(&ensemble).await;
    let moved = owners
        .iter()
        .filter(|sid| before.get(sid) != after.get(sid))
        .count();
    eprintln!("{moved} of {COMMANDS} sessions moved (server {leaving} left)");
    assert!(moved > 0, "no session moved: the test proves nothing");

    // No command was stopped, no session lost: every rzk still runs its command, under the
    // same session.
    for (i, (child, log, path)) in runs.iter_mut().enumerate() {
        assert!(
            child.try_wait().expect("rzk").is_none(),
            "rzk {i} ended during the moves"
        );
        assert_eq!(lines(log), ["start"], "command {i}");
        assert_eq!(
            owner(&admin, path).await,
            owners[i],
            "command {i}'s session"
        );
    }
    for (child, log, _) in runs {
        signal(&child, "TERM");
        finish(child, &["lock"])
            .await
            .expect(0, "stopped by SIGTERM");
        assert_eq!(lines(&log), ["start", "stopped"]);
    }
}
