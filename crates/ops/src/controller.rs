//! What operators see of a controller node: its metrics (`rocketmq_controller_*`, read at
//! scrape time from the node's counters, `controller::metrics`, and its report,
//! `controller::status`), its own HTTP listener for `mqcontroller` (`/metrics`, `/healthz`,
//! `/readyz`), and, for a controller embedded in the nameserver, its metrics on the
//! nameserver's `/metrics` and `GET /api/v1/controller` for the dashboard.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use axum::extract::{Request, State as AxumState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use controller::metrics::Metrics;
use controller::status::{Role, Status};
use controller::Node;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tracing::info;

use crate::exposition::{self, counter, Format};
use crate::process::ProcessCollector;
use crate::{ApiError, Context};

/// The prefix of the controller's metrics.
pub const PREFIX: &str = "rocketmq_controller";

/// Labels of a broker group: its cluster and broker name.
type GroupLabels = [(&'static str, String); 2];

/// The controller embedded in this nameserver, once it has started (it starts in the
/// background and may never start: the nameserver never waits for it). Clones share it.
#[derive(Clone, Default)]
pub struct EmbeddedController(Arc<OnceLock<Arc<Node>>>);

impl EmbeddedController {
    /// Records the started node (once; later calls are ignored).
    pub fn set(&self, node: Arc<Node>) {
        let _ = self.0.set(node);
    }

    /// The node, if it has started.
    pub fn get(&self) -> Option<&Arc<Node>> {
        self.0.get()
    }
}

/// Registers every metric of `node`, read now, in `root` under [`PREFIX`].
pub(crate) fn register(root: &mut Registry, node: &Node) {
    let status = node.status();
    let r = root.sub_registry_with_prefix(PREFIX);
    register_status(r, &status);
    register_counters(r, node.metrics());
}

fn gauge(value: i64) -> Gauge {
    let gauge = Gauge::<i64>::default();
    gauge.set(value);
    gauge
}

fn index(value: u64) -> Gauge {
    gauge(i64::try_from(value).unwrap_or(i64::MAX))
}

fn register_status(r: &mut Registry, s: &Status) {
    exposition::register_build_info(r);
    r.register(
        "node",
        "This controller node: its group, id (controllerDLegerSelfId) and the leader it knows",
        Info::new([
            ("group", s.group.clone()),
            ("id", s.self_id.clone()),
            ("leader_id", s.leader.as_ref().map(|l| l.id.clone()).unwrap_or_default()),
        ]),
    );
    let roles = Family::<[(&'static str, String); 2], Gauge>::default();
    for role in Role::ALL {
        let labels = [("group", s.group.clone()), ("role", role.label().to_owned())];
        roles.get_or_create(&labels).set(i64::from(s.role == role));
    }
    r.register("role", "1 for the role this node plays now in its group (leader: serving as leader, confirmed by a quorum; follower; candidate: electing or not yet confirmed; shutdown)", roles);
    r.register(
        "ready",
        "1 when /readyz answers 200: the node knows a leader and its store is open",
        gauge(i64::from(s.ready)),
    );
    r.register("raft_term", "The Raft term this node is in", index(s.term));
    for (name, help, value) in [
        (
            "raft_last_log_index",
            "Index of the last entry in this node's Raft log",
            s.last_log_index,
        ),
        (
            "raft_commit_index",
            "Index of the last Raft entry known committed (saved by the store)",
            s.commit_index,
        ),
        (
            "raft_applied_index",
            "Index of the last Raft entry applied to this node's tables",
            s.applied_index,
        ),
    ] {
        if let Some(value) = value {
            r.register(name, help, index(value));
        }
    }
    r.register(
        "live_brokers",
        "Brokers heartbeating this node within their heartbeat timeout",
        index(s.live_brokers as u64),
    );
    r.register(
        "broker_groups",
        "Broker groups (broker names) in the replicated tables",
        index(s.groups.len() as u64),
    );
    let has_master = Family::<GroupLabels, Gauge>::default();
    let sync_size = Family::<GroupLabels, Gauge>::default();
    let epoch = Family::<GroupLabels, Gauge>::default();
    for g in &s.groups {
        let labels = [("cluster", g.cluster.clone()), ("broker_name", g.broker_name.clone())];
        has_master.get_or_create(&labels).set(i64::from(g.has_master()));
        sync_size.get_or_create(&labels).set(g.sync_state_set.len() as i64);
        epoch.get_or_create(&labels).set(i64::from(g.master_epoch));
    }
    r.register("broker_group_has_master", "1 when the broker group has a master that heartbeats this node, by cluster and broker name", has_master);
    r.register("sync_state_set_size", "Brokers in the group's sync-state set (in sync with its master), by cluster and broker name", sync_size);
    r.register(
        "master_epoch",
        "The group's master epoch (raised by every election), by cluster and broker name",
        epoch,
    );
    if let Some(bytes) = s.store_bytes {
        r.register(
            "store_size_bytes",
            "Size of the node's store (controller.redb: Raft log, vote, snapshots), bytes",
            index(bytes),
        );
    }
}

fn register_counters(r: &mut Registry, m: &Metrics) {
    exposition::register_requests(r, &m.requests, "controller");
    r.register(
        "heartbeats",
        "BROKER_HEARTBEATs recorded in this node's liveness table",
        counter(m.heartbeats()),
    );
    r.register(
        "leader_changes",
        "Times this node saw a new Raft leader (itself included)",
        counter(m.leader_changes()),
    );
    let elections = Family::<[(&'static str, &'static str); 2], Counter>::default();
    for (trigger, result, n) in m.elections() {
        elections
            .get_or_create(&[("trigger", trigger.label()), ("result", result.label())])
            .inc_by(n);
    }
    r.register("elections", "Master elections decided on this node (as leader), by trigger (master_lost: its connection closed, heartbeat_timeout, admin: CONTROLLER_ELECT_MASTER) and result (elected, master_still_alive, no_candidate, refused, failed)", elections);
}

/// A standalone controller as its HTTP listener sees it: the node, and its port's
/// access-control gate (`None`: access control off).
#[derive(Clone)]
struct Standalone {
    node: Arc<Node>,
    auth: Option<Arc<acl::Auth>>,
}

/// The exposition of a standalone controller: the process metrics, the node's, and with access
/// control on its port's `auth_accepted` / `auth_refused` (an embedded controller's are the
/// nameserver's: one gate).
fn encode(standalone: &Standalone, format: Format) -> Result<String, std::fmt::Error> {
    let mut root = Registry::default();
    root.register_collector(Box::new(ProcessCollector));
    register(&mut root, &standalone.node);
    if let Some(gate) = &standalone.auth {
        let r = root.sub_registry_with_prefix(PREFIX);
        crate::gauges::register_auth(r, &crate::gauges::auth_counts(gate));
    }
    exposition::encode_registry(&root, format)
}

/// Serves `mqcontroller`'s HTTP listener (`httpListenPort`) for `node`, whose port admits
/// requests through `auth`, until `shutdown` completes: `/metrics`, `/healthz`, `/readyz`.
pub async fn serve(
    listener: TcpListener,
    node: Arc<Node>,
    auth: Option<Arc<acl::Auth>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "HTTP listener serving controller metrics and probes");
    }
    let settings = crate::ListenerSettings::default;
    let counts = crate::HttpCounts::default();
    let router = router(Standalone { node, auth });
    crate::listener::serve_router(listener, router, settings, counts, shutdown).await;
}

fn router(standalone: Standalone) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(crate::healthz))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(standalone)
}

