//! The seed corpus: the conformance vectors mapped to every target's input format, and
//! hand-made inputs.

use super::*;

/// Conformance vectors longer than this many bytes are not used as seeds: they would only slow
/// the fuzzer down (the smoke run uses `-max_len=8192`).
pub const MAX_SEED_VECTOR_LEN: usize = 4096;

/// The op code whose reply body is each response record, for [`seed_corpus`].
pub(super) const RESPONSE_OPS: &[(&str, OpCode)] = &[
    ("proto.CreateResponse", OpCode::CREATE),
    ("proto.Create2Response", OpCode::CREATE2),
    ("proto.ExistsResponse", OpCode::EXISTS),
    ("proto.GetDataResponse", OpCode::GET_DATA),
    ("proto.SetDataResponse", OpCode::SET_DATA),
    ("proto.GetACLResponse", OpCode::GET_ACL),
    ("proto.SetACLResponse", OpCode::SET_ACL),
    ("proto.GetChildrenResponse", OpCode::GET_CHILDREN),
    ("proto.GetChildren2Response", OpCode::GET_CHILDREN2),
    ("proto.SyncResponse", OpCode::SYNC),
    (
        "proto.GetAllChildrenNumberResponse",
        OpCode::GET_ALL_CHILDREN_NUMBER,
    ),
    ("proto.GetEphemeralsResponse", OpCode::GET_EPHEMERALS),
    ("proto.ErrorResponse", OpCode::ADD_WATCH),
    ("proto.WhoAmIResponse", OpCode::WHO_AM_I),
    ("proto.SetSASLResponse", OpCode::SASL),
    ("MultiResponse", OpCode::MULTI),
];

/// Maps conformance vectors to fuzz inputs, as `(target, input)` pairs in each target's input
/// format, plus a few inputs built here so that every target has seeds.
///
/// `vectors` is the text of `crates/jute/tests/conformance/vectors.txt`: lines starting with
/// `#` and blank lines are skipped, every other line is `<jute-name> <case-label> <hex>`. Each
/// vector seeds `record_by_name` (if its name is in [`RECORD_NAMES`]) and `frame_decoder` (as
/// a frame); connect responses, watcher events, reply headers, response bodies and multi
/// responses also seed the targets that decode them. Vectors over [`MAX_SEED_VECTOR_LEN`]
/// bytes are skipped.
///
/// # Errors
///
/// A line that is not a name, a label and an even number of hex digits, by line number.
pub fn seed_corpus(vectors: &str) -> Result<Vec<(&'static str, Vec<u8>)>, String> {
    let mut seeds = handmade_seeds();
    for (number, line) in vectors.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (name, hex_text) = match fields[..] {
            [name, _label, hex_text] => (name, hex_text),
            // A vector of zero bytes has no hex field.
            [name, _label] => (name, ""),
            _ => {
                return Err(format!(
                    "line {}: expected `<name> <label> <hex>`",
                    number + 1
                ));
            }
        };
        if hex_text.len() > 2 * MAX_SEED_VECTOR_LEN {
            continue;
        }
        let bytes = unhex(hex_text).ok_or_else(|| format!("line {}: bad hex", number + 1))?;
        seeds.extend(vector_seeds(name, &bytes));
    }
    Ok(seeds)
}

/// The seeds of one conformance vector.
pub(super) fn vector_seeds(name: &str, bytes: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut seeds = Vec::new();
    if let Some(index) = RECORD_NAMES.iter().position(|known| *known == name) {
        let index = u8::try_from(index).expect("fewer than 256 records");
        seeds.push(("record_by_name", concat(&[&[index], bytes])));
    }
    // As one frame, at once or in chunks (chosen by length, so that seeds vary).
    let chunking = (bytes.len() % 16) as u8;
    seeds.push(("frame_decoder", concat(&[&[0x80, chunking], &frame(bytes)])));
    let reply = |xid, err| {
        ReplyHeader {
            xid,
            zxid: 0x1_0000_0002,
            err,
        }
        .to_bytes()
    };
    match name {
        "proto.ConnectResponse" => seeds.push(("connect_response", bytes.to_vec())),
        "proto.WatcherEvent" => {
            seeds.push(("watcher_event", bytes.to_vec()));
            let header = reply(xid::NOTIFICATION, ErrorCode::OK);
            seeds.push(("server_message", concat(&[&op(OpCode(0)), &header, bytes])));
        }
        "proto.ReplyHeader" => {
            // A header alone is a reply to a request without a response body, or an error.
            let op_code = match decode_exact::<ReplyHeader>(Bytes::copy_from_slice(bytes)) {
                Ok(header) if header.xid == xid::PING => OpCode::PING,
                Ok(header) if header.xid == xid::AUTH => OpCode::AUTH,
                Ok(header) if header.xid == xid::SET_WATCHES => OpCode::SET_WATCHES,
                _ => OpCode::DELETE,
            };
            seeds.push(("server_message", concat(&[&op(op_code), bytes])));
        }
        "MultiResponse" => seeds.push(("multi_response", bytes.to_vec())),
        _ => {}
    }
    if let Some((_, op_code)) = RESPONSE_OPS.iter().find(|(known, _)| *known == name) {
        let header = reply(1, ErrorCode::OK);
        seeds.push(("server_message", concat(&[&op(*op_code), &header, bytes])));
    }
    seeds
}

