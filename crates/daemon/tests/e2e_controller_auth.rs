//! The controller port under the nameserver's rules (#21, finding 6), over real sockets: with
//! `authenticationEnabled`, reads need `reader`, a broker's requests `broker` and ownership of
//! the group they name, and config changes, metadata cleaning and an operator's election
//! `admin` — refusals answer NO_PERMISSION with the nameserver's remarks and change nothing;
//! `tls.server.mode=enforcing` closes a plaintext connection and serves TLS; and the embedded
//! controller shares the nameserver's failure window: a guesser blocked on the nameserver's
//! port is blocked on the controller's.

mod common;

use std::sync::Arc;
use std::time::Duration;

use client::{Client, ClientConfig, Credentials};
use common::controllers::{ctl, Standalone};
use common::{request, write_accounts, Conn, RawConn, TestServer};
use futures::{SinkExt, StreamExt};
use remoting::headers::{CleanControllerBrokerDataRequestHeader, ElectMasterRequestHeader};
use remoting::{RemotingCodec, RemotingCommand, RequestCode as C};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio_util::codec::Framed;

const ACCOUNTS: &str = r#"
accounts:
  - {accessKey: ops, secretKey: "ops-secret-1", role: admin}
  - {accessKey: viewer, secretKey: "viewer-secret", role: reader}
  - {accessKey: broker-a, secretKey: "broker-a-secret", role: broker, brokerNames: [bn-a]}
"#;
const NO_PERMISSION: i32 = 16;
const LIMIT: Duration = Duration::from_secs(10);

fn signed(mut request: RemotingCommand, key: &str, secret: &str) -> RemotingCommand {
    Credentials::new(key, secret).sign(&mut request);
    request
}

fn signing_client(addr: &str, key: &str, secret: &str) -> Client {
    let config = ClientConfig {
        request_timeout: LIMIT,
        credentials: Some(Credentials::new(key, secret)),
        ..ClientConfig::default()
    };
    Client::with_config(addr, config).expect("client")
}

fn group_request(code: C, name: &str) -> RemotingCommand {
    request(code, &[("clusterName", ctl::CLUSTER), ("brokerName", name), ("brokerId", "1")], None)
}

fn elect(name: &str, designate: bool) -> RemotingCommand {
    let header = ElectMasterRequestHeader {
        cluster_name: Some(ctl::CLUSTER.into()),
        broker_name: Some(name.into()),
        broker_id: Some(1),
        designate_elect: Some(designate),
        invoke_time: Some(1),
    };
    RemotingCommand::request(C::ControllerElectMaster).with_header(&header)
}

fn clean(name: &str, ids: &str) -> RemotingCommand {
    let header = CleanControllerBrokerDataRequestHeader {
        cluster_name: Some(ctl::CLUSTER.into()),
        broker_name: Some(name.into()),
        broker_controller_ids_to_clean: Some(ids.into()),
        is_clean_living_broker: Some(false),
        invoke_time: Some(1),
    };
    RemotingCommand::request(C::CleanBrokerData).with_header(&header)
}

/// The group's replica info as the admin reads it.
async fn tables(conn: &mut Conn, name: &str) -> Vec<u8> {
    let read = request(C::ControllerGetReplicaInfo, &[("brokerName", name)], None);
    conn.call(signed(read, "ops", "ops-secret-1")).await.body_bytes().to_vec()
}

