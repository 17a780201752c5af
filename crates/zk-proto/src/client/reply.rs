//! A call's way back: the future that waits for its reply ([`PendingReply`]) and the reply
//! read as the body its request asked for ([`typed`]).

use std::future::Future;

use jute::Response;
use tokio::sync::oneshot;

use crate::driver::{Delivery, ReplyResult};
use crate::{Error, ProtocolError, Result};

pub(super) type Reply = std::result::Result<ReplyResult, oneshot::error::RecvError>;

/// The body type of a reply: each is one variant of jute's `Response`, which the session
/// decodes by the op code it sent.
pub(super) trait ReplyBody: TryFrom<Response, Error = Response> + Send + 'static {}
impl<R: TryFrom<Response, Error = Response> + Send + 'static> ReplyBody for R {}

/// A reply as the body its request asked for. The session decodes a reply by the op code of
/// the request it answers, so the variant always matches; a mismatch would be our bug, and
/// is reported as a protocol error rather than a panic.
pub(super) fn typed<R: ReplyBody>(reply: Reply) -> Result<R> {
    let response = reply.unwrap_or(Err(Error::Closed))?;
    R::try_from(response)
        .map_err(|_| Error::Protocol(ProtocolError::UnexpectedResponse(std::any::type_name::<R>())))
}

/// A call's reply on its way back from the connection task. Written out rather than an
/// `async` block, so that a call's future holds the receiver and little else (the `async`
/// version kept room for the reply itself in every call's future: 120 bytes for `get_data`,
/// moved with the future wherever the caller keeps it).
#[derive(Debug)]
pub(super) struct PendingReply {
    pub(super) rx: oneshot::Receiver<Delivery>,
    /// The receive interval's stamp (feature `request-timing`); taken when the reply comes.
    pub(super) receiving: Option<crate::request_timing::Receiving>,
}

impl Future for PendingReply {
    type Output = Reply;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Reply> {
        let delivery = std::task::ready!(std::pin::Pin::new(&mut self.rx).poll(cx))?;
        if let Some(receiving) = self.receiving.take() {
            receiving.received(delivery.decoded);
        }
        std::task::Poll::Ready(Ok(delivery.result))
    }
}
