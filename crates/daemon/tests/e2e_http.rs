//! The HTTP listener over real sockets: the Prometheus scrape (parsed with a Prometheus text
//! parser) follows what the server does, the probes follow its life (503 from the moment a
//! graceful shutdown starts, liveness until exit), and errors are JSON.

mod common;

use std::time::Duration;

use common::{http_get, http_request, request, Broker, Scrape, TestServer};
use remoting::RequestCode;

async fn scrape(server: &TestServer) -> Scrape {
    let response = server.get("/metrics").await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.header("content-type"), Some("text/plain; version=0.0.4; charset=utf-8"));
    Scrape::parse(&response.body)
}

fn broker(name: &str, addr: &str, timeout_ms: u64) -> Broker {
    Broker::new("C", name, addr, 0).with_ext("heartbeatTimeoutMillis", &timeout_ms.to_string())
}

// Paused time: the liveness scan and the expiry run on the test's clock.
#[tokio::test(start_paused = true)]
async fn the_scrape_follows_registrations_and_expiry() {
    let server = TestServer::start_with_http(|c| c.scan_not_active_broker_interval = 1000).await;
    let before = scrape(&server).await;
    assert_eq!(before.value("rocketmq_namesrv_topics", &[]), Some(0.0));
    assert_eq!(before.value("rocketmq_namesrv_ready", &[]), Some(1.0));

    // One connection per broker, as real brokers (an expired broker's connection is closed).
    let mut brokers = Vec::new();
    for (name, addr, timeout) in [
        ("broker-a", "10.0.0.1:10911", 3_600_000),
        ("broker-b", "10.0.0.2:10911", 3_600_000),
        ("broker-c", "10.0.0.3:10911", 10_000),
    ] {
        let mut conn = server.connect().await;
        assert_eq!(conn.register(&broker(name, addr, timeout), &["T1", "T2"]).await.code, 0);
        brokers.push(conn);
    }
    let mut conn = server.connect().await;
    assert!(conn.route("T1").await.is_some());
    assert!(conn.route("nope").await.is_none());

    let s = scrape(&server).await;
    assert_eq!(s.value("rocketmq_namesrv_brokers", &[("cluster", "C")]), Some(3.0));
    assert_eq!(s.value("rocketmq_namesrv_broker_groups", &[]), Some(3.0));
    assert_eq!(s.value("rocketmq_namesrv_topics", &[]), Some(2.0));
    assert_eq!(
        s.value("rocketmq_namesrv_registrations_total", &[("outcome", "applied")]),
        Some(3.0)
    );
    let requests = |s: &Scrape, code: &str, result: &str| {
        s.value("rocketmq_namesrv_requests_total", &[("code", code), ("result", result)])
    };
    assert_eq!(requests(&s, "103", "SUCCESS"), Some(3.0));
    assert_eq!(requests(&s, "105", "SUCCESS"), Some(1.0));
    assert_eq!(requests(&s, "105", "TOPIC_NOT_EXIST"), Some(1.0));
    assert_eq!(
        s.value(
            "rocketmq_namesrv_requests_total",
            &[("code", "105"), ("request", "GET_ROUTEINFO_BY_TOPIC"), ("result", "SUCCESS")]
        ),
        Some(1.0)
    );
    assert_eq!(
        s.value(
            "rocketmq_namesrv_request_duration_seconds_count",
            &[("request", "REGISTER_BROKER")]
        ),
        Some(3.0)
    );
    assert_eq!(
        s.value("rocketmq_namesrv_connections_open", &[("transport", "plain"), ("proxy", "false")]),
        Some(4.0)
    );
    assert!(s.value("rocketmq_namesrv_received_bytes_total", &[]).unwrap_or(0.0) > 0.0);
    assert!(s.value("rocketmq_namesrv_sent_bytes_total", &[]).unwrap_or(0.0) > 0.0);
    assert!(s.value("process_resident_memory_bytes", &[]).unwrap_or(0.0) > 0.0);
    assert!(s.0.samples.iter().any(|x| x.metric == "rocketmq_namesrv_build_info"));

    // broker-c has a 10 s heartbeat timeout, the others an hour: the scan (every second)
    // expires broker-c only.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let s = loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let s = scrape(&server).await;
        if s.value("rocketmq_namesrv_brokers", &[("cluster", "C")]) == Some(2.0) {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "broker-c never expired");
    };
    assert_eq!(
        s.value("rocketmq_namesrv_brokers_removed_total", &[("reason", "heartbeat_timeout")]),
        Some(1.0)
    );
    assert_eq!(s.value("rocketmq_namesrv_broker_groups", &[]), Some(2.0));
    let events = server.get("/api/v1/events").await.json();
    let expired: Vec<&serde_json::Value> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == "broker_expired")
        .collect();
    assert_eq!(expired.len(), 1, "{events}");
    assert_eq!(expired[0]["brokerName"], "broker-c");
    assert_eq!(expired[0]["detail"], "reason heartbeat_timeout");
}