async fn secured_controller(mode: &str) -> (Standalone, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    write_accounts(&accounts, ACCOUNTS);
    let path = accounts.to_string_lossy().into_owned();
    let keys = [
        ("authenticationEnabled", "true"),
        ("authConfigPath", path.as_str()),
        ("authenticationMode", mode),
    ];
    (Standalone::start_with("secured", &keys).await, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_role_gets_exactly_its_controller_requests() {
    let (controller, _dir) = secured_controller("all").await;
    let addr: std::net::SocketAddr = controller.addr.parse().expect("addr");
    // The broker's own flow (ids, apply, register) works signed as its account.
    let broker_a = signing_client(&controller.addr, "broker-a", "broker-a-secret");
    let solo = ctl::Solo(controller.addr.clone());
    let registered = ctl::Broker::register(&solo, &broker_a, "bn-a", "127.0.0.1:30911").await;
    let mut conn = Conn::connect(addr).await;
    let before = tables(&mut conn, "bn-a").await;

    // Reads: an account of any role; unsigned refused in authenticationMode=all.
    let metadata = request(C::ControllerGetMetadataInfo, &[], None);
    let resp = conn.call(metadata.clone()).await;
    assert_eq!(resp.code, NO_PERMISSION, "{:?}", resp.remark);
    assert!(resp.remark.as_deref().unwrap_or("").contains("must be signed"), "{:?}", resp.remark);
    let resp = conn.call(signed(metadata.clone(), "viewer", "viewer-secret")).await;
    assert_eq!(resp.code, 0, "a reader reads: {:?}", resp.remark);
    let resp = conn
        .call(signed(request(C::GetControllerConfig, &[], None), "viewer", "viewer-secret"))
        .await;
    assert_eq!(resp.code, 0, "a reader reads the config: {:?}", resp.remark);

    // A reader changes nothing.
    let update = request(C::UpdateControllerConfig, &[], Some(b"enableElectUncleanMaster=true"));
    for attempt in [
        elect("bn-a", false),
        elect("bn-a", true),
        clean("bn-a", "1"),
        update.clone(),
        group_request(C::ControllerGetNextBrokerId, "bn-a"),
    ] {
        let code = attempt.code;
        let resp = conn.call(signed(attempt, "viewer", "viewer-secret")).await;
        assert_eq!(resp.code, NO_PERMISSION, "reader sending {code}");
        assert!(
            resp.remark.as_deref().unwrap_or("").contains("role reader may not"),
            "{:?}",
            resp.remark
        );
    }

    // A broker account acts for its own group only, and never as an operator.
    for attempt in [
        group_request(C::ControllerGetNextBrokerId, "bn-b"),
        group_request(C::ControllerApplyBrokerId, "bn-b"),
        group_request(C::ControllerRegisterBroker, "bn-b"),
        request(
            C::ControllerAlterSyncStateSet,
            &[("brokerName", "bn-b"), ("masterBrokerId", "1"), ("masterEpoch", "1")],
            Some(b"{}"),
        ),
        elect("bn-b", false),
    ] {
        let code = attempt.code;
        let resp = conn.call(signed(attempt, "broker-a", "broker-a-secret")).await;
        assert_eq!(resp.code, NO_PERMISSION, "broker-a sending {code} for bn-b");
        assert!(resp.remark.as_deref().unwrap_or("").contains("\"bn-b\""), "{:?}", resp.remark);
    }
    for attempt in [elect("bn-a", true), clean("bn-a", "1"), update.clone()] {
        let code = attempt.code;
        let resp = conn.call(signed(attempt, "broker-a", "broker-a-secret")).await;
        assert_eq!(resp.code, NO_PERMISSION, "broker-a sending {code}");
        assert!(
            resp.remark.as_deref().unwrap_or("").contains("role broker may not"),
            "{:?}",
            resp.remark
        );
    }
    assert_eq!(tables(&mut conn, "bn-a").await, before, "nothing refused changed the tables");
    let resp = conn.call(signed(elect("bn-a", false), "broker-a", "broker-a-secret")).await;
    assert_eq!(
        resp.code, 0,
        "a broker may ask for an election of its own group: {:?}",
        resp.remark
    );
    let elected = tables(&mut conn, "bn-a").await;
    assert_ne!(elected, before, "and it was applied");

    // An admin may clean the group's metadata.
    let resp =
        conn.call(signed(clean("bn-a", &registered.id.to_string()), "ops", "ops-secret-1")).await;
    assert_eq!(resp.code, 0, "admin cleans: {:?}", resp.remark);
    assert_ne!(tables(&mut conn, "bn-a").await, elected, "the clean was applied");
    // No account, whatever its role, may switch access control off over the wire.
    let off = request(C::UpdateControllerConfig, &[], Some(b"authenticationEnabled=false"));
    let resp = conn.call(signed(off, "ops", "ops-secret-1")).await;
    assert_ne!(resp.code, 0, "authenticationEnabled is black-listed for 1009");
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_stay_open_in_writes_mode_and_writes_do_not() {
    let (controller, _dir) = secured_controller("writes").await;
    let mut conn = Conn::connect(controller.addr.parse().expect("addr")).await;
    let resp = conn.call(request(C::ControllerGetMetadataInfo, &[], None)).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let resp = conn.call(clean("bn-a", "1")).await;
    assert_eq!(resp.code, NO_PERMISSION, "{:?}", resp.remark);
    let resp = conn.call(elect("bn-a", false)).await;
    assert_eq!(resp.code, NO_PERMISSION, "an unsigned election: {:?}", resp.remark);
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcing_controller_port_refuses_plaintext_and_serves_tls() {
    let dir = tempfile::tempdir().expect("dir");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    let (crt, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    std::fs::write(&crt, cert.cert.pem()).expect("write cert");
    std::fs::write(&key, cert.signing_key.serialize_pem()).expect("write key");
    let (crt_s, key_s) = (crt.to_string_lossy().into_owned(), key.to_string_lossy().into_owned());
    let keys = [
        ("tls.server.mode", "enforcing"),
        ("tls.test.mode.enable", "false"),
        ("tls.server.certPath", crt_s.as_str()),
        ("tls.server.keyPath", key_s.as_str()),
        ("tls.config.file", "/nonexistent/tls.properties"),
    ];
    let controller = Standalone::start_with("tls", &keys).await;
    let addr: std::net::SocketAddr = controller.addr.parse().expect("addr");

    let mut plain = RawConn::connect(addr).await;
    plain.send(&request(C::ControllerGetMetadataInfo, &[], None)).await;
    assert!(plain.is_closed_by_server().await, "plaintext is closed on an enforcing port");

    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(cert.cert.pem().as_bytes()).expect("der"))
        .expect("root");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let tls = tokio::time::timeout(
        LIMIT,
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp),
    )
    .await
    .expect("handshake in time")
    .expect("handshake");
    let mut framed = Framed::new(tls, RemotingCodec::new());
    let mut req = request(C::ControllerGetMetadataInfo, &[], None);
    req.opaque = 7;
    framed.send(req).await.expect("send");
    let resp = tokio::time::timeout(LIMIT, framed.next())
        .await
        .expect("in time")
        .expect("frame")
        .expect("decoded");
    assert_eq!((resp.opaque, resp.code), (7, 0), "served over TLS: {:?}", resp.remark);
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guesser_blocked_on_the_nameserver_port_is_blocked_on_the_embedded_controller_port() {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    write_accounts(&accounts, ACCOUNTS);
    let path = accounts.to_string_lossy().into_owned();
    let server = TestServer::start_with_controller(move |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(path);
    })
    .await;
    let controller = server.controller.expect("embedded controller");
    let mut ns = server.connect().await;
    let mut ctrl = Conn::connect(controller).await;
    // The controller port checks like the nameserver's: an unsigned clean is refused.
    let resp = ctrl.call(clean("bn-a", "1")).await;
    assert_eq!(resp.code, NO_PERMISSION, "{:?}", resp.remark);
    let put =
        || request(C::PutKvConfig, &[("namespace", "ns"), ("key", "k"), ("value", "v")], None);
    for _ in 0..acl::FAILURE_LIMIT {
        let resp = ns.call(signed(put(), "ops", "guess")).await;
        assert_eq!(resp.code, NO_PERMISSION);
    }
    let resp = ctrl.call(signed(clean("bn-a", "1"), "ops", "ops-secret-1")).await;
    assert_eq!(resp.code, NO_PERMISSION, "blocked on the controller port too");
    assert!(
        resp.remark.as_deref().unwrap_or("").contains("too many failed attempts"),
        "{:?}",
        resp.remark
    );
    // Another account from the same address is unaffected on both ports.
    let resp = ctrl
        .call(signed(request(C::ControllerGetMetadataInfo, &[], None), "viewer", "viewer-secret"))
        .await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let auth = server.state.access.auth.as_ref().expect("gate");
    assert_eq!(auth.counters.refused_count(acl::Reason::RateLimited), 1, "one count, one gate");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_controllers_metrics_count_its_accepted_and_refused_requests() {
    let (controller, _dir) = secured_controller("writes").await;
    let mut conn = Conn::connect(controller.addr.parse().expect("addr")).await;
    for _ in 0..2 {
        assert_eq!(conn.call(clean("bn-a", "1")).await.code, NO_PERMISSION, "unsigned");
    }
    let by_reader = conn.call(signed(clean("bn-a", "1"), "viewer", "viewer-secret")).await;
    assert_eq!(by_reader.code, NO_PERMISSION, "a reader cleans nothing");
    let by_admin = conn.call(signed(clean("bn-a", "1"), "ops", "ops-secret-1")).await;
    assert_ne!(by_admin.code, NO_PERMISSION, "the admin is admitted: {:?}", by_admin.remark);

    let scrape = common::http_get(controller.http, "/metrics", &[]).await;
    assert_eq!(scrape.status, 200);
    let scrape = common::Scrape::parse(&scrape.body);
    let refused =
        |reason| scrape.value("rocketmq_controller_auth_refused_total", &[("reason", reason)]);
    assert_eq!(refused("no_signature"), Some(2.0), "{}", "unsigned refusals");
    assert_eq!(refused("role_denied"), Some(1.0));
    assert_eq!(refused("bad_signature"), Some(0.0));
    let accepted = scrape.value("rocketmq_controller_auth_accepted_total", &[("how", "signature")]);
    assert_eq!(accepted, Some(1.0));
    controller.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controllers_failure_window_is_auth_failure_window_seconds() {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    write_accounts(&accounts, ACCOUNTS);
    let path = accounts.to_string_lossy().into_owned();
    let keys = [
        ("authenticationEnabled", "true"),
        ("authConfigPath", path.as_str()),
        ("authFailureWindowSeconds", "1"),
    ];
    let controller = Standalone::start_with("window", &keys).await;
    let mut conn = Conn::connect(controller.addr.parse().expect("addr")).await;
    let started = tokio::time::Instant::now();
    for _ in 0..10 {
        conn.call(clean("bn-a", "1")).await;
    }
    let blocked = conn.call(clean("bn-a", "1")).await;
    let remark = blocked.remark.unwrap_or_default();
    assert!(remark.contains("too many failed attempts"), "the eleventh is blocked: {remark}");
    // Well within the default 60 s window, but past this one: the pair is free again.
    tokio::time::sleep_until(started + Duration::from_millis(1500)).await;
    let after = conn.call(clean("bn-a", "1")).await.remark.unwrap_or_default();
    assert!(after.contains("must be signed"), "the window ended after 1 s: {after}");
    controller.stop().await;

    let mut c = controller::Config::default();
    c.set_known("authFailureWindowSeconds", "0").expect("a known key");
    let err = c.validate();
    assert!(err.expect_err("0 s").to_string().contains("authFailureWindowSeconds"));
    assert!(c.black_list().contains("authFailureWindowSeconds"), "1009 may not change it");
}
