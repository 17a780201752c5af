//! The partition suite's parts: the world of one run (a partition bed and two sides of
//! clients), the fault scenarios, and the workloads with their checks. The `partitions` binary
//! (`src/main.rs`, run by `scripts/partitions.sh`) runs them; docs/partitions.md says what each
//! one does and what it found.

pub mod scenario;
pub mod workload;
pub mod world;