/// A connection sums its requests locally and adds them before writing the answers out: a
/// pipelined batch (one write of many requests, a miss, hits and unknown topics mixed) is
/// counted exactly, request by request, as soon as its answers have arrived.
#[tokio::test]
async fn a_pipelined_batch_is_counted_exactly_once_its_answers_arrive() {
    let server = TestServer::start_with_http(|_| {}).await;
    // Two topics: a first registration with one is refused (Java's single-topic guard).
    let mut conn = server.connect().await;
    assert_eq!(
        conn.register(&broker("broker-a", "10.0.0.1:10911", 3_600_000), &["T1", "T2"]).await.code,
        0
    );
    let mut raw = server.connect_raw().await;
    let topics = ["T1", "T1", "nope", "T1", "T1", "nope", "T1"];
    let mut batch = Vec::new();
    for (i, topic) in topics.iter().enumerate() {
        let mut read = request(RequestCode::GetRouteinfoByTopic, &[("topic", topic)], None);
        read.opaque = i as i32 + 1;
        batch.extend_from_slice(&remoting::frame::encode_to_bytes(&read).expect("encode"));
    }
    raw.write(&batch).await;
    for _ in &topics {
        raw.read_frame().await.expect("an answer");
    }

    let s = scrape(&server).await;
    let requests = |code: &str, result: &str| {
        s.value("rocketmq_namesrv_requests_total", &[("code", code), ("result", result)])
    };
    assert_eq!(requests("105", "SUCCESS"), Some(5.0));
    assert_eq!(requests("105", "TOPIC_NOT_EXIST"), Some(2.0));
    assert_eq!(
        s.value(
            "rocketmq_namesrv_request_duration_seconds_count",
            &[("request", "GET_ROUTEINFO_BY_TOPIC")]
        ),
        Some(7.0)
    );
    let lookups = |result: &str| {
        s.value("rocketmq_namesrv_route_cache_lookups_total", &[("result", result)]).unwrap_or(0.0)
    };
    assert_eq!(lookups("hit") + lookups("miss"), 5.0, "one look-up per route served");
    assert!(lookups("hit") >= 4.0, "the body encoded once is served from the cache after");
}

