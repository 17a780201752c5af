//! The reference side: `benches/java/CodecBench.java`, compiled once (cached under the Cargo
//! target directory) and run on our frames. The Java program cross-checks before it times
//! anything; [`JavaReport`] is what it prints.
//!
//! Java and the ZooKeeper jars are found as the test kit finds them
//! ([`zk_testkit::ZkInstall::detect`]), so `ZK_JAVA` and `ZK_CLASSPATH` mean the same here.

use std::env;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use zk_testkit::ZkInstall;

use super::cases::CaseId;
use super::error::io_err;
use super::timing::Measurement;
use super::{BenchError, INSTALL_HINT, Settings};

/// The reference program, compiled at run time.
const JAVA_SOURCE: &str = include_str!("../../java/CodecBench.java");
/// Its main class.
pub(super) const JAVA_MAIN: &str = "CodecBench";
/// The exit status with which the Java program reports a failed cross-check.
const JAVA_CROSS_CHECK_FAILED: i32 = 3;

/// A located Java toolchain and ZooKeeper classpath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaTools {
    /// The `java` binary.
    pub java: PathBuf,
    /// The `javac` binary.
    pub javac: PathBuf,
    /// The classpath with `zookeeper.jar` (for `ByteBufferInputStream`) and
    /// `zookeeper-jute.jar` (the reference serializer).
    pub classpath: String,
}

impl JavaTools {
    /// Finds `java` and the jars as the test kit does ([`ZkInstall::detect`]: `ZK_JAVA`,
    /// `JAVA_HOME`, `PATH`; `ZK_CLASSPATH`, else Debian's jars in `/usr/share/java`), and
    /// `javac` next to that `java`, else on `PATH` ([`ZkInstall::javac`]).
    ///
    /// # Errors
    ///
    /// [`BenchError::MissingJava`], whose message names `scripts/install-deps.sh`.
    pub fn detect() -> Result<JavaTools, BenchError> {
        let install = ZkInstall::detect()?;
        Ok(JavaTools {
            javac: install.javac()?,
            java: install.java().to_path_buf(),
            classpath: install.classpath().to_owned(),
        })
    }

