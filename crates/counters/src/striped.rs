//! [`Striped`]: a `u64` counter split over one cache line per recording thread. Recording is
//! one relaxed `fetch_add` on the calling thread's stripe; reading sums the stripes.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::LazyLock;

/// Stripes per value: the number of cores rounded up to a power of two (at most 64).
pub(crate) static STRIPES: LazyLock<usize> = LazyLock::new(|| {
    std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 64).next_power_of_two()
});

static NEXT_THREAD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's stripe number (assigned round-robin on first use).
    static THREAD_STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The calling thread's stripe in a value of `stripes` (a power of two) stripes.
#[inline]
pub(crate) fn stripe(stripes: usize) -> usize {
    THREAD_STRIPE.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
            s.set(v);
        }
        v & (stripes - 1)
    })
}

/// One cache line (two, against adjacent-line prefetch) holding one stripe of a counter.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Line(AtomicU64);

/// A `u64` counter striped per thread: it counts without two cores ever contending for one
/// cache line.
#[derive(Debug)]
pub struct Striped {
    lines: Box<[Line]>,
}

impl Default for Striped {
    fn default() -> Self {
        Self { lines: (0..*STRIPES).map(|_| Line::default()).collect() }
    }
}

impl Striped {
    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.inc_by(1);
    }

    /// Adds `v` to this thread's stripe.
    #[inline]
    pub fn inc_by(&self, v: u64) {
        self.lines[stripe(self.lines.len())].0.fetch_add(v, Ordering::Relaxed);
    }

    /// The total over every stripe.
    pub fn get(&self) -> u64 {
        self.lines.iter().map(|l| l.0.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_striped_counter_sums_every_thread() {
        let counter = Striped::default();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        counter.inc();
                    }
                    counter.inc_by(5);
                });
            }
        });
        assert_eq!(counter.get(), 4 * 1005);
    }
}
