//! What the server counts as it works: one [`Metrics`] (reachable as `state.sinks.metrics`) of plain
//! atomics, recorded on the request path and by handlers and background tasks. How they are
//! exposed (the Prometheus text format and OpenMetrics at `GET /metrics`, with the scrape-time
//! values read from the state) is `crates/ops`' business: this module knows no exposition
//! format and no HTTP.
//!
//! # Adding a metric
//! 1. A field on [`Metrics`] with a `///` line naming the exposed metric: an atomic or a
//!    [`Striped`] counter when it is bumped on every request by several threads at once; a
//!    [`DurationHistogram`] for durations; one counter per value of a closed label set.
//! 2. A recording method here (label values of a closed set as an enum) and a read method for
//!    the exposition.
//! 3. Record where it happens (`state.sinks.metrics.foo(..)`), and expose it in `crates/ops`
//!    (`exposition.rs`: name, help text, labels).
//!
//! Recording is cheap (a relaxed atomic; requests: see `requests.rs`) and needs no check of
//! `metricsEnable`: when it is `false` the connection path skips the per-request recording (its
//! clock reads included) and `/metrics` answers 404, but counting elsewhere stays harmless.

pub use counters::{
    DurationHistogram, HistogramSnapshot, RequestDurations, RequestResult, RequestStats,
    RequestTotal, Striped, REQUEST_BOUNDS_NS,
};

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// Bucket bounds of `registration_apply_seconds`: from an unchanged re-registration (µs) to a
/// 50,000-topic table (hundreds of ms).
pub const REGISTRATION_BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

/// How a REGISTER_BROKER ended (`registrations_total{outcome}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistrationOutcome {
    /// The full algorithm ran on the tables.
    Applied,
    /// Applied as its difference from the broker's previous registration: only the topics whose
    /// entries changed were decoded and put (#25).
    Difference,
    /// An identical re-registration: only the broker's liveness was refreshed.
    Unchanged,
    /// The body's CRC32 did not match `bodyCrc32`; nothing applied.
    CrcMismatch,
    /// Refused: an undecodable body, missing header fields or a registration the tables refuse.
    Refused,
}

impl RegistrationOutcome {
    /// Every outcome, in counter order.
    pub const ALL: [RegistrationOutcome; 5] =
        [Self::Applied, Self::Difference, Self::Unchanged, Self::CrcMismatch, Self::Refused];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Applied => "applied",
            Self::Difference => "difference",
            Self::Unchanged => "unchanged",
            Self::CrcMismatch => "crc_mismatch",
            Self::Refused => "refused",
        }
    }
}

/// Why a broker left the live table (`brokers_removed_total{reason}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemovalReason {
    /// No heartbeat within its timeout (the liveness scan).
    HeartbeatTimeout,
    /// The connection it registered on closed.
    ConnectionClosed,
    /// UNREGISTER_BROKER.
    Unregistered,
}

impl RemovalReason {
    /// Every reason, in counter order.
    pub const ALL: [RemovalReason; 3] =
        [Self::HeartbeatTimeout, Self::ConnectionClosed, Self::Unregistered];

    /// The label value (also used by the events API).
    pub fn label(self) -> &'static str {
        match self {
            Self::HeartbeatTimeout => "heartbeat_timeout",
            Self::ConnectionClosed => "connection_closed",
            Self::Unregistered => "unregistered",
        }
    }
}

/// How a remoting connection was set up (the `transport` and `proxy` labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnKind {
    /// TLS (else plaintext).
    pub tls: bool,
    /// The connection began with a PROXY protocol preface.
    pub proxied: bool,
}

impl ConnKind {
    /// Every kind, in counter order.
    pub const ALL: [ConnKind; 4] = [
        ConnKind { tls: false, proxied: false },
        ConnKind { tls: false, proxied: true },
        ConnKind { tls: true, proxied: false },
        ConnKind { tls: true, proxied: true },
    ];

    fn index(self) -> usize {
        usize::from(self.tls) * 2 + usize::from(self.proxied)
    }
}

/// Every counter of the server. See the module documentation for how to add one.
#[derive(Debug)]
pub struct Metrics {
    enabled: bool,
    /// `requests_total{code,request,result}` and `request_duration_seconds{code,request}`.
    pub requests: RequestStats,
    /// `connections_accepted_total{transport,proxy}`: connections set up (after PROXY / TLS).
    connections_accepted: [AtomicU64; 4],
    /// `connections_open{transport,proxy}`: connections set up and not yet closed.
    connections_open: [AtomicI64; 4],
    /// `connections_refused_total{reason}`: connections closed during set-up (rare).
    connections_refused: Mutex<Vec<(&'static str, u64)>>,
    /// `received_bytes_total`: remoting bytes read (after TLS).
    pub received_bytes: Arc<ByteCount>,
    /// `sent_bytes_total`: remoting bytes written (before TLS).
    pub sent_bytes: Arc<ByteCount>,
    /// `registrations_total{outcome}`, by [`RegistrationOutcome`].
    registrations: [AtomicU64; RegistrationOutcome::ALL.len()],
    /// `registration_apply_seconds`: REGISTER_BROKER handling, decode and apply (excluding
    /// the wait for the registration lane, and a decode done ahead on its prepare thread).
    pub registration_apply: DurationHistogram,
    /// `brokers_removed_total{reason}`, by [`RemovalReason`].
    brokers_removed: [AtomicU64; 3],
    /// `route_cache_lookups_total{result="hit"}`: GET_ROUTEINFO_BY_TOPIC bodies served from
    /// the per-topic cache.
    route_cache_hit: Striped,
    /// `route_cache_lookups_total{result="miss"}`: bodies encoded for the request.
    route_cache_miss: Striped,
}

impl Metrics {
    /// Every counter at zero. `enabled` is `metricsEnable`.
    pub fn new(enabled: bool) -> Self {
        if enabled {
            counters::clock::start_calibration();
        }
        Self {
            enabled,
            requests: RequestStats::new(),
            connections_accepted: Default::default(),
            connections_open: Default::default(),
            connections_refused: Mutex::default(),
            received_bytes: Arc::default(),
            sent_bytes: Arc::default(),
            registrations: Default::default(),
            registration_apply: DurationHistogram::new(&REGISTRATION_BUCKETS),
            brokers_removed: Default::default(),
            route_cache_hit: Striped::default(),
            route_cache_miss: Striped::default(),
        }
    }

