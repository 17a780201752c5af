//! Finding Java and the ZooKeeper jars.
//!
//! Debian's `zookeeper`/`libzookeeper-java` packages put the jars in `/usr/share/java`.
//! `zookeeper.jar` carries a manifest `Class-Path` naming its dependencies there (netty, jetty,
//! jackson, slf4j-api, zookeeper-jute, ...), so it alone is a working classpath. Debian's own
//! `zkEnv.sh` uses `/etc/zookeeper/conf:/usr/share/java/zookeeper.jar`, which has no SLF4J binding:
//! the server then logs nothing at all. The kit adds `slf4j-simple.jar` (configured through
//! system properties, writing to stderr, which goes to the server's log file), and
//! `netty-codec.jar`, which the manifest forgets and the Netty connection factory (TLS) needs.

use std::env;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable: a complete Java classpath for ZooKeeper (`:`-separated; `dir/*`
/// wildcards allowed), used instead of Debian's `/usr/share/java`.
pub const ENV_CLASSPATH: &str = "ZK_CLASSPATH";
/// Environment variable: the `java` binary to run (else `$JAVA_HOME/bin/java`, else `java` on `PATH`).
pub const ENV_JAVA: &str = "ZK_JAVA";
/// Where Debian installs the ZooKeeper jars and their dependencies.
pub const DEBIAN_JAR_DIR: &str = "/usr/share/java";

/// A located Java runtime plus ZooKeeper classpath.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkInstall {
    java: PathBuf,
    classpath: String,
}

impl ZkInstall {
    /// Finds `java` and the ZooKeeper jars.
    ///
    /// Order: [`ENV_JAVA`] / `JAVA_HOME` / `PATH` for java; [`ENV_CLASSPATH`] or
    /// `/usr/share/java/zookeeper.jar` (+ `slf4j-simple.jar` and `netty-codec.jar` when
    /// present) for the classpath.
    /// Returns [`Error::NotInstalled`] (whose message says to run `scripts/install-deps.sh`) when
    /// something is missing.
    pub fn detect() -> Result<Self> {
        ZkInstall::detect_with(&|name| env::var_os(name), Path::new(DEBIAN_JAR_DIR))
    }

    /// Uses the given `java` and classpath as they are.
    pub fn new(java: impl Into<PathBuf>, classpath: impl Into<String>) -> Self {
        ZkInstall {
            java: java.into(),
            classpath: classpath.into(),
        }
    }

    fn detect_with(var: &dyn Fn(&str) -> Option<OsString>, jar_dir: &Path) -> Result<Self> {
        let java = find_java(var)?;
        let classpath = match var(ENV_CLASSPATH).map(|v| v.to_string_lossy().into_owned()) {
            Some(cp) if !cp.trim().is_empty() => {
                if find_on_classpath(&cp, "zookeeper-3").is_none()
                    && find_on_classpath(&cp, "zookeeper.jar").is_none()
                {
                    return Err(Error::NotInstalled {
                        missing: format!(
                            "{ENV_CLASSPATH}={cp} names no zookeeper jar (zookeeper.jar or zookeeper-3.*.jar)"
                        ),
                    });
                }
                cp
            }
            _ => debian_classpath(jar_dir)?,
        };
        Ok(ZkInstall { java, classpath })
    }

    /// The `java` binary.
    pub fn java(&self) -> &Path {
        &self.java
    }

    /// The classpath for ZooKeeper's server main classes.
    pub fn classpath(&self) -> &str {
        &self.classpath
    }

    /// The `javac` next to [`ZkInstall::java`] (after resolving symlinks), else `javac` on `PATH`.
    pub fn javac(&self) -> Result<PathBuf> {
        if let Ok(real) = fs::canonicalize(&self.java)
            && let Some(dir) = real.parent()
        {
            let javac = dir.join("javac");
            if is_executable(&javac) {
                return Ok(javac);
            }
        }
        which(env::var_os("PATH"), "javac").ok_or_else(|| Error::NotInstalled {
            missing: "javac (package default-jdk-headless)".into(),
        })
    }

    /// `zookeeper-jute.jar` (the Java jute records), for generators that compile against it.
    pub fn jute_jar(&self) -> Result<PathBuf> {
        find_on_classpath(&self.classpath, "zookeeper-jute")
            .or_else(|| {
                let p = Path::new(DEBIAN_JAR_DIR).join("zookeeper-jute.jar");
                p.is_file().then_some(p)
            })
            .ok_or_else(|| Error::NotInstalled {
                missing: "zookeeper-jute.jar".into(),
            })
    }
}

fn find_java(var: &dyn Fn(&str) -> Option<OsString>) -> Result<PathBuf> {
    if let Some(java) = var(ENV_JAVA).filter(|v| !v.is_empty()) {
        let java = PathBuf::from(java);
        return if is_executable(&java) {
            Ok(java)
        } else {
            Err(Error::NotInstalled {
                missing: format!("{ENV_JAVA}={} is not an executable file", java.display()),
            })
        };
    }
    if let Some(home) = var("JAVA_HOME").filter(|v| !v.is_empty()) {
        let java = Path::new(&home).join("bin/java");
        if is_executable(&java) {
            return Ok(java);
        }
    }
    which(var("PATH"), "java").ok_or_else(|| Error::NotInstalled {
        missing: "`java` not found on PATH (package default-jre-headless)".into(),
    })
}

