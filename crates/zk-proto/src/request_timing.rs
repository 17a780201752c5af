//! The client's own time per request (feature `request-timing`): how long a request takes from
//! the call to its bytes handed to the connection, and its reply from the bytes read to the
//! caller's future returning. What is left of a round trip is the network and the server.
//!
//! The session state machine takes no part: it never reads the clock. The client handle stamps
//! the call ([`Recorder::issued`]) and the return ([`Recorder::received`]); the connection task
//! stamps the write and the read ([`SendStamps`]), knowing which request a frame carries from
//! `Session::transmit_next`.
//!
//! Without the feature every type here is zero-sized and every method does nothing, so the
//! hooks in the client and the driver compile to nothing.

#[cfg(feature = "request-timing")]
pub(crate) use on::{DecodedAt, Issued, Receiving, Recorder, SendStamps};
#[cfg(feature = "request-timing")]
pub use on::{LatencySummary, RequestTiming};

#[cfg(not(feature = "request-timing"))]
pub(crate) use off::{DecodedAt, Issued, Receiving, Recorder, SendStamps};

#[cfg(feature = "request-timing")]
mod on;

/// The feature is off: nothing is measured.
#[cfg(not(feature = "request-timing"))]
mod off {
    use crate::session::RequestId;

    /// When a request was issued: nothing.
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct Issued;
    /// When a reply's frame was read: nothing.
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct DecodedAt;

    /// The timings of one client: nothing.
    #[derive(Debug, Clone)]
    pub(crate) struct Recorder;

    impl Recorder {
        #[inline(always)]
        pub(crate) fn new() -> Recorder {
            Recorder
        }

        #[inline(always)]
        pub(crate) fn issued(&self) -> Issued {
            Issued
        }

        #[inline(always)]
        pub(crate) fn receiving(&self) -> Receiving {
            Receiving
        }
    }

    /// A call's side of the receive interval: nothing.
    #[derive(Debug)]
    pub(crate) struct Receiving;

    impl Receiving {
        #[inline(always)]
        pub(crate) fn received(self, _decoded: DecodedAt) {}
    }

    /// The connection task's stamps: nothing.
    #[derive(Debug)]
    pub(crate) struct SendStamps;

    impl SendStamps {
        #[inline(always)]
        pub(crate) fn new(_recorder: Recorder) -> SendStamps {
            SendStamps
        }

        #[inline(always)]
        pub(crate) fn submitted(&mut self, _id: RequestId, _issued: Issued) {}

        #[inline(always)]
        pub(crate) fn encoded(&mut self, _id: Option<RequestId>, _len: usize) {}

        #[inline(always)]
        pub(crate) fn wrote(&mut self, _len: usize) {}

        #[inline(always)]
        pub(crate) fn settled(&mut self) {}

        #[inline(always)]
        pub(crate) fn connection_closed(&mut self) {}

        #[inline(always)]
        pub(crate) fn frame_read(&mut self) {}

        #[inline(always)]
        pub(crate) fn frame_done(&mut self) {}

        #[inline(always)]
        pub(crate) fn replied(&mut self, _id: RequestId) -> DecodedAt {
            DecodedAt
        }
    }
}
