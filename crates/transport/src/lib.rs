//! Bytes in from the network: an optional PROXY preface, then TLS-or-plaintext on the same
//! port, with certificate hot reload, and the stream wrappers the server reads through (`Fair`,
//! `Counted`, `room::Paced`), with the byte budgets connections hold and wait for (`budget`).
//! Turns an accepted `TcpStream` into a byte stream for the frame codec.
//!
//! Architecture invariant: nothing here knows about frames, requests or `RemotingCommand`s, nor
//! the nameserver (this crate does not depend on it); the layers end at the first RocketMQ byte,
//! which is replayed untouched to the caller.

/// Implements `AsyncWrite` for a read-side wrapper `$ty<S>` by forwarding every call to its
/// `inner` stream (the wrappers only change how reads behave).
macro_rules! forward_async_write {
    ($ty:ident) => {
        impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for $ty<S> {
            fn poll_write(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
            }

            fn poll_write_vectored(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                self.inner.is_write_vectored()
            }

            fn poll_flush(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.inner).poll_flush(cx)
            }

            fn poll_shutdown(
                mut self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
            }
        }
    };
}

pub mod budget;
mod counted;
mod fair;
pub mod gate;
pub mod proxy;
mod reload;
mod rewind;
pub mod room;
mod settings;
mod tls;
mod unclean;

pub use counted::{ByteCounter, Counted};
pub use fair::Fair;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::net::TcpStream;

pub use proxy::{ProxyError, ProxyHeader};
pub use reload::{spawn_reloader, spawn_reloader_every, DEFAULT_INTERVAL};
pub use rewind::Rewind;
pub use settings::{
    ClientAuth, TlsMode, TlsSettings, DEFAULT_CONFIG_FILE, KEY_AUTH_CLIENT, KEY_CERT_PATH,
    KEY_CLIENT_AUTH, KEY_CONFIG_FILE, KEY_KEY_PASSWORD, KEY_KEY_PATH, KEY_MODE, KEY_TEST_MODE,
    KEY_TRUST_CERT_PATH,
};
pub use tls::{TlsContext, TlsError};
use unclean::UncleanEof;

/// The first byte of a TLS record carrying a handshake message (the ClientHello).
pub const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// How long a client may take for its PROXY preface and TLS handshake, from its first byte.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A bidirectional byte stream the connection handler can own and move across tasks.
pub trait AsyncStream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin + ?Sized> AsyncStream for T {}

/// A type-erased connection stream: plain TCP, TCP with replayed bytes, or TLS over either.
pub type BoxedStream = Pin<Box<dyn AsyncStream>>;

/// A connection ready for RocketMQ frames.
pub struct Negotiated {
    /// The stream; its first byte is the first byte of the first frame.
    pub stream: BoxedStream,
    /// The client address: the PROXY source when a trusted proxy's preface carried one, else
    /// the TCP peer.
    pub peer: SocketAddr,
    /// The TCP peer (the proxy, when `peer` came from a preface).
    pub tcp_peer: SocketAddr,
    /// Whether the stream is TLS.
    pub tls: bool,
    /// The subject CN of the client certificate, when one was presented and verified against
    /// the trust certificates (never when `tls.server.authClient=false` accepts any certificate).
    pub certificate_cn: Option<String>,
    /// Whether the connection began with a PROXY protocol preface.
    pub proxied: bool,
}

impl std::fmt::Debug for Negotiated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Negotiated")
            .field("peer", &self.peer)
            .field("tls", &self.tls)
            .field("proxied", &self.proxied)
            .finish()
    }
}

