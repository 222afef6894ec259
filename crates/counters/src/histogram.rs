//! [`DurationHistogram`]: a lock-free histogram of durations with fixed buckets, striped per
//! thread like [`crate::Striped`], and its [`HistogramSnapshot`] (each bucket's own count:
//! cumulate once, where the `le` buckets are written).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::striped::{stripe, STRIPES};

/// The most bucket bounds a [`DurationHistogram`] may have (one stripe is one 256-byte block).
pub const MAX_BOUNDS: usize = 30;

/// One thread's stripe of a histogram: a count per bucket (the last is +Inf) and the sum in ns.
#[repr(align(128))]
#[derive(Debug)]
struct HistStripe {
    buckets: [AtomicU64; MAX_BOUNDS + 1],
    sum_ns: AtomicU64,
}

impl Default for HistStripe {
    fn default() -> Self {
        Self { buckets: std::array::from_fn(|_| AtomicU64::new(0)), sum_ns: AtomicU64::new(0) }
    }
}

#[derive(Debug)]
struct HistInner {
    /// Upper bounds in nanoseconds, ascending.
    bounds_ns: Box<[u64]>,
    stripes: Box<[HistStripe]>,
}

/// A histogram of durations with fixed buckets, lock-free and striped per thread: an observation
/// is a bucket search over a few integers and two relaxed `fetch_add`s. Read in seconds
/// ([`HistogramSnapshot`]). Clones share the data.
#[derive(Debug, Clone)]
pub struct DurationHistogram {
    inner: Arc<HistInner>,
}

impl DurationHistogram {
    /// A histogram with these upper bounds in seconds (ascending; +Inf is implicit; at most
    /// [`MAX_BOUNDS`]).
    pub fn new(bounds_seconds: &[f64]) -> Self {
        let bounds_ns: Vec<u64> = bounds_seconds.iter().map(|s| (s * 1e9).round() as u64).collect();
        Self::with_bounds_ns(&bounds_ns)
    }

    /// A histogram with these upper bounds in nanoseconds (ascending; +Inf is implicit; at
    /// most [`MAX_BOUNDS`]); exposed in seconds.
    pub fn with_bounds_ns(bounds_ns: &[u64]) -> Self {
        assert!(bounds_ns.len() <= MAX_BOUNDS, "at most {MAX_BOUNDS} bucket bounds");
        assert!(bounds_ns.windows(2).all(|w| w[0] < w[1]), "bounds must ascend");
        let stripes = (0..*STRIPES).map(|_| HistStripe::default()).collect();
        Self { inner: Arc::new(HistInner { bounds_ns: bounds_ns.into(), stripes }) }
    }

    /// Records one duration.
    #[inline]
    pub fn observe(&self, d: Duration) {
        let ns = nanos(d);
        let inner = &*self.inner;
        let stripe = &inner.stripes[stripe(inner.stripes.len())];
        stripe.buckets[self.bucket_of(ns)].fetch_add(1, Ordering::Relaxed);
        stripe.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The bucket a duration of `ns` nanoseconds falls in (the last one is +Inf).
    #[inline]
    pub fn bucket_of(&self, ns: u64) -> usize {
        let bounds = &self.inner.bounds_ns;
        bounds.iter().position(|&b| ns <= b).unwrap_or(bounds.len())
    }

    /// Records observations counted elsewhere: `counts[i]` in bucket i (see
    /// [`Self::bucket_of`]) for each bit i set in `used` (the others must be zero), `sum_ns` in
    /// all; one `fetch_add` per bucket used.
    pub fn observe_counts(&self, counts: &[u32; MAX_BOUNDS + 1], used: u32, sum_ns: u64) {
        let inner = &*self.inner;
        let stripe = &inner.stripes[stripe(inner.stripes.len())];
        let mut used = used;
        while used != 0 {
            let i = used.trailing_zeros() as usize;
            stripe.buckets[i].fetch_add(u64::from(counts[i]), Ordering::Relaxed);
            used &= used - 1;
        }
        stripe.sum_ns.fetch_add(sum_ns, Ordering::Relaxed);
    }

    /// The observations so far: each bucket's own count (not cumulated), their total and sum.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let inner = &*self.inner;
        let n = inner.bounds_ns.len() + 1;
        let mut counts = vec![0u64; n];
        let mut sum_ns: u128 = 0;
        for stripe in inner.stripes.iter() {
            for (total, bucket) in counts.iter_mut().zip(&stripe.buckets[..n]) {
                *total += bucket.load(Ordering::Relaxed);
            }
            sum_ns += u128::from(stripe.sum_ns.load(Ordering::Relaxed));
        }
        let buckets = counts
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let bound = inner.bounds_ns.get(i).map_or(f64::INFINITY, |&b| b as f64 / 1e9);
                (bound, c)
            })
            .collect();
        HistogramSnapshot { sum_seconds: sum_ns as f64 / 1e9, count: counts.iter().sum(), buckets }
    }
}

/// A [`DurationHistogram`] read at one moment. `count` is the sum of the buckets' counts by
/// construction (every bucket read once), so a cumulated `+Inf` bucket always equals it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// The sum of the observations, in seconds.
    pub sum_seconds: f64,
    /// How many observations.
    pub count: u64,
    /// (upper bound in seconds, observations in this bucket only), ascending; the last bound
    /// is `+Inf`. Not cumulative: cumulate once, where the `le` buckets are written.
    pub buckets: Vec<(f64, u64)>,
}

