//! What a call takes beside its path: how to create a node (zk-session's [`CreateOptions`]),
//! and the items of a multi.

use bytes::Bytes;
use jute::{Stat, StringList};

use crate::Error;
pub use crate::session::CreateOptions;

/// The result of one operation of a [`Client::multi`](crate::Client::multi) transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiItem {
    /// A node was created; the Stat comes from servers from 3.8.2 on (3.8.0 and 3.8.1 send
    /// none inside a multi).
    Created {
        /// The created path (with its sequence suffix, chroot stripped).
        path: String,
        /// The new node's Stat, when the server sends it.
        stat: Option<Stat>,
    },
    /// A node was deleted.
    Deleted,
    /// Data was set.
    DataSet {
        /// The node's new Stat.
        stat: Stat,
    },
    /// A version check passed.
    Checked,
    /// The operation failed, or (in a failed transaction) was rolled back: the failing
    /// operation carries its error, those after it [`Error::RuntimeInconsistency`], those
    /// before it `None`... see [`MultiItem::error`].
    Failed(Option<Error>),
}

impl MultiItem {
    /// The error of this operation, if it failed.
    pub fn error(&self) -> Option<&Error> {
        match self {
            MultiItem::Failed(error) => error.as_ref(),
            _ => None,
        }
    }
}

/// The result of one read of a [`Client::multi_read`](crate::Client::multi_read).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiReadItem {
    /// getChildren's result (see [`Client::get_children`](crate::Client::get_children)).
    Children(StringList),
    /// getData's result.
    Data(Bytes, Stat),
}
