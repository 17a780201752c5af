//! The recipes under faults, against real servers: leader election through repeated expiry of
//! the leader's session, a queue consumer that crashes after claiming items, and a double
//! barrier whose member crashes.
//!
//! Faults come from [`zk_testkit::fault::FaultProxy`]: every session that is to fail sits
//! behind its own proxy, so it alone can be cut off. No sleep stands in for an event: every
//! wait is on a state, a watch or a task, bounded by a timeout.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jute::OpCode;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zk_proto::{Client, Error, SessionState};
use zk_recipes::Error as RecipeError;
use zk_recipes::barrier::DoubleBarrier;
use zk_recipes::election::{LeaderLatch, Leadership};
use zk_recipes::queue::Queue;
use zk_testkit::ZkServer;
use zk_testkit::client::{
    Proxied, builder, connect_proxied, connect_with, serial, server_builder, start_server_with,
    wait_for_state, within,
};

// ---------------------------------------------------------------------------------------------
// Support: servers with a chosen tick, sessions with a chosen timeout, bounded waits on nodes.
// ---------------------------------------------------------------------------------------------

/// Starts a standalone server with tick `tick` (session timeouts from `2 × tick`).
async fn server(tick: Duration) -> ZkServer {
    start_server_with(server_builder().tick_time(tick)).await
}

/// Connects to `connect_string` asking for `session_timeout` (the kit's request timeout).
async fn connect(connect_string: &str, session_timeout: Duration) -> Client {
    connect_with(builder().session_timeout(session_timeout), connect_string).await
}

/// A new proxy to `server` and a session through it, asking for `session_timeout`.
async fn proxied(server: &ZkServer, session_timeout: Duration) -> Proxied {
    connect_proxied(server.addr(), builder().session_timeout(session_timeout)).await
}

/// Waits (bounded) until `path` exists (`true`) or not (`false`), on exists-watches: no polling.
async fn wait_exists(client: &Client, path: &str, present: bool, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let (stat, watch) = client.exists_watch(path).await.expect("exists");
        if stat.is_some() == present {
            return;
        }
        match tokio::time::timeout_at(deadline, watch.changed()).await {
            Ok(event) => {
                event.expect("watch event");
            }
            Err(_) => panic!(
                "{path} {} within {limit:?}",
                if present {
                    "not created"
                } else {
                    "not deleted"
                }
            ),
        }
    }
}

/// Asserts that `elapsed` lies in `[at_least, at_least + margin]`.
fn assert_within(elapsed: Duration, at_least: Duration, margin: Duration, what: &str) {
    assert!(
        elapsed + Duration::from_millis(5) >= at_least && elapsed <= at_least + margin,
        "{what}: took {elapsed:?}, expected between {at_least:?} and {:?}",
        at_least + margin
    );
}

// ---------------------------------------------------------------------------------------------
// 14. Leader latch: the leader's session expires, round after round.
// ---------------------------------------------------------------------------------------------

/// Rounds of "the leader's session expires, another candidate takes over".
const ELECTION_ROUNDS: usize = 100;
/// Rounds of the variant where the next in line expires together with the leader.
const DOUBLE_EXPIRY_ROUNDS: usize = 15;
/// Server tick of the election scenario: sessions may be as short as two ticks.
const ELECTION_TICK: Duration = Duration::from_millis(50);
/// The candidates' session timeout: the server expires an isolated leader after this (rounded
/// up to the next tick), so it is the length of a round.
const ELECTION_SESSION: Duration = Duration::from_millis(400);
/// Candidates kept in the election (the leader and two followers).
const CANDIDATES: usize = 3;
/// Bound of every wait of a round.
const ROUND_WITHIN: Duration = Duration::from_secs(10);

/// What a candidate was told, in the global order the observers recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    Elected(usize),
    Lost(usize),
}

#[derive(Debug, Default)]
struct Record {
    /// Every leadership change of every candidate; the index is the global sequence number.
    events: Vec<Told>,
    /// The candidates that were told they lead and not yet that they lost.
    claims: BTreeSet<usize>,
    /// Every candidate's leadership, to compare the real values at the moment of an election.
    leaderships: BTreeMap<usize, Leadership>,
    /// The candidates whose election ended (their session expired or was closed).
    ended: BTreeSet<usize>,
    /// Moments at which two candidates led.
    violations: Vec<String>,
}

/// The in-process record of leadership claims, shared by the observer tasks.
#[derive(Debug)]
struct Claims {
    record: Mutex<Record>,
    /// Bumped after each change of the record: waiters wake on it.
    changes: watch::Sender<usize>,
}