fn debian_classpath(dir: &Path) -> Result<String> {
    let mut entries = Vec::new();
    for jar in ["zookeeper.jar", "zookeeper-jute.jar"] {
        let path = dir.join(jar);
        if !path.is_file() {
            return Err(Error::NotInstalled {
                missing: format!("{} not found (package zookeeper)", path.display()),
            });
        }
        entries.push(path);
    }
    // No SLF4J binding is on Debian's classpath; without one ZooKeeper logs nothing.
    let binding = dir.join("slf4j-simple.jar");
    if binding.is_file() {
        entries.push(binding);
    }
    // The manifest names netty's handler but not the codec it is built on: without it the
    // Netty connection factory (the one that serves TLS) fails on every connection with
    // NoClassDefFoundError. Both come with libnetty-java, a dependency of the package.
    let codec = dir.join("netty-codec.jar");
    if codec.is_file() {
        entries.push(codec);
    }
    let cp = env::join_paths(&entries).map_err(|e| Error::NotInstalled {
        missing: format!("unusable jar path: {e}"),
    })?;
    Ok(cp.to_string_lossy().into_owned())
}

/// The first classpath entry (a jar, or a jar inside a `dir/*` wildcard) whose file name starts
/// with `prefix`.
fn find_on_classpath(classpath: &str, prefix: &str) -> Option<PathBuf> {
    for entry in classpath.split(':').filter(|e| !e.is_empty()) {
        if let Some(dir) = entry.strip_suffix('*') {
            let Ok(read) = fs::read_dir(if dir.is_empty() { "." } else { dir }) else {
                continue;
            };
            let mut names: Vec<PathBuf> = read.filter_map(|e| e.ok().map(|e| e.path())).collect();
            names.sort();
            if let Some(p) = names.into_iter().find(|p| jar_matches(p, prefix)) {
                return Some(p);
            }
        } else {
            let p = PathBuf::from(entry);
            if jar_matches(&p, prefix) && p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

fn jar_matches(path: &Path, prefix: &str) -> bool {
    path.file_name()
        .and_then(OsStr::to_str)
        .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".jar"))
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn which(path: Option<OsString>, name: &str) -> Option<PathBuf> {
    env::split_paths(&path?)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classpath_lookup_handles_wildcards_and_jars() {
        assert!(
            find_on_classpath("/nonexistent/*:/nope/zookeeper-jute.jar", "zookeeper-jute")
                .is_none()
        );
        if Path::new("/usr/share/java/zookeeper-jute.jar").is_file() {
            assert_eq!(
                find_on_classpath("/usr/share/java/zookeeper-jute.jar", "zookeeper-jute"),
                Some(PathBuf::from("/usr/share/java/zookeeper-jute.jar"))
            );
            assert!(find_on_classpath("/usr/share/java/*", "zookeeper-jute").is_some());
        }
    }

    fn fake_env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn assert_not_installed(result: Result<ZkInstall>) {
        let err = result.expect_err("must not be found");
        assert!(matches!(err, Error::NotInstalled { .. }), "{err}");
        assert!(
            err.to_string().contains("run `scripts/install-deps.sh`"),
            "{err}"
        );
    }

    #[test]
    fn missing_java_says_to_run_the_install_script() {
        let env = fake_env(&[("PATH", "/nonexistent-dir")]);
        assert_not_installed(ZkInstall::detect_with(&env, Path::new(DEBIAN_JAR_DIR)));
        let env = fake_env(&[(ENV_JAVA, "/nonexistent/java")]);
        assert_not_installed(ZkInstall::detect_with(&env, Path::new(DEBIAN_JAR_DIR)));
    }

    #[test]
    fn missing_jars_say_to_run_the_install_script() {
        // /bin/sh stands in for java: only the jar lookup is under test.
        let env = fake_env(&[(ENV_JAVA, "/bin/sh")]);
        assert_not_installed(ZkInstall::detect_with(&env, Path::new("/nonexistent-jars")));
        let env = fake_env(&[(ENV_JAVA, "/bin/sh"), (ENV_CLASSPATH, "/nonexistent/*")]);
        assert_not_installed(ZkInstall::detect_with(&env, Path::new(DEBIAN_JAR_DIR)));
    }

    #[test]
    fn env_overrides_are_used() {
        let env = fake_env(&[(ENV_JAVA, "/bin/sh"), (ENV_CLASSPATH, "/usr/share/java/*")]);
        if Path::new("/usr/share/java/zookeeper.jar").is_file() {
            let install = ZkInstall::detect_with(&env, Path::new("/nonexistent")).unwrap();
            assert_eq!(install.java(), Path::new("/bin/sh"));
            assert_eq!(install.classpath(), "/usr/share/java/*");
        }
    }
}
