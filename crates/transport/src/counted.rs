//! `Counted`: a stream wrapper that adds the bytes read and written to two counters (the
//! server's `received_bytes_total` / `sent_bytes_total`): one [`ByteCounter::add`] per read or
//! write call, not per byte. The counter type is the caller's (the nameserver's is striped per
//! thread); this crate knows no metrics.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Where [`Counted`] adds the bytes it saw: a counter shared by every connection.
pub trait ByteCounter: Send + Sync {
    /// Adds `n` bytes.
    fn add(&self, n: u64);
}

impl ByteCounter for AtomicU64 {
    #[inline]
    fn add(&self, n: u64) {
        self.fetch_add(n, Ordering::Relaxed);
    }
}

impl<C: ByteCounter + ?Sized> ByteCounter for Arc<C> {
    #[inline]
    fn add(&self, n: u64) {
        (**self).add(n);
    }
}

/// See the module documentation. With no counters it only forwards.
#[derive(Debug)]
pub struct Counted<S, C> {
    inner: S,
    counters: Option<(C, C)>,
}

impl<S, C> Counted<S, C> {
    /// Wraps `inner`; `counters` are (received, sent), `None` to count nothing.
    pub fn new(inner: S, counters: Option<(C, C)>) -> Self {
        Self { inner, counters }
    }
}

impl<S: AsyncRead + Unpin, C: ByteCounter + Unpin> AsyncRead for Counted<S, C> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if let Some((received, _)) = &self.counters {
            received.add((buf.filled().len() - before) as u64);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin, C: ByteCounter + Unpin> AsyncWrite for Counted<S, C> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, buf))?;
        if let Some((_, sent)) = &self.counters {
            sent.add(n as u64);
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
            sent.add(n as u64);
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
        let (received, sent) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let mut counted = Counted::new(a, Some((received.clone(), sent.clone())));
        counted.write_all(b"hello").await.expect("write");
        let mut five = [0u8; 5];
        b.read_exact(&mut five).await.expect("read");
        b.write_all(b"abc").await.expect("write");
        let mut three = [0u8; 3];
        counted.read_exact(&mut three).await.expect("read");
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        assert_eq!((get(&received), get(&sent)), (3, 5));
    }
}
