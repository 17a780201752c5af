//! The multi and multiRead bodies: a sequence of [`MultiHeader`]-tagged records ending with a
//! `done` marker.
//!
//! ```text
//! request:  (MultiHeader{type: op, done: false, err: -1} record)*  MultiHeader{-1, true, -1}
//! response: (MultiHeader{type: result, done: false, err} body)*    MultiHeader{-1, true, -1}
//! ```
//!
//! A failed transaction still has `err == 0` in its reply header: the failure is told only by
//! the results, every one of which is then an [`MultiResult::Error`].

use bytes::BufMut;

use crate::codes::{ErrorCode, OpCode};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::reader::{Decode, Encode, Reader};
use crate::records::*;

/// The header that ends a multi body.
const END: MultiHeader = MultiHeader {
    op_type: -1,
    done: true,
    err: -1,
};

/// Reads headers and items until the end marker. Every item consumes at least a 9-byte header,
/// so the item count is bounded by the input.
fn decode_items<T>(
    reader: &mut Reader,
    at: &'static str,
    mut item: impl FnMut(&MultiHeader, &mut Reader) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let mut items = Vec::new();
    loop {
        let header = MultiHeader::decode(reader).map_err(|e| e.within(at))?;
        if header.done {
            return Ok(items);
        }
        items.push(item(&header, reader).map_err(|e| e.within(at))?);
    }
}

/// The header of one item, before its body.
fn item_header(op_type: i32, err: i32) -> MultiHeader {
    MultiHeader {
        op_type,
        done: false,
        err,
    }
}

fn invalid(header: &MultiHeader) -> DecodeError {
    DecodeError::new(DecodeErrorKind::InvalidMultiOp(header.op_type))
}

/// One operation of a multi (writes) or multiRead (reads) request.
///
/// The two kinds cannot be mixed in one request: the server refuses it. Encoding a `MultiOp`
/// writes its record only; [`MultiRequest`] adds the headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// create (result: [`MultiResult::Create`]).
    Create(CreateRequest),
    /// create2 (result: [`MultiResult::Create2`], or `Create` from 3.8.0/3.8.1 servers).
    Create2(CreateRequest),
    /// createContainer.
    CreateContainer(CreateRequest),
    /// createTTL.
    CreateTtl(CreateTtlRequest),
    /// delete.
    Delete(DeleteRequest),
    /// setData.
    SetData(SetDataRequest),
    /// check: fails the transaction unless the node has the version.
    Check(CheckVersionRequest),
    /// getChildren (multiRead only; `watch` must be false).
    GetChildren(GetChildrenRequest),
    /// getData (multiRead only; `watch` must be false).
    GetData(GetDataRequest),
}

/// Evaluates `$e` with `$body` bound to the operation's record, whatever its type.
macro_rules! with_op_body {
    ($op:expr, $body:ident => $e:expr) => {
        match $op {
            MultiOp::Create($body) | MultiOp::Create2($body) | MultiOp::CreateContainer($body) => {
                $e
            }
            MultiOp::CreateTtl($body) => $e,
            MultiOp::Delete($body) => $e,
            MultiOp::SetData($body) => $e,
            MultiOp::Check($body) => $e,
            MultiOp::GetChildren($body) => $e,
            MultiOp::GetData($body) => $e,
        }
    };
}

impl MultiOp {
    /// The op code written in this operation's header.
    pub fn op_code(&self) -> OpCode {
        match self {
            Self::Create(_) => OpCode::CREATE,
            Self::Create2(_) => OpCode::CREATE2,
            Self::CreateContainer(_) => OpCode::CREATE_CONTAINER,
            Self::CreateTtl(_) => OpCode::CREATE_TTL,
            Self::Delete(_) => OpCode::DELETE,
            Self::SetData(_) => OpCode::SET_DATA,
            Self::Check(_) => OpCode::CHECK,
            Self::GetChildren(_) => OpCode::GET_CHILDREN,
            Self::GetData(_) => OpCode::GET_DATA,
        }
    }

    /// Whether this operation belongs in a multiRead rather than a multi.
    pub fn is_read(&self) -> bool {
        matches!(self, Self::GetChildren(_) | Self::GetData(_))
    }

