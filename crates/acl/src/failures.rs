//! Failed authentications per (client address, access key): after [`LIMIT`] failures within
//! the window (60 s, [`WINDOW`]) that pair — and only that pair — is refused without any check
//! until its window ends. A guesser of an account's secret gets ten tries a minute from one
//! address, and learns nothing from later ones (not even a right guess is verified); requests
//! of other accounts, or unsigned ones, from the same address are not affected, and unsigned
//! or unknown-key failures are counted apart from every account ([`Principal`]). Time is a
//! parameter.
//!
//! Every authenticated request asks [`Failures::is_blocked`], so that question takes no lock: the
//! blocked pairs are published as an immutable set, rebuilt under the lock only when a pair
//! becomes blocked or a blocked one is forgotten. One failed request (a health probe that does
//! not sign) therefore costs the other requests nothing.
//!
//! The table holds at most [`CAPACITY`] pairs. To make room it forgets ended windows, then the
//! oldest window that is not blocked; an active block is never forgotten early. When every pair
//! it holds is blocked, a new pair's failures are not counted until a block ends (the requests
//! are refused all the same; only the throttling of that new pair waits).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use tokio::time::Instant;

/// Failures a pair may have in one window before it is blocked.
pub const LIMIT: u32 = 10;
/// The default window, counted from a pair's first failure.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Pairs remembered at most.
pub const CAPACITY: usize = 16_384;

/// Whose failures a request counts towards, at its address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Principal {
    /// No access key (nor a certificate naming an account).
    Unsigned,
    /// An access key that names no account (all such keys together: probing them is one
    /// guesser).
    UnknownKey,
    /// An account, by its access key (signed, or named by a client certificate).
    Account(Arc<str>),
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::Unsigned => f.write_str("unsigned"),
            Principal::UnknownKey => f.write_str("unknown access key"),
            Principal::Account(key) => write!(f, "access key {key}"),
        }
    }
}

type Pair = (IpAddr, Principal);

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    failures: u32,
}

/// What recording a failure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Counted; the pair may try again (`failures` so far in its window).
    Counted { failures: u32 },
    /// This failure reached the limit: the pair is blocked until its window ends.
    Blocked { until: Instant },
    /// Not counted: the table is full of active blocks.
    Full,
}

/// The failure windows of recent (address, principal) pairs.
#[derive(Debug)]
pub struct Failures {
    window: Duration,
    capacity: usize,
    windows: Mutex<HashMap<Pair, Window>>,
    /// Entries in `windows`.
    len: AtomicUsize,
    /// The blocked pairs and the end of their block (a subset of `windows`, republished
    /// under its lock), read without a lock.
    blocked: ArcSwap<HashMap<Pair, Instant>>,
    /// Entries in `blocked`, so the common case (nobody blocked) reads one atomic.
    blocked_len: AtomicUsize,
}

impl Default for Failures {
    fn default() -> Self {
        Failures::new(WINDOW, CAPACITY)
    }
}

impl Failures {
    /// A table with this window and at most `capacity` pairs.
    pub fn new(window: Duration, capacity: usize) -> Self {
        Failures {
            window,
            capacity: capacity.max(1),
            windows: Mutex::default(),
            len: AtomicUsize::new(0),
            blocked: ArcSwap::default(),
            blocked_len: AtomicUsize::new(0),
        }
    }

    /// Whether some pair is (or was until lately) blocked: when not, [`Self::is_blocked`]
    /// is false for every pair and the caller need not read the clock.
    #[inline]
    pub fn any_blocked(&self) -> bool {
        self.blocked_len.load(Ordering::Relaxed) != 0
    }

    /// Whether `who` at `ip` is blocked at `now` (no lock).
    pub fn is_blocked(&self, ip: IpAddr, who: &Principal, now: Instant) -> bool {
        self.any_blocked()
            && self.blocked.load().get(&(ip, who.clone())).is_some_and(|until| now < *until)
    }

    fn blocks(&self, w: &Window, now: Instant) -> bool {
        w.failures >= LIMIT && now < w.start + self.window
    }

    /// Republishes the blocked subset of `windows` (called under its lock, only when that
    /// subset may have changed).
    fn publish_blocked(&self, windows: &HashMap<Pair, Window>, now: Instant) {
        let blocked: HashMap<Pair, Instant> = windows
            .iter()
            .filter(|(_, w)| self.blocks(w, now))
            .map(|(pair, w)| (pair.clone(), w.start + self.window))
            .collect();
        self.blocked_len.store(blocked.len(), Ordering::Relaxed);
        self.blocked.store(Arc::new(blocked));
    }

    /// Makes room for one more pair: ended windows first, then the oldest unblocked one.
    /// False when every pair held is actively blocked.
    fn make_room(&self, windows: &mut HashMap<Pair, Window>, now: Instant) -> bool {
        windows.retain(|_, w| now < w.start + self.window);
        if windows.len() < self.capacity {
            return true;
        }
        let oldest = windows
            .iter()
            .filter(|(_, w)| !self.blocks(w, now))
            .min_by_key(|(_, w)| w.start)
            .map(|(pair, _)| pair.clone());
        oldest.is_some_and(|pair| windows.remove(&pair).is_some())
    }

