//! Three nameservers embedding one controller group (`enableControllerInNamesrv`) with
//! `tls.server.mode=enforcing` in their `-c` files (#21): the nameservers start (the refusal of
//! `enforcing` for a group of more than one node is gone), the embedded nodes dial each other
//! over TLS and agree on one leader, and a plaintext request to a controller port is closed.

mod common;

use std::time::Duration;

use common::{http_get, request, RawConn, TestServer};
use remoting::RequestCode as C;

const LIMIT: Duration = Duration::from_secs(30);

/// Every node's (role, leader id) as its nameserver's `/api/v1/controller` shows it.
async fn roles(servers: &[TestServer]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in servers {
        let resp = http_get(s.http.expect("http"), "/api/v1/controller", &[]).await;
        let body: serde_json::Value = serde_json::from_str(&resp.body).unwrap_or_default();
        let role = body["role"].as_str().unwrap_or_default().to_owned();
        let leader = body["leader"]["id"].as_str().unwrap_or_default().to_owned();
        out.push((role, leader));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_controllers_in_enforcing_mode_elect_over_tls() {
    let mut listeners = Vec::new();
    for _ in 0..3 {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind"));
    }
    let addrs: Vec<String> =
        listeners.iter().map(|l| l.local_addr().expect("addr").to_string()).collect();
    let peers: Vec<String> = addrs.iter().enumerate().map(|(i, a)| format!("n{i}-{a}")).collect();
    let mut servers = Vec::new();
    for (i, listener) in listeners.into_iter().enumerate() {
        let keys = format!(
            "controllerDLegerGroup=tls-group\ncontrollerDLegerPeers={}\n\
             controllerDLegerSelfId=n{i}\nraftElectionTimeoutMillis=800\n\
             tls.server.mode=enforcing\ntls.config.file=/nonexistent/tls.properties\n",
            peers.join(";")
        );
        servers.push(
            TestServer::start_embedding(listener, &keys, |c| {
                for (k, v) in [
                    ("tls.server.mode", "enforcing"),
                    ("tls.config.file", "/nonexistent/tls.properties"),
                ] {
                    c.set_known(k, v).expect("tls key");
                }
            })
            .await,
        );
    }
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let seen = roles(&servers).await;
        let leaders = seen.iter().filter(|(role, _)| role == "leader").count();
        let named: std::collections::BTreeSet<&str> =
            seen.iter().map(|(_, l)| l.as_str()).collect();
        if leaders == 1 && named.len() == 1 && !named.contains("") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no agreed leader over TLS: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut plain = RawConn::connect(addrs[0].parse().expect("addr")).await;
    plain.send(&request(C::ControllerGetMetadataInfo, &[], None)).await;
    assert!(plain.is_closed_by_server().await, "plaintext is closed on an enforcing port");
    for s in servers {
        s.stop().await;
    }
}
