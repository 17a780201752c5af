//! The protocol's numeric codes, each declared in one table.
//!
//! Every code type is a newtype over its wire integer with a named constant per known value, so
//! a value this crate does not know (from a newer server, or from a hostile one) survives
//! decoding as itself and is never a panic: [`OpCode::name`] and friends return `None` for it.

use std::fmt;

use bytes::BufMut;

use crate::error::DecodeError;
use crate::reader::{Decode, Encode, Reader};

/// Declares a code newtype, its constants, and its name and description lookups, from one table.
macro_rules! code_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident;
        $( $konst:ident = $value:literal, $label:literal, $desc:literal; )*
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub i32);

        impl $name {
            $(
                #[doc = concat!("`", stringify!($value), "` ", $label, ": ", $desc)]
                pub const $konst: $name = $name($value);
            )*

            /// Every named value, in table order.
            pub const ALL: &'static [$name] = &[$($name::$konst),*];

            /// The reference implementation's name for this value, `None` if unknown.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some($label), )*
                    _ => None,
                }
            }

            /// A short description of this value, `None` if unknown.
            pub const fn description(self) -> Option<&'static str> {
                match self.0 {
                    $( $value => Some($desc), )*
                    _ => None,
                }
            }

            /// Whether this value is one of the table's.
            pub const fn is_known(self) -> bool {
                self.name().is_some()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => write!(f, "{}({})", name, self.0),
                    None => write!(f, "{}(unknown {})", stringify!($name), self.0),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "unknown {} {}", stringify!($name), self.0),
                }
            }
        }

        impl From<i32> for $name {
            fn from(value: i32) -> Self {
                $name(value)
            }
        }

        impl From<$name> for i32 {
            fn from(value: $name) -> i32 {
                value.0
            }
        }

        impl Encode for $name {
            fn encoded_len(&self) -> usize {
                4
            }
            fn encode<B: BufMut>(&self, buf: &mut B) {
                self.0.encode(buf)
            }
        }

        impl Decode for $name {
            const MIN_LEN: usize = 4;
            fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
                reader.read_i32().map($name)
            }
        }

        #[cfg(any(test, feature = "proptest"))]
        impl crate::strategy::Generate for $name {
            fn strategy() -> proptest::strategy::BoxedStrategy<Self> {
                use proptest::prelude::*;
                prop_oneof![
                    3 => proptest::sample::select($name::ALL),
                    1 => any::<i32>().prop_map($name),
                ]
                .boxed()
            }
        }
    };
}

code_table! {
    /// The operation of a request (`ZooDefs.OpCode`), sent in [`RequestHeader`](crate::RequestHeader).
    pub struct OpCode;
    NOTIFICATION = 0, "notification", "watch event, server to client only (as xid -1)";
    CREATE = 1, "create", "create a node";
    DELETE = 2, "delete", "delete a node";
    EXISTS = 3, "exists", "stat a node, optionally watching it";
    GET_DATA = 4, "getData", "read a node's data and stat";
    SET_DATA = 5, "setData", "write a node's data";
    GET_ACL = 6, "getACL", "read a node's ACL";
    SET_ACL = 7, "setACL", "write a node's ACL";
    GET_CHILDREN = 8, "getChildren", "list a node's children";
    SYNC = 9, "sync", "bring the server up to date with the leader";
    PING = 11, "ping", "keep the session alive";
    GET_CHILDREN2 = 12, "getChildren2", "list a node's children with its stat";
    CHECK = 13, "check", "check a node's version (inside multi)";
    MULTI = 14, "multi", "an atomic transaction of writes";
    CREATE2 = 15, "create2", "create a node, replying with its stat";
    RECONFIG = 16, "reconfig", "change the ensemble membership";
    CHECK_WATCHES = 17, "checkWatches", "check that watches exist";
    REMOVE_WATCHES = 18, "removeWatches", "remove watches";
    CREATE_CONTAINER = 19, "createContainer", "create a container node";
    DELETE_CONTAINER = 20, "deleteContainer", "server-internal container removal";
    CREATE_TTL = 21, "createTTL", "create a node with a time to live";
    MULTI_READ = 22, "multiRead", "several independent reads";
    AUTH = 100, "auth", "add authentication (xid -4)";
    SET_WATCHES = 101, "setWatches", "re-register watches after a reconnect";
    SASL = 102, "sasl", "a SASL authentication step";
    GET_EPHEMERALS = 103, "getEphemerals", "list the session's ephemeral nodes";
    GET_ALL_CHILDREN_NUMBER = 104, "getAllChildrenNumber", "count every descendant of a node";
    SET_WATCHES2 = 105, "setWatches2", "re-register watches, persistent ones included";
    ADD_WATCH = 106, "addWatch", "add a persistent or persistent recursive watch";
    WHO_AM_I = 107, "whoAmI", "list the session's authenticated identities";
    CREATE_SESSION = -10, "createSession", "transaction type only";
    CLOSE_SESSION = -11, "closeSession", "end the session";
    ERROR = -1, "error", "transaction and multi result type of a failed operation";
}

