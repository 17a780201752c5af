//! `zk-recipes`: coordination recipes built only on the public API of [`zk_proto`].
//!
//! - [`lock`]: a mutex (optionally re-entrant), a read-write lock (Curator-compatible),
//!   semaphores (one on Curator's `InterProcessSemaphoreV2` layout), a multi-lock and a
//!   semaphore mutex (Curator's `InterProcessMultiLock` and `InterProcessSemaphoreMutex`), with
//!   fencing tokens and loss reporting;
//! - [`election`]: the leader latch and the leader selector (Curator-compatible), the master
//!   node, one-shot elections, run-while-leading;
//! - [`counter`]: a shared count (Curator's `SharedCount`) and an atomic long (Curator's
//!   `DistributedAtomicLong`), with a stream of a count's changes;
//! - [`barrier`] and [`queue`]: barriers and the double barrier (Curator's layout), the start
//!   gate, FIFO and bounded queues (a layout of their own); [`curator_queue`]: Curator's
//!   distributed queues (plain, id, priority, delay) in Curator's layout;
//! - [`cache`]: a local mirror of a subtree kept current with one persistent recursive watch;
//!   [`group`]: group membership on top of it;
//! - [`persistent`]: a node kept in place (created again when deleted, and after session
//!   expiry on a client that renews expired sessions), and Curator's TTL node.
//!
//! The recipes share one API (`docs/recipes.md`, "Conventions"): `new(&client, path, ..)` for a
//! recipe that sends nothing until called ([`Lock::new`](lock::Lock::new)),
//! `builder(&client, path, ..)` then `start()` for one with a background task
//! ([`LeaderLatch::builder`](election::LeaderLatch::builder)); a path is a `&str`; `ended()`
//! and `wait_ended()` tell why a background recipe ended; a wait is named `wait_<state>` and
//! takes `&self`; a count that every participant gives (permits, participants, capacity) is a
//! `u32`.
//!
//! Every fallible call returns [`Result`], whose error is [`Error`]: a ZooKeeper error
//! ([`Error::Zk`]), a timeout, a lost lock, a wrapped sequence counter, a counter node
//! holding data of the wrong length.
//!
//! # Timeouts
//!
//! Every call that waits for something other than a single request (for a lock, a barrier,
//! an item, room in a queue, the leadership, a node's deletion) takes `timeout:
//! Option<Duration>` as its last argument: `None` waits without a limit, `Some(t)` gives up
//! after `t` with [`Error::Timeout`] (never with `false` or `None`). The timeout bounds the
//! whole call, its requests included, so it also ends a call made while no server answers
//! (the queues' one exception: a request that claims or adds an item is awaited once sent, so
//! that the timeout never loses an item; see [`Queue::take`](queue::Queue::take)).
//! A call that gives up cleans up what it had created, as for its other errors (a lock
//! contender's node, a barrier participant's node), and a call that only observes (an
//! election's `wait_leader`) leaves the candidate in the race. The calls that only send
//! requests (`put` on a [`Queue`](queue::Queue), `try_take`, `set`, `release`, `close`, ...)
//! take no timeout: their requests are bounded by the client's request timeout
//! ([`ClientBuilder::request_timeout`](zk_proto::ClientBuilder::request_timeout)), when one
//! is set.
//!
//! ```no_run
//! # async fn example(client: zk_proto::Client) -> zk_recipes::Result<()> {
//! use std::time::Duration;
//! use zk_recipes::{Error, lock::Lock};
//!
//! match Lock::new(&client, "/locks/jobs").acquire(Some(Duration::from_secs(5))).await {
//!     Ok(guard) => guard.release().await?,
//!     Err(Error::Timeout) => { /* busy elsewhere; our contender node is gone */ }
//!     Err(error) => return Err(error),
//! }
//! # Ok(())
//! # }
//! ```
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
pub mod cache;
mod cleanup;
pub mod counter;
pub mod curator_queue;
mod deadline;
pub mod election;
mod error;
pub mod group;
pub mod lock;
pub mod persistent;
pub mod queue;
pub mod sequential;

pub use error::{Error, Result};
pub use zk_proto;

/// A count that every participant gives (permits, leases, participants, capacity: `u32`, the
/// same width on every platform and Curator's `int`), as a number of children to compare.
pub(crate) fn as_len(count: u32) -> usize {
    usize::try_from(count).unwrap_or(usize::MAX)
}

/// The examples of `docs/recipes-cache.md`, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/recipes-cache.md")]
pub struct CacheGuideDoctests;

/// The example of `docs/recipes-lock.md`, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/recipes-lock.md")]
pub struct LockGuideDoctests;

/// The example of `docs/recipes-counter.md`, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/recipes-counter.md")]
pub struct CounterGuideDoctests;
