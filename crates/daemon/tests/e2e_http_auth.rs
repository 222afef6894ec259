//! The HTTP listener under the remoting port's rules (#21, finding 4), over real sockets:
//! `/api/v1/config` redacts what 319 and `-p` redact; with `authenticationMode=all` every route
//! but the probes, `/metrics` and the address server needs an account over HTTP Basic (401 with
//! `WWW-Authenticate` otherwise, refusals counted with the remoting ones), while `writes` leaves
//! the read-only API open; `X-Forwarded-For` changes nothing; credentials over plain HTTP from
//! another machine are refused; HTTPS with the remoting port's certificate; connections that do
//! not send their headers are closed after `httpHeaderReadTimeoutSeconds`; the connection,
//! event-stream and `Host` bounds.

mod common;

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use common::{http_get, request, write_accounts, Broker, Scrape, TestServer};
use namesrv::Config;
use remoting::signature::Credentials;
use remoting::RequestCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ACCOUNTS: &str = r#"
globalWhiteRemoteAddresses: [10.9.0.0/16]
accounts:
  - {accessKey: ops, secretKey: "ops-secret-1", role: admin}
  - {accessKey: broker-a, secretKey: "broker-secret-1", role: broker}
  - {accessKey: viewer, secretKey: "viewer-secret-1", role: reader}
  - {accessKey: far-viewer, secretKey: "far-secret-1", role: reader, whiteRemoteAddress: 10.9.0.0/16}
"#;

/// `adjust` then access control on in `mode` with [`ACCOUNTS`].
fn with_auth(mode: &'static str, dir: &Path) -> impl FnOnce(&mut Config) {
    let accounts = dir.join("auth.yml");
    write_accounts(&accounts, ACCOUNTS);
    move |c: &mut Config| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(accounts.to_string_lossy().into_owned());
        c.authentication_mode = Some(mode.into());
    }
}

async fn enforcing(mode: &'static str, adjust: impl FnOnce(&mut Config)) -> TestServer {
    let dir = tempfile::tempdir().expect("dir");
    let auth = with_auth(mode, dir.path());
    TestServer::start_in_with_http(dir, |c| {
        auth(c);
        adjust(c);
    })
    .await
}

fn basic(access_key: &str, secret_key: &str) -> String {
    let pair = format!("{access_key}:{secret_key}");
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
}

fn scrape_value(text: &str, metric: &str, labels: &[(&str, &str)]) -> f64 {
    Scrape::parse(text).value(metric, labels).unwrap_or(0.0)
}

async fn metrics(server: &TestServer) -> String {
    let response = server.get("/metrics").await;
    assert_eq!(response.status, 200);
    response.body
}

/// A KV entry and a registered broker with topic `T`, written by signed requests; the
/// broker's connection (closing it unregisters the broker).
async fn seed(server: &TestServer) -> common::Conn {
    let mut conn = server.connect().await;
    let mut put = request(
        RequestCode::PutKvConfig,
        &[("namespace", "NS"), ("key", "k1"), ("value", "v1")],
        None,
    );
    Credentials::new("ops", "ops-secret-1").sign(&mut put);
    assert_eq!(conn.call(put).await.code, 0);
    let mut register =
        Broker::new("DefaultCluster", "broker-a", "127.0.0.1:10911", 0).register(&["T", "T1"]);
    Credentials::new("broker-a", "broker-secret-1").sign(&mut register);
    assert_eq!(conn.call(register).await.code, 0);
    conn
}

