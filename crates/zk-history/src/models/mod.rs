//! Ready-made models: a ZooKeeper node as a versioned [register](Register), a [counter](Counter)
//! (Curator's `DistributedAtomicLong`), and a [set](SetModel) (group membership).

mod counter;
mod register;
mod set;

pub use counter::{Counter, CounterOp};
pub use register::{Register, RegisterOp, RegisterRet, RegisterState, Version};
pub use set::{SetModel, SetOp, SetRet};
