//! The leader selector and Apache Curator's `LeaderSelector` on one path, against a real
//! ZooKeeper 3.8 server: candidates of both libraries share one election, alternate, and
//! never lead at the same time; each side lists the other's participants with their ids.

mod curator_support;
mod selector_support;

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use curator_support::curator_program;
use tokio::io::{AsyncBufReadExt, BufReader};
use zk_recipes::election::{LeaderSelector, selector_participants};
use zk_testkit::client::{connect, eventually, mkdirs, serial, start_server, within};

const LIMIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_rust_candidates_alternate_with_one_leader_at_a_time() {
    let _serial = serial().await;
    let server = start_server().await;
    let admin = connect(&server.connect_string()).await;
    let (path, log) = ("/interop/selector", "/interop/log");
    mkdirs(&admin, log).await;
    const JAVA_TENURES: u64 = 20;
    const RUST_TENURES: u64 = 20;
    let mut java = tokio::process::Command::from(curator_program("CuratorSelector"))
        .args([
            server.connect_string().as_str(),
            path,
            "curator",
            log,
            &JAVA_TENURES.to_string(),
            "20",
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start java");
    let mut lines = BufReader::new(java.stdout.take().expect("stdout")).lines();
    let first = within("the Curator selector starts", LIMIT, lines.next_line()).await;
    assert_eq!(first.expect("read").as_deref(), Some("started"));
    // Two Rust candidates, each with its own session.
    let mut rust = Vec::new();
    for id in ["rust-1", "rust-2"] {
        let client = connect(&server.connect_string()).await;
        let count = Arc::new(AtomicU64::new(0));
        let (writer, counted, owned) = (client.clone(), count.clone(), id.to_owned());
        let selector = LeaderSelector::builder(&client, path, move |_tenure| {
            let (writer, counted, id) = (writer.clone(), counted.clone(), owned.clone());
            async move {
                selector_support::tenure(&writer, log, &id, Duration::from_millis(20)).await;
                counted.fetch_add(1, Ordering::SeqCst);
            }
        })
        .id(id.to_owned())
        .start();
        rust.push((selector, count, client));
    }
    // The participants, as each side stores them (the node's data is the id), seen from our
    // side: Curator's candidate among ours.
    eventually("three participants", LIMIT, || async {
        let participants = selector_participants(&admin, path).await.expect("list");
        let mut ids: Vec<_> = participants
            .iter()
            .map(|p| String::from_utf8_lossy(&p.id).into_owned())
            .collect();
        ids.sort();
        participants.iter().filter(|p| p.is_leader).count() == 1
            && ids == ["curator", "rust-1", "rust-2"]
    })
    .await;
    eventually("every Rust candidate led its tenures", LIMIT, || async {
        rust.iter()
            .all(|(_, n, _)| n.load(Ordering::SeqCst) >= RUST_TENURES)
    })
    .await;
    let done = within("the Curator selector finishes", LIMIT, lines.next_line()).await;
    assert_eq!(done.expect("read"), Some(format!("tenures={JAVA_TENURES}")));
    let status = within("java exits", LIMIT, java.wait()).await;
    assert!(status.expect("wait").success());
    for (selector, _, _) in rust {
        within("close", LIMIT, selector.close())
            .await
            .expect("close");
    }
    let entries = selector_support::entries(&admin, log).await;
    let (bad, tenures) = selector_support::overlaps(&entries, &[]);
    assert!(bad.is_empty(), "overlapping tenures: {bad:?}");
    let curator = tenures.iter().filter(|t| *t == "curator").count();
    assert_eq!(curator as u64, JAVA_TENURES);
    // They alternate: a Curator tenure is followed by one of ours (and the reverse) while
    // both sides are queued, not one side's tenures in a block.
    let switches = tenures
        .windows(2)
        .filter(|w| (w[0] == "curator") != (w[1] == "curator"))
        .count();
    eprintln!(
        "{} tenures, {switches} switches between the libraries",
        tenures.len()
    );
    assert!(
        switches as u64 >= JAVA_TENURES,
        "no alternation: {tenures:?}"
    );
}