    /// Compiles the reference program unless a build of the same source and classpath is cached
    /// (under the Cargo target directory); returns the class directory.
    ///
    /// # Errors
    ///
    /// [`BenchError::Compile`] with javac's output, or [`BenchError::Io`].
    pub fn compile(&self) -> Result<PathBuf, BenchError> {
        let key = fnv1a64(
            [
                JAVA_SOURCE.as_bytes(),
                self.classpath.as_bytes(),
                self.javac.as_os_str().as_encoded_bytes(),
            ]
            .join(&0u8)
            .as_slice(),
        );
        let root = cache_root();
        let dir = root.join(format!("codec-java-{key:016x}"));
        if dir.join(format!("{JAVA_MAIN}.class")).is_file() {
            return Ok(dir);
        }
        fs::create_dir_all(&root).map_err(io_err(format!("creating {}", root.display())))?;
        let staging = root.join(format!("codec-java-{key:016x}.tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&staging);
        fs::create_dir_all(&staging).map_err(io_err(format!("creating {}", staging.display())))?;
        let source = staging.join(format!("{JAVA_MAIN}.java"));
        fs::write(&source, JAVA_SOURCE).map_err(io_err(format!("writing {}", source.display())))?;
        let output = Command::new(&self.javac)
            .args([
                "-nowarn",
                "-encoding",
                "UTF-8",
                "-cp",
                &self.classpath,
                "-d",
            ])
            .arg(&staging)
            .arg(&source)
            .output()
            .map_err(io_err(format!("running {}", self.javac.display())))?;
        if !output.status.success() {
            let _ = fs::remove_dir_all(&staging);
            return Err(BenchError::Compile(format!(
                "{}{}(classpath: {}; it needs the ZooKeeper 3.8 jars: {INSTALL_HINT})",
                first_lines(&String::from_utf8_lossy(&output.stdout), 30),
                first_lines(&String::from_utf8_lossy(&output.stderr), 30),
                self.classpath
            )));
        }
        // Builds of older sources are no longer needed.
        if let Ok(entries) = fs::read_dir(&root) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                if name.starts_with("codec-java-") && !name.contains(".tmp-") {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }
        // Another run may have finished the same build first; either copy will do.
        if fs::rename(&staging, &dir).is_err() {
            let _ = fs::remove_dir_all(&staging);
            if !dir.join(format!("{JAVA_MAIN}.class")).is_file() {
                return Err(BenchError::Io(
                    format!("moving the compiled classes to {}", dir.display()),
                    io::Error::other("rename failed"),
                ));
            }
        }
        Ok(dir)
    }

    /// Runs the reference on `frames`: cross-check, then timing.
    ///
    /// # Errors
    ///
    /// [`BenchError::CrossCheck`] when the reference disagrees with our bytes, else
    /// [`BenchError::Java`] or [`BenchError::Io`].
    pub fn run(
        &self,
        classes: &Path,
        frames: &[(CaseId, Bytes)],
        settings: &Settings,
    ) -> Result<JavaReport, BenchError> {
        let vectors = TempDir::new("zk-codec-bench")?;
        for (case, frame) in frames {
            let path = vectors.path().join(format!("{}.bin", case.id()));
            fs::write(&path, frame).map_err(io_err(format!("writing {}", path.display())))?;
        }
        let classpath = format!("{}:{}", classes.display(), self.classpath);
        let output = Command::new(&self.java)
            .arg("-cp")
            .arg(&classpath)
            .arg(JAVA_MAIN)
            .arg(vectors.path())
            .arg(settings.java_warmup.as_millis().to_string())
            .arg(settings.rounds.max(1).to_string())
            .arg(settings.round.as_millis().max(1).to_string())
            .args(frames.iter().map(|(case, _)| case.id()))
            .output()
            .map_err(io_err(format!("running {}", self.java.display())))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(JAVA_CROSS_CHECK_FAILED) {
            return Err(BenchError::CrossCheck(stderr.trim_end().to_owned()));
        }
        if !output.status.success() {
            return Err(BenchError::Java(format!(
                "{} exited with {}\n{}{}",
                self.java.display(),
                output.status,
                stdout,
                stderr.trim_end()
            )));
        }
        let report = JavaReport::parse(&stdout).map_err(BenchError::Java)?;
        for (case, frame) in frames {
            match report.checked.iter().find(|(c, _)| c == case) {
                Some((_, len)) if *len == frame.len() => {}
                Some((_, len)) => {
                    return Err(BenchError::CrossCheck(format!(
                        "{}: the reference checked {len} bytes, ours are {}",
                        case.id(),
                        frame.len()
                    )));
                }
                None => {
                    return Err(BenchError::Java(format!(
                        "no cross-check reported for {}:\n{stdout}",
                        case.id()
                    )));
                }
            }
            if report.result(*case).is_none() {
                return Err(BenchError::Java(format!(
                    "no timing reported for {}:\n{stdout}",
                    case.id()
                )));
            }
        }
        Ok(report)
    }
}

/// What the Java program printed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JavaReport {
    /// `info` lines: Java version, VM, GC, heap.
    pub info: Vec<(String, String)>,
    /// Cases whose cross-check passed, with the byte count the reference checked.
    pub checked: Vec<(CaseId, usize)>,
    /// Decode and encode timings per case.
    pub results: Vec<(CaseId, Option<Measurement>, Option<Measurement>)>,
}

impl JavaReport {
    /// Parses the program's stdout (see the header of `CodecBench.java`).
    ///
    /// # Errors
    ///
    /// A message quoting the first line that does not parse.
    pub fn parse(stdout: &str) -> Result<JavaReport, String> {
        let mut report = JavaReport::default();
        for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
            let bad = || format!("unexpected line from the reference benchmark: {line:?}");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("info") => {
                    let key = words.next().ok_or_else(bad)?;
                    let value = words.collect::<Vec<_>>().join(" ");
                    report.info.push((key.to_owned(), value));
                }
                Some("check") => {
                    let case = words.next().and_then(CaseId::from_id).ok_or_else(bad)?;
                    if words.next() != Some("ok") {
                        return Err(bad());
                    }
                    let len = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    report.checked.push((case, len));
                }
                Some("result") => {
                    let case = words.next().and_then(CaseId::from_id).ok_or_else(bad)?;
                    let op = words.next().ok_or_else(bad)?;
                    let median_ns: f64 =
                        words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    let iters_per_round =
                        words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
                    let m = Measurement {
                        median_ns,
                        iters_per_round,
                        allocs_per_op: None,
                    };
                    let index = match report.results.iter().position(|(c, _, _)| *c == case) {
                        Some(index) => index,
                        None => {
                            report.results.push((case, None, None));
                            report.results.len() - 1
                        }
                    };
                    match op {
                        "decode" => report.results[index].1 = Some(m),
                        "encode" => report.results[index].2 = Some(m),
                        _ => return Err(bad()),
                    }
                }
                _ => return Err(bad()),
            }
        }
        Ok(report)
    }

    /// The decode and encode timings of `case`, if both were reported.
    pub fn result(&self, case: CaseId) -> Option<(Measurement, Measurement)> {
        self.results
            .iter()
            .find(|(c, _, _)| *c == case)
            .and_then(|(_, d, e)| Some(((*d)?, (*e)?)))
    }

    /// The `info` value of `key`.
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The first `n` lines of `text`, each with its newline, and a note of how many were left out.
fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines.iter().take(n).map(|l| format!("{l}\n")).collect();
    if lines.len() > n {
        out += &format!("[{} more lines]\n", lines.len() - n);
    }
    out
}

/// `zk-benches/` in the Cargo target directory this program was built in (found by its
/// `CACHEDIR.TAG`), else in the system temporary directory.
fn cache_root() -> PathBuf {
    let target = env::current_exe().ok().and_then(|exe| {
        exe.ancestors()
            .skip(1)
            .find(|dir| dir.join("CACHEDIR.TAG").is_file())
            .map(Path::to_path_buf)
    });
    target.unwrap_or_else(env::temp_dir).join("zk-benches")
}

/// 64-bit FNV-1a: a stable hash for the compile cache key.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(prefix: &str) -> Result<TempDir, BenchError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = env::temp_dir().join(format!("{prefix}-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&path).map_err(io_err(format!("creating {}", path.display())))?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_output_parses() {
        let out = "info java_version 17.0.15\ninfo vm OpenJDK 64-Bit Server VM 17\n\
                   check watcher_event ok 45\nresult watcher_event decode 51.250 100000\n\
                   result watcher_event encode 60.000 90000\n";
        let report = JavaReport::parse(out).expect("parses");
        assert_eq!(report.info("vm"), Some("OpenJDK 64-Bit Server VM 17"));
        assert_eq!(report.checked, vec![(CaseId::WatcherEvent, 45)]);
        let (decode, encode) = report.result(CaseId::WatcherEvent).expect("timed");
        assert_eq!(decode.median_ns, 51.25);
        assert_eq!(encode.iters_per_round, 90000);
        assert!(JavaReport::parse("result nope decode 1 1").is_err());
    }

    #[test]
    fn first_lines_says_how_many_were_left_out() {
        assert_eq!(first_lines("a\nb\nc\n", 2), "a\nb\n[1 more lines]\n");
        assert_eq!(first_lines("a\n", 2), "a\n");
    }
}
