//! The node commands: ls, get, stat, set, create, rm, tree, sync.
//!
//! Listings of many nodes (`ls -R`, `tree`, `rm -r`) go one level at a time, with every
//! request of a level sent back to back (the client queues a call when it is made), so a
//! level costs one round trip whatever its width.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;
use zk_proto::{Client, CreateMode, CreateOptions, Error, Stat};

use super::zk_failure;
use crate::cli::CreateArgs;
use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::{DataJson, Output, StatJson, TreeNode, stat_lines, tree_lines};
use crate::paths;
use crate::spec::parse_acl;

/// How many times `rm -r` lists and deletes again when nodes keep appearing under it.
const RM_ROUNDS: usize = 10;

/// `ls [-R] [-w] PATH`.
pub(super) async fn ls(
    client: &Client,
    path: &str,
    recursive: bool,
    watch: bool,
    out: Output,
    sink: &WatchSink,
) -> Outcome {
    let (mut children, watcher) = if watch {
        let (children, watcher) = client
            .get_children_watch(path)
            .await
            .map_err(|e| zk_failure("ls", path, &e))?;
        (children.to_vec(), Some(watcher))
    } else {
        let children = client
            .get_children(path)
            .await
            .map_err(|e| zk_failure("ls", path, &e))?;
        (children.to_vec(), None)
    };
    children.sort();
    if !recursive {
        if out.json {
            out.json(&json!({ "path": path, "children": children }))?;
        } else {
            out.lines(&children)?;
        }
        return sink.fired(watcher, path, out).await;
    }
    let listing = subtree(client, path, None).await?;
    let nodes: Vec<String> = listing.levels.into_iter().flatten().collect();
    if out.json {
        let mut value = json!({ "path": path, "nodes": nodes });
        if !listing.unreadable.is_empty() {
            value["unreadable"] = unreadable_json(&listing.unreadable);
        }
        out.json(&value)?;
    } else {
        out.lines(&nodes)?;
    }
    report_unreadable(&format!("ls -R {path}"), &listing.unreadable, out)
}

/// A node below the listed one whose children could not be read (`NoAuth` for a node the
/// session may not read), and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unreadable {
    /// The node.
    pub(super) path: String,
    /// What the server answered.
    pub(super) error: Error,
}

/// Whether a listing goes on past `error` on one node: a refusal of that node (its ACL, say)
/// does, anything about the session or the connection does not.
fn skippable(error: &Error) -> bool {
    !matches!(
        ExitClass::of_zk(error),
        ExitClass::Connection | ExitClass::Usage
    ) && !error.is_terminal()
}

/// The unreadable nodes in JSON: `[{"path", "error", "class"}]`.
fn unreadable_json(unreadable: &[Unreadable]) -> serde_json::Value {
    unreadable
        .iter()
        .map(|u| {
            json!({
                "path": u.path,
                "error": crate::exit::describe(&u.error),
                "class": ExitClass::of_zk(&u.error).name(),
            })
        })
        .collect()
}

/// After a listing was printed: one error line per node that could not be read (JSON with
/// `--json`), and the failure that ends the command with the class of the first one; `Ok(0)`
/// when every node was read.
fn report_unreadable(what: &str, unreadable: &[Unreadable], out: Output) -> Outcome {
    let Some(first) = unreadable.first() else {
        return Ok(0);
    };
    for node in unreadable {
        crate::output::error_line(
            out.json,
            &format!(
                "{what}: cannot read {}: {}",
                node.path,
                crate::exit::describe(&node.error)
            ),
            ExitClass::of_zk(&node.error),
            Some(&node.path),
        );
    }
    let count = unreadable.len();
    Err(Failure::new(
        ExitClass::of_zk(&first.error),
        format!(
            "{what}: {count} node{} could not be read; everything else was printed",
            if count == 1 { "" } else { "s" }
        ),
    ))
}

