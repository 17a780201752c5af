//! Replies gathered under a deep pipeline. With [`BACKLOG_HOLD`] requests in flight the
//! server streams replies back, a few per TCP segment; waking the reader for each few costs
//! the client more than the replies do (a sleep, a wake, a poll and a read: 10-15 µs against
//! about 1 µs per reply). So the session names a read low-water mark
//! ([`Session::read_low_water`]), which the driver hands to the kernel (`SO_RCVLOWAT`): the
//! connection is reported readable only once that many bytes are in.
//!
//! Two bounds keep a reply from waiting for nothing:
//! - **bytes:** the mark never exceeds what the replies owed will certainly bring, less one
//!   frame (the reader may hold a part of it already): every frame is at least
//!   [`MIN_REPLY_FRAME`] bytes, so by the time all but one owed reply are in, so is the mark;
//! - **time:** [`SessionConfig::read_gather_limit`] (1 ms by default) after the last frame,
//!   the mark falls back to one byte until the next frame, so a server that answers slowly
//!   (or not at all) is read as before, and the read timeout sees every frame that came.

use std::time::Instant;

#[cfg(doc)]
use super::SessionConfig;
use super::{BACKLOG_HOLD, Link, Session};

/// The smallest frame a server sends, with its 4-byte length: a reply header alone (an
/// error, a delete, a ping).
const MIN_REPLY_FRAME: usize = 4 + 16;

/// The most bytes gathered: some 40 small replies (a getData of a few bytes is ~100).
const MAX_GATHER: usize = 4096;

impl Session {
    /// How many bytes the connection may let the kernel collect before its reader is woken:
    /// 1 (every byte at once) unless 64 or more requests are in flight on an
    /// established connection, then a power of two no larger than the replies owed will bring
    /// (less one frame) nor 4 KiB, for at most
    /// [`read_gather_limit`](SessionConfig::read_gather_limit) after the last frame (then 1
    /// until the next one). A driver that hands this to `SO_RCVLOWAT` must do so only when
    /// every request in flight was written out (the server owes nothing for the others), and
    /// only over plain TCP (a TLS reader may hold a record's plaintext already).
    pub fn read_low_water(&self) -> usize {
        if self.gather_deadline().is_none() {
            return 1;
        }
        let bound = (MIN_REPLY_FRAME * self.pending.len().saturating_sub(1)).min(MAX_GATHER);
        // A power of two: the mark moves rarely as the count goes up and down.
        bound.checked_ilog2().map_or(1, |log| 1 << log)
    }

    /// When the gathering of replies runs out, while it is on.
    pub(super) fn gather_deadline(&self) -> Option<Instant> {
        match self.link {
            Link::Up {
                last_recv,
                gather_lapsed: false,
                ..
            } if self.pending.len() >= BACKLOG_HOLD && !self.config.read_gather_limit.is_zero() => {
                Some(last_recv + self.config.read_gather_limit)
            }
            _ => None,
        }
    }

    /// Ends the gathering once its time is up.
    pub(super) fn gather_timers(&mut self, now: Instant) {
        if self.gather_deadline().is_some_and(|at| now >= at)
            && let Link::Up { gather_lapsed, .. } = &mut self.link
        {
            *gather_lapsed = true;
        }
    }
}
