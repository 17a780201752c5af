//! Fault tools on tokio: a fault-injecting TCP proxy ([`FaultProxy`]) to put between a client
//! and a real server, and a hostile scripted server for what a real server never sends.
//!
//! Both bind `127.0.0.1` only and need a running tokio runtime.

mod hostile;
mod proxy;

pub use hostile::{
    FIXED_DATA, HUGE_LENGTH, HostileServer, Misbehaviour, NEGATIVE_LENGTH, Reaction,
};
pub use proxy::{CutAfterRequest, FaultProxy};
