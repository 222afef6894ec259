//! Every histogram of `/metrics` over real sockets (issue #22): a nameserver with an embedded
//! controller gets N requests of known codes on its remoting port and on its controller port,
//! each timed by the client, and then every histogram series of the scrape — in the Prometheus
//! text format and in OpenMetrics — has non-decreasing buckets, `le="+Inf"` = `_count` = N,
//! a `_sum` no larger than the client's own sum, and a p99 (estimated from the buckets as
//! `histogram_quantile` does) not above the client's p99.
//!
//! The p99 check is one-sided: the client's time of each request includes the server's (and
//! the loopback round trip). It compares like with like: the client's durations put in the same
//! buckets and estimated the same way, which can only be larger when every client duration is
//! (the raw nearest-rank p99 is printed beside it). Before the fix, every bucket was cumulated
//! twice: `le="+Inf"` was many times `_count`.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::exposition::{bucketed, histograms, nearest_rank, quantile, samples};
use common::{http_get, request, Broker, Conn, TestServer};
use remoting::{RemotingCommand, RequestCode};

/// Times one call.
async fn timed(conn: &mut Conn, req: RemotingCommand) -> (RemotingCommand, Duration) {
    let started = Instant::now();
    let response = conn.call(req).await;
    (response, started.elapsed())
}

type Series = (String, BTreeMap<String, String>);

fn series(family: &str, labels: &[(&str, &str)]) -> Series {
    let labels = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    (family.to_owned(), labels)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_histogram_counts_each_request_once_in_both_formats() {
    let server = TestServer::start_with_controller(|_| {}).await;
    let http = server.http.expect("http");
    // The embedded controller leads its one-node group (read from /metrics, so that no
    // controller request is sent before the counted ones).
    let deadline = Instant::now() + Duration::from_secs(30);
    while !http_get(http, "/metrics", &[])
        .await
        .body
        .contains(r#"rocketmq_controller_role{group="embedded",role="leader"} 1"#)
    {
        assert!(Instant::now() < deadline, "the embedded controller never led");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut client: BTreeMap<Series, Vec<Duration>> = BTreeMap::new();
    let mut record = |s: Series, d: Duration| client.entry(s).or_default().push(d);
    let ns = |code: &str, name: &str| {
        series("rocketmq_namesrv_request_duration_seconds", &[("code", code), ("request", name)])
    };

    // The remoting port: registrations (changing tables, then unchanged), reads that hit and
    // miss, cluster info, KV writes.
    let mut conn = server.connect().await;
    let mut registrations = Vec::new();
    for round in 0..2 {
        for b in 0..10 {
            let broker = Broker::new("C", &format!("broker-{b}"), &format!("10.0.0.{b}:10911"), 0);
            let (r, d) = timed(&mut conn, broker.register(&["T1", "T2", "T3"])).await;
            assert_eq!(r.code, 0, "round {round}: {:?}", r.remark);
            record(ns("103", "REGISTER_BROKER"), d);
            registrations.push(d);
        }
    }
    for topic in std::iter::repeat_n("T1", 300).chain(std::iter::repeat_n("nope", 100)) {
        let read = request(RequestCode::GetRouteinfoByTopic, &[("topic", topic)], None);
        let (r, d) = timed(&mut conn, read).await;
        assert_eq!(r.code, if topic == "nope" { 17 } else { 0 });
        record(ns("105", "GET_ROUTEINFO_BY_TOPIC"), d);
    }
    for _ in 0..50 {
        let (r, d) = timed(&mut conn, request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
        assert_eq!(r.code, 0);
        record(ns("106", "GET_BROKER_CLUSTER_INFO"), d);
    }
    for i in 0..30 {
        let key = format!("k{i}");
        let put = request(
            RequestCode::PutKvConfig,
            &[("namespace", "NS"), ("key", &key), ("value", "v")],
            None,
        );
        let (r, d) = timed(&mut conn, put).await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
        record(ns("100", "PUT_KV_CONFIG"), d);
    }
    for d in registrations {
        record(series("rocketmq_namesrv_registration_apply_seconds", &[]), d);
    }

    // The controller port: metadata reads and heartbeats (answered, not oneway).
    let mut ctl = Conn::connect(server.controller.expect("controller")).await;
    let controller = |code: &str, name: &str| {
        series("rocketmq_controller_request_duration_seconds", &[("code", code), ("request", name)])
    };
    for _ in 0..40 {
        let (r, d) =
            timed(&mut ctl, RemotingCommand::request(RequestCode::ControllerGetMetadataInfo)).await;
        assert_eq!(r.code, 0);
        record(controller("1005", "CONTROLLER_GET_METADATA_INFO"), d);
    }
    for i in 0..60 {
        let beat = request(
            RequestCode::BrokerHeartbeat,
            &[
                ("clusterName", "C"),
                ("brokerName", "broker-c"),
                ("brokerAddr", "10.0.9.1:10911"),
                ("brokerId", if i % 2 == 0 { "1" } else { "2" }),
                ("heartbeatTimeoutMills", "600000"),
            ],
            None,
        );
        let (r, d) = timed(&mut ctl, beat).await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
        record(controller("904", "BROKER_HEARTBEAT"), d);
    }

    for (format, accept) in [
        ("Prometheus text", "text/plain"),
        ("OpenMetrics", "application/openmetrics-text;version=1.0.0"),
    ] {
        let response = http_get(http, "/metrics", &[("Accept", accept)]).await;
        assert_eq!(response.status, 200);
        let found = histograms(&samples(&response.body));
        let names: Vec<&Series> = found.keys().collect();
        assert_eq!(
            names,
            client.keys().collect::<Vec<_>>(),
            "{format}: exactly the histogram series of the requests sent"
        );
        for (key, h) in &found {
            let (family, labels) = key;
            let what = format!("{format} {family}{labels:?}");
            let durations = &client[key];
            assert!(h.buckets.windows(2).all(|w| w[0].0 < w[1].0), "{what}: bounds ascend");
            assert!(
                h.buckets.windows(2).all(|w| w[0].1 <= w[1].1),
                "{what}: buckets non-decreasing {:?}",
                h.buckets
            );
            let inf = h.buckets.last().expect("buckets");
            assert!(inf.0.is_infinite(), "{what}: the last bucket is +Inf");
            assert_eq!(inf.1, h.count, "{what}: le=+Inf is _count");
            assert_eq!(h.count, durations.len() as f64, "{what}: _count is the requests sent");
            let client_sum: f64 = durations.iter().map(Duration::as_secs_f64).sum();
            assert!(
                h.sum > 0.0 && h.sum <= client_sum,
                "{what}: _sum {} vs client {client_sum}",
                h.sum
            );
            let bounds: Vec<f64> =
                h.buckets.iter().map(|b| b.0).filter(|le| le.is_finite()).collect();
            let server_p99 = quantile(0.99, &h.buckets).expect("p99");
            let client_p99 = quantile(0.99, &bucketed(&bounds, durations)).expect("client p99");
            let raw = nearest_rank(0.99, durations);
            eprintln!(
                "{what}: n={} p99 from buckets {:.1} µs, client {:.1} µs (raw {:.1} µs)",
                h.count,
                server_p99 * 1e6,
                client_p99 * 1e6,
                raw.as_secs_f64() * 1e6
            );
            assert!(
                server_p99 <= client_p99,
                "{what}: p99 {server_p99} s above the client's {client_p99} s"
            );
        }
    }
    server.stop().await;
}
