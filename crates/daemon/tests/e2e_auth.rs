//! Access control end to end over TCP: with `authenticationEnabled=true` an unsigned, wrongly
//! signed, out-of-place or out-of-role write is refused with NO_PERMISSION and changes nothing
//! (the KV file, the route tables and the config are byte-for-byte as before); a correctly
//! signed one succeeds; reads stay open in `writes` mode and need an account in `all` mode,
//! on the in-place route path too; failures are rate-limited; the accounts file is reloaded;
//! and refusals are refused by an accounts file hot-reloaded without a restart. (The audit
//! trail is checked in `e2e_audit.rs`, a binary of its own: `tracing` caches a callsite's
//! interest process-wide.)

mod common;

use std::path::Path;
use std::time::Duration;

use common::{body_text, request, Broker, Conn, TestServer};
use namesrv::config::AuthMode;
use remoting::signature::Credentials;
use remoting::{RemotingCommand, RequestCode};

const ACCOUNTS: &str = r#"
accounts:
  - {accessKey: ops, secretKey: "ops-secret-1", role: admin}
  - {accessKey: broker-a, secretKey: "broker-secret-1", role: broker}
  - {accessKey: viewer, secretKey: "viewer-secret-1", role: reader}
  - {accessKey: far-away, secretKey: "far-secret-1", role: admin, whiteRemoteAddress: 192.0.2.0/24}
"#;

const NO_PERMISSION: i32 = 16;

fn write_accounts(path: &Path, text: &str) {
    std::fs::write(path, text).expect("accounts file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
}

async fn enforcing(mode: AuthMode) -> TestServer {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    write_accounts(&accounts, ACCOUNTS);
    TestServer::start_in(dir, |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(accounts.to_string_lossy().into_owned());
        c.authentication_mode = Some(mode.as_str().into());
    })
    .await
}

fn signed(mut request: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    Credentials::new(access_key, secret).sign(&mut request);
    request
}

fn as_ops(request: RemotingCommand) -> RemotingCommand {
    signed(request, "ops", "ops-secret-1")
}

fn as_broker(request: RemotingCommand) -> RemotingCommand {
    signed(request, "broker-a", "broker-secret-1")
}

fn put_kv(key: &str, value: &str) -> RemotingCommand {
    request(RequestCode::PutKvConfig, &[("namespace", "NS"), ("key", key), ("value", value)], None)
}

fn broker_a() -> Broker {
    Broker::new("DefaultCluster", "broker-a", "127.0.0.1:10911", 0)
}

/// Everything a refused write could have changed, as bytes.
#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    kv_file: Vec<u8>,
    cluster_info: Vec<u8>,
    route: Vec<u8>,
    config: String,
}

async fn snapshot(server: &TestServer, conn: &mut Conn) -> Snapshot {
    let cluster = as_ops(request(RequestCode::GetBrokerClusterInfo, &[], None));
    let route = as_ops(request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicA")], None));
    let config = as_ops(request(RequestCode::GetNamesrvConfig, &[], None));
    Snapshot {
        kv_file: std::fs::read(server.dir.path().join("kvConfig.json")).expect("kv file"),
        cluster_info: conn.call(cluster).await.body_bytes().to_vec(),
        route: conn.call(route).await.body_bytes().to_vec(),
        config: body_text(&conn.call(config).await),
    }
}

fn assert_refused(response: &RemotingCommand, remark: &str) {
    assert_eq!(response.code, NO_PERMISSION, "{:?}", response.remark);
    let got = response.remark.as_deref().unwrap_or_default();
    assert!(got.starts_with("access denied: ") && got.contains(remark), "{got}");
}

/// A signed registration of broker-a with TopicA (and TopicA2: a first registration of a
/// single topic is refused, like Java) and a KV entry, through the server.
async fn seed(conn: &mut Conn) {
    let resp = conn.call(as_broker(broker_a().register(&["TopicA", "TopicA2"]))).await;
    assert_eq!(resp.code, 0, "signed registration: {:?}", resp.remark);
    let resp = conn.call(as_ops(put_kv("k1", "v1"))).await;
    assert_eq!(resp.code, 0, "signed put: {:?}", resp.remark);
}

#[tokio::test]
async fn unsigned_writes_are_refused_and_change_nothing_while_unsigned_reads_succeed() {
    let server = enforcing(AuthMode::Writes).await;
    let mut conn = server.connect().await;
    seed(&mut conn).await;
    let before = snapshot(&server, &mut conn).await;

    let intruder = Broker::new("DefaultCluster", "broker-x", "127.0.0.1:20911", 0);
    let writes = [
        put_kv("k1", "overwritten"),
        request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None),
        request(RequestCode::UpdateNamesrvConfig, &[], Some(b"orderMessageEnable=true\n")),
        intruder.register(&["TopicA", "TopicX"]),
        request(RequestCode::DeleteTopicInNamesrv, &[("topic", "TopicA")], None),
    ];
    for write in writes {
        let code = write.code;
        let resp = conn.call(write).await;
        assert_refused(&resp, &format!("request code {code} must be signed"));
    }
    assert_eq!(snapshot(&server, &mut conn).await, before, "nothing applied");

    // Reads stay open without a signature, the in-place route path included.
    let route = conn.route("TopicA").await.expect("unsigned route read");
    assert_eq!(route.broker_datas.len(), 1);
    let kv = conn
        .call(request(RequestCode::GetKvConfig, &[("namespace", "NS"), ("key", "k1")], None))
        .await;
    assert_eq!((kv.code, kv.ext("value")), (0, Some("v1")));
}

