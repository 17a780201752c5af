//! What a caller can ask of the session, and how each request is checked and encoded.

use bytes::Bytes;
use jute::*;

use crate::acl::{Acl, to_wire};
use crate::ensemble_config::CONFIG_NODE;

use super::watch::WatchKind;
use crate::error::Error;
use crate::path::{Chroot, validate_path, validate_sequential_prefix};

/// The largest TTL a server accepts, ms (`EphemeralType.TTL.maxValue`, 2^40 - 1).
pub const MAX_TTL_MS: i64 = (1 << 40) - 1;

/// One operation of a [`Op::Multi`] transaction or [`Op::MultiRead`], with client paths.
///
/// Build one with the constructors: [`create`](Self::create) (from
/// [`CreateOptions`](super::CreateOptions), as `Client::create` takes them),
/// [`delete`](Self::delete), [`set_data`](Self::set_data), [`check`](Self::check) (versions
/// are `Option<i32>` as everywhere in the client: `None` for any version),
/// [`get_data`](Self::get_data) and [`get_children`](Self::get_children).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiOperation {
    /// Create a node (its result carries the Stat on servers from 3.8.2; see zk-proto's
    /// `MultiItem::Created`).
    Create {
        /// Path, or name prefix for sequential modes.
        path: String,
        /// Initial data.
        data: Bytes,
        /// The ACL.
        acl: Vec<Acl>,
        /// The mode (TTL modes need `ttl`).
        mode: CreateMode,
        /// Time to live, ms, for the TTL modes.
        ttl: Option<i64>,
    },
    /// Delete a node at `version` (`None`: any).
    Delete {
        /// Path.
        path: String,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// Set data at `version` (`None`: any).
    SetData {
        /// Path.
        path: String,
        /// New data.
        data: Bytes,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// Fail the transaction unless the node exists (with `version`, if given).
    Check {
        /// Path.
        path: String,
        /// Expected version, `None` for any (the node must exist).
        version: Option<i32>,
    },
    /// Read a node's children (multiRead only).
    GetChildren {
        /// Path.
        path: String,
    },
    /// Read a node's data (multiRead only).
    GetData {
        /// Path.
        path: String,
    },
}

impl MultiOperation {
    /// Deletes the node at `path` if its version is `version` (`None`: any).
    pub fn delete(path: impl Into<String>, version: Option<i32>) -> Self {
        MultiOperation::Delete {
            path: path.into(),
            version,
        }
    }

    /// Sets the data of `path` if its version is `version` (`None`: any).
    pub fn set_data(path: impl Into<String>, data: impl Into<Bytes>, version: Option<i32>) -> Self {
        MultiOperation::SetData {
            path: path.into(),
            data: data.into(),
            version,
        }
    }

    /// Fails the transaction unless `path` exists, at `version` if given.
    pub fn check(path: impl Into<String>, version: Option<i32>) -> Self {
        MultiOperation::Check {
            path: path.into(),
            version,
        }
    }

    /// Reads the data of `path` (multiRead only).
    pub fn get_data(path: impl Into<String>) -> Self {
        MultiOperation::GetData { path: path.into() }
    }

    /// Lists the children of `path` (multiRead only).
    pub fn get_children(path: impl Into<String>) -> Self {
        MultiOperation::GetChildren { path: path.into() }
    }
}

/// A request for the session, with paths as the caller sees them (before the chroot).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// create, create2, createContainer or createTTL, by `mode`; always replies with the Stat.
    Create {
        /// Path, or name prefix for sequential modes.
        path: String,
        /// Initial data.
        data: Bytes,
        /// The ACL (must not be empty).
        acl: Vec<Acl>,
        /// The mode.
        mode: CreateMode,
        /// Time to live, ms, for the TTL modes (1 ..= 2^40-1); must be `None` otherwise.
        ttl: Option<i64>,
    },
    /// delete.
    Delete {
        /// Path.
        path: String,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// exists, optionally leaving an exist watch (also when the node is missing).
    Exists {
        /// Path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// getData, optionally leaving a data watch.
    GetData {
        /// Path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// setData.
    SetData {
        /// Path.
        path: String,
        /// New data.
        data: Bytes,
        /// Expected version, `None` for any.
        version: Option<i32>,
    },
    /// getACL.
    GetAcl {
        /// Path.
        path: String,
    },
    /// setACL.
    SetAcl {
        /// Path.
        path: String,
        /// The new ACL.
        acl: Vec<Acl>,
        /// Expected ACL version, `None` for any.
        version: Option<i32>,
    },
    /// getChildren, optionally leaving a child watch.
    GetChildren {
        /// Path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// getChildren2 (children and the Stat), optionally leaving a child watch.
    GetChildren2 {
        /// Path.
        path: String,
        /// Leave a watch.
        watch: bool,
    },
    /// getAllChildrenNumber.
    GetAllChildrenNumber {
        /// Path.
        path: String,
    },
    /// getEphemerals under a raw string prefix (`""` or `"/"`: all of them).
    GetEphemerals {
        /// Prefix of the paths, not validated as a path.
        prefix: String,
    },
    /// sync.
    Sync {
        /// Path.
        path: String,
    },
    /// multi: an atomic transaction of writes and checks.
    Multi(Vec<MultiOperation>),
    /// multiRead: independent reads.
    MultiRead(Vec<MultiOperation>),
    /// addWatch: a persistent (recursive) watch.
    AddWatch {
        /// Path.
        path: String,
        /// Persistent or persistent recursive.
        mode: AddWatchMode,
    },
    /// removeWatches.
    RemoveWatches {
        /// Path.
        path: String,
        /// Which watches.
        watcher_type: WatcherType,
    },
    /// checkWatches.
    CheckWatches {
        /// Path.
        path: String,
        /// Which watches.
        watcher_type: WatcherType,
    },
    /// reconfig.
    Reconfig(ReconfigRequest),
    /// getData of `/zookeeper/config`, the ensemble's configuration, outside any chroot (as
    /// the Java client's `getConfig`), optionally leaving a data watch.
    GetConfig {
        /// Leave a watch.
        watch: bool,
    },
    /// whoAmI.
    WhoAmI,
}

/// What to do with a successful reply besides handing it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterReply {
    Nothing,
    /// Arm a watch of this kind on this server path (on OK; for exists also on NoNode).
    Watch(String, WatchKind),
    /// Remove the local watches of these kinds on this server path (removeWatches OK).
    RemoveWatches(String, &'static [WatchKind]),
    /// A SASL token: the reply goes to the connection's SASL exchange.
    Sasl,
    /// The session's own quorum check (a `sync`): the reply proves the leader is reachable.
    QuorumCheck,
}

/// A request checked and encoded, waiting for its xid.
#[derive(Debug, Clone)]
pub(crate) struct Encoded {
    pub(crate) op_code: OpCode,
    pub(crate) body: Body,
    pub(crate) after: AfterReply,
}

/// Declares [`Body`] once: each variant, the jute record it holds, and the `From` and
/// [`Encode`] impls that follow from that list.
macro_rules! bodies {
    ($($variant:ident($record:ty)),* $(,)?) => {
        /// A checked, chroot-prefixed request body, kept as its record: it is encoded once, when
        /// the request is sent, straight into the connection's write buffer.
        #[derive(Debug, Clone, PartialEq)]
        pub(crate) enum Body {
            /// No body (closeSession, whoAmI).
            Empty,
            $(
                #[doc = concat!("A `", stringify!($record), "`.")]
                $variant($record),
            )*
        }

        $(
            impl From<$record> for Body {
                fn from(record: $record) -> Self {
                    Body::$variant(record)
                }
            }
        )*

        impl Encode for Body {
            fn encoded_len(&self) -> usize {
                match self {
                    Body::Empty => 0,
                    $(Body::$variant(record) => record.encoded_len(),)*
                }
            }

            fn encode<B: bytes::BufMut>(&self, buf: &mut B) {
                match self {
                    Body::Empty => {}
                    $(Body::$variant(record) => record.encode(buf),)*
                }
            }
        }
    };
}

bodies! {
    Create(CreateRequest),
    CreateTtl(CreateTtlRequest),
    Delete(DeleteRequest),
    Exists(ExistsRequest),
    GetData(GetDataRequest),
    SetData(SetDataRequest),
    GetAcl(GetAclRequest),
    SetAcl(SetAclRequest),
    GetChildren(GetChildrenRequest),
    GetChildren2(GetChildren2Request),
    GetAllChildrenNumber(GetAllChildrenNumberRequest),
    GetEphemerals(GetEphemeralsRequest),
    Sync(SyncRequest),
    Multi(MultiRequest),
    AddWatch(AddWatchRequest),
    RemoveWatches(RemoveWatchesRequest),
    CheckWatches(CheckWatchesRequest),
    Reconfig(ReconfigRequest),
    SetWatches(SetWatches),
    SetWatches2(SetWatches2),
    Sasl(GetSaslRequest),
}

impl Body {
    /// Sends a read without its one-shot watch flag (a persistent watch already covers the
    /// path, see `Session::as_sent`): the flag is part of what is encoded, not patched after.
    pub(crate) fn clear_watch_flag(&mut self) {
        match self {
            Body::Exists(ExistsRequest { watch, .. })
            | Body::GetData(GetDataRequest { watch, .. })
            | Body::GetChildren(GetChildrenRequest { watch, .. })
            | Body::GetChildren2(GetChildren2Request { watch, .. }) => *watch = false,
            _ => {}
        }
    }
}

fn checked(chroot: &Chroot, path: String) -> Result<String, Error> {
    validate_path(&path)?;
    Ok(chroot.apply_owned(path))
}

/// The chrooted `path` of a read that may leave a one-shot watch of `kind`; when `watch`,
/// the watch is armed once the reply comes (`after`).
fn watched(
    chroot: &Chroot,
    path: String,
    watch: bool,
    kind: WatchKind,
    after: &mut AfterReply,
) -> Result<String, Error> {
    let path = checked(chroot, path)?;
    if watch {
        *after = AfterReply::Watch(path.clone(), kind);
    }
    Ok(path)
}

fn check_ttl(mode: CreateMode, ttl: Option<i64>) -> Result<(), Error> {
    match (mode.is_ttl(), ttl) {
        (true, Some(ttl)) if (1..=MAX_TTL_MS).contains(&ttl) => Ok(()),
        (true, Some(ttl)) => Err(Error::InvalidArgument(format!(
            "TTL {ttl} ms is outside 1 ..= {MAX_TTL_MS}"
        ))),
        (true, None) => Err(Error::InvalidArgument(format!("mode {mode} needs a TTL"))),
        (false, Some(_)) => Err(Error::InvalidArgument(format!("mode {mode} takes no TTL"))),
        (false, None) if mode.is_known() => Ok(()),
        (false, None) => Err(Error::InvalidArgument(format!(
            "unknown create mode {mode}"
        ))),
    }
}

fn create_path(chroot: &Chroot, path: String, mode: CreateMode) -> Result<String, Error> {
    if mode.is_sequential() {
        validate_sequential_prefix(&path)?;
    } else {
        validate_path(&path)?;
    }
    Ok(chroot.apply_owned(path))
}

fn watch_kinds(watcher_type: WatcherType) -> &'static [WatchKind] {
    match watcher_type {
        WatcherType::CHILDREN => &[WatchKind::Child],
        WatcherType::DATA => &[WatchKind::Data, WatchKind::Exist],
        WatcherType::PERSISTENT => &[WatchKind::Persistent],
        WatcherType::PERSISTENT_RECURSIVE => &[WatchKind::PersistentRecursive],
        _ => &[
            WatchKind::Data,
            WatchKind::Exist,
            WatchKind::Child,
            WatchKind::Persistent,
            WatchKind::PersistentRecursive,
        ],
    }
}

fn multi_op(chroot: &Chroot, op: MultiOperation, read: bool) -> Result<MultiOp, Error> {
    let is_read = matches!(
        op,
        MultiOperation::GetChildren { .. } | MultiOperation::GetData { .. }
    );
    if is_read != read {
        return Err(Error::InvalidArgument(if read {
            "multiRead takes only getChildren and getData".into()
        } else {
            "multi takes only create, delete, setData and check".into()
        }));
    }
    Ok(match op {
        MultiOperation::Create {
            path,
            data,
            acl,
            mode,
            ttl,
        } => {
            check_ttl(mode, ttl)?;
            let path = Some(create_path(chroot, path, mode)?);
            let (data, acl) = (Some(data), Some(to_wire(&acl)));
            match (mode, ttl) {
                (_, Some(ttl)) => MultiOp::CreateTtl(CreateTtlRequest {
                    path,
                    data,
                    acl,
                    flags: mode,
                    ttl,
                }),
                (CreateMode::CONTAINER, None) => MultiOp::CreateContainer(CreateRequest {
                    path,
                    data,
                    acl,
                    flags: mode,
                }),
                (_, None) => MultiOp::Create2(CreateRequest {
                    path,
                    data,
                    acl,
                    flags: mode,
                }),
            }
        }
        MultiOperation::Delete { path, version } => MultiOp::Delete(DeleteRequest {
            path: Some(checked(chroot, path)?),
            version: version.unwrap_or(-1),
        }),
        MultiOperation::SetData {
            path,
            data,
            version,
        } => MultiOp::SetData(SetDataRequest {
            path: Some(checked(chroot, path)?),
            data: Some(data),
            version: version.unwrap_or(-1),
        }),
        MultiOperation::Check { path, version } => MultiOp::Check(CheckVersionRequest {
            path: Some(checked(chroot, path)?),
            version: version.unwrap_or(-1),
        }),
        MultiOperation::GetChildren { path } => MultiOp::GetChildren(GetChildrenRequest {
            path: Some(checked(chroot, path)?),
            watch: false,
        }),
        MultiOperation::GetData { path } => MultiOp::GetData(GetDataRequest {
            path: Some(checked(chroot, path)?),
            watch: false,
        }),
    })
}

impl Op {
    /// Checks the request (paths, TTL, multi kinds) and encodes its body.
    pub(crate) fn encode(self, chroot: &Chroot) -> Result<Encoded, Error> {
        let mut after = AfterReply::Nothing;
        let (op_code, body): (OpCode, Body) = match self {
            Op::Create {
                path,
                data,
                acl,
                mode,
                ttl,
            } => {
                check_ttl(mode, ttl)?;
                let path = Some(create_path(chroot, path, mode)?);
                let (data, acl) = (Some(data), Some(to_wire(&acl)));
                match ttl {
                    Some(ttl) => (
                        OpCode::CREATE_TTL,
                        CreateTtlRequest {
                            path,
                            data,
                            acl,
                            flags: mode,
                            ttl,
                        }
                        .into(),
                    ),
                    None => (
                        if mode == CreateMode::CONTAINER {
                            OpCode::CREATE_CONTAINER
                        } else {
                            OpCode::CREATE2
                        },
                        CreateRequest {
                            path,
                            data,
                            acl,
                            flags: mode,
                        }
                        .into(),
                    ),
                }
            }
            Op::Delete { path, version } => {
                // Java sends delete("/") unchanged (never chrooted) so that it keeps failing.
                validate_path(&path)?;
                let path = if path == "/" {
                    path
                } else {
                    chroot.apply_owned(path)
                };
                (
                    OpCode::DELETE,
                    DeleteRequest {
                        path: Some(path),
                        version: version.unwrap_or(-1),
                    }
                    .into(),
                )
            }
            Op::Exists { path, watch } => {
                let path = watched(chroot, path, watch, WatchKind::Exist, &mut after)?;
                let body = ExistsRequest {
                    path: Some(path),
                    watch,
                };
                (OpCode::EXISTS, body.into())
            }
            Op::GetData { path, watch } => {
                let path = watched(chroot, path, watch, WatchKind::Data, &mut after)?;
                let body = GetDataRequest {
                    path: Some(path),
                    watch,
                };
                (OpCode::GET_DATA, body.into())
            }
            Op::SetData {
                path,
                data,
                version,
            } => (
                OpCode::SET_DATA,
                SetDataRequest {
                    path: Some(checked(chroot, path)?),
                    data: Some(data),
                    version: version.unwrap_or(-1),
                }
                .into(),
            ),
            Op::GetAcl { path } => (
                OpCode::GET_ACL,
                GetAclRequest {
                    path: Some(checked(chroot, path)?),
                }
                .into(),
            ),
            Op::SetAcl { path, acl, version } => (
                OpCode::SET_ACL,
                SetAclRequest {
                    path: Some(checked(chroot, path)?),
                    acl: Some(to_wire(&acl)),
                    version: version.unwrap_or(-1),
                }
                .into(),
            ),
            Op::GetChildren { path, watch } => {
                let path = watched(chroot, path, watch, WatchKind::Child, &mut after)?;
                let body = GetChildrenRequest {
                    path: Some(path),
                    watch,
                };
                (OpCode::GET_CHILDREN, body.into())
            }
            Op::GetChildren2 { path, watch } => {
                let path = watched(chroot, path, watch, WatchKind::Child, &mut after)?;
                let body = GetChildren2Request {
                    path: Some(path),
                    watch,
                };
                (OpCode::GET_CHILDREN2, body.into())
            }
            Op::GetAllChildrenNumber { path } => (
                OpCode::GET_ALL_CHILDREN_NUMBER,
                GetAllChildrenNumberRequest {
                    path: Some(checked(chroot, path)?),
                }
                .into(),
            ),
            Op::GetEphemerals { prefix } => {
                // The server matches a raw string prefix; under a chroot, "" and "/" mean
                // "everything under the chroot".
                let prefix = match chroot.as_str() {
                    None => prefix,
                    Some(root) if prefix.is_empty() || prefix == "/" => root.to_owned(),
                    Some(root) => format!("{root}{prefix}"),
                };
                (
                    OpCode::GET_EPHEMERALS,
                    GetEphemeralsRequest {
                        prefix_path: Some(prefix),
                    }
                    .into(),
                )
            }
            Op::Sync { path } => (
                OpCode::SYNC,
                SyncRequest {
                    path: Some(checked(chroot, path)?),
                }
                .into(),
            ),
            Op::Multi(ops) | Op::MultiRead(ops) if ops.is_empty() => {
                // Legal on the wire, but say so early: an empty transaction is a caller bug
                // more often than not, and Java never sends one.
                return Err(Error::InvalidArgument("empty multi".into()));
            }
            Op::Multi(ops) => {
                let ops = ops
                    .into_iter()
                    .map(|op| multi_op(chroot, op, false))
                    .collect::<Result<Vec<_>, _>>()?;
                (OpCode::MULTI, MultiRequest { ops }.into())
            }
            Op::MultiRead(ops) => {
                let ops = ops
                    .into_iter()
                    .map(|op| multi_op(chroot, op, true))
                    .collect::<Result<Vec<_>, _>>()?;
                (OpCode::MULTI_READ, MultiRequest { ops }.into())
            }
            Op::AddWatch { path, mode } => {
                let path = checked(chroot, path)?;
                let kind = if mode == AddWatchMode::PERSISTENT_RECURSIVE {
                    WatchKind::PersistentRecursive
                } else if mode == AddWatchMode::PERSISTENT {
                    WatchKind::Persistent
                } else {
                    return Err(Error::InvalidArgument(format!(
                        "unknown add-watch mode {mode}"
                    )));
                };
                after = AfterReply::Watch(path.clone(), kind);
                let body = AddWatchRequest {
                    path: Some(path),
                    mode,
                };
                (OpCode::ADD_WATCH, body.into())
            }
            Op::RemoveWatches { path, watcher_type } => {
                let path = checked(chroot, path)?;
                after = AfterReply::RemoveWatches(path.clone(), watch_kinds(watcher_type));
                let body = RemoveWatchesRequest {
                    path: Some(path),
                    watcher_type,
                };
                (OpCode::REMOVE_WATCHES, body.into())
            }
            Op::CheckWatches { path, watcher_type } => (
                OpCode::CHECK_WATCHES,
                CheckWatchesRequest {
                    path: Some(checked(chroot, path)?),
                    watcher_type,
                }
                .into(),
            ),
            Op::Reconfig(request) => (OpCode::RECONFIG, request.into()),
            Op::GetConfig { watch } => {
                let path = CONFIG_NODE.to_owned();
                if watch {
                    after = AfterReply::Watch(path.clone(), WatchKind::Data);
                }
                let body = GetDataRequest {
                    path: Some(path),
                    watch,
                };
                (OpCode::GET_DATA, body.into())
            }
            Op::WhoAmI => (OpCode::WHO_AM_I, Body::Empty),
        };
        Ok(Encoded {
            op_code,
            body,
            after,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(path: &str) -> Chroot {
        Chroot::new(path).expect("valid chroot")
    }

    #[test]
    fn paths_are_validated_and_chrooted() {
        let encoded = Op::GetData {
            path: "/a".into(),
            watch: true,
        }
        .encode(&root("/app"))
        .expect("valid");
        assert_eq!(encoded.op_code, OpCode::GET_DATA);
        assert_eq!(&encoded.body.to_bytes()[..], b"\x00\x00\x00\x06/app/a\x01");
        assert_eq!(
            encoded.after,
            AfterReply::Watch("/app/a".into(), WatchKind::Data)
        );
        let bad = Op::Exists {
            path: "/a//b".into(),
            watch: false,
        };
        assert!(matches!(
            bad.encode(&Chroot::none()),
            Err(Error::InvalidPath(_))
        ));
    }

    #[test]
    fn create_modes_pick_their_op_code() {
        let create = |mode, ttl| Op::Create {
            path: "/n".into(),
            data: Bytes::new(),
            acl: Vec::new(),
            mode,
            ttl,
        };
        let op = |mode, ttl| create(mode, ttl).encode(&Chroot::none()).map(|e| e.op_code);
        assert_eq!(op(CreateMode::PERSISTENT, None), Ok(OpCode::CREATE2));
        assert_eq!(
            op(CreateMode::EPHEMERAL_SEQUENTIAL, None),
            Ok(OpCode::CREATE2)
        );
        assert_eq!(
            op(CreateMode::CONTAINER, None),
            Ok(OpCode::CREATE_CONTAINER)
        );
        assert_eq!(
            op(CreateMode::PERSISTENT_WITH_TTL, Some(1000)),
            Ok(OpCode::CREATE_TTL)
        );
        assert!(matches!(
            op(CreateMode::PERSISTENT_WITH_TTL, None),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            op(CreateMode::PERSISTENT_WITH_TTL, Some(MAX_TTL_MS + 1)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            op(CreateMode::PERSISTENT, Some(5)),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            op(CreateMode(9), None),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn sequential_prefixes_may_end_with_a_slash() {
        let op = Op::Create {
            path: "/q/".into(),
            data: Bytes::new(),
            acl: Vec::new(),
            mode: CreateMode::PERSISTENT_SEQUENTIAL,
            ttl: None,
        };
        assert!(op.encode(&Chroot::none()).is_ok());
    }

    #[test]
    fn multi_rejects_mixed_kinds_and_empty_lists() {
        let mixed = Op::Multi(vec![MultiOperation::GetData { path: "/a".into() }]);
        assert!(matches!(
            mixed.encode(&Chroot::none()),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            Op::MultiRead(vec![]).encode(&Chroot::none()),
            Err(Error::InvalidArgument(_))
        ));
    }
}
