//! The benchmark programs of the workspace, one module per benchmark:
//!
//! - [`codec`]: our `jute` codec against the reference Java serializer on the same bytes
//!   (`src/bin/codec.rs`, `docs/benchmarks.md`).
//! - [`latency`]: per-operation latency of raw calls, the lock recipe and the leader latch
//!   against a real server (`src/bin/lock_latency.rs`, `docs/performance.md`).
//! - [`json`]: how both print JSON (through `serde_json`).
//! - [`args`]: what the binaries' command lines (clap) share.
//! - [`scale`]: what the scale benchmarks share (`idle_sessions`, `many_watches`,
//!   `lock_contenders`; docs/performance.md, "Scale").
//!
//! The `sessions`, `soak` and `tree_cache` binaries are self-contained in `src/bin/`, but for
//! [`runtime`] and [`local_server`], which every one of them needs.

pub mod args;
pub mod codec;
pub mod json;
pub mod latency;
pub mod scale;

/// The binaries' tokio runtime: two worker threads (the machines they run on have few cores).
/// On failure it prints `<program>: error: ...` and returns the exit code to end with.
///
/// # Errors
///
/// The exit code, when the runtime cannot be built.
pub fn runtime(program: &str) -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("{program}: error: {e}");
            std::process::ExitCode::FAILURE
        })
}

/// The server a binary runs against: `connect` when given (nothing is started), else a local
/// server from `builder` (returned, to be dropped at the end) and its connect string. On
/// failure it prints `<program>: error: ...` and returns the exit code to end with.
///
/// # Errors
///
/// The exit code, when the local server does not start.
pub fn local_server(
    program: &str,
    connect: Option<&str>,
    builder: impl FnOnce() -> zk_testkit::ZkServerBuilder,
) -> Result<(Option<zk_testkit::ZkServer>, String), std::process::ExitCode> {
    if let Some(connect) = connect {
        return Ok((None, connect.to_owned()));
    }
    match builder().start() {
        Ok(server) => {
            let connect = server.connect_string();
            Ok((Some(server), connect))
        }
        Err(e) => {
            eprintln!("{program}: error: {e}");
            Err(std::process::ExitCode::FAILURE)
        }
    }
}
