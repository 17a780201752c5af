//! Fuzz target `record_by_name`: see `jute::fuzzing::record_by_name` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jute::fuzzing::record_by_name(data));
