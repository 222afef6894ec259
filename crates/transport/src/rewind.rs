//! `Rewind`: a stream that first replays bytes already read during detection, then reads the inner stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, ReadBuf};

/// Replays `prefix` before reading from `inner`; writes go straight to `inner`.
#[derive(Debug)]
pub struct Rewind<S> {
    prefix: Bytes,
    inner: S,
}

impl<S> Rewind<S> {
    /// Wraps `inner` so that `prefix` is read first.
    pub fn new(prefix: Bytes, inner: S) -> Self {
        Rewind { prefix, inner }
    }

    /// The inner stream (bytes of the prefix not yet read are dropped).
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.prefix.has_remaining() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

forward_async_write!(Rewind);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn prefix_is_read_before_the_inner_stream() {
        let inner: &[u8] = b" world";
        let mut s = Rewind::new(Bytes::from_static(b"hello"), inner);
        let mut small = [0u8; 3];
        assert_eq!(s.read(&mut small).await.unwrap(), 3);
        assert_eq!(&small, b"hel");
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"lo world");
    }
}
