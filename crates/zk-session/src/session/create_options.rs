//! [`CreateOptions`]: how to create a node, as `Client::create` and
//! [`MultiOperation::create`] take it.

use std::time::Duration;

use bytes::Bytes;
use jute::CreateMode;

use super::MultiOperation;
use crate::acl::Acl;

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

    /// The time to live in milliseconds, as a request carries it (saturating at `i64::MAX`;
    /// the session refuses a TTL over [`MAX_TTL_MS`](super::MAX_TTL_MS)); `None` without one.
    pub fn ttl_ms(&self) -> Option<i64> {
        self.ttl
            .map(|ttl| i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
    }
}

impl MultiOperation {
    /// Creates a node as `Client::create` (of `zk-proto`) does with the same
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
