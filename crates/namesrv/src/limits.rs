//! Bounded resources under hostile or broken clients: the connection count, the server-wide
//! byte budgets for frames being received or answered (waited for in line: `transport::room`)
//! and for answers waiting for their reader, and a counter per cap that triggered (with a
//! rate-limited log line). The metrics read them at scrape time
//! (`resource_caps_triggered_total{kind}`, `pending_frame_bytes`, `pending_response_bytes`:
//! `metrics.rs`).
//!
//! The caps themselves are config keys (`serverMaxConnections`, `serverFrameTimeoutSeconds`,
//! `com.rocketmq.remoting.frameMaxLength`, `serverMaxPendingFrameBytes`,
//! `serverConnectionMaxPendingResponseBytes`, `serverMaxPendingResponseBytes`,
//! `registerBodyMaxInflatedBytes`, `registerBrokerMaxTopics`, `kvConfigMaxValueBytes`), read
//! where they are enforced so an update takes effect at once.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tracing::warn;

pub use transport::budget::{Budget, Held};

/// The gate in front of the registration lane (`transport::gate`, #25): a connection whose last
/// registration went to the lane waits before its next frame over 1 MiB while the lane has this
/// much queued or on its way: seven of S7's 2 MB bodies. It bounds the registrations applied a
/// second (at 8 MiB, ~190 under S7's 1 % churn on an AMD EPYC, where 200 were asked for:
/// `bench/results/paired-25-writer/`).
pub const LANE_QUEUE_MARK: u64 = 16 << 20;
pub type LaneGate = transport::gate::QueueGate<LANE_QUEUE_MARK>;

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
    /// Large frames wait to begin while the registration lane has enough queued.
    pub lane_gate: Arc<LaneGate>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