code_table! {
    /// A result code (`KeeperException.Code`), sent in [`ReplyHeader`](crate::ReplyHeader) and
    /// in multi results.
    pub struct ErrorCode;
    OK = 0, "OK", "everything is fine";
    SYSTEM_ERROR = -1, "SystemError", "range marker of system errors, never sent";
    RUNTIME_INCONSISTENCY = -2, "RuntimeInconsistency", "a runtime inconsistency was found (in a multi: an earlier operation failed)";
    DATA_INCONSISTENCY = -3, "DataInconsistency", "a data inconsistency was found";
    CONNECTION_LOSS = -4, "ConnectionLoss", "connection to the server has been lost";
    MARSHALLING_ERROR = -5, "MarshallingError", "error while marshalling or unmarshalling data";
    UNIMPLEMENTED = -6, "Unimplemented", "operation is unimplemented";
    OPERATION_TIMEOUT = -7, "OperationTimeout", "operation timeout";
    BAD_ARGUMENTS = -8, "BadArguments", "invalid arguments";
    UNKNOWN_SESSION = -12, "UnknownSession", "unknown session (internal server use)";
    NEW_CONFIG_NO_QUORUM = -13, "NewConfigNoQuorum", "no quorum of the new config is connected and up-to-date with the leader";
    RECONFIG_IN_PROGRESS = -14, "ReconfigInProgress", "another reconfiguration is in progress";
    API_ERROR = -100, "APIError", "range marker of API errors, never sent";
    NO_NODE = -101, "NoNode", "node does not exist";
    NO_AUTH = -102, "NoAuth", "not authenticated";
    BAD_VERSION = -103, "BadVersion", "version conflict";
    NO_CHILDREN_FOR_EPHEMERALS = -108, "NoChildrenForEphemerals", "ephemeral nodes may not have children";
    NODE_EXISTS = -110, "NodeExists", "the node already exists";
    NOT_EMPTY = -111, "NotEmpty", "the node has children";
    SESSION_EXPIRED = -112, "SessionExpired", "the session has been expired by the server";
    INVALID_CALLBACK = -113, "InvalidCallback", "invalid callback specified";
    INVALID_ACL = -114, "InvalidACL", "invalid ACL specified";
    AUTH_FAILED = -115, "AuthFailed", "client authentication failed";
    SESSION_MOVED = -118, "SessionMoved", "session moved to another server, so operation is ignored";
    NOT_READ_ONLY = -119, "NotReadOnly", "state-changing request is passed to read-only server";
    EPHEMERAL_ON_LOCAL_SESSION = -120, "EphemeralOnLocalSession", "attempt to create ephemeral node on a local session";
    NO_WATCHER = -121, "NoWatcher", "attempts to remove a non-existing watcher";
    REQUEST_TIMEOUT = -122, "RequestTimeout", "request not completed within max allowed time";
    RECONFIG_DISABLED = -123, "ReconfigDisabled", "attempts to perform a reconfiguration operation when reconfiguration feature is disabled";
    SESSION_CLOSED_REQUIRE_SASL_AUTH = -124, "SessionClosedRequireSaslAuth", "the session has been closed by server because server requires client to do authentication";
    QUOTA_EXCEEDED = -125, "QuotaExceeded", "exceeded the quota that was set on the path";
    THROTTLED_OP = -127, "ThrottledOp", "operation was throttled and not executed at all; retry with back-off";
}

