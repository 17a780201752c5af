//! `barrier PATH N [-- COMMAND...]` (a double barrier: enter together, run, leave together)
//! and `gate PATH N` (the start gate: wait until N joined) / `gate --reset PATH`.

use std::time::Duration;

use serde_json::json;
use zk_proto::Client;
use zk_recipes::barrier::{DoubleBarrier, StartGate};

use crate::cli::{BarrierArgs, GateArgs};
use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::Output;
use crate::supervise::{Job, Policy, Signals, interrupted, supervise};

/// A recipe error of `what`, with the timeout named when it is one.
fn failure(what: &str, timeout: Option<Duration>, error: &zk_recipes::Error) -> Failure {
    match error {
        zk_recipes::Error::Timeout => Failure::new(
            ExitClass::Timeout,
            format!(
                "{what}: not done within {:?} (--timeout)",
                timeout.unwrap_or_default()
            ),
        ),
        other => Failure::recipe(what, other),
    }
}

/// `barrier [--timeout D] PATH N [-- COMMAND...]`: enters, runs the command (if any) once N
/// members entered, then leaves and waits until all left. Exits with the command's status.
pub(super) async fn barrier(client: &Client, args: &BarrierArgs, out: Output) -> Outcome {
    let path = &args.path;
    let mut signals = Signals::new()?;
    let barrier = DoubleBarrier::new(client, path, args.count);
    let what = format!("barrier {path}");
    tokio::select! {
        entered = barrier.enter(args.timeout) => {
            entered.map_err(|e| failure(&what, args.timeout, &e))?;
        }
        signal = signals.recv() => {
            say!("interrupted while waiting at {path}");
            return Ok(interrupted(signal));
        }
    }
    if out.verbose {
        say!("{} members entered {path}", args.count);
    }
    let mut code = 0;
    if !args.command.is_empty() {
        let job = Job {
            command: &args.command,
            env: vec![("RZK_BARRIER_PATH".into(), path.clone())],
            policy: Policy::Warn,
            verbose: out.verbose,
        };
        code = supervise(&job, &mut signals, std::future::pending())
            .await?
            .exit_code();
    }
    barrier
        .leave(args.timeout)
        .await
        .map_err(|e| failure(&what, args.timeout, &e))?;
    Ok(code)
}

/// `gate [--timeout D] PATH N`: joins and waits until N members joined; `gate --reset PATH`
/// deletes the start node for another round.
pub(super) async fn gate(client: &Client, args: &GateArgs, out: Output) -> Outcome {
    let path = &args.path;
    let what = format!("gate {path}");
    let Some(count) = args.count.filter(|_| !args.reset) else {
        let reset = StartGate::new(client, path, 0)
            .reset()
            .await
            .map_err(|e| failure(&what, None, &e))?;
        if out.json {
            out.json(&json!({ "path": path, "reset": reset }))?;
        }
        return Ok(0);
    };
    let mut signals = Signals::new()?;
    let gate = StartGate::new(client, path, count);
    let started = tokio::select! {
        started = gate.join(args.timeout) => started.map_err(|e| failure(&what, args.timeout, &e))?,
        signal = signals.recv() => {
            say!("interrupted while waiting at {path}");
            return Ok(interrupted(signal));
        }
    };
    if out.json {
        out.json(&json!({
            "path": path,
            "started": true,
            "created_start": started.created_start,
        }))?;
    } else if out.verbose {
        say!("{path} started ({count} members)");
    }
    Ok(0)
}
