//! The real server on one port: a TLS client and a plaintext client both get route answers
//! (permissive mode), and `enforcing` refuses plaintext.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{request, TestServer};
use futures::{SinkExt, StreamExt};
use remoting::frame::RemotingCodec;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::codec::Framed;

const LIMIT: Duration = Duration::from_secs(10);

/// A self-signed server certificate for "localhost" written to `dir`; returns its DER.
fn write_cert(dir: &std::path::Path) -> CertificateDer<'static> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("cert");
    std::fs::write(dir.join("server.crt"), cert.cert.pem()).expect("write cert");
    std::fs::write(dir.join("server.key"), cert.signing_key.serialize_pem()).expect("write key");
    CertificateDer::from_pem_slice(cert.cert.pem().as_bytes()).expect("der")
}

async fn tls_server(mode: &str) -> (TestServer, CertificateDer<'static>) {
    let dir = tempfile::tempdir().expect("dir");
    let der = write_cert(dir.path());
    let (cert, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
    let mode = mode.to_owned();
    let server = TestServer::start_in(dir, move |config| {
        for (k, v) in [
            ("tls.server.mode", mode.as_str()),
            ("tls.test.mode.enable", "false"),
            ("tls.server.certPath", cert.to_str().expect("utf-8 path")),
            ("tls.server.keyPath", key.to_str().expect("utf-8 path")),
            ("tls.config.file", "/nonexistent/tls.properties"),
        ] {
            config.set_known(k, v).expect("tls key accepted");
        }
    })
    .await;
    (server, der)
}

async fn route_over<S>(stream: S) -> Option<RemotingCommand>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut framed = Framed::new(stream, RemotingCodec::new());
    let mut req = request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicTest")], None);
    req.opaque = 42;
    framed.send(req).await.ok()?;
    match tokio::time::timeout(LIMIT, framed.next()).await {
        Ok(Some(Ok(resp))) => Some(resp),
        _ => None,
    }
}

async fn tls_connect(
    server: &TestServer,
    root: CertificateDer<'static>,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let mut roots = RootCertStore::empty();
    roots.add(root).expect("root");
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    let tcp = TcpStream::connect(server.addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    tokio::time::timeout(LIMIT, TlsConnector::from(Arc::new(config)).connect(name, tcp))
        .await
        .expect("handshake in time")
        .expect("handshake")
}

#[tokio::test]
async fn permissive_port_answers_tls_and_plaintext_route_queries() {
    let (server, root) = tls_server("permissive").await;
    let tls = tls_connect(&server, root).await;
    let over_tls = route_over(tls).await.expect("answer over TLS");
    assert_eq!(over_tls.response_code(), ResponseCode::TopicNotExist);
    assert_eq!(over_tls.opaque, 42);

    let plain = TcpStream::connect(server.addr).await.expect("connect");
    let over_plain = route_over(plain).await.expect("answer in plaintext");
    assert_eq!(over_plain.response_code(), ResponseCode::TopicNotExist);
}

#[tokio::test]
async fn enforcing_port_refuses_plaintext_but_serves_tls() {
    let (server, root) = tls_server("enforcing").await;
    let plain = TcpStream::connect(server.addr).await.expect("connect");
    assert!(route_over(plain).await.is_none(), "plaintext is closed without an answer");
    let tls = tls_connect(&server, root).await;
    assert_eq!(
        route_over(tls).await.expect("answer over TLS").response_code(),
        ResponseCode::TopicNotExist
    );
}