/// Why a connection was refused during set-up. The caller drops (closes) the connection; Java
/// closes without a reply in every one of these cases.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The peer closed before sending a complete preface or any data.
    #[error("connection closed before any request")]
    Closed,
    /// The PROXY preface and TLS handshake did not finish in time.
    #[error("connection set-up not finished within {0:?}")]
    Timeout(Duration),
    /// A malformed PROXY header.
    #[error("malformed PROXY header: {0}")]
    Proxy(#[from] ProxyError),
    /// A PROXY preface from a peer that is not a trusted proxy (`proxyProtocolTrustedAddresses`):
    /// closed before any request is read, so the peer cannot name another client address.
    #[error("PROXY preface from a peer that is not a trusted proxy")]
    UntrustedProxy,
    /// A TLS ClientHello while `tls.server.mode` is `disabled`.
    #[error("TLS connection refused: tls.server.mode is disabled")]
    TlsDisabled,
    /// Plaintext while `tls.server.mode` is `enforcing`.
    #[error("plaintext connection refused: tls.server.mode is enforcing")]
    PlaintextRefused,
    /// A TLS ClientHello but no TLS configuration could be built.
    #[error("TLS connection refused: no TLS context is loaded")]
    NoTlsContext,
    /// The TLS handshake failed (bad ClientHello, missing or untrusted client certificate, …).
    #[error("TLS handshake failed: {0}")]
    Handshake(#[source] io::Error),
    /// A socket error while reading the preface.
    #[error("I/O error during connection set-up: {0}")]
    Io(#[from] io::Error),
}

impl TransportError {
    /// A short name of the reason (the `reason` label of `connections_refused_total`).
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Timeout(_) => "timeout",
            Self::Proxy(_) => "bad_proxy_header",
            Self::UntrustedProxy => "untrusted_proxy",
            Self::TlsDisabled => "tls_disabled",
            Self::PlaintextRefused => "plaintext_refused",
            Self::NoTlsContext => "no_tls_context",
            Self::Handshake(_) => "tls_handshake",
            Self::Io(_) => "io",
        }
    }
}

/// Sets up a new connection once it sends its first byte: until then it is merely idle, bounded
/// only by `idle` (Java bounds it only by the idle timeout, `IdleStateHandler`); from that byte
/// on, [`negotiate`] within `handshake_timeout`.
pub async fn accept(
    tcp: TcpStream,
    peer: SocketAddr,
    proxy: Preface,
    tls: &TlsContext,
    idle: Option<Duration>,
    handshake_timeout: Duration,
) -> Result<Negotiated, TransportError> {
    let mut byte = [0u8; 1];
    let first_byte = tcp.peek(&mut byte);
    match idle {
        Some(idle) => match tokio::time::timeout(idle, first_byte).await {
            Ok(peeked) => drop(peeked?),
            Err(_) => return Err(TransportError::Timeout(idle)),
        },
        None => drop(first_byte.await?),
    }
    negotiate(tcp, peer, proxy, tls, handshake_timeout).await
}

/// Whether a PROXY preface is honoured from this TCP peer: the caller decides (it holds the
/// trusted-proxy list, `proxyProtocolTrustedAddresses`) before the first byte is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preface {
    /// The peer is a trusted proxy: a preface's source becomes the client address.
    Honoured,
    /// Any other peer: a preface closes the connection ([`TransportError::UntrustedProxy`]).
    Refused,
}

/// Sets up an accepted connection: an optional PROXY v1/v2 preface (only from a trusted proxy,
/// `proxy`; from any other peer the connection is refused before anything else is read), then TLS when the first data
/// byte is `0x16` (refused when the mode is `disabled`), else plaintext (refused when `enforcing`).
///
/// Bytes read while detecting are replayed to the returned stream. The whole set-up is bounded by
/// `handshake_timeout`. Without a PROXY preface the socket is only peeked, never copied.
/// Java: `NettyRemotingServer.HandshakeHandler#decode`, `TlsModeHandler#channelRead0`
pub async fn negotiate(
    tcp: TcpStream,
    peer: SocketAddr,
    proxy: Preface,
    tls: &TlsContext,
    handshake_timeout: Duration,
) -> Result<Negotiated, TransportError> {
    tokio::time::timeout(handshake_timeout, negotiate_untimed(tcp, peer, proxy, tls))
        .await
        .unwrap_or(Err(TransportError::Timeout(handshake_timeout)))
}

