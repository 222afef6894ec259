//! End-to-end tests of the `transport` crate over real TCP on 127.0.0.1: TLS modes, client auth,
//! certificate hot reload, PROXY prefaces and the handshake timeout, through a tiny echo server.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ::transport::{
    negotiate, spawn_reloader_every, ClientAuth, TlsContext, TlsMode, TlsSettings, TransportError,
};
use rcgen::ExtendedKeyUsagePurpose;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

mod common;

use common::pki::{client_config, Ca, Leaf};

/// Upper bound for anything a test waits for.
const LIMIT: Duration = Duration::from_secs(10);
/// Handshake timeout used by servers that are not testing it.
const HANDSHAKE: Duration = Duration::from_secs(5);

type Outcome = Result<(SocketAddr, bool, Option<String>), TransportError>;

/// Accepts connections, runs `negotiate`, reports each outcome, then echoes bytes.
struct EchoServer {
    addr: SocketAddr,
    outcomes: mpsc::UnboundedReceiver<Outcome>,
    task: JoinHandle<()>,
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl EchoServer {
    async fn start(ctx: Arc<TlsContext>, handshake_timeout: Duration) -> EchoServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, outcomes) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, peer)) = listener.accept().await else {
                    return;
                };
                let ctx = ctx.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match negotiate(
                        tcp,
                        peer,
                        ::transport::Preface::Honoured,
                        &ctx,
                        handshake_timeout,
                    )
                    .await
                    {
                        Ok(n) => {
                            let _ = tx.send(Ok((n.peer, n.tls, n.certificate_cn)));
                            let mut stream = n.stream;
                            let mut buf = [0u8; 1024];
                            while let Ok(len @ 1..) = stream.read(&mut buf).await {
                                if stream.write_all(&buf[..len]).await.is_err()
                                    || stream.flush().await.is_err()
                                {
                                    return;
                                }
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            }
        });
        EchoServer { addr, outcomes, task }
    }

    async fn outcome(&mut self) -> Outcome {
        tokio::time::timeout(LIMIT, self.outcomes.recv())
            .await
            .expect("no negotiation outcome in time")
            .expect("server stopped")
    }

    async fn accepted(&mut self) -> (SocketAddr, bool) {
        let (peer, tls, _) = self.accepted_with_cn().await;
        (peer, tls)
    }

    /// The next accepted connection with the subject CN negotiation took as its identity.
    async fn accepted_with_cn(&mut self) -> (SocketAddr, bool, Option<String>) {
        match self.outcome().await {
            Ok(ok) => ok,
            Err(e) => panic!("connection refused: {e}"),
        }
    }
}

async fn roundtrip<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, msg: &[u8]) {
    tokio::time::timeout(LIMIT, async {
        stream.write_all(msg).await.unwrap();
        stream.flush().await.unwrap();
        let mut back = vec![0u8; msg.len()];
        stream.read_exact(&mut back).await.unwrap();
        assert_eq!(back, msg);
    })
    .await
    .expect("echo in time");
}

/// The server side closed (EOF or reset) without sending anything.
async fn assert_closed<S: AsyncRead + Unpin>(stream: &mut S) {
    let mut buf = [0u8; 64];
    match tokio::time::timeout(LIMIT, stream.read(&mut buf)).await.expect("closed in time") {
        Ok(0) | Err(_) => {}
        Ok(n) => panic!("expected a closed connection, got {n} bytes"),
    }
}

async fn tls_connect(
    addr: SocketAddr,
    config: Arc<ClientConfig>,
    preface: &[u8],
) -> io::Result<TlsStream<TcpStream>> {
    let mut tcp = TcpStream::connect(addr).await?;
    tcp.write_all(preface).await?;
    let name = ServerName::try_from("localhost").unwrap();
    tokio::time::timeout(LIMIT, TlsConnector::from(config).connect(name, tcp))
        .await
        .expect("TLS handshake in time")
}

fn served_cert(stream: &TlsStream<TcpStream>) -> CertificateDer<'static> {
    stream.get_ref().1.peer_certificates().unwrap()[0].clone().into_owned()
}

