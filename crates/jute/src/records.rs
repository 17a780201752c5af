//! Every record of the client protocol, declared once.
//!
//! The `records!` table below is the only place a record's fields are listed: the macro
//! (`src/record_macro.rs`) derives the struct, [`Encode`], [`Decode`] (with
//! [`Decode::MIN_LEN`]), the borrowed view named beside it (`X / XRef`: `XRef<'a>`, decoded from
//! a `&'a [u8]` without allocating, see [`crate::view`]), the proptest strategy and the by-name
//! registry used by the conformance tests and fuzz targets. Field order follows
//! `zookeeper-jute/src/main/resources/zookeeper.jute` of ZooKeeper 3.8; each record names its
//! reference class as `"data.X"` (`org.apache.zookeeper.data`) or `"proto.X"`
//! (`org.apache.zookeeper.proto`). See [`crate::primitive`] for how field types map to the wire.
//!
//! A field written `name: T = value` (only ever the last one) takes `value` when the input ends
//! before it, and is always encoded: `ConnectRequest.read_only`, which clients older than 3.4
//! do not send.

use bytes::{BufMut, Bytes};

use crate::codes::{
    AddWatchMode, CreateMode, ErrorCode, EventType, KeeperState, OpCode, Perms, WatcherType,
};
use crate::error::DecodeError;
use crate::reader::{Decode, Encode, Reader};
use crate::string_list::StringList;

