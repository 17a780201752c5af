//! `leader PATH -- COMMAND...`: stand in a leader election (a Curator-compatible latch), run
//! the command while leading, stop it when the leadership is lost, and stand again.

use zk_proto::{Client, SessionState};
use zk_recipes::election::{LeaderLatch, Leadership};

use crate::cli::LeaderArgs;
use crate::connect::Connector;
use crate::exit::{Failure, Outcome};
use crate::output::{Output, session_hex};
use crate::supervise::{Ended, Job, Policy, Signals, interrupted, supervise};

/// The default candidate id: `HOSTNAME:PID`.
pub(super) fn default_id() -> String {
    let uname = rustix::system::uname();
    format!(
        "{}:{}",
        uname.nodename().to_string_lossy(),
        std::process::id()
    )
}

/// How one session's part in the election ended.
enum Round {
    /// rzk is done, with this outcome.
    Exit(Outcome),
    /// The session ended: stand again with a new one.
    NewSession,
}

/// `leader [--id ID] [--exit-on-loss] [--on-loss stop|warn] [--grace D] PATH -- COMMAND...`.
pub(super) async fn leader(
    client: Client,
    connector: &Connector,
    args: &LeaderArgs,
    out: Output,
) -> Outcome {
    let id = args.id.clone().unwrap_or_else(default_id);
    let mut signals = Signals::new()?;
    let mut client = client;
    let mut first = true;
    loop {
        if !first {
            client = tokio::select! {
                client = connector.reconnect() => client?,
                signal = signals.recv() => return Ok(interrupted(signal)),
            };
        }
        let round = stand(&client, args, &id, &mut signals, out).await;
        if !first {
            client.close().await.ok();
        }
        first = false;
        match round {
            Round::Exit(outcome) => return outcome,
            Round::NewSession => {
                say!(
                    "the session for {} ended; standing again with a new one",
                    args.path
                );
            }
        }
    }
}

/// Stands in the election with `client`'s session until rzk is done or the session ends.
async fn stand(
    client: &Client,
    args: &LeaderArgs,
    id: &str,
    signals: &mut Signals,
    out: Output,
) -> Round {
    let path = &args.path;
    let latch = LeaderLatch::builder(client, path, id.to_owned()).start();
    let leadership = latch.leadership();
    let round = loop {
        let waited = tokio::select! {
            waited = leadership.wait_leader(None) => waited,
            signal = signals.recv() => {
                break Round::Exit(Ok(interrupted(signal)));
            }
        };
        match waited {
            Ok(()) => {}
            Err(zk_recipes::Error::Zk(zk_proto::Error::SessionExpired)) => break Round::NewSession,
            Err(e) => break Round::Exit(Err(Failure::recipe(&format!("leader {path}"), &e))),
        }
        // The leadership's fencing token: our node's czxid, which grows from one leader to
        // the next. No node any more: the leadership is already gone; look again.
        let token = match latch.fencing_token().await {
            Ok(Some(token)) if latch.is_leader() => token,
            Ok(_) => continue,
            Err(zk_recipes::Error::Zk(zk_proto::Error::SessionExpired)) => break Round::NewSession,
            Err(zk_recipes::Error::Zk(e)) if e.is_retryable() => continue,
            Err(e) => break Round::Exit(Err(Failure::recipe(&format!("leader {path}"), &e))),
        };
        if out.verbose {
            say!("leading {path} as {id} (fencing token {token})");
        }
        let job = Job {
            command: &args.command,
            env: vec![
                ("RZK_LEADER_PATH".into(), path.clone()),
                ("RZK_LEADER_ID".into(), id.to_owned()),
                ("RZK_FENCING_TOKEN".into(), token.to_string()),
                ("RZK_SESSION_ID".into(), session_hex(client.session_id())),
            ],
            policy: Policy::from(&args.supervision),
            verbose: out.verbose,
        };
        match supervise(&job, signals, lost(&leadership, client, path)).await {
            Ok(Ended::Stopped { .. }) if !args.exit_on_loss => {
                say!("standing again for {path}");
            }
            Ok(ended) => break Round::Exit(Ok(ended.exit_code())),
            Err(failure) => break Round::Exit(Err(failure)),
        }
    };
    // Leaving the election deletes our node: the next candidate leads at once. Without a
    // connection there is nothing to wait for: the node goes with the session, which the
    // ensemble ends (the command is stopped already).
    if client.state() == SessionState::Connected {
        latch.close().await.ok();
    }
    round
}

/// Resolves when the leadership is lost, with a sentence saying why.
async fn lost(leadership: &Leadership, client: &Client, path: &str) -> String {
    // An error is a timeout, and there is none.
    let _ = leadership.wait_lost(None).await;
    let why = match client.state() {
        SessionState::Expired => "the session expired",
        SessionState::Closed => "the session was closed",
        SessionState::AuthFailed => "authentication failed",
        SessionState::Connected => "our node is gone",
        _ => "connection lost; the session may expire",
    };
    format!("the leadership of {path} is lost ({why})")
}
