//! The accept loop, the per-connection task and the drain on shutdown.
//!
//! Each connection is one task: it reads frames, answers them in order through `dispatch`, and
//! flushes when no further frame is immediately available, so pipelined requests are answered in
//! one write. A decode error closes only that connection; so does the idle timeout.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use futures::{FutureExt, SinkExt, StreamExt};
use remoting::frame::{FrameError, RemotingCodec};
use remoting::RemotingCommand;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

use crate::dispatch;
use crate::listen::Listeners;
use crate::metrics::RequestResult;
use crate::shutdown::{self, Shutdown};
use crate::state::{ConnCtx, Readiness, State};
use crate::transport::Counted;

/// How long connections may take to drain after shutdown before they are dropped.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Serves the remoting listener (and the HTTP listener, if any) with `state` until `shutdown`
/// completes, then: `/readyz` turns 503, the server stops accepting (after the graceful window,
/// if configured), lets every connection answer what it has already received, stops the
/// background tasks, and only then stops the HTTP listener (so `/healthz` answers to the end).
pub async fn serve(
    listeners: impl Into<Listeners>,
    state: Arc<State>,
    shutdown: impl Future<Output = ()>,
) {
    let Listeners { remoting: listener, http } = listeners.into();
    if let Ok(addr) = listener.local_addr() {
        state.set_remoting_addr(addr);
    }
    let (http_trigger, mut http_shutdown) = shutdown::channel();
    let http_task =
        http.map(|http| {
            tokio::spawn(crate::http::serve(http, state.clone(), async move {
                http_shutdown.recv().await
            }))
        });
    let (trigger, conn_shutdown) = shutdown::channel();
    let background = crate::background::spawn_all(&state, &trigger);
    let mut conns = JoinSet::new();
    state.set_readiness(Readiness::Ready);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let state = state.clone();
                    let shutdown = conn_shutdown.clone();
                    conns.spawn(async move { accept_one(state, tcp, peer, shutdown).await });
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            _ = &mut shutdown => break,
        }
    }
    state.set_readiness(Readiness::Draining);
    info!("shutdown requested: no longer accepting connections");
    let grace = state.graceful_shutdown_window();
    if let Some(window) = grace {
        // Java enableShutdownGracefully: keep serving (new clients get GO_AWAY) for the window.
        state.set_shutting_down();
        info!(seconds = window.as_secs(), "answering GO_AWAY during the graceful window");
        let serve_window = async {
            loop {
                match listener.accept().await {
                    Ok((tcp, peer)) => {
                        let (state, shutdown) = (state.clone(), conn_shutdown.clone());
                        conns.spawn(async move { accept_one(state, tcp, peer, shutdown).await });
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        };
        let _ = tokio::time::timeout(window, serve_window).await;
    }
    drop(listener);
    // No GO_AWAY while draining unless the graceful window asked for it (Java sets
    // `isShuttingDown` only with enableShutdownGracefully): what was received is answered.
    trigger.trigger();
    let drained =
        tokio::time::timeout(DRAIN_LIMIT, async { while conns.join_next().await.is_some() {} })
            .await;
    if drained.is_err() {
        warn!(
            remaining = conns.len(),
            "connections still open after the drain limit; dropping them"
        );
        conns.shutdown().await;
    }
    for task in background {
        let _ = task.await;
    }
    let lane_state = Arc::clone(&state);
    let _ = tokio::task::spawn_blocking(move || lane_state.register_lane.stop()).await;
    state.events.close();
    http_trigger.trigger();
    if let Some(task) = http_task {
        let _ = task.await;
    }
    info!("nameserver stopped");
}

async fn accept_one(state: Arc<State>, tcp: TcpStream, peer: SocketAddr, shutdown: Shutdown) {
    if let Err(e) = tcp.set_nodelay(true) {
        debug!(%peer, error = %e, "set_nodelay failed");
    }
    let (id, close) = state.open_connection();
    match state.negotiate(tcp, peer).await {
        Ok(negotiated) => {
            let metrics = &state.metrics;
            let labels = metrics.connection_opened(negotiated.tls, negotiated.proxied);
            let ctx = ConnCtx {
                certificate_cn: negotiated.certificate_cn.map(Arc::from),
                ..ConnCtx::new(id, negotiated.peer, close)
            };
            let counters = metrics
                .enabled()
                .then(|| (metrics.received_bytes.clone(), metrics.sent_bytes.clone()));
            let stream = crate::transport::Fair::new(Counted::new(negotiated.stream, counters));
            serve_connection(&state, stream, &ctx, shutdown).await;
            state.metrics.connection_closed(&labels);
        }
        Err(e) => {
            state.metrics.connections_refused.get_or_create(&[("reason", e.reason())]).inc();
            debug!(%peer, error = %e, "connection refused during negotiation");
        }
    }
    state.connection_closed(id);
}

/// Reads, dispatches and answers frames on one connection until EOF, a decode error, the idle
/// timeout or shutdown (after answering everything already received).
pub async fn serve_connection<S>(
    state: &Arc<State>,
    stream: S,
    ctx: &ConnCtx,
    mut shutdown: Shutdown,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin,
{
    // One task owns the whole stream (no split halves to synchronise): read what is there,
    // answer it, flush once per batch.
    let mut framed = Framed::new(stream, RemotingCodec::new());
    // Answers are buffered up to this much before a write is forced mid-batch (tokio-util's
    // default, 8 KiB, is under five 1.7 KB routes: a batch of pipelined reads took two writes).
    framed.set_backpressure_boundary(WRITE_BATCH);
    let idle = state.idle_timeout();
    // One long-lived idle timer, re-armed only when it fires (not once per request).
    let idle_timer = tokio::time::sleep(idle);
    tokio::pin!(idle_timer);
    let mut draining = shutdown.is_shutdown();
    let mut large_frames = LargeFrames::default();
    // Request timing (metricsEnable): a request's time starts where the previous answer of
    // the batch ended (one clock read per request), or when it is taken up after a wait.
    let timing = state.metrics.enabled();
    let mut mark: Option<std::time::Instant> = None;
    loop {
        let next = match framed.next().now_or_never() {
            Some(item) => item,
            None => {
                mark = None;
                if let Err(e) = SinkExt::<RemotingCommand>::flush(&mut framed).await {
                    debug!(peer = %ctx.peer, error = %e, "write failed; closing");
                    break;
                }
                if draining {
                    break;
                }
                match wait(&mut framed, idle_timer.as_mut(), idle, &mut shutdown, ctx).await {
                    Wake::Frame(item) => item,
                    Wake::Drain => {
                        draining = true;
                        continue;
                    }
                    Wake::Close => break,
                }
            }
        };
        match next {
            None => break,
            Some(Err(e)) => {
                warn!(peer = %ctx.peer, error = %e, "bad frame; closing the connection");
                break;
            }
            Some(Ok(request)) => {
                let started = timing.then(|| mark.unwrap_or_else(std::time::Instant::now));
                let (code, counted) = (request.code, !request.is_response());
                if framed.read_buffer().capacity() - framed.read_buffer().len() < READ_ROOM / 2 {
                    // Room for the next batch in one read (tokio-util reserves a single byte,
                    // so reads into the tail of a nearly full buffer came in small pieces).
                    framed.read_buffer_mut().reserve(READ_ROOM);
                }
                let large = request.body_bytes().len() > READ_BUFFER_KEEP;
                // `None`: answered in place (GET_ROUTEINFO_BY_TOPIC, after access control).
                let answer = if request.code == ROUTE_CODE {
                    match dispatch::admit(state, ctx, &request) {
                        Ok(who) => {
                            if crate::handler::route::write_route(
                                state,
                                &request,
                                framed.write_buffer_mut(),
                            ) {
                                None
                            } else {
                                Some(dispatch::dispatch_admitted(state, ctx, request, who).await)
                            }
                        }
                        Err(refused) => Some(dispatch::finish(state, &request, refused)),
                    }
                } else {
                    Some(dispatch::dispatch(state, ctx, request).await)
                };
                let result = match answer {
                    None => {
                        // Flush mid-batch like `feed` would past the boundary.
                        if framed.write_buffer().len() >= WRITE_BATCH {
                            if let Err(e) = SinkExt::<RemotingCommand>::flush(&mut framed).await {
                                debug!(peer = %ctx.peer, error = %e, "write failed; closing");
                                break;
                            }
                        }
                        RequestResult::Answered(SUCCESS)
                    }
                    Some(Some(response)) => {
                        let code = response.code;
                        if let Err(e) = framed.feed(response).await {
                            debug!(peer = %ctx.peer, error = %e, "write failed; closing");
                            break;
                        }
                        RequestResult::Answered(code)
                    }
                    Some(None) => RequestResult::Oneway,
                };
                if let Some(started) = started {
                    if counted {
                        let now = std::time::Instant::now();
                        state.metrics.requests.record(code, result, now - started);
                        mark = Some(now);
                    }
                }
                if large && large_frames.handled(Instant::now()) {
                    shrink_read_buffer(framed.read_buffer_mut());
                }
            }
        }
    }
    let _ = SinkExt::<RemotingCommand>::flush(&mut framed).await;
}

/// GET_ROUTEINFO_BY_TOPIC, answered in place when it can be (see `handler::route::write_route`).
const ROUTE_CODE: i32 = remoting::RequestCode::GetRouteinfoByTopic.to_i32();

const SUCCESS: i32 = remoting::ResponseCode::Success.to_i32();

/// See `set_backpressure_boundary` in [`serve_connection`].
const WRITE_BATCH: usize = 64 * 1024;

/// Spare read-buffer room kept for the next read (a batch of pipelined requests).
const READ_ROOM: usize = 8 * 1024;

/// Frames with a body larger than this (a broker's multi-MB registration) leave the read buffer
/// pointing into their allocation; it is then replaced (see [`shrink_read_buffer`]).
const READ_BUFFER_KEEP: usize = 64 * 1024;

/// A connection whose large frames come closer together than this (a broker re-registering in
/// a loop) keeps its large read buffer for the next one: mapping a fresh multi-MB buffer each
/// time costs a page fault per 4 KiB. A broker re-registering every 30 s gets a small buffer
/// back after each registration.
const KEEP_LARGE_BUFFER_WITHIN: Duration = Duration::from_secs(1);

/// When a connection last handled a large frame.
#[derive(Default)]
struct LargeFrames {
    last: Option<Instant>,
}

impl LargeFrames {
    /// Records a large frame handled at `now`; whether to shrink the read buffer (not when the
    /// previous large frame was less than [`KEEP_LARGE_BUFFER_WITHIN`] ago).
    fn handled(&mut self, now: Instant) -> bool {
        let again = self.last.is_some_and(|t| now.duration_since(t) < KEEP_LARGE_BUFFER_WITHIN);
        self.last = Some(now);
        !again
    }
}

/// Replaces the read buffer by a fresh one holding only the bytes not yet decoded, so the
/// multi-MB allocation of the previous frame is freed instead of kept alive by the buffer's
/// view of its tail until the broker's next registration.
fn shrink_read_buffer(buf: &mut BytesMut) {
    let mut fresh = BytesMut::with_capacity(buf.len().max(8 * 1024));
    fresh.extend_from_slice(buf);
    *buf = fresh;
}

/// Why a quiet connection woke up.
enum Wake {
    Frame(Option<Result<RemotingCommand, FrameError>>),
    /// Shutdown: answer what was received, then close.
    Drain,
    /// Idle for `serverChannelMaxIdleTimeSeconds`, or closed by the server (expired broker).
    Close,
}

/// Waits for the next frame, the idle deadline (counted from now), shutdown or a close request.
async fn wait<S>(
    framed: &mut Framed<S, RemotingCodec>,
    mut idle_timer: Pin<&mut Sleep>,
    idle: Duration,
    shutdown: &mut Shutdown,
    ctx: &ConnCtx,
) -> Wake
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let quiet_since = Instant::now();
    loop {
        tokio::select! {
            item = framed.next() => return Wake::Frame(item),
            () = &mut idle_timer => {
                let deadline = quiet_since + idle;
                if Instant::now() >= deadline {
                    info!(peer = %ctx.peer, "connection idle; closing");
                    return Wake::Close;
                }
                idle_timer.as_mut().reset(deadline);
            }
            () = shutdown.recv() => return Wake::Drain,
            () = ctx.close.notified() => {
                info!(peer = %ctx.peer, "closing the connection of an expired broker");
                return Wake::Close;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_buffer_is_kept_only_between_close_large_frames() {
        let start = Instant::now();
        let mut frames = LargeFrames::default();
        assert!(frames.handled(start), "a first large frame: shrink");
        assert!(!frames.handled(start + Duration::from_millis(80)), "a quick second: keep");
        assert!(!frames.handled(start + Duration::from_millis(900)), "and a third");
        assert!(frames.handled(start + Duration::from_secs(31)), "30 s later: shrink");
    }

    #[test]
    fn shrinking_keeps_undecoded_bytes_in_a_small_buffer() {
        let mut buf = BytesMut::with_capacity(4 << 20);
        buf.extend_from_slice(b"next frame's first bytes");
        shrink_read_buffer(&mut buf);
        assert_eq!(&buf[..], b"next frame's first bytes");
        assert!(buf.capacity() < 64 * 1024);
    }
}