/// A subtree's paths level by level, and the nodes whose children could not be read.
#[derive(Debug, Default)]
struct Listing {
    /// From the root itself, each level sorted.
    levels: Vec<Vec<String>>,
    /// Nodes listed by their parent whose own children could not be read (they are in
    /// `levels`, their subtrees are not).
    unreadable: Vec<Unreadable>,
}

/// The paths of `root`'s subtree, level by level from `root` itself (each level sorted), at
/// most `max_depth` levels below it. Nodes deleted while listing are left out; a node below
/// `root` whose children cannot be read (its ACL) is kept, with its error, and the listing
/// goes on with the others.
async fn subtree(
    client: &Client,
    root: &str,
    max_depth: Option<usize>,
) -> Result<Listing, Failure> {
    let mut listing = Listing {
        levels: vec![vec![root.to_owned()]],
        unreadable: Vec::new(),
    };
    let mut depth = 0;
    while max_depth.is_none_or(|max| depth < max) {
        let Some(level) = listing.levels.last() else {
            break;
        };
        let listings: Vec<_> = level.iter().map(|p| (p, client.get_children(p))).collect();
        let mut next = Vec::new();
        let mut unreadable = Vec::new();
        for (parent, children) in listings {
            match children.await {
                Ok(mut children) => {
                    children.sort();
                    next.extend(children.iter().map(|c| paths::child(parent, c)));
                }
                Err(Error::NoNode) if parent != root => {}
                Err(e) if parent != root && skippable(&e) => unreadable.push(Unreadable {
                    path: parent.clone(),
                    error: e,
                }),
                Err(e) => return Err(zk_failure("list", parent, &e)),
            }
        }
        listing.unreadable.extend(unreadable);
        if next.is_empty() {
            break;
        }
        listing.levels.push(next);
        depth += 1;
    }
    Ok(listing)
}

/// `get [-w] PATH`.
pub(super) async fn get(
    client: &Client,
    path: &str,
    watch: bool,
    out: Output,
    sink: &WatchSink,
) -> Outcome {
    let (data, stat, watcher) = if watch {
        let (data, stat, watcher) = client
            .get_data_watch(path)
            .await
            .map_err(|e| zk_failure("get", path, &e))?;
        (data, stat, Some(watcher))
    } else {
        let (data, stat) = client
            .get_data(path)
            .await
            .map_err(|e| zk_failure("get", path, &e))?;
        (data, stat, None)
    };
    if out.json {
        out.json(&DataJson::new(path, &data, &stat))?;
    } else {
        out.raw(&data)?;
    }
    sink.fired(watcher, path, out).await
}

/// `stat [-w] PATH`. With `-w` the watch is left also when the node does not exist (it
/// fires on its creation), as zkCli's `stat -w` does; the command still fails with exit 3.
pub(super) async fn stat(
    client: &Client,
    path: &str,
    watch: bool,
    out: Output,
    sink: &WatchSink,
) -> Outcome {
    let (stat, watcher) = if watch {
        let (stat, watcher) = client
            .exists_watch(path)
            .await
            .map_err(|e| zk_failure("stat", path, &e))?;
        (stat, Some(watcher))
    } else {
        let stat = client
            .exists(path)
            .await
            .map_err(|e| zk_failure("stat", path, &e))?;
        (stat, None)
    };
    let Some(stat) = stat else {
        if let (Some(watcher), WatchSink::Background(_)) = (watcher, sink) {
            // In the shell the watch stays and its event is printed when it comes.
            sink.fired(Some(watcher), path, out).await?;
        }
        return Err(zk_failure("stat", path, &Error::NoNode));
    };
    print_stat(path, &stat, out)?;
    sink.fired(watcher, path, out).await
}

/// Where the event of a one-shot watch (`get -w`, `ls -w`, `stat -w`) goes.
#[derive(Debug, Clone)]
pub(crate) enum WatchSink {
    /// A single command: wait for the event, print it on stdout (after the result), and
    /// exit 0; SIGINT, SIGTERM or SIGHUP end the wait (exit 0).
    Wait,
    /// The shell: the event is sent here when it comes, and the command returns at once.
    Background(tokio::sync::mpsc::UnboundedSender<String>),
}

