//! `GET /metrics`: the exposition of the server's metrics in the Prometheus text format or
//! OpenMetrics (by `Accept` header), with the `prometheus-client` crate. Every scrape reads the
//! core's counters (`namesrv::metrics`, plain atomics) and the state's scrape-time values
//! (`gauges.rs`) into a registry of its own, so nothing here is on the request path.
//!
//! Names are prefixed `rocketmq_namesrv_` (the registry adds it; counters get `_total` from the
//! library); the standard `process_*` metrics are not (see `process.rs`). A histogram is read
//! as each bucket's own count and cumulated once, by the encoder, into the `le` buckets: so
//! `le="+Inf"` is `_count`.

use namesrv::metrics::{HistogramSnapshot, Metrics, RequestStats};
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

use crate::gauges::StateGauges;
use crate::process::ProcessCollector;
use crate::Context;

/// The prefix of every metric of ours.
pub const PREFIX: &str = "rocketmq_namesrv";

/// A one-label set with a fixed key and a closed set of values.
pub type ReasonLabel = [(&'static str, &'static str); 1];

/// Labels of the connection metrics: `transport` (`plain` or `tls`) and `proxy` (`true` when the
/// connection began with a PROXY protocol preface).
type ConnLabels = [(&'static str, &'static str); 2];

/// Labels of `requests_total`: request code, its Java name, and the result.
type RequestLabels = [(&'static str, &'static str); 3];

/// Labels of `request_duration_seconds`: request code and its Java name.
type CodeLabels = [(&'static str, &'static str); 2];

