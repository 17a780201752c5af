//! The feature is on: two histograms of atomic counters per client, written by the client
//! handles and the connection task without locks. A client times its requests from the first
//! call of `Client::request_timing` on: until then it keeps no histogram (2 × 16 KB) and no
//! stamps, so the clients of a benchmark that nobody times cost what they cost without the
//! feature.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::session::RequestId;

/// When a request was issued: the instant of the call, read only while requests are timed.
pub(crate) type Issued = Option<Instant>;
/// When a reply's frame was read, if it came in a frame (a reply the session makes up itself,
/// a connection loss say, has none and is not timed).
pub(crate) type DecodedAt = Option<Instant>;

/// Width of a histogram bucket.
const BUCKET_NS: u64 = 100;
/// Buckets of [`BUCKET_NS`] each (0 to 200 µs), then one for everything slower.
const BUCKETS: usize = 2000;

/// One interval's counters.
struct Histogram {
    count: AtomicU64,
    total_ns: AtomicU64,
    max_ns: AtomicU64,
    /// `BUCKETS` buckets, then the overflow; allocated when timing starts.
    buckets: OnceLock<Box<[AtomicU64]>>,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            count: AtomicU64::new(0),
            total_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
            buckets: OnceLock::new(),
        }
    }

    fn buckets(&self) -> &[AtomicU64] {
        self.buckets
            .get_or_init(|| (0..=BUCKETS).map(|_| AtomicU64::new(0)).collect())
    }

    fn record(&self, elapsed: Duration) {
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = usize::try_from(ns / BUCKET_NS).map_or(BUCKETS, |b| b.min(BUCKETS));
        self.buckets()[bucket].fetch_add(1, Ordering::Relaxed);
        self.total_ns.fetch_add(ns, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> LatencySummary {
        LatencySummary {
            count: self.count.load(Ordering::Relaxed),
            total_ns: self.total_ns.load(Ordering::Relaxed),
            max_ns: self.max_ns.load(Ordering::Relaxed),
            buckets: self
                .buckets()
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

/// The distribution of one interval over the requests timed (see [`RequestTiming`]): a count,
/// a total and a histogram of 100 ns buckets up to 200 µs.
#[derive(Clone, PartialEq, Eq)]
pub struct LatencySummary {
    count: u64,
    total_ns: u64,
    max_ns: u64,
    buckets: Vec<u64>,
}

impl LatencySummary {
    /// How many requests were timed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The sum of their intervals.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.total_ns)
    }

    /// The mean interval; `None` when nothing was timed.
    pub fn mean(&self) -> Option<Duration> {
        (self.count > 0).then(|| Duration::from_nanos(self.total_ns / self.count))
    }

    /// The longest interval since the client was built (not reduced by
    /// [`since`](Self::since)).
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.max_ns)
    }

    /// The interval below which a fraction `p` (0 to 1) of the requests fall, to 100 ns (the
    /// upper edge of its histogram bucket); past 200 µs, [`max`](Self::max). `None` when
    /// nothing was timed.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        // Nearest rank, at least the first.
        let rank = ((p.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(if i >= BUCKETS {
                    self.max()
                } else {
                    Duration::from_nanos((i as u64 + 1) * BUCKET_NS)
                });
            }
        }
        Some(self.max())
    }

    /// The requests timed after `earlier` (a summary of the same interval, taken before): for
    /// the figures of one stretch of work.
    #[must_use]
    pub fn since(&self, earlier: &LatencySummary) -> LatencySummary {
        LatencySummary {
            count: self.count.saturating_sub(earlier.count),
            total_ns: self.total_ns.saturating_sub(earlier.total_ns),
            max_ns: self.max_ns,
            buckets: self
                .buckets
                .iter()
                .zip(earlier.buckets.iter().chain(std::iter::repeat(&0)))
                .map(|(now, before)| now.saturating_sub(*before))
                .collect(),
        }
    }
}

/// The count, mean, median and maximum (not the buckets).
impl std::fmt::Debug for LatencySummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LatencySummary")
            .field("count", &self.count)
            .field("mean", &self.mean())
            .field("p50", &self.percentile(0.5))
            .field("max", &self.max())
            .finish()
    }
}

/// A client's own time per request, from [`Client::request_timing`](crate::Client): every
/// request made through any handle of the session since the client was built.
///
/// - [`send`](Self::send): from the call to the last byte of the request handed to the
///   connection (written to the socket; over TLS, encrypted and flushed). It covers queueing
///   the request to the connection task, that task's wake-up, encoding and the write call.
/// - [`receive`](Self::receive): from the reply's frame read off the connection to the
///   caller's future returning. It covers decoding, matching the reply to its request, waking
///   the caller and the caller's task being scheduled.
///
/// A round trip less both is the time on the network and in the server (and, on a busy
/// machine, waiting for a core). Requests that fail without a reply (connection loss,
/// timeout) have no receive time; a request sent again on a new connection has the send time
/// of its last sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTiming {
    /// From the call to the bytes written.
    pub send: LatencySummary,
    /// From the reply's bytes read to the caller's future returning.
    pub receive: LatencySummary,
}

