//! Lock-outs only for the guesser, end to end over TCP (#21, finding 3): failures are counted
//! per (client address, access key — or unsigned, or unknown keys), so one client failing a
//! thousand times from 127.0.0.1 unsigned and with unknown keys blocks neither a signing admin
//! nor a signing broker on 127.0.0.1, while a client guessing a third account's secret has that
//! account blocked at that address after ten failures — refused even with the right secret —
//! until the window (`authFailureWindowSeconds`, 2 s here) ends.

mod common;

use std::time::{Duration, Instant};

use common::{request, Broker, TestServer};
use namesrv::config::AuthMode;
use remoting::signature::Credentials;
use remoting::{RemotingCommand, RequestCode};

const ACCOUNTS: &str = r#"
accounts:
  - {accessKey: ops, secretKey: "ops-secret-1", role: admin}
  - {accessKey: broker-a, secretKey: "broker-secret-1", role: broker}
  - {accessKey: victim, secretKey: "victim-secret-1", role: admin}
"#;

const WINDOW_SECS: i64 = 2;

async fn enforcing() -> TestServer {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    std::fs::write(&accounts, ACCOUNTS).expect("accounts file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(&accounts, private).expect("chmod");
    }
    TestServer::start_in(dir, |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(accounts.to_string_lossy().into_owned());
        c.authentication_mode = Some(AuthMode::Writes.as_str().into());
        c.auth_failure_window_seconds = Some(WINDOW_SECS);
    })
    .await
}

fn signed(mut request: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    Credentials::new(access_key, secret).sign(&mut request);
    request
}

fn put_kv(key: &str) -> RemotingCommand {
    request(RequestCode::PutKvConfig, &[("namespace", "NS"), ("key", key), ("value", "v")], None)
}

fn remark(response: &RemotingCommand) -> &str {
    response.remark.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn unsigned_and_unknown_key_failures_block_no_signing_account_at_the_same_address() {
    let server = enforcing().await;
    let (mut attacker, mut ops, mut broker) =
        (server.connect().await, server.connect().await, server.connect().await);
    let broker_a = Broker::new("DefaultCluster", "broker-a", "127.0.0.1:10911", 0);
    let mut blocked = 0;
    for i in 0..1000 {
        let attempt = if i % 2 == 0 {
            put_kv("attacked")
        } else {
            signed(put_kv("attacked"), &format!("nobody-{i}"), "guess")
        };
        let refused = attacker.call(attempt).await;
        assert_eq!(refused.code, 16, "attempt {i}: {:?}", refused.remark);
        blocked += usize::from(remark(&refused).contains("too many failed attempts"));
        if i % 100 == 99 {
            let put = ops.call(signed(put_kv(&format!("ops-{i}")), "ops", "ops-secret-1")).await;
            assert_eq!(put.code, 0, "the admin after {} failures: {:?}", i + 1, put.remark);
            let register =
                signed(broker_a.register(&["TopicA", "TopicB"]), "broker-a", "broker-secret-1");
            let registered = broker.call(register).await;
            assert_eq!(
                registered.code,
                0,
                "the broker after {} failures: {:?}",
                i + 1,
                registered.remark
            );
        }
    }
    assert_eq!(
        blocked,
        1000 - 2 * acl::FAILURE_LIMIT as usize,
        "unsigned and unknown keys blocked"
    );
    assert_eq!(server.state.kv.get("NS", "attacked"), None);
    assert_eq!(server.state.kv.get("NS", "ops-999").as_deref(), Some("v"));
}

#[tokio::test]
async fn a_guessed_account_is_blocked_at_that_address_until_the_window_ends() {
    let server = enforcing().await;
    let (mut guesser, mut ops) = (server.connect().await, server.connect().await);
    let started = Instant::now();
    for i in 0..acl::FAILURE_LIMIT {
        let guess = guesser.call(signed(put_kv("guessed"), "victim", &format!("guess-{i}"))).await;
        assert!(remark(&guess).contains("signature mismatch"), "{:?}", guess.remark);
    }
    let right = guesser.call(signed(put_kv("guessed"), "victim", "victim-secret-1")).await;
    assert_eq!(right.code, 16, "{:?}", right.remark);
    let expected = "too many failed attempts from 127.0.0.1 (access key victim)";
    assert!(remark(&right).contains(expected), "{:?}", right.remark);
    assert_eq!(server.state.kv.get("NS", "guessed"), None, "the right guess was not verified");
    let other = ops.call(signed(put_kv("ops-key"), "ops", "ops-secret-1")).await;
    assert_eq!(other.code, 0, "another account at the address: {:?}", other.remark);
    let unsigned = guesser.call(put_kv("guessed")).await;
    assert!(remark(&unsigned).contains("must be signed"), "{:?}", unsigned.remark);

    let window = Duration::from_secs(WINDOW_SECS as u64);
    tokio::time::sleep(
        (started + window + Duration::from_millis(100)).saturating_duration_since(Instant::now()),
    )
    .await;
    let after = guesser.call(signed(put_kv("guessed"), "victim", "victim-secret-1")).await;
    assert_eq!(after.code, 0, "the window ended: {:?}", after.remark);
}
