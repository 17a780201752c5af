//! Fuzz target `multi_response`: see `jute::fuzzing::multi_response` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jute::fuzzing::multi_response(data));
