//! `zk-proto`: the ZooKeeper client session, built on the [`jute`] codec.
//!
//! This crate is at its start: for now it re-exports the codec it is built on. The session state
//! machine, the connection driver and the typed client follow in their own issue.

pub use jute;
