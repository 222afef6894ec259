//! The read-only JSON API under `/api/v1/`: overview, clusters → broker groups → brokers, topics
//! (paged, filtered), one topic's route (the GET_ROUTEINFO_BY_TOPIC body), KV namespaces and
//! entries, the effective configuration, request statistics, the embedded controller
//! (`controller.rs`), and the event ring (also as a Server-Sent Events stream).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State as AxumState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::Stream;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use events::Event;
use kv::ORDER_TOPIC_CONFIG;
use namesrv::route::{BrokerRow, RouteForm, TopicFilter};
use namesrv::state::State;

use crate::{ApiError, Context};

type Shared = Arc<State>;
type QueryResult = Result<Query<HashMap<String, String>>, QueryRejection>;
type PathResult = Result<Path<String>, PathRejection>;

fn path_param(path: PathResult) -> Result<String, ApiError> {
    path.map(|Path(p)| p).map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))
}

/// The most topics one page lists.
pub const MAX_PAGE: usize = 1000;
/// Topics per page when `limit` is not given.
pub const DEFAULT_PAGE: usize = 100;

/// The `/api/v1/` routes.
pub fn routes() -> Router<Context> {
    Router::new()
        .route("/api/v1/overview", get(overview))
        .route("/api/v1/clusters", get(clusters))
        .route("/api/v1/topics", get(topics))
        .route("/api/v1/topics/{topic}/route", get(topic_route))
        .route("/api/v1/kv", get(kv_namespaces))
        .route("/api/v1/kv/{namespace}", get(kv_namespace))
        .route("/api/v1/config", get(config))
        .route("/api/v1/stats", get(stats))
        .route("/api/v1/controller", get(crate::controller::api))
        .route("/api/v1/events", get(events))
        .route("/api/v1/events/stream", get(event_stream))
}

/// Query parameters, checked by name: an unknown one is a 400 (a typo never silently means
/// "no filter").
struct Params(HashMap<String, String>);

impl Params {
    fn new(query: QueryResult, allowed: &[&str]) -> Result<Self, ApiError> {
        let Query(map) =
            query.map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, e.body_text()))?;
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("unknown parameter {unknown:?} (allowed: {})", allowed.join(", ")),
            ));
        }
        Ok(Self(map))
    }

    fn text(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.is_empty()).cloned()
    }

    fn number(&self, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
        let Some(raw) = self.0.get(name) else {
            return Ok(default);
        };
        match raw.parse::<usize>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("parameter {name} must be a whole number from 0 to {max}, not {raw:?}"),
            )),
        }
    }
}

/// `GET /api/v1/overview`: what this server is and how much it holds.
async fn overview(AxumState(state): AxumState<Shared>) -> Json<Value> {
    let routes = state.routes.snapshot();
    let rows = routes.broker_rows();
    let (version, commit) = crate::exposition::build_info();
    Json(json!({
        "version": version,
        "gitCommit": commit,
        "uptimeSeconds": state.uptime().as_secs_f64(),
        "nowMs": state.now_ms(),
        "remotingAddress": state.remoting_addr().map(|a| a.to_string()),
        "ready": state.readiness().is_ready(),
        "metricsEnabled": state.sinks.metrics.enabled(),
        "clusters": rows.iter().map(|r| r.cluster.as_str()).collect::<std::collections::BTreeSet<_>>().len(),
        "brokerGroups": routes.group_count(),
        "brokers": rows.len(),
        "liveBrokers": routes.live_count(),
        "topics": routes.topic_count(),
        "connections": state.connection_count(),
    }))
}

/// A broker as the API shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BrokerJson {
    id: i64,
    address: String,
    /// The RocketMQ release it registered with (`5.3.3`), when known.
    version: Option<String>,
    version_ordinal: Option<i32>,
    ha_address: Option<String>,
    zone: Option<String>,
    data_version: Option<Value>,
    live: bool,
    seconds_since_heartbeat: Option<f64>,
    heartbeat_timeout_seconds: Option<f64>,
}

/// `GET /api/v1/clusters`: clusters → broker groups → brokers, with liveness.
async fn clusters(AxumState(state): AxumState<Shared>) -> Json<Value> {
    let now = state.now_ms();
    let mut clusters: BTreeMap<String, BTreeMap<String, (Value, Vec<BrokerJson>)>> =
        BTreeMap::new();
    for row in state.routes.snapshot().broker_rows() {
        let broker = broker_json(&state, &row, now);
        let group = clusters
            .entry(row.cluster.clone())
            .or_default()
            .entry(row.group.clone())
            .or_insert_with(|| {
                (
                    json!({"zone": row.zone, "enableActingMaster": row.enable_acting_master}),
                    Vec::new(),
                )
            });
        group.1.push(broker);
    }
    let clusters: Vec<Value> = clusters
        .into_iter()
        .map(|(name, groups)| {
            let groups: Vec<Value> = groups
                .into_iter()
                .map(|(group, (info, brokers))| {
                    json!({
                        "name": group,
                        "zone": info["zone"],
                        "enableActingMaster": info["enableActingMaster"],
                        "brokers": brokers,
                    })
                })
                .collect();
            json!({"name": name, "brokerGroups": groups})
        })
        .collect();
    Json(json!({"nowMs": now, "clusters": clusters}))
}

