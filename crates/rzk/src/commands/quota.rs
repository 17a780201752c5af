//! Quotas, as ZooKeeper's shell keeps them: `setquota`, `listquota`, `delquota`.
//!
//! A quota on `/app` is two nodes under `/zookeeper/quota/app`: `zookeeper_limits` holds the
//! limits and `zookeeper_stats` what the subtree uses (kept up to date by the server), both in
//! the text of Java's `StatsTrack` (`count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=-1`,
//! -1 for no limit). Quotas do not nest: a node under or over one that has a quota cannot get
//! one. The server logs when a soft limit is passed, and refuses a write past a hard limit
//! only when it runs with `zookeeper.enforceQuota=true`.

use std::collections::BTreeMap;

use serde_json::json;
use zk_proto::{Client, CreateOptions, Error};

use super::zk_failure;
use crate::cli::QuotaLimits;
use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::Output;
use crate::paths;

/// Where quotas are kept.
pub(crate) const QUOTA_ROOT: &str = "/zookeeper/quota";
/// The node holding a quota's limits.
const LIMITS: &str = "zookeeper_limits";
/// The node holding what the subtree uses.
const STATS: &str = "zookeeper_stats";

const COUNT: &str = "count";
const BYTES: &str = "bytes";
const COUNT_HARD: &str = "countHardLimit";
const BYTES_HARD: &str = "byteHardLimit";

/// The values of a `StatsTrack` text, by key; a missing key is -1 (none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Track(BTreeMap<String, i64>);

impl Track {
    /// Parses `count=5,bytes=-1=;byteHardLimit=-1`: pairs separated by `,` or `;`, an empty
    /// value being -1, as Java's `StatsTrack` reads it.
    ///
    /// # Errors
    ///
    /// A message naming a pair that is not `key=number`.
    pub(crate) fn parse(text: &str) -> Result<Track, String> {
        let mut values = BTreeMap::new();
        for pair in text.trim().split([',', ';']).filter(|p| !p.is_empty()) {
            let mut parts = pair.split('=');
            let (Some(key), Some(value)) = (parts.next(), parts.next()) else {
                return Err(format!("malformed quota entry {pair:?} in {text:?}"));
            };
            let value = if value.is_empty() {
                -1
            } else {
                value
                    .parse()
                    .map_err(|_| format!("malformed quota entry {pair:?} in {text:?}"))?
            };
            values.insert(key.to_owned(), value);
        }
        Ok(Track(values))
    }

    /// The value of `key`, -1 when absent.
    pub(crate) fn get(&self, key: &str) -> i64 {
        self.0.get(key).copied().unwrap_or(-1)
    }

    fn set(&mut self, key: &str, value: i64) {
        self.0.insert(key.to_owned(), value);
    }

    /// The text Java's `StatsTrack.toString` writes: `count` and `bytes` first, then, after
    /// an extra `=`, the other keys sorted and separated by `;` (what 3.4 parsers skip).
    pub(crate) fn text(&self) -> String {
        let mut text = format!("{COUNT}={},{BYTES}={}", self.get(COUNT), self.get(BYTES));
        let rest: Vec<_> = self
            .0
            .iter()
            .filter(|(k, _)| *k != COUNT && *k != BYTES)
            .collect();
        if !rest.is_empty() {
            text.push('=');
            for (key, value) in rest {
                text.push_str(&format!(";{key}={value}"));
            }
        }
        text
    }
}

/// The quota node of `path` (`/zookeeper/quota/app` for `/app`).
fn quota_dir(path: &str) -> String {
    if path == "/" {
        QUOTA_ROOT.to_owned()
    } else {
        format!("{QUOTA_ROOT}{path}")
    }
}

/// Checks a quota path: not the root, not under `/zookeeper/quota`.
///
/// # Errors
///
/// A usage failure.
pub(crate) fn check_path(path: &str) -> Result<(), Failure> {
    paths::check(path)?;
    if path == "/" {
        return Err(Failure::usage("a quota cannot be set on the root node"));
    }
    if path == QUOTA_ROOT || path.starts_with(&format!("{QUOTA_ROOT}/")) {
        return Err(Failure::usage(format!(
            "cannot set a quota under {QUOTA_ROOT}"
        )));
    }
    Ok(())
}

/// The limits node's data when it exists.
async fn read_track(client: &Client, node: &str) -> Result<Option<Track>, Failure> {
    match client.get_data(node).await {
        Ok((data, _)) => Track::parse(&String::from_utf8_lossy(&data))
            .map(Some)
            .map_err(|e| Failure::new(ExitClass::Failure, format!("{node}: {e}"))),
        Err(Error::NoNode) => Ok(None),
        Err(e) => Err(zk_failure("read", node, &e)),
    }
}

