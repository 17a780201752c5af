//! `watch [-R] [--count N] PATH`: a persistent (recursive) watch, one line or JSON object per
//! event, until interrupted. The session's quorum check runs meanwhile, so that a server cut
//! off from the leader (which would silently stop reporting changes) is left and said.

use zk_proto::{AddWatchMode, Client, EventType, KeeperState};

use super::zk_failure;
use crate::exit::Outcome;
use crate::output::{EventJson, Output, event_line};
use crate::supervise::Signals;

/// Streams the events of `path` (its subtree with `recursive`) until SIGINT, SIGTERM or
/// SIGHUP (exit 0), `count` events, or the session's end (exit 6).
pub(super) async fn watch(
    client: &Client,
    path: &str,
    recursive: bool,
    count: Option<u64>,
    out: Output,
) -> Outcome {
    let mut signals = Signals::new()?;
    // A server cut off from the leader stops getting changes: the check leaves it within half
    // the session timeout, and the watcher hears "connection lost".
    let _quorum = client.quorum_check();
    let mode = if recursive {
        AddWatchMode::PERSISTENT_RECURSIVE
    } else {
        AddWatchMode::PERSISTENT
    };
    let mut watcher = client
        .add_watch(path, mode)
        .await
        .map_err(|e| zk_failure("watch", path, &e))?;
    let mut seen = 0u64;
    if out.verbose {
        say!(
            "watching {path}{}",
            if recursive { " and its subtree" } else { "" }
        );
    }
    loop {
        tokio::select! {
            event = watcher.next() => {
                let event = event.map_err(|e| zk_failure("watch", path, &e))?;
                // The client tells a persistent watcher when its connection goes and comes
                // back (same session, watch re-armed): said on stderr, not counted.
                if event.event_type == EventType::NONE {
                    say!(
                        "{}",
                        if event.state == KeeperState::DISCONNECTED {
                            "connection lost: changes made until it is back are not reported"
                        } else {
                            "connection back, same session: watching again"
                        }
                    );
                    continue;
                }
                if out.json {
                    out.json(&EventJson::from(&event))?;
                } else {
                    out.line(&event_line(&event))?;
                }
                seen += 1;
                if count.is_some_and(|n| seen >= n) {
                    return Ok(0);
                }
            }
            _ = signals.recv() => return Ok(0),
        }
    }
}
