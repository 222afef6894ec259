//! Replaced snapshots awaiting their free: a writer that publishes a new copy-on-write snapshot
//! frees the one it replaced itself, on its own thread, once no reader holds it. Otherwise the
//! last reader of a snapshot would free it, and with it whatever the write replaced: after a
//! 50,000-topic route table changed, ≈ 40 ms of freeing on a connection worker, in the middle of
//! the reads it serves.
//!
//! The only clock read of the route writers, kept here so that `route/` sees no clock (its time
//! is a parameter, ARCHITECTURE.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a writer waits for readers to let go of the snapshot it replaced, so that it frees
/// that snapshot itself. Readers hold one for microseconds; one held longer (a listing being
/// encoded) is kept and freed by a later write.
const RETIRE_WAIT: Duration = Duration::from_millis(1);

/// Frees the replaced snapshots in `retired` that no reader holds any more, waiting up to
/// [`RETIRE_WAIT`] for readers to finish; the ones still held stay for a later write.
pub(crate) fn free_unheld<T>(retired: &mut Vec<Arc<T>>) {
    let deadline = Instant::now() + RETIRE_WAIT;
    loop {
        retired.retain(|table| Arc::strong_count(table) > 1);
        if retired.is_empty() || Instant::now() >= deadline {
            return;
        }
        std::thread::yield_now();
    }
}
