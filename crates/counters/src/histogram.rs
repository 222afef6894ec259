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
