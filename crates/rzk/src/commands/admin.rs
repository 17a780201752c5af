//! The ensemble's configuration: `config` (parsed, or raw) and `reconfig` (incremental or the
//! whole membership, through `Client::reconfig_incremental` and `Client::reconfig_members`).

use serde::Serialize;
use serde_json::json;
use zk_proto::Client;

use crate::cli::ReconfigArgs;
use crate::exit::{Failure, Outcome};
use crate::output::Output;

/// One member of the ensemble, as a `server.N=` line of `/zookeeper/config` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Member {
    /// The server id.
    pub(crate) id: u64,
    /// `participant` or `observer`.
    pub(crate) role: String,
    /// The quorum address, `host:port`.
    pub(crate) quorum: String,
    /// The leader election address, `host:port`.
    pub(crate) election: String,
    /// The client address, `host:port`; `null` for a member that serves no clients.
    pub(crate) client: Option<String>,
}

/// The configuration, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct EnsembleConfig {
    /// The `version=` value (hex, as stored).
    pub(crate) version: Option<String>,
    /// The members in the order of their lines.
    pub(crate) members: Vec<Member>,
}

/// Parses `/zookeeper/config`'s text: `server.N=HOST:QUORUM:ELECTION[:ROLE][;[HOST:]CLIENT]`
/// lines (the first address of `|`-separated ones) and `version=HEX`; other lines are
/// ignored.
///
/// # Errors
///
/// A message naming a `server.` line that does not follow the grammar.
pub(crate) fn parse_config(text: &str) -> Result<EnsembleConfig, String> {
    let mut config = EnsembleConfig {
        version: None,
        members: Vec::new(),
    };
    for line in text.lines().map(str::trim) {
        if let Some(version) = line.strip_prefix("version=") {
            config.version = Some(version.to_owned());
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let Some(id) = key.trim().strip_prefix("server.") else {
            continue;
        };
        let bad = |why: &str| format!("malformed member line {line:?}: {why}");
        let id = id.parse().map_err(|_| bad("the id is not a number"))?;
        let (quorum_part, client_part) = match value.split_once(';') {
            Some((q, c)) => (q, Some(c.trim())),
            None => (value, None),
        };
        let quorum_part = quorum_part.split('|').next().unwrap_or(quorum_part);
        let (host, rest) = split_host(quorum_part.trim()).ok_or_else(|| bad("no address"))?;
        let mut parts = rest.split(':');
        let (Some(quorum_port), Some(election_port)) = (parts.next(), parts.next()) else {
            return Err(bad("expected host:quorum port:election port"));
        };
        let role = parts.next().unwrap_or("participant").to_owned();
        let client = match client_part {
            None | Some("") => None,
            Some(client) => Some(match client.rsplit_once(':') {
                Some((client_host, port)) if !["0.0.0.0", "::", "[::]"].contains(&client_host) => {
                    format!("{client_host}:{port}")
                }
                Some((_, port)) => format!("{host}:{port}"),
                None => format!("{host}:{client}"),
            }),
        };
        config.members.push(Member {
            id,
            role,
            quorum: format!("{host}:{quorum_port}"),
            election: format!("{host}:{election_port}"),
            client,
        });
    }
    Ok(config)
}

/// `host` and the rest after its `:`, an IPv6 literal kept in its brackets.
fn split_host(text: &str) -> Option<(&str, &str)> {
    if text.starts_with('[') {
        let end = text.find(']')?;
        let rest = text[end + 1..].strip_prefix(':')?;
        Some((&text[..=end], rest))
    } else {
        text.split_once(':')
    }
}

/// The text lines of a parsed configuration.
pub(crate) fn config_lines(config: &EnsembleConfig) -> Vec<String> {
    let mut lines = vec![format!(
        "version {}",
        config.version.as_deref().unwrap_or("(none)")
    )];
    for m in &config.members {
        lines.push(format!(
            "server {:<3}  {:<11}  quorum {:<21}  election {:<21}  client {}",
            m.id,
            m.role,
            m.quorum,
            m.election,
            m.client.as_deref().unwrap_or("none")
        ));
    }
    lines
}

/// Prints a configuration: raw, as stored, or parsed (text or JSON, the JSON with the raw
/// text too).
fn print_config(data: &[u8], raw: bool, out: Output) -> Outcome {
    let text = String::from_utf8_lossy(data);
    if raw && !out.json {
        out.raw(data)?;
        return Ok(0);
    }
    let config = parse_config(&text)
        .map_err(|e| Failure::new(crate::exit::ExitClass::Failure, format!("config: {e}")))?;
    if out.json {
        out.json(&json!({
            "version": config.version,
            "members": config.members,
            "raw": text,
        }))?;
    } else {
        out.lines(&config_lines(&config))?;
    }
    Ok(0)
}

/// `config [--raw | -c]`.
pub(super) async fn config(
    client: &Client,
    raw: bool,
    connect_string: bool,
    out: Output,
) -> Outcome {
    let (data, _) = client
        .get_config()
        .await
        .map_err(|e| Failure::zk("config", &e))?;
    if connect_string {
        let config = parse_config(&String::from_utf8_lossy(&data))
            .map_err(|e| Failure::new(crate::exit::ExitClass::Failure, format!("config: {e}")))?;
        let hosts = client_connect_string(&config);
        if out.json {
            out.json(&json!({ "version": config.version, "connect_string": hosts }))?;
        } else {
            out.line(&hosts)?;
        }
        return Ok(0);
    }
    print_config(&data, raw, out)
}

/// The members' client addresses, comma-separated, in the order of their lines (members
/// without a client port left out).
pub(crate) fn client_connect_string(config: &EnsembleConfig) -> String {
    config
        .members
        .iter()
        .filter_map(|m| m.client.as_deref())
        .collect::<Vec<_>>()
        .join(",")
}

/// A comma-separated or repeated list, flattened.
fn list(values: &[String]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The server lines of a configuration file (`server.N=` lines; others ignored).
fn members_of_file(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("server."))
        .map(str::to_owned)
        .collect()
}

/// Parses `--from-config`: hex, as `config` prints it, with or without `0x`.
///
/// # Errors
///
/// A message naming the value.
pub(crate) fn parse_version(text: &str) -> Result<i64, String> {
    let digits = text.trim().trim_start_matches("0x");
    i64::from_str_radix(digits, 16)
        .map_err(|_| format!("invalid --from-config {text:?}: a hex version, as config prints it"))
}

/// The request `reconfig`'s arguments ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Servers joining and ids leaving.
    Incremental {
        /// Server lines.
        joining: Vec<String>,
        /// Server ids.
        leaving: Vec<u64>,
    },
    /// The whole membership.
    Members(Vec<String>),
}

