//! The lock latency benchmark: raw calls, the lock recipe and the leader latch against a real
//! ZooKeeper (a local one started with the test kit unless `--connect` names one), compared in
//! the same run with the ZooKeeper Java client and Apache Curator.
//!
//! `cargo run --release -p zk-benches --bin lock_latency -- [--json] [--connect HOST:PORT]
//! [--ensemble] [--compare java,curator|none] [--blocks N] [--no-fsync] [--scale F]
//! [--plot FILE.svg]`; see `docs/performance.md` and [`zk_benches::latency`].

use std::process::ExitCode;

use zk_benches::latency;

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = latency::Options::parse(std::env::args_os().skip(1)).unwrap_or_else(|e| e.exit());
    let outcome = match latency::run(&options) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("lock_latency: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    if options.json {
        print!("{}", outcome.to_json_lines());
    } else {
        print!("{}", outcome.to_table());
    }
    if let Some(path) = &options.plot {
        if let Err(e) = std::fs::write(path, outcome.to_svg()) {
            eprintln!("lock_latency: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        eprintln!("lock_latency: wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
