//! The requests a script submits (templates by op) and the replies it serves (samples that
//! fit each op), with the error codes and event types it draws from.

use super::*;

// ----- requests -----

/// A request the script can submit, with what the script expects of it.
pub(super) struct Template {
    pub(super) op: Op,
    /// The op code it must be sent with.
    pub(super) op_code: OpCode,
    /// The watch it arms on success: kind and client path.
    pub(super) watch: Option<(WatchKind, String)>,
    /// For removeWatches: the client path and the kinds it removes.
    pub(super) removes: Option<(String, Vec<WatchKind>)>,
    /// Whether `submit` may refuse it on an open session (invalid, or maybe too large).
    pub(super) may_be_refused: bool,
}

pub(super) fn open_acl() -> Vec<Acl> {
    vec![Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: Some("world".into()),
            id: Some("anyone".into()),
        },
    }]
}

/// The request of template `template` (modulo 20) on `path`, with a watch if `watch` (for the
/// templates that take one); `extra` picks a create mode, a data size or a watcher type.
pub(super) fn op_template(template: u8, path: &str, watch: bool, extra: u8) -> Template {
    let owned = path.to_owned();
    let watched = |kind| watch.then(|| (kind, owned.clone()));
    let plain = |op, op_code| Template {
        op,
        op_code,
        watch: None,
        removes: None,
        may_be_refused: false,
    };
    match template % 20 {
        0 => Template {
            watch: watched(WatchKind::Data),
            ..plain(
                Op::GetData {
                    path: owned.clone(),
                    watch,
                },
                OpCode::GET_DATA,
            )
        },
        1 => Template {
            watch: watched(WatchKind::Exist),
            ..plain(
                Op::Exists {
                    path: owned.clone(),
                    watch,
                },
                OpCode::EXISTS,
            )
        },
        2 => Template {
            watch: watched(WatchKind::Child),
            ..plain(
                Op::GetChildren {
                    path: owned.clone(),
                    watch,
                },
                OpCode::GET_CHILDREN,
            )
        },
        3 => Template {
            watch: watched(WatchKind::Child),
            ..plain(
                Op::GetChildren2 {
                    path: owned.clone(),
                    watch,
                },
                OpCode::GET_CHILDREN2,
            )
        },
        4 => {
            let (mode, ttl, op_code, path) = match extra % 5 {
                0 => (CreateMode::PERSISTENT, None, OpCode::CREATE2, "/a/c"),
                1 => (CreateMode::EPHEMERAL, None, OpCode::CREATE2, "/a/c"),
                2 => (
                    CreateMode::PERSISTENT_SEQUENTIAL,
                    None,
                    OpCode::CREATE2,
                    "/a/",
                ),
                3 => (
                    CreateMode::CONTAINER,
                    None,
                    OpCode::CREATE_CONTAINER,
                    "/a/c",
                ),
                _ => (
                    CreateMode::PERSISTENT_WITH_TTL,
                    Some(1_000),
                    OpCode::CREATE_TTL,
                    "/a/c",
                ),
            };
            let op = Op::Create {
                path: path.into(),
                data: Bytes::from_static(b"v"),
                acl: crate::acl::open_acl_unsafe(),
                mode,
                ttl,
            };
            plain(op, op_code)
        }
        5 => plain(
            Op::Delete {
                path: owned.clone(),
                version: None,
            },
            OpCode::DELETE,
        ),
        6 => {
            // Up to 1,270 bytes: over the small frame limit from about 500.
            let len = usize::from(extra) * 5;
            Template {
                may_be_refused: len > SMALL_FRAME_LEN / 2,
                ..plain(
                    Op::SetData {
                        path: owned.clone(),
                        data: Bytes::from(vec![b'x'; len]),
                        version: (extra > 0).then(|| i32::from(extra) - 1),
                    },
                    OpCode::SET_DATA,
                )
            }
        }
        7 => plain(
            Op::GetAcl {
                path: owned.clone(),
            },
            OpCode::GET_ACL,
        ),
        8 => plain(
            Op::SetAcl {
                path: owned.clone(),
                acl: crate::acl::open_acl_unsafe(),
                version: None,
            },
            OpCode::SET_ACL,
        ),
        9 => plain(
            Op::Sync {
                path: owned.clone(),
            },
            OpCode::SYNC,
        ),
        10 => plain(
            Op::GetAllChildrenNumber {
                path: owned.clone(),
            },
            OpCode::GET_ALL_CHILDREN_NUMBER,
        ),
        11 => plain(
            Op::GetEphemerals {
                prefix: if extra & 1 == 0 {
                    owned.clone()
                } else {
                    String::new()
                },
            },
            OpCode::GET_EPHEMERALS,
        ),
        12 => plain(
            Op::Multi(vec![
                MultiOperation::check(owned.clone(), Some(1)),
                MultiOperation::set_data(owned.clone(), Bytes::from_static(b"m"), None),
            ]),
            OpCode::MULTI,
        ),
        13 => plain(
            Op::MultiRead(vec![
                MultiOperation::get_data(owned.clone()),
                MultiOperation::get_children(owned.clone()),
            ]),
            OpCode::MULTI_READ,
        ),
        14 => {
            let (mode, kind) = if extra & 1 == 0 {
                (AddWatchMode::PERSISTENT, WatchKind::Persistent)
            } else {
                (
                    AddWatchMode::PERSISTENT_RECURSIVE,
                    WatchKind::PersistentRecursive,
                )
            };
            Template {
                watch: Some((kind, owned.clone())),
                ..plain(
                    Op::AddWatch {
                        path: owned.clone(),
                        mode,
                    },
                    OpCode::ADD_WATCH,
                )
            }
        }
        15 => {
            let watcher_type = WatcherType(i32::from(extra % 5) + 1);
            Template {
                removes: Some((owned.clone(), removed_kinds(watcher_type))),
                ..plain(
                    Op::RemoveWatches {
                        path: owned.clone(),
                        watcher_type,
                    },
                    OpCode::REMOVE_WATCHES,
                )
            }
        }
        16 => plain(
            Op::CheckWatches {
                path: owned.clone(),
                watcher_type: WatcherType::ANY,
            },
            OpCode::CHECK_WATCHES,
        ),
        17 => plain(Op::Reconfig(ReconfigRequest::default()), OpCode::RECONFIG),
        18 => plain(Op::WhoAmI, OpCode::WHO_AM_I),
        // Refused before anything is queued: a bad path, or an empty transaction.
        _ => Template {
            may_be_refused: true,
            ..plain(
                if extra & 1 == 0 {
                    Op::GetData {
                        path: "/a//b".into(),
                        watch,
                    }
                } else {
                    Op::Multi(Vec::new())
                },
                OpCode::GET_DATA,
            )
        },
    }
}