/// Checks `reconfig`'s arguments (the file read) into a change and a version.
///
/// # Errors
///
/// A usage failure: an id that is not a number, an empty membership, a bad version, a file
/// that cannot be read.
pub(crate) fn change(args: &ReconfigArgs) -> Result<(Change, Option<i64>), Failure> {
    let from = args
        .from_config
        .as_deref()
        .map(parse_version)
        .transpose()
        .map_err(Failure::usage)?;
    let change = if let Some(file) = &args.file {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Failure::usage(format!("reconfig --file {}: {e}", file.display())))?;
        Change::Members(members_of_file(&text))
    } else if !args.members.is_empty() {
        Change::Members(list(&args.members))
    } else {
        let leaving = list(&args.remove)
            .iter()
            .map(|id| {
                id.parse().map_err(|_| {
                    Failure::usage(format!("reconfig --remove {id:?}: not a server id"))
                })
            })
            .collect::<Result<_, _>>()?;
        Change::Incremental {
            joining: list(&args.add),
            leaving,
        }
    };
    match &change {
        Change::Members(m) if m.is_empty() => Err(Failure::usage(
            "reconfig: the new membership lists no server",
        )),
        Change::Incremental { joining, leaving } if joining.is_empty() && leaving.is_empty() => {
            Err(Failure::usage("reconfig: nothing to add or remove"))
        }
        _ => Ok((change, from)),
    }
}