/// This build's version and commit (`build_info`).
pub fn build_info() -> (&'static str, &'static str) {
    (env!("CARGO_PKG_VERSION"), option_env!("NAMESRV_GIT_COMMIT").unwrap_or("unknown"))
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

/// The exposition text: the process metrics, every counter of the core, this listener's
/// requests, the values read from the state now, then the embedded controller's metrics.
pub fn encode(ctx: &Context, format: Format) -> Result<String, std::fmt::Error> {
    let mut root = Registry::default();
    root.register_collector(Box::new(ProcessCollector));
    let r = root.sub_registry_with_prefix(PREFIX);
    register_counters(r, &ctx.state.sinks.metrics);
    r.register(
        "http_requests",
        "Requests to the HTTP listener, by handler and status",
        ctx.http_requests.clone(),
    );
    r.register(
        "http_connections_refused",
        "HTTP connections and requests refused by the listener's bounds and guards, by reason \
         (max_connections, header_timeout, max_event_streams, host, plain_credentials, tls_handshake)",
        label_counts("reason", &ctx.http_counts.refused_counts()),
    );
    StateGauges::read(&ctx.state, &ctx.tls).register(r);
    if let Some(node) = ctx.controller.get() {
        crate::controller::register(&mut root, node);
    }
    encode_registry(&root, format)
}

pub(crate) fn encode_registry(
    registry: &Registry,
    format: Format,
) -> Result<String, std::fmt::Error> {
    let mut out = String::with_capacity(16 * 1024);
    match format {
        Format::OpenMetrics => {
            prometheus_client::encoding::text::encode_registry(&mut out, registry)?;
            prometheus_client::encoding::text::encode_eof(&mut out)?;
        }
        Format::Prometheus => {
            prometheus_client::encoding::prometheus_text::encode(&mut out, registry)?
        }
    }
    Ok(out)
}

/// Registers `requests_total{code,request,result}` and `request_duration_seconds{code,request}`
/// from `stats` in `r`; `port` names the port in the help texts (`remoting`, `controller`).
pub(crate) fn register_requests(r: &mut Registry, stats: &RequestStats, port: &str) {
    let totals = Family::<RequestLabels, Counter>::default();
    for t in stats.totals() {
        let labels = [("code", t.code), ("request", t.request), ("result", t.result)];
        totals.get_or_create(&labels).inc_by(t.count);
    }
    r.register(
        "requests",
        format!("Requests handled on the {port} port, by request code and result (response code name, ONEWAY when nothing is answered)"),
        totals,
    );
    let durations = stats
        .durations()
        .into_iter()
        .map(|d| ([("code", d.code), ("request", d.request)], d.histogram))
        .collect();
    r.register(
        "request_duration_seconds",
        format!("Time from taking up a request on the {port} port to its answer being ready, by request code"),
        Histograms::<CodeLabels>(durations),
    );
}

/// Registers `build_info{version,git_commit}` in `r`.
pub(crate) fn register_build_info(r: &mut Registry) {
    let (version, commit) = build_info();
    r.register(
        "build",
        "This build: version and git commit",
        Info::new([("version", version), ("git_commit", commit)]),
    );
}

/// Registers the core's counters, as they are now, in `r` (the prefixed registry).
fn register_counters(r: &mut Registry, m: &Metrics) {
    register_requests(r, &m.requests, "remoting");
    register_build_info(r);
    let accepted = Family::<ConnLabels, Counter>::default();
    let open = Family::<ConnLabels, Gauge>::default();
    for (kind, n, now) in m.connections() {
        let labels = [
            ("transport", if kind.tls { "tls" } else { "plain" }),
            ("proxy", if kind.proxied { "true" } else { "false" }),
        ];
        accepted.get_or_create(&labels).inc_by(n);
        open.get_or_create(&labels).set(now);
    }
    r.register(
        "connections_accepted",
        "Remoting connections set up, by transport and PROXY preface",
        accepted,
    );
    r.register(
        "connections_open",
        "Remoting connections open, by transport and PROXY preface",
        open,
    );
    r.register(
        "connections_refused",
        "Remoting connections closed during set-up (PROXY preface, TLS), by reason",
        label_counts("reason", &m.connections_refused()),
    );
    r.register(
        "received_bytes",
        "Remoting bytes received (after TLS decryption)",
        counter(m.received_bytes.get()),
    );
    r.register(
        "sent_bytes",
        "Remoting bytes sent (before TLS encryption)",
        counter(m.sent_bytes.get()),
    );
    let registrations: Vec<_> =
        m.registrations().into_iter().map(|(o, n)| (o.label(), n)).collect();
    r.register("registrations", "REGISTER_BROKER requests by outcome (applied, difference: only the changed topics decoded and put, unchanged: liveness refreshed only, crc_mismatch, refused)", label_counts("outcome", &registrations));
    r.register(
        "registration_apply_seconds",
        "REGISTER_BROKER handling time: body check, decode and apply",
        Histogram(m.registration_apply.snapshot()),
    );
    let removed: Vec<_> =
        m.brokers_removed_by_reason().into_iter().map(|(reason, n)| (reason.label(), n)).collect();
    r.register("brokers_removed", "Brokers removed from the live table, by reason (heartbeat_timeout, connection_closed, unregistered)", label_counts("reason", &removed));
    let (hits, misses) = m.route_cache();
    let route_cache = Family::<ReasonLabel, Counter>::default();
    route_cache.get_or_create(&[("result", "hit")]).inc_by(hits);
    route_cache.get_or_create(&[("result", "miss")]).inc_by(misses);
    r.register(
        "route_cache_lookups",
        "GET_ROUTEINFO_BY_TOPIC bodies served from the per-topic cache (hit) or encoded (miss)",
        route_cache,
    );
}

/// An unlabelled counter at `value`.
pub(crate) fn counter(value: u64) -> Counter {
    let counter = Counter::default();
    counter.inc_by(value);
    counter
}

/// A counter per label value (`key`); none for a value not listed.
pub(crate) fn label_counts(
    key: &'static str,
    counts: &[(&'static str, u64)],
) -> Family<ReasonLabel, Counter> {
    let family = Family::<ReasonLabel, Counter>::default();
    for (value, n) in counts {
        family.get_or_create(&[(key, *value)]).inc_by(*n);
    }
    family
}

/// A histogram as read at this scrape.
#[derive(Debug)]
struct Histogram(HistogramSnapshot);

/// One histogram per label set, as read at this scrape.
#[derive(Debug)]
struct Histograms<L>(Vec<(L, HistogramSnapshot)>);

/// Writes `h`: its sum, its count, and its buckets, cumulated here and only here (the encoder
/// adds each bucket's count to the ones below it).
fn encode_histogram(
    mut encoder: MetricEncoder,
    h: &HistogramSnapshot,
) -> Result<(), std::fmt::Error> {
    encoder.encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &h.buckets, None)
}

impl TypedMetric for Histogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Histogram {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encode_histogram(encoder, &self.0)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

impl<L> TypedMetric for Histograms<L> {
    const TYPE: MetricType = MetricType::Histogram;
}

impl<L: prometheus_client::encoding::EncodeLabelSet + std::fmt::Debug> EncodeMetric
    for Histograms<L>
{
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, h) in &self.0 {
            encode_histogram(encoder.encode_family(labels)?, h)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use namesrv::metrics::{RequestResult, REGISTRATION_BUCKETS, REQUEST_BOUNDS_NS};

    use super::*;

    /// The samples of `text` (Prometheus text format).
    fn parse(text: &str) -> prometheus_parse::Scrape {
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("valid")
    }

    /// The `le` bucket counts, `_count` and `_sum` of histogram `name` with these labels.
    fn histogram(
        scrape: &prometheus_parse::Scrape,
        name: &str,
        labels: &[(&str, &str)],
    ) -> (Vec<(f64, u64)>, u64, f64) {
        let sample = scrape
            .samples
            .iter()
            .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .unwrap_or_else(|| panic!("{name} {labels:?} exposed"));
        let prometheus_parse::Value::Histogram(buckets) = &sample.value else {
            panic!("{name} is a histogram");
        };
        let value = |suffix: &str| {
            scrape
                .samples
                .iter()
                .find(|s| {
                    s.metric == format!("{name}{suffix}")
                        && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
                })
                .map(|s| match s.value {
                    prometheus_parse::Value::Untyped(v) | prometheus_parse::Value::Counter(v) => v,
                    _ => panic!("{name}{suffix} is a number"),
                })
                .unwrap_or_else(|| panic!("{name}{suffix} exposed"))
        };
        let buckets = buckets.iter().map(|b| (b.less_than, b.count as u64)).collect();
        (buckets, value("_count") as u64, value("_sum"))
    }

    /// For every bucket bound, the number of `durations` at most that bound (the true count of
    /// an `le` bucket), and `+Inf` = all of them.
    fn true_counts(bounds_seconds: &[f64], durations: &[Duration]) -> Vec<(f64, u64)> {
        bounds_seconds
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .map(|le| (le, durations.iter().filter(|d| d.as_secs_f64() <= le).count() as u64))
            .collect()
    }

    /// Issue #22: each `le` bucket of every histogram counts exactly the observations at most
    /// its bound, and `le="+Inf"` equals `_count`, for durations recorded through the paths the
    /// server records them by (a connection's pending batch for requests, `observe` for
    /// registrations), in the text format and in OpenMetrics. Before, the buckets were cumulated
    /// twice.
    #[test]
    fn every_bucket_holds_the_true_count_and_inf_equals_count() {
        let dir = tempfile::tempdir().expect("dir");
        let config = namesrv::Config {
            kv_config_path: dir.path().join("kv.json").to_string_lossy().into_owned(),
            ..namesrv::Config::default()
        };
        let state = namesrv::build_state(config, None).expect("state");
        let metrics = &state.sinks.metrics;
        let micros = [1, 4, 5, 6, 30, 99, 250, 251, 900, 1_000, 7_500, 40_000, 3_000_000];
        let durations: Vec<Duration> = micros.iter().map(|&m| Duration::from_micros(m)).collect();
        let mut pending = namesrv::metrics::Pending::default();
        for d in &durations {
            let ns = u64::try_from(d.as_nanos()).expect("fits");
            metrics.requests.record_pending(
                &mut pending.requests,
                105,
                RequestResult::Answered(0),
                ns,
            );
            metrics.registration_apply.observe(*d);
        }
        metrics.apply(&mut pending);
        let tls = std::sync::Arc::new(transport::TlsContext::disabled());
        let ctx = Context::new(state.clone(), tls);
        let request_bounds: Vec<f64> =
            REQUEST_BOUNDS_NS.iter().map(|&ns| ns as f64 / 1e9).collect();
        let cases = [
            (
                "rocketmq_namesrv_request_duration_seconds",
                &[("code", "105"), ("request", "GET_ROUTEINFO_BY_TOPIC")][..],
                request_bounds,
            ),
            ("rocketmq_namesrv_registration_apply_seconds", &[][..], REGISTRATION_BUCKETS.to_vec()),
        ];
        // Both formats: the OpenMetrics histogram lines are the text format's, ended by # EOF.
        let openmetrics = encode(&ctx, Format::OpenMetrics).expect("encoded");
        assert!(openmetrics.ends_with("# EOF\n"));
        let scrapes = [
            ("text", parse(&encode(&ctx, Format::Prometheus).expect("encoded"))),
            ("OpenMetrics", parse(&openmetrics)),
        ];
        for ((format, scrape), (name, labels, bounds)) in
            scrapes.iter().flat_map(|s| cases.iter().map(move |c| (s, c)))
        {
            let what = format!("{name} ({format})");
            let (buckets, count, sum) = histogram(scrape, name, labels);
            let expected = true_counts(bounds, &durations);
            assert_eq!(buckets.len(), expected.len(), "{what}: one bucket per bound and +Inf");
            for ((le, n), (true_le, true_n)) in buckets.iter().zip(&expected) {
                assert!((le - true_le).abs() < 1e-12 || le == true_le, "{what}: bound {le}");
                assert_eq!(
                    n, true_n,
                    "{what}: le={le} holds {n}, {true_n} observations are at most {le}"
                );
            }
            assert_eq!(buckets.last().map(|b| b.1), Some(count), "{what}: le=+Inf equals _count");
            assert_eq!(count, durations.len() as u64, "{what}: _count");
            let true_sum: f64 = durations.iter().map(Duration::as_secs_f64).sum();
            assert!((sum - true_sum).abs() < 1e-6, "{what}: _sum {sum}, true {true_sum}");
        }
    }
}