/// `setquota -n|-b|-N|-B VALUE... PATH`: creates the quota, or changes the limits given of an
/// existing one (the others are kept, as zkCli does).
pub(super) async fn setquota(client: &Client, limits: &QuotaLimits, out: Output) -> Outcome {
    let path = &limits.path;
    if client
        .exists(path)
        .await
        .map_err(|e| zk_failure("setquota", path, &e))?
        .is_none()
    {
        return Err(Failure::new(
            ExitClass::NotFound,
            format!("setquota {path}: the node does not exist"),
        ));
    }
    // Quotas do not nest: none on an ancestor, none below.
    for ancestor in paths::ancestors(path) {
        if client
            .exists(&format!("{}/{LIMITS}", quota_dir(ancestor)))
            .await
            .map_err(|e| zk_failure("setquota", path, &e))?
            .is_some()
        {
            return Err(Failure::new(
                ExitClass::Conflict,
                format!("setquota {path}: its ancestor {ancestor} has a quota"),
            ));
        }
    }
    if let Some(below) = quota_below(client, path).await? {
        return Err(Failure::new(
            ExitClass::Conflict,
            format!("setquota {path}: the node {below} below it has a quota"),
        ));
    }
    let dir = quota_dir(path);
    let mut parents = vec!["/zookeeper".to_owned(), QUOTA_ROOT.to_owned()];
    parents.extend(paths::ancestors(&dir).into_iter().map(str::to_owned));
    parents.push(dir.clone());
    parents.dedup();
    let creates: Vec<_> = parents
        .iter()
        .map(|p| (p, client.create(p, "", &CreateOptions::persistent())))
        .collect();
    for (node, created) in creates {
        match created.await {
            Ok(_) | Err(Error::NodeExists) => {}
            Err(e) => return Err(zk_failure("setquota: create", node, &e)),
        }
    }
    let limits_node = format!("{dir}/{LIMITS}");
    let existing = read_track(client, &limits_node).await?;
    // A new quota starts with every limit at -1, as zkCli 3.8 writes it.
    let mut track = existing.clone().unwrap_or_else(|| {
        let mut fresh = Track::default();
        for key in [COUNT, BYTES, COUNT_HARD, BYTES_HARD] {
            fresh.set(key, -1);
        }
        fresh
    });
    for (key, value) in [
        (COUNT, limits.count),
        (BYTES, limits.bytes),
        (COUNT_HARD, limits.count_hard),
        (BYTES_HARD, limits.bytes_hard),
    ] {
        if let Some(value) = value {
            track.set(key, value);
        }
    }
    if existing.is_some() {
        client
            .set_data(&limits_node, track.text(), None)
            .await
            .map_err(|e| zk_failure("setquota: write", &limits_node, &e))?;
    } else {
        client
            .create(&limits_node, track.text(), &CreateOptions::persistent())
            .await
            .map_err(|e| zk_failure("setquota: create", &limits_node, &e))?;
    }
    let stats_node = format!("{dir}/{STATS}");
    match client
        .create(&stats_node, "count=0,bytes=0", &CreateOptions::persistent())
        .await
    {
        Ok(_) | Err(Error::NodeExists) => {}
        Err(e) => return Err(zk_failure("setquota: create", &stats_node, &e)),
    }
    if out.json {
        out.json(&quota_json(path, &track, None))?;
    }
    Ok(0)
}

/// The first node below `path` that has a quota, if any.
async fn quota_below(client: &Client, path: &str) -> Result<Option<String>, Failure> {
    let mut level = vec![quota_dir(path)];
    while !level.is_empty() {
        let calls: Vec<_> = level
            .iter()
            .map(|p| (p.clone(), client.get_children(p)))
            .collect();
        let mut next = Vec::new();
        for (node, call) in calls {
            let children = match call.await {
                Ok(children) => children,
                Err(Error::NoNode) => continue,
                Err(e) => return Err(zk_failure("setquota: list", &node, &e)),
            };
            for child in &children {
                if child == LIMITS && node != quota_dir(path) {
                    return Ok(Some(node[QUOTA_ROOT.len()..].to_owned()));
                }
                if child != LIMITS && child != STATS {
                    next.push(paths::child(&node, child));
                }
            }
        }
        level = next;
    }
    Ok(None)
}

/// A quota in JSON: each of `count` and `bytes` with its use and limits, `null` for none.
fn quota_json(path: &str, limits: &Track, used: Option<&Track>) -> serde_json::Value {
    let limit = |key: &str| {
        let value = limits.get(key);
        if value < 0 { json!(null) } else { json!(value) }
    };
    json!({
        "path": path,
        "count": {
            "used": used.map(|u| u.get(COUNT)),
            "limit": limit(COUNT),
            "hard_limit": limit(COUNT_HARD),
        },
        "bytes": {
            "used": used.map(|u| u.get(BYTES)),
            "limit": limit(BYTES),
            "hard_limit": limit(BYTES_HARD),
        },
    })
}

