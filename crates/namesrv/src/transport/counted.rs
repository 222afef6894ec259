//! `Counted`: a stream wrapper that adds the bytes read and written to two counters (the
//! `received_bytes_total` / `sent_bytes_total` metrics): one relaxed add on the thread's stripe
//! per read or write call, not per byte.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::metrics::Striped;

/// A byte counter shared by every connection.
pub type ByteCounter = Counter<u64, Striped>;

/// See the module documentation. With no counters it only forwards.
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    counters: Option<(ByteCounter, ByteCounter)>,
}

impl<S> Counted<S> {
    /// Wraps `inner`; `counters` are (received, sent), `None` to count nothing.
    pub fn new(inner: S, counters: Option<(ByteCounter, ByteCounter)>) -> Self {
        Self { inner, counters }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if let Some((received, _)) = &self.counters {
            received.inc_by((buf.filled().len() - before) as u64);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        if let Some((_, sent)) = &self.counters {
            sent.inc_by(n as u64);
        }
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
        if let Some((_, sent)) = &self.counters {
            sent.inc_by(n as u64);
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn bytes_both_ways_are_counted() {
        let (a, mut b) = tokio::io::duplex(64);
        let (received, sent) = (ByteCounter::default(), ByteCounter::default());
        let mut counted = Counted::new(a, Some((received.clone(), sent.clone())));
        counted.write_all(b"hello").await.expect("write");
        let mut five = [0u8; 5];
        b.read_exact(&mut five).await.expect("read");
        b.write_all(b"abc").await.expect("write");
        let mut three = [0u8; 3];
        counted.read_exact(&mut three).await.expect("read");
        assert_eq!((received.get(), sent.get()), (3, 5));
    }
}
