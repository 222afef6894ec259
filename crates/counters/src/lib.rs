//! Plain counters and histograms for hot paths, recorded with relaxed atomics on the calling
//! thread's own stripe (one cache line per recording thread, so threads recording at once never
//! write the same line); reading (a scrape) sums the stripes. The nameserver core and the
//! controller record into them; how they are exposed (Prometheus' text formats) is `crates/ops`'
//! business: this crate knows no exposition format.
//!
//! [`Striped`] is a counter; [`DurationHistogram`] a lock-free histogram of durations (a
//! mutex-guarded histogram would take its lock per observation), read as a
//! [`HistogramSnapshot`] that gives each bucket's own count.

pub mod clock;
mod histogram;
mod requests;
mod striped;

pub use histogram::{nanos, DurationHistogram, HistogramSnapshot, MAX_BOUNDS};
pub use requests::{
    PendingRequests, RequestDurations, RequestResult, RequestStats, RequestTotal, REQUEST_BOUNDS_NS,
};
pub use striped::Striped;
