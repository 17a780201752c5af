//! Replays the checked-in fuzz corpus, `fuzz/corpus/<target>/`, through the checks of
//! `jute::fuzzing` on stable Rust, so that every seed and every input a fuzzer found worth
//! keeping is a regression test of `cargo test`.
//!
//! Reseed with `scripts/seed-fuzz-corpus.sh`; fuzz with `cargo +nightly fuzz run <target>`.

use std::fs;
use std::path::{Path, PathBuf};

use jute::fuzzing::{self, TARGETS};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn replay(target: &str) {
    let inputs = fuzzing::corpus_files(&fuzz_dir(), target);
    assert!(!inputs.is_empty(), "the corpus of {target} is empty");
    for (path, data) in inputs {
        // The check panics on a bug; name the input that found it.
        let outcome = std::panic::catch_unwind(|| fuzzing::run(target, &data));
        match outcome {
            Ok(known) => assert!(known, "jute::fuzzing has no target {target} in this build"),
            Err(panic) => {
                eprintln!("{target}: {} fails", path.display());
                std::panic::resume_unwind(panic);
            }
        }
    }
}

#[cfg(feature = "frame")]
#[test]
fn frame_decoder() {
    replay("frame_decoder");
}

#[test]
fn connect_response() {
    replay("connect_response");
}

#[test]
fn server_message() {
    replay("server_message");
}

#[test]
fn watcher_event() {
    replay("watcher_event");
}

#[test]
fn multi_response() {
    replay("multi_response");
}

#[test]
fn record_by_name() {
    replay("record_by_name");
}

/// The targets above are `jute::fuzzing::TARGETS`; each has a fuzz target file, a `[[bin]]`
/// in `fuzz/Cargo.toml` and a corpus; and every corpus directory belongs to a declared target
/// (of this crate or of `zk-proto`, whose corpus its own test replays).
#[test]
fn every_target_is_replayed_and_has_a_fuzz_target() {
    let replayed = [
        "frame_decoder",
        "connect_response",
        "server_message",
        "watcher_event",
        "multi_response",
        "record_by_name",
    ];
    let mut targets = TARGETS.to_vec();
    targets.sort_unstable();
    let mut expected = replayed.to_vec();
    expected.sort_unstable();
    assert_eq!(targets, expected);

    let declared = fuzzing::declared_targets(&fuzz_dir());
    for target in TARGETS {
        let file = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        assert!(file.is_file(), "{} is missing", file.display());
        assert!(declared.iter().any(|d| d == target), "no [[bin]] {target}");
    }
    for entry in fs::read_dir(fuzz_dir().join("corpus")).expect("fuzz/corpus exists") {
        let dir = entry
            .expect("readable")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            declared.contains(&dir),
            "fuzz/corpus/{dir} belongs to no target of fuzz/Cargo.toml"
        );
    }
}
