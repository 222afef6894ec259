//! Warm restart from the route snapshot, in process over loopback: a graceful restart serves
//! every route before any broker registers again; a crash loses at most the last few seconds;
//! a damaged snapshot falls back to its `.bak` or to an empty start, never to a failed one;
//! a restored broker that never returns expires by its heartbeat timeout from the restart, and
//! one that registers again replaces its restored entry. (The real binary: `e2e_shutdown.rs`.)

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{body_text, request, Broker, Conn, TestServer};
use remoting::RequestCode;
use tokio::time::sleep;

fn master() -> Broker {
    Broker::new("C", "broker-a", "10.0.0.1:10911", 0)
}

fn slave() -> Broker {
    Broker::new("C", "broker-a", "10.0.0.2:10911", 1)
}

fn other() -> Broker {
    Broker::new("D", "broker-b", "10.0.0.3:10911", 0)
}

fn snapshot_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("routes.snapshot")
}

async fn cluster_info(client: &mut Conn) -> String {
    body_text(&client.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await)
}

/// A server (scanning every second) with broker-a (master and slave) and broker-b registered;
/// the broker connections are returned so they stay open.
async fn populated(dir: Option<tempfile::TempDir>) -> (TestServer, Vec<Conn>) {
    let adjust = |c: &mut namesrv::Config| c.scan_not_active_broker_interval = 1000;
    let server = match dir {
        Some(dir) => TestServer::start_in(dir, adjust).await,
        None => TestServer::start_with(adjust).await,
    };
    let mut conns = Vec::new();
    for (broker, topics) in
        [(master(), &["T1", "T2"][..]), (slave(), &["T1", "T2"][..]), (other(), &["T1", "B"][..])]
    {
        let mut conn = server.connect().await;
        conn.register(&broker, topics).await;
        conns.push(conn);
    }
    (server, conns)
}

