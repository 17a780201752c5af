//! The codec benchmark: our jute codec against the reference Java serializer on the same bytes.
//!
//! `cargo run --release -p zk-benches --bin codec -- [--json] [--quick] [--no-java]`; see
//! `docs/benchmarks.md` and [`zk_benches::codec`].

use std::process::ExitCode;

use clap::Parser as _;
use zk_benches::codec;

/// Counts allocations, so that each of our measurements prints its allocations per message
/// (`zk_benches::codec::allocations`).
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

fn main() -> ExitCode {
    // `--help` prints the help and exits 0; a bad argument exits 2 with clap's message.
    let options = codec::Options::parse();
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
