//! Trusted proxies end to end over TCP (#21, finding 1): with access control on and
//! `globalWhiteRemoteAddresses: [10.9.0.0/16]`, a PROXY v1/v2 preface naming an allowed address
//! is refused from a peer that is not in `proxyProtocolTrustedAddresses` (the connection closed
//! before its request is read, nothing applied, counted `untrusted_proxy`, logged) and honoured
//! from one that is, whose audit line then names the client and the proxy. (A binary of its
//! own: it reads the log.)

mod common;

use std::path::Path;
use std::time::Duration;

use common::captured::Captured;
use common::{request, RawConn, TestServer};
use namesrv::config::AuthMode;
use remoting::{RemotingCommand, RequestCode};

const ACCOUNTS: &str = r#"
globalWhiteRemoteAddresses: [10.9.0.0/16]
accounts:
  - {accessKey: ops, secretKey: "ops-secret-1", role: admin}
"#;

async fn enforcing(trusted: Option<&str>) -> TestServer {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    write_private(&accounts, ACCOUNTS);
    TestServer::start_in(dir, |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(accounts.to_string_lossy().into_owned());
        c.authentication_mode = Some(AuthMode::Writes.as_str().into());
        c.proxy_protocol_trusted_addresses = trusted.map(str::to_owned);
    })
    .await
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).expect("accounts file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
}

/// A PROXY v2 preface: PROXY command, TCP over IPv4, from 10.9.0.7:40000 to 127.0.0.1:9876.
fn proxy_v2() -> Vec<u8> {
    let mut bytes = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    bytes.extend_from_slice(&[0x21, 0x11, 0, 12, 10, 9, 0, 7, 127, 0, 0, 1]);
    bytes.extend_from_slice(&40000u16.to_be_bytes());
    bytes.extend_from_slice(&9876u16.to_be_bytes());
    bytes
}

fn kv(code: RequestCode, key: &str) -> RemotingCommand {
    let ext = [("namespace", "NS"), ("key", key), ("value", "spoofed")];
    request(code, if code == RequestCode::PutKvConfig { &ext } else { &ext[..2] }, None)
}

/// The three attacks of the finding: (preface, unsigned write), each allowed only for 10.9.x.x.
fn attacks() -> Vec<(Vec<u8>, RemotingCommand)> {
    let update = b"httpNamesrvAddr=10.9.0.1:9876\n";
    vec![
        (
            b"PROXY TCP4 10.9.0.5 127.0.0.1 1234 9876\r\n".to_vec(),
            kv(RequestCode::PutKvConfig, "spoofed-key"),
        ),
        (proxy_v2(), request(RequestCode::UpdateNamesrvConfig, &[], Some(update))),
        (
            b"PROXY TCP6 ::ffff:10.9.0.9 ::1 1234 9876\r\n".to_vec(),
            kv(RequestCode::DeleteKvConfig, "seeded-key"),
        ),
    ]
}

/// Puts `seeded-key` (signed, without a preface), the key the third attack deletes.
async fn seed(server: &TestServer) {
    let mut put = kv(RequestCode::PutKvConfig, "seeded-key");
    remoting::signature::Credentials::new("ops", "ops-secret-1").sign(&mut put);
    assert_eq!(server.connect().await.call(put).await.code, 0);
}

fn kv_value(server: &TestServer, key: &str) -> Option<String> {
    server.state.kv.get("NS", key)
}

#[tokio::test(flavor = "current_thread")]
async fn a_preface_from_a_peer_not_trusted_closes_the_connection_before_its_request() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber("info"));
    let server = enforcing(None).await;
    seed(&server).await;
    let http_addr = server.state.config.load().http_namesrv_addr.clone();
    for (preface, write) in attacks() {
        let mut conn = RawConn::connect(server.addr).await;
        let mut bytes = preface.clone();
        bytes.extend_from_slice(&remoting::frame::encode_to_bytes(&write).expect("encode"));
        let _ = conn.try_write(&bytes).await;
        assert!(conn.is_closed_by_server().await, "no answer, closed: {preface:?}");
    }
    assert_eq!(kv_value(&server, "spoofed-key"), None, "the v1 PUT was not applied");
    assert_eq!(kv_value(&server, "seeded-key").as_deref(), Some("spoofed"), "nor the DELETE");
    assert_eq!(server.state.config.load().http_namesrv_addr, http_addr, "nor the v2 update");
    let refused = server.state.sinks.metrics.connections_refused();
    assert!(refused.contains(&("untrusted_proxy", 3)), "{refused:?}");

    // Without a preface the same peer is served as itself: 127.0.0.1 is not in 10.9.0.0/16.
    let mut conn = server.connect().await;
    assert_eq!(conn.call(kv(RequestCode::PutKvConfig, "spoofed-key")).await.code, 16);
    let text = captured.text();
    let lines: Vec<&str> =
        text.lines().filter(|l| l.contains("proxyProtocolTrustedAddresses")).collect();
    assert!(
        lines.iter().any(|l| l.contains("trusted=") && l.contains("PROXY prefaces honoured")),
        "{text}"
    );
    let logged =
        lines.iter().filter(|l| l.contains("not in proxyProtocolTrustedAddresses")).count();
    assert_eq!(logged, 1, "three refusals within a second make one line: {text}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_trusted_proxy_names_the_client_and_the_audit_line_names_both() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber("audit=info"));
    let server = enforcing(Some("192.0.2.1, 127.0.0.1")).await;
    seed(&server).await;
    for (preface, write) in attacks() {
        let mut conn = RawConn::connect(server.addr).await;
        conn.write(&preface).await;
        let answer = common::decode(&conn.call(write).await);
        assert_eq!(answer.code, 0, "honoured from a trusted proxy: {:?}", answer.remark);
    }
    assert_eq!(kv_value(&server, "spoofed-key").as_deref(), Some("spoofed"));
    assert_eq!(kv_value(&server, "seeded-key"), None);
    let addr = server.state.config.load().http_namesrv_addr.clone();
    assert_eq!(addr.as_deref(), Some("10.9.0.1:9876"));
    tokio::time::sleep(Duration::from_millis(10)).await;
    let text = captured.text();
    let line =
        text.lines().find(|l| l.contains("code=100") && l.contains("spoofed-key")).expect(&text);
    for part in ["who=whitelisted-address", "peer=10.9.0.5:1234", "proxy=127.0.0.1:"] {
        assert!(line.contains(part), "{part} in {line}");
    }
    let v2 = text.lines().find(|l| l.contains("code=318")).expect(&text);
    assert!(v2.contains("peer=10.9.0.7:40000") && v2.contains("proxy=127.0.0.1:"), "{v2}");
}

#[tokio::test(flavor = "current_thread")]
async fn without_access_control_every_preface_is_honoured_as_in_java() {
    let server = TestServer::start().await;
    assert_eq!(server.state.config.load().trusted_proxies_text(), "*");
    let mut conn = RawConn::connect(server.addr).await;
    conn.write(b"PROXY TCP4 10.9.0.5 127.0.0.1 1234 9876\r\n").await;
    let answer = common::decode(&conn.call(kv(RequestCode::PutKvConfig, "k")).await);
    assert_eq!(answer.code, 0, "{:?}", answer.remark);
    assert!(server.state.sinks.metrics.connections_refused().is_empty());
}
