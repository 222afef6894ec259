//! The audit trail end to end: an accepted signed write is logged to the `audit` target with
//! who, from where, the request and what it touched, and its result; a refusal with its reason;
//! never a secret. (Its own test binary: `tracing` caches a callsite's interest process-wide,
//! so a parallel test hitting the same callsites first could hide them from this subscriber.)

mod common;

use common::captured::Captured;
use common::{request, TestServer};
use namesrv::config::AuthMode;
use remoting::signature::Credentials;
use remoting::{RemotingCommand, RequestCode};

fn put_kv(key: &str, value: &str) -> RemotingCommand {
    request(RequestCode::PutKvConfig, &[("namespace", "NS"), ("key", key), ("value", value)], None)
}

fn as_ops(mut request: RemotingCommand) -> RemotingCommand {
    Credentials::new("ops", "ops-secret-1").sign(&mut request);
    request
}

async fn enforcing(accounts: &str) -> TestServer {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("auth.yml");
    std::fs::write(&path, accounts).expect("accounts");
    TestServer::start_in(dir, |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(path.to_string_lossy().into_owned());
        c.authentication_mode = Some(AuthMode::Writes.as_str().into());
    })
    .await
}

#[tokio::test(flavor = "current_thread")]
async fn accepted_writes_and_refusals_leave_an_audit_trail_without_secrets() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber("audit=info"));
    let server =
        enforcing("accounts: [{accessKey: ops, secretKey: ops-secret-1, role: admin}]").await;
    let mut conn = server.connect().await;
    assert_eq!(conn.call(as_ops(put_kv("audited-key", "v"))).await.code, 0);
    assert_eq!(conn.call(put_kv("audited-key", "w")).await.code, 16);
    let update = request(RequestCode::UpdateNamesrvConfig, &[], Some(b"orderMessageEnable=true\n"));
    assert_eq!(conn.call(as_ops(update)).await.code, 0);
    drop(conn);
    drop(server);

    let text = captured.text();
    let accepted = text
        .lines()
        .find(|l| l.contains("key=\"audited-key\"") && l.contains("accepted"))
        .expect(&text);
    for part in [
        " audit:",
        "who=account:ops",
        "peer=127.0.0.1:",
        "code=100",
        "namespace=\"NS\"",
        "result=0",
    ] {
        assert!(accepted.contains(part), "{part} in {accepted}");
    }
    let refused = text.lines().find(|l| l.contains("refused")).expect(&text);
    assert!(
        refused.contains("reason=\"no_signature\"") || refused.contains("reason=no_signature"),
        "{refused}"
    );
    let config = text.lines().find(|l| l.contains("code=318")).expect(&text);
    assert!(config.contains("config_keys=\"orderMessageEnable\""), "{config}");
    assert!(!config.contains("topic="), "absent fields are left out: {config}");
    assert!(!text.contains("ops-secret-1"), "{text}");
}
