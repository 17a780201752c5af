//! `zk-recipes`: coordination recipes built only on the public API of [`zk_proto`].
//!
//! This crate is at its start: it builds against `zk-proto` and holds no recipe yet. Lock,
//! leader election, barriers and queues follow in their own issue.

pub use zk_proto;