/// Certificate files on disk for a non-test-mode server.
struct Files {
    _dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    trust: PathBuf,
}

impl Files {
    fn new(server: &Leaf, trust_pem: &str) -> Files {
        let dir = tempfile::tempdir().unwrap();
        let files = Files {
            cert: dir.path().join("server.crt"),
            key: dir.path().join("server.key"),
            trust: dir.path().join("ca.crt"),
            _dir: dir,
        };
        write(&files.cert, &server.cert_pem);
        write(&files.key, &server.key_pem);
        write(&files.trust, trust_pem);
        files
    }

    fn settings(&self, mode: TlsMode, client_auth: ClientAuth) -> TlsSettings {
        TlsSettings {
            mode,
            test_mode: false,
            cert_path: Some(self.cert.clone()),
            key_path: Some(self.key.clone()),
            key_password: None,
            trust_cert_path: Some(self.trust.clone()),
            client_auth,
            auth_client: true,
        }
    }
}

fn write(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
}

fn test_mode(mode: TlsMode) -> Arc<TlsContext> {
    Arc::new(TlsContext::new(TlsSettings { mode, ..TlsSettings::default() }).unwrap())
}

/// Named `transport` so that `cargo test transport` selects these tests too.
mod transport {
    use super::*;

    #[tokio::test]
    async fn permissive_mode_serves_tls_and_plaintext_on_one_port() {
        let ctx = test_mode(TlsMode::Permissive);
        let mut server = EchoServer::start(ctx.clone(), HANDSHAKE).await;

        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        roundtrip(&mut plain, b"plain hello").await;
        let (peer, tls) = server.accepted().await;
        assert!(!tls);
        assert_eq!(peer, plain.local_addr().unwrap());

        let roots = [ctx.certificate().unwrap()];
        let mut secure = tls_connect(server.addr, client_config(&roots, None), b"").await.unwrap();
        roundtrip(&mut secure, b"tls hello").await;
        assert_eq!(served_cert(&secure), roots[0]);
        let (peer, tls) = server.accepted().await;
        assert!(tls);
        assert_eq!(peer, secure.get_ref().0.local_addr().unwrap());
    }

    #[tokio::test]
    async fn a_ten_byte_frame_is_answered_without_waiting_for_twelve_bytes() {
        let mut server = EchoServer::start(test_mode(TlsMode::Permissive), HANDSHAKE).await;
        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        // total length 6, header length 2, header `{}`.
        roundtrip(&mut plain, &[0, 0, 0, 6, 0, 0, 0, 2, b'{', b'}']).await;
        assert!(!server.accepted().await.1);
    }

    #[tokio::test]
    async fn enforcing_mode_refuses_plaintext_and_accepts_tls() {
        let ctx = test_mode(TlsMode::Enforcing);
        let mut server = EchoServer::start(ctx.clone(), HANDSHAKE).await;

        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        plain.write_all(&[0, 0, 0, 6, 0, 0, 0, 2, b'{', b'}']).await.unwrap();
        assert!(matches!(server.outcome().await, Err(TransportError::PlaintextRefused)));
        assert_closed(&mut plain).await;

        let roots = [ctx.certificate().unwrap()];
        let mut secure = tls_connect(server.addr, client_config(&roots, None), b"").await.unwrap();
        roundtrip(&mut secure, b"ok").await;
        assert!(server.accepted().await.1);
    }

    #[tokio::test]
    async fn disabled_mode_refuses_tls_and_accepts_plaintext() {
        let ctx = Arc::new(TlsContext::disabled());
        let mut server = EchoServer::start(ctx, HANDSHAKE).await;

        let any_root = [Ca::new("unused").cert];
        let refused = tls_connect(server.addr, client_config(&any_root, None), b"").await;
        assert!(refused.is_err());
        assert!(matches!(server.outcome().await, Err(TransportError::TlsDisabled)));

        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        roundtrip(&mut plain, b"plain").await;
        assert!(!server.accepted().await.1);
    }