impl Claims {
    fn new() -> Arc<Claims> {
        Arc::new(Claims {
            record: Mutex::default(),
            changes: watch::channel(0).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Record> {
        self.record.lock().expect("record lock")
    }

    /// Records that candidate `id` was told `leading`, checking the election's safety at that
    /// moment: no other claim is held, and no other candidate's leadership is `true` while
    /// this one's is.
    fn told(&self, id: usize, leading: bool) {
        let mut record = self.lock();
        if leading {
            if !record.claims.is_empty() {
                let message = format!(
                    "event {}: candidate {id} told it leads while {:?} still claim to lead",
                    record.events.len(),
                    record.claims
                );
                record.violations.push(message);
            }
            let own = record
                .leaderships
                .get(&id)
                .is_some_and(Leadership::is_leader);
            let others: Vec<usize> = record
                .leaderships
                .iter()
                .filter(|&(&other, l)| other != id && l.is_leader())
                .map(|(&other, _)| other)
                .collect();
            if own && !others.is_empty() {
                let message = format!(
                    "event {}: candidate {id} leads while {others:?} lead too",
                    record.events.len()
                );
                record.violations.push(message);
            }
            record.claims.insert(id);
            record.events.push(Told::Elected(id));
        } else {
            record.claims.remove(&id);
            record.events.push(Told::Lost(id));
        }
        drop(record);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Records that candidate `id`'s election ended.
    fn ended(&self, id: usize) {
        self.lock().ended.insert(id);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Waits (bounded) until `found` finds something in the record; `None` on timeout.
    async fn wait_for<T>(&self, mut found: impl FnMut(&Record) -> Option<T>) -> Option<T> {
        let mut changes = self.changes.subscribe();
        let mut result = None;
        let waited = tokio::time::timeout(
            ROUND_WITHIN,
            changes.wait_for(|_| {
                result = found(&self.lock());
                result.is_some()
            }),
        )
        .await;
        waited.ok()?.expect("claims sender alive");
        result
    }
}

/// Follows one candidate's leadership and records each change it is told, then its end.
async fn observe(id: usize, mut leadership: watch::Receiver<bool>, claims: Arc<Claims>) {
    let mut last = false;
    // The sender sets `false` before it closes, so the final loss is seen before the end.
    while leadership.changed().await.is_ok() {
        let now = *leadership.borrow_and_update();
        if now == last {
            // Two changes seen as one (lost and elected again, or the reverse): record both.
            claims.told(id, !now);
        }
        claims.told(id, now);
        last = now;
    }
    claims.ended(id);
}

/// A candidate of the election: its own proxy and session, its latch, its observer.
struct Candidate {
    session: Proxied,
    latch: LeaderLatch,
    leadership: Leadership,
    observer: JoinHandle<()>,
}

/// The election under test: its candidates, by id (ids grow with joining order, and so do
/// the candidates' node sequence numbers).
struct Election<'a> {
    server: &'a ZkServer,
    observer: zk_proto::Client,
    path: &'static str,
    claims: Arc<Claims>,
    candidates: BTreeMap<usize, Candidate>,
    next_id: usize,
    /// Candidates whose session ended while no fault was aimed at them (a loaded machine
    /// can starve a 400 ms session); replaced, and reported.
    unplanned_ends: usize,
}

impl Election<'_> {
    async fn join(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        let session = proxied(self.server, ELECTION_SESSION).await;
        let latch = LeaderLatch::start(&session.client, self.path, format!("candidate-{id}"));
        let leadership = latch.leadership();
        self.claims
            .lock()
            .leaderships
            .insert(id, leadership.clone());
        let observer = tokio::spawn(observe(id, leadership.receiver(), self.claims.clone()));
        let candidate = Candidate {
            session,
            latch,
            leadership,
            observer,
        };
        self.candidates.insert(id, candidate);
    }

    /// Replaces the candidates whose election ended on its own, up to [`CANDIDATES`].
    async fn top_up(&mut self) {
        self.top_up_except(&[]).await;
    }

    /// As [`top_up`](Self::top_up), keeping the candidates of `kept` even when they ended: the
    /// round's victims, whose expiry [`expired`](Self::expired) checks once the round is over.
    /// (Under load a round can run out of live candidates before its victims are checked:
    /// dropping a victim here made `expired` find no such candidate.)
    async fn top_up_except(&mut self, kept: &[usize]) {
        let ended: Vec<usize> = {
            let record = self.claims.lock();
            self.candidates
                .keys()
                .copied()
                .filter(|id| record.ended.contains(id) && !kept.contains(id))
                .collect()
        };
        for id in ended {
            self.unplanned_ends += 1;
            self.candidates.remove(&id);
        }
        while self.candidates.len() < CANDIDATES {
            self.join().await;
        }
    }

    /// Waits until some candidate outside `excluded` is found by `found`; if meanwhile every
    /// live candidate outside `excluded` has ended on its own (nobody is left to be found),
    /// new ones join.
    async fn wait_for<T>(
        &mut self,
        excluded: &[usize],
        what: &str,
        mut found: impl FnMut(&Record) -> Option<T>,
    ) -> T {
        enum Outcome<T> {
            Found(T),
            NoneLeft,
        }
        loop {
            let live: Vec<usize> = self
                .candidates
                .keys()
                .copied()
                .filter(|id| !excluded.contains(id))
                .collect();
            let outcome = self
                .claims
                .wait_for(|record| {
                    if let Some(found) = found(record) {
                        Some(Outcome::Found(found))
                    } else if live.iter().all(|id| record.ended.contains(id)) {
                        Some(Outcome::NoneLeft)
                    } else {
                        None
                    }
                })
                .await;
            match outcome {
                Some(Outcome::Found(found)) => return found,
                Some(Outcome::NoneLeft) => self.top_up_except(excluded).await,
                None => {
                    let state = self.diagnose().await;
                    panic!("not within {ROUND_WITHIN:?}: {what}:{state}");
                }
            }
        }
    }

    /// Every candidate's session and leadership, the nodes, the last recorded events.
    async fn diagnose(&self) -> String {
        let mut out = String::new();
        for (id, c) in &self.candidates {
            out.push_str(&format!(
                "\n  candidate {id}: session {:#x} {:?}, leading {}, ended {:?}, attempt {}",
                c.session.client.session_id(),
                c.session.client.state(),
                c.leadership.is_leader(),
                c.leadership.end_reason(),
                c.latch.attempt_id()
            ));
        }
        let mut children = self
            .observer
            .get_children(self.path)
            .await
            .unwrap_or_default();
        children.sort();
        out.push_str(&format!("\n  nodes: {children:?}"));
        let record = self.claims.lock();
        let tail = record.events.len().saturating_sub(12);
        out.push_str(&format!(
            "\n  claims {:?}; last events (from {tail}): {:?}",
            record.claims,
            &record.events[tail..]
        ));
        out
    }

    /// Removes a candidate whose session was made to expire, checking that it did: its client
    /// is `Expired` and its election ended with `SessionExpired`.
    async fn expired(&mut self, id: usize, round: usize) {
        let old = self.candidates.remove(&id).expect("a live candidate");
        wait_for_state(&old.session.client, SessionState::Expired, ROUND_WITHIN).await;
        within("the old observer ends", ROUND_WITHIN, old.observer)
            .await
            .expect("observer did not panic");
        assert_eq!(
            old.leadership.end_reason(),
            Some(Error::SessionExpired),
            "round {round}: candidate {id}'s election ended by expiry"
        );
    }
}

/// Scenario: three candidates run a `LeaderLatch`, each through its own fault proxy with a
/// 400 ms session (server tick 50 ms). Each round isolates the leader's proxy (its connection
/// is cut and new ones refused), so the server expires its session after the session timeout
/// and deletes its node; a follower takes over, the old candidate's election ends with
/// `SessionExpired`, and a new candidate joins. 100 rounds (about 45 s: a round is one
/// server-side expiry).
///
/// Pass criteria: an in-process set of "I lead" claims, updated by one observer per candidate
/// when it is told it leads or lost, never holds another claim when a candidate is told it
/// leads, and no two candidates' leaderships are `true` at such a moment; in every round the
/// old leader's "lost" precedes the new leader's "elected" in the global event order, and the
/// old leader is never elected again; the old leader's session did expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_leader_session_expires_repeatedly_never_two_leaders() {
    run_election(ELECTION_ROUNDS, false).await;
}

/// Scenario: as above, but each round isolates the leader **and** the next candidate in line
/// (the one watching the leader's node), so both sessions expire in the same server tick and
/// the third candidate must take over. 15 rounds.
///
/// Pass criteria: as above, for both expired candidates: neither is elected again, both are
/// told "lost" before the successor is told "elected", never two leaders.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_leader_and_next_in_line_expire_together_third_takes_over() {
    run_election(DOUBLE_EXPIRY_ROUNDS, true).await;
}

/// Runs `rounds` rounds of the expiry scenario; with `next_in_line`, the follower next in
/// line is isolated together with the leader.
async fn run_election(rounds: usize, next_in_line: bool) {
    let _serial = serial().await;
    let server = server(ELECTION_TICK).await;
    let mut election = Election {
        server: &server,
        observer: connect(&server.connect_string(), Duration::from_secs(10)).await,
        path: "/fault/election",
        claims: Claims::new(),
        candidates: BTreeMap::new(),
        next_id: 0,
        unplanned_ends: 0,
    };
    let claims = election.claims.clone();
    let mut round_times = Vec::with_capacity(rounds);
    let started = Instant::now();

    for round in 0..rounds {
        election.top_up().await;
        // The leader of this round: the one claim, and its latch says so.
        let leader = election
            .wait_for(
                &[],
                &format!("round {round}: a leader"),
                |record| match record.claims.iter().collect::<Vec<_>>()[..] {
                    [&id] if record.leaderships[&id].is_leader() => Some(id),
                    _ => None,
                },
            )
            .await;
        let mut victims = vec![leader];
        if next_in_line {
            // Ids grow with the node sequence: the next id after the leader's is next in line.
            let next = election.candidates.keys().copied().find(|&id| id > leader);
            victims.extend(next);
        }
        let start = claims.lock().events.len();
        let cut_at = Instant::now();
        for victim in &victims {
            election.candidates[victim].session.proxy.isolate();
        }

        // Another candidate is elected once the server expired the victims' sessions.
        let (elected_at, successor) = election
            .wait_for(
                &victims,
                &format!("round {round}: a successor of {victims:?}"),
                |record| {
                    record.events[start..]
                        .iter()
                        .enumerate()
                        .find_map(|(at, e)| match *e {
                            Told::Elected(id) if !victims.contains(&id) => Some((at, id)),
                            _ => None,
                        })
                },
            )
            .await;
        round_times.push(cut_at.elapsed());
        let events = claims.lock().events[start..=start + elected_at].to_vec();
        if let Some(lost_at) = events.iter().position(|e| *e == Told::Lost(leader)) {
            assert!(
                lost_at < elected_at,
                "round {round}: {leader} told lost (event {}) after {successor} told elected \
                 (event {}): {events:?}",
                start + lost_at,
                start + elected_at
            );
        } else {
            panic!(
                "round {round}: {successor} elected but {leader} never told it lost: {events:?}"
            );
        }
        for victim in &victims {
            assert!(
                !events.contains(&Told::Elected(*victim)),
                "round {round}: the isolated candidate {victim} was elected: {events:?}"
            );
        }
        let violations = claims.lock().violations.clone();
        assert!(violations.is_empty(), "round {round}: {violations:?}");

        for victim in victims {
            election.expired(victim, round).await;
        }
    }

    // Every expired candidate's node is gone: only the live candidates' nodes are left.
    let mut children = election
        .observer
        .get_children(election.path)
        .await
        .expect("children");
    children.sort();
    let live = {
        let record = claims.lock();
        election
            .candidates
            .keys()
            .filter(|id| !record.ended.contains(id))
            .count()
    };
    assert_eq!(
        children.len(),
        live,
        "one node per live candidate: {children:?}"
    );
    {
        let record = claims.lock();
        assert!(record.violations.is_empty(), "{:?}", record.violations);
        let elections = record
            .events
            .iter()
            .filter(|e| matches!(e, Told::Elected(_)))
            .count();
        assert!(elections > rounds, "{elections} elections");
    }
    round_times.sort();
    eprintln!(
        "election: {rounds} rounds (next in line expiring too: {next_in_line}) in {:.1?}; \
         cut-to-new-leader median {:?}, max {:?}; candidates whose session ended unprovoked: {}",
        started.elapsed(),
        round_times[round_times.len() / 2],
        round_times[round_times.len() - 1],
        election.unplanned_ends
    );
    for (_, candidate) in std::mem::take(&mut election.candidates) {
        let _ = candidate.latch.close().await;
        candidate.observer.abort();
        candidate.session.client.close().await.expect("close");
    }
    election.observer.close().await.expect("close");
}

// ---------------------------------------------------------------------------------------------
// 15a. Queue: a consumer crashes after claiming items.
// ---------------------------------------------------------------------------------------------

/// Items the producer puts.
const QUEUE_ITEMS: usize = 200;
/// Items the second crashing consumer claims before it crashes.
const CRASHER_CLAIMS: usize = 5;
/// Live consumers.
const LIVE_CONSUMERS: usize = 3;
/// The sessions of the queue and barrier scenarios (the crashed ones expire after this).
const RECIPE_SESSION: Duration = Duration::from_secs(2);
/// Server tick of the queue and barrier scenarios.
const RECIPE_TICK: Duration = Duration::from_millis(100);
/// Bound of every wait of the queue and barrier scenarios.
const WITHIN: Duration = Duration::from_secs(20);

fn payload(data: &[u8]) -> String {
    String::from_utf8(data.to_vec()).expect("utf-8 payload")
}

/// Scenario: a producer puts 200 distinct items. Consumer X (behind a proxy) takes the head
/// item but the proxy cuts its connection right after the claiming delete reached the server,
/// so the delete is applied and X never learns it; X then crashes (proxy isolated, client
/// dropped without closing). Consumer Y (behind a proxy) claims items concurrently with three
/// live consumers (a session each), and after 5 claims crashes the same way, before
/// "processing" them. The live consumers take until the queue is empty.
///
/// The queue claims an item by deleting its node, so a claimed item leaves the queue with the
/// claim: the crashed consumers' items are gone with them (at-most-once delivery), nobody
/// else gets them, and the queue has no way to hand them out again.
///
/// Pass criteria: no item is delivered twice to the live consumers; the items the crashed
/// consumers claimed (X's lost-reply head item, Y's 5) and the live consumers' items are
/// disjoint and together exactly the 200 put; the queue is empty at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_consumer_crashes_after_claiming_no_item_delivered_twice() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let path = "/fault/queue";
    let direct = connect(&server.connect_string(), RECIPE_SESSION).await;
    let producer = Queue::new(&direct, path);
    let all: BTreeSet<String> = (0..QUEUE_ITEMS).map(|i| format!("item-{i:04}")).collect();
    let puts: Vec<_> = all.iter().map(|item| producer.put(item.clone())).collect();
    for put in futures_util::future::join_all(puts).await {
        put.expect("put");
    }
    assert_eq!(producer.len().await.expect("len"), QUEUE_ITEMS);