#[tokio::test]
async fn openmetrics_is_served_when_asked_for() {
    let server = TestServer::start_with_http(|_| {}).await;
    let mut conn = server.connect().await;
    assert_eq!(conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await.code, 0);
    let response = http_get(
        server.http.expect("http"),
        "/metrics",
        &[("Accept", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5")],
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(response.body.ends_with("# EOF\n"), "{}", response.body);
    assert!(response.body.contains("# TYPE rocketmq_namesrv_requests counter"));
}

#[tokio::test]
async fn probes_answer_while_serving() {
    let server = TestServer::start_with_http(|_| {}).await;
    // The state is marked ready when the accept loop starts: poll for it (bounded).
    let mut ready = server.get("/readyz").await;
    for _ in 0..100 {
        if ready.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        ready = server.get("/readyz").await;
    }
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready\n"));
    let health = server.get("/healthz").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
}

#[tokio::test]
async fn readyz_turns_503_when_a_graceful_shutdown_starts_while_healthz_stays_200() {
    let mut server = TestServer::start_with_http(|c| {
        c.enable_shutdown_gracefully = true;
        c.shutdown_wait_time_seconds = 60;
    })
    .await;
    let mut remoting = server.connect().await;
    let info = remoting.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(info.code, 0);
    assert_eq!(server.get("/readyz").await.status, 200);

    server.trigger_stop();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ready = server.get("/readyz").await;
        if ready.status == 503 {
            assert_eq!(ready.body, "shutting down\n");
            break;
        }
        assert_eq!(ready.status, 200);
        assert!(std::time::Instant::now() < deadline, "readyz never turned 503");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Still alive, still serving remoting (the graceful window: clients up to 5.3.1 are
    // served, newer ones get GO_AWAY), still scrapable.
    assert_eq!(server.get("/healthz").await.status, 200);
    let mut old_client = request(RequestCode::GetBrokerClusterInfo, &[], None);
    old_client.version = remoting::version::V5_3_1;
    assert_eq!(remoting.call(old_client).await.code, 0);
    let s = Scrape::parse(&server.get("/metrics").await.body);
    assert_eq!(s.value("rocketmq_namesrv_ready", &[]), Some(0.0));
}

#[tokio::test]
async fn the_http_listener_closes_only_when_the_server_has_stopped() {
    let server = TestServer::start_with_http(|_| {}).await;
    let http = server.http.expect("http");
    assert_eq!(server.get("/healthz").await.status, 200);
    server.stop().await;
    let after = http_request(http, "GET", "/healthz", &[]).await;
    assert!(after.is_err(), "no HTTP after exit: {after:?}");
}

#[tokio::test]
async fn bad_paths_and_methods_get_json_errors() {
    let server = TestServer::start_with_http(|_| {}).await;
    let missing = server.get("/no/such/thing").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), Some("application/json"));
    let body = missing.json();
    assert_eq!(body["status"], 404);
    assert_eq!(body["error"], "Not Found");
    assert_eq!(body["message"], "no such path: /no/such/thing");

    let post =
        http_request(server.http.expect("http"), "POST", "/metrics", &[]).await.expect("answer");
    assert_eq!(post.status, 405);
    assert!(post.json()["message"].as_str().expect("message").contains("read-only"));

    let s = scrape(&server).await;
    assert_eq!(
        s.value(
            "rocketmq_namesrv_http_requests_total",
            &[("handler", "unmatched"), ("status", "404")]
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn metrics_enable_false_serves_no_metrics_but_the_probes() {
    let server = TestServer::start_with_http(|c| c.metrics_enable = false).await;
    let mut conn = server.connect().await;
    assert_eq!(conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await.code, 0);
    let metrics = server.get("/metrics").await;
    assert_eq!(metrics.status, 404);
    assert_eq!(metrics.json()["message"], "metrics are disabled (metricsEnable=false)");
    assert_eq!(server.get("/healthz").await.status, 200);
}

#[tokio::test]
async fn the_dashboard_is_served_from_the_binary_with_nothing_from_elsewhere() {
    let server = TestServer::start_with_http(|_| {}).await;
    let page = server.get("/").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(page.body.contains(r#"<script src="/assets/app.js">"#), "{}", page.body);
    for (path, content_type) in [
        ("/assets/app.js", "text/javascript; charset=utf-8"),
        ("/assets/style.css", "text/css; charset=utf-8"),
    ] {
        let asset = server.get(path).await;
        assert_eq!((asset.status, asset.header("content-type")), (200, Some(content_type)));
        assert!(asset.body.len() > 500, "{path}");
    }
    // No CDN, no remote font, no fetch from another origin.
    for path in ["/", "/assets/app.js", "/assets/style.css"] {
        let body = server.get(path).await.body.replace(' ', "");
        for remote in [
            "src=\"http",
            "href=\"http",
            "url(http",
            "@import",
            "fetch(\"http",
            "EventSource(\"http",
            "//cdn",
        ] {
            assert!(!body.contains(remote), "{path} loads from elsewhere: {remote}");
        }
    }
}

#[tokio::test]
async fn every_metric_of_the_grafana_dashboard_is_exposed() {
    let dashboard = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../deploy/grafana/rocketmq-namesrv.json"),
    )
    .expect("dashboard JSON");
    let parsed: serde_json::Value = serde_json::from_str(&dashboard).expect("valid JSON");
    assert!(parsed["panels"].as_array().is_some_and(|p| p.len() > 10));

    // Exercise every family: a registration, reads, an unregistration, a refused connection.
    let server = TestServer::start_with_http(|_| {}).await;
    let mut conn = server.connect().await;
    let b = broker("broker-a", "10.0.0.1:10911", 60_000);
    assert_eq!(conn.register(&b, &["T1", "T2"]).await.code, 0);
    let stays = broker("broker-b", "10.0.0.2:10911", 60_000);
    assert_eq!(conn.register(&stays, &["T1", "T2"]).await.code, 0);
    assert!(conn.route("T1").await.is_some());
    conn.put_kv("NS", "k", "v").await;
    assert_eq!(conn.call(b.request(RequestCode::UnregisterBroker, None)).await.code, 0);
    let mut bad = common::RawConn::connect(server.addr).await;
    bad.write(b"PROXY nonsense\r\n").await;
    assert!(bad.is_closed_by_server().await);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = server.get("/metrics").await.body;
        if text.contains("rocketmq_namesrv_brokers_removed_total{") {
            break text;
        }
        assert!(std::time::Instant::now() < deadline, "no removal counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let exposed: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let mut referenced = std::collections::BTreeSet::new();
    for prefix in ["rocketmq_namesrv_", "process_"] {
        for (i, _) in dashboard.match_indices(prefix) {
            let name: String = dashboard[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            referenced.insert(name);
        }
    }
    for name in &referenced {
        let family =
            ["_bucket", "_total"].iter().fold(name.as_str(), |n, s| n.strip_suffix(s).unwrap_or(n));
        let family = if name.ends_with("_total") && !exposed.contains(family) {
            name.as_str()
        } else {
            family
        };
        assert!(
            exposed.contains(family) || exposed.contains(name.as_str()),
            "{name} is on the dashboard but not in the scrape:\n{text}"
        );
    }
    assert!(referenced.len() > 15, "{referenced:?}");
}

/// A 2,000-topic registration (a large body: the registration lane) that changed 20 topics
/// with a new DataVersion is applied as its difference (`outcome="difference"`, #25), and
/// every route is what the whole body gives; once another request changed this broker's
/// queues (a wipe), the next one is applied in full, as Java's algorithm must then run.
#[tokio::test]
async fn a_changed_registration_is_applied_as_its_difference() {
    use common::{data_version, register_body_of};
    let server = TestServer::start_with_http(|_| {}).await;
    let mut conn = server.connect().await;
    let master = Broker::new("C", "broker-a", "10.0.0.1:10911", 0);
    let table = |changed_perm: i32| -> Vec<remoting::body::TopicConfig> {
        (0..2_000)
            .map(|i| remoting::body::TopicConfig {
                read_queue_nums: 8,
                write_queue_nums: 8,
                perm: if i % 100 == 7 { changed_perm } else { 6 },
                ..remoting::body::TopicConfig::named(format!("Topic-{i:05}"))
            })
            .collect()
    };
    let outcome = |s: &Scrape, o: &str| {
        s.value("rocketmq_namesrv_registrations_total", &[("outcome", o)]).unwrap_or(0.0)
    };
    let perm =
        |route: Option<remoting::body::TopicRouteData>| route.expect("route").queue_datas[0].perm;
    let first = master.register_body(register_body_of(table(6), data_version(1)));
    assert!(first.body_bytes().len() > 64 * 1024, "a body for the lane");
    assert_eq!(conn.call(first).await.code, 0);
    let body = register_body_of(table(2), data_version(2));
    assert_eq!(conn.call(master.register_body(body)).await.code, 0);
    let s = scrape(&server).await;
    assert_eq!((outcome(&s, "applied"), outcome(&s, "difference")), (1.0, 1.0));
    assert_eq!(perm(conn.route("Topic-00107").await), 2, "a changed topic");
    assert_eq!(perm(conn.route("Topic-00108").await), 6, "an unchanged one");
    assert_eq!(perm(conn.route("Topic-01907").await), 2);

    // A wipe changes this broker's queues: the next changed body is applied in full, and it
    // restores every perm the wipe took, as Java does.
    let wipe = request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None);
    assert_eq!(conn.call(wipe).await.ext("wipeTopicCount"), Some("2000"));
    let body = register_body_of(table(4), data_version(3));
    assert_eq!(conn.call(master.register_body(body)).await.code, 0);
    let s = scrape(&server).await;
    assert_eq!((outcome(&s, "applied"), outcome(&s, "difference")), (2.0, 1.0));
    assert_eq!(perm(conn.route("Topic-00108").await), 6, "restored by the full body");
    assert_eq!(perm(conn.route("Topic-00107").await), 4);
}
