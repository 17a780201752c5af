//! Replays the checked-in corpus of the `session_script` fuzz target,
//! `fuzz/corpus/session_script/`, through `zk_proto::fuzzing::session_script` (zk-session's) on
//! stable Rust, so that every seed and every input a fuzzer found worth keeping is a regression
//! test of `cargo test`.
//!
//! Fuzz with `cargo +nightly fuzz run session_script` from the repository root; the seeds come
//! from `WRITE_SEEDS=1 cargo test -p zk-session --lib fuzzing::tests::the_seeds_are_in_the_corpus`.

use std::fs;
use std::path::{Path, PathBuf};

use zk_proto::fuzzing;

/// The repository's `fuzz/` directory.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

#[test]
fn session_script() {
    let inputs = jute::fuzzing::corpus_files(&fuzz_dir(), "session_script");
    assert!(!inputs.is_empty(), "the corpus of session_script is empty");
    for (path, data) in inputs {
        // The check panics on a bug; name the input that found it.
        if let Err(panic) = std::panic::catch_unwind(|| fuzzing::session_script(&data)) {
            eprintln!("session_script: {} fails", path.display());
            std::panic::resume_unwind(panic);
        }
    }
}

/// The corpus directory, the fuzz target file and its `[[bin]]` entry go together.
#[test]
fn the_fuzz_target_exists() {
    let fuzz = fuzz_dir();
    let target = fuzz.join("fuzz_targets/session_script.rs");
    assert!(target.is_file(), "{} is missing", target.display());
    let manifest = fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    assert!(
        manifest.contains("name = \"session_script\""),
        "fuzz/Cargo.toml has no [[bin]] session_script"
    );
}
