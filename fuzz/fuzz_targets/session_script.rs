//! Fuzz target `session_script`: see `zk_proto::fuzzing::session_script` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| zk_proto::fuzzing::session_script(data));