impl WatchSink {
    /// Delivers the event of `watcher`, if there is one, the way this sink does.
    ///
    /// # Errors
    ///
    /// With [`WatchSink::Wait`], the session's end before the watch fired.
    pub(crate) async fn fired(
        &self,
        watcher: Option<zk_proto::OneshotWatcher>,
        path: &str,
        out: Output,
    ) -> Outcome {
        let Some(watcher) = watcher else {
            return Ok(0);
        };
        match self {
            WatchSink::Wait => {
                let mut signals = crate::supervise::Signals::new()?;
                tokio::select! {
                    event = watcher.changed() => {
                        let event = event.map_err(|e| zk_failure("watch", path, &e))?;
                        if out.json {
                            out.json(&crate::output::EventJson::from(&event))?;
                        } else {
                            out.line(&crate::output::event_line(&event))?;
                        }
                        Ok(0)
                    }
                    _ = signals.recv() => Ok(0),
                }
            }
            WatchSink::Background(tx) => {
                let tx = tx.clone();
                let path = path.to_owned();
                tokio::spawn(async move {
                    let text = match watcher.changed().await {
                        Ok(event) if out.json => {
                            serde_json::to_string(&crate::output::EventJson::from(&event))
                                .unwrap_or_default()
                        }
                        Ok(event) => format!("WATCHER: {}", crate::output::event_line(&event)),
                        Err(e) => format!(
                            "WATCHER: the watch on {path} is lost: {}",
                            crate::exit::describe(&e)
                        ),
                    };
                    let _ = tx.send(text);
                });
                Ok(0)
            }
        }
    }
}

/// `children-count PATH` (zkCli's getAllChildrenNumber): every node below, one request.
pub(super) async fn children_count(client: &Client, path: &str, out: Output) -> Outcome {
    let count = client
        .get_all_children_number(path)
        .await
        .map_err(|e| zk_failure("children-count", path, &e))?;
    if out.json {
        out.json(&json!({ "path": path, "count": count }))?;
    } else {
        out.line(&count.to_string())?;
    }
    Ok(0)
}

/// `ephemerals [PREFIX]` (zkCli's getEphemerals): this session's ephemeral nodes, sorted.
pub(super) async fn ephemerals(client: &Client, prefix: &str, out: Output) -> Outcome {
    let mut nodes = client
        .get_ephemerals(prefix)
        .await
        .map_err(|e| zk_failure("ephemerals", prefix, &e))?
        .to_vec();
    nodes.sort();
    if out.json {
        out.json(&json!({ "path": prefix, "ephemerals": nodes }))?;
    } else {
        out.lines(&nodes)?;
    }
    Ok(0)
}

/// `unwatch [-c|-d|-a] PATH` (zkCli's removewatches): removes this session's watches.
pub(super) async fn unwatch(
    client: &Client,
    path: &str,
    kind: zk_proto::WatcherType,
    out: Output,
) -> Outcome {
    client
        .remove_watches(path, kind)
        .await
        .map_err(|e| zk_failure("unwatch", path, &e))?;
    if out.json {
        out.json(&json!({ "path": path, "removed": true }))?;
    }
    Ok(0)
}

fn print_stat(path: &str, stat: &Stat, out: Output) -> Outcome {
    if out.json {
        out.json(&json!({ "path": path, "stat": StatJson::from(stat) }))?;
    } else {
        out.lines(&stat_lines(stat))?;
    }
    Ok(0)
}

/// `set PATH DATA`.
pub(super) async fn set(
    client: &Client,
    path: &str,
    data: Vec<u8>,
    version: Option<i32>,
    out: Output,
) -> Outcome {
    let stat = client
        .set_data(path, data, version)
        .await
        .map_err(|e| zk_failure("set", path, &e))?;
    if out.json {
        out.json(&json!({ "path": path, "stat": StatJson::from(&stat) }))?;
    }
    Ok(0)
}

