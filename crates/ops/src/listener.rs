//! The HTTP connections: the accept loop under a connection cap, TLS with the remoting port's
//! context (`httpTlsEnable`; its reloads apply to new connections), hyper's HTTP/1 with a
//! header-read timeout (a connection that does not send a request's headers in time is
//! closed), the drain on shutdown, and the counts of what was refused and why
//! (`http_connections_refused_total{reason}`).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;
use tracing::{debug, warn};
use transport::{BoxedStream, TlsContext};

use crate::HttpPeer;

/// How long open HTTP connections (a dashboard's event stream, a slow scrape) may take to
/// finish once the server has stopped.
pub const HTTP_DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// What a new connection is served with, read when it is accepted.
#[derive(Clone)]
pub struct ListenerSettings {
    /// Beyond this many open connections a new one is answered 503 and closed.
    pub max_connections: usize,
    /// How long a connection may take to send a request's headers (and its TLS handshake).
    pub header_timeout: Duration,
    /// TLS for every connection (`httpTlsEnable`), else plain HTTP.
    pub tls: Option<Arc<TlsContext>>,
}

impl Default for ListenerSettings {
    /// The nameserver's defaults: 1024 connections, 10 s for the headers, plain HTTP.
    fn default() -> Self {
        Self { max_connections: 1024, header_timeout: Duration::from_secs(10), tls: None }
    }
}

/// Why the HTTP listener refused a connection or a request; one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// `httpMaxConnections` connections were open.
    MaxConnections,
    /// No complete request headers within `httpHeaderReadTimeoutSeconds`.
    HeaderTimeout,
    /// `httpMaxEventStreams` event streams were open.
    MaxEventStreams,
    /// The `Host` header names a host not in `httpAllowedHosts`.
    Host,
    /// Basic credentials (or a page needing them) over plain HTTP from a non-loopback peer.
    PlainCredentials,
    /// The TLS handshake failed, timed out, or the client spoke plain HTTP (`httpTlsEnable`).
    TlsHandshake,
}

impl Refused {
    /// Every reason, in counter order.
    pub const ALL: [Refused; 6] = [
        Refused::MaxConnections,
        Refused::HeaderTimeout,
        Refused::MaxEventStreams,
        Refused::Host,
        Refused::PlainCredentials,
        Refused::TlsHandshake,
    ];

    /// The `reason` label.
    pub fn label(self) -> &'static str {
        match self {
            Refused::MaxConnections => "max_connections",
            Refused::HeaderTimeout => "header_timeout",
            Refused::MaxEventStreams => "max_event_streams",
            Refused::Host => "host",
            Refused::PlainCredentials => "plain_credentials",
            Refused::TlsHandshake => "tls_handshake",
        }
    }
}

/// The counts of [`Refused`] and the open connections of one HTTP listener. Clones share them.
#[derive(Debug, Clone, Default)]
pub struct HttpCounts(Arc<Counts>);

#[derive(Debug, Default)]
struct Counts {
    refused: [AtomicU64; 6],
    open: AtomicUsize,
}

