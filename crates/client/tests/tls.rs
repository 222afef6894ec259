//! The client over TLS against a real nameserver (`daemon::run`) whose `tls.server.mode` is
//! `enforcing`: with `tls.client.authServer` the server's certificate is checked against
//! `tls.client.trustCertPath` (a certificate from another CA is refused before any request is
//! sent), test mode trusts any server, plaintext is closed by the server; with
//! `tls.server.need.client.auth=require` only a client presenting `tls.client.certPath` /
//! `tls.client.keyPath` is served.

mod common;
#[path = "common/pki.rs"]
mod pki;

use std::path::Path;

use client::{Client, ClientConfig, TlsSettings};
use common::{TestServer, LIMIT};
use remoting::RequestCode;

/// A nameserver in `enforcing` mode serving `pki`'s certificate; `extra` more `tls.*` keys.
async fn enforcing(pki: &pki::Pki, extra: &'static [(&'static str, &'static str)]) -> TestServer {
    let (cert, key, ca) = (path(&pki.cert), path(&pki.key), path(&pki.ca));
    TestServer::start_with(move |config| {
        for (k, v) in [
            ("tls.server.mode", "enforcing"),
            ("tls.test.mode.enable", "false"),
            ("tls.server.certPath", cert.as_str()),
            ("tls.server.keyPath", key.as_str()),
            ("tls.server.trustCertPath", ca.as_str()),
            ("tls.config.file", "/nonexistent/tls.properties"),
        ]
        .into_iter()
        .chain(extra.iter().copied())
        {
            config.set_known(k, v).expect("tls key");
        }
    })
    .await
}

fn path(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_owned()
}

fn client(server: &TestServer, tls: Option<TlsSettings>) -> Client {
    let tls = tls.map(|s| s.build().expect("client TLS builds"));
    let config = ClientConfig {
        connect_timeout: LIMIT,
        request_timeout: LIMIT,
        tls,
        ..ClientConfig::default()
    };
    Client::with_config(&server.addr_string(), config).expect("client")
}

/// GET_BROKER_CLUSTER_INFO: its response code, or the error's text.
async fn ask(c: &Client) -> Result<i32, String> {
    let req = c.request(RequestCode::GetBrokerClusterInfo);
    match tokio::time::timeout(LIMIT, c.invoke(req)).await.expect("bounded") {
        Ok((_, resp)) => Ok(resp.code),
        Err(e) => Err(e.to_string()),
    }
}

fn checked(trust: &Path) -> TlsSettings {
    TlsSettings {
        enable: true,
        test_mode: false,
        auth_server: true,
        trust_cert_path: Some(trust.to_owned()),
        ..TlsSettings::default()
    }
}

/// `settings` presenting `pki`'s certificate as the client's.
fn with_client_cert(settings: TlsSettings, pki: &pki::Pki) -> TlsSettings {
    TlsSettings { cert_path: Some(pki.cert.clone()), key_path: Some(pki.key.clone()), ..settings }
}

#[tokio::test]
async fn a_tls_client_checks_the_server_certificate_against_its_trust_file() {
    let pki = pki::pki();
    let server = enforcing(&pki, &[]).await;

    let trusted = client(&server, Some(checked(&pki.ca)));
    assert!(trusted.config().tls.as_ref().expect("tls").verifies_server());
    assert_eq!(ask(&trusted).await, Ok(0), "served over TLS, the server's chain checked");

    let wrong_root = client(&server, Some(checked(&pki.other_ca)));
    let err = ask(&wrong_root).await.expect_err("a server not signed by the trust root");
    assert!(err.contains("connect to") && err.to_lowercase().contains("certificate"), "{err}");

    // Java's test mode trusts whatever the server shows.
    let any = client(&server, Some(TlsSettings { enable: true, ..TlsSettings::default() }));
    assert_eq!(ask(&any).await, Ok(0));

    // Enforcing: the same request in plaintext gets no answer.
    let plain = client(&server, None);
    assert!(ask(&plain).await.is_err(), "plaintext is closed by an enforcing server");
    server.stop().await;
}

#[tokio::test]
async fn a_server_that_requires_a_client_certificate_serves_only_a_client_presenting_one() {
    let pki = pki::pki();
    let server = enforcing(
        &pki,
        &[("tls.server.need.client.auth", "require"), ("tls.server.authClient", "true")],
    )
    .await;
    let with_cert = client(&server, Some(with_client_cert(checked(&pki.ca), &pki)));
    assert_eq!(ask(&with_cert).await, Ok(0), "mutual TLS");
    let without = client(&server, Some(checked(&pki.ca)));
    assert!(ask(&without).await.is_err(), "no client certificate, no answer");
    server.stop().await;
}

#[tokio::test]
async fn a_reloaded_trust_file_is_used_by_the_next_connection() {
    let pki = pki::pki();
    let server = enforcing(&pki, &[]).await;
    let trust = pki.dir.path().join("trust.pem");
    std::fs::copy(&pki.other_ca, &trust).expect("copy");
    let settings = checked(&trust);
    let c = client(&server, Some(settings.clone()));
    assert!(ask(&c).await.is_err(), "the server's CA is not trusted yet");
    std::fs::copy(&pki.ca, &trust).expect("copy");
    c.config().tls.as_ref().expect("tls").reload(&settings).expect("reloads");
    assert_eq!(ask(&c).await, Ok(0), "the next connection trusts the new file");
    // A reload that fails keeps the configuration in force.
    std::fs::write(&trust, "not PEM").expect("write");
    assert!(c.config().tls.as_ref().expect("tls").reload(&settings).is_err());
    c.close().await;
    assert_eq!(ask(&c).await, Ok(0), "still the good trust file");
    server.stop().await;
}
