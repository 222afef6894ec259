//! One TCP connection to a remoting server: many requests in flight, matched to their responses
//! by `opaque`; a writer task that batches frames; a reader task that completes pending requests.
//!
//! Architecture invariant: a `Connection` never reconnects. Once closed it stays closed and the
//! [`crate::Client`] replaces it on the next call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use remoting::{RemotingCodec, RemotingCommand};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::codec::FramedRead;

use crate::error::{Error, Result};
use crate::tls::ClientTls;

/// Frames queued for the writer before callers wait for room.
const WRITE_QUEUE: usize = 1024;

/// Requests waiting for a response, and whether the connection is closed (both under one lock
/// so a request can never be registered on a connection that already failed its waiters).
#[derive(Default)]
struct Pending {
    waiters: HashMap<i32, oneshot::Sender<RemotingCommand>>,
    closed: Option<String>,
}

struct Shared {
    addr: String,
    pending: Mutex<Pending>,
    /// Flips to `true` once, when the connection closes.
    closed_tx: watch::Sender<bool>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the connection closed and fails every waiter (their receivers see the sender dropped).
    fn close(&self, reason: String) {
        let waiters = {
            let mut p = self.lock();
            if p.closed.is_none() {
                tracing::debug!(addr = %self.addr, %reason, "connection closed");
                p.closed = Some(reason);
            }
            std::mem::take(&mut p.waiters)
        };
        drop(waiters);
        self.closed_tx.send_replace(true);
    }

    fn closed_error(&self) -> Error {
        let reason = self.lock().closed.clone().unwrap_or_else(|| "closed".to_owned());
        Error::ConnectionClosed { addr: self.addr.clone(), reason }
    }
}

/// Removes a pending entry when the request finishes, times out or is cancelled.
struct PendingGuard<'a> {
    shared: &'a Shared,
    opaque: i32,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.shared.lock().waiters.remove(&self.opaque);
    }
}

/// A live connection. Dropping it stops the reader at once; the writer first sends what is queued.
pub(crate) struct Connection {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Outgoing>,
    reader: JoinHandle<()>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Connection {
    /// Connects to `addr` within `timeout` (the TLS handshake included, with `tls`) and starts
    /// the reader and writer tasks.
    pub(crate) async fn connect(
        addr: &str,
        timeout: Duration,
        tls: Option<&ClientTls>,
    ) -> Result<Self> {
        let connecting = async {
            let stream = TcpStream::connect(addr).await?;
            // Remoting traffic is small request/response frames: never wait for Nagle.
            let _ = stream.set_nodelay(true);
            match tls {
                None => Ok::<_, std::io::Error>(Stream::Plain(stream)),
                Some(tls) => Ok(Stream::Tls(Box::new(tls.connect(addr, stream).await?))),
            }
        };
        let stream = match tokio::time::timeout(timeout, connecting).await {
            Ok(Ok(s)) => s,
            Ok(Err(source)) => return Err(Error::Connect { addr: addr.to_owned(), source }),
            Err(_) => return Err(Error::ConnectTimeout { addr: addr.to_owned(), timeout }),
        };
        Ok(match stream {
            Stream::Plain(tcp) => {
                let (read, write) = tcp.into_split();
                Self::start(addr, read, write)
            }
            Stream::Tls(tls) => {
                let (read, write) = tokio::io::split(*tls);
                Self::start(addr, read, write)
            }
        })
    }

    fn start<R, W>(addr: &str, read: R, write: W) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (closed_tx, _) = watch::channel(false);
        let shared =
            Arc::new(Shared { addr: addr.to_owned(), pending: Mutex::default(), closed_tx });
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        tokio::spawn(write_loop(shared.clone(), write, rx));
        let reader = tokio::spawn(read_loop(shared.clone(), read));
        Self { shared, tx, reader }
    }

    pub(crate) fn addr(&self) -> &str {
        &self.shared.addr
    }

    /// True once the connection has failed or was closed by the peer.
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.lock().closed.is_some()
    }

    /// Resolves when the connection closes (at once if it already is).
    pub(crate) fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.shared.closed_tx.subscribe();
        async move {
            let _ = rx.wait_for(|closed| *closed).await;
        }
    }

    /// Sends `cmd` (its opaque already set) and waits up to `timeout` for the response with the
    /// same opaque. On timeout the pending entry is removed and a late response is dropped.
    pub(crate) async fn request(
        &self,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let code = cmd.code;
        let opaque = cmd.opaque;
        let frame = encode(cmd)?;
        let (otx, orx) = oneshot::channel();
        {
            let mut p = self.shared.lock();
            if p.closed.is_some() {
                drop(p);
                return Err(self.shared.closed_error());
            }
            p.waiters.insert(opaque, otx);
        }
        let _guard = PendingGuard { shared: &self.shared, opaque };
        let exchange = async {
            self.tx.send(frame).await.map_err(|_| self.shared.closed_error())?;
            orx.await.map_err(|_| self.shared.closed_error())
        };
        match tokio::time::timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout { addr: self.shared.addr.clone(), code, timeout }),
        }
    }

    /// Queues `cmd` (oneway bit already set) for writing; does not wait for it to be written.
    pub(crate) async fn send_oneway(&self, cmd: RemotingCommand, timeout: Duration) -> Result<()> {
        if self.is_closed() {
            return Err(self.shared.closed_error());
        }
        let code = cmd.code;
        let frame = encode(cmd)?;
        match tokio::time::timeout(timeout, self.tx.send(frame)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.shared.closed_error()),
            Err(_) => Err(Error::Timeout { addr: self.shared.addr.clone(), code, timeout }),
        }
    }
}

