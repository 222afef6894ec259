//! Broker liveness at the server level, over real loopback sockets with paused tokio time:
//! expiry after the per-broker heartbeat timeout plus a scan, removal when the connection closes
//! (fenced against a re-registration on another connection), idle close, and the requests that
//! count as heartbeats (REGISTER_BROKER, QUERY_DATA_VERSION, BROKER_HEARTBEAT).

mod common;

use std::time::Duration;

use common::{data_version, request, Broker, Conn, TestServer};
use remoting::body::to_legacy_json;
use remoting::RequestCode;
use tokio::time::{sleep, Instant};

/// A server scanning every second (first scan after 5 s, as Java).
async fn server() -> TestServer {
    TestServer::start_with(|c| c.scan_not_active_broker_interval = 1000).await
}

fn broker(timeout_ms: u64) -> Broker {
    Broker::new("C", "broker-a", "10.0.0.1:10911", 0)
        .with_ext("heartbeatTimeoutMillis", &timeout_ms.to_string())
}

fn other_broker() -> Broker {
    Broker::new("C", "broker-b", "10.0.0.2:10911", 0)
}

/// Polls (bounded) until the route of `topic` is gone; returns when it went.
async fn wait_until_gone(client: &mut Conn, topic: &str, limit: Duration) -> Instant {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if client.route(topic).await.is_none() {
            return Instant::now();
        }
        sleep(Duration::from_millis(100)).await;
    }
    panic!("route of {topic} still there after {limit:?}");
}