records! {
    /// An identity: an auth scheme and an id within it.
    Id / IdRef = "data.Id" {
        /// The scheme: `world`, `auth`, `digest`, `ip`, `x509`, `sasl`, ...
        scheme: Option<String>,
        /// The id within the scheme, e.g. `anyone` or `user:BASE64(SHA1(user:password))`.
        id: Option<String>,
    }

    /// One access control entry.
    Acl / AclRef = "data.ACL" {
        /// The permissions granted.
        perms: Perms,
        /// To whom.
        id: Id,
    }

    /// A node's metadata; always 68 bytes.
    Stat / StatRef = "data.Stat" {
        /// The zxid of the change that created the node.
        czxid: i64,
        /// The zxid of the last change to the node's data.
        mzxid: i64,
        /// Creation time, ms since the epoch.
        ctime: i64,
        /// Last modification time, ms since the epoch.
        mtime: i64,
        /// Number of changes to the data.
        version: i32,
        /// Number of changes to the children.
        cversion: i32,
        /// Number of changes to the ACL.
        aversion: i32,
        /// Owning session id of an ephemeral node; 0 for persistent; special values mark
        /// containers and TTL nodes.
        ephemeral_owner: i64,
        /// Length of the data.
        data_length: i32,
        /// Number of children.
        num_children: i32,
        /// The zxid of the last change to the children.
        pzxid: i64,
    }

    /// An authenticated identity of the session, as whoAmI reports it (3.7.0 and later).
    ClientInfo / ClientInfoRef = "data.ClientInfo" {
        /// The auth scheme.
        auth_scheme: Option<String>,
        /// The user within it.
        user: Option<String>,
    }

    /// The first frame a client sends on a connection (no request header).
    ///
    /// `read_only` is not part of the 3.8 jute class: the 3.8 Java client appends it by hand
    /// after the record, and every 3.4+ server reads it. Clients older than 3.4 do not send it;
    /// such a request decodes with `read_only: false`, as the Java server reads it
    /// (`ZooKeeperServer.processConnectRequest`), and re-encodes with the byte. A server that
    /// answers old clients in kind (a ConnectResponse without its readOnly byte, as the Java
    /// server does) tells them apart by the length: `frame.len() < request.encoded_len()`.
    ConnectRequest / ConnectRequestRef = "proto.ConnectRequest" {
        /// Always 0.
        protocol_version: i32,
        /// The last zxid the client has seen, 0 on a first connect.
        last_zxid_seen: i64,
        /// The requested session timeout, ms.
        time_out: i32,
        /// The session to resume, 0 for a new one.
        session_id: i64,
        /// The session password, 16 zero bytes for a new session.
        passwd: Option<Bytes>,
        /// Whether the client accepts a read-only server; `false` when the byte is absent.
        read_only: bool = false,
    }

    /// The first frame a server sends on a connection (no reply header).
    ///
    /// `read_only` is `None` when the server omits the trailing byte (servers older than 3.4,
    /// or a client that did not send it).
    ConnectResponse / ConnectResponseRef = "proto.ConnectResponse" {
        /// Always 0.
        protocol_version: i32,
        /// The negotiated session timeout, ms; 0 means the session has expired.
        time_out: i32,
        /// The session id.
        session_id: i64,
        /// The session password to resume with.
        passwd: Option<Bytes>,
        /// Whether the server is in read-only mode.
        read_only: Option<bool>,
    }

    /// The header of every request after the connect request.
    RequestHeader / RequestHeaderRef = "proto.RequestHeader" {
        /// The request id, or a reserved one from [`crate::codes::xid`].
        xid: i32,
        /// The operation.
        op_code: OpCode,
    }

    /// The header of every server frame after the connect response.
    ReplyHeader / ReplyHeaderRef = "proto.ReplyHeader" {
        /// The xid of the request answered, or a reserved one from [`crate::codes::xid`].
        xid: i32,
        /// The server's last processed zxid (-1 in 3.8 notifications).
        zxid: i64,
        /// The result; a body follows only when it is OK.
        err: ErrorCode,
    }

    /// The header of each operation and result inside a multi.
    MultiHeader / MultiHeaderRef = "proto.MultiHeader" {
        /// The op code of the operation or result, -1 for an error result or the end marker.
        op_type: i32,
        /// True only on the end marker.
        done: bool,
        /// The error of an error result; -1 in requests and on the end marker.
        err: i32,
    }

    /// The body of a watch notification (xid -1).
    WatcherEvent / WatcherEventRef = "proto.WatcherEvent" {
        /// What happened.
        event_type: EventType,
        /// The session state (always SyncConnected from a server).
        state: KeeperState,
        /// The node it happened to.
        path: Option<String>,
    }

    /// An error code as a body: a multi error result, and the reply to addWatch.
    ErrorResponse / ErrorResponseRef = "proto.ErrorResponse" {
        /// The code.
        err: ErrorCode,
    }

    /// Adds credentials to the session (sent with xid -4, op code auth).
    AuthPacket / AuthPacketRef = "proto.AuthPacket" {
        /// Always 0.
        auth_type: i32,
        /// The scheme, e.g. `digest`.
        scheme: Option<String>,
        /// The credentials, e.g. `user:password` for digest.
        auth: Option<Bytes>,
    }

    /// create, create2 and createContainer request.
    CreateRequest / CreateRequestRef = "proto.CreateRequest" {
        /// The node path (for sequential modes, the name prefix).
        path: Option<String>,
        /// Initial data.
        data: Option<Bytes>,
        /// The ACL; must not be empty.
        acl: Option<Vec<Acl>>,
        /// The create mode.
        flags: CreateMode,
    }

    /// createTTL request (also any create mode with `ttl` -1).
    CreateTtlRequest / CreateTtlRequestRef = "proto.CreateTTLRequest" {
        /// The node path.
        path: Option<String>,
        /// Initial data.
        data: Option<Bytes>,
        /// The ACL.
        acl: Option<Vec<Acl>>,
        /// The create mode.
        flags: CreateMode,
        /// Time to live in ms, `1..=2^40-1` for TTL modes.
        ttl: i64,
    }

    /// The reply to create.
    CreateResponse / CreateResponseRef = "proto.CreateResponse" {
        /// The created path (with its sequence suffix).
        path: Option<String>,
    }

    /// The reply to create2, createContainer and createTTL.
    Create2Response / Create2ResponseRef = "proto.Create2Response" {
        /// The created path.
        path: Option<String>,
        /// The new node's stat.
        stat: Stat,
    }

    /// delete request.
    DeleteRequest / DeleteRequestRef = "proto.DeleteRequest" {
        /// The node path.
        path: Option<String>,
        /// The expected version, -1 for any.
        version: i32,
    }

    /// exists request.
    ExistsRequest / ExistsRequestRef = "proto.ExistsRequest" {
        /// The node path.
        path: Option<String>,
        /// Whether to leave a data watch (set even when the node is missing).
        watch: bool,
    }

    /// The reply to exists.
    ExistsResponse / ExistsResponseRef = "proto.ExistsResponse" {
        /// The node's stat.
        stat: Stat,
    }

    /// getData request.
    GetDataRequest / GetDataRequestRef = "proto.GetDataRequest" {
        /// The node path.
        path: Option<String>,
        /// Whether to leave a data watch.
        watch: bool,
    }

    /// The reply to getData, and to reconfig.
    GetDataResponse / GetDataResponseRef = "proto.GetDataResponse" {
        /// The data, a slice of the received frame.
        data: Option<Bytes>,
        /// The node's stat.
        stat: Stat,
    }

    /// setData request.
    SetDataRequest / SetDataRequestRef = "proto.SetDataRequest" {
        /// The node path.
        path: Option<String>,
        /// The new data.
        data: Option<Bytes>,
        /// The expected version, -1 for any.
        version: i32,
    }

    /// The reply to setData.
    SetDataResponse / SetDataResponseRef = "proto.SetDataResponse" {
        /// The node's new stat.
        stat: Stat,
    }

    /// getACL request.
    GetAclRequest / GetAclRequestRef = "proto.GetACLRequest" {
        /// The node path.
        path: Option<String>,
    }

    /// The reply to getACL.
    GetAclResponse / GetAclResponseRef = "proto.GetACLResponse" {
        /// The node's ACL.
        acl: Option<Vec<Acl>>,
        /// The node's stat.
        stat: Stat,
    }

    /// setACL request.
    SetAclRequest / SetAclRequestRef = "proto.SetACLRequest" {
        /// The node path.
        path: Option<String>,
        /// The new ACL.
        acl: Option<Vec<Acl>>,
        /// The expected ACL version (aversion), -1 for any.
        version: i32,
    }

    /// The reply to setACL.
    SetAclResponse / SetAclResponseRef = "proto.SetACLResponse" {
        /// The node's new stat.
        stat: Stat,
    }

    /// getChildren request.
    GetChildrenRequest / GetChildrenRequestRef = "proto.GetChildrenRequest" {
        /// The node path.
        path: Option<String>,
        /// Whether to leave a child watch.
        watch: bool,
    }

    /// The reply to getChildren.
    GetChildrenResponse / GetChildrenResponseRef = "proto.GetChildrenResponse" {
        /// The children's names (not paths).
        children: Option<StringList>,
    }

    /// getChildren2 request.
    GetChildren2Request / GetChildren2RequestRef = "proto.GetChildren2Request" {
        /// The node path.
        path: Option<String>,
        /// Whether to leave a child watch.
        watch: bool,
    }

    /// The reply to getChildren2.
    GetChildren2Response / GetChildren2ResponseRef = "proto.GetChildren2Response" {
        /// The children's names (not paths).
        children: Option<StringList>,
        /// The node's stat.
        stat: Stat,
    }

    /// getAllChildrenNumber request.
    GetAllChildrenNumberRequest / GetAllChildrenNumberRequestRef = "proto.GetAllChildrenNumberRequest" {
        /// The node path.
        path: Option<String>,
    }

    /// The reply to getAllChildrenNumber.
    GetAllChildrenNumberResponse / GetAllChildrenNumberResponseRef = "proto.GetAllChildrenNumberResponse" {
        /// The number of descendants (the node itself not counted).
        total_number: i32,
    }

    /// getEphemerals request.
    GetEphemeralsRequest / GetEphemeralsRequestRef = "proto.GetEphemeralsRequest" {
        /// A raw string prefix of server paths; `""` or `/` for all.
        prefix_path: Option<String>,
    }

    /// The reply to getEphemerals.
    GetEphemeralsResponse / GetEphemeralsResponseRef = "proto.GetEphemeralsResponse" {
        /// The session's ephemeral nodes, as full server paths.
        ephemerals: Option<StringList>,
    }

    /// sync request.
    SyncRequest / SyncRequestRef = "proto.SyncRequest" {
        /// The node path.
        path: Option<String>,
    }

    /// The reply to sync.
    SyncResponse / SyncResponseRef = "proto.SyncResponse" {
        /// The server-side path synced.
        path: Option<String>,
    }

    /// check request: a version check, for use inside a multi.
    CheckVersionRequest / CheckVersionRequestRef = "proto.CheckVersionRequest" {
        /// The node path.
        path: Option<String>,
        /// The expected version.
        version: i32,
    }

    /// Re-registers watches after a reconnect.
    SetWatches / SetWatchesRef = "proto.SetWatches" {
        /// The last zxid the client has seen: changes after it fire at once.
        relative_zxid: i64,
        /// Paths with a data watch.
        data_watches: Option<StringList>,
        /// Paths with an exist watch.
        exist_watches: Option<StringList>,
        /// Paths with a child watch.
        child_watches: Option<StringList>,
    }

    /// Re-registers watches after a reconnect, persistent ones included (3.6.0 and later).
    SetWatches2 / SetWatches2Ref = "proto.SetWatches2" {
        /// The last zxid the client has seen.
        relative_zxid: i64,
        /// Paths with a data watch.
        data_watches: Option<StringList>,
        /// Paths with an exist watch.
        exist_watches: Option<StringList>,
        /// Paths with a child watch.
        child_watches: Option<StringList>,
        /// Paths with a persistent watch.
        persistent_watches: Option<StringList>,
        /// Paths with a persistent recursive watch.
        persistent_recursive_watches: Option<StringList>,
    }

    /// addWatch request; the reply body is an [`ErrorResponse`].
    AddWatchRequest / AddWatchRequestRef = "proto.AddWatchRequest" {
        /// The node path.
        path: Option<String>,
        /// Persistent or persistent recursive.
        mode: AddWatchMode,
    }

    /// checkWatches request.
    CheckWatchesRequest / CheckWatchesRequestRef = "proto.CheckWatchesRequest" {
        /// The node path.
        path: Option<String>,
        /// Which watches.
        watcher_type: WatcherType,
    }

    /// removeWatches request.
    RemoveWatchesRequest / RemoveWatchesRequestRef = "proto.RemoveWatchesRequest" {
        /// The node path.
        path: Option<String>,
        /// Which watches.
        watcher_type: WatcherType,
    }

    /// reconfig request; the reply is a [`GetDataResponse`] with the new configuration.
    ReconfigRequest / ReconfigRequestRef = "proto.ReconfigRequest" {
        /// Servers to add (incremental mode).
        joining_servers: Option<String>,
        /// Server ids to remove (incremental mode).
        leaving_servers: Option<String>,
        /// The whole new membership (non-incremental mode).
        new_members: Option<String>,
        /// The expected current config version, -1 for any.
        cur_config_id: i64,
    }

    /// The reply to whoAmI (3.7.0 and later; the request has no body).
    WhoAmIResponse / WhoAmIResponseRef = "proto.WhoAmIResponse" {
        /// The session's identities.
        client_info: Option<Vec<ClientInfo>>,
    }

    /// A SASL token from the client (op code sasl).
    GetSaslRequest / GetSaslRequestRef = "proto.GetSASLRequest" {
        /// The token.
        token: Option<Bytes>,
    }

    /// A SASL token; defined by the protocol, not sent by the Java client.
    SetSaslRequest / SetSaslRequestRef = "proto.SetSASLRequest" {
        /// The token.
        token: Option<Bytes>,
    }

    /// The server's SASL token.
    SetSaslResponse / SetSaslResponseRef = "proto.SetSASLResponse" {
        /// The token.
        token: Option<Bytes>,
    }

    /// getMaxChildren request: defined in jute, no op code uses it.
    GetMaxChildrenRequest / GetMaxChildrenRequestRef = "proto.GetMaxChildrenRequest" {
        /// The node path.
        path: Option<String>,
    }

    /// getMaxChildren reply: defined in jute, no op code uses it.
    GetMaxChildrenResponse / GetMaxChildrenResponseRef = "proto.GetMaxChildrenResponse" {
        /// The limit.
        max: i32,
    }

    /// setMaxChildren request: defined in jute, no op code uses it.
    SetMaxChildrenRequest / SetMaxChildrenRequestRef = "proto.SetMaxChildrenRequest" {
        /// The node path.
        path: Option<String>,
        /// The limit.
        max: i32,
    }
}
