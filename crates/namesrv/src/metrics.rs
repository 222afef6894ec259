//! The server's Prometheus metrics: one [`Metrics`] (reachable as `state.metrics`) holding every
//! metric, registered once, exposed by `GET /metrics` (see `http.rs`) in the Prometheus text
//! format or OpenMetrics (by `Accept` header), with the `prometheus-client` crate.
//!
//! Names are prefixed `rocketmq_namesrv_` (the registry adds it; counters get `_total` from the
//! library); the standard `process_*` metrics are not (see `process.rs`). Values read from the
//! server state at scrape time (live brokers, topics, KV entries, readiness, TLS reloads) are
//! computed per scrape from [`StateGauges`], never kept up to date on the request path.
//!
//! # Adding a metric
//! 1. A field on [`Metrics`] with a `///` line naming the exposed metric, e.g.
//!    `pub foo_rejections: Family<ReasonLabel, Counter>` (a plain `Counter` when unlabelled;
//!    `Counter<u64, Striped>` when it is bumped on every request by several threads at once;
//!    [`DurationHistogram`] for durations).
//! 2. One line in [`Metrics::new`]: `r.register("foo_rejections", "help text", m.foo_rejections.clone());`
//!    (name without prefix and without `_total`).
//! 3. Record where it happens: `state.metrics.foo_rejections.get_or_create(&[("reason", "x")]).inc();`
//!    or a small helper method here when the label values are a closed set.
//!
//! Recording is cheap (a relaxed atomic; requests: see `requests.rs`) and needs no check of
//! `metricsEnable`: when it is `false` the connection path skips the per-request recording (its
//! clock reads included) and `/metrics` answers 404, but counting elsewhere stays harmless.

pub mod clock;
mod process;
mod requests;
mod striped;

pub use process::{ProcessCollector, ProcessStats};
pub use requests::{
    Bucket, PendingRequests, RequestDurations, RequestResult, RequestSnapshot, RequestStats,
    RequestTotal, REQUEST_BOUNDS_NS,
};
pub use striped::{DurationHistogram, Striped};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use crate::state::State;

/// The prefix of every metric of ours.
pub const PREFIX: &str = "rocketmq_namesrv";

/// A one-label set with a fixed key and a closed set of values.
pub type ReasonLabel = [(&'static str, &'static str); 1];

/// Labels of the connection metrics: `transport` (`plain` or `tls`) and `proxy` (`true` when the
/// connection began with a PROXY protocol preface).
pub type ConnLabels = [(&'static str, &'static str); 2];

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
    /// An identical re-registration: only the broker's liveness was refreshed.
    Unchanged,
    /// The body's CRC32 did not match `bodyCrc32`; nothing applied.
    CrcMismatch,
    /// Refused: an undecodable body, missing header fields or a registration the tables refuse.
    Refused,
}

impl RegistrationOutcome {
    fn label(self) -> &'static str {
        match self {
            Self::Applied => "applied",
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
    /// The label value (also used by the events API).
    pub fn label(self) -> &'static str {
        match self {
            Self::HeartbeatTimeout => "heartbeat_timeout",
            Self::ConnectionClosed => "connection_closed",
            Self::Unregistered => "unregistered",
        }
    }
}

