//! The client's own time per request (feature `request-timing`).

use super::Client;
use crate::request_timing::RequestTiming;

impl Client {
    /// The client's own time per request so far, over every handle of this session: from each
    /// call to its bytes handed to the connection, and from each reply's bytes read to the
    /// caller's future returning (see [`RequestTiming`]). Take one before a stretch of work
    /// and one after, and [`RequestTiming::since`] gives that stretch's figures.
    ///
    /// Timing starts with the first call (which returns zeros): until then the client keeps
    /// no histogram and stamps nothing, so a client nobody times costs what it costs without
    /// the feature. Only with the feature `request-timing`; without it nothing is timed and
    /// the client pays nothing.
    pub fn request_timing(&self) -> RequestTiming {
        self.shared.timing.snapshot()
    }
}
