//! Bounded resources under hostile or broken clients: the connection count, the server-wide
//! byte budgets for frames being received or answered (waited for in line: `room.rs`) and for
//! answers waiting for their reader, and a counter per cap that triggered (with a rate-limited log line). The metrics read them at
//! scrape time (`resource_caps_triggered_total{kind}`, `pending_frame_bytes`,
//! `pending_response_bytes`: `metrics.rs`).
//!
//! The caps themselves are config keys (`serverMaxConnections`, `serverFrameTimeoutSeconds`,
//! `com.rocketmq.remoting.frameMaxLength`, `serverMaxPendingFrameBytes`,
//! `serverConnectionMaxPendingResponseBytes`, `serverMaxPendingResponseBytes`,
//! `registerBodyMaxInflatedBytes`, `registerBrokerMaxTopics`, `kvConfigMaxValueBytes`), read
//! where they are enforced so an update takes effect at once.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use tokio::sync::Notify;
use tracing::warn;

/// A cap that can trigger. [`Cap::as_str`] is its `kind` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `serverMaxConnections`: a new connection was closed at once.
    Connections,
    /// `serverFrameTimeoutSeconds`: a frame took too long to arrive; its connection closed.
    FrameTimeout,
    /// `com.rocketmq.remoting.frameMaxLength`: a frame announced a longer length.
    FrameLength,
    /// `serverMaxPendingFrameBytes`: the frame budget was spent; a connection waits for room.
    PendingFrameBytes,
    /// `serverConnectionMaxPendingResponseBytes`: one client left too many answers unread.
    ConnectionResponseBytes,
    /// `serverMaxPendingResponseBytes`: the unread-answer budget was spent; a connection closed.
    PendingResponseBytes,
    /// `serverChannelMaxIdleTimeSeconds` while answers waited: a client that does not read.
    WriteTimeout,
    /// `registerBodyMaxInflatedBytes`: a compressed registration inflated too far.
    InflatedBody,
    /// `registerBrokerMaxTopics`: a registration carried too many topics.
    TopicsPerBroker,
    /// `kvConfigMaxValueBytes`: a PUT_KV_CONFIG value was too long.
    KvValueBytes,
}

impl Cap {
    /// Every cap, in the order of the counters.
    pub const ALL: [Cap; 10] = [
        Cap::Connections,
        Cap::FrameTimeout,
        Cap::FrameLength,
        Cap::PendingFrameBytes,
        Cap::ConnectionResponseBytes,
        Cap::PendingResponseBytes,
        Cap::WriteTimeout,
        Cap::InflatedBody,
        Cap::TopicsPerBroker,
        Cap::KvValueBytes,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Cap::Connections => "connections",
            Cap::FrameTimeout => "frame_timeout",
            Cap::FrameLength => "frame_length",
            Cap::PendingFrameBytes => "pending_frame_bytes",
            Cap::ConnectionResponseBytes => "connection_response_bytes",
            Cap::PendingResponseBytes => "pending_response_bytes",
            Cap::WriteTimeout => "write_timeout",
            Cap::InflatedBody => "inflated_body",
            Cap::TopicsPerBroker => "topics_per_broker",
            Cap::KvValueBytes => "kv_value_bytes",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Log lines for one cap come at most this often (an attack triggers it thousands of times a
/// second); the line says how many triggers it stands for.
const LOG_EVERY_MS: u64 = 1000;

/// A log line for an event that an attacker can repeat at will: at most one per
/// [`LOG_EVERY_MS`], saying how many events it stands for.
#[derive(Debug, Default)]
pub struct Throttled {
    count: AtomicU64,
    logged_count: AtomicU64,
    logged_at_ms: AtomicU64,
}

impl Throttled {
    /// Counts one event at `now_ms`; `Some(events since the last line)` when a line is due.
    pub fn due(&self, now_ms: u64) -> Option<u64> {
        let total = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let last = self.logged_at_ms.load(Ordering::Relaxed);
        let due = total == 1 || now_ms.saturating_sub(last) >= LOG_EVERY_MS;
        (due && self
            .logged_at_ms
            .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
            .is_ok())
        .then(|| total - self.logged_count.swap(total, Ordering::Relaxed))
    }
}

/// The shared state of the resource caps (one per server, in `State`).
#[derive(Debug, Default)]
pub struct Limits {
    connections: AtomicUsize,
    /// Bytes held for frames being received or answered, all connections together.
    pub pending_frame_bytes: Arc<Budget>,
    /// Bytes of answers waiting for their reader, all connections together.
    pub pending_response_bytes: Arc<Budget>,
    triggered: [AtomicU64; Cap::ALL.len()],
    /// Per cap: the trigger count at its last log line, and when that was (ms of a monotonic
    /// clock), packed as two u64s.
    logged_count: [AtomicU64; Cap::ALL.len()],
    logged_at_ms: [AtomicU64; Cap::ALL.len()],
    /// PROXY prefaces refused from peers not trusted (`proxyProtocolTrustedAddresses`).
    pub untrusted_proxy: Throttled,
}

impl Limits {
    /// Counts one trigger of `cap` and logs it (at most once a second per cap, with the number
    /// of triggers since the last line). `now_ms` is any monotonic clock in ms; `detail` says
    /// who and how much.
    pub fn triggered(&self, cap: Cap, now_ms: u64, detail: std::fmt::Arguments<'_>) {
        let i = cap.index();
        let total = self.triggered[i].fetch_add(1, Ordering::Relaxed) + 1;
        let last = self.logged_at_ms[i].load(Ordering::Relaxed);
        let due = total == 1 || now_ms.saturating_sub(last) >= LOG_EVERY_MS;
        if due
            && self.logged_at_ms[i]
                .compare_exchange(last, now_ms.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            let since = total - self.logged_count[i].swap(total, Ordering::Relaxed);
            warn!(cap = cap.as_str(), triggers = since, total, "resource cap reached: {detail}");
        }
    }

    /// How often `cap` has triggered since start (the `kind` counter of the metrics).
    pub fn trigger_count(&self, cap: Cap) -> u64 {
        self.triggered[cap.index()].load(Ordering::Relaxed)
    }

    /// Admits one more connection if fewer than `max` are open; the guard gives it back.
    pub fn admit(self: &Arc<Self>, max: usize) -> Option<Admitted> {
        self.connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| Admitted(Arc::clone(self)))
    }

    /// Connections admitted and not yet closed.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Acquire)
    }
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
pub struct Admitted(Arc<Limits>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A server-wide byte budget: connections take bytes from it and give them back. A connection
/// may wait for room in a line ([`Budget::queue_up`]): only the first in line may take, and
/// every give-back wakes the line.
#[derive(Debug, Default)]
pub struct Budget {
    used: AtomicU64,
    /// Connections waiting for room (only then does a give-back notify).
    waiters: AtomicUsize,
    /// Their tickets, in the order they came.
    line: Mutex<VecDeque<u64>>,
    next_ticket: AtomicU64,
    room: Arc<Notify>,
}

impl Budget {
    /// Takes `bytes` if the total stays within `limit`; false (nothing taken) otherwise.
    pub fn try_take(&self, bytes: u64, limit: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|total| *total <= limit)
            })
            .is_ok()
    }

