//! The counter (`zk_recipes::counter::AtomicLong`, Curator's `DistributedAtomicLong`): two
//! clients on each side increment it and read it; the history is checked for linearizability
//! (`zk_history`'s `Counter` model, increments only).
//!
//! An increment is a compare-and-set loop through the leader's total order: the increments'
//! history alone must be linearizable (a violation is a broken promise: a lost or doubled
//! increment, two increments returning one value). An increment that ran out of optimistic
//! tries (`succeeded == false`) had no effect; one that ended in an error may have been
//! applied. Reads are served by the client's server (sequentially consistent, see
//! [`super::register`]): the whole history is checked too and a failure there is reported as
//! stale reads.

use std::time::Duration;

use tokio::sync::watch;
use zk_history::Recorder;
use zk_history::models::{Counter, CounterOp};
use zk_proto::Client;
use zk_recipes::counter::{AtomicLong, RetryPolicy};

use super::linear::LinearRun;
use super::{Finished, Workload};
use crate::world::World;

const PATH: &str = "/partitions-counter";
/// Bounds each operation: past it the outcome is unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(5);

/// The counter workload.
#[derive(Default)]
pub struct CounterWorkload {
    run: Option<LinearRun<CounterOp, i64>>,
}

impl Workload for CounterWorkload {
    fn name(&self) -> &'static str {
        "counter"
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        let setup = world.b().connect(&world.bed)?;
        world.b().runtime.block_on(async {
            AtomicLong::new(&setup, PATH, RetryPolicy::never())
                .initialize(0)
                .await
                .map_err(|e| format!("initializing {PATH}: {e}"))
        })?;
        drop(setup);
        self.run = Some(LinearRun::start(world, &stop, worker)?);
        Ok(())
    }

    fn finish(self: Box<Self>, world: &World, _fault_at: Duration) -> Result<Finished, String> {
        self.run.ok_or("not started")?.finish(
            world,
            &Counter::new(0).increment_only(),
            |op| matches!(op, CounterOp::Add(_)),
            // Each increment writes the value it read plus one, compare-and-set on the
            // version it read: a new value is acknowledged once.
            |value| Some(format!("value {value}")),
        )
    }
}

/// One client's loop: an increment or a read at a time until `stop`.
async fn worker(
    client: Client,
    process: u64,
    recorder: Recorder<CounterOp, i64>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let counter = AtomicLong::new(&client, PATH, RetryPolicy::never());
    let mut rng = fastrand::Rng::with_seed(process + 100);
    while !*stop.borrow() {
        let op = if rng.bool() {
            CounterOp::Add(1)
        } else {
            CounterOp::Get
        };
        let handle = recorder.invoke(process, op);
        let call = async {
            match op {
                CounterOp::Add(delta) => counter.add(delta).await,
                CounterOp::Get => counter.get().await,
            }
        };
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(OP_TIMEOUT, call) => outcome,
            _ = stop.wait_for(|stop| *stop) => {
                handle.unknown();
                break;
            }
        };
        match outcome {
            Ok(Ok(value)) if value.succeeded => handle.ok(value.post_value),
            // Out of optimistic tries: it had no effect.
            Ok(Ok(_)) => handle.fail(),
            // An error or a timeout: it may have been applied.
            Ok(Err(_)) | Err(_) => handle.unknown(),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(client);
    Ok(())
}
