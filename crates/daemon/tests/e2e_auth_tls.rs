//! Access control by client certificate, end to end over real TLS: with
//! `tls.server.need.client.auth=require` and `tls.server.authClient=true`, an unsigned request
//! on a connection whose verified certificate has an account's `certificateCN` is served with
//! that account's role; another certificate of the same CA is not an identity.

mod common;

use std::sync::Arc;

use common::pki::{client_config, Ca};
use common::{request, TestServer};
use futures::{SinkExt, StreamExt};
use namesrv::config::AuthMode;
use rcgen::ExtendedKeyUsagePurpose;
use remoting::frame::RemotingCodec;
use remoting::{RemotingCommand, RequestCode};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::codec::Framed;

/// One request over a fresh TLS connection presenting `cn`'s certificate from `ca`.
async fn call_as(
    server: &TestServer,
    ca: &Ca,
    cn: &str,
    request: RemotingCommand,
) -> RemotingCommand {
    let leaf = ca.leaf(cn, ExtendedKeyUsagePurpose::ClientAuth);
    let config: Arc<rustls::ClientConfig> =
        client_config(std::slice::from_ref(&ca.cert), Some((leaf.cert, leaf.key)));
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let tls = TlsConnector::from(config).connect(name, tcp).await.expect("handshake");
    let mut framed = Framed::new(tls, RemotingCodec::new());
    framed.send(request.with_opaque(7)).await.expect("send");
    let answer = tokio::time::timeout(common::ANSWER_TIMEOUT, framed.next()).await;
    answer.expect("answer in time").expect("a frame").expect("decodable")
}

#[tokio::test]
async fn a_verified_certificate_cn_is_the_account_it_names() {
    let ca = Ca::new("namesrv test CA");
    let server_leaf = ca.leaf("namesrv", ExtendedKeyUsagePurpose::ServerAuth);
    let dir = tempfile::tempdir().expect("dir");
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_string_lossy().into_owned()
    };
    let (cert, key, trust) = (
        file("server.crt", &server_leaf.cert_pem),
        file("server.key", &server_leaf.key_pem),
        file("ca.crt", &ca.pem),
    );
    let accounts = file(
        "auth.yml",
        "accounts:\n  - {accessKey: ops-by-cert, role: admin, certificateCN: ops.example.com}\n  - {accessKey: viewer-by-cert, role: reader, certificateCN: viewer.example.com}\n",
    );
    let server = TestServer::start_in(dir, |c| {
        c.tls_server_mode = Some("enforcing".into());
        c.tls_test_mode_enable = Some("false".into());
        c.tls_server_cert_path = Some(cert);
        c.tls_server_key_path = Some(key);
        c.tls_server_trust_cert_path = Some(trust);
        c.tls_server_need_client_auth = Some("require".into());
        c.tls_server_auth_client = Some("true".into());
        c.tls_config_file = Some("/nonexistent/tls.properties".into());
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(accounts);
        c.authentication_mode = Some(AuthMode::All.as_str().into());
    })
    .await;
    let put = || {
        request(
            RequestCode::PutKvConfig,
            &[("namespace", "NS"), ("key", "k"), ("value", "v")],
            None,
        )
    };

    let resp = call_as(&server, &ca, "ops.example.com", put()).await;
    assert_eq!(resp.code, 0, "admin by certificate: {:?}", resp.remark);
    let resp = call_as(&server, &ca, "viewer.example.com", put()).await;
    assert_eq!(resp.code, 16);
    assert!(resp
        .remark
        .as_deref()
        .unwrap_or_default()
        .contains("role reader may not send request code 100"));
    let read = request(RequestCode::GetKvConfig, &[("namespace", "NS"), ("key", "k")], None);
    let resp = call_as(&server, &ca, "viewer.example.com", read.clone()).await;
    assert_eq!((resp.code, resp.ext("value")), (0, Some("v")), "reader by certificate reads");
    let resp = call_as(&server, &ca, "stranger.example.com", read).await;
    assert_eq!(resp.code, 16, "a certificate naming no account is no identity: {:?}", resp.remark);
    assert!(resp.remark.as_deref().unwrap_or_default().contains("must be signed"));
}