/// The watch kinds removeWatches of `watcher_type` removes (Java's `ZKWatchManager`).
pub(super) fn removed_kinds(watcher_type: WatcherType) -> Vec<WatchKind> {
    match watcher_type {
        WatcherType::CHILDREN => vec![WatchKind::Child],
        WatcherType::DATA => vec![WatchKind::Data, WatchKind::Exist],
        WatcherType::PERSISTENT => vec![WatchKind::Persistent],
        WatcherType::PERSISTENT_RECURSIVE => vec![WatchKind::PersistentRecursive],
        _ => vec![
            WatchKind::Data,
            WatchKind::Exist,
            WatchKind::Child,
            WatchKind::Persistent,
            WatchKind::PersistentRecursive,
        ],
    }
}

/// The event type that reports a watch of `kind` removed.
pub(super) fn removal_event(kind: WatchKind) -> EventType {
    match kind {
        WatchKind::Data | WatchKind::Exist => EventType::DATA_WATCH_REMOVED,
        WatchKind::Child => EventType::CHILD_WATCH_REMOVED,
        WatchKind::Persistent | WatchKind::PersistentRecursive => {
            EventType::PERSISTENT_WATCH_REMOVED
        }
    }
}

pub(super) fn kind_rank(kind: WatchKind) -> u8 {
    match kind {
        WatchKind::Data => 0,
        WatchKind::Exist => 1,
        WatchKind::Child => 2,
        WatchKind::Persistent => 3,
        WatchKind::PersistentRecursive => 4,
    }
}

/// Whether a successful response `response` fits a request sent with `op_code`.
pub(super) fn response_fits(op_code: OpCode, response: &Response) -> bool {
    match response {
        Response::Empty => matches!(
            op_code,
            OpCode::DELETE
                | OpCode::CHECK_WATCHES
                | OpCode::REMOVE_WATCHES
                | OpCode::CLOSE_SESSION
                | OpCode::SET_WATCHES
                | OpCode::SET_WATCHES2
        ),
        Response::Create2(_) => matches!(
            op_code,
            OpCode::CREATE2 | OpCode::CREATE_CONTAINER | OpCode::CREATE_TTL
        ),
        Response::Exists(_) => op_code == OpCode::EXISTS,
        Response::GetData(_) => matches!(op_code, OpCode::GET_DATA | OpCode::RECONFIG),
        Response::SetData(_) => op_code == OpCode::SET_DATA,
        Response::GetAcl(_) => op_code == OpCode::GET_ACL,
        Response::SetAcl(_) => op_code == OpCode::SET_ACL,
        Response::GetChildren(_) => op_code == OpCode::GET_CHILDREN,
        Response::GetChildren2(_) => op_code == OpCode::GET_CHILDREN2,
        Response::Sync(_) => op_code == OpCode::SYNC,
        Response::GetAllChildrenNumber(_) => op_code == OpCode::GET_ALL_CHILDREN_NUMBER,
        Response::GetEphemerals(_) => op_code == OpCode::GET_EPHEMERALS,
        Response::Multi(_) => matches!(op_code, OpCode::MULTI | OpCode::MULTI_READ),
        Response::AddWatch(_) => op_code == OpCode::ADD_WATCH,
        Response::WhoAmI(_) => op_code == OpCode::WHO_AM_I,
        _ => false,
    }
}