/// `reconfig (--add S... --remove ID... | --members S,... | --file F) [--from-config V]`:
/// prints the new configuration as `config` does.
pub(super) async fn reconfig(client: &Client, args: &ReconfigArgs, out: Output) -> Outcome {
    let (change, from) = change(args)?;
    let result = match change {
        Change::Incremental { joining, leaving } => {
            client.reconfig_incremental(joining, leaving, from).await
        }
        Change::Members(members) => client.reconfig_members(members, from).await,
    };
    let (data, _) = result.map_err(|e| Failure::zk("reconfig", &e))?;
    print_config(&data, false, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_parse_with_every_form_of_line() {
        let text = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n\
                    server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2181\n\
                    server.3=[::1]:2888:3888;2181\n\
                    server.4=h4:1:2\n\
                    version=100000003\n";
        let config = parse_config(text).expect("parse");
        assert_eq!(config.version.as_deref(), Some("100000003"));
        let m = &config.members;
        assert_eq!(m.len(), 4);
        assert_eq!(
            m[0],
            Member {
                id: 1,
                role: "participant".into(),
                quorum: "127.0.0.1:2888".into(),
                election: "127.0.0.1:3888".into(),
                client: Some("127.0.0.1:2181".into()),
            }
        );
        assert_eq!(m[1].role, "observer");
        assert_eq!(m[1].client.as_deref(), Some("10.0.0.2:2181"));
        assert_eq!(m[2].quorum, "[::1]:2888");
        assert_eq!(m[2].client.as_deref(), Some("[::1]:2181"));
        assert_eq!(m[3].client, None);
        assert_eq!(
            client_connect_string(&config),
            "127.0.0.1:2181,10.0.0.2:2181,[::1]:2181"
        );
        assert!(parse_config("server.x=h:1:2").is_err());
        assert!(parse_config("server.1=h").is_err());
    }

    fn args(line: &[&str]) -> ReconfigArgs {
        use clap::Parser;
        let mut argv = vec!["rzk", "reconfig"];
        argv.extend_from_slice(line);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("parse")
            .command
        {
            Some(crate::cli::Command::Reconfig(args)) => args,
            other => panic!("not reconfig: {other:?}"),
        }
    }

    #[test]
    fn reconfig_arguments_become_one_change() {
        use clap::Parser;
        let (change, from) = change(&args(&[
            "--add",
            "server.4=h:1:2;3",
            "--remove",
            "1,2",
            "--from-config",
            "0x100000002",
        ]))
        .expect("incremental");
        assert_eq!(
            change,
            Change::Incremental {
                joining: vec!["server.4=h:1:2;3".into()],
                leaving: vec![1, 2],
            }
        );
        assert_eq!(from, Some(0x1_0000_0002));
        let (change, _) = super::change(&args(&["--members", "server.1=h:1:2;3,server.2=h:4:5;6"]))
            .expect("members");
        assert_eq!(
            change,
            Change::Members(vec!["server.1=h:1:2;3".into(), "server.2=h:4:5;6".into()])
        );
        assert!(super::change(&args(&["--remove", "one"])).is_err());
        assert!(super::change(&args(&["--remove", "1", "--from-config", "zz"])).is_err());
        assert!(
            crate::cli::Cli::try_parse_from(["rzk", "reconfig", "--add", "x", "--members", "y"])
                .is_err()
        );
        assert!(crate::cli::Cli::try_parse_from(["rzk", "reconfig"]).is_err());
    }
}
