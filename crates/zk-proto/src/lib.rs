//! `zk-proto`: an async ZooKeeper client, built on the [`jute`] codec.
//!
//! ```no_run
//! use zk_proto::{Client, CreateOptions};
//!
//! # async fn example() -> zk_proto::Result<()> {
//! let client = Client::connect("127.0.0.1:2181/app").await?;
//! client.create("/config", "v1", &CreateOptions::persistent()).await?;
//! let (data, stat, watch) = client.get_data_watch("/config").await?;
//! println!("{data:?} at version {}", stat.version);
//! let event = watch.changed().await?; // fires once, or reports why it never will
//! println!("{:?} on {}", event.event_type, event.path);
//! client.close().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! - [`session`]: the protocol as a deterministic state machine (`handle_*` inputs with an
//!   explicit `now`, `poll_*` outputs), unit-tested with scripted server frames. It is the crate
//!   [`zk_session`] (no async runtime in its dependency tree), re-exported here with
//!   [`connect_string`], [`path`], [`acl`], [`ensemble_config`], [`sasl`] and the error types;
//!   this crate is the tokio driver over it.
//! - [`Client`]: a cheap, cloneable handle; one tokio task per connection moves the frames.
//! - [`connect_string`], [`path`], [`acl`]: connect strings and host lists, ZooKeeper's path
//!   rules and chroot, ACL and digest helpers.
//! - [`sasl`]: SASL authentication (DIGEST-MD5 built in; `ClientBuilder::sasl_digest`).
//!
//! `docs/client.md` describes the model: states, ordering, connection loss, watch delivery and
//! backpressure; `docs/security.md` TLS (the default feature `tls`: `ClientBuilder::tls`,
//! `zk+tls://` connect strings, what each TLS error means) and SASL.

mod client;
mod driver;
mod read_only;
mod request_timing;
#[cfg(feature = "tls")]
mod tls;
mod transport;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use zk_session::fuzzing;
pub use zk_session::{acl, connect_string, ensemble_config, path, sasl, session};

pub use acl::{Acl, ClientInfo, Id};
pub use client::{
    Client, ClientBuilder, CreateOptions, MultiItem, MultiReadItem, OneshotWatcher,
    PersistentWatcher, QuorumCheck,
};
pub use ensemble_config::TlsPorts;
pub use jute;
pub use jute::{
    AddWatchMode, CreateMode, EventType, KeeperState, Perms, Stat, StringList, WatcherType,
};
#[cfg(feature = "request-timing")]
pub use request_timing::{LatencySummary, RequestTiming};
pub use session::{MultiOperation, SessionState, WatchedEvent};
#[cfg(feature = "tls")]
pub use tls::TlsOptions;
pub use zk_session::{
    AuthFailure, AuthReason, ConnectFailure, Error, ProtocolError, Result, Secret, TlsConfigError,
    TlsFailure,
};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// The examples of `docs/client.md`, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/client.md")]
pub struct ClientGuideDoctests;

/// The examples of `docs/security.md` (TLS, SASL), compiled as doctests.
#[cfg(all(doctest, feature = "tls"))]
#[doc = include_str!("../../../docs/security.md")]
pub struct SecurityGuideDoctests;
