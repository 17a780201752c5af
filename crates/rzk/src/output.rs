//! Everything rzk prints on standard output, as text or as JSON, in one place: the writer
//! ([`Output`]), the JSON shapes (serde), and the text layouts (Stat, ACL, tree, lock queue,
//! watch events, times and sizes), the layouts as pure functions.

use std::io::{IsTerminal, Write};

use base64::Engine as _;
use serde::Serialize;
use zk_proto::{Acl, Stat, WatchedEvent};

use crate::exit::{ExitClass, Failure};
use crate::spec::perms_letters;

/// Where the command's results go: standard output, as text or JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Output {
    /// JSON instead of text.
    pub(crate) json: bool,
    /// Say on stderr what happens (`--verbose`).
    pub(crate) verbose: bool,
}

impl Output {
    /// Writes `text` and a newline.
    ///
    /// # Errors
    ///
    /// A closed pipe (silent) or another write error.
    pub(crate) fn line(&self, text: &str) -> Result<(), Failure> {
        self.write(|out| writeln!(out, "{text}"))
    }

    /// Writes `lines`, each followed by a newline.
    ///
    /// # Errors
    ///
    /// As [`line`](Self::line).
    pub(crate) fn lines(&self, lines: &[String]) -> Result<(), Failure> {
        self.write(|out| lines.iter().try_for_each(|l| writeln!(out, "{l}")))
    }

    /// Writes bytes as they are (a node's data), with a newline after them only when standard
    /// output is a terminal and they do not end with one.
    ///
    /// # Errors
    ///
    /// As [`line`](Self::line).
    pub(crate) fn raw(&self, bytes: &[u8]) -> Result<(), Failure> {
        let newline =
            std::io::stdout().is_terminal() && !bytes.is_empty() && !bytes.ends_with(b"\n");
        self.write(|out| {
            out.write_all(bytes)?;
            if newline {
                out.write_all(b"\n")?;
            }
            Ok(())
        })
    }

    /// Writes `value` as one line of JSON.
    ///
    /// # Errors
    ///
    /// As [`line`](Self::line).
    pub(crate) fn json<T: Serialize>(&self, value: &T) -> Result<(), Failure> {
        let text = serde_json::to_string(value)
            .map_err(|e| Failure::new(crate::exit::ExitClass::Failure, format!("JSON: {e}")))?;
        self.line(&text)
    }

    fn write(
        &self,
        body: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>,
    ) -> Result<(), Failure> {
        let mut out = std::io::stdout().lock();
        body(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| Failure::io("write to standard output", &e))
    }
}

/// Writes a failure on standard error: one line `rzk: MESSAGE`, or with `--json` one JSON
/// object `{"error": MESSAGE, "class": CLASS, "status": N}` (and `"path"` when the failure is
/// about one node among many). A closed stderr is ignored.
pub(crate) fn error_line(json: bool, message: &str, class: ExitClass, path: Option<&str>) {
    let mut err = std::io::stderr().lock();
    let _ = if json {
        let mut value = serde_json::json!({
            "error": message,
            "class": class.name(),
            "status": class.code(),
        });
        if let Some(path) = path {
            value["path"] = path.into();
        }
        writeln!(err, "{value}")
    } else {
        writeln!(err, "rzk: {message}")
    };
}

/// A session id as ZooKeeper prints it (`0x1000a2b3c4d0000`).
pub(crate) fn session_hex(id: i64) -> String {
    format!("{id:#x}")
}

/// A Stat in JSON: the fields of ZooKeeper's Stat, times in ms since the epoch.
#[derive(Debug, Serialize)]
pub(crate) struct StatJson {
    czxid: i64,
    mzxid: i64,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    aversion: i32,
    ephemeral_owner: i64,
    data_length: i32,
    num_children: i32,
    pzxid: i64,
}

impl From<&Stat> for StatJson {
    fn from(s: &Stat) -> Self {
        StatJson {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            cversion: s.cversion,
            aversion: s.aversion,
            ephemeral_owner: s.ephemeral_owner,
            data_length: s.data_length,
            num_children: s.num_children,
            pzxid: s.pzxid,
        }
    }
}