impl HistogramSnapshot {
    /// An empty snapshot with these bucket bounds (the last `+Inf`).
    pub fn empty(bounds: impl IntoIterator<Item = f64>) -> Self {
        let buckets = bounds.into_iter().map(|b| (b, 0)).collect();
        Self { sum_seconds: 0.0, count: 0, buckets }
    }

    /// Adds `other`'s observations (same bounds) to this one.
    pub fn add(&mut self, other: &HistogramSnapshot) {
        debug_assert_eq!(self.buckets.len(), other.buckets.len(), "same bounds");
        self.sum_seconds += other.sum_seconds;
        self.count += other.count;
        for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
            mine.1 += theirs.1;
        }
    }

    /// The observations since `earlier` (a snapshot of the same histogram, or sum of
    /// histograms, taken before): each bucket's, the count's and the sum's difference.
    pub fn since(&self, earlier: &HistogramSnapshot) -> HistogramSnapshot {
        HistogramSnapshot {
            sum_seconds: (self.sum_seconds - earlier.sum_seconds).max(0.0),
            count: self.count.saturating_sub(earlier.count),
            buckets: self
                .buckets
                .iter()
                .zip(&earlier.buckets)
                .map(|(&(bound, now), &(_, then))| (bound, now.saturating_sub(then)))
                .collect(),
        }
    }

    /// The `q` quantile (0 to 1) in seconds, estimated as PromQL's `histogram_quantile`
    /// does: linear within the bucket holding the rank (the first from 0), the highest finite
    /// bound when it falls in `+Inf`. `None` with no observation.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * self.count as f64;
        let (mut lower, mut below) = (0.0, 0u64);
        for &(bound, n) in &self.buckets {
            if (below + n) as f64 >= rank && n > 0 {
                if bound.is_infinite() {
                    return Some(lower);
                }
                return Some(lower + (bound - lower) * (rank - below as f64) / n as f64);
            }
            below += n;
            if bound.is_finite() {
                lower = bound;
            }
        }
        Some(lower)
    }

    /// (upper bound, observations at most that bound) per bucket: the `le` buckets.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        self.buckets
            .iter()
            .map(|&(bound, n)| {
                total += n;
                (bound, total)
            })
            .collect()
    }
}

/// A duration in nanoseconds (saturating).
#[inline]
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_puts_each_duration_in_the_first_bucket_that_holds_it() {
        let h = DurationHistogram::new(&[0.001, 0.01]);
        h.observe(Duration::from_micros(10));
        h.observe(Duration::from_millis(1)); // on the bound: le="0.001"
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_secs(2));
        let snapshot = h.snapshot();
        assert_eq!(snapshot.count, 4);
        assert_eq!(snapshot.cumulative(), vec![(0.001, 2), (0.01, 3), (f64::INFINITY, 4)]);
        assert_eq!(snapshot.buckets, vec![(0.001, 2), (0.01, 1), (f64::INFINITY, 1)]);
        let sum = snapshot.sum_seconds;
        assert!((sum - 2.00601).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn quantiles_interpolate_within_the_bucket_like_histogram_quantile() {
        let h = DurationHistogram::new(&[0.001, 0.01]);
        for _ in 0..50 {
            h.observe(Duration::from_micros(500));
        }
        for _ in 0..50 {
            h.observe(Duration::from_millis(5));
        }
        let s = h.snapshot();
        // Rank 25 of 50 in (0, 1 ms]; rank 99 is 49 of 50 into (1 ms, 10 ms].
        assert!((s.quantile(0.25).expect("q") - 0.0005).abs() < 1e-12);
        assert!((s.quantile(0.99).expect("q") - (0.001 + 0.009 * 49.0 / 50.0)).abs() < 1e-12);
        h.observe(Duration::from_secs(3));
        assert_eq!(h.snapshot().quantile(1.0), Some(0.01), "+Inf: the highest finite bound");
        assert_eq!(DurationHistogram::new(&[0.001]).snapshot().quantile(0.5), None);
    }

    #[test]
    fn a_difference_of_snapshots_holds_what_came_between() {
        let h = DurationHistogram::new(&[0.001, 0.01]);
        h.observe(Duration::from_micros(10));
        let before = h.snapshot();
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_millis(6));
        let between = h.snapshot().since(&before);
        assert_eq!(between.count, 2);
        assert_eq!(between.buckets, vec![(0.001, 0), (0.01, 2), (f64::INFINITY, 0)]);
        assert!((between.sum_seconds - 0.011).abs() < 1e-9);
        let mut total = HistogramSnapshot::empty([0.001, 0.01, f64::INFINITY]);
        total.add(&before);
        total.add(&between);
        assert_eq!(total, h.snapshot());
    }

    #[test]
    fn counts_observed_elsewhere_add_up_like_single_observations() {
        let one_by_one = DurationHistogram::new(&[0.001, 0.01]);
        let counted = DurationHistogram::new(&[0.001, 0.01]);
        let (mut counts, mut used) = ([0u32; MAX_BOUNDS + 1], 0u32);
        let mut sum_ns = 0;
        for d in [10, 1_000, 5_000, 2_000_000].map(Duration::from_micros) {
            one_by_one.observe(d);
            let bucket = counted.bucket_of(nanos(d));
            counts[bucket] += 1;
            used |= 1 << bucket;
            sum_ns += nanos(d);
        }
        counted.observe_counts(&counts, used, sum_ns);
        assert_eq!(counted.snapshot(), one_by_one.snapshot());
    }
}
