//! The measured messages: how each is built (identically by `benches/java/CodecBench.java`) and
//! how our codec decodes it.

use bytes::Bytes;
use jute::{
    Acl, CreateMode, CreateRequest, CreateRequestRef, Decode, DecodeError, Encode, ErrorCode,
    EventType, GetChildren2Response, GetDataResponse, Id, KeeperState, OpCode, Perms, Reader,
    ReplyHeader, RequestHeader, RequestHeaderRef, ServerMessage, SliceReader, Stat, WatcherEvent,
    WatcherEventRef, codes::xid, decode_exact, decode_view_exact,
};

/// The measured messages. Each one is built identically by `benches/java/CodecBench.java`; the
/// Java cross-check fails when the two drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaseId {
    /// A getData reply with 1 KiB of data: `ReplyHeader` + `GetDataResponse`.
    GetDataReply,
    /// A getChildren2 reply with 1,000 children: `ReplyHeader` + `GetChildren2Response`.
    GetChildren2Reply,
    /// A create request with a two-entry ACL: `RequestHeader` + `CreateRequest`.
    CreateRequest,
    /// A watch notification: `ReplyHeader` (xid -1) + `WatcherEvent`.
    WatcherEvent,
}

impl CaseId {
    /// Every case, in report order.
    pub const ALL: [CaseId; 4] = [
        CaseId::GetDataReply,
        CaseId::GetChildren2Reply,
        CaseId::CreateRequest,
        CaseId::WatcherEvent,
    ];