/// `GET /metrics` of a standalone controller (OpenMetrics when `Accept` asks for it).
async fn metrics(
    AxumState(standalone): AxumState<Standalone>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let format = Format::from_accept(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let text = encode(&standalone, format).map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot encode metrics: {e}"))
    })?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], text).into_response())
}

/// `GET /readyz`: 200 while the node knows a leader and its store is open; 503 while it
/// knows none (an election, no quorum) and once it is stopping.
async fn readyz(AxumState(standalone): AxumState<Standalone>) -> Response {
    let status = standalone.node.status();
    if status.ready {
        (StatusCode::OK, "ready\n").into_response()
    } else if status.role == Role::Shutdown {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "no controller leader known\n").into_response()
    }
}

async fn not_found(request: Request) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("no such path: {}", request.uri().path()))
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} is not allowed on {} (use GET)", request.method(), request.uri().path()),
    )
}

/// `GET /api/v1/controller`: the embedded controller as the dashboard shows it (role, term,
/// leader, indexes, every broker group with its master and sync-state set); 404 when this
/// nameserver embeds none, 503 while it has not started.
pub(crate) async fn api(AxumState(ctx): AxumState<Context>) -> Result<Json<Value>, ApiError> {
    let Some(node) = ctx.controller.get() else {
        return Err(if ctx.state.config.load().enable_controller_in_namesrv {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the embedded controller has not started (see the log)",
            )
        } else {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "no controller in this nameserver (enableControllerInNamesrv=false)",
            )
        });
    };
    let s = node.status();
    let groups: Vec<Value> = s
        .groups
        .iter()
        .map(|g| {
            json!({
                "cluster": g.cluster,
                "brokerName": g.broker_name,
                "masterBrokerId": g.master_broker_id,
                "masterAddress": g.master_address,
                "masterAlive": g.master_alive,
                "masterEpoch": g.master_epoch,
                "syncStateSet": g.sync_state_set,
                "brokers": g.brokers,
            })
        })
        .collect();
    Ok(Json(json!({
        "group": s.group,
        "id": s.self_id,
        "role": s.role.label(),
        "term": s.term,
        "leader": s.leader.map(|l| json!({"id": l.id, "address": l.addr})),
        "commitIndex": s.commit_index,
        "appliedIndex": s.applied_index,
        "liveBrokers": s.live_brokers,
        "ready": s.ready,
        "groups": groups,
    })))
}
