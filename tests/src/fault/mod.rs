//! Fault tools on tokio: a fault-injecting TCP proxy ([`FaultProxy`]) to put between a client
//! and a real server, and a hostile scripted server for what a real server never sends.
//!
//! Both bind `127.0.0.1` only and need a running tokio runtime.

mod proxy;

pub use proxy::{CutAfterRequest, FaultProxy};
