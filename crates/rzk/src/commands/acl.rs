//! The ACL and identity commands: getacl, setacl, whoami.

use serde_json::json;
use zk_proto::Client;

use super::zk_failure;
use crate::exit::{Failure, Outcome};
use crate::output::{AclJson, Output, StatJson, acl_line};
use crate::spec::parse_acl;

/// `getacl PATH`: one `scheme:id:perms` per line (the form `setacl` takes).
pub(super) async fn getacl(client: &Client, path: &str, out: Output) -> Outcome {
    let (acl, stat) = client
        .get_acl(path)
        .await
        .map_err(|e| zk_failure("getacl", path, &e))?;
    if out.json {
        let entries: Vec<AclJson> = acl.iter().map(AclJson::from).collect();
        out.json(&json!({ "path": path, "acl": entries, "aversion": stat.aversion }))?;
    } else {
        let lines: Vec<String> = acl.iter().map(acl_line).collect();
        out.lines(&lines)?;
    }
    Ok(0)
}

/// `setacl [--version N] [-R] PATH ACL`.
pub(super) async fn setacl(
    client: &Client,
    path: &str,
    acl: &str,
    version: Option<i32>,
    recursive: bool,
    out: Output,
) -> Outcome {
    let acl = parse_acl(acl).map_err(Failure::usage)?;
    if recursive {
        return setacl_tree(client, path, acl, out).await;
    }
    let stat = client
        .set_acl(path, acl, version)
        .await
        .map_err(|e| zk_failure("setacl", path, &e))?;
    if out.json {
        out.json(&json!({ "path": path, "stat": StatJson::from(&stat) }))?;
    }
    Ok(0)
}

/// `whoami`: the identities of the session, one `scheme user` per line.
pub(super) async fn whoami(client: &Client, out: Output) -> Outcome {
    let identities = client
        .who_am_i()
        .await
        .map_err(|e| Failure::zk("whoami", &e))?;
    if out.json {
        let list: Vec<_> = identities
            .iter()
            .map(|i| json!({ "scheme": i.auth_scheme, "user": i.user }))
            .collect();
        out.json(&json!({ "identities": list }))?;
    } else {
        let lines: Vec<String> = identities
            .iter()
            .map(|i| format!("{} {}", i.auth_scheme, i.user))
            .collect();
        out.lines(&lines)?;
    }
    Ok(0)
}

/// `setacl -R PATH ACL`: the node first, then each level of its subtree with every request
/// of a level sent back to back. A node deleted meanwhile is skipped; one whose ACL this
/// session may not change ends the command (the nodes before it have the new ACL).
async fn setacl_tree(client: &Client, root: &str, acl: Vec<zk_proto::Acl>, out: Output) -> Outcome {
    let mut level = vec![root.to_owned()];
    let mut changed = 0u64;
    while !level.is_empty() {
        // Each node is listed before its ACL changes: the new ACL may not let this session
        // read it.
        let sets: Vec<_> = level
            .iter()
            .map(|p| {
                (
                    p,
                    client.get_children(p),
                    client.set_acl(p, acl.clone(), None),
                )
            })
            .collect();
        let mut next = Vec::new();
        for (node, children, set) in sets {
            let listed = children.await;
            match set.await {
                Ok(_) => changed += 1,
                Err(zk_proto::Error::NoNode) if node != root => continue,
                Err(e) => return Err(zk_failure("setacl -R", node, &e)),
            }
            match listed {
                Ok(mut names) => {
                    names.sort();
                    next.extend(names.iter().map(|c| crate::paths::child(node, c)));
                }
                Err(zk_proto::Error::NoNode) => {}
                Err(e) => return Err(zk_failure("setacl -R: list", node, &e)),
            }
        }
        level = next;
    }
    if out.json {
        out.json(&json!({ "path": root, "changed": changed }))?;
    }
    Ok(0)
}