/// A successful reply body for a request of `op_code` on client path `path`: what the server
/// sends (server paths) and what the caller must get (client paths).
pub(super) fn sample_response(
    op_code: OpCode,
    chroot: &Chroot,
    path: &str,
    salt: u8,
) -> (Response, Response) {
    let stat = Stat {
        version: i32::from(salt),
        czxid: i64::from(salt) + 1,
        ..Stat::default()
    };
    let both = |response: Response| (response.clone(), response);
    let server = chroot.apply(path);
    match op_code {
        OpCode::CREATE2 | OpCode::CREATE_CONTAINER | OpCode::CREATE_TTL => {
            let made = |path: String| {
                Response::Create2(Create2Response {
                    path: Some(path),
                    stat: stat.clone(),
                })
            };
            (made(chroot.apply("/a/c1")), made("/a/c1".into()))
        }
        OpCode::EXISTS => both(Response::Exists(ExistsResponse { stat })),
        OpCode::GET_DATA | OpCode::RECONFIG => both(Response::GetData(GetDataResponse {
            data: Some(Bytes::from(vec![salt; usize::from(salt % 4)])),
            stat,
        })),
        OpCode::SET_DATA => both(Response::SetData(SetDataResponse { stat })),
        OpCode::GET_ACL => both(Response::GetAcl(GetAclResponse {
            acl: Some(open_acl()),
            stat,
        })),
        OpCode::SET_ACL => both(Response::SetAcl(SetAclResponse { stat })),
        OpCode::GET_CHILDREN => both(Response::GetChildren(GetChildrenResponse {
            children: Some(["c"].into_iter().collect()),
        })),
        OpCode::GET_CHILDREN2 => both(Response::GetChildren2(GetChildren2Response {
            children: Some(["c", "d"].into_iter().collect()),
            stat,
        })),
        OpCode::SYNC => (
            Response::Sync(SyncResponse { path: Some(server) }),
            Response::Sync(SyncResponse {
                path: Some(path.into()),
            }),
        ),
        OpCode::GET_ALL_CHILDREN_NUMBER => both(Response::GetAllChildrenNumber(
            GetAllChildrenNumberResponse {
                total_number: i32::from(salt),
            },
        )),
        OpCode::GET_EPHEMERALS => {
            let listed = |paths: [String; 2]| {
                Response::GetEphemerals(GetEphemeralsResponse {
                    ephemerals: Some(paths.into_iter().collect()),
                })
            };
            (
                listed([chroot.apply("/a"), chroot.apply("/a/b")]),
                listed(["/a".into(), "/a/b".into()]),
            )
        }
        OpCode::MULTI => both(Response::Multi(MultiResponse {
            results: vec![
                MultiResult::Check,
                MultiResult::SetData(SetDataResponse { stat }),
            ],
        })),
        OpCode::MULTI_READ => both(Response::Multi(MultiResponse {
            results: vec![
                MultiResult::GetData(GetDataResponse {
                    data: Some(Bytes::from_static(b"r")),
                    stat,
                }),
                MultiResult::Error(ErrorCode::NO_NODE),
            ],
        })),
        OpCode::ADD_WATCH => both(Response::AddWatch(ErrorResponse { err: ErrorCode::OK })),
        OpCode::WHO_AM_I => both(Response::WhoAmI(WhoAmIResponse {
            client_info: Some(vec![ClientInfo {
                auth_scheme: Some("ip".into()),
                user: Some("127.0.0.1".into()),
            }]),
        })),
        _ => both(Response::Empty),
    }
}

/// The error codes of [`ERROR_REPLY`], by argument (modulo the length).
pub(super) const ERROR_CODES: [ErrorCode; 17] = [
    ErrorCode::NO_NODE,
    ErrorCode::NODE_EXISTS,
    ErrorCode::BAD_VERSION,
    ErrorCode::NO_AUTH,
    ErrorCode::AUTH_FAILED,
    ErrorCode::SESSION_EXPIRED,
    ErrorCode::CONNECTION_LOSS,
    ErrorCode::NOT_READ_ONLY,
    ErrorCode::MARSHALLING_ERROR,
    ErrorCode(-999),
    ErrorCode(7),
    ErrorCode::SESSION_MOVED,
    ErrorCode::OPERATION_TIMEOUT,
    ErrorCode::THROTTLED_OP,
    ErrorCode::REQUEST_TIMEOUT,
    ErrorCode::NO_WATCHER,
    // Ends the session (AuthFailed): the server requires authentication.
    ErrorCode::SESSION_CLOSED_REQUIRE_SASL_AUTH,
];

/// The event types of [`NOTIFY`], by argument bits 0-2.
pub(super) const EVENT_TYPES: [EventType; 8] = [
    EventType::NODE_CREATED,
    EventType::NODE_DELETED,
    EventType::NODE_DATA_CHANGED,
    EventType::NODE_CHILDREN_CHANGED,
    EventType::NONE,
    EventType::DATA_WATCH_REMOVED,
    EventType(42),
    EventType::NODE_DATA_CHANGED,
];
