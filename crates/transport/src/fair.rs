//! `Fair`: a read-side wrapper that keeps one connection receiving a multi-MB frame from holding
//! its async worker (and every other connection on it) for milliseconds: a read takes at most
//! [`MAX_READ`] bytes, and bytes read are charged to the task's cooperative budget (one unit per
//! [`BYTES_PER_BUDGET_UNIT`]), so after about half a MiB in one poll the task yields to the
//! others. Small reads (request traffic) are passed through unchanged.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::task::coop;

/// The most bytes one read takes when the caller offers more room.
pub const MAX_READ: usize = 256 * 1024;

/// Bytes read per unit of the task's cooperative budget (128 units per poll in tokio).
pub const BYTES_PER_BUDGET_UNIT: usize = 4096;

/// See the module documentation.
#[derive(Debug)]
pub struct Fair<S> {
    inner: S,
}

impl<S> Fair<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Fair<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let progress = ready!(coop::poll_proceed(cx));
        let before = buf.filled().len();
        if buf.remaining() > MAX_READ {
            // Read into a bounded window of the caller's buffer, lent as it is: `poll_read_buf`
            // gives the inner reader a `ReadBuf` over the window and advances the caller's by
            // what it read. (Zeroing the window to lend it, as `ReadBuf::new` needs, cost a
            // 256 KiB memset per read, on a buffer that is new at every read: 6 % of the
            // server's time in S2, 1.1 GB/s of registration bodies.)
            let mut limited = bytes::BufMut::limit(&mut *buf, MAX_READ);
            ready!(tokio_util::io::poll_read_buf(Pin::new(&mut self.inner), cx, &mut limited))?;
        } else {
            ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        }
        progress.made_progress();
        let read = buf.filled().len() - before;
        for _ in 1..read / BYTES_PER_BUDGET_UNIT {
            match coop::poll_proceed(cx) {
                Poll::Ready(unit) => unit.made_progress(),
                // Out of budget: the next read yields (the waker is registered).
                Poll::Pending => break,
            }
        }
        Poll::Ready(Ok(()))
    }
}

forward_async_write!(Fair);

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn large_reads_are_bounded_and_everything_arrives() {
        let (mut tx, rx) = tokio::io::duplex(4 << 20);
        let data: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
        tx.write_all(&data).await.expect("write");
        drop(tx);
        let mut fair = Fair::new(rx);
        let mut buf = vec![0u8; 4 << 20];
        let n = fair.read(&mut buf).await.expect("read");
        assert_eq!(n, MAX_READ, "one read takes a bounded window");
        let mut rest = Vec::new();
        fair.read_to_end(&mut rest).await.expect("read rest");
        assert_eq!([&buf[..n], &rest[..]].concat(), data);
    }

    #[tokio::test]
    async fn a_task_reading_a_large_frame_yields_to_others() {
        let (mut tx, rx) = tokio::io::duplex(8 << 20);
        tx.write_all(&vec![7u8; 4 << 20]).await.expect("write");
        let mut fair = Fair::new(rx);
        // A single-threaded runtime: the other task can only run if the reader yields.
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::task::yield_now().await;
                }
            })
        };
        let mut buf = bytes::BytesMut::with_capacity(4 << 20);
        let mut reads_seen_ticks = Vec::new();
        while buf.len() < 4 << 20 {
            fair.read_buf(&mut buf).await.expect("read");
            reads_seen_ticks.push(ticks.load(std::sync::atomic::Ordering::Relaxed));
        }
        ticker.abort();
        assert!(reads_seen_ticks.len() >= 16, "4 MiB in bounded reads");
        assert!(
            *reads_seen_ticks.last().unwrap() >= 2,
            "the other task ran while the frame was read: {reads_seen_ticks:?}"
        );
    }
}
