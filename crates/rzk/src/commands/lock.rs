//! `lock` (a command run under a mutex; `--once MARKER` runs it once for all) and `locks`
//! (who holds a lock and who waits).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zk_proto::{Client, CreateOptions, Error};
use zk_recipes::election::LATCH_NAME;
use zk_recipes::lock::{Lock, LockGuard, MUTEX_NAME, READ_NAME, Validity, WRITE_NAME};
use zk_recipes::sequential::{sort_by_sequence, sort_like_curator};

use super::zk_failure;
use crate::cli::LockArgs;
use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::{ContenderJson, LocksJson, Output, locks_lines, session_hex};
use crate::paths;
use crate::supervise::{ChildStatus, Ended, Job, Policy, Signals, interrupted, supervise};

/// `lock [--timeout D | --try] [--once MARKER] PATH -- COMMAND...`.
pub(super) async fn lock(client: &Client, args: &LockArgs, out: Output) -> Outcome {
    let path = &args.path;
    let mut signals = Signals::new()?;
    // `--try` is Curator's `acquire(0)`: one round trip, the lock taken if it is free, else
    // our node withdrawn (a zero timeout).
    let timeout = if args.try_only {
        Some(Duration::ZERO)
    } else {
        args.timeout
    };
    let lock = Lock::new(client, path);
    let acquired = tokio::select! {
        acquired = lock.acquire(timeout) => acquired,
        signal = signals.recv() => {
            // Dropping the acquire withdraws our node; the session closes next.
            say!("interrupted while waiting for {path}");
            return Ok(interrupted(signal));
        }
    };
    let guard = match acquired {
        Ok(guard) => guard,
        Err(zk_recipes::Error::Timeout) if args.try_only => {
            let first = first_contender(client, path).await.ok().flatten();
            return Err(held(path, first.as_deref()));
        }
        Err(zk_recipes::Error::Timeout) => {
            return Err(Failure::new(
                ExitClass::Timeout,
                format!(
                    "lock {path}: not acquired within {:?} (--timeout)",
                    timeout.unwrap_or_default()
                ),
            ));
        }
        Err(e) => return Err(Failure::recipe(&format!("lock {path}"), &e)),
    };
    if out.verbose {
        say!(
            "holding {path} ({}, fencing token {})",
            guard.node(),
            guard.fencing_token()
        );
    }
    if let Some(marker) = &args.once {
        match client.exists(marker).await {
            Ok(None) => {}
            Ok(Some(_)) => {
                say!("{marker} exists: done already, the command is not run");
                release(guard, path).await;
                return Ok(0);
            }
            Err(e) => {
                release(guard, path).await;
                return Err(zk_failure("lock --once: exists", marker, &e));
            }
        }
    }
    let token = guard.fencing_token();
    let job = Job {
        command: &args.command,
        env: vec![
            ("RZK_LOCK_PATH".into(), path.clone()),
            ("RZK_LOCK_NODE".into(), guard.node().to_owned()),
            ("RZK_FENCING_TOKEN".into(), token.to_string()),
            ("RZK_SESSION_ID".into(), session_hex(client.session_id())),
        ],
        policy: Policy::from(&args.supervision),
        verbose: out.verbose,
    };
    let ended = supervise(&job, &mut signals, lost(&guard, path)).await;
    if client.state() == zk_proto::SessionState::Connected {
        release(guard, path).await;
    } else {
        // Nothing to wait for: the node goes with the session, which the ensemble ends; no
        // other holder is granted before (and the command is stopped already).
        say!("not connected: the lock {path} is released when the session ends");
        drop(guard);
    }
    let ended = ended?;
    if let (Some(marker), Ended::Exited { status, .. }) = (&args.once, ended)
        && status == ChildStatus::Code(0)
    {
        mark_done(client, marker, token).await?;
    }
    Ok(ended.exit_code())
}

/// The failure of a `--try` that found the lock held.
fn held(path: &str, first: Option<&str>) -> Failure {
    let by = first
        .map(|f| format!(" (first in line: {f})"))
        .unwrap_or_default();
    Failure::new(
        ExitClass::Timeout,
        format!("lock {path} is held{by}; --try gives up"),
    )
}