impl RequestTiming {
    /// The requests timed after `earlier` (see [`LatencySummary::since`]).
    #[must_use]
    pub fn since(&self, earlier: &RequestTiming) -> RequestTiming {
        RequestTiming {
            send: self.send.since(&earlier.send),
            receive: self.receive.since(&earlier.receive),
        }
    }
}

struct Histograms {
    /// Set by the first snapshot: nothing is recorded before.
    on: AtomicBool,
    send: Histogram,
    receive: Histogram,
}

/// The timings of one client, shared by its handles and its connection task.
#[derive(Clone)]
pub(crate) struct Recorder(Arc<Histograms>);

/// The counts only: a client's `Debug` output is no place for 4,002 buckets.
impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("sent", &self.0.send.count.load(Ordering::Relaxed))
            .field("received", &self.0.receive.count.load(Ordering::Relaxed))
            .finish()
    }
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder(Arc::new(Histograms {
            on: AtomicBool::new(false),
            send: Histogram::new(),
            receive: Histogram::new(),
        }))
    }

    /// Whether requests are timed (a snapshot was taken).
    fn is_on(&self) -> bool {
        self.0.on.load(Ordering::Relaxed)
    }

    /// The call's instant, while requests are timed (no clock is read before).
    pub(crate) fn issued(&self) -> Issued {
        self.is_on().then(Instant::now)
    }

    /// What a call's future needs to time its reply: the recorder while requests are timed,
    /// nothing before (not even a reference count).
    pub(crate) fn receiving(&self) -> Receiving {
        Receiving(self.is_on().then(|| self.clone()))
    }

    /// The figures so far; timing starts with the first call (which sees zeros).
    pub(crate) fn snapshot(&self) -> RequestTiming {
        self.0.on.store(true, Ordering::Relaxed);
        RequestTiming {
            send: self.0.send.snapshot(),
            receive: self.0.receive.snapshot(),
        }
    }
}

/// A call's side of the receive interval (see [`Recorder::receiving`]).
#[derive(Debug)]
pub(crate) struct Receiving(Option<Recorder>);

impl Receiving {
    /// The caller got its reply, read off the connection at `decoded`.
    pub(crate) fn received(self, decoded: DecodedAt) {
        if let (Some(recorder), Some(at)) = (self.0, decoded) {
            recorder.0.receive.record(at.elapsed());
        }
    }
}

/// The connection task's side: when each request was issued, which of them sit in the write
/// buffer, and when the frame being handled was read.
#[derive(Debug)]
pub(crate) struct SendStamps {
    recorder: Recorder,
    /// Requests submitted and not yet written (or answered).
    issued: HashMap<RequestId, Instant>,
    /// Requests encoded into the connection's write buffer, each with the connection's byte
    /// count at the end of its frame, oldest first.
    unwritten: VecDeque<(u64, RequestId)>,
    /// Bytes encoded into the connection's write buffer so far.
    encoded: u64,
    /// Bytes the connection took so far.
    written: u64,
    /// When the frame being handled was read.
    frame: Option<Instant>,
}

impl SendStamps {
    pub(crate) fn new(recorder: Recorder) -> SendStamps {
        SendStamps {
            recorder,
            issued: HashMap::new(),
            unwritten: VecDeque::new(),
            encoded: 0,
            written: 0,
            frame: None,
        }
    }

    /// A caller's request became `id`.
    pub(crate) fn submitted(&mut self, id: RequestId, issued: Issued) {
        if let Some(at) = issued.filter(|_| self.recorder.is_on()) {
            self.issued.insert(id, at);
        }
    }

    /// A frame of `len` bytes went into the write buffer, carrying request `id` if any.
    pub(crate) fn encoded(&mut self, id: Option<RequestId>, len: usize) {
        self.encoded += len as u64;
        if let Some(id) = id.filter(|id| self.issued.contains_key(id)) {
            self.unwritten.push_back((self.encoded, id));
        }
    }

    /// The connection took `len` bytes of the write buffer.
    pub(crate) fn wrote(&mut self, len: usize) {
        self.written += len as u64;
    }

