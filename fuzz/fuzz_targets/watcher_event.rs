//! Fuzz target `watcher_event`: see `jute::fuzzing::watcher_event` for the input format and what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jute::fuzzing::watcher_event(data));