#[tokio::test]
async fn signed_writes_of_an_allowed_role_succeed() {
    let server = enforcing(AuthMode::Writes).await;
    let mut conn = server.connect().await;
    seed(&mut conn).await;
    let wipe = request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None);
    let resp = conn.call(as_ops(wipe)).await;
    assert_eq!((resp.code, resp.ext("wipeTopicCount")), (0, Some("2")), "{:?}", resp.remark);
    let route = conn.route("TopicA").await.expect("route");
    assert_eq!(route.queue_datas[0].perm & 2, 0, "write permission wiped");
    let resp = conn
        .call(as_ops(request(
            RequestCode::UpdateNamesrvConfig,
            &[],
            Some(b"orderMessageEnable=true\n"),
        )))
        .await;
    assert_eq!(resp.code, 0);
    let config = body_text(&conn.call(request(RequestCode::GetNamesrvConfig, &[], None)).await);
    assert!(config.contains("orderMessageEnable=true"), "{config}");
    // A broker account may register but an admin may too (admin grants everything).
    let b = Broker::new("DefaultCluster", "broker-b", "127.0.0.1:30911", 0);
    assert_eq!(conn.call(as_ops(b.register(&["TopicB", "TopicB2"]))).await.code, 0);
}

#[tokio::test]
async fn wrong_secret_changed_body_foreign_address_and_reader_writes_are_refused() {
    let server = enforcing(AuthMode::Writes).await;
    let mut conn = server.connect().await;
    seed(&mut conn).await;
    let before = snapshot(&server, &mut conn).await;

    let resp = conn.call(signed(put_kv("k1", "x"), "ops", "ops-secret-2")).await;
    assert_refused(&resp, "signature mismatch");

    // A registration signed for one body, replayed with another topic table.
    let mut replayed = as_broker(broker_a().register(&["TopicA"]));
    replayed.body =
        Some(common::register_body(&["TopicA", "TopicEvil"], common::data_version(2)).into());
    assert_refused(&conn.call(replayed).await, "signature mismatch");

    let resp = conn.call(signed(put_kv("k1", "x"), "far-away", "far-secret-1")).await;
    assert_refused(&resp, "this account may not connect from 127.0.0.1");

    let resp = conn.call(signed(put_kv("k1", "x"), "viewer", "viewer-secret-1")).await;
    assert_refused(&resp, "role reader may not send request code 100");
    let wipe = request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None);
    assert_refused(&conn.call(as_broker(wipe)).await, "role broker may not send request code 205");

    let resp = conn.call(signed(put_kv("k1", "x"), "nobody", "whatever")).await;
    assert_refused(&resp, "unknown access key");

    assert_eq!(snapshot(&server, &mut conn).await, before, "nothing applied");
    assert!(conn.route("TopicEvil").await.is_none());
}

/// A RocketMQ signature covers the ext-field values and the body, not the request code (#21,
/// finding 8): a reader's signed GET_KV_CONFIG resent as DELETE_KV_CONFIG still verifies, and
/// it is the role rule that refuses it.
#[tokio::test]
async fn a_readers_signed_get_resent_as_a_delete_is_refused_by_its_role() {
    let server = enforcing(AuthMode::All).await;
    let mut conn = server.connect().await;
    seed(&mut conn).await;
    let get = request(RequestCode::GetKvConfig, &[("namespace", "NS"), ("key", "k1")], None);
    let mut get = signed(get, "viewer", "viewer-secret-1");
    assert_eq!(conn.call(get.clone()).await.code, 0, "the signed read is served");
    get.code = RequestCode::DeleteKvConfig.to_i32();
    let resp = conn.call(get).await;
    assert_refused(&resp, "role reader may not send request code 102");
    let kv = std::fs::read_to_string(server.dir.path().join("kvConfig.json")).expect("kv file");
    assert!(kv.contains("k1"), "not deleted: {kv}");
}

#[tokio::test]
async fn a_refused_oneway_unregistration_is_not_applied() {
    let server = enforcing(AuthMode::Writes).await;
    let mut conn = server.connect().await;
    seed(&mut conn).await;
    let b = Broker::new("DefaultCluster", "broker-b", "127.0.0.1:30911", 0);
    assert_eq!(conn.call(as_broker(b.register(&["TopicB", "TopicB2"]))).await.code, 0);

    let mut unsigned = broker_a().request(RequestCode::UnregisterBroker, None);
    unsigned.set_oneway(true);
    conn.send(unsigned).await;
    let mut allowed = as_broker(b.request(RequestCode::UnregisterBroker, None));
    allowed.set_oneway(true);
    conn.send(allowed).await;
    // Unregistrations are applied in queue order: once broker-b's is, broker-a's would be too.
    conn.wait_for_route("TopicB", "broker-b unregistered", |r| r.is_none()).await;
    assert!(conn.route("TopicA").await.is_some(), "broker-a is still registered");
}