/// A Stat as text, one `name = value` per line with ZooKeeper's shell's names, times in UTC.
pub(crate) fn stat_lines(s: &Stat) -> Vec<String> {
    [
        ("cZxid", format!("{:#x}", s.czxid)),
        ("ctime", format_time(s.ctime)),
        ("mZxid", format!("{:#x}", s.mzxid)),
        ("mtime", format_time(s.mtime)),
        ("pZxid", format!("{:#x}", s.pzxid)),
        ("cversion", s.cversion.to_string()),
        ("dataVersion", s.version.to_string()),
        ("aclVersion", s.aversion.to_string()),
        ("ephemeralOwner", session_hex(s.ephemeral_owner)),
        ("dataLength", s.data_length.to_string()),
        ("numChildren", s.num_children.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| format!("{name} = {value}"))
    .collect()
}

/// Milliseconds since the epoch as an RFC 3339 UTC time (`2024-06-01T12:00:00.123Z`).
pub(crate) fn format_time(ms: i64) -> String {
    let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// A size in bytes for people: `0 B`, `999 B`, `1.5 KiB`, `2.0 MiB`.
pub(crate) fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// A node's data in JSON: as text when it is UTF-8, else in base64.
#[derive(Debug, Serialize)]
pub(crate) struct DataJson {
    /// The node.
    pub(crate) path: String,
    /// The data as text, `null` when it is not UTF-8.
    pub(crate) data: Option<String>,
    /// The data in base64, only when it is not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) data_base64: Option<String>,
    /// The node's Stat.
    pub(crate) stat: StatJson,
}

impl DataJson {
    /// The JSON of `path`'s `data` and `stat`.
    pub(crate) fn new(path: &str, data: &[u8], stat: &Stat) -> DataJson {
        let (text, b64) = match std::str::from_utf8(data) {
            Ok(text) => (Some(text.to_owned()), None),
            Err(_) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(data)),
            ),
        };
        DataJson {
            path: path.to_owned(),
            data: text,
            data_base64: b64,
            stat: stat.into(),
        }
    }
}

/// One ACL entry in JSON.
#[derive(Debug, Serialize)]
pub(crate) struct AclJson {
    scheme: String,
    id: String,
    /// Letters of `cdrwa`.
    perms: String,
}

impl From<&Acl> for AclJson {
    fn from(acl: &Acl) -> Self {
        AclJson {
            scheme: acl.id.scheme.clone(),
            id: acl.id.id.clone(),
            perms: perms_letters(acl.perms),
        }
    }
}

/// An ACL entry as text, in the form `setacl` takes (`world:anyone:cdrwa`).
pub(crate) fn acl_line(acl: &Acl) -> String {
    format!(
        "{}:{}:{}",
        acl.id.scheme,
        acl.id.id,
        perms_letters(acl.perms)
    )
}

/// A watch event in JSON.
#[derive(Debug, Serialize)]
pub(crate) struct EventJson {
    /// `NodeCreated`, `NodeDeleted`, `NodeDataChanged`, `NodeChildrenChanged`.
    #[serde(rename = "type")]
    kind: String,
    /// The node it happened to.
    path: String,
}

impl From<&WatchedEvent> for EventJson {
    fn from(event: &WatchedEvent) -> Self {
        EventJson {
            kind: event.event_type.to_string(),
            path: event.path.clone(),
        }
    }
}

/// A watch event as text: `NodeDataChanged /app/config`.
pub(crate) fn event_line(event: &WatchedEvent) -> String {
    format!("{} {}", event.event_type, event.path)
}

/// A node of `tree`'s output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct TreeNode {
    /// The full path.
    pub(crate) path: String,
    /// The size of its data in bytes.
    pub(crate) data_length: u64,
    /// Its number of children (also when they were not listed, below --max-depth).
    pub(crate) num_children: u64,
    /// Whether it is ephemeral.
    pub(crate) ephemeral: bool,
    /// Why it could not be read (its parent lists it; its ACL refuses this session), absent
    /// when it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// The children that were listed, sorted by name.
    pub(crate) children: Vec<TreeNode>,
}

impl TreeNode {
    /// How many nodes and data bytes the listed tree holds.
    pub(crate) fn totals(&self) -> (u64, u64) {
        self.children
            .iter()
            .map(TreeNode::totals)
            .fold((1, self.data_length), |(n, b), (cn, cb)| (n + cn, b + cb))
    }
}

/// The tree as indented text lines: the root's path, then each child's name under its
/// parent with branch lines, its data size, `(ephemeral)`, and how many children were not
/// shown; then the totals.
pub(crate) fn tree_lines(root: &TreeNode) -> Vec<String> {
    fn label(node: &TreeNode, name: &str) -> String {
        if let Some(error) = &node.error {
            let code = error.split_whitespace().next().unwrap_or(error);
            return format!("{name}  (unreadable: {code})");
        }
        let mut text = format!("{name}  [{}]", format_size(node.data_length));
        if node.ephemeral {
            text.push_str(" (ephemeral)");
        }
        if node.children.is_empty() && node.num_children > 0 {
            text.push_str(&format!(" (+{} children)", node.num_children));
        }
        text
    }
    fn walk(node: &TreeNode, prefix: &str, out: &mut Vec<String>) {
        let count = node.children.len();
        for (i, child) in node.children.iter().enumerate() {
            let last = i + 1 == count;
            let (branch, next) = if last {
                ("└── ", "    ")
            } else {
                ("├── ", "│   ")
            };
            out.push(format!(
                "{prefix}{branch}{}",
                label(child, crate::paths::name(&child.path))
            ));
            walk(child, &format!("{prefix}{next}"), out);
        }
    }
    let mut out = vec![label(root, &root.path)];
    walk(root, "", &mut out);
    let (nodes, bytes) = root.totals();
    out.push(format!(
        "{nodes} node{}, {} of data",
        if nodes == 1 { "" } else { "s" },
        format_size(bytes)
    ));
    out
}

