//! Our barriers ([`Barrier`], [`DoubleBarrier`]) share the layout of Curator's
//! `DistributedBarrier` and `DistributedDoubleBarrier` (Curator 5.4): proven against Curator
//! processes (`tests/curator/CuratorBarrier.java`) on one real server. A barrier set by one
//! side holds the other's waiters and its removal releases them; Curator's and our
//! participants enter and leave one double barrier together, round after round.

mod curator_support;

use std::time::Duration;

use curator_support::curator_program;
use zk_recipes::barrier::{Barrier, DoubleBarrier};
use zk_testkit::client::{
    blocking, children, connect, eventually, join, start_server, wait_children,
};
use zk_testkit::line_program::LineProgram;
use zk_testkit::{FOUR_LETTER_TIMEOUT, four_letter};

/// Bound of every wait.
const LIMIT: Duration = Duration::from_secs(60);
const WAIT: Option<Duration> = Some(LIMIT);

/// A running `CuratorBarrier.java` (one Curator session). Killed when dropped.
struct CuratorBarrier {
    program: LineProgram,
}

impl CuratorBarrier {
    async fn start(connect_string: &str, path: &str) -> Self {
        let mut command = curator_program("CuratorBarrier");
        command.args([connect_string, path]);
        let mut program = LineProgram::spawn(command, "the Curator process", LIMIT);
        assert_eq!(program.reply("start").await, "ready");
        Self { program }
    }

    /// Sends a command without waiting for its reply.
    async fn send(&mut self, command: &str) {
        self.program.send(command).await;
    }

    /// The next reply.
    async fn reply(&mut self) -> String {
        self.program.reply("a reply").await
    }

    async fn call(&mut self, command: &str) -> String {
        self.program.call(command).await
    }

    async fn quit(mut self) {
        self.send("quit").await;
        self.program.wait_success().await;
    }
}

/// Waits until `n` sessions watch `path` on the server (its `wchp` four-letter command).
async fn wait_watchers(server: &zk_testkit::ZkServer, path: &'static str, n: usize) {
    let addr = server.addr();
    eventually("the waiters' watches", LIMIT, || async move {
        let Ok(answer) = blocking(move || four_letter(addr, "wchp", FOUR_LETTER_TIMEOUT)).await
        else {
            return false;
        };
        let mut lines = answer.lines().skip_while(|line| *line != path).skip(1);
        let mut sessions = 0;
        while lines.next().is_some_and(|line| line.starts_with('\t')) {
            sessions += 1;
        }
        sessions >= n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_barrier_set_by_either_side_holds_the_others_waiters() {
    let server = start_server().await;
    let connect_string = server.connect_string();
    let client = connect(&connect_string).await;
    let mut curator = CuratorBarrier::start(&connect_string, "/b/gate").await;
    let ours = Barrier::new(&client, "/b/gate");

    // Curator sets, we wait, Curator removes: our waiter returns.
    assert_eq!(curator.call("set").await, "ok");
    assert!(!ours.set().await.expect("set"), "already set by Curator");
    let waiter = {
        let ours = ours.clone();
        tokio::spawn(async move { ours.wait(WAIT).await })
    };
    // Our waiter's exists watch is on the set barrier: it waits.
    wait_watchers(&server, "/b/gate", 1).await;
    assert!(
        !waiter.is_finished(),
        "our wait returned while the barrier was set"
    );
    assert_eq!(curator.call("remove").await, "ok");
    join("our waiter", LIMIT, waiter)
        .await
        .expect("released by Curator's remove");

    // We set, Curator waits, we remove: Curator's waiter returns.
    assert!(ours.set().await.expect("set"));
    curator.send("wait").await;
    // Curator's waitOnBarrier holds once its exists watch is on the set barrier.
    wait_watchers(&server, "/b/gate", 1).await;
    ours.remove().await.expect("remove");
    assert_eq!(curator.reply().await, "waited true");
    curator.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_our_participants_enter_and_leave_one_double_barrier() {
    const ROUNDS: usize = 3;
    let server = start_server().await;
    let connect_string = server.connect_string();
    let observer = connect(&connect_string).await;
    let clients = [
        connect(&connect_string).await,
        connect(&connect_string).await,
    ];
    let mut curators = [
        CuratorBarrier::start(&connect_string, "/b/double").await,
        CuratorBarrier::start(&connect_string, "/b/double").await,
    ];
    for round in 0..ROUNDS {
        // Three of four enter: two Curator participants and one of ours. Nobody is in yet.
        for curator in &mut curators {
            curator.send("enter 4").await;
        }
        let first = DoubleBarrier::new(&clients[0], "/b/double", 4);
        let entering = {
            let first = first.clone();
            tokio::spawn(async move { first.enter(WAIT).await })
        };
        let three = wait_children(&observer, "/b/double", LIMIT, "three participants", |c| {
            c.len() == 3
        })
        .await;
        assert!(
            !three.iter().any(|c| c == "ready"),
            "round {round}: ready with three"
        );
        // The fourth (ours) lets everyone in.
        let second = DoubleBarrier::new(&clients[1], "/b/double", 4);
        second.enter(WAIT).await.expect("enter");
        join("our first participant", LIMIT, entering)
            .await
            .expect("enter");
        for curator in &mut curators {
            assert_eq!(curator.reply().await, "entered true", "round {round}");
        }
        let inside = children(&observer, "/b/double").await;
        assert_eq!(inside.len(), 5, "four participants and ready: {inside:?}");

        // Everyone leaves at once; everyone returns once all have left.
        for curator in &mut curators {
            curator.send("leave").await;
        }
        let leaving: Vec<_> = [first, second]
            .into_iter()
            .map(|participant| tokio::spawn(async move { participant.leave(WAIT).await }))
            .collect();
        for task in leaving {
            join("our participant's leave", LIMIT, task)
                .await
                .expect("leave");
        }
        for curator in &mut curators {
            assert_eq!(curator.reply().await, "left true", "round {round}");
        }
        wait_children(&observer, "/b/double", LIMIT, "an empty barrier", |c| {
            c.is_empty()
        })
        .await;
    }
    for curator in curators {
        curator.quit().await;
    }
}
