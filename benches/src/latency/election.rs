//! The election workloads of the lock latency benchmark, each measured beside its limit in the
//! same rounds, under the same load.
//!
//! - `election_failover`: the leader closes its session; the failover is the time from the
//!   close's call until another candidate knows it leads ([`failover`]).
//! - `election_crash`: the leader's connection is killed (each candidate reaches the server
//!   through a [`FaultProxy`] of its own, which cuts the connection and refuses the
//!   reconnections), so its node goes only when the server expires the session ([`crash`]).
//!
//! **The limit.** A plain watcher, a session of its own with nothing else to do, holds an
//! `exists` watch on the leader's node: the time until it sees the node gone is the earliest
//! any client can know that the leader left (the close's commit, or the session timeout, plus
//! one notification). `failover_p50/limit_p50` is how far the recipe is from it.
//!
//! **Where the rest goes.** Beside the limit, a plain `exists` watch on the next candidate's
//! own session tells when that session's driver handed the notification out (one watch per
//! session on the server: both watches of that session are served by the same notification
//! frame). From the limit to it: the order in which the server sent the two notifications and
//! the two sessions' drivers; from it to the failover: the recipe's own time. For the close,
//! the old leader's close round trip and the server's own latency of the closeSession
//! (`mntr`, against one server) are reported too.
//!
//! Metrics: `election_failover` (with the workload's CPU, packets and commits per round),
//! `election_failover_limit`, `election_failover_next_session`, then per round
//! `election_failover_recipe` (failover − next session) and `election_failover_order` (next
//! session − limit, negative when the next candidate's session was told first), and
//! `election_failover_close` (its key `server_close_mean_us`); the same for `election_crash`
//! (`election_crash_next_session` has the key `session_timeout_ms`: the negotiated timeout),
//! without the close.
//! Per round, besides the failover itself, the benchmark's own requests add to the packets:
//! one listing or more (until every candidate's node is there) and the two `exists` watches.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use zk_proto::{Client, EventType};
use zk_recipes::election::{LATCH_NAME, LeaderLatch};
use zk_recipes::sequential::{is_own_node, sort_like_curator};
use zk_testkit::fault::FaultProxy;

use super::breakdown::server_update_latency;
use super::servers::server_addrs;
use super::workloads::{Context, Progress, Section, WAIT_LIMIT, connect, connect_to};
use super::{BoxError, Metric};

/// The session timeout asked for by the candidates of `election_crash`: the least a server
/// with the default `tickTime` (2 s) grants (2 × tickTime). A server grants at least its own
/// minimum; the negotiated value is reported.
const CRASH_SESSION_TIMEOUT: Duration = Duration::from_secs(4);

/// How the leader leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// It closes its session.
    Close,
    /// Its connection is killed; the server expires its session.
    Crash,
}

/// `election_failover`: the leader closes its session.
pub(super) async fn failover(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    run(ctx, Ending::Close).await
}

/// `election_crash`: the leader's connection is killed.
pub(super) async fn crash(ctx: &Context) -> Result<Vec<Metric>, BoxError> {
    run(ctx, Ending::Crash).await
}

/// One candidate: its session, its latch and, for a crash, the proxy its session goes through.
struct Candidate {
    client: Client,
    latch: LeaderLatch,
    proxy: Option<FaultProxy>,
}

/// The candidates of one election.
struct Election<'a> {
    ctx: &'a Context,
    path: String,
    next_id: usize,
    candidates: Vec<Candidate>,
    /// For a crash: the server the candidates' proxies lead to.
    target: Option<SocketAddr>,
}

/// When each side saw one round's failover, from the leader's close or crash.
struct Round {
    failover: Duration,
    limit: Duration,
    next_session: Duration,
    /// The old leader's close round trip (a close only).
    close: Option<Duration>,
    /// The server's latency of the closeSession, microseconds (a close, one server).
    server_close_us: Option<f64>,
}

