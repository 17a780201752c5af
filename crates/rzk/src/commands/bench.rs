//! `bench [OPTIONS]`: the lock-latency benchmark of `zk-benches` (the `lock_latency`
//! binary's library entry point), with its own options. Without `--connect` it starts a local
//! ZooKeeper with the test kit (Java and ZooKeeper must be installed); `--server` is not used,
//! so that a `ZOOKEEPER` in the environment never turns a benchmark on a production ensemble.

use std::ffi::OsString;

use zk_benches::latency::{self, Cli, USAGE};

use crate::exit::{ExitClass, Failure, Outcome};
use crate::output::Output;

/// The benchmark's help, as `rzk bench` (its first line names `cargo run`).
fn usage() -> String {
    let rest = USAGE.split_once('\n').map_or(USAGE, |(_, rest)| rest);
    format!("usage: rzk bench [options]\n{rest}")
}

/// Runs the benchmark with `args` (`--json` is added with rzk's `--json`) and prints its
/// table or JSON lines. No tokio runtime may be running: the benchmark starts its own.
pub(super) fn run(mut args: Vec<OsString>, out: Output) -> Outcome {
    if out.json && !args.iter().any(|a| a == "--json") {
        args.push("--json".into());
    }
    let options = match latency::Options::parse(args) {
        Ok(Cli::Run(options)) => options,
        Ok(Cli::Help) => {
            out.line(&usage())?;
            return Ok(0);
        }
        Err(message) => {
            return Err(Failure::usage(format!(
                "bench: {message} (rzk bench --help)"
            )));
        }
    };
    let outcome = latency::run(&options)
        .map_err(|e| Failure::new(ExitClass::Failure, format!("bench: {e}")))?;
    if options.json {
        out.raw(outcome.to_json_lines().as_bytes())?;
    } else {
        out.raw(outcome.to_table().as_bytes())?;
    }
    if let Some(path) = &options.plot {
        std::fs::write(path, outcome.to_svg())
            .map_err(|e| Failure::io(&format!("bench: write {}", path.display()), &e))?;
        say!("wrote {}", path.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_rzk_bench() {
        let help = usage();
        assert!(help.starts_with("usage: rzk bench [options]\n"));
        assert!(!help.contains("cargo run"));
        assert!(help.contains("--connect"));
    }
}
