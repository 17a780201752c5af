//! `bench [OPTIONS]`: the lock-latency benchmark of `zk-benches` (the `lock_latency`
//! binary's library entry point), with its own options. Without `--connect` it starts a local
//! ZooKeeper with the test kit (Java and ZooKeeper must be installed); `--server` is not used,
//! so that a `ZOOKEEPER` in the environment never turns a benchmark on a production ensemble.
//!
//! Only with the cargo feature `bench`, which links the benchmark and the test kit; without
//! it `rzk bench` says how to get it.

use std::ffi::OsString;

use crate::exit::Outcome;
use crate::output::Output;

/// How to get `rzk bench` when this build has none.
#[cfg(not(feature = "bench"))]
const NOT_BUILT: &str = "bench: this rzk is built without the benchmark; install it with \
     `cargo install --path crates/rzk --locked --features bench`, or run scripts/bench.sh";

/// Without the feature `bench`: a usage failure that says how to get it.
#[cfg(not(feature = "bench"))]
pub(super) fn run(_args: Vec<OsString>, _tls: bool, _out: Output) -> Outcome {
    Err(crate::exit::Failure::usage(NOT_BUILT))
}

/// The benchmark's command line, as `rzk bench` (its usage line names `rzk bench`, not `cargo
/// run`).
#[cfg(feature = "bench")]
fn command() -> clap::Command {
    use clap::CommandFactory as _;
    zk_benches::latency::Args::command()
        .name("rzk bench")
        .bin_name("rzk bench")
        .override_usage("rzk bench [options]")
}

/// Runs the benchmark with `args` and prints its table or JSON lines. `--json` and `--tls`
/// are rzk's own (global) flags too, so clap gives them to rzk: they are passed on (`tls`).
/// No tokio runtime may be running: the benchmark starts its own.
#[cfg(feature = "bench")]
pub(super) fn run(mut args: Vec<OsString>, tls: bool, out: Output) -> Outcome {
    use clap::error::ErrorKind;
    use zk_benches::latency;

    use crate::exit::{ExitClass, Failure};

    for (given, flag) in [(out.json, "--json"), (tls, "--tls")] {
        if given && !args.iter().any(|a| a == flag) {
            args.push(flag.into());
        }
    }
    let options = match latency::Options::try_parse_from(command(), args) {
        Ok(options) => options,
        Err(help) if help.kind() == ErrorKind::DisplayHelp => {
            out.raw(help.render().to_string().as_bytes())?;
            return Ok(0);
        }
        Err(e) => {
            return Err(Failure::usage(format!(
                "bench: {} (rzk bench --help)",
                zk_benches::args::one_line(&e)
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

    #[cfg(feature = "bench")]
    #[test]
    fn the_help_names_rzk_bench() {
        let help = command().render_help().to_string();
        assert!(help.starts_with("usage: rzk bench [options]\n"), "{help}");
        assert!(!help.contains("cargo run"));
        assert!(help.contains("--connect"));
    }

    #[cfg(feature = "bench")]
    #[test]
    fn a_bad_argument_is_one_line() {
        let Err(failure) = run(
            vec!["--bogus".into()],
            false,
            Output {
                json: false,
                verbose: false,
            },
        ) else {
            panic!("--bogus ran");
        };
        let message = failure.message;
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains("'--bogus'"), "{message}");
    }

    #[cfg(not(feature = "bench"))]
    #[test]
    fn without_the_feature_it_says_how_to_get_it() {
        let Err(failure) = run(
            Vec::new(),
            false,
            Output {
                json: false,
                verbose: false,
            },
        ) else {
            panic!("bench ran");
        };
        assert!(failure.message.contains("--features bench"));
    }
}