#[tokio::test]
async fn the_config_api_redacts_exactly_what_319_and_p_redact() {
    let secrets = [
        ("dbPassword", "db-pass-123"),
        ("rocketmq.mySecretToken", "tok-456"),
        ("innerClientAuthenticationCredentials", "{\"accessKey\":\"a\",\"secretKey\":\"sk-789\"}"),
        ("tls.server.keyPassword", "hunter2"),
    ];
    let server = TestServer::start_with_http(|c| {
        for (key, value) in secrets {
            c.apply_file_entries([(key.to_owned(), value.to_owned())]).expect("key");
        }
    })
    .await;
    let response = server.get("/api/v1/config").await;
    assert_eq!(response.status, 200);
    let config = response.json();
    let mut conn = server.connect().await;
    let answer = conn.call(request(RequestCode::GetNamesrvConfig, &[], None)).await;
    let listed = common::body_text(&answer);
    let printed = server.state.config.load().to_print_text();
    for (key, secret) in secrets {
        assert_eq!(config["config"][key], "******", "{key} in /api/v1/config");
        assert!(listed.contains(&format!("{key}=******\n")), "{key} in 319: {listed}");
        assert!(printed.contains(&format!("{key}=******\n")), "{key} in -p");
        for shown in [&response.body, &listed, &printed] {
            assert!(!shown.contains(secret), "{key}'s secret shown");
        }
    }
    assert_eq!(config["config"]["listenPort"], "9876", "other keys are shown as they are");
}

#[tokio::test]
async fn mode_all_needs_an_account_on_every_route_but_probes_metrics_and_the_address_server() {
    let server = enforcing("all", |_| {}).await;
    let _broker = seed(&server).await;
    let addr = server.http.expect("http");
    let refused_before = scrape_value(
        &metrics(&server).await,
        "rocketmq_namesrv_auth_refused_total",
        &[("reason", "no_signature")],
    );

    // The exact payload of the finding.
    let anonymous = server.get("/api/v1/kv/NS").await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    assert_eq!(anonymous.header("www-authenticate"), Some(ops::REALM));
    assert!(!anonymous.body.contains("v1"), "{}", anonymous.body);
    let viewer = basic("viewer", "viewer-secret-1");
    let read = http_get(addr, "/api/v1/kv/NS", &[("Authorization", &viewer)]).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.json()["entries"]["k1"], "v1");

    let guarded = [
        "/api/v1/kv",
        "/api/v1/kv/NS",
        "/api/v1/topics",
        "/api/v1/topics/T/route",
        "/api/v1/clusters",
        "/api/v1/config",
        "/api/v1/events",
        "/api/v1/overview",
        "/api/v1/stats",
        "/",
        "/assets/app.js",
    ];
    for path in guarded {
        let anonymous = server.get(path).await;
        assert_eq!(anonymous.status, 401, "anonymous {path}: {}", anonymous.body);
        assert_eq!(anonymous.header("www-authenticate"), Some(ops::REALM), "{path}");
        let ok = http_get(addr, path, &[("Authorization", &viewer)]).await;
        assert_eq!(ok.status, 200, "reader {path}: {}", ok.body);
    }
    // Wrong credentials count in the address's failure window (ten block it): four of each.
    for path in &guarded[..4] {
        let wrong =
            http_get(addr, path, &[("Authorization", &basic("viewer", "viewer-secret-2"))]).await;
        assert_eq!(wrong.status, 401, "wrong secret {path}");
        assert_eq!(wrong.header("www-authenticate"), Some(ops::REALM), "{path}");
        let unknown = http_get(addr, path, &[("Authorization", &basic("nobody", "x"))]).await;
        assert_eq!(unknown.status, 401, "unknown key {path}");
    }
    for open in ["/healthz", "/readyz", "/metrics", "/rocketmq/nsaddr"] {
        assert_eq!(server.get(open).await.status, 200, "{open} stays open");
    }
    let text = metrics(&server).await;
    let refused =
        |reason| scrape_value(&text, "rocketmq_namesrv_auth_refused_total", &[("reason", reason)]);
    assert_eq!(refused("no_signature") - refused_before, 1.0 + guarded.len() as f64);
    assert_eq!(refused("bad_signature"), 4.0);
    assert_eq!(refused("unknown_access_key"), 4.0);
}