    // X: the reply of its claiming delete is lost, then it crashes.
    let mut crashed_claimed: BTreeSet<String> = BTreeSet::new();
    let mut names = direct.get_children(path).await.expect("children");
    zk_recipes::sequential::sort_by_sequence(&mut names);
    let head = format!("{path}/{}", names[0]);
    let (head_data, _) = direct.get_data(&head).await.expect("head item");
    let x = proxied(&server, RECIPE_SESSION).await;
    let armed = x.proxy.cut_after_request(OpCode::DELETE);
    let taken = within("X's take", WITHIN, Queue::new(&x.client, path).try_take()).await;
    assert_eq!(
        taken,
        Err(RecipeError::Zk(Error::ConnectionLoss)),
        "X never learns its claim"
    );
    assert!(armed.has_fired(), "the delete reached the server");
    x.proxy.isolate();
    drop(x);
    assert!(
        direct.exists(&head).await.expect("exists").is_none(),
        "X's delete was applied: the head item is claimed by the crashed consumer"
    );
    crashed_claimed.insert(payload(&head_data));

    // Y claims items while the live consumers take; then it crashes.
    let y = proxied(&server, RECIPE_SESSION).await;
    let (first_claimed, first_claimed_rx) = tokio::sync::oneshot::channel();
    let crasher = tokio::spawn(async move {
        let queue = Queue::new(&y.client, path);
        let mut claimed = Vec::new();
        let mut first_claimed = Some(first_claimed);
        while claimed.len() < CRASHER_CLAIMS {
            let Some(item) = queue.try_take().await.expect("Y's take") else {
                break;
            };
            claimed.push(payload(&item.data));
            if let Some(tx) = first_claimed.take() {
                let _ = tx.send(());
            }
        }
        // The crash: the session is cut off and the process forgets everything it held.
        y.proxy.isolate();
        drop(queue);
        drop(y);
        claimed
    });
    within("Y's first claim", WITHIN, first_claimed_rx)
        .await
        .expect("Y claimed an item");
    let mut live_clients = Vec::new();
    for _ in 0..LIVE_CONSUMERS {
        live_clients.push(connect(&server.connect_string(), RECIPE_SESSION).await);
    }
    let live: Vec<JoinHandle<Vec<String>>> = live_clients
        .iter()
        .map(|client| {
            let queue = Queue::new(client, path);
            tokio::spawn(async move {
                let mut taken = Vec::new();
                // No producer is left: an empty queue stays empty.
                while let Some(item) = queue.try_take().await.expect("live take") {
                    taken.push(payload(&item.data));
                }
                taken
            })
        })
        .collect();
    let y_claimed = within("Y crashes", WITHIN, crasher)
        .await
        .expect("Y did not panic");
    assert_eq!(y_claimed.len(), CRASHER_CLAIMS, "Y claimed its items");
    crashed_claimed.extend(y_claimed);
    let mut live_taken: Vec<String> = Vec::new();
    for (i, consumer) in live.into_iter().enumerate() {
        let taken = within("a live consumer drains the queue", WITHIN, consumer)
            .await
            .expect("consumer did not panic");
        eprintln!("queue: live consumer {i} took {} items", taken.len());
        live_taken.extend(taken);
    }

