//! The client under faults, proving nothing is lost: every request resolves exactly once
//! (with its reply or a typed error), nothing hangs, nothing loops, and the session recovers.
//!
//! - Against the hostile scripted server, one test per [`Misbehaviour`].
//! - Against real servers behind a [`FaultProxy`]: 10,000 requests in flight through a cut;
//!   a whole unreachable server (deadlines, client-side expiry, bounded reconnect rate); a
//!   child list over the client's frame limit; 10,000 watches whose re-registration exceeds
//!   1 MiB across a server restart; a reconnection that the server accepts and never answers;
//!   watches through a cut and a frozen connection; a session expired by isolating it, and a
//!   renewal after an expiry; a TLS refusal on reconnection.
//! - Against a real ensemble: a session moves to another server when its server dies.
//!
//! Every wait is bounded ([`GUARD`] or a bound derived from the client's timers), so a bug
//! fails a test instead of hanging it. The tests that start a JVM take the kit's `serial()`
//! guard.
//!
//! This file holds what the tests share; they are in one module per kind of fault.

mod connect_and_close;
mod expiry;
mod hostile;
mod reconnects;
mod tls;
mod volume;
mod watches;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinSet;
use tokio::time::Instant;
use zk_proto::session::Backoff;
use zk_proto::{
    Client, ClientBuilder, ConnectFailure, CreateOptions, Error, MultiOperation, Result,
    SessionState,
};
use zk_testkit::ZkServer;
use zk_testkit::client::{Proxied, connect_proxied, serial, start_server, wait_for_state, within};
use zk_testkit::fault::{FIXED_DATA, FaultProxy, HUGE_LENGTH, HostileServer, Misbehaviour};

/// The hang guard of a single step.
const GUARD: Duration = Duration::from_secs(30);

/// How long a watch event (or a call queued while disconnected) may take once the session is
/// connected again.
const EVENT_WAIT: Duration = Duration::from_secs(5);

/// The session timeout of the hostile tests: a read timeout (2T/3) of 8 s, far above
/// [`PROMPT`], so a prompt reaction cannot be the read timeout firing.
const HOSTILE_TIMEOUT: Duration = Duration::from_secs(12);

/// What "promptly" means for a client that detects a violation by itself.
const PROMPT: Duration = Duration::from_secs(2);

/// The most connection attempts a client with the default backoff can make in `window` after
/// it lost a connection that stayed up (each wait at its shortest; see
/// `zk_proto::session::Backoff`).
fn max_attempts(window: Duration, session_timeout: Duration) -> u64 {
    Backoff::default().max_attempts_within(window, session_timeout)
}

/// The kit's standalone server, shared with the blocking tasks that restart it.
async fn server() -> Arc<ZkServer> {
    Arc::new(start_server().await)
}

fn hostile_builder(session_timeout: Duration) -> ClientBuilder {
    // No request timeout: what ends a request must be the client's handling of the fault.
    Client::builder().session_timeout(session_timeout)
}

/// Connects to `server` with [`hostile_builder`] (bounded): the connect's outcome.
async fn connect_hostile(server: &HostileServer, session_timeout: Duration) -> Result<Client> {
    within(
        "connect",
        GUARD,
        hostile_builder(session_timeout).connect(&server.connect_string()),
    )
    .await
}