/// Seeds built with this crate's encoder, so that every target has some even without vectors.
pub(super) fn handmade_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let stat = Stat {
        czxid: 2,
        mzxid: 3,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_001,
        version: 1,
        data_length: 2,
        pzxid: 2,
        ..Stat::default()
    };
    let connect = ConnectResponse {
        protocol_version: 0,
        time_out: 30_000,
        session_id: 0x0100_0000_0000_0001,
        passwd: Some(Bytes::from_static(&[7; 16])),
        read_only: Some(false),
    };
    let old_connect = ConnectResponse {
        read_only: None,
        ..connect.clone()
    };
    let event = WatcherEvent {
        event_type: EventType::NODE_DATA_CHANGED,
        state: KeeperState::SYNC_CONNECTED,
        path: Some("/a".into()),
    };
    let notification = ReplyHeader {
        xid: xid::NOTIFICATION,
        zxid: -1,
        err: ErrorCode::OK,
    };
    let ping = ReplyHeader {
        xid: xid::PING,
        zxid: 5,
        err: ErrorCode::OK,
    };
    let no_node = ReplyHeader {
        xid: 7,
        zxid: 5,
        err: ErrorCode::NO_NODE,
    };
    let ok = ReplyHeader {
        xid: 8,
        zxid: 6,
        err: ErrorCode::OK,
    };
    let multi = MultiResponse {
        results: vec![
            MultiResult::Create(CreateResponse {
                path: Some("/a".into()),
            }),
            MultiResult::Delete,
            MultiResult::SetData(SetDataResponse { stat: stat.clone() }),
            MultiResult::Check,
        ],
    };
    let failed = MultiResponse {
        results: vec![
            MultiResult::Error(ErrorCode::OK),
            MultiResult::Error(ErrorCode::BAD_VERSION),
            MultiResult::Error(ErrorCode::RUNTIME_INCONSISTENCY),
        ],
    };
    let index_of = |record: &str| {
        RECORD_NAMES
            .iter()
            .position(|name| *name == record)
            .and_then(|index| u8::try_from(index).ok())
            .unwrap_or(0)
    };
    // A ConnectRequest as a client older than 3.4 sends it: without the readOnly byte.
    let old_connect_request = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out: 30_000,
        session_id: 0,
        passwd: Some(Bytes::from_static(&[0; 16])),
        read_only: false,
    }
    .to_bytes();
    let old_connect_request = &old_connect_request[..old_connect_request.len() - 1];
    let ping_frame = ping.to_bytes().to_vec();
    vec![
        (
            "frame_decoder",
            concat(&[&[16, 3], &frame(&ping_frame), &frame(&[0; 20])]),
        ),
        ("frame_decoder", concat(&[&[0x80, 0], &[0xff; 4]])),
        (
            "frame_decoder",
            concat(&[&[0x80, 1], &frame(&[]), &frame(&ping_frame), &[0, 0]]),
        ),
        ("connect_response", connect.to_bytes().to_vec()),
        ("connect_response", old_connect.to_bytes().to_vec()),
        ("watcher_event", event.to_bytes().to_vec()),
        (
            "server_message",
            concat(&[&op(OpCode(0)), &notification.to_bytes(), &event.to_bytes()]),
        ),
        ("server_message", concat(&[&op(OpCode::PING), &ping_frame])),
        (
            "server_message",
            concat(&[&op(OpCode::GET_DATA), &no_node.to_bytes()]),
        ),
        (
            "server_message",
            concat(&[&op(OpCode::MULTI), &ok.to_bytes(), &failed.to_bytes()]),
        ),
        ("multi_response", multi.to_bytes().to_vec()),
        ("multi_response", failed.to_bytes().to_vec()),
        (
            "record_by_name",
            concat(&[&[index_of("data.Stat")], &stat.to_bytes()]),
        ),
        (
            "record_by_name",
            concat(&[&[index_of("proto.ConnectRequest")], old_connect_request]),
        ),
    ]
}

/// An op code prefix, as [`server_message`] reads it.
pub(super) fn op(op_code: OpCode) -> [u8; 4] {
    op_code.0.to_be_bytes()
}

/// `body` with its frame length prefix.
pub(super) fn frame(body: &[u8]) -> Vec<u8> {
    let len = i32::try_from(body.len()).expect("seed frames are small");
    concat(&[&len.to_be_bytes(), body])
}

pub(super) fn concat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Parses lowercase (or uppercase) hex with an even number of digits.
pub(super) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}