    let live_set: BTreeSet<String> = live_taken.iter().cloned().collect();
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = live_taken.iter().filter(|i| !seen.insert(*i)).collect();
    assert!(
        twice.is_empty(),
        "delivered twice to live consumers: {twice:?}"
    );
    assert_eq!(crashed_claimed.len(), 1 + CRASHER_CLAIMS);
    let both: Vec<&String> = live_set.intersection(&crashed_claimed).collect();
    assert!(
        both.is_empty(),
        "claimed by a crashed consumer and delivered to a live one: {both:?}"
    );
    let union: BTreeSet<String> = live_set.union(&crashed_claimed).cloned().collect();
    assert_eq!(union, all, "live-taken ∪ crashed-claimed = every item put");
    assert_eq!(producer.len().await.expect("len"), 0, "the queue is empty");
    for client in live_clients {
        client.close().await.expect("close");
    }
    direct.close().await.expect("close");
}

// ---------------------------------------------------------------------------------------------
// 15b. Double barrier: a member crashes between enter and leave.
// ---------------------------------------------------------------------------------------------

/// Participants of the double barrier (one of them crashes).
const BARRIER_COUNT: usize = 4;
/// The crashed member's session: it stays alive on the server this long after the crash.
const CRASHED_SESSION: Duration = Duration::from_secs(4);
/// The short deadline given to leave / enter, well inside [`CRASHED_SESSION`].
const SHORT: Duration = Duration::from_secs(1);
/// How late a call with a deadline may return on a loaded 2-core machine.
const MARGIN: Duration = Duration::from_millis(1500);