/// The create mode `create`'s flags ask for.
pub(super) fn create_mode(args: &CreateArgs) -> CreateMode {
    match (
        args.ephemeral,
        args.sequential,
        args.container,
        args.ttl.is_some(),
    ) {
        (true, true, _, _) => CreateMode::EPHEMERAL_SEQUENTIAL,
        (true, false, _, _) => CreateMode::EPHEMERAL,
        (_, _, true, _) => CreateMode::CONTAINER,
        (_, true, _, true) => CreateMode::PERSISTENT_SEQUENTIAL_WITH_TTL,
        (_, false, _, true) => CreateMode::PERSISTENT_WITH_TTL,
        (_, true, _, false) => CreateMode::PERSISTENT_SEQUENTIAL,
        (_, false, _, false) => CreateMode::PERSISTENT,
    }
}

/// `create [-e] [-s] [-c] [--ttl D] [-p] [--acl ACL] PATH [DATA]`.
pub(super) async fn create(
    client: &Client,
    args: &CreateArgs,
    data: Vec<u8>,
    out: Output,
) -> Outcome {
    let path = &args.path;
    let mut options = CreateOptions::new(create_mode(args));
    if let Some(acl) = &args.acl {
        options = options.with_acl(parse_acl(acl).map_err(Failure::usage)?);
    }
    if let Some(ttl) = args.ttl {
        if ttl < Duration::from_millis(1) {
            return Err(Failure::usage("--ttl must be at least 1ms"));
        }
        options = options.with_ttl(ttl);
    }
    if args.parents {
        let creates: Vec<_> = paths::ancestors(path)
            .into_iter()
            .map(|p| (p, client.create(p, "", &CreateOptions::persistent())))
            .collect();
        for (parent, created) in creates {
            match created.await {
                Ok(_) | Err(Error::NodeExists) => {}
                Err(e) => return Err(zk_failure("create", parent, &e)),
            }
        }
    }
    let (created, stat) = client
        .create(path, data, &options)
        .await
        .map_err(|e| match e {
            Error::Unimplemented if args.ttl.is_some() => Failure::new(
                ExitClass::Failure,
                format!(
                    "create {path}: {e} (TTL nodes need extendedTypesEnabled=true on the server)"
                ),
            ),
            Error::NoNode if !args.parents => Failure::new(
                ExitClass::NotFound,
                format!("create {path}: {e} (the parent is missing; -p creates it)"),
            ),
            e => zk_failure("create", path, &e),
        })?;
    if out.json {
        out.json(&json!({ "path": created, "stat": StatJson::from(&stat) }))?;
    } else {
        out.line(&created)?;
    }
    Ok(0)
}

/// `rm [-r [--batch N]] [--version N] PATH`.
pub(super) async fn rm(
    client: &Client,
    path: &str,
    recursive: bool,
    batch: Option<u32>,
    version: Option<i32>,
    out: Output,
) -> Outcome {
    let deleted = if recursive {
        rm_tree(client, path, batch).await?
    } else {
        client
            .delete(path, version)
            .await
            .map_err(|e| zk_failure("rm", path, &e))?;
        1
    };
    if out.json {
        out.json(&json!({ "path": path, "deleted": deleted }))?;
    }
    Ok(0)
}

/// Deletes `root`'s subtree, deepest level first (each level's deletes sent back to back, or
/// in transactions of `batch` deletes); lists again when a node got new children meanwhile.
/// Returns how many nodes it deleted.
async fn rm_tree(client: &Client, root: &str, batch: Option<u32>) -> Result<u64, Failure> {
    let mut deleted = 0;
    for _ in 0..RM_ROUNDS {
        let listing = subtree(client, root, None).await?;
        if let Some(node) = listing.unreadable.first() {
            return Err(zk_failure("rm -r: list", &node.path, &node.error));
        }
        let levels = listing.levels;
        let mut again = false;
        for level in levels.iter().rev() {
            if let Some(batch) = batch {
                let (done, retry) = delete_in_batches(client, level, batch).await?;
                deleted += done;
                if retry {
                    again = true;
                    break;
                }
                continue;
            }
            let deletes: Vec<_> = level.iter().map(|p| (p, client.delete(p, None))).collect();
            for (node, delete) in deletes {
                match delete.await {
                    Ok(()) => deleted += 1,
                    // Deleted by someone else meanwhile: gone all the same.
                    Err(Error::NoNode) => {}
                    Err(Error::NotEmpty) => again = true,
                    Err(e) => return Err(zk_failure("rm", node, &e)),
                }
            }
            if again {
                break;
            }
        }
        if !again {
            return Ok(deleted);
        }
    }
    Err(Failure::new(
        ExitClass::Conflict,
        format!("rm -r {root}: nodes kept appearing under it; gave up after {RM_ROUNDS} rounds"),
    ))
}

