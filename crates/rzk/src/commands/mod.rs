//! The commands, one module per family, and [`run`], which checks the input, opens the
//! session, runs the command and turns its outcome into an exit status (the shell, which
//! runs commands through [`dispatch`], is started by `main`).
//!
//! - `nodes`: ls, get, stat, set, create, rm, tree, sync
//! - `acl`: getacl, setacl, whoami
//! - `watch`: watch
//! - `services`: services (Curator's service discovery, through `zk-discovery`)
//! - `lock`: lock (and lock --once), locks
//! - `leader`: leader
//! - `barrier`: barrier, gate
//! - `admin`: config, reconfig
//! - `quota`: setquota, listquota, delquota
//! - `bench`: bench (no session: the benchmark opens its own)
//! - `server`: server start|stop|status (no session: a local ZooKeeper)

mod acl;
mod admin;
mod barrier;
mod bench;
mod leader;
mod lock;
mod nodes;
mod quota;
mod server;
mod services;
mod watch;

pub(crate) use nodes::WatchSink;

use std::io::Read;

use zk_proto::Client;

use crate::cli::{Cli, Command};
use crate::connect::Connector;
use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::Output;
use crate::paths;
use crate::spec::{Data, data_arg, parse_acl};

/// Runs one command of the command line (the shell, which runs commands, is started by
/// `main`) and returns rzk's exit status; a failure is one line on stderr.
pub(crate) fn run(cli: Cli) -> u8 {
    let out = Output {
        json: cli.global.json,
        verbose: cli.global.verbose,
    };
    let result = match cli.command {
        None | Some(Command::Shell) => Err(Failure::new(
            ExitClass::Failure,
            "the shell is not a command: rzk starts it before any command",
        )),
        Some(Command::Bench { args }) => bench::run(args, cli.global.tls, out),
        Some(Command::Server(args)) => server::run(&args, out),
        Some(command) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::new(ExitClass::Failure, format!("tokio runtime: {e}")))
            .and_then(|runtime| {
                let connector = Connector::new(&cli.global)?;
                runtime.block_on(session(&connector, command, out))
            }),
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            if !failure.message.is_empty() {
                crate::output::error_line(out.json, &failure.message, failure.class, None);
            }
            failure.class.code()
        }
    }
}

/// Checks the command's paths and specs (nothing is sent before), reads standard input if
/// the data is `-`, opens the session, runs the command and closes the session.
async fn session(connector: &Connector, command: Command, out: Output) -> Outcome {
    check(&command)?;
    let data = match &command {
        Command::Set { data, .. } => Some(read_data(data_arg(Some(data)))?),
        Command::Create(args) => Some(read_data(data_arg(args.data.as_deref()))?),
        _ => None,
    };
    let client = connector.connect().await?;
    let outcome = dispatch(&client, connector, command, data, out, &WatchSink::Wait).await;
    // Closing ends the session at once: its ephemeral nodes (a lock, a candidate) go now.
    // Without a connection rzk does not wait for one: the ensemble ends the session after its
    // timeout, and nothing rzk holds outlives the command it stopped.
    if client.state() == zk_proto::SessionState::Connected {
        client.close().await.ok();
    }
    outcome
}

