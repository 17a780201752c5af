//! What every example shares: the connect string, a connection that fails at once when no
//! server answers, and one readable line on standard error when the example fails.
//!
//! (A directory with a `mod.rs` is not an example of its own; each example includes it with
//! `mod common;`.)

use std::error::Error as StdError;
use std::process::ExitCode;
use std::time::Duration;

use zk_recipes::zk_proto::{Client, ClientBuilder, ConnectFailure, Error};

/// The example's error: anything it can fail with, printed with `Display`.
pub(crate) type Result<T> = std::result::Result<T, Box<dyn StdError + Send + Sync>>;

/// The connect string: the first argument, or a local server on the default port.
pub(crate) fn connect_string() -> String {
    std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:2181".into())
}

/// Connects to `connect`, giving up at once when every server refused the connection
/// (`fail_fast`) and after 5 s when none answers (`connect_timeout`), instead of retrying for
/// the session timeout (30 s) as a long-running service would.
#[allow(
    dead_code,
    reason = "the tls example configures its own builder and calls connect_with"
)]
pub(crate) async fn connect(connect: &str) -> Result<Client> {
    connect_with(Client::builder(), connect).await
}

/// [`connect`] with a builder configured by the example (TLS, authentication).
pub(crate) async fn connect_with(builder: ClientBuilder, connect: &str) -> Result<Client> {
    builder
        .fail_fast(true)
        .connect_timeout(Some(Duration::from_secs(5)))
        .connect(connect)
        .await
        .map_err(|error| match error {
            Error::NoServerReachable {
                hosts, last_error, ..
            } => {
                let refused = matches!(
                    &last_error,
                    ConnectFailure::Io { kind, .. }
                        if *kind == std::io::ErrorKind::ConnectionRefused
                );
                // Nothing listening needs no more words; any other failure is named.
                let why = if refused {
                    String::new()
                } else {
                    format!(": {last_error}")
                };
                format!(
                    "no ZooKeeper server answered at {}{why} (start one with \
                     `rzk server start`, or pass a connect string)",
                    hosts.join(",")
                )
                .into()
            }
            other => other.into(),
        })
}

/// The end of `main`: success, or the error as one line on standard error and exit status 1.
pub(crate) fn exit(result: Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}
