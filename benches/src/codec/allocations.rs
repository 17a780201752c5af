//! Heap allocations counted: `src/bin/codec.rs` makes `stats_alloc`'s counting system
//! allocator the global one, and [`count`] reads it, so that each measurement of our codec
//! prints its allocations per operation beside its time.

use stats_alloc::INSTRUMENTED_SYSTEM;

/// Allocations so far (reallocations included), or `None` when `stats_alloc`'s
/// `INSTRUMENTED_SYSTEM` is not the global allocator of this process (it then counts nothing).
pub fn count() -> Option<u64> {
    let stats = INSTRUMENTED_SYSTEM.stats();
    let count = (stats.allocations + stats.reallocations) as u64;
    (count > 0).then_some(count)
}
