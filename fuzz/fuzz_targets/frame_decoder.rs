//! Fuzz target `frame_decoder`: see `jute::fuzzing::frame_decoder` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jute::fuzzing::frame_decoder(data));