code_table! {
    /// The type of a watch event (`Watcher.Event.EventType`).
    pub struct EventType;
    NONE = -1, "None", "a session state change, not a node event (client side)";
    NODE_CREATED = 1, "NodeCreated", "the node was created";
    NODE_DELETED = 2, "NodeDeleted", "the node was deleted";
    NODE_DATA_CHANGED = 3, "NodeDataChanged", "the node's data changed";
    NODE_CHILDREN_CHANGED = 4, "NodeChildrenChanged", "the node's children changed";
    DATA_WATCH_REMOVED = 5, "DataWatchRemoved", "a data watch was removed (client side)";
    CHILD_WATCH_REMOVED = 6, "ChildWatchRemoved", "a child watch was removed (client side)";
    PERSISTENT_WATCH_REMOVED = 7, "PersistentWatchRemoved", "a persistent watch was removed (client side)";
}

code_table! {
    /// The session state carried by a watch event (`Watcher.Event.KeeperState`).
    pub struct KeeperState;
    UNKNOWN = -1, "Unknown", "deprecated, unused";
    DISCONNECTED = 0, "Disconnected", "the client is not connected to any server";
    NO_SYNC_CONNECTED = 1, "NoSyncConnected", "deprecated, unused";
    SYNC_CONNECTED = 3, "SyncConnected", "connected to a server; every server notification carries it";
    AUTH_FAILED = 4, "AuthFailed", "authentication failed";
    CONNECTED_READ_ONLY = 5, "ConnectedReadOnly", "connected to a read-only server";
    SASL_AUTHENTICATED = 6, "SaslAuthenticated", "SASL authentication succeeded";
    EXPIRED = -112, "Expired", "the session has expired";
    CLOSED = 7, "Closed", "the client closed the session (client side)";
}

code_table! {
    /// Which watches checkWatches and removeWatches select (`Watcher.WatcherType`).
    ///
    /// `PERSISTENT` and `PERSISTENT_RECURSIVE` exist only from ZooKeeper 3.9.0; a 3.8 server
    /// answers them with MarshallingError.
    pub struct WatcherType;
    CHILDREN = 1, "Children", "child watches";
    DATA = 2, "Data", "data and exist watches";
    ANY = 3, "Any", "every watch on the path";
    PERSISTENT = 4, "Persistent", "persistent watches (3.9.0 and later)";
    PERSISTENT_RECURSIVE = 5, "PersistentRecursive", "persistent recursive watches (3.9.0 and later)";
}

code_table! {
    /// The mode of an addWatch request (`ZooDefs.AddWatchModes`).
    pub struct AddWatchMode;
    PERSISTENT = 0, "PERSISTENT", "fires on every change of the node and stays";
    PERSISTENT_RECURSIVE = 1, "PERSISTENT_RECURSIVE", "fires on every change of the node or any descendant and stays";
}

code_table! {
    /// The flags of a create request (`CreateMode`).
    pub struct CreateMode;
    PERSISTENT = 0, "PERSISTENT", "stays until deleted";
    EPHEMERAL = 1, "EPHEMERAL", "deleted when the session ends; cannot have children";
    PERSISTENT_SEQUENTIAL = 2, "PERSISTENT_SEQUENTIAL", "persistent, with a sequence number appended to the name";
    EPHEMERAL_SEQUENTIAL = 3, "EPHEMERAL_SEQUENTIAL", "ephemeral, with a sequence number appended to the name";
    CONTAINER = 4, "CONTAINER", "deleted by the server once its last child is gone (op code createContainer)";
    PERSISTENT_WITH_TTL = 5, "PERSISTENT_WITH_TTL", "deleted when unmodified and childless for its TTL (op code createTTL)";
    PERSISTENT_SEQUENTIAL_WITH_TTL = 6, "PERSISTENT_SEQUENTIAL_WITH_TTL", "sequential, deleted when unmodified and childless for its TTL (op code createTTL)";
}

