//! The benchmark programs of the workspace, one module per benchmark:
//!
//! - [`codec`]: our `jute` codec against the reference Java serializer on the same bytes
//!   (`src/bin/codec.rs`, `docs/benchmarks.md`).
//! - [`latency`]: per-operation latency of raw calls, the lock recipe and the leader latch
//!   against a real server (`src/bin/lock_latency.rs`, `docs/performance.md`).
//! - [`json`]: how both print JSON (through `serde_json`).
//!
//! The `sessions` and `soak` binaries are self-contained in `src/bin/`.

pub mod codec;
pub mod json;
pub mod latency;
