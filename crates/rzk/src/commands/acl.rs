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

/// `setacl [--version N] PATH ACL`.
pub(super) async fn setacl(
    client: &Client,
    path: &str,
    acl: &str,
    version: Option<i32>,
    out: Output,
) -> Outcome {
    let acl = parse_acl(acl).map_err(Failure::usage)?;
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