/// Runs `leave(timeout)` on every barrier at once; returns each result and its duration.
async fn leave_all(
    barriers: &[DoubleBarrier],
    timeout: Duration,
) -> Vec<(zk_recipes::Result<()>, Duration)> {
    let tasks: Vec<_> = barriers
        .iter()
        .cloned()
        .map(|b| {
            tokio::spawn(async move {
                let started = Instant::now();
                let result = b.leave(Some(timeout)).await;
                (result, started.elapsed())
            })
        })
        .collect();
    let mut results = Vec::new();
    for task in tasks {
        results.push(
            within("leave returns", timeout + WITHIN, task)
                .await
                .expect("leave did not panic"),
        );
    }
    results
}

/// Scenario: four members enter a double barrier (count 4); member X, behind a proxy with a
/// 4 s session, then crashes (proxy isolated, client dropped without closing), so its
/// ephemeral node stays until the server expires its session.
///
/// Pass criteria: the three live members' `leave(1 s)` returns `Err(Timeout)` (timed out, the
/// documented result) after 1 s and within 1 s + 1.5 s, while X's node still exists; their
/// next `leave(20 s)` returns `Ok(())` (all left, X's departure being its expiry) without
/// waiting for the deadline, and X's node and the `ready` node are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_member_crashes_before_leaving_others_honour_deadline() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let path = "/fault/dbarrier";
    let direct = connect(&server.connect_string(), RECIPE_SESSION).await;
    let x = proxied(&server, CRASHED_SESSION).await;
    let crashed = DoubleBarrier::new(&x.client, path, BARRIER_COUNT);
    let mut live_clients = Vec::new();
    for _ in 1..BARRIER_COUNT {
        live_clients.push(connect(&server.connect_string(), RECIPE_SESSION).await);
    }
    let live: Vec<DoubleBarrier> = live_clients
        .iter()
        .map(|c| DoubleBarrier::new(c, path, BARRIER_COUNT))
        .collect();

    // Everyone enters.
    let entering: Vec<_> = live
        .iter()
        .chain(std::iter::once(&crashed))
        .cloned()
        .map(|b| tokio::spawn(async move { b.enter(Some(WITHIN)).await }))
        .collect();
    for entered in entering {
        let entered = within("enter", WITHIN + MARGIN, entered)
            .await
            .expect("enter did not panic");
        assert_eq!(entered, Ok(()), "every member is in");
    }

    // X crashes: cut off, forgotten; its session lives on the server for 4 s.
    let crashed_node = crashed.node_path();
    x.proxy.isolate();
    drop(crashed);
    drop(x);

    // The others' leave honours its short deadline while X's node is still there.
    for (result, took) in leave_all(&live, SHORT).await {
        assert_eq!(
            result,
            Err(RecipeError::Timeout),
            "leave timed out: not everyone left"
        );
        assert_within(took, SHORT, MARGIN, "leave with a 1 s deadline");
    }
    assert!(
        direct
            .exists(&crashed_node)
            .await
            .expect("exists")
            .is_some(),
        "X's session is still alive: the timeouts were the deadline, not its departure"
    );

    // Leaving again completes once the server expired X's session.
    let again = Instant::now();
    for (result, took) in leave_all(&live, WITHIN).await {
        assert_eq!(result, Ok(()), "all left once X's session expired");
        assert!(took < WITHIN, "returned on X's expiry, not at the deadline");
    }
    eprintln!(
        "double barrier: all left {:?} after the second leave began",
        again.elapsed()
    );
    assert!(
        direct
            .exists(&crashed_node)
            .await
            .expect("exists")
            .is_none()
    );
    assert!(
        direct
            .exists(&format!("{path}/ready"))
            .await
            .expect("exists")
            .is_none(),
        "the last to leave removed `ready`"
    );
    for client in live_clients {
        client.close().await.expect("close");
    }
    direct.close().await.expect("close");
}