impl HttpCounts {
    /// Counts one refusal.
    pub fn refused(&self, reason: Refused) {
        self.0.refused[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Refusals so far, by reason label.
    pub fn refused_counts(&self) -> Vec<(&'static str, u64)> {
        Refused::ALL
            .iter()
            .map(|r| (r.label(), self.0.refused[*r as usize].load(Ordering::Relaxed)))
            .collect()
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.0.open.load(Ordering::Relaxed)
    }
}

/// One open connection, counted until dropped.
struct Open(HttpCounts);

impl Drop for Open {
    fn drop(&mut self) {
        self.0 .0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves `router` on `listener` until `shutdown` completes, each new connection with what
/// `settings` says then; then gives open connections [`HTTP_DRAIN_LIMIT`] to finish.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    settings: impl Fn() -> ListenerSettings,
    counts: HttpCounts,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let (drain_tx, drain_rx) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (tcp, remote) = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let settings = settings();
        if counts.open() >= settings.max_connections {
            counts.refused(Refused::MaxConnections);
            refuse_busy(tcp);
            continue;
        }
        counts.0.open.fetch_add(1, Ordering::Relaxed);
        let open = Open(counts.clone());
        let (router, drain) = (router.clone(), drain_rx.clone());
        tokio::spawn(connection(tcp, remote, router, settings, open, drain));
    }
    drop(listener);
    let _ = drain_tx.send(true);
    let deadline = tokio::time::Instant::now() + HTTP_DRAIN_LIMIT;
    while counts.open() > 0 {
        if tokio::time::Instant::now() >= deadline {
            warn!(
                open = counts.open(),
                "HTTP connections still open after the drain limit; dropped"
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Answers 503 to a connection over the cap and closes it, without waiting for it.
fn refuse_busy(tcp: TcpStream) {
    const BODY: &str = r#"{"status":503,"error":"Service Unavailable","message":"too many HTTP connections (httpMaxConnections)"}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    // A fresh connection's send buffer is empty: the answer fits without waiting.
    let _ = tcp.try_write(answer.as_bytes());
}

/// Serves one connection: TLS first when asked, then HTTP/1 until it closes or the drain.
async fn connection(
    tcp: TcpStream,
    remote: SocketAddr,
    router: Router,
    settings: ListenerSettings,
    open: Open,
    mut drain: watch::Receiver<bool>,
) {
    let local = tcp.local_addr().ok();
    let counts = open.0.clone();
    let stream: BoxedStream = match &settings.tls {
        None => Box::pin(tcp),
        Some(tls) => match handshake(tcp, tls, settings.header_timeout).await {
            Ok(stream) => stream,
            Err(why) => {
                counts.refused(Refused::TlsHandshake);
                debug!(peer = %remote, why, "HTTP TLS handshake refused");
                return;
            }
        },
    };
    let peer = HttpPeer { local, remote, tls: settings.tls.is_some() };
    let requests = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&requests);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        seen.fetch_add(1, Ordering::Relaxed);
        request.extensions_mut().insert(ConnectInfo(peer));
        router.clone().oneshot(request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(settings.header_timeout);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        () = async {
            let _ = drain.wait_for(|stop| *stop).await;
        } => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    };
    if let Err(e) = result {
        if e.is_timeout() && requests.load(Ordering::Relaxed) == 0 {
            counts.refused(Refused::HeaderTimeout);
        }
        debug!(peer = %remote, error = %e, "HTTP connection ended");
    }
    drop(open);
}

/// The TLS handshake of a connection, within `limit`.
async fn handshake(
    tcp: TcpStream,
    tls: &TlsContext,
    limit: Duration,
) -> Result<BoxedStream, &'static str> {
    let acceptor = tls.acceptor().ok_or("no TLS context is loaded")?;
    let mut first = [0u8; 1];
    let peeked = tokio::time::timeout(limit, tcp.peek(&mut first)).await;
    match peeked {
        Ok(Ok(1)) if first[0] == 0x16 => {}
        Ok(Ok(1)) => {
            refuse_plaintext(tcp).await;
            return Err("plain HTTP on a TLS listener");
        }
        Ok(_) => return Err("closed"),
        Err(_) => return Err("no handshake in time"),
    }
    match tokio::time::timeout(limit, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => Ok(Box::pin(stream)),
        Ok(Err(_)) => Err("handshake failed"),
        Err(_) => Err("handshake not finished in time"),
    }
}

/// Tells a plain-HTTP client of a TLS listener to use https, then closes.
async fn refuse_plaintext(mut tcp: TcpStream) {
    const BODY: &str = "this listener serves HTTPS only (httpTlsEnable=true)\n";
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await?;
        // Read what the client sent, so closing does not reset the answer away.
        let mut sink = [0u8; 1024];
        while tcp.read(&mut sink).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}