    fn decode_body(header: &MultiHeader, reader: &mut Reader) -> Result<Self, DecodeError> {
        Ok(match OpCode(header.op_type) {
            OpCode::CREATE => Self::Create(Decode::decode(reader)?),
            OpCode::CREATE2 => Self::Create2(Decode::decode(reader)?),
            OpCode::CREATE_CONTAINER => Self::CreateContainer(Decode::decode(reader)?),
            OpCode::CREATE_TTL => Self::CreateTtl(Decode::decode(reader)?),
            OpCode::DELETE => Self::Delete(Decode::decode(reader)?),
            OpCode::SET_DATA => Self::SetData(Decode::decode(reader)?),
            OpCode::CHECK => Self::Check(Decode::decode(reader)?),
            OpCode::GET_CHILDREN => Self::GetChildren(Decode::decode(reader)?),
            OpCode::GET_DATA => Self::GetData(Decode::decode(reader)?),
            _ => return Err(invalid(header)),
        })
    }
}

impl Encode for MultiOp {
    fn encoded_len(&self) -> usize {
        with_op_body!(self, body => body.encoded_len())
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        with_op_body!(self, body => body.encode(buf))
    }
}

/// The body of a multi (op code 14) or multiRead (op code 22) request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiRequest {
    /// The operations, in order.
    pub ops: Vec<MultiOp>,
}

impl Encode for MultiRequest {
    fn encoded_len(&self) -> usize {
        let items: usize = self
            .ops
            .iter()
            .map(|op| MultiHeader::MIN_LEN + op.encoded_len())
            .sum();
        items + MultiHeader::MIN_LEN
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        for op in &self.ops {
            // Requests carry err -1 in every header, as the Java client writes them.
            item_header(op.op_code().0, -1).encode(buf);
            op.encode(buf);
        }
        END.encode(buf);
    }
}

impl Decode for MultiRequest {
    const MIN_LEN: usize = MultiHeader::MIN_LEN;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        decode_items(reader, "MultiRequest", MultiOp::decode_body).map(|ops| Self { ops })
    }
}

/// The result of one operation of a multi or multiRead.
///
/// Encoding a `MultiResult` writes its body only; [`MultiResponse`] adds the headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// A create without stat (type 1).
    Create(CreateResponse),
    /// A create with stat (type 15): create2, createContainer and createTTL.
    Create2(Create2Response),
    /// A delete (type 2, no body).
    Delete,
    /// A setData (type 5).
    SetData(SetDataResponse),
    /// A check (type 13, no body).
    Check,
    /// A getChildren (type 8).
    GetChildren(GetChildrenResponse),
    /// A getData (type 4).
    GetData(GetDataResponse),
    /// A failed operation (type -1). In a failed transaction every result is an error: OK for
    /// the operations before the failing one, its code for it, RuntimeInconsistency after it.
    Error(ErrorCode),
}

/// Evaluates `$e` with `$body` bound to the result's body record, or to `()` when it has none.
macro_rules! with_result_body {
    ($result:expr, $body:ident => $e:expr) => {
        match $result {
            MultiResult::Create($body) => $e,
            MultiResult::Create2($body) => $e,
            MultiResult::SetData($body) => $e,
            MultiResult::GetChildren($body) => $e,
            MultiResult::GetData($body) => $e,
            MultiResult::Error(code) => {
                let $body = &ErrorResponse { err: *code };
                $e
            }
            MultiResult::Delete | MultiResult::Check => {
                let $body = &();
                $e
            }
        }
    };
}

impl MultiResult {
    /// The type written in this result's header, and the error code written beside it.
    pub fn header(&self) -> (OpCode, ErrorCode) {
        match self {
            Self::Create(_) => (OpCode::CREATE, ErrorCode::OK),
            Self::Create2(_) => (OpCode::CREATE2, ErrorCode::OK),
            Self::Delete => (OpCode::DELETE, ErrorCode::OK),
            Self::SetData(_) => (OpCode::SET_DATA, ErrorCode::OK),
            Self::Check => (OpCode::CHECK, ErrorCode::OK),
            Self::GetChildren(_) => (OpCode::GET_CHILDREN, ErrorCode::OK),
            Self::GetData(_) => (OpCode::GET_DATA, ErrorCode::OK),
            Self::Error(code) => (OpCode::ERROR, *code),
        }
    }

