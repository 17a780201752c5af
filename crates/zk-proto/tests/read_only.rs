//! Read-only mode against real ZooKeeper 3.8 servers started with `readonlymode.enabled=true`:
//! a server that lost its quorum serves read-only clients only, and a read-only client finds
//! its way back to a read/write server by itself.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zk_proto::{CreateOptions, Error, SessionState};
use zk_testkit::client::{
    blocking, builder, connect, read_only_ensemble, start_ensemble, wait_for_mode, wait_for_state,
};
use zk_testkit::{Ensemble, Mode};

/// A stand-in for a server on its way to read/write, in front of `target`: it answers the
/// first `ro_answers` `isro` probes with `ro` itself, then forwards every connection (probes
/// and sessions) to `target`. Returns its address and the times probes arrived.
async fn gate(target: SocketAddr, ro_answers: usize) -> (SocketAddr, Arc<Mutex<Vec<Instant>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let probes: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let seen = probes.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut head = [0; 4];
                if inbound.read_exact(&mut head).await.is_err() {
                    return;
                }
                if &head == b"isro" {
                    let count = {
                        let mut seen = seen.lock().expect("probes");
                        seen.push(Instant::now());
                        seen.len()
                    };
                    if count <= ro_answers {
                        let _ = inbound.write_all(b"ro").await;
                        return;
                    }
                }
                if let Ok(mut outbound) = TcpStream::connect(target).await
                    && outbound.write_all(&head).await.is_ok()
                {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, probes)
}

#[tokio::test]
async fn read_only_clients_use_a_partitioned_server_and_find_a_read_write_one() {
    let started = Instant::now();
    // A standalone server, the read/write server the gate leads to, starts meanwhile.
    let standalone = tokio::spawn(support::server());
    let ensemble = start_ensemble(read_only_ensemble(Ensemble::builder(3))).await;
    let e = ensemble.clone();
    let leader = blocking(move || e.wait_for_leader().expect("leader")).await;
    // The survivor is a follower: it sees the leader die at once (a dying follower is noticed
    // by the leader only after syncLimit).
    let survivor = (leader + 1) % 3;
    let killed: Vec<usize> = (0..3).filter(|&i| i != survivor).collect();
    let survivor_cs = ensemble.server(survivor).connect_string();

    let writer = connect(&ensemble.connect_string()).await;
    writer
        .create("/data", "v1", &CreateOptions::persistent())
        .await
        .expect("create while the ensemble is whole");
    writer.close().await.expect("close");

    let killed_at = Instant::now();
    for &i in &killed {
        ensemble.kill(i);
    }
    // 3.8 starts its read-only server 2 s (max(2 s, tickTime)) after losing the quorum.
    wait_for_mode(&ensemble, survivor, Mode::ReadOnly, Duration::from_secs(15)).await;
    let read_only_after = killed_at.elapsed();

    // A client that does not accept read-only mode is refused: the server closes the
    // connection after the ConnectRequest. With fail-fast that is a failed attempt.
    let refused = builder().fail_fast(true).connect(&survivor_cs).await;
    assert!(
        matches!(refused, Err(Error::NoServerReachable { attempts: 1, .. })),
        "{refused:?}"
    );

    // A read-only client, with the survivor first and the dead servers after it. Its session
    // timeout leaves room for the restarts below: the client's local expiry is one session
    // timeout without any server.
    let hosts: Vec<String> = std::iter::once(survivor)
        .chain(killed.iter().copied())
        .map(|i| ensemble.server(i).connect_string())
        .collect();
    let client = builder()
        .session_timeout(Duration::from_secs(20))
        .read_only(true)
        .keep_host_order(true)
        .connect(&hosts.join(","))
        .await
        .expect("a read-only client connects to the partitioned server");
    assert_eq!(client.state(), SessionState::ConnectedReadOnly);
    let (data, _) = client.get_data("/data").await.expect("reads work");
    assert_eq!(&data[..], b"v1");
    assert_eq!(
        client
            .create("/refused", "", &CreateOptions::persistent())
            .await,
        Err(Error::NotReadOnly)
    );
    let read_only_session = client.session_id();

    // A second read-only client whose other host is a gate in front of the standalone server:
    // `ro` to its first two probes, then the real `rw`. It leaves the read-only server, which
    // stays read-only, by its probes alone. (It sends no request to the read-only server: the
    // ensemble's zxids are above the standalone server's, which would refuse the session.)
    let standalone = standalone.await.expect("standalone server");
    let (gate_addr, probes) = gate(standalone.addr(), 2).await;
    let searcher = builder()
        .read_only(true)
        .keep_host_order(true)
        // Its list mixes in a server outside the ensemble: following the ensemble's
        // configuration would replace the list with the members.
        .follow_ensemble(false)
        .connect(&format!("{survivor_cs},{gate_addr}"))
        .await
        .expect("connect to the read-only server");
    assert_eq!(searcher.state(), SessionState::ConnectedReadOnly);
    let probing_since = Instant::now();
    wait_for_state(&searcher, SessionState::Connected, Duration::from_secs(10)).await;
    let switch_time = probing_since.elapsed();
    let probes = probes.lock().expect("probes").clone();
    assert_eq!(probes.len(), 3, "two `ro` answers, then `rw`");
    // The waits double: 100 ms, 200 ms, 400 ms (each counted from the end of a probe).
    assert!(probes[1] - probes[0] >= Duration::from_millis(200));
    assert!(probes[2] - probes[1] >= Duration::from_millis(400));
    let e = ensemble.clone();
    let mode = blocking(move || e.server(survivor).mode()).await;
    assert!(
        matches!(mode, Ok(Mode::ReadOnly)),
        "the old server is still read-only: {mode:?}"
    );
    searcher
        .create("/on-rw", "", &CreateOptions::persistent())
        .await
        .expect("writes work on the read/write server");
    assert_eq!(
        standalone.four_letter("isro").expect("isro"),
        "rw",
        "the standalone server says rw"
    );
    searcher.close().await.expect("close");

    // The dead servers come back: the quorum forms again and the first client reaches a
    // read/write server by itself, with a new session (it never had one on a r/w server).
    // (In practice the survivor closes its read-only connections as it rejoins the quorum,
    // before a probe finds the new quorum; the second client above shows the probes.)
    let restart_at = Instant::now();
    let e = ensemble.clone();
    let restart = tokio::task::spawn_blocking(move || {
        for &i in &killed {
            e.restart(i).expect("restart");
        }
    });
    wait_for_state(&client, SessionState::Connected, Duration::from_secs(30)).await;
    let reconnect_time = restart_at.elapsed();
    assert_ne!(client.session_id(), read_only_session);
    client
        .create("/after", "", &CreateOptions::persistent())
        .await
        .expect("writes work again");
    let (data, _) = client.get_data("/data").await.expect("read");
    assert_eq!(&data[..], b"v1");
    restart.await.expect("restarts");
    client.close().await.expect("close");
    eprintln!(
        "read-only {read_only_after:?} after the kill; probe switch {switch_time:?}; \
         read/write {reconnect_time:?} after the restart began; total {:?}",
        started.elapsed()
    );
}
