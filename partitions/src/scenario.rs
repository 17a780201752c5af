//! The faults: what each scenario does to the ensemble and the clients, and where it puts the
//! two sides of clients.
//!
//! Side A is the side the fault hits (its clients dial only the servers the scenario gives
//! them); side B dials the rest of the ensemble and carries on. Every fault starts at a random
//! moment (up to a second after the workload has settled) and lasts longer than a session, so
//! that the ensemble expires side A's sessions while side A may not know yet.

use std::time::Duration;

use clap::ValueEnum;
use zk_testkit::partition::{Node, PartitionBedBuilder, random_pause};

use crate::world::{SESSION, World};

/// A fault scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// A follower cut off from the leader (and the other follower) but not from its clients:
    /// side A is behind it.
    FollowerCut,
    /// The leader alone in the minority, with side A's clients on it and side B's on the
    /// majority, which elects a new leader.
    LeaderMinority,
    /// Side A cut from every server.
    ClientCut,
    /// Five servers: {0,1} and {3,4} cut from each other, server 2 sees both (a nontransitive
    /// partition). Side A on server 0, side B on server 4.
    Bridge,
    /// Side A's server paused (SIGSTOP) for longer than a session, then resumed.
    ServerPause,
    /// Side A's process paused for longer than a session (its runtime frozen, as a
    /// stop-the-world pause: no timer, no read, no write; side A's Curator JVM stopped with
    /// SIGSTOP), then resumed.
    ClientPause,
    /// Side A's follower cut off; meanwhile the other two servers are restarted one after the
    /// other (the leader last); then healed.
    RollingRestart,
    /// The leader's packets to side A's follower dropped, one way only (the follower's still
    /// reach the leader): the follower stops hearing its leader while the leader hears it.
    OneWay,
    /// Side A's follower cut off, and removed from the ensemble by a `reconfig` while cut
    /// (the majority commits it); healed, then added back by a second `reconfig`.
    Reconfig,
}

impl Scenario {
    /// Every scenario, in the order the suite runs them.
    pub const ALL: [Scenario; 9] = [
        Scenario::FollowerCut,
        Scenario::LeaderMinority,
        Scenario::ClientCut,
        Scenario::Bridge,
        Scenario::ServerPause,
        Scenario::ClientPause,
        Scenario::RollingRestart,
        Scenario::OneWay,
        Scenario::Reconfig,
    ];