    fn decode_body(header: &MultiHeader, reader: &mut Reader) -> Result<Self, DecodeError> {
        Ok(match OpCode(header.op_type) {
            OpCode::CREATE => Self::Create(Decode::decode(reader)?),
            OpCode::CREATE2 => Self::Create2(Decode::decode(reader)?),
            OpCode::DELETE => Self::Delete,
            OpCode::SET_DATA => Self::SetData(Decode::decode(reader)?),
            OpCode::CHECK => Self::Check,
            OpCode::GET_CHILDREN => Self::GetChildren(Decode::decode(reader)?),
            OpCode::GET_DATA => Self::GetData(Decode::decode(reader)?),
            // The code is written twice, in the header and in an ErrorResponse; like the Java
            // client we take the ErrorResponse's.
            OpCode::ERROR => Self::Error(ErrorResponse::decode(reader)?.err),
            _ => return Err(invalid(header)),
        })
    }
}

impl Encode for MultiResult {
    fn encoded_len(&self) -> usize {
        with_result_body!(self, body => body.encoded_len())
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        with_result_body!(self, body => body.encode(buf))
    }
}

/// The body of the reply to a multi or multiRead.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiResponse {
    /// One result per operation, in order.
    pub results: Vec<MultiResult>,
}

impl Encode for MultiResponse {
    fn encoded_len(&self) -> usize {
        let items: usize = self
            .results
            .iter()
            .map(|result| MultiHeader::MIN_LEN + result.encoded_len())
            .sum();
        items + MultiHeader::MIN_LEN
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        for result in &self.results {
            let (op, err) = result.header();
            item_header(op.0, err.0).encode(buf);
            result.encode(buf);
        }
        END.encode(buf);
    }
}

impl Decode for MultiResponse {
    const MIN_LEN: usize = MultiHeader::MIN_LEN;
    fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
        decode_items(reader, "MultiResponse", MultiResult::decode_body)
            .map(|results| Self { results })
    }
}

#[cfg(any(test, feature = "proptest"))]
mod strategies {
    use proptest::prelude::*;
    use proptest::strategy::BoxedStrategy;

    use super::*;
    use crate::strategy::Generate;

    impl Generate for MultiOp {
        fn strategy() -> BoxedStrategy<Self> {
            prop_oneof![
                CreateRequest::strategy().prop_map(MultiOp::Create),
                CreateRequest::strategy().prop_map(MultiOp::Create2),
                CreateRequest::strategy().prop_map(MultiOp::CreateContainer),
                CreateTtlRequest::strategy().prop_map(MultiOp::CreateTtl),
                DeleteRequest::strategy().prop_map(MultiOp::Delete),
                SetDataRequest::strategy().prop_map(MultiOp::SetData),
                CheckVersionRequest::strategy().prop_map(MultiOp::Check),
                GetChildrenRequest::strategy().prop_map(MultiOp::GetChildren),
                GetDataRequest::strategy().prop_map(MultiOp::GetData),
            ]
            .boxed()
        }
    }

    impl Generate for MultiResult {
        fn strategy() -> BoxedStrategy<Self> {
            prop_oneof![
                CreateResponse::strategy().prop_map(MultiResult::Create),
                Create2Response::strategy().prop_map(MultiResult::Create2),
                Just(MultiResult::Delete),
                SetDataResponse::strategy().prop_map(MultiResult::SetData),
                Just(MultiResult::Check),
                GetChildrenResponse::strategy().prop_map(MultiResult::GetChildren),
                GetDataResponse::strategy().prop_map(MultiResult::GetData),
                ErrorCode::strategy().prop_map(MultiResult::Error),
            ]
            .boxed()
        }
    }

    impl Generate for MultiRequest {
        fn strategy() -> BoxedStrategy<Self> {
            proptest::collection::vec(MultiOp::strategy(), 0..6)
                .prop_map(|ops| MultiRequest { ops })
                .boxed()
        }
    }

    impl Generate for MultiResponse {
        fn strategy() -> BoxedStrategy<Self> {
            proptest::collection::vec(MultiResult::strategy(), 0..6)
                .prop_map(|results| MultiResponse { results })
                .boxed()
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn multi_request_properties() {
        crate::strategy::check_properties::<super::MultiRequest>();
    }

    #[test]
    fn multi_response_properties() {
        crate::strategy::check_properties::<super::MultiResponse>();
    }
}
