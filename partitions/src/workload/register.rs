//! A versioned register: one node's data, read (after a `sync`), written and compare-and-set
//! (`setData` with the version last seen) by two clients on each side; the history is checked
//! for linearizability (`zk_history::linearizability`, model `Register`).
//!
//! Writes and compare-and-sets go through the leader's total order: their history alone must
//! be linearizable, under every fault (a violation is a broken promise). Reads are served by the
//! client's server; ZooKeeper promises sequential consistency for them, not linearizability,
//! and a `sync` first does not make a read linearizable behind a server that lost its leader
//! without knowing yet. So the whole history (reads included) is checked too and a failure
//! there is reported as stale reads, with the operation that could not be placed, not as a
//! broken promise (docs/partitions.md).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use zk_history::models::{Register, RegisterOp, RegisterRet};
use zk_history::{OpHandle, Recorder};
use zk_proto::{Client, CreateOptions, Error};

use super::linear::LinearRun;
use super::{Finished, Workload};
use crate::world::World;

const NODE: &str = "/partitions-register";
/// Bounds each operation: past it the outcome is unknown.
const OP_TIMEOUT: Duration = Duration::from_secs(5);

type Ops = RegisterOp<i64>;
type Rets = RegisterRet<i64>;

/// The register workload.
#[derive(Default)]
pub struct RegisterWorkload {
    run: Option<LinearRun<Ops, Rets>>,
}

impl Workload for RegisterWorkload {
    fn name(&self) -> &'static str {
        "register"
    }

    fn start(&mut self, world: &World, stop: watch::Receiver<bool>) -> Result<(), String> {
        let setup = world.b().connect(&world.bed)?;
        world.b().runtime.block_on(async {
            match setup.create(NODE, "0", &CreateOptions::persistent()).await {
                Ok(_) => Ok(()),
                Err(e) => Err(format!("creating {NODE}: {e}")),
            }
        })?;
        drop(setup);
        let values = Arc::new(AtomicU64::new(1));
        self.run = Some(LinearRun::start(
            world,
            &stop,
            move |client, process, recorder, stop| {
                worker(client, process, recorder, values.clone(), stop)
            },
        )?);
        Ok(())
    }

    fn finish(self: Box<Self>, world: &World, _fault_at: Duration) -> Result<Finished, String> {
        self.run.ok_or("not started")?.finish(
            world,
            &Register::new(0_i64),
            |op| !matches!(op, RegisterOp::Read),
            // Each setData increments the node's version: a version is acknowledged once.
            |ret| match ret {
                RegisterRet::Written { version } => Some(format!("version {version}")),
                RegisterRet::Read { .. } => None,
            },
        )
    }
}

/// One client's loop: a random operation at a time until `stop`.
async fn worker(
    client: Client,
    process: u64,
    recorder: Recorder<Ops, Rets>,
    values: Arc<AtomicU64>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(process + 1);
    let mut version = 0;
    while !*stop.borrow() {
        let choice = rng.u8(0..3);
        let value = values.fetch_add(1, Ordering::Relaxed) as i64;
        let op = match choice {
            0 => RegisterOp::Read,
            1 => RegisterOp::Write(value),
            _ => RegisterOp::Cas {
                expected_version: version,
                value,
            },
        };
        let handle = recorder.invoke(process, op.clone());
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(OP_TIMEOUT, apply(&client, &op)) => outcome,
            _ = stop.wait_for(|stop| *stop) => {
                handle.unknown();
                break;
            }
        };
        match outcome {
            Ok(Ok(ret)) => {
                version = match &ret {
                    RegisterRet::Read { version, .. } | RegisterRet::Written { version } => {
                        *version
                    }
                };
                handle.ok(ret);
            }
            Ok(Err(error)) => settle(handle, &error),
            // Timed out: the request may still be applied.
            Err(_) => handle.unknown(),
        }
        // A failure may repeat at once (no server): do not spin.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(client);
    Ok(())
}

/// Records a failed operation: a definite failure only when the server said so.
fn settle(handle: OpHandle<Ops, Rets>, error: &Error) {
    match error {
        Error::BadVersion | Error::NoNode => handle.fail(),
        _ => handle.unknown(),
    }
}

async fn apply(client: &Client, op: &Ops) -> Result<Rets, Error> {
    match op {
        RegisterOp::Read => {
            client.sync(NODE).await?;
            let (data, stat) = client.get_data(NODE).await?;
            let value = std::str::from_utf8(&data)
                .ok()
                .and_then(|text| text.parse().ok())
                .ok_or_else(|| {
                    Error::InvalidArgument("the register's data is not a number".into())
                })?;
            Ok(RegisterRet::Read {
                value,
                version: stat.version,
            })
        }
        RegisterOp::Write(value) => {
            let stat = client.set_data(NODE, value.to_string(), None).await?;
            Ok(RegisterRet::Written {
                version: stat.version,
            })
        }
        RegisterOp::Cas {
            expected_version,
            value,
        } => {
            let stat = client
                .set_data(NODE, value.to_string(), Some(*expected_version))
                .await?;
            Ok(RegisterRet::Written {
                version: stat.version,
            })
        }
    }
}
