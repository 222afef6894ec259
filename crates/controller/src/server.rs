//! The controller port: the accept loop, one task per connection (controller requests run
//! concurrently, up to `controllerThreadPoolNums` at a time, answered as they finish and
//! matched by opaque; Raft RPCs are served in order on their connection), the broker liveness
//! scan and the leader's scan for inactive masters. Closing a broker's connection makes it
//! inactive at once, like Java's channel-close listener.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use remoting::{RemotingCodec, RemotingCommand, ResponseCode};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use crate::dispatch::dispatch;
use crate::failover;
use crate::guard::{Conn, Guard};
use crate::metrics::Trigger;
use crate::node::Node;
use crate::raft::network;

/// Delay before the first liveness scan (Java: 2000 ms).
const FIRST_SCAN: Duration = Duration::from_secs(2);

/// The open connections, so the liveness scan can close an expired broker's.
#[derive(Default)]
struct Connections {
    next: AtomicU64,
    open: Mutex<HashMap<u64, CancellationToken>>,
}

impl Connections {
    fn open(&self) -> (u64, CancellationToken) {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let token = CancellationToken::new();
        self.open.lock().unwrap_or_else(PoisonError::into_inner).insert(id, token.clone());
        (id, token)
    }

    fn close(&self, id: u64) {
        if let Some(t) = self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&id) {
            t.cancel();
        }
    }
}

/// Limits concurrent controller requests: `controllerThreadPoolNums` run, up to
/// `controllerRequestThreadPoolQueueCapacity` wait, the rest are refused with SYSTEM_BUSY.
struct Pool {
    running: Semaphore,
    waiting: AtomicUsize,
    capacity: usize,
}