#[tokio::test]
async fn all_mode_refuses_unsigned_reads_on_every_path_and_serves_any_account() {
    let server = enforcing(AuthMode::All).await;
    let mut conn = server.connect().await;
    seed(&mut conn).await;
    let route = request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicA")], None);
    assert_refused(&conn.call(route.clone()).await, "request code 105 must be signed");
    let legacy = RemotingCommand { version: 300, ..route.clone() };
    assert_refused(&conn.call(legacy).await, "request code 105 must be signed");
    let cluster = request(RequestCode::GetBrokerClusterInfo, &[], None);
    assert_refused(&conn.call(cluster).await, "request code 106 must be signed");

    let as_viewer = conn.call(signed(route.clone(), "viewer", "viewer-secret-1")).await;
    assert_eq!(as_viewer.code, 0);
    let as_ops = conn.call(as_ops(route.clone())).await;
    assert_eq!(as_viewer.body, as_ops.body, "the same route for every account");
    let wrong = conn.call(signed(route, "viewer", "viewer-secret-2")).await;
    assert_refused(&wrong, "signature mismatch");
}

#[tokio::test]
async fn repeated_failures_from_an_address_are_refused_without_checking() {
    let server = enforcing(AuthMode::Writes).await;
    let mut conn = server.connect().await;
    for i in 0..acl::FAILURE_LIMIT {
        let guess = signed(put_kv("k", "v"), "ops", &format!("guess-{i}"));
        assert_refused(&conn.call(guess).await, "signature mismatch");
    }
    let right = as_ops(put_kv("k", "v"));
    assert_refused(&conn.call(right).await, "too many failed attempts from 127.0.0.1");
    let open = conn.route("TopicA").await;
    assert!(open.is_none(), "open reads still answered (TOPIC_NOT_EXIST)");
}

#[tokio::test]
async fn an_edited_accounts_file_is_put_in_force_without_a_restart() {
    let server = enforcing(AuthMode::Writes).await;
    let path = server.dir.path().join("auth.yml");
    let mut conn = server.connect().await;
    let newcomer = || signed(put_kv("k", "v"), "newcomer", "newcomer-secret");
    assert_refused(&conn.call(newcomer()).await, "unknown access key");
    let edited =
        format!("{ACCOUNTS}  - {{accessKey: newcomer, secretKey: newcomer-secret, role: admin}}\n");
    write_accounts(&path, &edited);
    // The reloader polls every 500 ms: poll for the outcome with a generous bound.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let resp = conn.call(newcomer()).await;
        if resp.code == 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never reloaded: {:?}", resp.remark);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_missing_or_broken_accounts_file_stops_start_up_naming_the_key() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("auth.yml");
    let config = |path: &Path| namesrv::Config {
        kv_config_path: dir.path().join("kv.json").to_string_lossy().into_owned(),
        authentication_enabled: Some(true),
        auth_config_path: Some(path.to_string_lossy().into_owned()),
        ..namesrv::Config::default()
    };
    let err = daemon::Daemon::build(config(&path)).map(drop).expect_err("missing file");
    assert!(err.to_string().contains("authConfigPath"), "{err}");
    write_accounts(&path, "accounts: [{accessKey: a, secretKey: 1234, role: admin}]");
    let err = daemon::Daemon::build(config(&path)).map(drop).expect_err("a numeric secret");
    assert!(
        err.to_string().contains("authConfigPath") && err.to_string().contains("quotes"),
        "{err}"
    );
}

#[tokio::test]
async fn the_metrics_scrape_counts_accepted_and_refused_requests_by_reason() {
    let accounts_dir = tempfile::tempdir().expect("dir");
    let path = accounts_dir.path().join("auth.yml");
    write_accounts(&path, ACCOUNTS);
    let server = TestServer::start_with_http(|c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(path.to_string_lossy().into_owned());
    })
    .await;
    let mut conn = server.connect().await;
    assert_eq!(conn.call(as_ops(put_kv("k", "v"))).await.code, 0);
    assert_eq!(conn.call(as_ops(put_kv("k", "w"))).await.code, 0);
    assert_refused(&conn.call(put_kv("k", "x")).await, "must be signed");
    assert_refused(&conn.call(signed(put_kv("k", "x"), "ops", "nope")).await, "signature mismatch");
    let scrape = common::Scrape::parse(&server.get("/metrics").await.body);
    let value = |name: &str, key: &str, label: &str| scrape.value(name, &[(key, label)]);
    assert_eq!(value("rocketmq_namesrv_auth_accepted_total", "how", "signature"), Some(2.0));
    assert_eq!(value("rocketmq_namesrv_auth_refused_total", "reason", "no_signature"), Some(1.0));
    assert_eq!(value("rocketmq_namesrv_auth_refused_total", "reason", "bad_signature"), Some(1.0));
    assert_eq!(value("rocketmq_namesrv_auth_refused_total", "reason", "role_denied"), Some(0.0));
}
