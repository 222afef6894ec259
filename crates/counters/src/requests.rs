//! Requests by request code and result, and their handling time by request code: the two
//! metrics recorded on every request, so each recording is a table look-up and a few relaxed
//! atomics on the calling thread's stripe (no label hashing, no lock, no allocation once a
//! (code, result) pair has been seen).

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use remoting::{RequestCode, ResponseCode};

use crate::{DurationHistogram, HistogramSnapshot, Striped, MAX_BOUNDS};

/// Bucket bounds of `request_duration_seconds`, in nanoseconds (exposed in seconds: 5 µs to
/// 2.5 s): a route read takes microseconds, a 50,000-topic registration hundreds of
/// milliseconds. The histograms are made with these, and a connection's pending batch picks
/// its buckets from them directly.
pub const REQUEST_BOUNDS_NS: [u64; 18] = [
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
];

/// The `request_duration_seconds` bucket of a duration of `ns` nanoseconds.
#[inline]
fn request_bucket(ns: u64) -> usize {
    REQUEST_BOUNDS_NS.iter().position(|&b| ns <= b).unwrap_or(REQUEST_BOUNDS_NS.len())
}

/// Codes below this are looked up in a dense table; others are "other".
const DENSE_CODES: usize = 1024;

/// The request slots: every known request code, then "other".
static REQUESTS: LazyLock<Vec<(String, String)>> = LazyLock::new(|| {
    RequestCode::ALL
        .iter()
        .map(|c| (c.to_i32().to_string(), c.java_name().unwrap_or_default()))
        .chain([("other".to_owned(), "UNKNOWN".to_owned())])
        .collect()
});

/// The result slots: every known response code, then "OTHER" (an unnamed code) and "ONEWAY"
/// (a oneway request: no answer).
static RESULTS: LazyLock<Vec<String>> = LazyLock::new(|| {
    ResponseCode::ALL
        .iter()
        .map(|c| c.java_name().unwrap_or_default())
        .chain(["OTHER".to_owned(), "ONEWAY".to_owned()])
        .collect()
});

/// code → request slot, for codes below [`DENSE_CODES`].
static SLOT_OF_CODE: LazyLock<Box<[u8]>> = LazyLock::new(|| {
    let other = RequestCode::ALL.len() as u8;
    let mut table = vec![other; DENSE_CODES].into_boxed_slice();
    for (slot, code) in RequestCode::ALL.iter().enumerate() {
        if let Some(entry) = usize::try_from(code.to_i32()).ok().and_then(|i| table.get_mut(i)) {
            *entry = slot as u8;
        }
    }
    table
});

/// Requests of one code with one result (`requests_total{code,request,result}`; serialized as
/// the JSON API lists it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RequestTotal {
    /// The request code (`other` for codes this server does not know).
    pub code: &'static str,
    /// Its Java name (`UNKNOWN` for `other`).
    pub request: &'static str,
    /// The response code's Java name, `OTHER` for an unnamed one, `ONEWAY` when nothing was
    /// answered.
    pub result: &'static str,
    pub count: u64,
}

/// The latency histogram of one request code (`request_duration_seconds{code,request}`).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestDurations {
    pub code: &'static str,
    pub request: &'static str,
    pub histogram: HistogramSnapshot,
}

/// Requests of one connection recorded but not yet added to the shared counters: a run of one
/// (code, result), so a pipelined batch of route reads costs a few atomic additions in all
/// instead of three per request.
#[derive(Debug, Default)]
pub struct PendingRequests {
    /// The run's request code and result as recorded, then as (request slot, result slot);
    /// `None` when empty. A request like the previous one is compared, not looked up.
    key: Option<((i32, RequestResult), (usize, usize))>,
    count: u64,
    sum_ns: u64,
    buckets: [u32; MAX_BOUNDS + 1],
    /// Bit i set when `buckets[i]` is not zero (so applying touches only those).
    used: u32,
}

/// How a request ended, for the `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestResult {
    /// Answered with this response code.
    Answered(i32),
    /// A oneway request: nothing was answered.
    Oneway,
}

