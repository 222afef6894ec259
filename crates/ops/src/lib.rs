//! What operators look at: the HTTP listener (axum, on the server's own tokio runtime) with
//! Prometheus metrics at `/metrics` (`exposition.rs`: the core's counters and the values read
//! from the state at scrape time, `gauges.rs`, `process.rs`), liveness at `/healthz`,
//! readiness at `/readyz`, the JSON API and its event stream under `/api/v1/` (`api.rs`), the
//! address server at `/rocketmq/<subgroup>` (`nsaddr.rs`), the dashboard at `/`
//! (`dashboard.rs`, `web/`); and a controller node's metrics and probes, on `mqcontroller`'s own
//! listener or, embedded, on the nameserver's (`controller.rs`). Every error is JSON
//! (`{"status":404,"error":"Not Found","message":"…"}`), never a panic.
//!
//! Architecture invariants: this crate depends on the core (`namesrv`), never the reverse;
//! HTTP handlers only read (`State` snapshots, the metrics, the event ring): nothing here
//! changes the route tables or the KV store.

mod access;
mod api;
mod controller;
mod dashboard;
mod exposition;
mod gauges;
mod history;
mod listener;
mod nsaddr;
mod process;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRef, MatchedPath, Request, State as AxumState};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use tokio::net::TcpListener;
use tracing::info;

use namesrv::state::{Readiness, State};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use transport::TlsContext;

pub use crate::access::{host_allowed, plain_credentials_refused, REALM};
pub use crate::controller::{serve as serve_controller, EmbeddedController};
use crate::exposition::Format;
pub use crate::listener::{HttpCounts, ListenerSettings, Refused, HTTP_DRAIN_LIMIT};
pub use crate::process::ProcessStats;

/// Label set of `http_requests_total`: the route pattern and the status.
pub(crate) type HttpLabels = [(&'static str, String); 2];

/// What the HTTP handlers read: the server state, the TLS context (its reload counts) and
/// this listener's own request counter. Clones share everything.
#[derive(Clone)]
pub struct Context {
    /// The nameserver's state.
    pub state: Arc<State>,
    /// The remoting listener's TLS context.
    pub tls: Arc<TlsContext>,
    /// `http_requests_total{handler,status}`: requests to this HTTP listener.
    pub(crate) http_requests: Family<HttpLabels, Counter>,
    /// The embedded controller (`enableControllerInNamesrv`), once started.
    pub(crate) controller: EmbeddedController,
    /// The last minutes of request rate and latency (the dashboard's charts).
    pub(crate) history: history::History,
    /// This listener's refusals and open connections.
    pub(crate) http_counts: HttpCounts,
    /// Event streams open now (`httpMaxEventStreams`).
    pub(crate) event_streams: Arc<std::sync::atomic::AtomicUsize>,
}

impl Context {
    /// The surface over `state`, whose connections negotiate TLS with `tls`.
    pub fn new(state: Arc<State>, tls: Arc<TlsContext>) -> Self {
        Self {
            state,
            tls,
            http_requests: Family::default(),
            controller: EmbeddedController::default(),
            history: history::History::default(),
            http_counts: HttpCounts::default(),
            event_streams: Arc::default(),
        }
    }

    /// The same surface, showing the embedded controller's metrics and state once it has
    /// started.
    pub fn with_controller(mut self, controller: EmbeddedController) -> Self {
        self.controller = controller;
        self
    }
}

impl FromRef<Context> for Arc<State> {
    fn from_ref(ctx: &Context) -> Self {
        Arc::clone(&ctx.state)
    }
}

type Shared = Context;

/// Serves HTTP on `listener` until `shutdown` completes (the server calls it after the
/// remoting drain, so `/healthz` answers until the end), then gives open requests
/// [`HTTP_DRAIN_LIMIT`] to finish. The dashboard's history is sampled meanwhile (and no longer).
/// Each connection is served under the `http*` keys current when it is accepted
/// (`httpMaxConnections`, `httpHeaderReadTimeoutSeconds`, and TLS when `httpTlsEnable`).
pub async fn serve(
    listener: TcpListener,
    ctx: Context,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let tls = ctx.state.config.load().http_tls_enable.then(|| Arc::clone(&ctx.tls));
    if let Ok(addr) = listener.local_addr() {
        let scheme = if tls.is_some() { "https" } else { "http" };
        info!(%addr, scheme, "HTTP listener serving metrics, probes, API and dashboard");
    }
    let state = Arc::clone(&ctx.state);
    let settings = move || {
        let config = state.config.load();
        ListenerSettings {
            max_connections: usize::try_from(config.http_max_connections).unwrap_or(1).max(1),
            header_timeout: Duration::from_secs(
                u64::try_from(config.http_header_read_timeout_seconds).unwrap_or(10).max(1),
            ),
            tls: tls.clone(),
        }
    };
    let counts = ctx.http_counts.clone();
    let sampler = history::sample(Arc::clone(&ctx.state), ctx.history.clone());
    tokio::select! {
        () = listener::serve_router(listener, router(ctx), settings, counts, shutdown) => {}
        () = sampler => {}
    }
}

/// Every route of the HTTP listener.
pub(crate) fn router(state: Context) -> Router {
    Router::new()
        .route("/", get(dashboard::index))
        .route("/assets/app.js", get(dashboard::script))
        .route("/assets/style.css", get(dashboard::style))
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/rocketmq/{subgroup}", get(nsaddr::nsaddr))
        .merge(api::routes())
        .route_layer(middleware::from_fn_with_state(state.clone(), access::guard))
        .route_layer(middleware::from_fn_with_state(state.clone(), count_request))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Both ends of an HTTP connection (the address server answers with the local one) and
/// whether it is TLS. The client is the TCP peer: no header (`X-Forwarded-For`) changes it.
#[derive(Debug, Clone, Copy)]
pub struct HttpPeer {
    /// The address the client connected to.
    pub local: Option<SocketAddr>,
    /// The client.
    pub remote: SocketAddr,
    /// Whether the connection is TLS (`httpTlsEnable`).
    pub tls: bool,
}

/// A JSON error answer.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    status: u16,
    error: &'a str,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            status: self.status.as_u16(),
            error: self.status.canonical_reason().unwrap_or("Error"),
            message: &self.message,
        };
        (self.status, Json(body)).into_response()
    }
}