    /// The identifier shared with the Java program and used in the JSON.
    pub const fn id(self) -> &'static str {
        match self {
            CaseId::GetDataReply => "get_data_reply",
            CaseId::GetChildren2Reply => "get_children2_reply",
            CaseId::CreateRequest => "create_request",
            CaseId::WatcherEvent => "watcher_event",
        }
    }

    /// A short human description.
    pub const fn label(self) -> &'static str {
        match self {
            CaseId::GetDataReply => "getData reply, 1 KiB data",
            CaseId::GetChildren2Reply => "getChildren2 reply, 1000 children",
            CaseId::CreateRequest => "create request, 2 ACL entries",
            CaseId::WatcherEvent => "watcher event notification",
        }
    }

    /// The case named `id`.
    pub fn from_id(id: &str) -> Option<CaseId> {
        CaseId::ALL.into_iter().find(|case| case.id() == id)
    }

    /// The encoded frame body (header then record) of this case.
    pub fn frame(self) -> Bytes {
        match self {
            CaseId::GetDataReply => build_get_data_reply().to_bytes(),
            CaseId::GetChildren2Reply => build_get_children2_reply().to_bytes(),
            CaseId::CreateRequest => build_create_request().to_bytes(),
            CaseId::WatcherEvent => build_watcher_event().to_bytes(),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn stat(
    czxid: i64,
    mzxid: i64,
    ctime: i64,
    mtime: i64,
    version: i32,
    cversion: i32,
    data_length: i32,
    num_children: i32,
    pzxid: i64,
) -> Stat {
    Stat {
        czxid,
        mzxid,
        ctime,
        mtime,
        version,
        cversion,
        aversion: 0,
        ephemeral_owner: 0,
        data_length,
        num_children,
        pzxid,
    }
}

/// The getData reply: xid 1042, 1,024 bytes of data (byte `i` is `i * 31 + 7`), a full stat.
pub fn build_get_data_reply() -> (ReplyHeader, GetDataResponse) {
    let data: Vec<u8> = (0..1024u32).map(|i| (i * 31 + 7) as u8).collect();
    (
        ReplyHeader {
            xid: 1042,
            zxid: 0x1_0000_0456,
            err: ErrorCode::OK,
        },
        GetDataResponse {
            data: Some(Bytes::from(data)),
            stat: stat(
                0x1_0000_0010,
                0x1_0000_0456,
                1_700_000_000_000,
                1_700_000_123_456,
                17,
                0,
                1024,
                0,
                0x1_0000_0010,
            ),
        },
    )
}

/// The getChildren2 reply: xid 1043, children `node-0000000000` to `node-0000000999`.
pub fn build_get_children2_reply() -> (ReplyHeader, GetChildren2Response) {
    let children = (0..1000).map(|i| format!("node-{i:010}")).collect();
    (
        ReplyHeader {
            xid: 1043,
            zxid: 0x1_0000_0457,
            err: ErrorCode::OK,
        },
        GetChildren2Response {
            children: Some(children),
            stat: stat(
                0x1_0000_0002,
                0x1_0000_0002,
                1_699_999_000_000,
                1_699_999_000_000,
                0,
                1000,
                0,
                1000,
                0x1_0000_0457,
            ),
        },
    )
}

/// The create request: xid 1044, an ephemeral sequential node with 32 bytes of data, ACL
/// `digest:app:...` ALL plus `world:anyone` READ.
pub fn build_create_request() -> (RequestHeader, CreateRequest) {
    let acl = |perms, scheme: &str, id: &str| Acl {
        perms,
        id: Id {
            scheme: Some(scheme.into()),
            id: Some(id.into()),
        },
    };
    (
        RequestHeader {
            xid: 1044,
            op_code: OpCode::CREATE,
        },
        CreateRequest {
            path: Some("/services/payments/instances/instance-".into()),
            data: Some(Bytes::from_static(br#"{"host":"10.0.0.12","port":8080}"#)),
            acl: Some(vec![
                acl(Perms::ALL, "digest", "app:NvHpU1Vq8K5XhbZrW2S0YcTb2ZE="),
                acl(Perms::READ, "world", "anyone"),
            ]),
            flags: CreateMode::EPHEMERAL_SEQUENTIAL,
        },
    )
}

/// The watch notification: xid -1, zxid -1, NodeDataChanged on `/services/payments/config`.
pub fn build_watcher_event() -> (ReplyHeader, WatcherEvent) {
    (
        ReplyHeader {
            xid: xid::NOTIFICATION,
            zxid: -1,
            err: ErrorCode::OK,
        },
        WatcherEvent {
            event_type: EventType::NODE_DATA_CHANGED,
            state: KeeperState::SYNC_CONNECTED,
            path: Some("/services/payments/config".into()),
        },
    )
}

/// Decodes a getData reply frame as the client does.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_get_data_reply(frame: Bytes) -> Result<ServerMessage, DecodeError> {
    ServerMessage::decode(frame, |_| OpCode::GET_DATA)
}

/// Decodes a getChildren2 reply frame as the client does.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_get_children2_reply(frame: Bytes) -> Result<ServerMessage, DecodeError> {
    ServerMessage::decode(frame, |_| OpCode::GET_CHILDREN2)
}

/// Decodes a notification frame into the owned message, as the client did before the borrowed
/// views (the op code lookup is never asked for xid -1).
///
/// # Errors
///
/// Any decoding error.
pub fn decode_watcher_event(frame: Bytes) -> Result<ServerMessage, DecodeError> {
    ServerMessage::decode(frame, |_| OpCode::GET_DATA)
}

/// Decodes a notification frame as the client's session does since the borrowed views
/// (`zk_session`'s inbound path): [`ServerMessage::decode_notification`], the path borrowed
/// from the frame.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_watcher_event_view(
    frame: &[u8],
) -> Result<(ReplyHeader, WatcherEventRef<'_>), DecodeError> {
    ServerMessage::decode_notification(frame)
}

/// Decodes a create request frame as a server would with the borrowed views: the header, then
/// `CreateRequest`'s view of the rest, exactly (strings and data borrowed from the frame, the
/// ACL validated and left in place).
///
/// # Errors
///
/// Any decoding error.
pub fn decode_create_request_view(
    frame: &[u8],
) -> Result<(RequestHeader, CreateRequestRef<'_>), DecodeError> {
    let mut reader = SliceReader::new(frame);
    let header = RequestHeaderRef::decode(&mut reader)?.into_owned();
    let body = decode_view_exact::<CreateRequest>(reader.rest())?;
    Ok((header, body))
}

/// Decodes a create request frame as a server would into the owned records: the header, then
/// the body exactly.
///
/// # Errors
///
/// Any decoding error.
pub fn decode_create_request(frame: Bytes) -> Result<(RequestHeader, CreateRequest), DecodeError> {
    let mut reader = Reader::new(frame);
    let header = RequestHeader::decode(&mut reader)?;
    let body = decode_exact::<CreateRequest>(reader.into_rest())?;
    Ok((header, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_documented_sizes_and_ids_name_their_case() {
        for case in CaseId::ALL {
            assert_eq!(CaseId::from_id(case.id()), Some(case));
        }
        assert_eq!(CaseId::from_id("nope"), None);
        assert_eq!(CaseId::GetDataReply.frame().len(), 16 + 4 + 1024 + 68);
        assert_eq!(
            CaseId::GetChildren2Reply.frame().len(),
            16 + 4 + 1000 * 19 + 68
        );
    }
}