fn broker_json(state: &State, row: &BrokerRow, now_ms: u64) -> BrokerJson {
    let version = state.sinks.versions.get(&row.cluster, &row.addr);
    let live = row.live.as_ref();
    BrokerJson {
        id: row.id,
        address: row.addr.clone(),
        version: version.and_then(remoting::version::name),
        version_ordinal: version,
        ha_address: live.map(|l| l.ha_server_addr.clone()).filter(|a| !a.is_empty()),
        zone: row.zone.clone(),
        data_version: live.and_then(|l| serde_json::to_value(l.data_version).ok()),
        live: live.is_some(),
        seconds_since_heartbeat: live
            .map(|l| now_ms.saturating_sub(l.last_update_ms) as f64 / 1000.0),
        heartbeat_timeout_seconds: live.map(|l| l.timeout_ms as f64 / 1000.0),
    }
}

/// `GET /api/v1/topics?prefix=&cluster=&offset=&limit=`: a page of topics sorted by name.
async fn topics(
    AxumState(state): AxumState<Shared>,
    query: QueryResult,
) -> Result<Json<Value>, ApiError> {
    let params = Params::new(query, &["prefix", "cluster", "offset", "limit"])?;
    let filter = TopicFilter { prefix: params.text("prefix"), cluster: params.text("cluster") };
    let offset = params.number("offset", 0, usize::MAX)?;
    let limit = params.number("limit", DEFAULT_PAGE, MAX_PAGE)?;
    let page = state.routes.snapshot().topic_page(&filter, offset, limit);
    let topics: Vec<Value> = page
        .topics
        .into_iter()
        .map(|(name, queues)| json!({"name": name, "queueDatas": queues}))
        .collect();
    Ok(Json(json!({
        "total": page.total,
        "offset": offset,
        "limit": limit,
        "prefix": filter.prefix,
        "cluster": filter.cluster,
        "topics": topics,
    })))
}

/// `GET /api/v1/topics/{topic}/route`: the body GET_ROUTEINFO_BY_TOPIC answers a current
/// client (standard JSON, with `orderTopicConf` when `orderMessageEnable`).
async fn topic_route(
    AxumState(state): AxumState<Shared>,
    topic: PathResult,
) -> Result<Response, ApiError> {
    let topic = path_param(topic)?;
    let config = state.config.load();
    let body = if config.order_message_enable {
        state.routes.snapshot().pickup_route(&topic, config.support_acting_master).map(
            |mut route| {
                route.order_topic_conf = state.kv.get(ORDER_TOPIC_CONFIG, &topic);
                bytes::Bytes::from(remoting::body::to_standard_json(&route))
            },
        )
    } else {
        state.routes.snapshot().route_body(
            &topic,
            RouteForm::Standard,
            config.support_acting_master,
        )
    };
    match body {
        Some(body) => Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response()),
        None => Err(ApiError::new(StatusCode::NOT_FOUND, format!("no route for topic {topic:?}"))),
    }
}

/// `GET /api/v1/kv`: every namespace and its number of entries.
async fn kv_namespaces(AxumState(state): AxumState<Shared>) -> Json<Value> {
    let namespaces: Vec<Value> = state
        .kv
        .snapshot()
        .into_iter()
        .map(|(name, entries)| json!({"namespace": name, "entries": entries.len()}))
        .collect();
    Json(json!({"namespaces": namespaces}))
}

/// `GET /api/v1/kv/{namespace}`: the entries of one namespace.
async fn kv_namespace(
    AxumState(state): AxumState<Shared>,
    namespace: PathResult,
) -> Result<Json<Value>, ApiError> {
    let namespace = path_param(namespace)?;
    match state.kv.list(&namespace) {
        Some(entries) => Ok(Json(json!({"namespace": namespace, "entries": entries}))),
        None => Err(ApiError::new(StatusCode::NOT_FOUND, format!("no KV namespace {namespace:?}"))),
    }
}

/// `GET /api/v1/config`: every effective key and value, secrets shown as `******` by the
/// redaction of 319 and `-p` (`conf::table::shown`).
async fn config(AxumState(state): AxumState<Shared>) -> Json<Value> {
    Json(json!({"config": state.config.load().to_public_sorted_entries()}))
}