impl CreateMode {
    /// Whether the node ends with the session.
    pub const fn is_ephemeral(self) -> bool {
        matches!(self, Self::EPHEMERAL | Self::EPHEMERAL_SEQUENTIAL)
    }

    /// Whether the server appends a sequence number to the name.
    pub const fn is_sequential(self) -> bool {
        matches!(
            self,
            Self::PERSISTENT_SEQUENTIAL
                | Self::EPHEMERAL_SEQUENTIAL
                | Self::PERSISTENT_SEQUENTIAL_WITH_TTL
        )
    }

    /// Whether this is a container node.
    pub const fn is_container(self) -> bool {
        matches!(self, Self::CONTAINER)
    }

    /// Whether the node carries a time to live.
    pub const fn is_ttl(self) -> bool {
        matches!(
            self,
            Self::PERSISTENT_WITH_TTL | Self::PERSISTENT_SEQUENTIAL_WITH_TTL
        )
    }
}

/// Access permission bits of an [`Acl`](crate::Acl) (`ZooDefs.Perms`).
///
/// A bit set, not an enumeration: any combination is valid, and unknown bits are kept.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Perms(pub i32);

impl Perms {
    /// Read the data and list the children.
    pub const READ: Perms = Perms(1);
    /// Set the data.
    pub const WRITE: Perms = Perms(2);
    /// Create children.
    pub const CREATE: Perms = Perms(4);
    /// Delete children.
    pub const DELETE: Perms = Perms(8);
    /// Set the ACL.
    pub const ADMIN: Perms = Perms(16);
    /// Every permission.
    pub const ALL: Perms = Perms(31);

    const NAMED: [(Perms, &'static str); 5] = [
        (Self::READ, "READ"),
        (Self::WRITE, "WRITE"),
        (Self::CREATE, "CREATE"),
        (Self::DELETE, "DELETE"),
        (Self::ADMIN, "ADMIN"),
    ];

    /// Whether every bit of `other` is set here.
    pub const fn contains(self, other: Perms) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Perms {
    type Output = Perms;
    fn bitor(self, rhs: Perms) -> Perms {
        Perms(self.0 | rhs.0)
    }
}

impl fmt::Debug for Perms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        let mut first = true;
        for (bit, name) in Self::NAMED {
            if self.contains(bit) {
                f.write_str(if first { "" } else { "|" })?;
                f.write_str(name)?;
                rest &= !bit.0;
                first = false;
            }
        }
        if rest != 0 || first {
            write!(f, "{}{:#x}", if first { "" } else { "|" }, rest)?;
        }
        Ok(())
    }
}

impl Encode for Perms {
    fn encoded_len(&self) -> usize {
        4
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        self.0.encode(buf)
    }
}

impl Decode for Perms {
    const MIN_LEN: usize = 4;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        reader.read_i32().map(Perms)
    }
}

#[cfg(any(test, feature = "proptest"))]
impl crate::strategy::Generate for Perms {
    fn strategy() -> proptest::strategy::BoxedStrategy<Self> {
        use proptest::prelude::*;
        any::<i32>().prop_map(Perms).boxed()
    }
}

/// Reserved request ids (xids). Normal requests use `1..=i32::MAX - 1`.
pub mod xid {
    /// A watch notification (server to client only).
    pub const NOTIFICATION: i32 = -1;
    /// A ping; the server always answers pings with this xid.
    pub const PING: i32 = -2;
    /// An auth packet; its reply can overtake replies to earlier requests.
    pub const AUTH: i32 = -4;
    /// SetWatches after a reconnect, by the C client's convention (the server echoes any xid).
    pub const SET_WATCHES: i32 = -8;
}