async fn not_found(AxumState(state): AxumState<Shared>, request: Request) -> ApiError {
    count(&state, "unmatched".to_owned(), StatusCode::NOT_FOUND);
    ApiError::new(StatusCode::NOT_FOUND, format!("no such path: {}", request.uri().path()))
}

async fn method_not_allowed(request: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!(
            "{} is not allowed on {} (the API is read-only: use GET)",
            request.method(),
            request.uri().path()
        ),
    )
}

/// Counts every request to a route by route pattern and status (unknown paths in [`not_found`]).
async fn count_request(
    AxumState(state): AxumState<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let handler = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let response = next.run(request).await;
    count(&state, handler, response.status());
    response
}

fn count(ctx: &Context, handler: String, status: StatusCode) {
    ctx.http_requests
        .get_or_create(&[("handler", handler), ("status", status.as_u16().to_string())])
        .inc();
}

/// `GET /metrics`: every metric, in OpenMetrics when the `Accept` header asks for it, else in
/// the Prometheus text format; 404 when `metricsEnable` is false.
async fn metrics(
    AxumState(ctx): AxumState<Shared>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !ctx.state.sinks.metrics.enabled() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "metrics are disabled (metricsEnable=false)",
        ));
    }
    let format = Format::from_accept(headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()));
    let text = exposition::encode(&ctx, format).map_err(|e| {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot encode metrics: {e}"))
    })?;
    Ok(([(header::CONTENT_TYPE, format.content_type())], text).into_response())
}

/// `GET /healthz`: liveness. Answered by the runtime that serves the remoting port, so a 200
/// means the process and its runtime are alive (until the server exits).
pub(crate) async fn healthz() -> &'static str {
    "ok\n"
}

/// `GET /readyz`: 200 while serving the remoting port with the KV store loaded; 503 before,
/// and from the moment a shutdown begins (so load balancers drain first).
async fn readyz(AxumState(state): AxumState<Arc<State>>) -> Response {
    match state.readiness() {
        Readiness::Ready => (StatusCode::OK, "ready\n").into_response(),
        Readiness::Starting => (StatusCode::SERVICE_UNAVAILABLE, "starting\n").into_response(),
        Readiness::Draining => (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response(),
    }
}