/// Deletes the nodes of one level in transactions of at most `batch` deletes each, all sent
/// back to back (zkCli's `deleteall -b`). A transaction that fails (a node deleted or given
/// a child meanwhile) is done again one delete at a time. Returns how many nodes were
/// deleted and whether one had children (list again).
async fn delete_in_batches(
    client: &Client,
    level: &[String],
    batch: u32,
) -> Result<(u64, bool), Failure> {
    let size = usize::try_from(batch).unwrap_or(usize::MAX).max(1);
    let multis: Vec<_> = level
        .chunks(size)
        .map(|chunk| {
            let ops = chunk
                .iter()
                .map(|p| zk_proto::MultiOperation::delete(p.as_str(), None))
                .collect();
            (chunk, client.multi(ops))
        })
        .collect();
    let mut deleted = 0;
    let mut again = false;
    for (chunk, multi) in multis {
        let items = multi
            .await
            .map_err(|e| zk_failure("rm -r", &chunk[0], &e))?;
        if items.iter().all(|i| i.error().is_none()) {
            deleted += chunk.len() as u64;
            continue;
        }
        for node in chunk {
            match client.delete(node, None).await {
                Ok(()) => deleted += 1,
                Err(Error::NoNode) => {}
                Err(Error::NotEmpty) => again = true,
                Err(e) => return Err(zk_failure("rm", node, &e)),
            }
        }
    }
    Ok((deleted, again))
}

/// `tree [--max-depth N] PATH`.
pub(super) async fn tree(
    client: &Client,
    root: &str,
    max_depth: Option<usize>,
    out: Output,
) -> Outcome {
    // Level by level: getChildren2 gives each node's children and its own Stat.
    let mut listed: HashMap<String, Listed> = HashMap::new();
    let mut unreadable = Vec::new();
    let mut level = vec![root.to_owned()];
    let mut depth = 0;
    while !level.is_empty() {
        let calls: Vec<_> = level
            .iter()
            .map(|p| (p.clone(), client.get_children2(p)))
            .collect();
        let mut next = Vec::new();
        for (node, call) in calls {
            match call.await {
                Ok((children, stat)) => {
                    let mut children = children.to_vec();
                    children.sort();
                    if max_depth.is_none_or(|max| depth < max) {
                        next.extend(children.iter().map(|c| paths::child(&node, c)));
                    } else {
                        children.clear();
                    }
                    listed.insert(node, Listed::Read(stat, children));
                }
                Err(Error::NoNode) if node != root => {}
                Err(e) if node != root && skippable(&e) => {
                    listed.insert(node.clone(), Listed::Unreadable(e.clone()));
                    unreadable.push(Unreadable {
                        path: node,
                        error: e,
                    });
                }
                Err(e) => return Err(zk_failure("tree", &node, &e)),
            }
        }
        level = next;
        depth += 1;
    }
    let tree = build_tree(root, &mut listed);
    if out.json {
        out.json(&tree)?;
    } else {
        out.lines(&tree_lines(&tree))?;
    }
    report_unreadable(&format!("tree {root}"), &unreadable, out)
}

/// What `tree` learned of one node.
#[derive(Debug, Clone)]
enum Listed {
    /// Its Stat and its children's names (none below `--max-depth`).
    Read(Stat, Vec<String>),
    /// Its parent lists it, but it could not be read itself.
    Unreadable(Error),
}

