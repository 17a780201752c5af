//! Fuzz target `connect_response`: see `jute::fuzzing::connect_response` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jute::fuzzing::connect_response(data));
