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
//! The other binaries are self-contained in `src/bin/`, but for what every one of them needs
//! around its measurement: [`runtime`] and [`local_server`], or both at once with [`Setup`],
//! and [`quantile`].

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

/// The error type of the benchmarks' workloads.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a benchmark binary's `main` sets up around its measurement: the server it runs
/// against ([`local_server`]) and its runtime ([`runtime`]). Dropped, it stops the runtime
/// first, then the local server.
pub struct Setup {
    program: &'static str,
    /// The runtime the measurement runs on.
    pub runtime: tokio::runtime::Runtime,
    /// The local server started for the run, if no address was given.
    pub server: Option<zk_testkit::ZkServer>,
    /// The connect string of the server the run measures against.
    pub connect: String,
}

impl Setup {
    /// Starts the local server from `builder` unless `connect` names one, then the runtime
    /// from `runtime` (for example [`runtime`]). On failure it prints `<program>: error: ...`
    /// and returns the exit code to end with.
    ///
    /// # Errors
    ///
    /// The exit code, when the local server does not start or the runtime cannot be built.
    pub fn start(
        program: &'static str,
        connect: Option<&str>,
        builder: impl FnOnce() -> zk_testkit::ZkServerBuilder,
        runtime: impl FnOnce(&str) -> Result<tokio::runtime::Runtime, std::process::ExitCode>,
    ) -> Result<Setup, std::process::ExitCode> {
        let (server, connect) = local_server(program, connect, builder)?;
        let runtime = runtime(program)?;
        Ok(Setup {
            program,
            runtime,
            server,
            connect,
        })
    }

    /// The local server's process id, when one was started (and is known).
    pub fn server_pid(&self) -> Option<u32> {
        self.server.as_ref().and_then(zk_testkit::ZkServer::pid)
    }

    /// Runs `work` to its end on the runtime; on failure it prints `<program>: error: ...`
    /// and returns the exit code to end with.
    ///
    /// # Errors
    ///
    /// The exit code, when `work` fails.
    pub fn block_on<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, BoxError>>,
    ) -> Result<T, std::process::ExitCode> {
        self.runtime.block_on(work).map_err(|e| {
            eprintln!("{}: error: {e}", self.program);
            std::process::ExitCode::FAILURE
        })
    }
}

/// Runs `work` against the server `connect` names, or else against a local server with
/// forceSync off ([`unsynced_server`]), on the binaries' runtime: what the recipe benchmarks
/// against Curator do. The local server is stopped before it returns. On failure it prints
/// `<program>: error: ...` and returns the exit code to end with.
///
/// # Errors
///
/// The exit code, when the server or the runtime does not start or `work` fails.
pub fn on_unsynced_server<T>(
    program: &'static str,
    connect: Option<&str>,
    work: impl AsyncFnOnce(&str) -> Result<T, BoxError>,
) -> Result<T, std::process::ExitCode> {
    let setup = Setup::start(program, connect, || unsynced_server(program), runtime)?;
    let result = setup.block_on(work(&setup.connect));
    drop(setup);
    result
}

/// A local server with forceSync off, as the recipe benchmarks against Curator run it
/// (`<program>: starting a local ZooKeeper (forceSync off)...` on standard error).
pub fn unsynced_server(program: &str) -> zk_testkit::ZkServerBuilder {
    eprintln!("{program}: starting a local ZooKeeper (forceSync off)...");
    zk_testkit::ZkServer::builder().force_sync(false)
}

/// The `q`-quantile (0..=1) of `samples`, nearest rank; NaN when there are none.
pub fn quantile(samples: &[f64], q: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    #[test]
    fn quantiles_are_nearest_rank() {
        let samples: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(super::quantile(&samples, 0.5), 50.0);
        assert_eq!(super::quantile(&samples, 0.99), 99.0);
        assert_eq!(super::quantile(&[7.0], 0.99), 7.0);
        assert!(super::quantile(&[], 0.5).is_nan());
    }
}