async fn negotiate_untimed(
    mut tcp: TcpStream,
    tcp_peer: SocketAddr,
    proxy: Preface,
    tls: &TlsContext,
) -> Result<Negotiated, TransportError> {
    let mut peer = tcp_peer;
    let first = peek_byte(&tcp).await?;
    let mut replay = Bytes::new();
    let mut proxied = false;
    let first = match proxy::decode(&[first])? {
        proxy::Decoded::NotProxy => first,
        _ => {
            let (header, rest) = read_proxy(&mut tcp).await?;
            if header.is_some() && proxy == Preface::Refused {
                return Err(TransportError::UntrustedProxy);
            }
            proxied = header.is_some();
            if let Some(source) = header.and_then(|h| h.source) {
                tracing::debug!(tcp_peer = %peer, %source, "PROXY preface");
                peer = source;
            }
            replay = rest;
            match replay.first() {
                Some(&b) => b,
                None => peek_byte(&tcp).await?,
            }
        }
    };

    if first == TLS_HANDSHAKE_RECORD {
        if tls.mode() == TlsMode::Disabled {
            return Err(TransportError::TlsDisabled);
        }
        let acceptor = tls.acceptor().ok_or(TransportError::NoTlsContext)?;
        // A peer closing without close_notify is an ordinary disconnect (see `unclean`).
        let verified = tls.verifies_client_certificates();
        let (stream, certificate_cn): (BoxedStream, _) = if replay.is_empty() {
            let tls_stream = acceptor.accept(tcp).await.map_err(TransportError::Handshake)?;
            let cn = verified.then(|| tls::client_cn(tls_stream.get_ref().1)).flatten();
            (Box::pin(UncleanEof::new(tls_stream)), cn)
        } else {
            let io = Rewind::new(replay, tcp);
            let tls_stream = acceptor.accept(io).await.map_err(TransportError::Handshake)?;
            let cn = verified.then(|| tls::client_cn(tls_stream.get_ref().1)).flatten();
            (Box::pin(UncleanEof::new(tls_stream)), cn)
        };
        return Ok(Negotiated { stream, peer, tcp_peer, tls: true, proxied, certificate_cn });
    }
    if tls.mode() == TlsMode::Enforcing {
        return Err(TransportError::PlaintextRefused);
    }
    let stream: BoxedStream =
        if replay.is_empty() { Box::pin(tcp) } else { Box::pin(Rewind::new(replay, tcp)) };
    Ok(Negotiated { stream, peer, tcp_peer, tls: false, proxied, certificate_cn: None })
}

/// Waits for the first unread byte without consuming it.
async fn peek_byte(tcp: &TcpStream) -> Result<u8, TransportError> {
    let mut byte = [0u8; 1];
    if tcp.peek(&mut byte).await? == 0 {
        return Err(TransportError::Closed);
    }
    Ok(byte[0])
}

/// Reads until the PROXY preface is decoded (or ruled out); returns it and the bytes read past it.
async fn read_proxy(tcp: &mut TcpStream) -> Result<(Option<ProxyHeader>, Bytes), TransportError> {
    let mut buf = BytesMut::with_capacity(256);
    loop {
        if buf.len() == buf.capacity() {
            buf.reserve(4096);
        }
        if tcp.read_buf(&mut buf).await? == 0 {
            return Err(TransportError::Closed);
        }
        match proxy::decode(&buf)? {
            proxy::Decoded::Incomplete => {}
            proxy::Decoded::NotProxy => return Ok((None, buf.freeze())),
            proxy::Decoded::Header { header, len } => {
                let rest = buf.split_off(len);
                return Ok((Some(header), rest.freeze()));
            }
        }
    }
}
