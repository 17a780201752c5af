//! What a call takes beside its path: how to create a node, and the items of a multi.

use std::time::Duration;

use bytes::Bytes;
use jute::{CreateMode, Stat};

use crate::acl::Acl;

use crate::error::Error;
use crate::session::MultiOperation;

/// How to create a node: mode, ACL and (for TTL modes) time to live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateOptions {
    /// The create mode.
    pub mode: CreateMode,
    /// The ACL; [`acl::open_acl_unsafe`](crate::acl::open_acl_unsafe) by default.
    pub acl: Vec<Acl>,
    /// Time to live for the TTL modes.
    pub ttl: Option<Duration>,
}

impl CreateOptions {
    /// `mode` with the open ACL and no TTL.
    pub fn new(mode: CreateMode) -> Self {
        Self {
            mode,
            acl: crate::acl::open_acl_unsafe(),
            ttl: None,
        }
    }

    /// A persistent node with the open ACL.
    pub fn persistent() -> Self {
        Self::new(CreateMode::PERSISTENT)
    }

    /// An ephemeral node with the open ACL.
    pub fn ephemeral() -> Self {
        Self::new(CreateMode::EPHEMERAL)
    }

    /// Replaces the ACL.
    #[must_use]
    pub fn with_acl(mut self, acl: Vec<Acl>) -> Self {
        self.acl = acl;
        self
    }

    /// Sets the time to live (TTL modes only).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    pub(super) fn ttl_ms(&self) -> Option<i64> {
        self.ttl
            .map(|ttl| i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
    }
}

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
    /// getChildren's result.
    Children(Vec<String>),
    /// getData's result.
    Data(Bytes, Stat),
}

impl MultiOperation {
    /// Creates a node as [`Client::create`](crate::Client::create) does with the same
    /// options (mode, ACL, TTL).
    pub fn create(
        path: impl Into<String>,
        data: impl Into<Bytes>,
        options: &CreateOptions,
    ) -> Self {
        MultiOperation::Create {
            path: path.into(),
            data: data.into(),
            acl: options.acl.clone(),
            mode: options.mode,
            ttl: options.ttl_ms(),
        }
    }
}