    /// Nothing waits for a flush: every request whose frame was wholly taken is sent now.
    pub(crate) fn settled(&mut self) {
        let Some(&(first_end, _)) = self.unwritten.front() else {
            return;
        };
        if first_end > self.written {
            return;
        }
        let now = Instant::now();
        while let Some(&(end, id)) = self.unwritten.front() {
            if end > self.written {
                break;
            }
            self.unwritten.pop_front();
            if let Some(issued) = self.issued.remove(&id) {
                self.recorder
                    .0
                    .send
                    .record(now.saturating_duration_since(issued));
            }
        }
    }

    /// The connection is gone: what was in its buffer is sent again on the next one.
    pub(crate) fn connection_closed(&mut self) {
        self.unwritten.clear();
        self.encoded = 0;
        self.written = 0;
    }

    /// The frame about to be handled was read just now (the wall clock, as every stamp here:
    /// not the runtime's, which tests may pause), while requests are timed.
    pub(crate) fn frame_read(&mut self) {
        self.frame = self.recorder.is_on().then(Instant::now);
    }

    /// The frame was handled: replies dispatched from here on came from elsewhere.
    pub(crate) fn frame_done(&mut self) {
        self.frame = None;
    }

    /// Request `id` got its reply: when its frame was read, if it came in one.
    pub(crate) fn replied(&mut self, id: RequestId) -> DecodedAt {
        if !self.issued.is_empty() {
            self.issued.remove(&id);
        }
        self.frame
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_timed_or_allocated_before_the_first_snapshot() {
        let recorder = Recorder::new();
        let mut stamps = SendStamps::new(recorder.clone());
        // No clock is read and no reference taken for a call or a frame.
        let issued = recorder.issued();
        assert_eq!(issued, None);
        let receiving = recorder.receiving();
        assert!(receiving.0.is_none());
        stamps.submitted(RequestId(1), issued);
        stamps.encoded(Some(RequestId(1)), 10);
        stamps.wrote(10);
        stamps.settled();
        stamps.frame_read();
        assert_eq!(stamps.replied(RequestId(1)), None);
        stamps.frame_done();
        receiving.received(Some(Instant::now()));
        assert!(recorder.0.send.buckets.get().is_none());
        assert!(recorder.0.receive.buckets.get().is_none());
        assert!(stamps.issued.is_empty());
        // The first snapshot starts the timing (and sees nothing before it).
        let start = recorder.snapshot();
        assert_eq!((start.send.count(), start.receive.count()), (0, 0));
        stamps.submitted(RequestId(2), recorder.issued());
        stamps.encoded(Some(RequestId(2)), 10);
        stamps.wrote(10);
        stamps.settled();
        recorder.receiving().received(Some(Instant::now()));
        let timed = recorder.snapshot().since(&start);
        assert_eq!((timed.send.count(), timed.receive.count()), (1, 1));
    }

    #[test]
    fn percentiles_come_from_the_buckets_and_since_subtracts() {
        let h = Histogram::new();
        for us in [1, 2, 3, 4, 500] {
            h.record(Duration::from_micros(us));
        }
        let all = h.snapshot();
        assert_eq!(all.count(), 5);
        assert_eq!(all.percentile(0.5), Some(Duration::from_nanos(3_100)));
        assert_eq!(all.percentile(1.0), Some(Duration::from_micros(500)));
        assert_eq!(all.mean(), Some(Duration::from_nanos(102_000)));
        h.record(Duration::from_micros(10));
        let later = h.snapshot().since(&all);
        assert_eq!(later.count(), 1);
        assert_eq!(later.percentile(0.5), Some(Duration::from_nanos(10_100)));
        assert_eq!(Histogram::new().snapshot().percentile(0.5), None);
    }

    #[test]
    fn a_request_counts_as_sent_once_its_last_byte_is_taken() {
        let recorder = Recorder::new();
        let mut stamps = SendStamps::new(recorder.clone());
        // Timing starts with the first snapshot.
        assert_eq!(recorder.snapshot().send.count(), 0);
        let start = Instant::now();
        stamps.submitted(RequestId(1), Some(start));
        stamps.submitted(RequestId(2), Some(start));
        stamps.encoded(None, 12);
        stamps.encoded(Some(RequestId(1)), 30);
        stamps.encoded(Some(RequestId(2)), 30);
        stamps.wrote(50);
        stamps.settled();
        assert_eq!(recorder.snapshot().send.count(), 1);
        stamps.wrote(22);
        stamps.settled();
        assert_eq!(recorder.snapshot().send.count(), 2);
        // A reply read in a frame carries the frame's instant; one made up by the session none.
        stamps.frame_read();
        assert!(stamps.replied(RequestId(1)).is_some_and(|at| at >= start));
        stamps.frame_done();
        assert_eq!(stamps.replied(RequestId(2)), None);
    }
}
