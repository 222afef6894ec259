//! The accept loop, the per-connection task and the drain on shutdown.
//!
//! Each connection is one task: it reads frames, answers them in order through `dispatch`, and
//! flushes when no further frame is immediately available, so pipelined requests are answered in
//! one write. A decode error closes only that connection; so does the idle timeout.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, SinkExt, StreamExt};
use remoting::frame::RemotingCodec;
use remoting::RemotingCommand;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::codec::{FramedRead, FramedWrite};
use tracing::{debug, info, warn};

use crate::dispatch::dispatch;
use crate::shutdown::{self, Shutdown};
use crate::state::{ConnCtx, State};

/// How long connections may take to drain after shutdown before they are dropped.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Serves `listener` with `state` until `shutdown` completes, then stops accepting, lets every
/// connection answer what it has already received, stops the background tasks and returns.
pub async fn serve(listener: TcpListener, state: Arc<State>, shutdown: impl Future<Output = ()>) {
    let (trigger, conn_shutdown) = shutdown::channel();
    let background = crate::background::spawn_all(&state, &trigger);
    let mut conns = JoinSet::new();
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
    info!("nameserver stopped");
}

async fn accept_one(state: Arc<State>, tcp: TcpStream, peer: SocketAddr, shutdown: Shutdown) {
    if let Err(e) = tcp.set_nodelay(true) {
        debug!(%peer, error = %e, "set_nodelay failed");
    }
    let (id, close) = state.open_connection();
    match state.negotiate(tcp, peer).await {
        Ok((stream, real_peer)) => {
            let ctx = ConnCtx { id, peer: real_peer, close };
            serve_connection(&state, stream, &ctx, shutdown).await;
        }
        Err(e) => debug!(%peer, error = %e, "connection refused during negotiation"),
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
    S: AsyncRead + AsyncWrite + Send,
{
    let (r, w) = tokio::io::split(stream);
    let mut reader = FramedRead::new(r, RemotingCodec::new());
    let mut writer = FramedWrite::new(w, RemotingCodec::new());
    let idle = state.idle_timeout();
    let mut draining = shutdown.is_shutdown();
    loop {
        let next = match reader.next().now_or_never() {
            Some(item) => item,
            None => {
                if let Err(e) = SinkExt::<RemotingCommand>::flush(&mut writer).await {
                    debug!(peer = %ctx.peer, error = %e, "write failed; closing");
                    break;
                }
                if draining {
                    break;
                }
                tokio::select! {
                    item = tokio::time::timeout(idle, reader.next()) => match item {
                        Ok(item) => item,
                        Err(_) => {
                            info!(peer = %ctx.peer, "connection idle; closing");
                            break;
                        }
                    },
                    _ = shutdown.recv() => {
                        draining = true;
                        continue;
                    }
                    _ = ctx.close.notified() => {
                        info!(peer = %ctx.peer, "closing the connection of an expired broker");
                        break;
                    }
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
                if let Some(response) = dispatch(state, ctx, request).await {
                    if let Err(e) = writer.feed(response).await {
                        debug!(peer = %ctx.peer, error = %e, "write failed; closing");
                        break;
                    }
                }
            }
        }
    }
    let _ = SinkExt::<RemotingCommand>::flush(&mut writer).await;
}