/// A connected stream, before it is split.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// Completes pending requests with the responses read; closes the connection at the end.
async fn read_loop<R: AsyncRead + Unpin>(shared: Arc<Shared>, read: R) {
    let mut frames = FramedRead::new(read, RemotingCodec::default());
    let reason = loop {
        match frames.next().await {
            Some(Ok(cmd)) if cmd.is_response() => {
                let waiter = shared.lock().waiters.remove(&cmd.opaque);
                match waiter {
                    Some(w) => {
                        let _ = w.send(cmd);
                    }
                    None => {
                        tracing::debug!(addr = %shared.addr, opaque = cmd.opaque, "response matches no pending request")
                    }
                }
            }
            Some(Ok(cmd)) => {
                // The nameserver only sends oneway notifications (e.g. 905); nothing to answer.
                tracing::debug!(addr = %shared.addr, code = cmd.code, "ignoring request from server");
            }
            Some(Err(e)) => break format!("bad frame: {e}"),
            None => break "closed by peer".to_owned(),
        }
    };
    shared.close(reason);
}

/// A frame to write: its prefix and header, then its body as given (a multi-MB registration
/// body is written from the caller's buffer, not copied into the frame).
struct Outgoing {
    head: Bytes,
    body: Option<Bytes>,
}

fn encode(cmd: RemotingCommand) -> Result<Outgoing> {
    let mut head = bytes::BytesMut::new();
    remoting::frame::encode_head_into(&cmd, &mut head).map_err(|e| Error::Encode(e.to_string()))?;
    Ok(Outgoing { head: head.freeze(), body: cmd.body })
}

/// Writes queued frames, flushing when the queue runs empty. Ends when every sender is gone
/// (after writing what was queued) or on a write error (which closes the connection).
async fn write_loop<W: AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    write: W,
    mut rx: mpsc::Receiver<Outgoing>,
) {
    let mut out = tokio::io::BufWriter::new(write);
    let result: std::io::Result<()> = async {
        while let Some(frame) = rx.recv().await {
            write_frame(&mut out, &frame).await?;
            while let Ok(more) = rx.try_recv() {
                write_frame(&mut out, &more).await?;
            }
            out.flush().await?;
        }
        out.shutdown().await
    }
    .await;
    match result {
        Ok(()) => shared.close("closed by client".to_owned()),
        Err(e) => shared.close(format!("write failed: {e}")),
    }
}

async fn write_frame<W: AsyncWrite + Unpin>(
    out: &mut tokio::io::BufWriter<W>,
    frame: &Outgoing,
) -> std::io::Result<()> {
    out.write_all(&frame.head).await?;
    if let Some(body) = &frame.body {
        if body.len() <= LARGE_BODY_CHUNK {
            out.write_all(body).await?;
        } else {
            // A multi-MB registration goes out in chunks, yielding between them, so the other
            // tasks of this worker (other connections, timers) are not held up for milliseconds.
            for chunk in body.chunks(LARGE_BODY_CHUNK) {
                out.write_all(chunk).await?;
                tokio::task::yield_now().await;
            }
        }
    }
    Ok(())
}

/// Bodies above this size are written in chunks of this size (see [`write_frame`]).
const LARGE_BODY_CHUNK: usize = 256 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::RequestCode;
    use tokio::net::TcpListener;

    impl Connection {
        fn pending_len(&self) -> usize {
            self.shared.lock().waiters.len()
        }
    }

    #[tokio::test]
    async fn timeout_and_cancellation_remove_the_pending_entry() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        // Accepts and never answers.
        let server = tokio::spawn(async move { listener.accept().await.map(|(s, _)| s) });
        let conn = Connection::connect(&addr, Duration::from_secs(5), None).await.expect("connect");
        let req = RemotingCommand::request(RequestCode::GetBrokerClusterInfo).with_opaque(7);
        let err =
            conn.request(req.clone(), Duration::from_millis(50)).await.expect_err("times out");
        assert!(matches!(err, Error::Timeout { .. }));
        assert_eq!(conn.pending_len(), 0);
        // A caller that gives up (drops the future) also leaves nothing behind.
        let _ = tokio::time::timeout(
            Duration::from_millis(20),
            conn.request(req, Duration::from_secs(60)),
        )
        .await;
        assert_eq!(conn.pending_len(), 0);
        assert!(!conn.is_closed());
        drop(server);
    }
}