    /// Counts a failure of `who` at `ip` at `now`.
    pub fn record(&self, ip: IpAddr, who: &Principal, now: Instant) -> Recorded {
        let mut windows = self.windows.lock();
        let pair = (ip, who.clone());
        if windows.len() >= self.capacity && !windows.contains_key(&pair) {
            let had_blocked = self.any_blocked();
            let room = self.make_room(&mut windows, now);
            if had_blocked {
                // Ended blocks may have been forgotten.
                self.publish_blocked(&windows, now);
            }
            if !room {
                self.len.store(windows.len(), Ordering::Relaxed);
                return Recorded::Full;
            }
        }
        let window = windows.entry(pair).or_insert(Window { start: now, failures: 0 });
        if now >= window.start + self.window {
            *window = Window { start: now, failures: 0 };
        }
        window.failures = window.failures.saturating_add(1);
        let recorded = if window.failures == LIMIT {
            Recorded::Blocked { until: window.start + self.window }
        } else {
            Recorded::Counted { failures: window.failures }
        };
        if matches!(recorded, Recorded::Blocked { .. }) {
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
        windows.retain(|_, w| now < w.start + self.window);
        if self.any_blocked() {
            self.publish_blocked(&windows, now);
        }
        self.len.store(windows.len(), Ordering::Relaxed);
    }

    /// Pairs remembered.
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

    fn account(key: &str) -> Principal {
        Principal::Account(Arc::from(key))
    }

    #[tokio::test(start_paused = true)]
    async fn the_tenth_failure_blocks_the_pair_until_its_window_ends() {
        let failures = Failures::default();
        let (ops, start) = (account("ops"), Instant::now());
        for n in 1..LIMIT {
            assert_eq!(failures.record(ip(1), &ops, start), Recorded::Counted { failures: n });
            assert!(!failures.is_blocked(ip(1), &ops, start));
        }
        assert_eq!(
            failures.record(ip(1), &ops, start),
            Recorded::Blocked { until: start + WINDOW }
        );
        assert!(failures.is_blocked(ip(1), &ops, start + WINDOW - Duration::from_millis(1)));
        assert!(!failures.is_blocked(ip(2), &ops, start), "other addresses are not affected");
        assert!(!failures.is_blocked(ip(1), &account("broker"), start), "nor other keys");
        assert!(!failures.is_blocked(ip(1), &Principal::Unsigned, start), "nor unsigned ones");
        assert!(!failures.is_blocked(ip(1), &ops, start + WINDOW));
        assert_eq!(failures.record(ip(1), &ops, start + WINDOW), Recorded::Counted { failures: 1 });
    }

    #[tokio::test(start_paused = true)]
    async fn unsigned_and_unknown_key_failures_never_block_an_account() {
        let failures = Failures::default();
        let start = Instant::now();
        for _ in 0..1000 {
            failures.record(ip(1), &Principal::Unsigned, start);
            failures.record(ip(1), &Principal::UnknownKey, start);
        }
        assert!(failures.is_blocked(ip(1), &Principal::Unsigned, start));
        assert!(failures.is_blocked(ip(1), &Principal::UnknownKey, start));
        assert!(!failures.is_blocked(ip(1), &account("ops"), start));
        assert_eq!(failures.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn only_a_blocked_pair_makes_callers_read_the_clock() {
        let failures = Failures::default();
        let (ops, start) = (account("ops"), Instant::now());
        failures.record(ip(1), &ops, start);
        assert!(!failures.any_blocked(), "one failure blocks nobody: the fast path stays open");
        for _ in 0..LIMIT {
            failures.record(ip(2), &ops, start);
        }
        assert!(failures.any_blocked());
        assert!(
            failures.is_blocked(ip(2), &ops, start) && !failures.is_blocked(ip(1), &ops, start)
        );
        failures.prune(start + WINDOW);
        assert!(!failures.any_blocked(), "the ended block is forgotten");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_table_never_forgets_an_active_block() {
        let failures = Failures::new(WINDOW, 64);
        let (ops, start) = (account("ops"), Instant::now());
        for _ in 0..LIMIT {
            failures.record(ip(1), &ops, start);
        }
        for n in 0..10_000u32 {
            let addr = IpAddr::from(((n + 1) << 8).to_be_bytes());
            failures.record(addr, &Principal::Unsigned, start + Duration::from_millis(1));
        }
        assert_eq!(failures.len(), 64, "bounded");
        assert!(failures.is_blocked(ip(1), &ops, start + Duration::from_millis(2)));
        // A table full of active blocks counts no new pair, and lifts none.
        let full = Failures::new(WINDOW, 2);
        for who in [account("a"), account("b")] {
            for _ in 0..LIMIT {
                full.record(ip(1), &who, start);
            }
        }
        assert_eq!(full.record(ip(1), &account("c"), start), Recorded::Full);
        assert!(full.is_blocked(ip(1), &account("a"), start));
        assert!(full.is_blocked(ip(1), &account("b"), start));
        assert!(matches!(
            full.record(ip(1), &account("c"), start + WINDOW),
            Recorded::Counted { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn failures_spread_over_windows_never_block() {
        let failures = Failures::new(Duration::from_secs(2), CAPACITY);
        let start = Instant::now();
        for round in 0..5u32 {
            let at = start + Duration::from_secs(2) * round;
            for _ in 0..LIMIT - 1 {
                failures.record(ip(1), &Principal::Unsigned, at);
            }
            assert!(!failures.is_blocked(ip(1), &Principal::Unsigned, at));
        }
        failures.prune(start + Duration::from_secs(20));
        assert!(failures.is_empty());
    }
}