    /// `metricsEnable`: whether per-request metrics are recorded and `/metrics` is served.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts a connection set up.
    pub fn connection_opened(&self, kind: ConnKind) {
        self.connections_accepted[kind.index()].fetch_add(1, Ordering::Relaxed);
        self.connections_open[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a connection (set up as `kind`) closed.
    pub fn connection_closed(&self, kind: ConnKind) {
        self.connections_open[kind.index()].fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts a connection closed during set-up, by `reason` (`transport::TransportError::reason`).
    pub fn connection_refused(&self, reason: &'static str) {
        let mut refused = self.connections_refused.lock();
        match refused.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => refused.push((reason, 1)),
        }
    }

    /// Counts a REGISTER_BROKER by outcome.
    pub fn registration(&self, outcome: RegistrationOutcome) {
        self.registrations[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts brokers removed from the live table.
    pub fn brokers_removed(&self, reason: RemovalReason, n: u64) {
        if n > 0 {
            self.brokers_removed[reason as usize].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds a connection's pending batch (requests and route-cache look-ups) to the shared
    /// counters and empties it.
    #[inline]
    pub fn apply(&self, pending: &mut Pending) {
        self.requests.apply(&mut pending.requests);
        let [misses, hits] = std::mem::take(&mut pending.route_cache);
        if hits > 0 {
            self.route_cache_hit.inc_by(hits);
        }
        if misses > 0 {
            self.route_cache_miss.inc_by(misses);
        }
    }

    /// Counts a route body served from the cache (`hit`) or encoded for the request.
    #[inline]
    pub fn route_cache_lookup(&self, hit: bool) {
        if !self.enabled {
            return;
        }
        if hit {
            self.route_cache_hit.inc();
        } else {
            self.route_cache_miss.inc();
        }
    }

    /// Per kind of connection ever set up: (kind, set up since start, open now).
    pub fn connections(&self) -> Vec<(ConnKind, u64, i64)> {
        ConnKind::ALL
            .iter()
            .map(|&kind| {
                let i = kind.index();
                let accepted = self.connections_accepted[i].load(Ordering::Relaxed);
                (kind, accepted, self.connections_open[i].load(Ordering::Relaxed))
            })
            .filter(|&(_, accepted, _)| accepted > 0)
            .collect()
    }

    /// Connections refused during set-up, by every reason seen.
    pub fn connections_refused(&self) -> Vec<(&'static str, u64)> {
        self.connections_refused.lock().clone()
    }

    /// REGISTER_BROKER requests by every outcome seen.
    pub fn registrations(&self) -> Vec<(RegistrationOutcome, u64)> {
        let counts = &self.registrations;
        nonzero(RegistrationOutcome::ALL.map(|o| (o, counts[o as usize].load(Ordering::Relaxed))))
    }

    /// Brokers removed from the live table by every reason seen.
    pub fn brokers_removed_by_reason(&self) -> Vec<(RemovalReason, u64)> {
        let counts = &self.brokers_removed;
        nonzero(RemovalReason::ALL.map(|r| (r, counts[r as usize].load(Ordering::Relaxed))))
    }

    /// Route bodies served from the cache and encoded: (hits, misses).
    pub fn route_cache(&self) -> (u64, u64) {
        (self.route_cache_hit.get(), self.route_cache_miss.get())
    }
}

/// A connection's recordings not yet added to the shared counters: its run of requests
/// (`counters::PendingRequests`) and its route-cache look-ups; [`Metrics::apply`] adds them.
#[derive(Debug, Default)]
pub struct Pending {
    /// Requests recorded with `RequestStats::record_pending`.
    pub requests: counters::PendingRequests,
    /// Route bodies served from the cache / encoded, since the last apply.
    route_cache: [u64; 2],
}

impl Pending {
    /// Counts a route body served from the cache (`hit`) or encoded, when metrics are on.
    #[inline]
    pub fn route_cache_lookup(&mut self, enabled: bool, hit: bool) {
        if enabled {
            self.route_cache[usize::from(hit)] += 1;
        }
    }
}

/// Bytes through the remoting connections: a [`Striped`] counter that `transport::Counted` adds
/// every read or write to.
#[derive(Debug, Default)]
pub struct ByteCount(Striped);

impl ByteCount {
    /// The bytes counted so far.
    pub fn get(&self) -> u64 {
        self.0.get()
    }
}

impl transport::ByteCounter for ByteCount {
    #[inline]
    fn add(&self, n: u64) {
        self.0.inc_by(n);
    }
}

fn nonzero<T, const N: usize>(counts: [(T, u64); N]) -> Vec<(T, u64)> {
    counts.into_iter().filter(|(_, n)| *n > 0).collect()
}
