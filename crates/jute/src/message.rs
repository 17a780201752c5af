//! Whole server messages: the reply header, then the body its request's op code calls for.

use bytes::{BufMut, Bytes};

use crate::codes::{ErrorCode, OpCode, xid};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::multi::MultiResponse;
use crate::reader::{Decode, Encode, Reader};
use crate::records::*;
use crate::view::{DecodeView, SliceReader};

/// Declares [`Response`] and the op codes that reply with each variant, from one table.
macro_rules! responses {
    (
        empty: $($empty_op:ident)|+;
        $( $(#[$meta:meta])* $variant:ident($body:ty) = $($op:ident)|+; )*
    ) => {
        /// The body of a successful reply, by the op code of the request it answers.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Response {
            /// A reply without a body.
            Empty,
            $( $(#[$meta])* $variant($body), )*
        }

        impl Response {
            /// Decodes the body of a successful reply to a request of `op`. The body must be
            /// consumed exactly.
            ///
            /// # Errors
            ///
            /// [`DecodeErrorKind::NoResponseForOpCode`] for an op code that gets no reply (or
            /// is unknown), and any error of the body's record.
            pub fn decode(op: OpCode, body: Bytes) -> Result<Response, DecodeError> {
                let mut reader = Reader::new(body);
                let response = match op {
                    $( OpCode::$empty_op )|+ => Response::Empty,
                    $( $( OpCode::$op )|+ => Response::$variant(
                        <$body as Decode>::decode(&mut reader)
                            .map_err(|e| e.within(stringify!($body)))?,
                    ), )*
                    other => {
                        return Err(DecodeError::at(
                            DecodeErrorKind::NoResponseForOpCode(other.0),
                            "Response",
                        ))
                    }
                };
                reader.finish::<Response>()?;
                Ok(response)
            }
        }

        impl Encode for Response {
            fn encoded_len(&self) -> usize {
                match self {
                    Response::Empty => 0,
                    $( Response::$variant(body) => body.encoded_len(), )*
                }
            }
            fn encode<B: BufMut>(&self, buf: &mut B) {
                match self {
                    Response::Empty => {}
                    $( Response::$variant(body) => body.encode(buf), )*
                }
            }
        }

        /// The body of a reply without one; gives the response back if it has a body.
        impl TryFrom<Response> for () {
            type Error = Response;
            fn try_from(response: Response) -> Result<(), Response> {
                match response {
                    Response::Empty => Ok(()),
                    other => Err(other),
                }
            }
        }

        $(
            /// The body of the matching [`Response`] variant; gives the response back if it
            /// is another.
            impl TryFrom<Response> for $body {
                type Error = Response;
                fn try_from(response: Response) -> Result<$body, Response> {
                    match response {
                        Response::$variant(body) => Ok(body),
                        other => Err(other),
                    }
                }
            }
        )*
    };
}

responses! {
    empty: DELETE | CHECK | PING | CLOSE_SESSION | AUTH | SET_WATCHES | SET_WATCHES2
        | CHECK_WATCHES | REMOVE_WATCHES;
    /// create.
    Create(CreateResponse) = CREATE;
    /// create2, createContainer, createTTL.
    Create2(Create2Response) = CREATE2 | CREATE_CONTAINER | CREATE_TTL;
    /// exists.
    Exists(ExistsResponse) = EXISTS;
    /// getData, and reconfig (the new configuration and the stat of `/zookeeper/config`).
    GetData(GetDataResponse) = GET_DATA | RECONFIG;
    /// setData.
    SetData(SetDataResponse) = SET_DATA;
    /// getACL.
    GetAcl(GetAclResponse) = GET_ACL;
    /// setACL.
    SetAcl(SetAclResponse) = SET_ACL;
    /// getChildren.
    GetChildren(GetChildrenResponse) = GET_CHILDREN;
    /// getChildren2.
    GetChildren2(GetChildren2Response) = GET_CHILDREN2;
    /// sync.
    Sync(SyncResponse) = SYNC;
    /// getAllChildrenNumber.
    GetAllChildrenNumber(GetAllChildrenNumberResponse) = GET_ALL_CHILDREN_NUMBER;
    /// getEphemerals.
    GetEphemerals(GetEphemeralsResponse) = GET_EPHEMERALS;
    /// multi and multiRead.
    Multi(MultiResponse) = MULTI | MULTI_READ;
    /// addWatch: the server sends an ErrorResponse with code OK.
    AddWatch(ErrorResponse) = ADD_WATCH;
    /// whoAmI.
    WhoAmI(WhoAmIResponse) = WHO_AM_I;
    /// sasl.
    Sasl(SetSaslResponse) = SASL;
}

/// A server frame after the connect response, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerMessage {
    /// A watch notification (xid -1).
    Notification(ReplyHeader, WatcherEvent),
    /// A reply to a request. `body` is `None` when `header.err` is not OK: the server sends no
    /// body then, and any bytes it did send are ignored, as the Java client ignores them.
    Reply {
        /// The reply header.
        header: ReplyHeader,
        /// The decoded body of a successful reply.
        body: Option<Response>,
    },
}

impl ServerMessage {
    /// Decodes one frame from the server. `op_of` gives the op code of the request a reply
    /// header's xid answers (the caller knows what it sent): it is asked for every xid except
    /// the notification xid, including ping (-2) and auth (-4).
    ///
    /// # Errors
    ///
    /// Any [`DecodeError`] of the header or the body; bytes after a notification or a
    /// successful body are [`DecodeErrorKind::TrailingBytes`].
    pub fn decode(frame: Bytes, op_of: impl FnOnce(i32) -> OpCode) -> Result<Self, DecodeError> {
        let mut reader = Reader::new(frame);
        let header = ReplyHeader::decode(&mut reader).map_err(|e| e.within("ReplyHeader"))?;
        if header.xid == xid::NOTIFICATION {
            let event = WatcherEvent::decode(&mut reader).map_err(|e| e.within("WatcherEvent"))?;
            reader.finish::<WatcherEvent>()?;
            return Ok(Self::Notification(header, event));
        }
        let body = if header.err == ErrorCode::OK {
            Some(Response::decode(op_of(header.xid), reader.into_rest())?)
        } else {
            None
        };
        Ok(Self::Reply { header, body })
    }
}

impl ServerMessage {
    /// Decodes a notification frame (xid -1) into its header and the borrowed view of its
    /// event: the path borrows `frame` (nothing is allocated unless it is in Java's surrogate
    /// form). For a frame with xid -1 this succeeds exactly when [`ServerMessage::decode`]
    /// gives a [`ServerMessage::Notification`], with the same event (`into_owned`), and fails
    /// with the same error otherwise.
    ///
    /// # Errors
    ///
    /// Any [`DecodeError`] of the header or the event, [`DecodeErrorKind::TrailingBytes`] after
    /// the event, and [`DecodeErrorKind::NotANotification`] for a header with another xid.
    pub fn decode_notification(
        frame: &[u8],
    ) -> Result<(ReplyHeader, WatcherEventRef<'_>), DecodeError> {
        let mut reader = SliceReader::new(frame);
        let header = <ReplyHeader as DecodeView>::decode_view(&mut reader)
            .map_err(|e| e.within("ReplyHeader"))?;
        if header.xid != xid::NOTIFICATION {
            return Err(DecodeError::at(
                DecodeErrorKind::NotANotification(header.xid),
                "ReplyHeader.xid",
            ));
        }
        let event = WatcherEventRef::decode(&mut reader).map_err(|e| e.within("WatcherEvent"))?;
        reader.finish::<WatcherEvent>()?;
        Ok((header.into_owned(), event))
    }
}

impl Encode for ServerMessage {
    fn encoded_len(&self) -> usize {
        match self {
            Self::Notification(header, event) => header.encoded_len() + event.encoded_len(),
            Self::Reply { header, body } => {
                header.encoded_len() + body.as_ref().map_or(0, Encode::encoded_len)
            }
        }
    }
    fn encode<B: BufMut>(&self, buf: &mut B) {
        match self {
            Self::Notification(header, event) => {
                header.encode(buf);
                event.encode(buf);
            }
            Self::Reply { header, body } => {
                header.encode(buf);
                if let Some(body) = body {
                    body.encode(buf);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_converts_to_its_own_body_only() {
        let exists = Response::Exists(ExistsResponse {
            stat: Stat::default(),
        });
        assert_eq!(
            ExistsResponse::try_from(exists.clone()),
            Ok(ExistsResponse {
                stat: Stat::default()
            })
        );
        assert_eq!(
            GetDataResponse::try_from(exists.clone()),
            Err(exists.clone())
        );
        assert_eq!(<()>::try_from(exists.clone()), Err(exists));
        assert_eq!(<()>::try_from(Response::Empty), Ok(()));
        assert_eq!(
            SyncResponse::try_from(Response::Empty),
            Err(Response::Empty)
        );
    }
}