/// Runs one command on an open session; `sink` says where one-shot watch events go.
pub(crate) async fn dispatch(
    client: &Client,
    connector: &Connector,
    command: Command,
    data: Option<Vec<u8>>,
    out: Output,
    sink: &WatchSink,
) -> Outcome {
    let data = data.unwrap_or_default();
    match command {
        Command::Ls {
            recursive,
            watch,
            path,
        } => nodes::ls(client, &path, recursive, watch, out, sink).await,
        Command::Get { watch, path } => nodes::get(client, &path, watch, out, sink).await,
        Command::Stat { watch, path } => nodes::stat(client, &path, watch, out, sink).await,
        Command::Set { path, version, .. } => nodes::set(client, &path, data, version, out).await,
        Command::Create(args) => nodes::create(client, &args, data, out).await,
        Command::Rm {
            recursive,
            batch,
            version,
            path,
        } => nodes::rm(client, &path, recursive, batch, version, out).await,
        Command::Deleteall { batch, path } => {
            nodes::rm(client, &path, true, batch, None, out).await
        }
        Command::Tree { max_depth, path } => nodes::tree(client, &path, max_depth, out).await,
        Command::Sync { path } => nodes::sync(client, &path, out).await,
        Command::ChildrenCount { path } => nodes::children_count(client, &path, out).await,
        Command::Ephemerals { path } => nodes::ephemerals(client, &path, out).await,
        Command::Unwatch {
            children,
            data,
            path,
            ..
        } => {
            let kind = match (children, data) {
                (true, _) => zk_proto::WatcherType::CHILDREN,
                (_, true) => zk_proto::WatcherType::DATA,
                _ => zk_proto::WatcherType::ANY,
            };
            nodes::unwatch(client, &path, kind, out).await
        }
        Command::Config {
            raw,
            connect_string,
        } => admin::config(client, raw, connect_string, out).await,
        Command::Reconfig(args) => admin::reconfig(client, &args, out).await,
        Command::Setquota(limits) => quota::setquota(client, &limits, out).await,
        Command::Listquota { path } => quota::listquota(client, &path, out).await,
        Command::Delquota {
            count,
            bytes,
            count_hard,
            bytes_hard,
            path,
        } => {
            let which = quota::Which {
                count,
                bytes,
                count_hard,
                bytes_hard,
            };
            quota::delquota(client, &path, which, out).await
        }
        Command::Getacl { path } => acl::getacl(client, &path, out).await,
        Command::Setacl {
            path,
            acl,
            version,
            recursive,
        } => acl::setacl(client, &path, &acl, version, recursive, out).await,
        Command::Whoami => acl::whoami(client, out).await,
        Command::Watch {
            recursive,
            count,
            path,
        } => watch::watch(client, &path, recursive, count, out).await,
        Command::Services {
            watch,
            count,
            base,
            name,
        } => services::services(client, &base, name.as_deref(), watch, count, out).await,
        Command::Lock(args) => lock::lock(client, &args, out).await,
        Command::Locks { path } => lock::locks(client, &path, out).await,
        Command::Leader(args) => leader::leader(client.clone(), connector, &args, out).await,
        Command::Barrier(args) => barrier::barrier(client, &args, out).await,
        Command::Gate(args) => barrier::gate(client, &args, out).await,
        Command::Bench { .. } | Command::Shell | Command::Server(_) => Err(Failure::new(
            ExitClass::Failure,
            "bench, server and shell run without a session of their own",
        )),
    }
}

/// Checks every path (and ACL) of `command` with ZooKeeper's rules.
///
/// # Errors
///
/// A usage failure naming the first bad one.
pub(crate) fn check(command: &Command) -> Result<(), Failure> {
    match command {
        Command::Ls { path, .. }
        | Command::Get { path, .. }
        | Command::Stat { path, .. }
        | Command::ChildrenCount { path }
        | Command::Unwatch { path, .. }
        | Command::Listquota { path }
        | Command::Delquota { path, .. }
        | Command::Set { path, .. }
        | Command::Tree { path, .. }
        | Command::Sync { path }
        | Command::Getacl { path }
        | Command::Watch { path, .. }
        | Command::Locks { path } => paths::check(path),
        // getEphemerals takes any prefix of a path (`/a/b` matches `/a/bc`).
        Command::Ephemerals { path } => {
            if path.starts_with('/') {
                Ok(())
            } else {
                Err(Failure::usage(format!(
                    "ephemerals {path:?}: must start with '/'"
                )))
            }
        }
        Command::Setquota(limits) => quota::check_path(&limits.path),
        Command::Reconfig(args) => admin::change(args).map(drop),
        Command::Rm { path, .. } | Command::Deleteall { path, .. } => {
            paths::check(path)?;
            if path == "/" {
                return Err(Failure::usage("refusing to delete the root node"));
            }
            Ok(())
        }
        Command::Create(args) => {
            if args.sequential {
                paths::check_sequential(&args.path)?;
            } else {
                paths::check(&args.path)?;
            }
            if let Some(acl) = &args.acl {
                parse_acl(acl).map_err(Failure::usage)?;
            }
            Ok(())
        }
        Command::Setacl { path, acl, .. } => {
            paths::check(path)?;
            parse_acl(acl).map_err(Failure::usage).map(drop)
        }
        Command::Lock(args) => {
            paths::check(&args.path)?;
            if args.path == "/" {
                return Err(Failure::usage("the lock path cannot be the root node"));
            }
            if let Some(marker) = &args.once {
                paths::check(marker)?;
            }
            Ok(())
        }
        Command::Services { base, name, .. } => {
            paths::check(base)?;
            match name {
                Some(name) => paths::check(&format!("{}/{name}", base.trim_end_matches('/'))),
                None => Ok(()),
            }
        }
        Command::Leader(args) => paths::check(&args.path),
        Command::Barrier(args) => paths::check(&args.path),
        Command::Gate(args) => paths::check(&args.path),
        Command::Whoami
        | Command::Config { .. }
        | Command::Bench { .. }
        | Command::Shell
        | Command::Server(_) => Ok(()),
    }
}

/// The bytes of a data argument, reading standard input to its end for `-`.
fn read_data(data: Data) -> Result<Vec<u8>, Failure> {
    match data {
        Data::Inline(bytes) => Ok(bytes),
        Data::Stdin => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Failure::io("read standard input", &e))?;
            Ok(bytes)
        }
    }
}

/// A client error while doing `what` on `path`.
fn zk_failure(what: &str, path: &str, error: &zk_proto::Error) -> Failure {
    Failure::zk(&format!("{what} {path}"), error)
}
