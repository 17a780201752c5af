//! The recipes' error type, shared by every recipe.

/// Why a recipe call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A ZooKeeper call failed (for example [`zk_proto::Error::SessionExpired`], or
    /// [`zk_proto::Error::Closed`] for an election that was closed).
    #[error(transparent)]
    Zk(#[from] zk_proto::Error),
    /// The call's `timeout` passed before what it waited for happened. Whatever the call had
    /// created is cleaned up as its documentation says, as for its other errors (a lock
    /// contender's node, a barrier participant's node, ... are deleted); a call that only
    /// observes leaves everything as it was (an election candidate stays in the race).
    #[error("the call's timeout passed first")]
    Timeout,
    /// The lock (or the contender's node) is gone: the session ended, or the node was deleted
    /// by someone else.
    #[error("the lock was lost (session ended or node deleted)")]
    Lost,
    /// The parent's sequence counter wrapped past `i32::MAX`: the order of the contenders can
    /// no longer be told from their names. Recreate the lock's parent node.
    #[error("the sequence counter of the lock node wrapped (child {child})")]
    SequenceWrapped {
        /// The child whose sequence number could not be read.
        child: String,
    },
    /// A recipe node holds data of the wrong length for its value (a
    /// [`SharedCount`](crate::counter::SharedCount) needs 4 bytes, an
    /// [`AtomicLong`](crate::counter::AtomicLong) 8 or none); it is never read as a number.
    #[error("node {path} holds {found} bytes, not a {expected}-byte value")]
    BadValue {
        /// The node.
        path: String,
        /// The length the recipe reads.
        expected: usize,
        /// The length found.
        found: usize,
    },
}

/// The result of the recipes' calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;