async fn run(ctx: &Context, ending: Ending) -> Result<Vec<Metric>, BoxError> {
    let c = ctx.counts;
    let (name, rounds) = match ending {
        Ending::Close => ("election_failover", c.failover_rounds),
        Ending::Crash => ("election_crash", c.crash_rounds),
    };
    let target = match ending {
        Ending::Close => None,
        Ending::Crash => Some(
            *server_addrs(&ctx.connect)?
                .first()
                .ok_or("no server address to put a proxy in front of")?,
        ),
    };
    let mut election = Election {
        ctx,
        path: format!("{}/{name}", ctx.base),
        next_id: 0,
        candidates: Vec::with_capacity(c.candidates),
        target,
    };
    for _ in 0..c.candidates {
        election.join().await?;
    }
    // The plain watcher: a session with nothing else to do.
    let watcher = connect(ctx).await?;
    let progress = Progress::new(ctx, name, rounds);
    let mut measured = Vec::with_capacity(rounds);
    let section = Section::start(ctx);
    let mut timeouts = Vec::new();
    for round in 0..rounds {
        let (r, timeout) = election.round(&watcher, ending).await?;
        measured.push(r);
        timeouts.extend(timeout);
        progress.tick(round + 1);
    }
    progress.finish();
    let samples = |f: fn(&Round) -> Option<Duration>| -> Vec<Duration> {
        measured.iter().filter_map(f).collect()
    };
    let mut metrics = vec![Metric::from_samples(name, &samples(|r| Some(r.failover)))];
    section.finish(ctx, rounds, true, &mut metrics);
    metrics[0]
        .extra
        .push(("candidates", Value::from(c.candidates)));
    metrics.push(Metric::from_samples(
        &format!("{name}_limit"),
        &samples(|r| Some(r.limit)),
    ));
    let mut next = Metric::from_samples(
        &format!("{name}_next_session"),
        &samples(|r| Some(r.next_session)),
    );
    if ending == Ending::Crash {
        let ms = timeouts.iter().map(Duration::as_millis).max();
        next.extra.push((
            "session_timeout_ms",
            Value::from(ms.and_then(|ms| u64::try_from(ms).ok())),
        ));
    }
    metrics.push(next);
    // Per round: the recipe's own time (the next candidate's session had handed the
    // notification out; until it reports the leadership), and the gap between the two
    // sessions being told (negative when the next candidate's session was first).
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    metrics.push(Metric::from_samples_us(
        &format!("{name}_recipe"),
        measured
            .iter()
            .map(|r| us(r.failover) - us(r.next_session))
            .collect(),
    ));
    metrics.push(Metric::from_samples_us(
        &format!("{name}_order"),
        measured
            .iter()
            .map(|r| us(r.next_session) - us(r.limit))
            .collect(),
    ));
    if ending == Ending::Close {
        let mut close = Metric::from_samples(&format!("{name}_close"), &samples(|r| r.close));
        let server: Vec<f64> = measured.iter().filter_map(|r| r.server_close_us).collect();
        let mean = (!server.is_empty()).then(|| server.iter().sum::<f64>() / server.len() as f64);
        close
            .extra
            .push(("server_close_mean_us", Value::from(mean)));
        metrics.push(close);
    }
    let _ = watcher.close().await;
    election.leave().await;
    Ok(metrics)
}

