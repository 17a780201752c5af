//! `zk-recipes`: coordination recipes built only on the public API of [`zk_proto`].
//!
//! - [`lock`]: a mutex, a read-write lock (Curator-compatible) and a semaphore, with fencing
//!   tokens and loss reporting;
//! - [`election`]: the leader latch (Curator-compatible), the master node, one-shot elections,
//!   run-while-leading;
//! - [`barrier`] and [`queue`]: barriers, the double barrier, the start gate, FIFO and bounded
//!   queues.
//!
//! # Runtime
//!
//! Like `zk_proto`, the recipes run on a tokio runtime: they spawn tasks (a latch's candidate,
//! the background delete of a dropped guard) and use tokio's timers, so calls made outside a
//! runtime panic. An application needs tokio with the `rt` (or `rt-multi-thread`), `time` and
//! `macros` (for `#[tokio::main]`) features; `zk_proto` itself enables `net`, `io-util`,
//! `sync` and `time` for its own use. For example:
//!
//! ```toml
//! tokio = { version = "1", features = ["rt-multi-thread", "macros", "time"] }
//! ```

pub mod barrier;
mod cleanup;
mod deadline;
pub mod election;
pub mod lock;
pub mod queue;
pub mod sequential;

pub use zk_proto;