/// Serves the controller port on `listener` for `node` until `shutdown` completes, then stops
/// accepting, closes the connections and stops the node.
pub async fn serve(
    listener: TcpListener,
    node: Arc<Node>,
    guard: Guard,
    shutdown: impl Future<Output = ()>,
) {
    let guard = Arc::new(guard);
    let stop = node.stop_token();
    let conns = Arc::new(Connections::default());
    let config = node.config().snapshot();
    let pool = Arc::new(Pool {
        running: Semaphore::new(usize::try_from(config.controller_thread_pool_nums).unwrap_or(16)),
        waiting: AtomicUsize::new(0),
        capacity: usize::try_from(config.controller_request_thread_pool_queue_capacity)
            .unwrap_or(50_000),
    });
    let idle = Duration::from_secs(
        u64::try_from(config.server_channel_max_idle_time_seconds).unwrap_or(120),
    );
    tokio::spawn(liveness_scan(
        node.clone(),
        conns.clone(),
        config.scan_not_active_broker_interval(),
    ));
    tokio::spawn(master_scan(node.clone(), config.scan_inactive_master_interval()));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let _ = tcp.set_nodelay(true);
                    let (node, conns, pool) = (node.clone(), conns.clone(), pool.clone());
                    let guard = guard.clone();
                    tokio::spawn(async move {
                        let (id, close) = conns.open();
                        // TLS as `tls.server.mode` says; a PROXY preface is never honoured here.
                        let negotiated = transport::accept(
                            tcp,
                            peer,
                            transport::Preface::Refused,
                            &guard.tls,
                            Some(idle),
                            transport::HANDSHAKE_TIMEOUT,
                        )
                        .await;
                        match negotiated {
                            Ok(negotiated) => {
                                let conn = Conn {
                                    id,
                                    peer: negotiated.peer,
                                    certificate_cn: negotiated.certificate_cn.map(Arc::from),
                                };
                                let stream = negotiated.stream;
                                serve_connection(&node, &guard, stream, conn, close, &pool, idle)
                                    .await;
                            }
                            Err(e) => {
                                tracing::debug!(%peer, error = %e, reason = e.reason(), "controller connection refused during negotiation");
                            }
                        }
                        conns.close(id);
                        tracing::debug!(%peer, "controller connection closed");
                        let gone = node.with_heartbeats(|t| t.connection_closed(id));
                        if let Some(gone) = gone {
                            failover::on_broker_inactive(&node, gone, Trigger::MasterLost).await;
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            () = &mut shutdown => break,
            () = stop.cancelled() => break,
        }
    }
    drop(listener);
    // Stopping before the connections close: their closing is no broker failure.
    stop.cancel();
    let open: Vec<u64> =
        conns.open.lock().unwrap_or_else(PoisonError::into_inner).keys().copied().collect();
    for id in open {
        conns.close(id);
    }
    node.shutdown().await;
    tracing::info!("controller stopped");
}

async fn serve_connection(
    node: &Arc<Node>,
    guard: &Arc<Guard>,
    stream: transport::BoxedStream,
    conn: Conn,
    close: CancellationToken,
    pool: &Arc<Pool>,
    idle: Duration,
) {
    let conn = Arc::new(conn);
    let (read, write) = tokio::io::split(stream);
    let mut frames = FramedRead::new(read, RemotingCodec::new());
    let (tx, mut rx) = mpsc::channel::<RemotingCommand>(1024);
    let writer = tokio::spawn(async move {
        let mut out = FramedWrite::new(write, RemotingCodec::new());
        while let Some(cmd) = rx.recv().await {
            if out.feed(cmd).await.is_err() {
                return;
            }
            while let Ok(more) = rx.try_recv() {
                if out.feed(more).await.is_err() {
                    return;
                }
            }
            if SinkExt::<RemotingCommand>::flush(&mut out).await.is_err() {
                return;
            }
        }
    });
    loop {
        let next = tokio::select! {
            () = close.cancelled() => break,
            next = tokio::time::timeout(idle, frames.next()) => next,
        };
        let request = match next {
            Err(_) => {
                tracing::info!(conn = conn.id, "controller connection idle; closing");
                break;
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                tracing::warn!(conn = conn.id, error = %e, "bad frame; closing the connection");
                break;
            }
            Ok(Some(Ok(request))) => request,
        };
        let code = request.code;
        if network::is_raft_rpc(code) || code == remoting::RequestCode::BrokerHeartbeat.to_i32() {
            // In order on this connection, never behind a slow controller request.
            if let Some(resp) = dispatch(node, guard, &conn, request).await {
                if tx.send(resp).await.is_err() {
                    break;
                }
            }
            continue;
        }
        if pool.waiting.load(Ordering::Relaxed) >= pool.capacity {
            let busy = RemotingCommand::response(
                ResponseCode::SystemBusy,
                Some("[REJECTREQUEST]system busy, start flow control for a while".into()),
            )
            .respond_to(&request);
            if !request.is_oneway() && tx.send(busy).await.is_err() {
                break;
            }
            continue;
        }
        let (node, pool, tx) = (node.clone(), pool.clone(), tx.clone());
        let (guard, conn) = (guard.clone(), conn.clone());
        pool.waiting.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            let permit = pool.running.acquire().await;
            pool.waiting.fetch_sub(1, Ordering::Relaxed);
            let Ok(_permit) = permit else { return };
            if let Some(resp) = dispatch(&node, &guard, &conn, request).await {
                let _ = tx.send(resp).await;
            }
        });
    }
    drop(tx);
    // Answers still being computed keep the writer alive until they are sent.
    let _ = writer.await;
}

/// Drops brokers whose heartbeats stopped, closes their connections and lets the leader elect
/// where a master went. Java: `DefaultBrokerHeartbeatManager#scanNotActiveBroker`
async fn liveness_scan(node: Arc<Node>, conns: Arc<Connections>, every: Duration) {
    let stop = node.stop_token();
    let mut tick = tokio::time::interval_at(Instant::now() + FIRST_SCAN, every);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let expired = node.with_heartbeats(|t| t.expire(Instant::now()));
        for gone in expired {
            tracing::warn!(broker = %gone.key.broker_name, id = gone.key.broker_id, "broker heartbeat expired");
            if let Some(conn) = gone.conn {
                conns.close(conn);
            }
            let node = node.clone();
            tokio::spawn(async move {
                failover::on_broker_inactive(&node, gone, Trigger::HeartbeatTimeout).await;
            });
        }
    }
}

/// The leader's periodic scan for inactive masters. Java: `DLedgerController` scan task
async fn master_scan(node: Arc<Node>, every: Duration) {
    let stop = node.stop_token();
    let mut tick = tokio::time::interval_at(Instant::now() + every, every);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => failover::scan_inactive_masters(&node).await,
        }
    }
}