/// The nested tree under `path` from the listings (children deleted while listing are left
/// out; unreadable ones are kept, with their error).
fn build_tree(path: &str, listed: &mut HashMap<String, Listed>) -> TreeNode {
    let (stat, names, error) = match listed.remove(path) {
        Some(Listed::Read(stat, names)) => (stat, names, None),
        Some(Listed::Unreadable(e)) => (Stat::default(), Vec::new(), Some(e.to_string())),
        None => (Stat::default(), Vec::new(), None),
    };
    let mut children = Vec::with_capacity(names.len());
    for name in &names {
        let child = paths::child(path, name);
        if listed.contains_key(&child) {
            children.push(build_tree(&child, listed));
        }
    }
    TreeNode {
        path: path.to_owned(),
        data_length: u64::try_from(stat.data_length).unwrap_or(0),
        num_children: u64::try_from(stat.num_children).unwrap_or(0),
        ephemeral: stat.ephemeral_owner != 0,
        error,
        children,
    }
}

/// `sync PATH`.
pub(super) async fn sync(client: &Client, path: &str, out: Output) -> Outcome {
    client
        .sync(path)
        .await
        .map_err(|e| zk_failure("sync", path, &e))?;
    if out.json {
        out.json(&json!({ "path": path, "synced": true }))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_refused_node_is_skipped_a_lost_session_is_not() {
        assert!(skippable(&Error::NoAuth));
        assert!(skippable(&Error::Unimplemented));
        for fatal in [
            Error::ConnectionLoss,
            Error::SessionExpired,
            Error::Closed,
            Error::RequestTimeout,
        ] {
            assert!(!skippable(&fatal), "{fatal:?}");
        }
    }

    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn mode(args: &[&str]) -> CreateMode {
        let mut argv = vec!["rzk", "create"];
        argv.extend_from_slice(args);
        argv.push("/a");
        let Some(Command::Create(args)) = Cli::try_parse_from(argv).expect("parse").command else {
            panic!("not create");
        };
        create_mode(&args)
    }

    #[test]
    fn flags_choose_the_create_mode() {
        assert_eq!(mode(&[]), CreateMode::PERSISTENT);
        assert_eq!(mode(&["-s"]), CreateMode::PERSISTENT_SEQUENTIAL);
        assert_eq!(mode(&["-e"]), CreateMode::EPHEMERAL);
        assert_eq!(mode(&["-e", "-s"]), CreateMode::EPHEMERAL_SEQUENTIAL);
        assert_eq!(mode(&["-c"]), CreateMode::CONTAINER);
        assert_eq!(mode(&["--ttl", "1m"]), CreateMode::PERSISTENT_WITH_TTL);
        assert_eq!(
            mode(&["-s", "--ttl", "1m"]),
            CreateMode::PERSISTENT_SEQUENTIAL_WITH_TTL
        );
    }

    #[test]
    fn the_tree_leaves_out_nodes_that_went_away() {
        let stat = |len: i32, children: i32| Stat {
            data_length: len,
            num_children: children,
            ..Stat::default()
        };
        let mut listed = HashMap::from([
            (
                "/".to_owned(),
                Listed::Read(
                    stat(0, 3),
                    vec!["a".to_owned(), "gone".to_owned(), "secret".to_owned()],
                ),
            ),
            ("/a".to_owned(), Listed::Read(stat(3, 0), vec![])),
            ("/secret".to_owned(), Listed::Unreadable(Error::NoAuth)),
        ]);
        let tree = build_tree("/", &mut listed);
        assert_eq!(tree.children.len(), 2);
        assert_eq!(tree.children[0].path, "/a");
        assert_eq!(tree.children[0].data_length, 3);
        assert_eq!(tree.children[0].error, None);
        assert_eq!(tree.children[1].path, "/secret");
        assert!(
            tree.children[1]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("NoAuth"))
        );
    }
}