/// The text of `listquota`: one line per measure.
pub(crate) fn quota_lines(path: &str, limits: &Track, used: &Track) -> Vec<String> {
    let limit = |value: i64| {
        if value < 0 {
            "none".to_owned()
        } else {
            value.to_string()
        }
    };
    vec![
        format!("quota on {path}"),
        format!(
            "nodes  used {:<10}  limit {:<10}  hard limit {}",
            used.get(COUNT),
            limit(limits.get(COUNT)),
            limit(limits.get(COUNT_HARD))
        ),
        format!(
            "bytes  used {:<10}  limit {:<10}  hard limit {}",
            used.get(BYTES),
            limit(limits.get(BYTES)),
            limit(limits.get(BYTES_HARD))
        ),
    ]
}

/// `listquota PATH`.
pub(super) async fn listquota(client: &Client, path: &str, out: Output) -> Outcome {
    let dir = quota_dir(path);
    let Some(limits) = read_track(client, &format!("{dir}/{LIMITS}")).await? else {
        return Err(Failure::new(
            ExitClass::NotFound,
            format!("listquota {path}: no quota on {path}"),
        ));
    };
    let used = read_track(client, &format!("{dir}/{STATS}"))
        .await?
        .unwrap_or_default();
    if out.json {
        out.json(&quota_json(path, &limits, Some(&used)))?;
    } else {
        out.lines(&quota_lines(path, &limits, &used))?;
    }
    Ok(0)
}

/// Which limits `delquota` removes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Which {
    /// `-n`
    pub(crate) count: bool,
    /// `-b`
    pub(crate) bytes: bool,
    /// `-N`
    pub(crate) count_hard: bool,
    /// `-B`
    pub(crate) bytes_hard: bool,
}

/// `delquota [-n|-b|-N|-B] PATH`: without a flag the whole quota (its nodes, and the quota
/// tree's nodes left empty above them); with flags those limits only (set to -1).
pub(super) async fn delquota(client: &Client, path: &str, which: Which, out: Output) -> Outcome {
    let dir = quota_dir(path);
    let limits_node = format!("{dir}/{LIMITS}");
    let Some(mut limits) = read_track(client, &limits_node).await? else {
        return Err(Failure::new(
            ExitClass::NotFound,
            format!("delquota {path}: no quota on {path}"),
        ));
    };
    if which.count || which.bytes || which.count_hard || which.bytes_hard {
        for (on, key) in [
            (which.count, COUNT),
            (which.bytes, BYTES),
            (which.count_hard, COUNT_HARD),
            (which.bytes_hard, BYTES_HARD),
        ] {
            if on {
                limits.set(key, -1);
            }
        }
        client
            .set_data(&limits_node, limits.text(), None)
            .await
            .map_err(|e| zk_failure("delquota: write", &limits_node, &e))?;
    } else {
        for node in [limits_node, format!("{dir}/{STATS}")] {
            match client.delete(&node, None).await {
                Ok(()) | Err(Error::NoNode) => {}
                Err(e) => return Err(zk_failure("delquota: delete", &node, &e)),
            }
        }
        // The quota tree's nodes left empty, up to (not including) /zookeeper/quota.
        let mut at = Some(dir.as_str());
        while let Some(node) = at.filter(|n| *n != QUOTA_ROOT) {
            match client.delete(node, None).await {
                Ok(()) | Err(Error::NoNode) => {}
                Err(Error::NotEmpty) => break,
                Err(e) => return Err(zk_failure("delquota: delete", node, &e)),
            }
            at = paths::parent(node);
        }
    }
    if out.json {
        out.json(&json!({ "path": path, "deleted": true }))?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_and_write_as_java_does() {
        let track =
            Track::parse("count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=10").expect("3.8 form");
        assert_eq!(track.get(COUNT), 5);
        assert_eq!(track.get(BYTES), -1);
        assert_eq!(track.get(COUNT_HARD), 10);
        assert_eq!(
            track.text(),
            "count=5,bytes=-1=;byteHardLimit=-1;countHardLimit=10"
        );
        let old = Track::parse("count=1,bytes=0").expect("3.4 form");
        assert_eq!((old.get(COUNT), old.get(BYTES)), (1, 0));
        assert_eq!(old.text(), "count=1,bytes=0");
        assert_eq!(Track::default().text(), "count=-1,bytes=-1");
        assert!(Track::parse("count=x").is_err());
        assert!(Track::parse("count").is_err());
    }

    #[test]
    fn quota_paths() {
        assert_eq!(quota_dir("/a/b"), "/zookeeper/quota/a/b");
        assert!(check_path("/a").is_ok());
        assert!(check_path("/").is_err());
        assert!(check_path("/zookeeper/quota/a").is_err());
        assert!(check_path("/zookeeper/quotas").is_ok());
    }
}
