//! The audit trail of the HTTP listener (#21): a refused HTTP request is logged to the `audit`
//! target with the TCP peer — never an address from `X-Forwarded-For` — its reason and the
//! access key it tried, never the secret. (Its own test binary, like `e2e_audit.rs`: `tracing`
//! caches a callsite's interest process-wide.)

mod common;

use base64::Engine;
use common::captured::Captured;
use common::{http_get, TestServer};

#[tokio::test(flavor = "current_thread")]
async fn http_refusals_are_audited_with_the_tcp_peer_and_no_secret() {
    let captured = Captured::default();
    let _guard = tracing::subscriber::set_default(captured.subscriber("audit=info"));
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("auth.yml");
    std::fs::write(
        &path,
        "globalWhiteRemoteAddresses: [10.9.0.0/16]\naccounts: [{accessKey: viewer, secretKey: viewer-secret-1, role: reader}]\n",
    )
    .expect("accounts");
    let server = TestServer::start_in_with_http(dir, |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(path.to_string_lossy().into_owned());
        c.authentication_mode = Some("all".into());
    })
    .await;
    let addr = server.http.expect("http");
    let spoofed = [("X-Forwarded-For", "10.9.0.5")];
    assert_eq!(http_get(addr, "/api/v1/kv/NS", &spoofed).await.status, 401);
    let guess = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("viewer:guessed-secret-7")
    );
    let headers = [("X-Forwarded-For", "10.9.0.5"), ("Authorization", guess.as_str())];
    assert_eq!(http_get(addr, "/api/v1/config", &headers).await.status, 401);
    drop(server);

    let text = captured.text();
    let refusals: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("refused") && l.contains("transport=\"http\""))
        .collect();
    assert_eq!(refusals.len(), 2, "{text}");
    assert!(
        refusals[0].contains("reason=\"no_signature\"") && refusals[0].contains("code=101"),
        "{}",
        refusals[0]
    );
    assert!(
        refusals[1].contains("reason=\"bad_signature\"") && refusals[1].contains("code=319"),
        "{}",
        refusals[1]
    );
    assert!(refusals[1].contains("access_key=\"viewer\""), "{}", refusals[1]);
    for line in &refusals {
        assert!(line.contains("peer=127.0.0.1:"), "the TCP peer: {line}");
    }
    assert!(!text.contains("10.9.0.5"), "a forwarded address is never logged: {text}");
    assert!(!text.contains("guessed-secret-7"), "{text}");
}
