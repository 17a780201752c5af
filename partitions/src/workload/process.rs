//! Our lock in a process of its own, so that a pause of the client is a SIGSTOP of a real
//! process (the `client-pause` scenario): the `partitions` binary run as
//! `partitions --worker lock ...` in side A's or side B's namespace runs the same worker loop as
//! the in-process `lock` workload ([`super::lock::worker`]) and reports each hold and write as a
//! line on its output, in the protocol of Curator's worker (`<slot> H <token> <ns>`, `<slot> W
//! <token>`, `<slot> E <0|1> <ns>`, where `<ns>` is the system's monotonic clock when the belief
//! began or ended, [`monotonic_now`]), which the suite relays into its fenced store
//! ([`super::curator`]). It ends when its standard input closes.

use std::io::Write;
use std::time::Duration;

use tokio::sync::watch;
use zk_proto::Client;

use super::fenced::{HeldTerm, Holder, WRITES, monotonic_now};

/// A slot of the worker process: its holds go to standard output.
#[derive(Clone)]
struct LineHolder {
    slot: usize,
    writes: usize,
}

/// A hold of a [`LineHolder`].
struct LineTerm {
    slot: usize,
    token: i64,
}

/// One line on standard output, flushed at once.
fn say(line: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

impl Holder for LineHolder {
    type Term = LineTerm;

    fn begin(&self, token: i64) -> LineTerm {
        let at = monotonic_now().as_nanos();
        say(format_args!("{} H {token} {at}", self.slot));
        LineTerm {
            slot: self.slot,
            token,
        }
    }

    fn writes(&self) -> usize {
        self.writes
    }
}

impl HeldTerm for LineTerm {
    fn write(&self) {
        say(format_args!("{} W {}", self.slot, self.token));
    }

    fn end(self, by_recipe: bool) {
        let at = monotonic_now().as_nanos();
        say(format_args!("{} E {} {at}", self.slot, u8::from(by_recipe)));
    }
}

/// The worker process: `slots` clients of `connect` (sessions of `session`), each running the
/// lock workload's loop with `side`'s writes per hold, until standard input closes.
pub fn run_lock_worker(
    connect: &str,
    slots: usize,
    side: usize,
    session: Duration,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("a runtime: {e}"))?;
    let writes = WRITES.get(side).copied().ok_or("side is 0 or 1")?;
    runtime.block_on(async {
        let (stop_tx, stop) = watch::channel(false);
        // Standard input closing is the signal to stop.
        std::thread::spawn(move || {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
            let _ = stop_tx.send(true);
        });
        let mut tasks = Vec::new();
        for slot in 0..slots {
            let client = Client::builder()
                .session_timeout(session)
                .follow_ensemble(false)
                .renew_expired_sessions(true)
                .connect(connect)
                .await
                .map_err(|e| format!("connect to {connect}: {e}"))?;
            let me = LineHolder { slot, writes };
            tasks.push(tokio::spawn(super::lock::worker(client, me, stop.clone())));
        }
        for task in tasks {
            task.await.map_err(|e| format!("a slot: {e}"))??;
        }
        Ok(())
    })
}