/// `GET /api/v1/stats`: request counts by code and result, latency histograms by code, and
/// the last minutes of request rate and latency (`history`, one point per step).
async fn stats(AxumState(ctx): AxumState<Context>) -> Result<Json<Value>, ApiError> {
    let state = &ctx.state;
    if !state.sinks.metrics.enabled() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "metrics are disabled (metricsEnable=false)",
        ));
    }
    let requests = &state.sinks.metrics.requests;
    let durations: Vec<RequestDurations> = requests
        .durations()
        .into_iter()
        .map(|d| RequestDurations {
            code: d.code,
            request: d.request,
            count: d.histogram.count,
            sum_seconds: d.histogram.sum_seconds,
            buckets: d
                .histogram
                .cumulative()
                .into_iter()
                .filter(|(le, _)| le.is_finite())
                .map(|(le, count)| Bucket { le, count })
                .collect(),
        })
        .collect();
    Ok(Json(json!({
        "nowMs": state.now_ms(),
        "requests": requests.totals(),
        "durations": durations,
        "history": {
            "stepSeconds": crate::history::STEP.as_secs(),
            "points": ctx.history.points(),
        },
    })))
}

/// The latency histogram of one request code (cumulative buckets, +Inf left out: it is
/// `count`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RequestDurations {
    code: &'static str,
    request: &'static str,
    count: u64,
    sum_seconds: f64,
    buckets: Vec<Bucket>,
}

/// Observations at most `le` seconds.
#[derive(Serialize)]
struct Bucket {
    le: f64,
    count: u64,
}

/// `GET /api/v1/events?after=&limit=`: events after id `after`, oldest first.
async fn events(
    AxumState(state): AxumState<Shared>,
    query: QueryResult,
) -> Result<Json<Value>, ApiError> {
    let params = Params::new(query, &["after", "limit"])?;
    let after = params.number("after", 0, usize::MAX)? as u64;
    let limit = params.number("limit", events::RING_CAPACITY, events::RING_CAPACITY)?;
    let events: Vec<Arc<Event>> = state.sinks.events.since(after, limit);
    let events: Vec<&Event> = events.iter().map(|e| &**e).collect();
    Ok(Json(json!({"events": events})))
}

/// `GET /api/v1/events/stream`: Server-Sent Events, one `event: <kind>` per event with the JSON
/// as data and its id as `id` (a reconnecting browser's `Last-Event-ID`, or `?after=`, replays
/// what it missed from the ring). Ends when the server stops.
async fn event_stream(
    AxumState(ctx): AxumState<Context>,
    headers: HeaderMap,
    query: QueryResult,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let state = Arc::clone(&ctx.state);
    let params = Params::new(query, &["after"])?;
    let after = match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        Some(id) => id.trim().parse::<u64>().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("Last-Event-ID must be a number, not {id:?}"),
            )
        })?,
        None => params.number("after", 0, usize::MAX)? as u64,
    };
    let slot = StreamSlot::take(&ctx)?;
    let (backlog, live) = state.sinks.events.subscribe(after);
    let stream = futures::stream::unfold(
        (VecDeque::from(backlog), live, state, slot),
        |(mut backlog, mut live, state, slot)| async move {
            if let Some(event) = backlog.pop_front() {
                return Some((Ok(sse_event(&event)), (backlog, live, state, slot)));
            }
            let next = tokio::select! {
                () = state.sinks.events.closed() => return None,
                next = live.recv() => next,
            };
            let item = match next {
                Ok(event) => sse_event(&event),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    SseEvent::default().event("lagged").data(missed.to_string())
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((Ok(item), (backlog, live, state, slot)))
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// One open event stream, counted against `httpMaxEventStreams` until dropped.
struct StreamSlot(Arc<AtomicUsize>);

impl StreamSlot {
    /// A slot, or 503 (counted) when `httpMaxEventStreams` streams are open.
    fn take(ctx: &Context) -> Result<Self, ApiError> {
        let max = usize::try_from(ctx.state.config.load().http_max_event_streams).unwrap_or(0);
        let open = &ctx.event_streams;
        let taken =
            open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1));
        if taken.is_err() {
            ctx.http_counts.refused(crate::Refused::MaxEventStreams);
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("too many event streams open ({max}, httpMaxEventStreams)"),
            ));
        }
        Ok(Self(Arc::clone(open)))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

fn sse_event(event: &Event) -> SseEvent {
    let kind = serde_json::to_value(event.kind).ok().and_then(|v| v.as_str().map(str::to_owned));
    SseEvent::default()
        .id(event.id.to_string())
        .event(kind.unwrap_or_else(|| "event".to_owned()))
        .data(serde_json::to_string(event).unwrap_or_default())
}