    #[tokio::test]
    async fn required_client_auth_accepts_only_certificates_from_the_trust_file() {
        let ca = Ca::new("trusted CA");
        let server_leaf = ca.leaf("namesrv", ExtendedKeyUsagePurpose::ServerAuth);
        let files = Files::new(&server_leaf, &ca.pem);
        let ctx = TlsContext::new(files.settings(TlsMode::Enforcing, ClientAuth::Require)).unwrap();
        let mut server = EchoServer::start(Arc::new(ctx), HANDSHAKE).await;
        let roots = [ca.cert.clone()];

        // No client certificate: the server aborts the handshake.
        let attempt = tls_connect(server.addr, client_config(&roots, None), b"").await;
        if let Ok(mut stream) = attempt {
            // TLS 1.3: the client finishes first and learns of the refusal on its first read.
            let _ = stream.write_all(b"x").await;
            assert_closed(&mut stream).await;
        }
        assert!(matches!(server.outcome().await, Err(TransportError::Handshake(_))));

        // A certificate from another CA is refused too.
        let stranger = Ca::new("other CA").leaf("mallory", ExtendedKeyUsagePurpose::ClientAuth);
        let config = client_config(&roots, Some((stranger.cert, stranger.key)));
        if let Ok(mut stream) = tls_connect(server.addr, config, b"").await {
            let _ = stream.write_all(b"x").await;
            assert_closed(&mut stream).await;
        }
        assert!(matches!(server.outcome().await, Err(TransportError::Handshake(_))));

        // A certificate signed by the trusted CA is accepted, and its CN is the identity.
        let client = ca.leaf("broker-a", ExtendedKeyUsagePurpose::ClientAuth);
        let config = client_config(&roots, Some((client.cert, client.key)));
        let mut stream = tls_connect(server.addr, config, b"").await.unwrap();
        roundtrip(&mut stream, b"mutual").await;
        let (_, tls, cn) = server.accepted_with_cn().await;
        assert!(tls);
        assert_eq!(cn.as_deref(), Some("broker-a"));
    }

    #[tokio::test]
    async fn auth_client_false_requires_a_certificate_but_accepts_any_and_takes_no_identity_from_it(
    ) {
        let ca = Ca::new("trusted CA");
        let server_leaf = ca.leaf("namesrv", ExtendedKeyUsagePurpose::ServerAuth);
        let files = Files::new(&server_leaf, &ca.pem);
        let settings = TlsSettings {
            auth_client: false,
            ..files.settings(TlsMode::Enforcing, ClientAuth::Require)
        };
        let ctx = TlsContext::new(settings).unwrap();
        assert!(!ctx.verifies_client_certificates());
        let mut server = EchoServer::start(Arc::new(ctx), HANDSHAKE).await;
        let roots = [ca.cert.clone()];

        // Still required: no certificate, no connection.
        if let Ok(mut stream) = tls_connect(server.addr, client_config(&roots, None), b"").await {
            let _ = stream.write_all(b"x").await;
            assert_closed(&mut stream).await;
        }
        assert!(matches!(server.outcome().await, Err(TransportError::Handshake(_))));

        // A certificate no trusted CA signed is accepted (Java's InsecureTrustManagerFactory),
        // but its CN is no identity: nothing vouches for it.
        let stranger = Ca::new("other CA").leaf("ops-admin", ExtendedKeyUsagePurpose::ClientAuth);
        let config = client_config(&roots, Some((stranger.cert, stranger.key)));
        let mut stream = tls_connect(server.addr, config, b"").await.unwrap();
        roundtrip(&mut stream, b"any certificate").await;
        let (_, tls, cn) = server.accepted_with_cn().await;
        assert!(tls);
        assert_eq!(cn, None);
    }

