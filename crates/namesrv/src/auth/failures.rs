//! Failed authentications per client address: after [`LIMIT`] failures within [`WINDOW`] an
//! address is refused without any check until its window ends (guessing secrets or probing
//! access keys gets ten tries a minute). Time is a parameter.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

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
    /// Entries in `windows`, so the common case (no failure anywhere) takes no lock.
    len: AtomicUsize,
}

impl Failures {
    /// Whether `ip` is blocked at `now`.
    pub fn is_blocked(&self, ip: IpAddr, now: Instant) -> bool {
        if self.len.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.windows.lock().get(&ip).is_some_and(|w| w.failures >= LIMIT && now < w.start + WINDOW)
    }

    /// Counts a failure of `ip` at `now`.
    pub fn record(&self, ip: IpAddr, now: Instant) -> Recorded {
        let mut windows = self.windows.lock();
        if windows.len() >= CAPACITY && !windows.contains_key(&ip) {
            windows.retain(|_, w| now < w.start + WINDOW);
            if windows.len() >= CAPACITY {
                let oldest = windows.iter().min_by_key(|(_, w)| w.start).map(|(ip, _)| *ip);
                if let Some(oldest) = oldest {
                    windows.remove(&oldest);
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
