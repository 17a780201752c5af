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

/// The corpus files of `target`, sorted, read.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join("corpus").join(target);
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|e| panic!("no corpus at {}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| entry.expect("readable corpus directory").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let data = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, data)
        })
        .collect()
}

fn replay(target: &str) {
    let inputs = corpus(target);
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

/// The targets above, `jute::fuzzing::TARGETS`, the fuzz target files and the corpus
/// directories are the same set.
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

    for target in TARGETS {
        let file = fuzz_dir().join("fuzz_targets").join(format!("{target}.rs"));
        assert!(file.is_file(), "{} is missing", file.display());
    }
    let mut dirs: Vec<String> = fs::read_dir(fuzz_dir().join("corpus"))
        .expect("fuzz/corpus exists")
        .map(|entry| {
            entry
                .expect("readable")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    dirs.sort_unstable();
    assert_eq!(dirs, expected, "fuzz/corpus/ holds a directory per target");
}