/// Scenario: member X (behind a proxy, 1 s session) enters a double barrier for 3 and waits;
/// then it crashes (proxy isolated). Once the server has expired X's session (its node is
/// gone), two live members enter with a 1 s deadline.
///
/// Pass criteria: X's own `enter` fails with `SessionExpired` (the documented result when the
/// session ends while waiting) instead of hanging; the live members' `enter(1 s)` returns
/// `Err(Timeout)` after 1 s and within 1 s + 1.5 s (X no longer counts, so only 2 of 3 are in),
/// and their nodes are deleted again: the barrier node has no children and no `ready`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_barrier_member_crashes_while_entering_others_honour_deadline() {
    let _serial = serial().await;
    let server = server(RECIPE_TICK).await;
    let path = "/fault/dbarrier-enter";
    let count = 3;
    let direct = connect(&server.connect_string(), RECIPE_SESSION).await;
    let x = proxied(&server, Duration::from_secs(1)).await;
    let crashed = DoubleBarrier::new(&x.client, path, count);
    let crashed_node = crashed.node_path();
    let waiting = tokio::spawn(async move { crashed.enter(None).await });
    wait_exists(&direct, &crashed_node, true, WITHIN).await;
    // The node exists, so enter has queued its three requests; a call made now is answered
    // after them. Once it is, X waits on its watch with nothing in flight (a reply still in
    // flight at the cut would fail enter with ConnectionLoss instead).
    x.client.exists("/").await.expect("exists");

    x.proxy.isolate();
    let entered = within("X's enter ends with its session", WITHIN, waiting)
        .await
        .expect("enter did not panic");
    assert_eq!(entered, Err(RecipeError::Zk(Error::SessionExpired)));
    wait_exists(&direct, &crashed_node, false, WITHIN).await;
    drop(x);

    let mut live_clients = Vec::new();
    for _ in 0..count - 1 {
        live_clients.push(connect(&server.connect_string(), RECIPE_SESSION).await);
    }
    let live: Vec<DoubleBarrier> = live_clients
        .iter()
        .map(|c| DoubleBarrier::new(c, path, count))
        .collect();
    let entering: Vec<_> = live
        .iter()
        .cloned()
        .map(|b| {
            tokio::spawn(async move {
                let started = Instant::now();
                (b.enter(Some(SHORT)).await, started.elapsed())
            })
        })
        .collect();
    for task in entering {
        let (result, took) = within("enter returns", SHORT + WITHIN, task)
            .await
            .expect("enter did not panic");
        assert_eq!(
            result,
            Err(RecipeError::Timeout),
            "only 2 of 3 are in: timed out"
        );
        assert_within(took, SHORT, MARGIN, "enter with a 1 s deadline");
    }
    // A timed-out enter queues the delete of its node and returns.
    for b in &live {
        wait_exists(&direct, &b.node_path(), false, WITHIN).await;
    }
    let children = direct.get_children(path).await.expect("children");
    assert!(
        children.is_empty(),
        "timed-out members removed their nodes, no ready: {children:?}"
    );
    for client in live_clients {
        client.close().await.expect("close");
    }
    direct.close().await.expect("close");
}

