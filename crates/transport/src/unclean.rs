//! `UncleanEof`: a TLS stream on which a peer closing the TCP connection without a TLS
//! `close_notify` reads as an ordinary end of stream.
//!
//! rustls reports such a close as `ErrorKind::UnexpectedEof` (after every byte already received
//! has been read), to guard protocols that are not self-delimiting against truncation. RocketMQ
//! frames carry their own length, so a cut inside a frame is still caught by the frame codec;
//! a close between frames is a normal disconnect. Java clients and brokers (5.3.3) close this way
//! on shutdown, and Java's server (Netty `SslHandler`) treats it as a normal close too.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Reads `inner`, turning `ErrorKind::UnexpectedEof` into end of stream; writes go straight through.
#[derive(Debug)]
pub struct UncleanEof<S> {
    inner: S,
}

impl<S> UncleanEof<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        UncleanEof { inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for UncleanEof<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match ready!(Pin::new(&mut self.inner).poll_read(cx, buf)) {
            // Nothing is added to `buf`: the caller sees end of stream.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Poll::Ready(Ok(())),
            other => Poll::Ready(other),
        }
    }
}

forward_async_write!(UncleanEof);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Yields `data`, then fails every read with `kind`.
    struct ThenFail {
        data: &'static [u8],
        kind: io::ErrorKind,
    }

    impl AsyncRead for ThenFail {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.data.is_empty() {
                return Poll::Ready(Err(io::Error::new(self.kind, "injected")));
            }
            let n = self.data.len().min(buf.remaining());
            buf.put_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn missing_close_notify_reads_as_end_of_stream_after_the_data() {
        let inner = ThenFail { data: b"frame bytes", kind: io::ErrorKind::UnexpectedEof };
        let mut s = UncleanEof::new(inner);
        let mut all = Vec::new();
        s.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, b"frame bytes");
        assert_eq!(s.read(&mut [0u8; 4]).await.unwrap(), 0, "stays at end of stream");
    }

    #[tokio::test]
    async fn other_read_errors_pass_through() {
        let inner = ThenFail { data: b"", kind: io::ErrorKind::InvalidData };
        let mut s = UncleanEof::new(inner);
        let err = s.read(&mut [0u8; 4]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
