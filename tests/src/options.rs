//! Builder methods shared by [`crate::ZkServerBuilder`] and [`crate::EnsembleBuilder`].

/// Implements the common builder methods for a type with an `opts: Options` field.
macro_rules! option_methods {
    () => {
        /// ZooKeeper's `tickTime` (rounded to milliseconds). Session timeouts are bounded by
        /// `2 × tickTime` below and by `max(20 × tickTime, 40 s)` above.
        pub fn tick_time(mut self, tick: std::time::Duration) -> Self {
            self.opts.tick_time = tick;
            self
        }

        /// `forceSync` (fsync of the transaction log before acknowledging). Default `false`
        /// (`forceSync=no`): the data lives in a throw-away directory anyway.
        pub fn force_sync(mut self, on: bool) -> Self {
            self.opts.force_sync = on;
            self
        }

        /// Adds a `key=value` line to zoo.cfg. Later lines override the kit's defaults
        /// (e.g. `config("maxClientCnxns", 10)`). Keys ZooKeeper does not know become
        /// `zookeeper.<key>` system properties.
        pub fn config(
            mut self,
            key: impl std::fmt::Display,
            value: impl std::fmt::Display,
        ) -> Self {
            self.opts.config_lines.push(format!("{key}={value}"));
            self
        }

        /// Adds a raw line to zoo.cfg (after the kit's defaults).
        pub fn config_line(mut self, line: impl Into<String>) -> Self {
            self.opts.config_lines.push(line.into());
            self
        }

        /// Adds a JVM system property, `-Dkey=value` (e.g. `zookeeper.extendedTypesEnabled`,
        /// `true`). Given after the kit's own properties, so it overrides them.
        pub fn system_property(
            mut self,
            key: impl std::fmt::Display,
            value: impl std::fmt::Display,
        ) -> Self {
            self.opts
                .system_properties
                .push((key.to_string(), value.to_string()));
            self
        }

        /// Sets `zookeeper.extendedTypesEnabled` (container/TTL nodes with TTLs).
        pub fn extended_types(self, on: bool) -> Self {
            self.system_property("zookeeper.extendedTypesEnabled", on)
        }

        /// Adds a raw JVM argument (after the kit's defaults, before the system properties).
        pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
            self.opts.jvm_args.push(arg.into());
            self
        }

        /// Maximum Java heap per server in MiB (`-Xmx`). Default 256.
        pub fn max_heap_mb(mut self, mib: u32) -> Self {
            self.opts.max_heap_mb = mib;
            self
        }

        /// How long a start (or restart) may take before it fails with the log tail.
        pub fn startup_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.opts.startup_timeout = timeout;
            self
        }

        /// The server log level (slf4j-simple: `trace`, `debug`, `info`, `warn`, `error`, `off`).
        /// Default `info`.
        pub fn log_level(mut self, level: impl Into<String>) -> Self {
            self.opts.log_level = level.into();
            self
        }

        /// Serves TLS too: a `secureClientPort` on 127.0.0.1 per server, on the Netty
        /// connection factory (which serves the plaintext client port as well, so the kit's
        /// readiness checks and four-letter words keep working), with certificates
        /// generated into the server's (or ensemble's) directory ([`crate::TestCerts`]) and
        /// `ssl.clientAuth` set to `client_auth`. The TLS protocol is the server's default
        /// (TLS 1.2 on 3.8); `config("ssl.protocol", "TLSv1.3")` and
        /// `config("ssl.enabledProtocols", "TLSv1.3")` change it, with
        /// `config("ssl.ciphersuites", "TLS_AES_128_GCM_SHA256,...")` (3.8's default list
        /// has TLS 1.2 suites only: without it the server closes every TLS 1.3 hello).
        pub fn tls(mut self, client_auth: crate::ClientAuth) -> Self {
            self.opts.tls = Some(client_auth);
            self
        }

        /// SASL with the DIGEST-MD5 users of `jaas`: the server's SASL authentication provider
        /// (`authProvider.1`) and `java.security.auth.login.config`.
        pub fn sasl_digest(self, jaas: &crate::DigestJaas) -> Self {
            self.config("authProvider.1", crate::SASL_PROVIDER)
                .system_property("java.security.auth.login.config", jaas.path().display())
        }

        /// Uses this Java/ZooKeeper installation instead of [`crate::ZkInstall::detect`].
        pub fn install(mut self, install: crate::ZkInstall) -> Self {
            self.opts.install = Some(install);
            self
        }
    };
}

/// Implements the per-server accessors for a type with an `inst: Instance` field.
macro_rules! instance_methods {
    () => {
        /// The client address, `127.0.0.1:<port>`.
        pub fn addr(&self) -> std::net::SocketAddr {
            self.inst.addr()
        }

        /// The client port.
        pub fn port(&self) -> u16 {
            self.inst.addr().port()
        }

        /// `127.0.0.1:<port>`, for a ZooKeeper client's connect string.
        pub fn connect_string(&self) -> String {
            self.inst.addr().to_string()
        }

        /// Sends a four-letter command (`ruok`, `srvr`, `mntr`, `conf`, `stat`, `cons`, ...)
        /// and returns the answer.
        pub fn four_letter(&self, cmd: &str) -> std::io::Result<String> {
            self.inst.four_letter(cmd)
        }

        /// The server's current mode, from `srvr`.
        pub fn mode(&self) -> std::io::Result<crate::Mode> {
            self.inst.mode()
        }

        /// The JVM's pid while it runs.
        pub fn pid(&self) -> Option<u32> {
            self.inst.pid()
        }

        /// True while the JVM runs (it may not be serving yet).
        pub fn is_running(&self) -> bool {
            self.inst.is_running()
        }

        /// The server's directory (zoo.cfg, `data/`, `zookeeper.log`).
        pub fn dir(&self) -> &std::path::Path {
            self.inst.dir()
        }

        /// The server's `dataDir`.
        pub fn data_dir(&self) -> &std::path::Path {
            self.inst.data_dir()
        }

        /// The generated zoo.cfg.
        pub fn config_path(&self) -> &std::path::Path {
            self.inst.config_path()
        }

        /// The log file with the JVM's stdout and stderr (kept across restarts).
        pub fn log_path(&self) -> &std::path::Path {
            self.inst.log_path()
        }

        /// The last `lines` lines of the log file.
        pub fn log_tail(&self, lines: usize) -> String {
            self.inst.log_tail(lines)
        }
    };
}

pub(crate) use {instance_methods, option_methods};