#[tokio::test]
async fn mode_writes_leaves_the_read_only_api_open_like_remoting_reads() {
    let server = enforcing("writes", |_| {}).await;
    let _broker = seed(&server).await;
    let read = server.get("/api/v1/kv/NS").await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.json()["entries"]["k1"], "v1");
    for path in ["/api/v1/clusters", "/api/v1/config", "/api/v1/events", "/"] {
        assert_eq!(server.get(path).await.status, 200, "{path}");
    }
}

#[tokio::test]
async fn forwarded_headers_never_change_the_client_address() {
    let server = enforcing("all", |_| {}).await;
    let addr = server.http.expect("http");
    for header in ["X-Forwarded-For", "X-Real-IP", "Forwarded"] {
        let value = if header == "Forwarded" { "for=10.9.0.5" } else { "10.9.0.5" };
        // 10.9.0.0/16 is globally allowed: from there no account would be needed.
        let anonymous = http_get(addr, "/api/v1/kv", &[(header, value)]).await;
        assert_eq!(anonymous.status, 401, "{header}: {}", anonymous.body);
        // far-viewer may connect from 10.9.0.0/16 only.
        let far = basic("far-viewer", "far-secret-1");
        let response =
            http_get(addr, "/api/v1/kv", &[(header, value), ("Authorization", &far)]).await;
        assert_eq!(response.status, 403, "{header}: {}", response.body);
        assert!(response.body.contains("127.0.0.1"), "the TCP peer is named: {}", response.body);
    }
}

/// `rocketmq_namesrv_http_connections_refused_total{reason}` as `addr`'s `/metrics` shows it.
async fn http_refused(addr: SocketAddr, reason: &str) -> f64 {
    let text = http_get(addr, "/metrics", &[]).await.body;
    Scrape::parse(&text)
        .value("rocketmq_namesrv_http_connections_refused_total", &[("reason", reason)])
        .unwrap_or(0.0)
}

/// A nameserver whose HTTP listener is bound to `ip` (port 0).
async fn on_address(
    ip: IpAddr,
    dir: tempfile::TempDir,
    adjust: impl FnOnce(&mut Config),
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, tempfile::TempDir) {
    let mut config = Config {
        kv_config_path: dir.path().join("kvConfig.json").to_string_lossy().into_owned(),
        config_store_path: dir.path().join("namesrv.properties").to_string_lossy().into_owned(),
        ..Config::default()
    };
    adjust(&mut config);
    let daemon = daemon::Daemon::build(config).expect("server");
    let remoting = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let http = tokio::net::TcpListener::bind(SocketAddr::new(ip, 0)).await.expect("bind http");
    let addr = http.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listeners = daemon::Listeners { remoting, http: Some(http), controller: None };
    tokio::spawn(daemon.serve(listeners, async move {
        let _ = stopped.await;
    }));
    (addr, stop, dir)
}

