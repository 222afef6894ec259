//! The process's memory allocator, mimalloc, and the one control the nameserver uses on it:
//! [`release`], which hands memory already freed back to the operating system at once.
//!
//! mimalloc 3 returns a freed page to the OS only once it has been free for its purge delay
//! (1 s), and only when a later allocation or free passes through its arenas; and a page whose
//! blocks were freed by other threads stays with the thread that allocated it until that thread
//! allocates again. A nameserver that falls quiet after a burst of registrations does neither,
//! and kept the burst's memory until the next one: 2 s after `bench/run`'s S4 populate (32
//! brokers in 0.3 s) it held 87–91 MiB (#25). `crates/daemon` calls [`release`] once the route
//! tables stop changing, and [`on_thread_park`] from its runtime's workers.
//!
//! This is the only crate of the workspace that allows `unsafe`, for one call into mimalloc
//! that takes no pointer.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The allocator the binaries install (`#[global_allocator]`); [`release`] acts on it.
pub use mimalloc::MiMalloc;

/// How many times [`release`] was called: each parked thread catches up once.
static RELEASES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The [`RELEASES`] this thread last caught up with in [`on_thread_park`].
    static CAUGHT_UP: Cell<u64> = const { Cell::new(0) };
}

/// Hands back to the OS, now, the memory mimalloc holds free: the calling thread's empty pages
/// and every arena's freed ranges, whatever their purge delay; and asks every thread that calls
/// [`on_thread_park`] to hand back its own at its next park. Each page reused afterwards costs
/// a page fault, so this is for the moment after a burst, not a hot path. Does nothing useful
/// unless [`MiMalloc`] is the global allocator.
pub fn release() {
    RELEASES.fetch_add(1, Ordering::Relaxed);
    collect();
}

/// For a thread that parks when idle (tokio's `on_thread_park`): after each [`release`], hands
/// back the free pages this thread holds once, at its next park; whether it did. Otherwise one
/// atomic load. (A runtime worker keeps pages a collect from another thread does not reach:
/// after the S4 populate, 95 → 92 MiB without this, 84 → 55 MiB with it.)
pub fn on_thread_park() -> bool {
    let releases = RELEASES.load(Ordering::Relaxed);
    let behind = CAUGHT_UP.with(|seen| seen.replace(releases)) != releases;
    if behind {
        collect();
    }
    behind
}

/// `mi_collect(true)`: the calling thread's free pages, then every arena's freed ranges.
#[allow(unsafe_code)]
fn collect() {
    // SAFETY: `mi_collect` takes no pointer and returns nothing; mimalloc allows it from any
    // thread at any time, and it frees only memory no allocation holds (its free pages and its
    // arenas' free ranges).
    unsafe { libmimalloc_sys::mi_collect(true) }
}