/// Requests by (code, result) and their latency by code, with a counter per (code, result)
/// and a histogram per code created on first use (a pair never seen has none, so it is not
/// listed).
#[derive(Debug)]
pub struct RequestStats {
    /// `request slot × result slot` counters.
    total_handles: Box<[OnceLock<Striped>]>,
    /// A histogram per request slot.
    duration_handles: Box<[OnceLock<DurationHistogram>]>,
}

impl Default for RequestStats {
    fn default() -> Self {
        Self::new()
    }
}

fn request_histogram() -> DurationHistogram {
    DurationHistogram::with_bounds_ns(&REQUEST_BOUNDS_NS)
}

impl RequestStats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self {
            total_handles: (0..REQUESTS.len() * RESULTS.len()).map(|_| OnceLock::new()).collect(),
            duration_handles: (0..REQUESTS.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Records one request: its code, how it ended and how long it took.
    #[inline]
    pub fn record(&self, code: i32, result: RequestResult, elapsed: Duration) {
        let (slot, result) = (request_slot(code), result_slot(result));
        self.total(slot, result).inc();
        self.duration(slot).observe(elapsed);
    }

    /// Records one request of `ns` nanoseconds into `pending` (a connection's batch): a run of requests with the
    /// same code and result is summed there and reaches the shared counters in one
    /// [`Self::apply`], when the run ends or the connection applies its batch.
    #[inline]
    pub fn record_pending(
        &self,
        pending: &mut PendingRequests,
        code: i32,
        result: RequestResult,
        ns: u64,
    ) {
        if pending.key.is_none_or(|(raw, _)| raw != (code, result)) {
            self.apply(pending);
            pending.key = Some(((code, result), (request_slot(code), result_slot(result))));
        }
        let bucket = request_bucket(ns);
        pending.count += 1;
        pending.sum_ns = pending.sum_ns.saturating_add(ns);
        pending.buckets[bucket] += 1;
        pending.used |= 1 << bucket;
    }

    /// Adds `pending`'s requests to the shared counters and empties it. A connection applies
    /// its batch before writing the answers out, so a client never reads an answer whose
    /// request is not counted yet.
    pub fn apply(&self, pending: &mut PendingRequests) {
        let Some((_, (slot, result))) = pending.key.take() else {
            return;
        };
        self.total(slot, result).inc_by(pending.count);
        self.duration(slot).observe_counts(&pending.buckets, pending.used, pending.sum_ns);
        let mut used = pending.used;
        while used != 0 {
            pending.buckets[used.trailing_zeros() as usize] = 0;
            used &= used - 1;
        }
        pending.used = 0;
        pending.count = 0;
        pending.sum_ns = 0;
    }

    /// The counter of (request slot, result slot), created on first use.
    #[inline]
    fn total(&self, slot: usize, result: usize) -> &Striped {
        self.total_handles[slot * RESULTS.len() + result].get_or_init(Striped::default)
    }

    /// The latency histogram of a request slot, created on first use.
    #[inline]
    fn duration(&self, slot: usize) -> &DurationHistogram {
        self.duration_handles[slot].get_or_init(request_histogram)
    }

    /// Every (code, result) seen so far with its count.
    pub fn totals(&self) -> Vec<RequestTotal> {
        let results = RESULTS.len();
        self.total_handles
            .iter()
            .enumerate()
            .filter_map(|(i, handle)| {
                let counter = handle.get()?;
                let (code, request) = &REQUESTS[i / results];
                Some(RequestTotal {
                    code: code.as_str(),
                    request: request.as_str(),
                    result: RESULTS[i % results].as_str(),
                    count: counter.get(),
                })
            })
            .collect()
    }

    /// The latency histogram of every code seen so far.
    pub fn durations(&self) -> Vec<RequestDurations> {
        self.duration_handles
            .iter()
            .enumerate()
            .filter_map(|(slot, handle)| {
                let (code, request) = &REQUESTS[slot];
                Some(RequestDurations {
                    code: code.as_str(),
                    request: request.as_str(),
                    histogram: handle.get()?.snapshot(),
                })
            })
            .collect()
    }

    /// Requests counted so far with this code and result (tests, the dashboard).
    pub fn count(&self, code: i32, result: RequestResult) -> u64 {
        let slot = request_slot(code);
        self.total_handles[slot * RESULTS.len() + result_slot(result)].get().map_or(0, Striped::get)
    }
}

#[inline]
fn request_slot(code: i32) -> usize {
    usize::try_from(code)
        .ok()
        .and_then(|i| SLOT_OF_CODE.get(i))
        .map_or(RequestCode::ALL.len(), |&slot| usize::from(slot))
}

#[inline]
fn result_slot(result: RequestResult) -> usize {
    match result {
        RequestResult::Oneway => ResponseCode::ALL.len() + 1,
        RequestResult::Answered(code) => {
            let rc = ResponseCode::from_i32(code);
            ResponseCode::ALL.iter().position(|c| *c == rc).unwrap_or(ResponseCode::ALL.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nanos;

    #[test]
    fn codes_map_to_their_own_slot_and_unknown_ones_to_other() {
        assert_eq!(REQUESTS[request_slot(105)].1, "GET_ROUTEINFO_BY_TOPIC");
        assert_eq!(REQUESTS[request_slot(904)].1, "BROKER_HEARTBEAT");
        assert_eq!(REQUESTS[request_slot(999)].0, "other");
        assert_eq!(REQUESTS[request_slot(-3)].0, "other");
        assert_eq!(REQUESTS[request_slot(70_000)].0, "other");
        assert_eq!(RESULTS[result_slot(RequestResult::Answered(17))], "TOPIC_NOT_EXIST");
        assert_eq!(RESULTS[result_slot(RequestResult::Answered(1500))], "GO_AWAY");
        assert_eq!(RESULTS[result_slot(RequestResult::Answered(12345))], "OTHER");
        assert_eq!(RESULTS[result_slot(RequestResult::Oneway)], "ONEWAY");
    }

    #[test]
    fn the_pending_batch_picks_the_histograms_own_buckets() {
        let histogram = request_histogram();
        for ns in [0, 4_999, 5_000, 5_001, 999_999, 1_000_001, 2_500_000_000, u64::MAX] {
            assert_eq!(request_bucket(ns), histogram.bucket_of(ns), "{ns} ns");
        }
    }

    #[test]
    fn recording_counts_per_code_and_result() {
        let stats = RequestStats::new();
        stats.record(105, RequestResult::Answered(0), Duration::from_micros(3));
        stats.record(105, RequestResult::Answered(0), Duration::from_micros(30));
        stats.record(105, RequestResult::Answered(17), Duration::from_micros(3));
        assert_eq!(stats.count(105, RequestResult::Answered(0)), 2);
        assert_eq!(stats.count(105, RequestResult::Answered(17)), 1);
        assert_eq!(stats.count(106, RequestResult::Answered(0)), 0);
    }

    #[test]
    fn a_pending_batch_counts_once_applied_and_equals_recording_one_by_one() {
        let batched = RequestStats::new();
        let direct = RequestStats::new();
        let mut pending = PendingRequests::default();
        let requests = [(105, 0, 3), (105, 0, 30), (105, 17, 3), (105, 0, 700), (106, 0, 9)];
        for (code, result, micros) in requests {
            let (result, elapsed) =
                (RequestResult::Answered(result), Duration::from_micros(micros));
            batched.record_pending(&mut pending, code, result, nanos(elapsed));
            direct.record(code, result, elapsed);
        }
        // Runs already ended were applied when the next one began; the last one is pending.
        assert_eq!(batched.count(105, RequestResult::Answered(0)), 3);
        assert_eq!(batched.count(106, RequestResult::Answered(0)), 0, "still pending");
        batched.apply(&mut pending);
        batched.apply(&mut pending);
        assert_eq!(batched.count(106, RequestResult::Answered(0)), 1, "applied once");
        assert_eq!(batched.totals(), direct.totals());
        assert_eq!(batched.durations(), direct.durations());
        assert_eq!(batched.totals().iter().map(|t| t.count).sum::<u64>(), 5);
    }
}