    /// Connects until the served certificate is `expected` (the reloader polls in the background).
    async fn wait_for_cert(
        addr: SocketAddr,
        config: &Arc<ClientConfig>,
        expected: &CertificateDer<'static>,
    ) -> TlsStream<TcpStream> {
        tokio::time::timeout(LIMIT, async {
            loop {
                let stream = tls_connect(addr, config.clone(), b"").await.unwrap();
                if &served_cert(&stream) == expected {
                    return stream;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("new certificate served in time")
    }

    #[tokio::test]
    async fn hot_reload_serves_the_new_certificate_and_keeps_old_connections() {
        let ca = Ca::new("reload CA");
        let first = ca.leaf("first", ExtendedKeyUsagePurpose::ServerAuth);
        let files = Files::new(&first, &ca.pem);
        let ctx = Arc::new(
            TlsContext::new(files.settings(TlsMode::Permissive, ClientAuth::None)).unwrap(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let reloader = spawn_reloader_every(ctx.clone(), Duration::from_millis(20), stopped);
        let server = EchoServer::start(ctx.clone(), HANDSHAKE).await;
        let config = client_config(std::slice::from_ref(&ca.cert), None);

        let mut old = tls_connect(server.addr, config.clone(), b"").await.unwrap();
        assert_eq!(served_cert(&old), first.cert);
        roundtrip(&mut old, b"before").await;

        let second = ca.leaf("second", ExtendedKeyUsagePurpose::ServerAuth);
        write(&files.cert, &second.cert_pem);
        write(&files.key, &second.key_pem);
        let mut new = wait_for_cert(server.addr, &config, &second.cert).await;
        roundtrip(&mut new, b"new connection").await;
        assert_eq!(ctx.certificate().unwrap(), second.cert);

        roundtrip(&mut old, b"old connection still works").await;
        assert_eq!(served_cert(&old), first.cert);

        stop.send(()).unwrap();
        tokio::time::timeout(LIMIT, reloader).await.expect("reloader stops").unwrap();
    }

    #[tokio::test]
    async fn truncated_key_keeps_the_old_certificate_until_the_pair_is_complete() {
        let ca = Ca::new("truncation CA");
        let first = ca.leaf("first", ExtendedKeyUsagePurpose::ServerAuth);
        let files = Files::new(&first, &ca.pem);
        let ctx = Arc::new(
            TlsContext::new(files.settings(TlsMode::Permissive, ClientAuth::None)).unwrap(),
        );
        let interval = Duration::from_millis(20);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let reloader = spawn_reloader_every(ctx.clone(), interval, stopped);
        let server = EchoServer::start(ctx.clone(), HANDSHAKE).await;
        let config = client_config(std::slice::from_ref(&ca.cert), None);

        let second = ca.leaf("second", ExtendedKeyUsagePurpose::ServerAuth);
        write(&files.cert, &second.cert_pem);
        write(&files.key, &second.key_pem[..second.key_pem.len() / 2]);
        // Wait until the reloader has tried (and rejected) the half-written key.
        tokio::time::timeout(LIMIT, async {
            while ctx.reloads().failed.load(Ordering::Relaxed) == 0 {
                tokio::time::sleep(interval).await;
            }
        })
        .await
        .expect("the half-written pair was tried");
        assert_eq!(ctx.reloads().succeeded.load(Ordering::Relaxed), 0, "and not taken");
        let mut stream = tls_connect(server.addr, config.clone(), b"").await.unwrap();
        assert_eq!(served_cert(&stream), first.cert);
        roundtrip(&mut stream, b"still served").await;

        // The writer finishes the key: the pair is now consistent and is picked up.
        write(&files.key, &second.key_pem);
        let mut stream = wait_for_cert(server.addr, &config, &second.cert).await;
        roundtrip(&mut stream, b"complete").await;

        stop.send(()).unwrap();
        tokio::time::timeout(LIMIT, reloader).await.expect("reloader stops").unwrap();
    }

    #[tokio::test]
    async fn proxy_v1_preface_replaces_the_peer_address() {
        let mut server = EchoServer::start(test_mode(TlsMode::Permissive), HANDSHAKE).await;
        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        // TV-30's preface, with the first frame bytes in the same segment.
        plain.write_all(b"PROXY TCP4 192.168.0.1 192.168.0.11 56324 9876\r\n").await.unwrap();
        roundtrip(&mut plain, &[0, 0, 0, 6, 0, 0, 0, 2, b'{', b'}']).await;
        let (peer, tls) = server.accepted().await;
        assert_eq!(peer, "192.168.0.1:56324".parse().unwrap());
        assert!(!tls);
    }

    #[tokio::test]
    async fn proxy_v2_preface_before_tls_replaces_the_peer_address() {
        let ctx = test_mode(TlsMode::Enforcing);
        let mut server = EchoServer::start(ctx.clone(), HANDSHAKE).await;
        let mut preface =
            vec![0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A];
        preface.extend_from_slice(&[0x21, 0x11, 0x00, 12]);
        preface.extend_from_slice(&[10, 1, 2, 3, 10, 9, 8, 7, 0x30, 0x39, 0x26, 0x94]);
        let roots = [ctx.certificate().unwrap()];
        let mut secure =
            tls_connect(server.addr, client_config(&roots, None), &preface).await.unwrap();
        roundtrip(&mut secure, b"behind a proxy").await;
        let (peer, tls) = server.accepted().await;
        assert_eq!(peer, "10.1.2.3:12345".parse().unwrap());
        assert!(tls);
    }

    #[tokio::test]
    async fn garbage_proxy_preface_closes_the_connection() {
        let mut server = EchoServer::start(test_mode(TlsMode::Permissive), HANDSHAKE).await;
        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        plain.write_all(b"PROXY garbage\r\n").await.unwrap();
        assert!(matches!(server.outcome().await, Err(TransportError::Proxy(_))));
        assert_closed(&mut plain).await;
    }

    // Paused time: the handshake timeout runs on the test's clock, so a slow machine cannot
    // make the live client look blocked.
    #[tokio::test(start_paused = true)]
    async fn silent_client_is_cut_off_at_the_handshake_timeout_without_blocking_others() {
        let timeout = Duration::from_millis(500);
        let mut server = EchoServer::start(test_mode(TlsMode::Permissive), timeout).await;
        let started = tokio::time::Instant::now();
        let mut silent = TcpStream::connect(server.addr).await.unwrap();
        let mut half_preface = TcpStream::connect(server.addr).await.unwrap();
        half_preface.write_all(b"PROXY TCP4 1.2").await.unwrap();

        // Meanwhile another client is served at once.
        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        roundtrip(&mut plain, b"not blocked").await;
        assert!(started.elapsed() < timeout, "the live client waited for the silent ones");
        // It was accepted before either silent client was cut off.
        assert!(!server.accepted().await.1);

        for _ in 0..2 {
            assert!(
                matches!(server.outcome().await, Err(TransportError::Timeout(t)) if t == timeout)
            );
        }
        assert!(started.elapsed() >= timeout);
        assert_closed(&mut silent).await;
        assert_closed(&mut half_preface).await;
    }

    #[tokio::test]
    async fn reloader_ends_at_once_when_tls_is_disabled() {
        let reloader = spawn_reloader_every(
            Arc::new(TlsContext::disabled()),
            Duration::from_millis(20),
            std::future::pending::<()>(),
        );
        tokio::time::timeout(LIMIT, reloader).await.expect("reloader ends").unwrap();
    }

    #[tokio::test]
    async fn tls_without_a_loaded_context_is_closed_and_plaintext_still_served() {
        let ctx = Arc::new(TlsContext::without_acceptor(TlsSettings::default()));
        let mut server = EchoServer::start(ctx, HANDSHAKE).await;
        let any_root = [Ca::new("unused").cert];
        assert!(tls_connect(server.addr, client_config(&any_root, None), b"").await.is_err());
        assert!(matches!(server.outcome().await, Err(TransportError::NoTlsContext)));
        let mut plain = TcpStream::connect(server.addr).await.unwrap();
        roundtrip(&mut plain, b"plain").await;
        assert!(!server.accepted().await.1);
    }
}
