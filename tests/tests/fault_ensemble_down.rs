//! Scenario 13 on a real three-server ensemble: every server stopped at once. An acquire
//! honours its deadline, the session is reported expired after its timeout, and the client
//! backs off between passes over the hosts (connection attempts counted by a proxy in front of
//! each server).

use std::time::{Duration, Instant};

use zk_proto::session::Backoff;
use zk_proto::{Client, SessionState};
use zk_recipes::Error;
use zk_recipes::lock::Lock;
use zk_testkit::Ensemble;
use zk_testkit::client::{assert_dials_no_more, connect_with, start_ensemble};
use zk_testkit::fault::FaultProxy;

const SESSION_TIMEOUT: Duration = Duration::from_secs(4);
const GUARD: Duration = Duration::from_secs(30);
/// The most connection attempts a client with the default backoff can make in `window` after
/// it lost a connection that stayed up, whatever the number of hosts: every attempt waits its
/// backoff (see `zk_proto::session::Backoff`).
fn max_attempts(window: Duration) -> u64 {
    Backoff::default().max_attempts_within(window, SESSION_TIMEOUT)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_ensemble_down_deadlines_expiry_and_backoff() {
    // Started with one leader (`Ensemble::start`).
    let ensemble = start_ensemble(Ensemble::builder(3).tick_time(Duration::from_millis(500))).await;
    let mut proxies = Vec::new();
    for addr in ensemble.addrs() {
        proxies.push(FaultProxy::start(addr).await.expect("proxy"));
    }
    let connect_string = proxies
        .iter()
        .map(FaultProxy::connect_string)
        .collect::<Vec<_>>()
        .join(",");
    // No request timeout: the deadlines under test are the acquire's and the session's. The
    // proxies stand in front of the servers: following the ensemble's configuration would
    // replace them with the servers' own addresses.
    let client = connect_with(
        Client::builder()
            .session_timeout(SESSION_TIMEOUT)
            .follow_ensemble(false),
        &connect_string,
    )
    .await;
    let lock = Lock::new(&client, "/down/lock");
    // The lock works, and the client last heard from the ensemble right now.
    lock.acquire(None)
        .await
        .expect("acquire")
        .release()
        .await
        .expect("release");
    let attempts = |proxies: &[FaultProxy]| proxies.iter().map(FaultProxy::accepted).sum::<u64>();
    let before = attempts(&proxies);

    // Every server stops.
    let stopped_at = Instant::now();
    {
        let ensemble = ensemble.clone();
        tokio::task::spawn_blocking(move || {
            for i in 0..ensemble.len() {
                ensemble.stop(i);
            }
        })
        .await
        .expect("stop task");
    }
    let mut states = client.state_watcher();
    tokio::time::timeout(GUARD, states.wait_for(|s| *s == SessionState::Disconnected))
        .await
        .expect("disconnected in time")
        .expect("client alive");

    // An acquire with a deadline returns at its deadline.
    let deadline = Duration::from_millis(800);
    let started = Instant::now();
    let result = tokio::time::timeout(GUARD, lock.acquire(Some(deadline)))
        .await
        .expect("the acquire returned");
    let took = started.elapsed();
    assert!(
        matches!(result, Err(Error::Timeout)),
        "{:?}",
        result.map(|g| g.fencing_token())
    );
    assert!(
        took >= deadline && took < deadline + Duration::from_secs(1),
        "took {took:?} for a {deadline:?} deadline"
    );

    // No server answers for a whole session timeout: the client reports the expiry itself.
    tokio::time::timeout(
        SESSION_TIMEOUT * 2,
        states.wait_for(|s| *s == SessionState::Expired),
    )
    .await
    .expect("expired in time")
    .expect("client alive");
    let expired_after = stopped_at.elapsed();
    assert!(
        expired_after + Duration::from_millis(250) >= SESSION_TIMEOUT,
        "expired after {expired_after:?}, before the session timeout {SESSION_TIMEOUT:?}"
    );

    // Connection attempts meanwhile: every host tried, but no busy loop.
    let made = attempts(&proxies) - before;
    let bound = max_attempts(expired_after) + 1;
    eprintln!(
        "{made} connection attempts in {expired_after:?} ({:.1}/s; bound {bound})",
        made as f64 / expired_after.as_secs_f64()
    );
    assert!(
        made >= proxies.len() as u64 && made <= bound,
        "{made} attempts in {expired_after:?}, expected {} to {bound}",
        proxies.len()
    );
    // After the expiry, none at all: a window bounded by the client's own timer (two of its
    // longest waits between attempts, the backoff's cap).
    assert_dials_no_more(SESSION_TIMEOUT, || attempts(&proxies)).await;
    assert_eq!(
        lock.acquire(Some(deadline))
            .await
            .map(|g| g.fencing_token()),
        Err(Error::Zk(zk_proto::Error::SessionExpired))
    );
}
