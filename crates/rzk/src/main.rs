//! `rzk`: a command-line tool for people who operate ZooKeeper. It reads, writes and watches
//! nodes, and runs a command under a lock or while leader, on the `zk-proto` client and the
//! `zk-recipes` recipes. `docs/cli.md` is its manual; `rzk --help` lists the commands and the
//! exit statuses.
//!
//! - `cli`: the command line (clap);
//! - `commands`: one module per family of commands, and the dispatch;
//! - `connect`: the session from the global options;
//! - `supervise`: running a command under a lock or leadership (a pure state machine and
//!   its runner); `tether`: the command killed by the kernel when rzk dies;
//! - `output`: everything printed on standard output, as text or JSON;
//! - `shell`: the interactive shell (`rzk` alone, `rzk shell`);
//! - `exit`: exit statuses and failures; `paths`, `spec`: checking and parsing the input.

/// Writes one line on stderr, `rzk: ` first (a diagnostic; results go to stdout). A closed
/// stderr is ignored: never a panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "rzk: {}", format_args!($($arg)*));
    }};
}

mod cli;
mod commands;
mod connect;
mod exit;
mod output;
mod paths;
mod shell;
mod spec;
mod supervise;
mod tether;

use std::process::ExitCode;

fn main() -> ExitCode {
    if let Some(code) = tether::exec_if_tethered() {
        return code;
    }
    let cli = cli::Cli::parse_args();
    ExitCode::from(match cli.command {
        None | Some(cli::Command::Shell) => shell::run(cli.global),
        Some(_) => commands::run(cli),
    })
}