#[tokio::test(start_paused = true)]
async fn silent_broker_expires_after_heartbeat_timeout_and_a_scan_but_not_before() {
    let server = server().await;
    let mut broker_conn = server.connect().await;
    let registered = Instant::now();
    broker_conn.register(&broker(10_000), &["T", "U"]).await;
    let mut client = server.connect().await;

    // Scans run at 5, 6, … 10 s; `last + timeout < now` is false up to 10 s inclusive.
    sleep(Duration::from_millis(9_900)).await;
    assert!(client.route("T").await.is_some(), "alive before its timeout");

    let gone = wait_until_gone(&mut client, "T", Duration::from_secs(5)).await;
    let after = gone - registered;
    assert!(
        after > Duration::from_secs(10) && after <= Duration::from_millis(11_500),
        "expired by the first scan after the timeout, at {after:?}"
    );
    let info = client.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(common::body_text(&info), r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#);
}

#[tokio::test(start_paused = true)]
async fn broker_without_heartbeat_timeout_header_lives_120_seconds() {
    let server = server().await;
    let mut broker_conn = server.connect().await;
    let registered = Instant::now();
    broker_conn.register(&Broker::new("C", "broker-a", "10.0.0.1:10911", 0), &["T", "U"]).await;
    let mut client = server.connect().await;
    // Keep both connections under the 120 s idle limit while waiting.
    for _ in 0..11 {
        sleep(Duration::from_secs(10)).await;
        assert!(client.route("T").await.is_some());
        let resp = broker_conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
        assert_eq!(resp.code, 0, "not a heartbeat");
    }
    let gone = wait_until_gone(&mut client, "T", Duration::from_secs(15)).await;
    let after = gone - registered;
    assert!(
        after > Duration::from_secs(120) && after <= Duration::from_millis(121_500),
        "{after:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn broker_disappears_at_once_when_its_connection_closes() {
    let server = server().await;
    let mut broker_conn = server.connect().await;
    broker_conn.register(&broker(120_000), &["T", "U"]).await;
    let mut client = server.connect().await;
    assert!(client.route("T").await.is_some());

    let closed = Instant::now();
    drop(broker_conn);
    let gone = wait_until_gone(&mut client, "T", Duration::from_secs(3)).await;
    assert!(
        gone - closed < Duration::from_secs(1),
        "removed on close, not by a scan: {:?}",
        gone - closed
    );
}

#[tokio::test(start_paused = true)]
async fn re_registration_on_another_connection_survives_the_old_connection_closing() {
    let server = server().await;
    let mut conn_a = server.connect().await;
    let mut conn_b = server.connect().await;
    conn_a.register(&broker(120_000), &["T", "U"]).await;
    // A witness broker that only ever used connection A.
    conn_a.register(&other_broker(), &["W", "X"]).await;
    conn_b.register(&broker(120_000), &["T", "U"]).await;

    let mut client = server.connect().await;
    drop(conn_a);
    // Once the witness is gone, connection A's close has been fully processed.
    wait_until_gone(&mut client, "W", Duration::from_secs(3)).await;
    sleep(Duration::from_millis(500)).await;
    let route = client.route("T").await.expect("still registered via B");
    assert_eq!(route.broker_datas.len(), 1);
    assert_eq!(route.broker_datas[0].broker_name, "broker-a");

    // …and it is connection B that now carries its liveness.
    drop(conn_b);
    wait_until_gone(&mut client, "T", Duration::from_secs(3)).await;
}

#[tokio::test(start_paused = true)]
async fn idle_broker_connection_is_closed_and_the_broker_unregistered() {
    let server = TestServer::start_with(|c| {
        c.scan_not_active_broker_interval = 1000;
        c.server_channel_max_idle_time_seconds = 3;
    })
    .await;
    let mut broker_conn = server.connect().await;
    let registered = Instant::now();
    broker_conn.register(&broker(120_000), &["T", "U"]).await;
    let mut client = server.connect().await;
    let gone = wait_until_gone(&mut client, "T", Duration::from_secs(6)).await;
    let after = gone - registered;
    assert!(after >= Duration::from_secs(3) && after < Duration::from_secs(4), "{after:?}");
    assert!(broker_conn.recv().await.is_none(), "the connection was closed");
}

// Java's IdleStateHandler with 0 never fires (this server used to close after 1 s).
#[tokio::test(start_paused = true)]
async fn an_idle_timeout_of_zero_never_closes_a_connection() {
    let server = TestServer::start_with(|c| c.server_channel_max_idle_time_seconds = 0).await;
    let mut conn = server.connect().await;
    assert_eq!(conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await.code, 0);
    sleep(Duration::from_secs(3600)).await;
    assert_eq!(conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await.code, 0);
}

/// Sends `heartbeat()` oneway every second for 15 s (timeout 3 s), checking the route stays;
/// then stops and expects expiry.
async fn kept_alive_by(heartbeat: impl Fn() -> remoting::RemotingCommand) {
    let server = server().await;
    let mut broker_conn = server.connect().await;
    broker_conn.register(&broker(3_000), &["T", "U"]).await;
    let mut client = server.connect().await;
    for second in 1..=15 {
        sleep(Duration::from_secs(1)).await;
        let mut hb = heartbeat();
        hb.set_oneway(true);
        broker_conn.send(hb).await;
        assert!(client.route("T").await.is_some(), "alive at {second} s thanks to heartbeats");
    }
    // Oneway heartbeats were never answered: the next frame answers this call.
    let resp = broker_conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(resp.code, 0);

    let stopped = Instant::now();
    let gone = wait_until_gone(&mut client, "T", Duration::from_secs(6)).await;
    assert!(gone - stopped > Duration::from_secs(3), "{:?}", gone - stopped);
}

#[tokio::test(start_paused = true)]
async fn oneway_query_data_version_keeps_broker_alive_past_its_timeout() {
    kept_alive_by(|| {
        broker(3_000).request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(1))))
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn oneway_broker_heartbeat_keeps_broker_alive_past_its_timeout() {
    kept_alive_by(|| broker(3_000).request(RequestCode::BrokerHeartbeat, None)).await;
}

#[tokio::test(start_paused = true)]
async fn re_registration_keeps_broker_alive_and_an_expired_broker_can_come_back() {
    let server = server().await;
    let mut broker_conn = server.connect().await;
    let mut client = server.connect().await;
    for _ in 0..6 {
        broker_conn.register(&broker(3_000), &["T", "U"]).await;
        sleep(Duration::from_secs(2)).await;
        assert!(client.route("T").await.is_some());
    }
    wait_until_gone(&mut client, "T", Duration::from_secs(6)).await;
    // The expired broker's connection may have been closed by the server; use a new one.
    let mut again = server.connect().await;
    again.register(&broker(3_000), &["T", "U"]).await;
    assert!(client.route("T").await.is_some());
}

#[tokio::test(start_paused = true)]
async fn heartbeat_of_unknown_broker_registers_nothing() {
    let server = server().await;
    let mut conn = server.connect().await;
    let resp = conn.call(broker(3_000).request(RequestCode::BrokerHeartbeat, None)).await;
    assert_eq!(resp.code, 0);
    let info = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(common::body_text(&info), r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#);
}