// ---------------------------------------------------------------------------------------------
// Deadlines while no server answers.
// ---------------------------------------------------------------------------------------------

/// Scenario: a session (8 s, behind a proxy) is cut off from its server: the proxy drops its
/// connection and refuses new ones, so every request waits for a reconnection that does not
/// come. Meanwhile the barrier, double barrier (enter and leave), start gate and queue (take
/// and bounded put) calls are made with a 1 s timeout, all at once.
///
/// Pass criteria: each returns `Err(Timeout)` after 1 s and within 1 s + 1.5 s, not when the
/// session or a request times out. Once the proxy lets the session back in (same session), the
/// double barrier and start gate nodes whose creates were queued while cut off are deleted
/// again (their deletes were queued after the creates), and the bounded put added nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timed_recipe_calls_return_at_their_deadline_while_no_server_answers() {
    use zk_recipes::barrier::{Barrier, StartGate};
    use zk_recipes::queue::BoundedQueue;

    let _serial = serial().await;
    // Tick 500 ms: sessions up to 10 s, so the cut-off one outlives the calls.
    let server = server(Duration::from_millis(500)).await;
    let direct = connect(&server.connect_string(), RECIPE_SESSION).await;
    let cut = proxied(&server, Duration::from_secs(8)).await;
    let client = cut.client.clone();

    let barrier = Barrier::new(&client, "/deadline/barrier");
    assert_eq!(barrier.set().await, Ok(true));
    let entering = DoubleBarrier::new(&client, "/deadline/dbarrier", 2);
    let leaving = DoubleBarrier::new(&client, "/deadline/dbarrier-leave", 2);
    let gate = StartGate::new(&client, "/deadline/gate", 2);
    let queue = Queue::new(&client, "/deadline/queue");
    let bounded_queue = BoundedQueue::new(&client, "/deadline/bounded", 1);
    bounded_queue
        .put(&b"first"[..], Some(WITHIN))
        .await
        .expect("put");
    // The parents exist, so what is queued while cut off is each call's own work.
    for path in ["/deadline/dbarrier", "/deadline/gate", "/deadline/queue"] {
        direct
            .create(path, "", &zk_proto::CreateOptions::persistent())
            .await
            .expect("create parent");
    }

    cut.proxy.isolate();
    wait_for_state(&client, SessionState::Disconnected, WITHIN).await;

    let calls = [
        (
            "barrier wait",
            timed({
                let b = barrier.clone();
                async move { format!("{:?}", b.wait(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "double barrier enter",
            timed({
                let b = entering.clone();
                async move { format!("{:?}", b.enter(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "double barrier leave",
            timed({
                let b = leaving.clone();
                async move { format!("{:?}", b.leave(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "start gate join",
            timed({
                let g = gate.clone();
                async move { format!("{:?}", g.join(Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
        (
            "queue take",
            timed({
                let q = queue.clone();
                async move { format!("{:?}", q.take(Some(SHORT)).await.map(|i| i.name)) }
            }),
            "Err(Timeout)",
        ),
        (
            "bounded queue put",
            timed({
                let q = bounded_queue.clone();
                async move { format!("{:?}", q.put(&b"second"[..], Some(SHORT)).await) }
            }),
            "Err(Timeout)",
        ),
    ];
    for (name, call, expected) in calls {
        let (outcome, took) = within(name, SHORT + WITHIN, call).await.expect(name);
        assert_eq!(outcome, expected, "{name}");
        assert_within(took, SHORT, MARGIN, name);
    }
    assert_eq!(client.state(), SessionState::Disconnected, "still cut off");

    // Back in: what was queued runs in order, the withdrawing deletes after the creates.
    cut.proxy.restore();
    wait_for_state(&client, SessionState::Connected, WITHIN).await;
    wait_exists(&direct, &entering.node_path(), false, WITHIN).await;
    wait_exists(&direct, &gate.node_path(), false, WITHIN).await;
    // A request of the cut-off session made now is answered after everything queued before.
    client.sync("/deadline").await.expect("sync");
    assert_eq!(
        direct
            .get_children("/deadline/dbarrier")
            .await
            .expect("children"),
        Vec::<String>::new()
    );
    assert_eq!(
        direct
            .get_children("/deadline/gate")
            .await
            .expect("children"),
        Vec::<String>::new()
    );
    assert_eq!(
        direct
            .get_children("/deadline/bounded")
            .await
            .expect("children")
            .len(),
        1,
        "the timed-out put added nothing"
    );
    client.close().await.expect("close");
    direct.close().await.expect("close");
}

/// Spawns `call` and measures it from now: the task's result and how long it took.
fn timed(call: impl Future<Output = String> + Send + 'static) -> JoinHandle<(String, Duration)> {
    let started = Instant::now();
    tokio::spawn(async move {
        let outcome = call.await;
        (outcome, started.elapsed())
    })
}
