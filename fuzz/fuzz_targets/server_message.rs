//! Fuzz target `server_message`: see `jute::fuzzing::server_message` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jute::fuzzing::server_message(data));