/// The first contender of the lock at `path`, `None` when there is none.
async fn first_contender(client: &Client, path: &str) -> Result<Option<String>, Failure> {
    match client.get_children(path).await {
        Ok(children) => {
            let mut children: Vec<&str> = children.iter().collect();
            sort_like_curator(&mut children, &[MUTEX_NAME]);
            Ok(children.first().map(|first| (*first).to_owned()))
        }
        Err(Error::NoNode) => Ok(None),
        Err(e) => Err(zk_failure("lock", path, &e)),
    }
}

/// Resolves when the lock is suspended or lost, with a sentence saying which.
async fn lost(guard: &LockGuard, path: &str) -> String {
    match guard.wait_lost(None).await {
        Ok(Validity::Suspended) => {
            format!("the lock {path} is suspended (connection lost; the session may expire)")
        }
        _ => format!("the lock {path} is lost (the session ended)"),
    }
}

/// Releases the lock; a lock that was lost before is reported, not an error (the loss was
/// handled while the command ran).
async fn release(guard: LockGuard, path: &str) {
    match guard.release().await {
        Ok(()) => {}
        Err(zk_recipes::Error::Lost) => {
            say!("the lock {path} was lost before it was released");
        }
        Err(e) => say!("releasing the lock {path}: {e}"),
    }
}

/// Records that the `--once` job is done: creates `marker` (and its missing parents) holding
/// when, by whom and under which fencing token.
async fn mark_done(client: &Client, marker: &str, token: i64) -> Result<(), Failure> {
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    let data = serde_json::json!({
        "done_at_ms": at,
        "by": super::leader::default_id(),
        "fencing_token": token,
    })
    .to_string();
    let parents: Vec<_> = paths::ancestors(marker)
        .into_iter()
        .map(|p| (p, client.create(p, "", &CreateOptions::persistent())))
        .collect();
    for (parent, created) in parents {
        match created.await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => return Err(zk_failure("lock --once: create", parent, &e)),
        }
    }
    match client
        .create(marker, data, &CreateOptions::persistent())
        .await
    {
        Ok(_) | Err(Error::NodeExists) => Ok(()),
        Err(e) => Err(zk_failure(
            "the command succeeded, but lock --once could not create",
            marker,
            &e,
        )),
    }
}

/// Which recipe the children of a lock path belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recipe {
    /// `_c_<uuid>-lock-<seq>`: a mutex (ours or Curator's `InterProcessMutex`).
    Mutex,
    /// `__READ__` / `__WRIT__`: a read-write lock.
    ReadWrite,
    /// `_c_<uuid>-latch-<seq>`: a leader latch (`rzk leader`, Curator's `LeaderLatch`).
    Latch,
    /// Something else (sorted by sequence number; roles unknown).
    Unknown,
}

impl Recipe {
    /// Its name in `locks`'s output.
    pub(super) fn name(self) -> &'static str {
        match self {
            Recipe::Mutex => "mutex",
            Recipe::ReadWrite => "read-write",
            Recipe::Latch => "latch",
            Recipe::Unknown => "unknown",
        }
    }

    /// The recipe of a listing of children.
    pub(super) fn of(children: &[String]) -> Recipe {
        let any = |name: &str| children.iter().any(|c| c.contains(name));
        if any(READ_NAME) || any(WRITE_NAME) {
            Recipe::ReadWrite
        } else if any(LATCH_NAME) {
            Recipe::Latch
        } else if any(MUTEX_NAME) {
            Recipe::Mutex
        } else {
            Recipe::Unknown
        }
    }

    /// Sorts the children in queue order, as the recipe (and Curator) does.
    pub(super) fn sort(self, children: &mut [String]) {
        match self {
            Recipe::Mutex => sort_like_curator(children, &[MUTEX_NAME]),
            Recipe::ReadWrite => sort_like_curator(children, &[READ_NAME, WRITE_NAME]),
            Recipe::Latch => sort_like_curator(children, &[LATCH_NAME]),
            Recipe::Unknown => sort_by_sequence(children),
        }
    }

    /// The role of each contender of a sorted listing: the first holds a mutex (leads a
    /// latch); a reader holds while no writer is before it, a writer when it is first.
    pub(super) fn roles(self, sorted: &[String]) -> Vec<&'static str> {
        let mut writer_before = false;
        sorted
            .iter()
            .enumerate()
            .map(|(i, child)| match self {
                Recipe::Mutex if i == 0 => "holder",
                Recipe::Mutex => "waiting",
                Recipe::Latch if i == 0 => "leader",
                Recipe::Latch => "candidate",
                Recipe::ReadWrite => {
                    let writer = child.contains(WRITE_NAME);
                    let holds = if writer { i == 0 } else { !writer_before };
                    writer_before |= writer;
                    if holds { "holder" } else { "waiting" }
                }
                Recipe::Unknown => "unknown",
            })
            .collect()
    }
}