/// Every metric of the server. See the module documentation for how to add one.
#[derive(Debug)]
pub struct Metrics {
    enabled: bool,
    registry: Registry,
    /// `requests_total{code,request,result}` and `request_duration_seconds{code,request}`.
    pub requests: RequestStats,
    /// `connections_accepted_total{transport,proxy}`: connections set up (after PROXY / TLS).
    pub connections_accepted: Family<ConnLabels, Counter>,
    /// `connections_open{transport,proxy}`: connections set up and not yet closed.
    pub connections_open: Family<ConnLabels, Gauge>,
    /// `connections_refused_total{reason}`: connections closed during set-up.
    pub connections_refused: Family<ReasonLabel, Counter>,
    /// `received_bytes_total`: remoting bytes read (after TLS).
    pub received_bytes: ByteCount,
    /// `sent_bytes_total`: remoting bytes written (before TLS).
    pub sent_bytes: ByteCount,
    /// `registrations_total{outcome}`.
    pub registrations: Family<ReasonLabel, Counter>,
    /// `registration_apply_seconds`: REGISTER_BROKER handling, decode and apply (excluding
    /// the wait for the registration lane).
    pub registration_apply: DurationHistogram,
    /// `brokers_removed_total{reason}`: live brokers removed, by why.
    pub brokers_removed: Family<ReasonLabel, Counter>,
    /// `route_cache_lookups_total{result="hit|miss"}`: GET_ROUTEINFO_BY_TOPIC bodies served from
    /// the per-topic cache or encoded for it.
    pub route_cache: Family<ReasonLabel, Counter<u64, Striped>>,
    route_cache_hit: Counter<u64, Striped>,
    route_cache_miss: Counter<u64, Striped>,
    /// `http_requests_total{handler,status}`: requests to this HTTP listener.
    pub http_requests: Family<[(&'static str, String); 2], Counter>,
}

/// A striped byte counter the connection streams add to (`transport::Counted`).
#[derive(Debug, Clone, Default)]
pub struct ByteCount(Counter<u64, Striped>);

impl transport::ByteCounter for ByteCount {
    #[inline]
    fn add(&self, n: u64) {
        self.0.inc_by(n);
    }
}

/// This build's version and commit (`build_info`).
pub fn build_info() -> (&'static str, &'static str) {
    (env!("CARGO_PKG_VERSION"), option_env!("NAMESRV_GIT_COMMIT").unwrap_or("unknown"))
}

impl Metrics {
    /// Every metric at zero, registered. `enabled` is `metricsEnable`.
    pub fn new(enabled: bool) -> Self {
        if enabled {
            clock::start_calibration();
        }
        let mut root = Registry::default();
        root.register_collector(Box::new(ProcessCollector));
        let r = root.sub_registry_with_prefix(PREFIX);
        let route_cache = Family::<ReasonLabel, Counter<u64, Striped>>::default();
        let m = Self {
            enabled,
            requests: RequestStats::new(r),
            connections_accepted: Family::default(),
            connections_open: Family::default(),
            connections_refused: Family::default(),
            received_bytes: ByteCount::default(),
            sent_bytes: ByteCount::default(),
            registrations: Family::default(),
            registration_apply: DurationHistogram::new(&REGISTRATION_BUCKETS),
            brokers_removed: Family::default(),
            route_cache_hit: route_cache.get_or_create_owned(&[("result", "hit")]),
            route_cache_miss: route_cache.get_or_create_owned(&[("result", "miss")]),
            route_cache,
            http_requests: Family::default(),
            registry: Registry::default(),
        };
        let (version, commit) = build_info();
        r.register(
            "build",
            "This build: version and git commit",
            Info::new([("version", version), ("git_commit", commit)]),
        );
        r.register(
            "connections_accepted",
            "Remoting connections set up, by transport and PROXY preface",
            m.connections_accepted.clone(),
        );
        r.register(
            "connections_open",
            "Remoting connections open, by transport and PROXY preface",
            m.connections_open.clone(),
        );
        r.register(
            "connections_refused",
            "Remoting connections closed during set-up (PROXY preface, TLS), by reason",
            m.connections_refused.clone(),
        );
        r.register(
            "received_bytes",
            "Remoting bytes received (after TLS decryption)",
            m.received_bytes.0.clone(),
        );
        r.register(
            "sent_bytes",
            "Remoting bytes sent (before TLS encryption)",
            m.sent_bytes.0.clone(),
        );
        r.register("registrations", "REGISTER_BROKER requests by outcome (applied, unchanged: liveness refreshed only, crc_mismatch, refused)", m.registrations.clone());
        r.register(
            "registration_apply_seconds",
            "REGISTER_BROKER handling time: body check, decode and apply",
            m.registration_apply.clone(),
        );
        r.register("brokers_removed", "Brokers removed from the live table, by reason (heartbeat_timeout, connection_closed, unregistered)", m.brokers_removed.clone());
        r.register(
            "route_cache_lookups",
            "GET_ROUTEINFO_BY_TOPIC bodies served from the per-topic cache (hit) or encoded (miss)",
            m.route_cache.clone(),
        );
        r.register(
            "http_requests",
            "Requests to the HTTP listener, by handler and status",
            m.http_requests.clone(),
        );
        Self { registry: root, ..m }
    }

    /// `metricsEnable`: whether per-request metrics are recorded and `/metrics` is served.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Counts a connection set up: `transport` is `plain` or `tls`.
    pub fn connection_opened(&self, tls: bool, proxied: bool) -> ConnLabels {
        let labels = conn_labels(tls, proxied);
        self.connections_accepted.get_or_create(&labels).inc();
        self.connections_open.get_or_create(&labels).inc();
        labels
    }

    /// Counts a connection (set up with `labels`) closed.
    pub fn connection_closed(&self, labels: &ConnLabels) {
        self.connections_open.get_or_create(labels).dec();
    }

    /// Counts a REGISTER_BROKER by outcome.
    pub fn registration(&self, outcome: RegistrationOutcome) {
        self.registrations.get_or_create(&[("outcome", outcome.label())]).inc();
    }

    /// Counts brokers removed from the live table.
    pub fn brokers_removed(&self, reason: RemovalReason, n: u64) {
        if n > 0 {
            self.brokers_removed.get_or_create(&[("reason", reason.label())]).inc_by(n);
        }
    }

    /// Adds a connection's pending batch (requests and route-cache look-ups) to the shared
    /// counters and empties it.
    #[inline]
    pub fn apply(&self, pending: &mut PendingRequests) {
        self.requests.apply(pending);
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

    /// The exposition text: every metric, then the `gauges` read from the state now.
    pub fn encode(&self, gauges: &StateGauges, format: Format) -> Result<String, std::fmt::Error> {
        let mut scrape = Registry::default();
        gauges.register(scrape.sub_registry_with_prefix(PREFIX));
        let mut out = String::with_capacity(16 * 1024);
        match format {
            Format::OpenMetrics => {
                prometheus_client::encoding::text::encode_registry(&mut out, &self.registry)?;
                prometheus_client::encoding::text::encode_registry(&mut out, &scrape)?;
                prometheus_client::encoding::text::encode_eof(&mut out)?;
            }
            Format::Prometheus => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?;
                prometheus_client::encoding::prometheus_text::encode(&mut out, &scrape)?;
            }
        }
        Ok(out)
    }
}

fn conn_labels(tls: bool, proxied: bool) -> ConnLabels {
    [
        ("transport", if tls { "tls" } else { "plain" }),
        ("proxy", if proxied { "true" } else { "false" }),
    ]
}

/// The exposition format of a scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (`application/openmetrics-text; version=1.0.0`).
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain; version=0.0.4`).
    Prometheus,
}

impl Format {
    /// OpenMetrics when the `Accept` header asks for it, else the Prometheus text format.
    pub fn from_accept(accept: Option<&str>) -> Self {
        match accept {
            Some(a) if a.contains("application/openmetrics-text") => Self::OpenMetrics,
            _ => Self::Prometheus,
        }
    }

    /// The `Content-Type` of this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Self::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// Counts by a label value.
pub type LabelCounts = Vec<(&'static str, u64)>;

/// Values read from the server state at scrape time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateGauges {
    /// Live brokers (entries of the live table) per cluster.
    pub brokers_by_cluster: Vec<(String, i64)>,
    /// Broker groups.
    pub broker_groups: i64,
    /// Topics with at least one queue.
    pub topics: i64,
    /// KV entries per namespace.
    pub kv_entries: Vec<(String, i64)>,
    /// `/readyz` would answer 200.
    pub ready: bool,
    /// TLS certificate reloads that succeeded and failed.
    pub tls_reloads: (u64, u64),
    /// Unregistrations waiting in the batch queue.
    pub unregister_queue: i64,
    /// Resource caps triggered since start, by kind (`limits::Cap`), and the bytes all
    /// connections hold now for partial frames and for answers waiting for their readers.
    pub caps: CapGauges,
    /// The route snapshot's counters; `None` when `routeSnapshotEnable` is off.
    pub route_snapshot: Option<SnapshotGauges>,
    /// Access control (when `authenticationEnabled`): requests accepted by how they were
    /// authenticated, and refused by reason (the gate's counters, `auth::Counters`).
    pub auth: Option<(LabelCounts, LabelCounts)>,
}

/// The resource caps at scrape time (kept in `limits.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CapGauges {
    /// (kind, triggers since start) for every cap.
    pub triggered: Vec<(&'static str, u64)>,
    pub pending_frame_bytes: i64,
    pub pending_response_bytes: i64,
}

/// The route snapshot at scrape time (kept in `snapshot.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotGauges {
    pub writes_ok: u64,
    pub writes_failed: u64,
    /// The start-up load's outcome label (`loaded`, `loaded_backup`, `missing`, `unreadable`).
    pub loaded: Option<&'static str>,
    /// Age in seconds of the snapshot on disk (by its own time stamp); `None` before any.
    pub age_seconds: Option<i64>,
    pub size_bytes: i64,
}

impl StateGauges {
    /// Reads the current values from `state` (one route snapshot, one KV snapshot).
    pub fn read(state: &State) -> Self {
        let routes = state.routes.snapshot();
        Self {
            brokers_by_cluster: routes
                .live_by_cluster()
                .into_iter()
                .map(|(c, n)| (c, i64::try_from(n).unwrap_or(i64::MAX)))
                .collect(),
            broker_groups: i64::try_from(routes.group_count()).unwrap_or(i64::MAX),
            topics: i64::try_from(routes.topic_count()).unwrap_or(i64::MAX),
            kv_entries: state
                .kv
                .snapshot()
                .into_iter()
                .map(|(ns, entries)| (ns, i64::try_from(entries.len()).unwrap_or(i64::MAX)))
                .collect(),
            ready: state.readiness().is_ready(),
            tls_reloads: {
                use std::sync::atomic::Ordering::Relaxed;
                let counts = state.tls.reloads();
                (counts.succeeded.load(Relaxed), counts.failed.load(Relaxed))
            },
            unregister_queue: i64::try_from(state.unregister_queue_len()).unwrap_or(i64::MAX),
            caps: CapGauges {
                triggered: crate::limits::Cap::ALL
                    .iter()
                    .map(|cap| (cap.as_str(), state.limits.trigger_count(*cap)))
                    .collect(),
                pending_frame_bytes: gauge_value(state.limits.pending_frame_bytes.used()),
                pending_response_bytes: gauge_value(state.limits.pending_response_bytes.used()),
            },
            route_snapshot: state.route_snapshot.as_ref().map(|file| {
                let stats = file.stats();
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                let taken = stats.taken_at_ms();
                SnapshotGauges {
                    writes_ok: stats.writes_ok(),
                    writes_failed: stats.writes_failed(),
                    loaded: file.restored().map(crate::snapshot::Restored::as_str),
                    age_seconds: (taken > 0)
                        .then(|| gauge_value(now_ms.saturating_sub(taken) / 1000)),
                    size_bytes: gauge_value(stats.size_bytes()),
                }
            }),
            auth: state.auth.as_deref().map(|gate| {
                use acl::{Accepted, Reason};
                let c = &gate.counters;
                (
                    Accepted::ALL.iter().map(|a| (a.label(), c.accepted_count(*a))).collect(),
                    Reason::ALL.iter().map(|r| (r.label(), c.refused_count(*r))).collect(),
                )
            }),
        }
    }

    fn register(&self, r: &mut Registry) {
        let brokers = Family::<[(&'static str, String); 1], Gauge>::default();
        for (cluster, n) in &self.brokers_by_cluster {
            brokers.get_or_create(&[("cluster", cluster.clone())]).set(*n);
        }
        r.register("brokers", "Live brokers (registered, not expired) by cluster", brokers);
        let plain = |value: i64| {
            let gauge = Gauge::<i64>::default();
            gauge.set(value);
            gauge
        };
        r.register(
            "broker_groups",
            "Broker groups (broker names) in the route table",
            plain(self.broker_groups),
        );
        r.register("topics", "Topics with at least one queue", plain(self.topics));
        let kv = Family::<[(&'static str, String); 1], Gauge>::default();
        for (namespace, n) in &self.kv_entries {
            kv.get_or_create(&[("namespace", namespace.clone())]).set(*n);
        }
        r.register("kv_entries", "KV config entries by namespace", kv);
        r.register(
            "ready",
            "1 when ready to serve (/readyz answers 200), 0 while starting or draining",
            plain(i64::from(self.ready)),
        );
        r.register(
            "unregister_queue_length",
            "Unregistrations waiting for the batch task",
            plain(self.unregister_queue),
        );
        let reloads = Family::<ReasonLabel, Counter>::default();
        reloads.get_or_create(&[("result", "success")]).inc_by(self.tls_reloads.0);
        reloads.get_or_create(&[("result", "failure")]).inc_by(self.tls_reloads.1);
        r.register(
            "tls_reloads",
            "TLS certificate reloads after a file change, by result",
            reloads,
        );
        let caps = Family::<ReasonLabel, Counter>::default();
        for (kind, n) in &self.caps.triggered {
            caps.get_or_create(&[("kind", kind)]).inc_by(*n);
        }
        r.register("resource_caps_triggered", "Resource caps reached (a connection closed, a request refused), by kind: connections, frame_timeout, frame_length, pending_frame_bytes, connection_response_bytes, pending_response_bytes, write_timeout, inflated_body, topics_per_broker, kv_value_bytes", caps);
        r.register(
            "pending_frame_bytes",
            "Bytes held for frames not yet complete, all connections (serverMaxPendingFrameBytes)",
            plain(self.caps.pending_frame_bytes),
        );
        r.register(
            "pending_response_bytes",
            "Bytes of answers waiting for their readers, all connections (serverMaxPendingResponseBytes)",
            plain(self.caps.pending_response_bytes),
        );
        if let Some(snapshot) = &self.route_snapshot {
            let writes = Family::<ReasonLabel, Counter>::default();
            writes.get_or_create(&[("result", "ok")]).inc_by(snapshot.writes_ok);
            writes.get_or_create(&[("result", "failed")]).inc_by(snapshot.writes_failed);
            r.register("route_snapshot_writes", "Route snapshot writes, by result", writes);
            let loads = Family::<ReasonLabel, Counter>::default();
            for outcome in ["loaded", "loaded_backup", "missing", "unreadable"] {
                let n = u64::from(snapshot.loaded == Some(outcome));
                loads.get_or_create(&[("result", outcome)]).inc_by(n);
            }
            r.register("route_snapshot_loads", "Route snapshot loads at start-up, by result (loaded, loaded_backup: the snapshot was damaged, missing, unreadable: snapshot and .bak damaged)", loads);
            if let Some(age) = snapshot.age_seconds {
                r.register(
                    "route_snapshot_age_seconds",
                    "Age of the route snapshot on disk (written or restored), seconds",
                    plain(age),
                );
            }
            r.register(
                "route_snapshot_size_bytes",
                "Size of the route snapshot on disk, bytes",
                plain(snapshot.size_bytes),
            );
        }
        if let Some((accepted, refused)) = &self.auth {
            let family = |key: &'static str, counts: &[(&'static str, u64)]| {
                let family = Family::<ReasonLabel, Counter>::default();
                for (label, n) in counts {
                    family.get_or_create(&[(key, *label)]).inc_by(*n);
                }
                family
            };
            r.register(
                "auth_accepted",
                "Requests access control checked and accepted, by how (signature, certificate, whitelisted_address)",
                family("how", accepted),
            );
            r.register(
                "auth_refused",
                "Requests access control refused with NO_PERMISSION, by reason (no_signature, unknown_access_key, bad_signature, role_denied, address_denied, rate_limited)",
                family("reason", refused),
            );
        }
    }
}

/// A count or size as a gauge value.
fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
