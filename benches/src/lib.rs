//! Shared helpers of the benchmark binaries.