    /// The scenario's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::FollowerCut => "follower-cut",
            Scenario::LeaderMinority => "leader-minority",
            Scenario::ClientCut => "client-cut",
            Scenario::Bridge => "bridge",
            Scenario::ServerPause => "server-pause",
            Scenario::ClientPause => "client-pause",
            Scenario::RollingRestart => "rolling-restart",
            Scenario::OneWay => "one-way",
            Scenario::Reconfig => "reconfig",
        }
    }

    /// The bed's settings the scenario needs beyond the suite's: dynamic reconfiguration for
    /// [`Scenario::Reconfig`] (with ACLs skipped, so any client may `reconfig`).
    pub fn configure(self, bed: PartitionBedBuilder) -> PartitionBedBuilder {
        match self {
            Scenario::Reconfig => bed
                .config("reconfigEnabled", "true")
                .system_property("zookeeper.skipACL", "yes"),
            _ => bed,
        }
    }

    /// How many servers the scenario needs.
    pub fn servers(self) -> usize {
        match self {
            Scenario::Bridge => 5,
            _ => 3,
        }
    }

    /// Whether the runs place the leader on each server in turn (3-server scenarios whose
    /// fault depends on where the leader is).
    pub fn rotates_leader(self) -> bool {
        self.servers() == 3
    }

    /// The servers side A and side B dial, given the current leader.
    pub fn placement(self, leader: usize) -> (Vec<usize>, Vec<usize>) {
        let follower = (leader + 1) % 3;
        let other = (leader + 2) % 3;
        match self {
            Scenario::FollowerCut
            | Scenario::ServerPause
            | Scenario::RollingRestart
            | Scenario::OneWay
            | Scenario::Reconfig => (vec![follower], vec![leader, other]),
            Scenario::LeaderMinority => (vec![leader], vec![follower, other]),
            Scenario::ClientCut | Scenario::ClientPause => (vec![0, 1, 2], vec![0, 1, 2]),
            Scenario::Bridge => (vec![0], vec![4]),
        }
    }

    /// Why unsafe windows of `workload` are expected under this scenario, when they are (the
    /// docs say the same); `None`: every window is a broken promise.
    pub fn explains(self, workload: &str) -> Option<&'static str> {
        match (self, workload) {
            (_, "curator-lock" | "curator-latch") => Some(
                "Curator's recipes, run beside ours: measured, not our promise (Curator has no \
                 quorum check, and a frozen process is frozen in any library)",
            ),
            (Scenario::ClientPause, "session" | "lock" | "latch" | "master" | "lock-process") => {
                Some(
                    "a frozen process cannot learn anything while frozen: the ensemble expires its \
                 session and grants the lock to another; only the fencing token protects the \
                 resource (its late writes are refused)",
                )
            }
            _ => None,
        }
    }

    /// How long the fault lasts: longer than a session, and for a cut server longer than
    /// `syncLimit` (5 ticks), so that it gives up on its leader.
    pub fn hold(self) -> Duration {
        match self {
            Scenario::ClientCut | Scenario::ServerPause | Scenario::ClientPause => SESSION * 2,
            _ => SESSION * 2 + SESSION / 2,
        }
    }

    /// Injects the fault (blocking: the main thread runs it while the workloads run on the
    /// sides' runtimes), holds it, and undoes it. Every step is noted in the world's fault
    /// log. Returns when the fault began, on the run's clock.
    pub fn inject(self, world: &World, leader: usize) -> Result<Duration, String> {
        let bed = &world.bed;
        let hold = self.hold();
        std::thread::sleep(random_pause());
        fn e(what: &'static str) -> impl Fn(zk_testkit::Error) -> String {
            move |error| format!("{what}: {error}")
        }
        // When the fault is fully in force (a cut's rules go into several namespaces, which
        // takes a while): the run's clock reads it when its note is taken.
        let began = match self {
            Scenario::FollowerCut => {
                let follower = world.a().servers[0];
                bed.isolate_from_servers(follower)
                    .map_err(e("isolating the follower"))?;
                let began = world.note(format!("cut follower {follower} from the other servers"));
                std::thread::sleep(hold);
                began
            }
            Scenario::LeaderMinority => {
                bed.isolate_from_servers(leader)
                    .map_err(e("isolating the leader"))?;
                let began = world.note(format!("cut leader {leader} from the other servers"));
                std::thread::sleep(hold);
                began
            }
            Scenario::ClientCut => {
                for i in 0..bed.len() {
                    bed.cut(Node::Client(&world.a().namespace), Node::Server(i))
                        .map_err(e("cutting side A"))?;
                }
                let began = world.note("cut side A from every server");
                std::thread::sleep(hold);
                began
            }
            Scenario::Bridge => {
                for left in [0, 1] {
                    for right in [3, 4] {
                        bed.cut(Node::Server(left), Node::Server(right))
                            .map_err(e("cutting the bridge"))?;
                    }
                }
                let began = world.note("cut {0,1} from {3,4}; server 2 sees both");
                std::thread::sleep(hold);
                began
            }
            Scenario::ServerPause => {
                let server = world.a().servers[0];
                bed.pause_server(server).map_err(e("pausing"))?;
                let began = world.note(format!("paused server {server} (SIGSTOP)"));
                std::thread::sleep(hold);
                bed.resume_server(server).map_err(e("resuming"))?;
                world.note(format!("resumed server {server}"));
                began
            }
            Scenario::ClientPause => {
                world.a().freeze(hold);
                world.signal_side_a("STOP")?;
                let began = world.note(format!(
                    "froze side A for {} ms (its runtime, and its Curator JVM by SIGSTOP)",
                    hold.as_millis()
                ));
                std::thread::sleep(hold);
                world.signal_side_a("CONT")?;
                world.note("side A runs again");
                began
            }
            Scenario::RollingRestart => {
                let follower = world.a().servers[0];
                let other = (0..3)
                    .find(|&i| i != follower && i != leader)
                    .ok_or("no other follower")?;
                bed.isolate_from_servers(follower)
                    .map_err(e("isolating the follower"))?;
                let began = world.note(format!("cut follower {follower} from the other servers"));
                for server in [other, leader] {
                    world.note(format!("restarting server {server}"));
                    bed.restart_server(server)
                        .map_err(e("restarting a server"))?;
                    world.note(format!("server {server} serves again"));
                }
                std::thread::sleep(SESSION);
                began
            }
            Scenario::OneWay => {
                let follower = world.a().servers[0];
                bed.cut_one_way(Node::Server(leader), Node::Server(follower))
                    .map_err(e("cutting the leader's packets to the follower"))?;
                let began = world.note(format!(
                    "dropped leader {leader}'s packets to follower {follower} (one way)"
                ));
                std::thread::sleep(hold);
                began
            }
            Scenario::Reconfig => {
                let follower = world.a().servers[0];
                bed.isolate_from_servers(follower)
                    .map_err(e("isolating the follower"))?;
                let began = world.note(format!("cut follower {follower} from the other servers"));
                let admin = world.b().connect(bed)?;
                let id = follower as u64 + 1;
                let ip = bed.server_addr(follower).ip();
                let line = format!("server.{id}={ip}:2888:3888:participant;{ip}:2181");
                let runtime = &world.b().runtime;
                reconfig(runtime, &admin, Vec::new(), vec![id])
                    .map_err(|error| format!("removing server {id}: {error}"))?;
                world.note(format!("reconfig: removed server {id} (index {follower})"));
                std::thread::sleep(SESSION);
                bed.heal().map_err(e("healing"))?;
                world.note("healed");
                reconfig(runtime, &admin, vec![line], Vec::new())
                    .map_err(|error| format!("adding server {id} back: {error}"))?;
                world.note(format!("reconfig: added server {id} back"));
                began
            }
        };
        bed.heal().map_err(e("healing"))?;
        world.note("healed");
        Ok(began)
    }
}

/// Runs an incremental `reconfig` through `admin`, retrying while the ensemble is busy with
/// another change or has no quorum for the new configuration yet (bounded).
fn reconfig(
    runtime: &tokio::runtime::Runtime,
    admin: &zk_proto::Client,
    joining: Vec<String>,
    leaving: Vec<u64>,
) -> Result<(), String> {
    runtime.block_on(async {
        let deadline = std::time::Instant::now() + crate::world::LIMIT;
        loop {
            let call = admin.reconfig_incremental(joining.clone(), leaving.clone(), None);
            match call.await {
                Ok(_) => return Ok(()),
                Err(error)
                    if (error.is_retryable()
                        || matches!(
                            error,
                            zk_proto::Error::ReconfigInProgress
                                | zk_proto::Error::NewConfigNoQuorum
                        ))
                        && std::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error.to_string()),
            }
        }
    })
}
