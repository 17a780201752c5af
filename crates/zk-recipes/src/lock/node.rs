//! A contender's own node, once created.

/// A contender's node once created: its path, and from its stat the fencing token and the
/// session that owns it.
#[derive(Debug, Clone)]
pub(super) struct OwnNode {
    pub(super) path: String,
    pub(super) czxid: i64,
    /// The node's ephemeral owner: the session the lock lives and dies with (a client that
    /// renews expired sessions goes on with another).
    pub(super) session: i64,
}

impl OwnNode {
    pub(super) fn of(path: String, stat: &zk_proto::Stat) -> OwnNode {
        OwnNode {
            path,
            czxid: stat.czxid,
            session: stat.ephemeral_owner,
        }
    }

    /// The node's name (its last path component).
    pub(super) fn name(&self) -> String {
        self.path
            .rsplit('/')
            .next()
            .unwrap_or(&self.path)
            .to_owned()
    }
}
