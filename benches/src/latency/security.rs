//! What `--tls` and `--sasl` add: the suffix of the metrics measured over TLS, and the JAAS
//! file of the local SASL server (one DIGEST-MD5 user).

use std::path::{Path, PathBuf};

/// Appended to the name of every metric measured over TLS (`lock_cycle@tls`).
pub(crate) const TLS_SUFFIX: &str = "@tls";
/// The server's SASL authentication provider.
pub(crate) const SASL_PROVIDER: &str =
    "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";
/// The benchmark's SASL user.
pub(crate) const SASL_USER: &str = "bench";
/// Its password.
pub(crate) const SASL_PASSWORD: &str = "bench-secret";

/// The JAAS file of the local SASL server, removed on drop.
#[derive(Debug)]
pub(crate) struct Jaas(PathBuf);

impl Jaas {
    /// Writes the file (a `Server` section with [`SASL_USER`]) under the test kit's directory.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub(crate) fn write() -> std::io::Result<Jaas> {
        let base = zk_testkit::base_dir();
        std::fs::create_dir_all(&base)?;
        let path = base.join(format!("lock-latency-{}.jaas", std::process::id()));
        std::fs::write(
            &path,
            format!(
                "Server {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  \
                 user_{SASL_USER}=\"{SASL_PASSWORD}\";\n}};\n"
            ),
        )?;
        Ok(Jaas(path))
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Jaas {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
