//! Decoding a borrowed view allocates nothing: counted by a global allocator.

use std::alloc::System;

use bytes::Bytes;
use jute::codes::xid;
use jute::{
    Acl, CreateMode, CreateRequest, CreateRequestRef, Encode, ErrorCode, EventType,
    GetChildren2Response, GetDataResponse, Id, KeeperState, OpCode, Perms, ReplyHeader,
    RequestHeader, ServerMessage, SliceReader, Stat, StringList, WatcherEvent, decode_view_exact,
};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// Counts every allocation and reallocation. This file holds one test, so nothing else runs
/// while it counts.
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The allocations (reallocations included) `f` makes.
fn allocations<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = GLOBAL.stats();
    let value = f();
    let after = GLOBAL.stats();
    let count =
        (after.allocations + after.reallocations) - (before.allocations + before.reallocations);
    (count, value)
}

fn create_frame() -> Vec<u8> {
    let header = RequestHeader {
        xid: 7,
        op_code: OpCode::CREATE,
    };
    let acl = |scheme: &str, id: &str| Acl {
        perms: Perms::ALL,
        id: Id {
            scheme: Some(scheme.into()),
            id: Some(id.into()),
        },
    };
    let request = CreateRequest {
        path: Some("/app/locks/lock-0000000001".into()),
        data: Some(Bytes::from_static(b"some data")),
        acl: Some(vec![acl("world", "anyone"), acl("digest", "u:hash")]),
        flags: CreateMode::EPHEMERAL_SEQUENTIAL,
    };
    (header, request).to_bytes().to_vec()
}

#[test]
fn views_decode_without_allocating() {
    let frame = create_frame();
    let (count, request) = allocations(|| {
        let mut reader = SliceReader::new(&frame);
        let header = jute::RequestHeaderRef::decode(&mut reader)?;
        let request = CreateRequestRef::decode(&mut reader)?;
        reader.finish::<CreateRequest>()?;
        Ok::<_, jute::DecodeError>((header, request))
    });
    let (_, request) = request.expect("decodes");
    assert_eq!(count, 0, "a create request view allocated");
    let (count, schemes) = allocations(|| {
        let acl = request.acl.as_ref().expect("acl");
        acl.iter().filter(|entry| entry.id.scheme.is_some()).count()
    });
    assert_eq!((count, schemes), (0, 2), "iterating the ACL allocated");

    let notification = (
        ReplyHeader {
            xid: xid::NOTIFICATION,
            zxid: -1,
            err: ErrorCode::OK,
        },
        WatcherEvent {
            event_type: EventType::NODE_DELETED,
            state: KeeperState::SYNC_CONNECTED,
            path: Some("/app/locks/lock-0000000001".into()),
        },
    )
        .to_bytes();
    let (count, decoded) = allocations(|| ServerMessage::decode_notification(&notification));
    assert!(decoded.is_ok());
    assert_eq!(count, 0, "a notification view allocated");

    let children: StringList = (0..100).map(|i| format!("child-{i:04}")).collect();
    let reply = GetChildren2Response {
        children: Some(children),
        stat: Stat::default(),
    }
    .to_bytes();
    let (count, decoded) = allocations(|| {
        decode_view_exact::<GetChildren2Response>(&reply).map(|view| {
            view.children.map_or(0, |list| {
                list.iter().map(|child| child.len()).sum::<usize>()
            })
        })
    });
    assert_eq!(decoded, Ok(1000));
    assert_eq!(count, 0, "a children list view allocated");

    let data = GetDataResponse {
        data: Some(Bytes::from(vec![7; 1024])),
        stat: Stat::default(),
    }
    .to_bytes();
    let (count, decoded) = allocations(|| decode_view_exact::<GetDataResponse>(&data));
    assert_eq!(
        decoded.map(|view| view.data.map(<[u8]>::len)),
        Ok(Some(1024))
    );
    assert_eq!(count, 0, "a data view allocated");
}