impl Election<'_> {
    /// A new candidate at the end of the line.
    async fn join(&mut self) -> Result<(), BoxError> {
        let (client, proxy) = match self.target {
            Some(target) => {
                let proxy = FaultProxy::start(target).await?;
                let client =
                    connect_to(self.ctx, &proxy.connect_string(), CRASH_SESSION_TIMEOUT).await?;
                (client, Some(proxy))
            }
            None => (connect(self.ctx).await?, None),
        };
        let latch = LeaderLatch::builder(&client, &self.path, format!("c{}", self.next_id)).start();
        self.next_id += 1;
        self.candidates.push(Candidate {
            client,
            latch,
            proxy,
        });
        Ok(())
    }

    /// Every candidate closes its session.
    async fn leave(self) {
        for c in self.candidates {
            drop(c.latch);
            let _ = c.client.close().await;
        }
    }

    /// Waits until one candidate leads and every candidate's node is listed (the last
    /// joiner's create is done, so nothing of it runs during the round); returns the leader's
    /// index and node, and the index of the candidate next in line.
    async fn settled(&self, watcher: &Client) -> Result<(usize, String, usize), BoxError> {
        let deadline = Instant::now() + WAIT_LIMIT;
        let owner = |node: &str| {
            self.candidates
                .iter()
                .position(|c| is_own_node(node, c.latch.attempt_id()))
        };
        loop {
            // The leader first, without a request; then the listing.
            if let Some(leader) = self.candidates.iter().position(|c| c.latch.is_leader()) {
                let listed = watcher.get_children(&self.path).await?;
                let mut children: Vec<&str> = listed.iter().collect();
                sort_like_curator(&mut children, &[LATCH_NAME]);
                if children.len() == self.candidates.len()
                    && let [first, second, ..] = &children[..]
                    && owner(first) == Some(leader)
                    && let Some(next) = owner(second)
                {
                    return Ok((leader, format!("{}/{first}", self.path), next));
                }
            }
            if Instant::now() > deadline {
                return Err(format!("no settled election within {WAIT_LIMIT:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// One round: the leader leaves, a new candidate joins at the end of the line. Returns
    /// the round's times and the leader's negotiated session timeout.
    async fn round(
        &mut self,
        watcher: &Client,
        ending: Ending,
    ) -> Result<(Round, Option<Duration>), BoxError> {
        let (leader, node, next) = self.settled(watcher).await?;
        let (tx, mut elected) = mpsc::unbounded_channel();
        let mut waiting = Vec::new();
        for (i, c) in self.candidates.iter().enumerate() {
            if i == leader {
                continue;
            }
            let leadership = c.latch.leadership();
            let tx = tx.clone();
            waiting.push(tokio::spawn(async move {
                if leadership.wait_leader(None).await.is_ok() {
                    let _ = tx.send(Instant::now());
                }
            }));
        }
        let limit = deletion_seen(watcher, &node).await?;
        let next_session = deletion_seen(&self.candidates[next].client, &node).await?;
        let server_before = match ending {
            Ending::Close => server_update_latency(self.ctx),
            Ending::Crash => None,
        };
        let old = self.candidates.remove(leader);
        let timeout = old.client.negotiated_timeout();
        let t0 = Instant::now();
        let close = match ending {
            Ending::Close => {
                old.client.close().await?;
                Some(t0.elapsed())
            }
            Ending::Crash => {
                if let Some(proxy) = &old.proxy {
                    proxy.isolate();
                }
                None
            }
        };
        let wait = |what: &'static str| move |_| format!("{what} not within {WAIT_LIMIT:?}");
        let elected = tokio::time::timeout(WAIT_LIMIT, elected.recv())
            .await
            .map_err(wait("a new leader"))?
            .ok_or("every candidate's election ended")?;
        let limit = tokio::time::timeout(WAIT_LIMIT, limit)
            .await
            .map_err(wait("the plain watcher's notification"))?
            .map_err(|_| "the plain watcher's watch ended without the deletion")?;
        let next_session = tokio::time::timeout(WAIT_LIMIT, next_session)
            .await
            .map_err(wait("the next candidate's notification"))?
            .map_err(|_| "the next candidate's watch ended without the deletion")?;
        let server_close_us = server_before.zip(server_update_latency(self.ctx)).and_then(
            |((sum0, n0), (sum1, n1))| {
                // Milliseconds summed over requests, to µs per request.
                (n1 > n0).then(|| (sum1 - sum0) * 1e3 / (n1 - n0))
            },
        );
        for w in waiting {
            w.abort();
        }
        drop(old.latch);
        drop(old.client);
        drop(old.proxy);
        self.join().await?;
        let since = |t: Instant| t.saturating_duration_since(t0);
        Ok((
            Round {
                failover: since(elected),
                limit: since(limit),
                next_session: since(next_session),
                close,
                server_close_us,
            },
            timeout,
        ))
    }
}

/// Sets an `exists` watch on `node` with `client`; the receiver gets the instant its
/// deletion was handed out by the client.
async fn deletion_seen(
    client: &Client,
    node: &str,
) -> Result<oneshot::Receiver<Instant>, BoxError> {
    let (stat, watch) = client.exists_watch(node).await?;
    if stat.is_none() {
        return Err(format!("{node} was gone before the round").into());
    }
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        if let Ok(event) = watch.changed().await
            && event.event_type == EventType::NODE_DELETED
        {
            let _ = tx.send(Instant::now());
        }
    });
    Ok(rx)
}

/// The table's section: where each failover's time went (p50s from the close or the crash,
/// the per-round splits, the close); empty when no election workload ran.
pub(super) fn table_section(metrics: &[Metric]) -> String {
    use std::fmt::Write as _;
    let p50 = |name: &str| {
        metrics
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.p50_us)
    };
    let cell = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    let mut rows = String::new();
    for name in ["election_failover", "election_crash"] {
        if p50(name).is_none() {
            continue;
        }
        let server = metrics
            .iter()
            .find(|m| m.name == format!("{name}_close"))
            .and_then(|m| m.extra_num("server_close_mean_us"));
        let _ = writeln!(
            rows,
            "  {:<18} {:>12} {:>12} {:>12} {:>9} {:>9} {:>9} {:>11}",
            name,
            cell(p50(&format!("{name}_limit"))),
            cell(p50(&format!("{name}_next_session"))),
            cell(p50(name)),
            cell(p50(&format!("{name}_recipe"))),
            cell(p50(&format!("{name}_order"))),
            cell(p50(&format!("{name}_close"))),
            cell(server),
        );
    }
    if rows.is_empty() {
        return rows;
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nwhere a failover's time goes (p50 us from the leader's close or crash):"
    );
    let _ = writeln!(
        out,
        "  {:<18} {:>12} {:>12} {:>12} {:>9} {:>9} {:>9} {:>11}",
        "metric", "limit", "next session", "failover", "recipe", "order", "close", "server mean"
    );
    out.push_str(&rows);
    let _ = writeln!(
        out,
        "  limit: a plain watcher (a session with nothing else to do) sees the leader's node \
         gone; next session: the next candidate's session hands the notification out; recipe \
         (failover - next session) and order (next session - limit) are per round; close: the \
         old leader's close round trip; server mean: the server's closeSession latency (mntr)."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_section_shows_each_failover_beside_its_limit() {
        let metric = |name: &str, us: f64| Metric::from_samples_us(name, vec![us]);
        let mut close = metric("election_failover_close", 480.0);
        close
            .extra
            .push(("server_close_mean_us", Value::from(400.0)));
        let metrics = [
            metric("election_failover", 520.0),
            metric("election_failover_limit", 500.0),
            metric("election_failover_next_session", 505.0),
            metric("election_failover_recipe", 15.0),
            metric("election_failover_order", -1.0),
            close,
        ];
        let table = table_section(&metrics);
        assert!(
            table.contains(
                "  election_failover         500.0        505.0        520.0      15.0      -1.0     \
                 480.0       400.0\n"
            ),
            "{table}"
        );
        assert!(!table.contains("election_crash"), "{table}");
        assert_eq!(table_section(&[metric("raw_get", 50.0)]), "");
    }
}
