//! The codec benchmark: our jute codec against the reference Java serializer on the same bytes.
//!
//! `cargo run --release -p zk-benches --bin codec -- [--json] [--quick] [--no-java]`; see
//! `docs/benchmarks.md` and [`zk_benches::codec`].

use std::process::ExitCode;

use zk_benches::codec::{self, Cli, USAGE};

fn main() -> ExitCode {
    let options = match codec::Options::parse(std::env::args_os().skip(1)) {
        Ok(Cli::Run(options)) => options,
        Ok(Cli::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("codec: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match codec::run(&options) {
        Ok(report) if options.json => {
            print!("{}", report.to_json());
            ExitCode::SUCCESS
        }
        Ok(report) => {
            print!("{}", report.to_table());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("codec: error: {e}");
            ExitCode::FAILURE
        }
    }
}
