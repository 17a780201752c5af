//! SASL DIGEST-MD5 on the kit's servers: a JAAS file with the users, and the builder option
//! that turns the server's SASL authentication provider on with it
//! (`sasl_digest` on [`ZkServerBuilder`](crate::ZkServerBuilder) and
//! [`EnsembleBuilder`](crate::EnsembleBuilder)).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::workdir::base_dir;

/// The server's SASL authentication provider.
pub const SASL_PROVIDER: &str = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider";

/// A JAAS file whose `Server` section lists DIGEST-MD5 users (`DigestLoginModule`,
/// `user_<name>="<password>"`), under [`base_dir`]; removed on drop. Keep it alive as long
/// as a server that reads it may (re)start.
#[derive(Debug)]
pub struct DigestJaas {
    path: PathBuf,
}

impl DigestJaas {
    /// Writes the file for `users` (name, password).
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write(users: &[(&str, &str)]) -> io::Result<DigestJaas> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = base_dir();
        std::fs::create_dir_all(&base)?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = base.join(format!("digest-{}-{n}.jaas", std::process::id()));
        let mut text =
            String::from("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required");
        for (user, password) in users {
            let _ = write!(text, "\n  user_{user}=\"{password}\"");
        }
        text.push_str(";\n};\n");
        std::fs::write(&path, text)?;
        Ok(DigestJaas { path })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DigestJaas {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