/// One contender of `locks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ContenderJson {
    /// Its place in the queue, from 0.
    pub(crate) position: usize,
    /// The node's name.
    pub(crate) node: String,
    /// `holder`, `waiting`, `leader`, `candidate`, or `unknown`.
    pub(crate) role: &'static str,
    /// The session that owns it (hex), `null` for a persistent node.
    pub(crate) session_id: Option<String>,
    /// The node's creation zxid: the fencing token of a lock holder.
    pub(crate) czxid: i64,
    /// The node's data as text (a latch candidate's id), `null` when empty or not UTF-8.
    pub(crate) data: Option<String>,
}

/// `locks`'s result in JSON.
#[derive(Debug, Serialize)]
pub(crate) struct LocksJson {
    /// The lock's path.
    pub(crate) path: String,
    /// `mutex`, `read-write`, `latch`, or `unknown`.
    pub(crate) recipe: &'static str,
    /// The contenders in queue order.
    pub(crate) contenders: Vec<ContenderJson>,
}

/// `locks` as a text table.
pub(crate) fn locks_lines(locks: &LocksJson) -> Vec<String> {
    if locks.contenders.is_empty() {
        return vec![format!("{}: no contenders (free)", locks.path)];
    }
    let mut out = vec![format!(
        "{} ({}): {} contender{}",
        locks.path,
        locks.recipe,
        locks.contenders.len(),
        if locks.contenders.len() == 1 { "" } else { "s" }
    )];
    for c in &locks.contenders {
        let mut line = format!(
            "{:>3}  {:<9}  session {:<20}  token {:<12}  {}",
            c.position,
            c.role,
            c.session_id.as_deref().unwrap_or("-"),
            c.czxid,
            c.node
        );
        if let Some(data) = &c.data {
            line.push_str(&format!("  ({data})"));
        }
        out.push(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_rfc3339() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_time(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(format_time(1_717_243_200_999), "2024-06-01T12:00:00.999Z");
        assert_eq!(format_time(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn sizes_for_people() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(1023), "1023 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn stat_lines_use_the_shells_names() {
        let stat = Stat {
            czxid: 0x2a,
            ephemeral_owner: 0x1000_0000_0000_0001,
            data_length: 5,
            ..Stat::default()
        };
        let lines = stat_lines(&stat);
        assert_eq!(lines[0], "cZxid = 0x2a");
        assert!(lines.contains(&"ephemeralOwner = 0x1000000000000001".to_owned()));
        assert!(lines.contains(&"dataLength = 5".to_owned()));
        assert_eq!(lines.len(), 11);
    }

    #[test]
    fn data_is_text_or_base64() {
        let stat = Stat::default();
        let text = serde_json::to_value(DataJson::new("/a", b"hi", &stat)).expect("json");
        assert_eq!(text["data"], "hi");
        assert!(text.get("data_base64").is_none());
        let binary = serde_json::to_value(DataJson::new("/a", &[0xff, 0], &stat)).expect("json");
        assert!(binary["data"].is_null());
        assert_eq!(binary["data_base64"], "/wA=");
        assert_eq!(binary["stat"]["version"], 0);
    }

    fn node(path: &str, size: u64, children: Vec<TreeNode>) -> TreeNode {
        TreeNode {
            path: path.into(),
            data_length: size,
            num_children: children.len() as u64,
            ephemeral: false,
            error: None,
            children,
        }
    }

    #[test]
    fn trees_are_indented_with_sizes_and_totals() {
        let mut lock = node("/app/locks", 0, vec![]);
        lock.num_children = 2;
        let mut session = node("/app/session", 3, vec![]);
        session.ephemeral = true;
        let root = node(
            "/app",
            12,
            vec![
                node("/app/config", 2048, vec![node("/app/config/db", 5, vec![])]),
                lock,
                session,
            ],
        );
        assert_eq!(
            tree_lines(&root),
            [
                "/app  [12 B]",
                "├── config  [2.0 KiB]",
                "│   └── db  [5 B]",
                "├── locks  [0 B] (+2 children)",
                "└── session  [3 B] (ephemeral)",
                "5 nodes, 2.0 KiB of data",
            ]
        );
    }

    #[test]
    fn locks_table() {
        let locks = LocksJson {
            path: "/l".into(),
            recipe: "mutex",
            contenders: vec![ContenderJson {
                position: 0,
                node: "_c_x-lock-0000000000".into(),
                role: "holder",
                session_id: Some("0x1".into()),
                czxid: 16,
                data: None,
            }],
        };
        let lines = locks_lines(&locks);
        assert_eq!(lines[0], "/l (mutex): 1 contender");
        assert!(lines[1].contains("holder"));
        assert!(lines[1].contains("session 0x1"));
        assert!(
            lines[1].contains("token 16 "),
            "decimal, as RZK_FENCING_TOKEN"
        );
        assert!(lines[1].ends_with("_c_x-lock-0000000000"));
        let free = LocksJson {
            path: "/l".into(),
            recipe: "unknown",
            contenders: vec![],
        };
        assert_eq!(locks_lines(&free), ["/l: no contenders (free)"]);
    }
}
