//! Running the Java programs of `tests/curator/` against Apache Curator: the classpath, and a
//! `java` command that runs one program by the single-file source launch (`java Prog.java`; the
//! JDK compiles it in memory, no build step; see `zk_testkit::java`). Shared by the interop
//! tests (through `curator_support/mod.rs`) and the ordering unit test of `src/lock.rs`.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

/// The classpath of the Curator programs, or `None` when Curator is not installed
/// (`scripts/install-curator.sh`). `CURATOR_CLASSPATH` overrides it.
pub fn curator_classpath() -> Option<String> {
    zk_testkit::java::curator_classpath()
}

/// The source of the program `name` (`tests/curator/<name>.java`).
pub fn program_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/curator")
        .join(format!("{name}.java"))
}

/// `java -cp <Curator> tests/curator/<name>.java`, to which the caller adds the program's
/// arguments. Panics (the test fails) when Java or Curator is missing.
pub fn curator_program(name: &str) -> std::process::Command {
    let Some(classpath) = curator_classpath() else {
        panic!(
            "Apache Curator is not installed: run scripts/install-curator.sh (scripts/test.sh does)"
        );
    };
    zk_testkit::java::source_program(&classpath, &program_source(name)).expect("java")
}