/// Polls (bounded) until `done` holds, sleeping `step` between tries.
async fn until(what: &str, step: Duration, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        sleep(step).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn a_graceful_restart_serves_every_route_before_any_broker_registers_again() {
    let (server, brokers) = populated(None).await;
    let mut client = server.connect().await;
    let routes_before =
        [client.route("T1").await, client.route("T2").await, client.route("B").await];
    assert!(routes_before.iter().all(Option::is_some));
    let cluster_before = cluster_info(&mut client).await;

    // The broker connections are still open when the server stops: closing them is part of
    // the shutdown and must not unregister the brokers.
    let dir = server.stop().await;
    drop(brokers);
    assert!(snapshot_path(&dir).exists(), "written at shutdown");

    let size = std::fs::metadata(snapshot_path(&dir)).expect("snapshot").len();
    let server = TestServer::start_in_with_http(dir, |_| {}).await;
    let mut client = server.connect().await;
    let routes_after =
        [client.route("T1").await, client.route("T2").await, client.route("B").await];
    assert_eq!(routes_after, routes_before);
    assert_eq!(cluster_info(&mut client).await, cluster_before);
    // The metrics say where the routes came from.
    let scrape = server.get("/metrics").await.body;
    for line in [
        "rocketmq_namesrv_route_snapshot_loads_total{result=\"loaded\"} 1".to_owned(),
        "rocketmq_namesrv_route_snapshot_loads_total{result=\"missing\"} 0".to_owned(),
        format!("rocketmq_namesrv_route_snapshot_size_bytes {size}"),
        "rocketmq_namesrv_route_snapshot_writes_total{result=\"ok\"} 0".to_owned(),
    ] {
        assert!(scrape.contains(&line), "{line} in {scrape}");
    }
    assert!(scrape.contains("rocketmq_namesrv_route_snapshot_age_seconds "));
}

#[tokio::test]
async fn with_the_snapshot_disabled_a_restart_is_empty_and_writes_nothing() {
    let server = TestServer::start_with(|c| c.route_snapshot_enable = false).await;
    let mut broker = server.connect().await;
    broker.register(&master(), &["T1", "T0"]).await;
    let dir = server.stop().await;
    assert!(!snapshot_path(&dir).exists());
    let server = TestServer::start_in(dir, |c| c.route_snapshot_enable = false).await;
    assert!(server.connect().await.route("T1").await.is_none());
}

#[tokio::test]
async fn the_snapshot_goes_where_route_snapshot_path_says() {
    let elsewhere = tempfile::tempdir().expect("dir");
    let path = elsewhere.path().join("deep/er/routes.bin");
    let configured = path.to_string_lossy().into_owned();
    let server = TestServer::start_with(|c| c.route_snapshot_path = Some(configured.clone())).await;
    let mut broker = server.connect().await;
    broker.register(&master(), &["T1", "T0"]).await;
    let dir = server.stop().await;
    assert!(path.exists() && !snapshot_path(&dir).exists());
    let server = TestServer::start_in(dir, |c| c.route_snapshot_path = Some(configured)).await;
    assert!(server.connect().await.route("T1").await.is_some());
}

// Paused time: the writer's 5 s period passes without waiting for it.
#[tokio::test(start_paused = true)]
async fn after_a_crash_the_routes_of_the_last_periodic_snapshot_are_served() {
    let (server, _brokers) = populated(None).await;
    let path = snapshot_path(&server.dir);
    assert!(!path.exists(), "nothing written before the first period");
    // Written once it restores to a table with every topic (the v2 file is binary).
    let written = || {
        std::fs::read(&path).is_ok_and(|b| {
            namesrv::route::RouteTable::from_snapshot(&b, 0)
                .is_ok_and(|(t, _)| t.contains_topic("B"))
        })
    };
    until("the periodic snapshot", Duration::from_millis(500), written).await;

    let dir = server.crash().await;
    let server = TestServer::start_in(dir, |_| {}).await;
    let mut client = server.connect().await;
    for topic in ["T1", "T2", "B"] {
        assert!(client.route(topic).await.is_some(), "{topic} after the crash");
    }
}

#[tokio::test]
async fn a_damaged_snapshot_falls_back_to_its_bak() {
    // Two graceful stops: the first snapshot becomes the .bak of the second.
    let (server, brokers) = populated(None).await;
    let dir = server.stop().await;
    drop(brokers);
    let server = TestServer::start_in(dir, |_| {}).await;
    let mut broker = server.connect().await;
    broker.register(&other(), &["T1", "B", "Later"]).await;
    let dir = server.stop().await;
    drop(broker);
    let path = snapshot_path(&dir);
    let mut bytes = std::fs::read(&path).expect("snapshot");
    let last = bytes.len() - 10;
    bytes[last] ^= 0x01; // a flipped bit in the payload
    std::fs::write(&path, bytes).expect("damage it");

    let server = TestServer::start_in(dir, |_| {}).await;
    let mut client = server.connect().await;
    assert!(client.route("T1").await.is_some(), "the .bak's routes");
    assert!(client.route("Later").await.is_none(), "the .bak predates the damaged snapshot");
}

#[tokio::test]
async fn an_unreadable_snapshot_and_bak_start_empty_and_are_replaced() {
    let dir = tempfile::tempdir().expect("dir");
    let path = snapshot_path(&dir);
    std::fs::write(&path, b"not a snapshot\n{}").expect("garbage");
    std::fs::write(format!("{}.bak", path.display()), b"").expect("empty bak");
    let server = TestServer::start_in(dir, |_| {}).await;
    let mut broker = server.connect().await;
    assert!(broker.route("T1").await.is_none(), "an empty start");
    broker.register(&master(), &["T1", "T0"]).await;
    let dir = server.stop().await;
    drop(broker);
    let server = TestServer::start_in(dir, |_| {}).await;
    assert!(server.connect().await.route("T1").await.is_some(), "a good snapshot again");
}

/// Polls (bounded, paused time) until the route of `topic` is gone; the time it went.
async fn gone_at(client: &mut Conn, topic: &str) -> tokio::time::Instant {
    for _ in 0..600 {
        if client.route(topic).await.is_none() {
            return tokio::time::Instant::now();
        }
        sleep(Duration::from_millis(200)).await;
    }
    panic!("route of {topic} still there");
}

/// A restart from the snapshot of [`populated`], scanning every second.
async fn restarted() -> TestServer {
    let (server, brokers) = populated(None).await;
    let dir = server.stop().await;
    drop(brokers);
    TestServer::start_in(dir, |c| c.scan_not_active_broker_interval = 1000).await
}

#[tokio::test(start_paused = true)]
async fn a_restored_broker_that_never_returns_expires_by_its_timeout_from_the_restart() {
    let server = restarted().await;
    let restart = tokio::time::Instant::now();
    let mut client = server.connect().await;
    sleep(Duration::from_secs(110)).await;
    assert!(client.route("T1").await.is_some(), "alive within its 120 s timeout");
    let gone = gone_at(&mut client, "T1").await - restart;
    assert!(
        gone > Duration::from_secs(120) && gone <= Duration::from_millis(121_500),
        "expired by the first scan after 120 s from the restart, at {gone:?}"
    );
    assert_eq!(cluster_info(&mut client).await, r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#);
}

#[tokio::test(start_paused = true)]
async fn a_registration_replaces_its_restored_entry() {
    let server = restarted().await;
    let restart = tokio::time::Instant::now();
    sleep(Duration::from_secs(60)).await;
    // broker-b comes back with a new topic table; broker-a never does.
    let mut broker_b = server.connect().await;
    let body = common::register_body(&["T1", "B", "New"], common::data_version(2));
    assert_eq!(broker_b.call(other().register_body(body)).await.code, 0);
    let mut client = server.connect().await;
    assert!(client.route("New").await.is_some(), "the registration is applied");
    let gone = gone_at(&mut client, "T2").await - restart;
    assert!(gone <= Duration::from_millis(121_500), "broker-a expired with its snapshot stamp");
    // broker-b's entry is the registration's: alive 120 s from it, not from the restart.
    let route = client.route("T1").await.expect("broker-b still routes T1");
    let brokers: Vec<_> = route.broker_datas.iter().map(|b| b.broker_name.as_str()).collect();
    assert_eq!(brokers, ["broker-b"]);
    // And it is tied to broker-b's new connection like any registration.
    drop(broker_b);
    gone_at(&mut client, "New").await;
}
