//! Failed authentications per client address: after [`LIMIT`] failures within [`WINDOW`] an
//! address is refused without any check until its window ends (guessing secrets or probing
//! access keys gets ten tries a minute). Time is a parameter.
//!
//! Every authenticated request asks [`Failures::is_blocked`], so that question takes no lock: the
//! blocked addresses are published as an immutable set, rebuilt under the lock only when an
//! address becomes blocked or a blocked one is forgotten. One failed request (a health probe
//! that does not sign) therefore costs the other requests nothing.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use tokio::time::Instant;

/// Failures an address may have in one window before it is blocked.
pub const LIMIT: u32 = 10;
/// The window: counted from an address's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most (the oldest window is forgotten first).
const CAPACITY: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

/// What recording a failure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Counted; the address may try again (`failures` so far in its window).
    Counted { failures: u32 },
    /// This failure reached the limit: the address is blocked until its window ends.
    Blocked { until: Instant },
}

/// The failure windows of recent addresses.
#[derive(Debug, Default)]
pub struct Failures {
    windows: Mutex<HashMap<IpAddr, Window>>,
    /// Entries in `windows`.
    len: AtomicUsize,
    /// The blocked addresses and the end of their block (a subset of `windows`, republished
    /// under its lock), read without a lock.
    blocked: ArcSwap<HashMap<IpAddr, Instant>>,
    /// Entries in `blocked`, so the common case (nobody blocked) reads one atomic.
    blocked_len: AtomicUsize,
}

impl Failures {
    /// Whether some address is (or was until lately) blocked: when not, [`Self::is_blocked`]
    /// is false for every address and the caller need not read the clock.
    #[inline]
    pub fn any_blocked(&self) -> bool {
        self.blocked_len.load(Ordering::Relaxed) != 0
    }

    /// Whether `ip` is blocked at `now` (no lock).
    pub fn is_blocked(&self, ip: IpAddr, now: Instant) -> bool {
        self.any_blocked() && self.blocked.load().get(&ip).is_some_and(|until| now < *until)
    }

    /// Republishes the blocked subset of `windows` (called under its lock, only when that
    /// subset may have changed).
    fn publish_blocked(&self, windows: &HashMap<IpAddr, Window>, now: Instant) {
        let blocked: HashMap<IpAddr, Instant> = windows
            .iter()
            .filter(|(_, w)| w.failures >= LIMIT && now < w.start + WINDOW)
            .map(|(ip, w)| (*ip, w.start + WINDOW))
            .collect();
        self.blocked_len.store(blocked.len(), Ordering::Relaxed);
        self.blocked.store(Arc::new(blocked));
    }

    /// Counts a failure of `ip` at `now`.
    pub fn record(&self, ip: IpAddr, now: Instant) -> Recorded {
        let mut windows = self.windows.lock();
        // Whether a blocked address was forgotten here (the published set must follow).
        let mut forgot_blocked = false;
        if windows.len() >= CAPACITY && !windows.contains_key(&ip) {
            windows.retain(|_, w| now < w.start + WINDOW);
            if windows.len() >= CAPACITY {
                let oldest = windows.iter().min_by_key(|(_, w)| w.start).map(|(ip, _)| *ip);
                if let Some(oldest) = oldest {
                    forgot_blocked |= windows.remove(&oldest).is_some_and(|w| w.failures >= LIMIT);
                }
            }
        }
        let window = windows.entry(ip).or_insert(Window { start: now, failures: 0 });
        if now >= window.start + WINDOW {
            *window = Window { start: now, failures: 0 };
        }
        window.failures = window.failures.saturating_add(1);
        let recorded = if window.failures == LIMIT {
            Recorded::Blocked { until: window.start + WINDOW }
        } else {
            Recorded::Counted { failures: window.failures }
        };
        if forgot_blocked || matches!(recorded, Recorded::Blocked { .. }) {
            self.publish_blocked(&windows, now);
        }
        self.len.store(windows.len(), Ordering::Relaxed);
        recorded
    }

    /// Forgets windows that ended before `now` (called by the periodic task).
    pub fn prune(&self, now: Instant) {
        if self.len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut windows = self.windows.lock();
        windows.retain(|_, w| now < w.start + WINDOW);
        if self.any_blocked() {
            self.publish_blocked(&windows, now);
        }
        self.len.store(windows.len(), Ordering::Relaxed);
    }

    /// Addresses remembered.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[tokio::test(start_paused = true)]
    async fn the_tenth_failure_blocks_the_address_until_its_window_ends() {
        let failures = Failures::default();
        let start = Instant::now();
        for n in 1..LIMIT {
            assert_eq!(failures.record(ip(1), start), Recorded::Counted { failures: n });
            assert!(!failures.is_blocked(ip(1), start));
        }
        assert_eq!(failures.record(ip(1), start), Recorded::Blocked { until: start + WINDOW });
        assert!(failures.is_blocked(ip(1), start + WINDOW - Duration::from_millis(1)));
        assert!(!failures.is_blocked(ip(2), start), "other addresses are not affected");
        assert!(!failures.is_blocked(ip(1), start + WINDOW));
        assert_eq!(failures.record(ip(1), start + WINDOW), Recorded::Counted { failures: 1 });
    }

    #[tokio::test(start_paused = true)]
    async fn only_a_blocked_address_makes_callers_read_the_clock() {
        let failures = Failures::default();
        let start = Instant::now();
        failures.record(ip(1), start);
        assert!(!failures.any_blocked(), "one failure blocks nobody: the fast path stays open");
        for _ in 0..LIMIT {
            failures.record(ip(2), start);
        }
        assert!(failures.any_blocked());
        assert!(failures.is_blocked(ip(2), start) && !failures.is_blocked(ip(1), start));
        failures.prune(start + WINDOW);
        assert!(!failures.any_blocked(), "the ended block is forgotten");
        assert!(!failures.is_blocked(ip(2), start + WINDOW));
    }

    #[tokio::test(start_paused = true)]
    async fn a_blocked_address_forgotten_for_room_is_no_longer_blocked() {
        let failures = Failures::default();
        let start = Instant::now();
        for _ in 0..LIMIT {
            failures.record(ip(1), start);
        }
        for n in 0..CAPACITY as u32 {
            let addr = IpAddr::from(((n + 1) << 8).to_be_bytes());
            failures.record(addr, start + Duration::from_millis(1));
        }
        assert!(!failures.is_blocked(ip(1), start + Duration::from_millis(2)));
        assert!(!failures.any_blocked());
    }

    #[tokio::test(start_paused = true)]
    async fn failures_spread_over_windows_never_block() {
        let failures = Failures::default();
        let start = Instant::now();
        for round in 0..5u32 {
            let at = start + WINDOW * round;
            for _ in 0..LIMIT - 1 {
                failures.record(ip(1), at);
            }
            assert!(!failures.is_blocked(ip(1), at));
        }
        failures.prune(start + WINDOW * 10);
        assert!(failures.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn memory_is_bounded_by_forgetting_the_oldest_window() {
        let failures = Failures::default();
        let start = Instant::now();
        for n in 0..CAPACITY as u32 + 10 {
            let addr = IpAddr::from(n.to_be_bytes());
            failures.record(addr, start + Duration::from_millis(u64::from(n)));
        }
        assert_eq!(failures.len(), CAPACITY);
    }
}
