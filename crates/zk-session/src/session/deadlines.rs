//! The per-request deadlines: when each request still waiting for its reply times out.
//!
//! A reply (or any other end of a request) removes its deadline in O(log n), found through the
//! request's id, so a burst of replies or a connection loss with thousands of requests in
//! flight costs O(n log n), not O(n²).

use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use super::RequestId;

/// The deadlines of the requests that have one, ordered by time.
#[derive(Debug, Default)]
pub(super) struct Deadlines {
    by_time: BTreeSet<(Instant, RequestId)>,
    by_id: HashMap<RequestId, Instant>,
}

impl Deadlines {
    /// `id` times out at `at`.
    pub(super) fn insert(&mut self, at: Instant, id: RequestId) {
        if let Some(before) = self.by_id.insert(id, at) {
            self.by_time.remove(&(before, id));
        }
        self.by_time.insert((at, id));
    }

    /// `id` ended (answered, failed, cancelled): it no longer times out.
    pub(super) fn remove(&mut self, id: RequestId) {
        if let Some(at) = self.by_id.remove(&id) {
            self.by_time.remove(&(at, id));
        }
    }

    /// The earliest deadline.
    pub(super) fn next(&self) -> Option<Instant> {
        self.by_time.first().map(|&(at, _)| at)
    }

    /// Takes the earliest request whose deadline is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<RequestId> {
        let &(at, id) = self.by_time.first()?;
        if at > now {
            return None;
        }
        self.by_time.pop_first();
        self.by_id.remove(&id);
        Some(id)
    }

    /// Forgets every deadline (the session is over).
    pub(super) fn clear(&mut self) {
        self.by_time.clear();
        self.by_id.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn due_requests_come_out_in_time_order_and_ended_ones_never() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        let mut deadlines = Deadlines::default();
        deadlines.insert(at(30), RequestId(1));
        deadlines.insert(at(10), RequestId(2));
        deadlines.insert(at(20), RequestId(3));
        deadlines.insert(at(20), RequestId(4));
        deadlines.remove(RequestId(3));
        deadlines.remove(RequestId(99));
        assert_eq!(deadlines.next(), Some(at(10)));
        assert_eq!(deadlines.pop_due(at(5)), None);
        assert_eq!(deadlines.pop_due(at(25)), Some(RequestId(2)));
        assert_eq!(deadlines.pop_due(at(25)), Some(RequestId(4)));
        assert_eq!(deadlines.pop_due(at(25)), None);
        assert_eq!(deadlines.next(), Some(at(30)));
        // A request given a new deadline keeps only that one.
        deadlines.insert(at(40), RequestId(1));
        assert_eq!(deadlines.pop_due(at(35)), None);
        assert_eq!(deadlines.pop_due(at(40)), Some(RequestId(1)));
        deadlines.insert(at(50), RequestId(5));
        deadlines.clear();
        assert_eq!(deadlines.next(), None);
    }
}
