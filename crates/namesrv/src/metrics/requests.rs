//! Requests by request code and result, and their handling time by request code: the two
//! metrics recorded on every request, so each recording is a table look-up and a few relaxed
//! atomics on the calling thread's stripe (no label hashing, no lock, no allocation once a
//! (code, result) pair has been seen).

use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use remoting::{RequestCode, ResponseCode};

use super::striped::{DurationHistogram, Striped, MAX_BOUNDS};

/// Label set of `requests_total`: request code, its Java name, and the result.
pub type RequestLabels = [(&'static str, &'static str); 3];
/// Label set of `request_duration_seconds`: request code and its Java name.
pub type CodeLabels = [(&'static str, &'static str); 2];

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

/// Request counts and latencies, as the JSON API serves them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RequestSnapshot {
    pub totals: Vec<RequestTotal>,
    pub durations: Vec<RequestDurations>,
}

/// Requests of one code with one result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RequestTotal {
    pub code: String,
    pub request: String,
    pub result: String,
    pub count: u64,
}

/// The latency histogram of one request code (cumulative buckets, +Inf left out: it is
/// `count`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestDurations {
    pub code: String,
    pub request: String,
    pub count: u64,
    pub sum_seconds: f64,
    pub buckets: Vec<Bucket>,
}

/// Observations at most `le` seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Bucket {
    pub le: f64,
    pub count: u64,
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
    /// Route bodies served from the cache / encoded, since the last apply.
    pub(super) route_cache: [u64; 2],
}

impl PendingRequests {
    /// Counts a route body served from the cache (`hit`) or encoded, when metrics are on.
    #[inline]
    pub fn route_cache_lookup(&mut self, enabled: bool, hit: bool) {
        if enabled {
            self.route_cache[usize::from(hit)] += 1;
        }
    }
}

/// How a request ended, for the `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestResult {
    /// Answered with this response code.
    Answered(i32),
    /// A oneway request: nothing was answered.
    Oneway,
}

/// `requests_total` and `request_duration_seconds`, with a handle per (code, result) resolved
/// on first use.
#[derive(Debug)]
pub struct RequestStats {
    totals: Family<RequestLabels, Counter<u64, Striped>>,
    durations: Family<CodeLabels, DurationHistogram, fn() -> DurationHistogram>,
    /// `request slot × result slot` counter handles.
    total_handles: Box<[OnceLock<Counter<u64, Striped>>]>,
    /// A histogram handle per request slot.
    duration_handles: Box<[OnceLock<DurationHistogram>]>,
}

fn request_histogram() -> DurationHistogram {
    DurationHistogram::with_bounds_ns(&REQUEST_BOUNDS_NS)
}

impl RequestStats {
    /// Empty statistics, registered in `registry` (a registry with the `rocketmq_namesrv`
    /// prefix).
    pub fn new(registry: &mut Registry) -> Self {
        let stats = Self {
            totals: Family::default(),
            durations: Family::new_with_constructor(request_histogram),
            total_handles: (0..REQUESTS.len() * RESULTS.len()).map(|_| OnceLock::new()).collect(),
            duration_handles: (0..REQUESTS.len()).map(|_| OnceLock::new()).collect(),
        };
        registry.register(
            "requests",
            "Remoting requests handled, by request code and result (response code name, ONEWAY when nothing is answered)",
            stats.totals.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from taking up a remoting request to its answer being buffered, by request code",
            stats.durations.clone(),
        );
        stats
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
    fn total(&self, slot: usize, result: usize) -> &Counter<u64, Striped> {
        self.total_handles[slot * RESULTS.len() + result].get_or_init(|| {
            let (code, name) = &REQUESTS[slot];
            self.totals.get_or_create_owned(&[
                ("code", code.as_str()),
                ("request", name.as_str()),
                ("result", RESULTS[result].as_str()),
            ])
        })
    }

    /// The latency histogram of a request slot, created on first use.
    #[inline]
    fn duration(&self, slot: usize) -> &DurationHistogram {
        self.duration_handles[slot].get_or_init(|| {
            let (code, name) = &REQUESTS[slot];
            self.durations
                .get_or_create_owned(&[("code", code.as_str()), ("request", name.as_str())])
        })
    }

    /// Every (code, result) seen so far with its count, and every code's latency histogram
    /// (for the JSON API and the dashboard).
    pub fn snapshot(&self) -> RequestSnapshot {
        let results = RESULTS.len();
        let totals = self
            .total_handles
            .iter()
            .enumerate()
            .filter_map(|(i, handle)| {
                let counter = handle.get()?;
                let (code, request) = &REQUESTS[i / results];
                Some(RequestTotal {
                    code: code.clone(),
                    request: request.clone(),
                    result: RESULTS[i % results].clone(),
                    count: counter.get(),
                })
            })
            .collect();
        let durations = self
            .duration_handles
            .iter()
            .enumerate()
            .filter_map(|(slot, handle)| {
                let (sum_seconds, count, buckets) = handle.get()?.snapshot();
                let (code, request) = &REQUESTS[slot];
                Some(RequestDurations {
                    code: code.clone(),
                    request: request.clone(),
                    count,
                    sum_seconds,
                    buckets: buckets
                        .into_iter()
                        .filter(|(le, _)| le.is_finite())
                        .map(|(le, count)| Bucket { le, count })
                        .collect(),
                })
            })
            .collect();
        RequestSnapshot { totals, durations }
    }

    /// Requests counted so far with this code and result (tests, the dashboard).
    pub fn count(&self, code: i32, result: RequestResult) -> u64 {
        let slot = request_slot(code);
        self.total_handles[slot * RESULTS.len() + result_slot(result)].get().map_or(0, Counter::get)
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
    use super::super::striped::nanos;
    use super::*;

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
        let stats = RequestStats::new(&mut Registry::default());
        stats.record(105, RequestResult::Answered(0), Duration::from_micros(3));
        stats.record(105, RequestResult::Answered(0), Duration::from_micros(30));
        stats.record(105, RequestResult::Answered(17), Duration::from_micros(3));
        assert_eq!(stats.count(105, RequestResult::Answered(0)), 2);
        assert_eq!(stats.count(105, RequestResult::Answered(17)), 1);
        assert_eq!(stats.count(106, RequestResult::Answered(0)), 0);
    }

    #[test]
    fn a_pending_batch_counts_once_applied_and_equals_recording_one_by_one() {
        let batched = RequestStats::new(&mut Registry::default());
        let direct = RequestStats::new(&mut Registry::default());
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
        let (b, d) = (batched.snapshot(), direct.snapshot());
        assert_eq!(serde_json::to_value(&b).unwrap(), serde_json::to_value(&d).unwrap());
        assert_eq!(b.totals.iter().map(|t| t.count).sum::<u64>(), 5);
    }
}
