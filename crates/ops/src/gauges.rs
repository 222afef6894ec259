//! The values read from the server state at scrape time (live brokers, topics, KV entries,
//! readiness, TLS reloads, the resource caps, the route snapshot, access control): computed per
//! scrape, never kept up to date on the request path.

use namesrv::state::State;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use transport::TlsContext;

use crate::exposition::ReasonLabel;

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
    /// authenticated, and refused by reason (the gate's counters, `acl::Counters`).
    pub auth: Option<(LabelCounts, LabelCounts)>,
}

/// The resource caps at scrape time (kept in `limits.rs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CapGauges {
    /// (kind, triggers since start) for every cap.
    pub triggered: Vec<(&'static str, u64)>,
    pub pending_frame_bytes: i64,
    /// Connections waiting for room in the partial-frame budget.
    pub frames_waiting_for_room: i64,
    /// Connections whose next large registration waits to begin at the lane gate.
    pub frames_waiting_for_lane: i64,
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
    /// Reads the current values from `state` (one route snapshot, one KV snapshot) and `tls`.
    pub fn read(state: &State, tls: &TlsContext) -> Self {
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
                let counts = tls.reloads();
                (counts.succeeded.load(Relaxed), counts.failed.load(Relaxed))
            },
            unregister_queue: i64::try_from(state.unregister_queue_len()).unwrap_or(i64::MAX),
            caps: CapGauges {
                triggered: namesrv::limits::Cap::ALL
                    .iter()
                    .map(|cap| (cap.as_str(), state.limits.trigger_count(*cap)))
                    .collect(),
                pending_frame_bytes: gauge_value(state.limits.pending_frame_bytes.used()),
                frames_waiting_for_room: gauge_value(
                    state.limits.pending_frame_bytes.waiters() as u64
                ),
                frames_waiting_for_lane: gauge_value(state.limits.lane_gate.waiting() as u64),
                pending_response_bytes: gauge_value(state.limits.pending_response_bytes.used()),
            },
            route_snapshot: state.work.route_snapshot.as_ref().map(|file| {
                let stats = file.stats();
                let now_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                let taken = stats.taken_at_ms();
                SnapshotGauges {
                    writes_ok: stats.writes_ok(),
                    writes_failed: stats.writes_failed(),
                    loaded: file.restored().map(namesrv::snapshot::Restored::as_str),
                    age_seconds: (taken > 0)
                        .then(|| gauge_value(now_ms.saturating_sub(taken) / 1000)),
                    size_bytes: gauge_value(stats.size_bytes()),
                }
            }),
            auth: state.access.auth.as_deref().map(auth_counts),
        }
    }

    /// Registers every value as a metric of `r` (the `rocketmq_namesrv` registry).
    pub fn register(&self, r: &mut Registry) {
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
        r.register("resource_caps_triggered", "Resource caps reached (a connection closed or made to wait, a request refused), by kind: connections, frame_timeout, frame_length, pending_frame_bytes, connection_response_bytes, pending_response_bytes, write_timeout, inflated_body, topics_per_broker, kv_value_bytes", caps);
        r.register(
            "pending_frame_bytes",
            "Bytes held for frames being received or answered, all connections (serverMaxPendingFrameBytes)",
            plain(self.caps.pending_frame_bytes),
        );
        r.register(
            "frames_waiting_for_room",
            "Connections that read nothing more until the partial-frame budget has room (serverMaxPendingFrameBytes)",
            plain(self.caps.frames_waiting_for_room),
        );
        r.register(
            "frames_waiting_for_lane",
            "Connections whose next large frame waits to begin while the registration lane has 8 MiB of registrations queued (their last registration went to it)",
            plain(self.caps.frames_waiting_for_lane),
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
        if let Some(counts) = &self.auth {
            register_auth(r, counts);
        }
    }
}

/// An access-control gate's counters, read now: (accepted by how, refused by reason).
pub(crate) fn auth_counts(gate: &acl::Auth) -> (LabelCounts, LabelCounts) {
    use acl::{Accepted, Reason};
    let c = &gate.counters;
    (
        Accepted::ALL.iter().map(|a| (a.label(), c.accepted_count(*a))).collect(),
        Reason::ALL.iter().map(|r| (r.label(), c.refused_count(*r))).collect(),
    )
}

/// Registers `auth_accepted{how}` and `auth_refused{reason}` in `r` (the nameserver's registry,
/// or a standalone controller's).
pub(crate) fn register_auth(r: &mut Registry, (accepted, refused): &(LabelCounts, LabelCounts)) {
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
        "Requests access control refused with NO_PERMISSION, by reason (no_signature, unknown_access_key, bad_signature, role_denied, address_denied, rate_limited, not_owner, not_peer)",
        family("reason", refused),
    );
}

/// A count or size as a gauge value.
fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
