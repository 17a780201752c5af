//! `zk-recipes`: coordination recipes built only on the public API of [`zk_proto`].

pub mod barrier;
mod cleanup;
mod deadline;
pub mod election;
pub mod lock;
pub mod queue;
pub mod sequential;

pub use zk_proto;