/// This machine's first IPv4 address off the loopback interface, if it has one.
fn non_loopback_address() -> Option<IpAddr> {
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    probe.connect("192.0.2.1:9").ok()?;
    let ip = probe.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[tokio::test]
async fn credentials_over_plain_http_from_another_machine_are_refused() {
    let Some(ip) = non_loopback_address() else {
        eprintln!("no non-loopback address: covered by ops' plain_credentials unit test only");
        return;
    };
    let dir = tempfile::tempdir().expect("dir");
    let auth = with_auth("all", dir.path());
    let (addr, _stop, _dir) = on_address(ip, dir, auth).await;
    let viewer = basic("viewer", "viewer-secret-1");
    let with_credentials = http_get(addr, "/api/v1/kv", &[("Authorization", &viewer)]).await;
    assert_eq!(with_credentials.status, 403, "{}", with_credentials.body);
    assert!(
        with_credentials.body.contains("httpAllowPlainCredentials"),
        "{}",
        with_credentials.body
    );
    let anonymous = http_get(addr, "/api/v1/kv", &[]).await;
    assert_eq!(anonymous.status, 403, "no page asks for credentials in clear");
    assert_eq!(anonymous.header("www-authenticate"), None);
    assert_eq!(http_get(addr, "/healthz", &[]).await.status, 200);
    assert_eq!(http_refused(addr, "plain_credentials").await, 2.0);

    let dir = tempfile::tempdir().expect("dir");
    let auth = with_auth("all", dir.path());
    let (addr, _stop2, _dir2) = on_address(ip, dir, |c| {
        auth(c);
        c.http_allow_plain_credentials = true;
    })
    .await;
    let allowed = http_get(addr, "/api/v1/kv", &[("Authorization", &viewer)]).await;
    assert_eq!(allowed.status, 200, "httpAllowPlainCredentials=true: {}", allowed.body);
    assert_eq!(http_get(addr, "/api/v1/kv", &[]).await.status, 401);
}

/// Reads until the server closes the connection; how long since `start` (taken before the
/// connection was opened, so a task that first runs late never shortens it), `None` past
/// `limit`.
async fn closed_within(mut tcp: TcpStream, start: Instant, limit: Duration) -> Option<Duration> {
    let mut buf = [0u8; 512];
    loop {
        match tokio::time::timeout(limit.saturating_sub(start.elapsed()), tcp.read(&mut buf)).await
        {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(start.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn three_hundred_connections_with_unfinished_headers_are_closed_after_the_timeout() {
    let server = TestServer::start_with_http(|c| c.http_header_read_timeout_seconds = 1).await;
    let addr = server.http.expect("http");
    let mut waiting = Vec::new();
    for _ in 0..300 {
        let start = Instant::now();
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        tcp.write_all(b"GET /api/v1/overview HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .expect("write");
        waiting.push(tokio::spawn(closed_within(tcp, start, Duration::from_secs(10))));
    }
    // The listener keeps serving meanwhile.
    assert_eq!(server.get("/healthz").await.status, 200);
    let mut longest = Duration::ZERO;
    for task in waiting {
        let took = task.await.expect("task").expect("closed by the server within 10 s");
        assert!(took >= Duration::from_millis(900), "closed after {took:?}, before the timeout");
        longest = longest.max(took);
    }
    eprintln!("300 connections with unfinished headers: the last closed after {longest:?}");
    assert!(longest < Duration::from_secs(4), "{longest:?}");
    assert_eq!(http_refused(addr, "header_timeout").await, 300.0);
}

#[tokio::test]
async fn connections_beyond_the_cap_get_503_and_are_counted() {
    let server = TestServer::start_with_http(|c| c.http_max_connections = 4).await;
    let addr = server.http.expect("http");
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(TcpStream::connect(addr).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = TcpStream::connect(addr).await.expect("connect");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), extra.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    drop(idle);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(http_refused(addr, "max_connections").await, 1.0);
}

/// Opens an event stream; the status line of its answer.
async fn open_stream(addr: SocketAddr) -> (TcpStream, String) {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.write_all(format!("GET /api/v1/events/stream HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut buf = vec![0u8; 1024];
    let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf))
        .await
        .expect("an answer")
        .expect("read");
    let text = String::from_utf8_lossy(&buf[..n]).to_string();
    (tcp, text.lines().next().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn event_streams_beyond_the_cap_get_503_and_are_counted() {
    let server = TestServer::start_with_http(|c| c.http_max_event_streams = 2).await;
    let addr = server.http.expect("http");
    let (first, status) = open_stream(addr).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (_second, status) = open_stream(addr).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    let (_third, status) = open_stream(addr).await;
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    drop(first);
    // The closed stream's slot comes back once the server notices (its next keep-alive or
    // event); an event makes it write now.
    let mut conn = server.connect().await;
    conn.register(&Broker::new("C", "b", "127.0.0.1:10911", 0), &["T", "T1"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_again, status) = open_stream(addr).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(http_refused(addr, "max_event_streams").await, 1.0);
}

#[tokio::test]
async fn a_host_outside_the_allow_list_gets_421() {
    let server =
        TestServer::start_with_http(|c| c.http_allowed_hosts = Some("ns.example.com".into())).await;
    let addr = server.http.expect("http");
    let raw = |host: &'static str| async move {
        let mut tcp = TcpStream::connect(addr).await.expect("connect");
        tcp.write_all(format!("GET /api/v1/overview HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())
            .await
            .expect("write");
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer))
            .await
            .expect("answer")
            .expect("read");
        String::from_utf8_lossy(&answer).lines().next().unwrap_or_default().to_owned()
    };
    assert_eq!(raw("rebound.attacker.example:8080").await, "HTTP/1.0 421 Misdirected Request");
    assert_eq!(raw("ns.example.com:8080").await, "HTTP/1.0 200 OK");
    assert_eq!(raw("127.0.0.1:8080").await, "HTTP/1.0 200 OK");
    assert_eq!(http_refused(addr, "host").await, 1.0);
}

/// A new self-signed certificate for "localhost" in `dir` (`server.crt`, `server.key`).
fn write_cert(dir: &Path) -> rustls::pki_types::CertificateDer<'static> {
    use rustls::pki_types::pem::PemObject;
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    std::fs::write(dir.join("server.crt.tmp"), cert.cert.pem()).expect("write cert");
    std::fs::write(dir.join("server.key.tmp"), cert.signing_key.serialize_pem()).expect("key");
    std::fs::rename(dir.join("server.key.tmp"), dir.join("server.key")).expect("key");
    std::fs::rename(dir.join("server.crt.tmp"), dir.join("server.crt")).expect("cert");
    rustls::pki_types::CertificateDer::from_pem_slice(cert.cert.pem().as_bytes()).expect("der")
}

/// A TLS connection to `addr` trusting only `root`.
async fn https_connect(
    addr: SocketAddr,
    root: rustls::pki_types::CertificateDer<'static>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root).expect("root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await
}

#[tokio::test]
async fn https_serves_the_remoting_certificate_reloads_it_and_refuses_plain_http() {
    let dir = tempfile::tempdir().expect("dir");
    let der = write_cert(dir.path());
    let files = dir.path().to_owned();
    let (crt, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    let auth = with_auth("all", dir.path());
    let server = TestServer::start_in_with_http(dir, move |c| {
        auth(c);
        for (k, v) in [
            ("tls.server.mode", "permissive"),
            ("tls.test.mode.enable", "false"),
            ("tls.server.certPath", crt.to_str().expect("utf-8")),
            ("tls.server.keyPath", key.to_str().expect("utf-8")),
            ("tls.config.file", "/nonexistent/tls.properties"),
        ] {
            c.set_known(k, v).expect("tls key");
        }
        c.http_tls_enable = true;
    })
    .await;
    let addr = server.http.expect("http");
    let mut tls = https_connect(addr, der.clone())
        .await
        .expect("handshake with the remoting port's certificate");
    let viewer = basic("viewer", "viewer-secret-1");
    tls.write_all(
        format!("GET /api/v1/kv HTTP/1.0\r\nHost: localhost\r\nAuthorization: {viewer}\r\n\r\n")
            .as_bytes(),
    )
    .await
    .expect("write");
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.0 200 OK"), "{answer}");

    let plain = http_get(addr, "/healthz", &[]).await;
    assert_eq!(plain.status, 400, "plain HTTP on the HTTPS listener: {}", plain.body);
    assert!(plain.body.contains("HTTPS only"), "{}", plain.body);

    // The remoting port's certificate is replaced: new HTTPS connections get the new one.
    let renewed = write_cert(&files);
    let deadline = Instant::now() + Duration::from_secs(15);
    while https_connect(addr, renewed.clone()).await.is_err() {
        assert!(Instant::now() < deadline, "the HTTP listener never served the new certificate");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(https_connect(addr, der).await.is_err(), "the old certificate is no longer served");
}
