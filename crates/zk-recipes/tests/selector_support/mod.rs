//! The tenure log of the leader selector tests, written the same way by
//! `tests/curator/CuratorSelector.java`: each tenure writes the persistent sequential nodes
//! `<log>/e-<seq>` with `start <id>` when it begins and `end <id>` when it ends, while leading.
//! The server's sequence orders them, so tenures that never overlap read start, end, start,
//! end, ..., each end naming its start's id.

#![allow(dead_code, unreachable_pub)]

use std::time::Duration;

use zk_proto::{Client, CreateMode, CreateOptions};

/// Writes one log entry (`start <id>` or `end <id>`).
pub async fn log(client: &Client, log: &str, what: &str, id: &str) {
    client
        .create(
            &format!("{log}/e-"),
            format!("{what} {id}"),
            &CreateOptions::new(CreateMode::PERSISTENT_SEQUENTIAL),
        )
        .await
        .unwrap_or_else(|e| panic!("log {what} {id}: {e}"));
}

/// One tenure's work: `start <id>`, `hold`, `end <id>`. The hold is the work's duration.
pub async fn tenure(client: &Client, log_path: &str, id: &str, hold: Duration) {
    log(client, log_path, "start", id).await;
    tokio::time::sleep(hold).await;
    log(client, log_path, "end", id).await;
}

/// The log's entries in the server's order, as `(what, id)`.
pub async fn entries(client: &Client, log: &str) -> Vec<(String, String)> {
    let mut children = client.get_children(log).await.expect("list the log");
    children.sort();
    let mut entries = Vec::new();
    for child in &children {
        let (data, _) = client
            .get_data(&format!("{log}/{child}"))
            .await
            .expect("read a log entry");
        let text = String::from_utf8(data.to_vec()).expect("utf-8");
        let (what, id) = text.split_once(' ').expect("<what> <id>");
        entries.push((what.to_owned(), id.to_owned()));
    }
    entries
}

/// The overlaps in `entries`: a start while another tenure is open (unless that tenure's id
/// is in `interrupted`, whose tenures may end without an `end`, their future dropped), or an
/// end that does not close the open tenure. Returns the overlaps and the tenures (ids in
/// order of their start).
pub fn overlaps(entries: &[(String, String)], interrupted: &[&str]) -> (Vec<String>, Vec<String>) {
    let (mut bad, mut tenures) = (Vec::new(), Vec::new());
    let mut open: Option<&str> = None;
    for (i, (what, id)) in entries.iter().enumerate() {
        match what.as_str() {
            "start" => {
                if let Some(other) = open
                    && !interrupted.contains(&other)
                {
                    bad.push(format!("#{i}: {id} starts while {other} leads"));
                }
                open = Some(id);
                tenures.push(id.clone());
            }
            "end" => {
                if open != Some(id.as_str()) {
                    bad.push(format!("#{i}: {id} ends while {open:?} leads"));
                }
                open = None;
            }
            other => bad.push(format!("#{i}: unknown entry {other}")),
        }
    }
    (bad, tenures)
}