/// `locks PATH`.
pub(super) async fn locks(client: &Client, path: &str, out: Output) -> Outcome {
    let mut children = client
        .get_children(path)
        .await
        .map_err(|e| zk_failure("locks", path, &e))?
        .to_vec();
    let recipe = Recipe::of(&children);
    recipe.sort(&mut children);
    let roles = recipe.roles(&children);
    let reads: Vec<_> = children
        .iter()
        .map(|c| client.get_data(&paths::child(path, c)))
        .collect();
    let mut contenders = Vec::with_capacity(children.len());
    for (position, ((node, role), read)) in children.iter().zip(roles).zip(reads).enumerate() {
        match read.await {
            Ok((data, stat)) => contenders.push(ContenderJson {
                position,
                node: node.clone(),
                role,
                session_id: (stat.ephemeral_owner != 0).then(|| session_hex(stat.ephemeral_owner)),
                czxid: stat.czxid,
                data: std::str::from_utf8(&data)
                    .ok()
                    .filter(|d| !d.is_empty())
                    .map(str::to_owned),
            }),
            // Released while we read: left out.
            Err(Error::NoNode) => {}
            Err(e) => return Err(zk_failure("locks", &paths::child(path, node), &e)),
        }
    }
    let locks = LocksJson {
        path: path.to_owned(),
        recipe: recipe.name(),
        contenders,
    };
    if out.json {
        out.json(&locks)?;
    } else {
        out.lines(&locks_lines(&locks))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_mutex_queue_is_in_sequence_order_whatever_the_prefix() {
        let mut children = names(&[
            "_c_ffff-lock-0000000003",
            "_c_0000-lock-0000000010",
            "_c_aaaa-lock-0000000001",
        ]);
        let recipe = Recipe::of(&children);
        assert_eq!(recipe, Recipe::Mutex);
        recipe.sort(&mut children);
        assert_eq!(children[0], "_c_aaaa-lock-0000000001");
        assert_eq!(children[2], "_c_0000-lock-0000000010");
        assert_eq!(recipe.roles(&children), ["holder", "waiting", "waiting"]);
    }

    #[test]
    fn readers_share_until_the_first_writer() {
        let mut children = names(&[
            "_c_a-__READ__0000000001",
            "_c_b-__READ__0000000002",
            "_c_c-__WRIT__0000000003",
            "_c_d-__READ__0000000004",
        ]);
        let recipe = Recipe::of(&children);
        assert_eq!(recipe, Recipe::ReadWrite);
        recipe.sort(&mut children);
        assert_eq!(
            recipe.roles(&children),
            ["holder", "holder", "waiting", "waiting"]
        );
        let writer_first = names(&["_c_c-__WRIT__0000000001", "_c_d-__READ__0000000002"]);
        assert_eq!(recipe.roles(&writer_first), ["holder", "waiting"]);
    }

    #[test]
    fn latches_and_other_nodes() {
        let children = names(&["_c_a-latch-0000000002", "_c_b-latch-0000000001"]);
        let recipe = Recipe::of(&children);
        assert_eq!(recipe, Recipe::Latch);
        let mut sorted = children.clone();
        recipe.sort(&mut sorted);
        assert_eq!(sorted[0], "_c_b-latch-0000000001");
        assert_eq!(recipe.roles(&sorted), ["leader", "candidate"]);
        let other = names(&["job-0000000002", "job-0000000001"]);
        let recipe = Recipe::of(&other);
        assert_eq!(recipe, Recipe::Unknown);
        let mut sorted = other.clone();
        recipe.sort(&mut sorted);
        assert_eq!(sorted, ["job-0000000001", "job-0000000002"]);
        assert_eq!(recipe.roles(&sorted), ["unknown", "unknown"]);
        assert_eq!(Recipe::of(&[]), Recipe::Unknown);
    }
}