    /// Gives back `bytes` taken before, waking whoever waits for room.
    pub fn give_back(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
        if bytes > 0 && self.waiters.load(Ordering::Acquire) > 0 {
            self.room.notify_waiters();
        }
    }

    /// Joins the line of connections waiting for room; the ticket leaves it
    /// ([`Budget::leave_line`]).
    pub fn queue_up(&self) -> u64 {
        let ticket = self.next_ticket.fetch_add(1, Ordering::AcqRel);
        self.line.lock().push_back(ticket);
        self.waiters.fetch_add(1, Ordering::AcqRel);
        ticket
    }

    /// Takes `bytes` for `ticket` if it is first in line and they fit within `limit`.
    pub fn try_take_in_turn(&self, ticket: u64, bytes: u64, limit: u64) -> bool {
        self.line.lock().front() == Some(&ticket) && self.try_take(bytes, limit)
    }

    /// Leaves the line (having taken, or given up), and lets the next one look.
    pub fn leave_line(&self, ticket: u64) {
        {
            let mut line = self.line.lock();
            if let Some(at) = line.iter().position(|&t| t == ticket) {
                line.remove(at);
            }
        }
        self.waiters.fetch_sub(1, Ordering::AcqRel);
        self.room.notify_waiters();
    }

    /// Connections waiting for room now.
    pub fn waiters(&self) -> usize {
        self.waiters.load(Ordering::Acquire)
    }

    /// Woken by every give-back while connections wait ([`Budget::waiting`]).
    pub fn room(&self) -> Arc<Notify> {
        Arc::clone(&self.room)
    }

    /// Bytes taken now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }
}

/// Bytes one connection holds of a [`Budget`]; adjusted as its need changes, all given back
/// when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Held {
    pub fn new(budget: &Arc<Budget>) -> Self {
        Self { budget: Arc::clone(budget), bytes: 0 }
    }

    /// Holds `bytes` in all (taking or giving back the difference); false, holding what it
    /// held, when taking more would pass `limit`.
    pub fn set(&mut self, bytes: u64, limit: u64) -> bool {
        if bytes == self.bytes {
            // The common case (a frame that arrived whole): no shared counter touched.
            return true;
        }
        if bytes > self.bytes {
            if !self.budget.try_take(bytes - self.bytes, limit) {
                return false;
            }
        } else {
            self.budget.give_back(self.bytes - bytes);
        }
        self.bytes = bytes;
        true
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Holds `bytes` more that were taken from the budget on this holder's behalf.
    pub fn adopt(&mut self, bytes: u64) {
        self.bytes += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_shared_and_given_back() {
        let budget = Arc::new(Budget::default());
        let mut a = Held::new(&budget);
        let mut b = Held::new(&budget);
        assert!(a.set(600, 1000));
        assert!(!b.set(500, 1000), "over the limit: refused");
        assert_eq!((b.bytes(), budget.used()), (0, 600));
        assert!(b.set(400, 1000));
        assert!(a.set(100, 1000), "shrinking gives back");
        assert!(b.set(900, 1000));
        drop(a);
        drop(b);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn admission_stops_at_the_cap_and_reopens_when_one_closes() {
        let limits = Arc::new(Limits::default());
        let first = limits.admit(2).expect("1");
        let _second = limits.admit(2).expect("2");
        assert!(limits.admit(2).is_none());
        drop(first);
        assert!(limits.admit(2).is_some());
        assert_eq!(limits.connections(), 1, "the admitted guard was dropped at once");
    }

    #[test]
    fn triggers_are_all_counted_per_cap() {
        let limits = Limits::default();
        for ms in 0..5 {
            limits.triggered(Cap::FrameTimeout, ms, format_args!("test"));
        }
        assert_eq!(limits.trigger_count(Cap::FrameTimeout), 5);
        assert_eq!(limits.trigger_count(Cap::Connections), 0);
        assert!(Cap::ALL.iter().enumerate().all(|(i, c)| c.index() == i));
    }
}
