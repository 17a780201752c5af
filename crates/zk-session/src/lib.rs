//! `zk-session`: the ZooKeeper client session as a sans-IO state machine, built on the
//! [`jute`] codec. Drive it with bytes and a clock; it opens no socket, reads no clock, spawns
//! no task and depends on no async runtime.
//!
//! [`zk-proto`](https://docs.rs/zk-proto) is the tokio client over it (the way `quinn` sits
//! over `quinn-proto`) and re-exports everything here under the same paths
//! (`zk_proto::session`, `zk_proto::path`, `zk_proto::Error`, ...): applications use
//! `zk-proto`; this crate is for another driver (another runtime, a simulator, a fuzzer) and for
//! testing the protocol without a network.
//!
//! ```
//! use std::time::Instant;
//! use zk_session::connect_string::ConnectString;
//! use zk_session::session::{Session, SessionConfig, SessionState};
//!
//! let connect: ConnectString = "127.0.0.1:2181/app".parse()?;
//! let mut session = Session::new(SessionConfig {
//!     hosts: connect.hosts().to_vec(),
//!     chroot: connect.chroot().clone(),
//!     ..SessionConfig::default()
//! });
//! let now = Instant::now();
//! // The session says which host to dial; the driver dials it and says so.
//! let (_, host) = session.poll_connect(now).expect("a host to dial at once");
//! assert_eq!(host.to_string(), "127.0.0.1:2181");
//! session.handle_connected(now);
//! // The session hands out whole frames to write (here the ConnectRequest), takes the frames
//! // read with `handle_frame`, and says when to call `handle_timeout` next.
//! let connect_request = session.poll_transmit(now).expect("the handshake");
//! assert!(connect_request.len() > 4);
//! assert!(session.poll_timeout().is_some());
//! assert_eq!(session.state(), SessionState::Connecting);
//! # Ok::<(), zk_session::Error>(())
//! ```
//!
//! # Layout
//!
//! - [`session`]: the protocol as a deterministic state machine ([`Session`](session::Session):
//!   `handle_*` inputs with an explicit `now`, `poll_*` outputs), unit-tested with scripted
//!   server frames and a virtual clock.
//! - [`connect_string`], [`path`], [`acl`]: connect strings and host lists, ZooKeeper's path
//!   rules and chroot, ACL and digest helpers.
//! - [`ensemble_config`]: the ensemble's `/zookeeper/config`, read for the client addresses.
//! - [`sasl`]: SASL mechanisms as state machines (DIGEST-MD5 built in; GSSAPI with the feature
//!   `kerberos`).
//! - [`Error`] and the failure types: every error of the client, the driver's included (how a
//!   connection or a TLS handshake failed, why TLS settings cannot be used), as plain data.
//!
//! Cargo enforces that the session knows no driver: no crate of its dependency tree is an async
//! runtime (`scripts/check-session-runtime-free.sh` checks it in CI).

pub mod acl;
pub mod connect_string;
pub mod ensemble_config;
mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod path;
pub mod sasl;
mod secret;
pub mod session;

pub use error::{
    AuthFailure, AuthReason, ConnectFailure, Error, ProtocolError, Result, TlsConfigError,
    TlsFailure,
};
pub use jute;
pub use secret::Secret;
