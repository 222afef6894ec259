//! The server's shared state, a handful of handles: the config, the route tables, the KV
//! store, the caps (`limits`), access control (`access`), the sinks the core reports to
//! (`sinks`: counters, events, broker versions) and the route work done off the request path
//! (`work`); the server's life (clocks, readiness, shutdown) and its open connections sit
//! behind methods. One `Arc<State>` is shared by every connection, background task and HTTP
//! request. TLS is not here: `transport` negotiates it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use remoting::SerializeType;
use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::config::SharedConfig;
use crate::metrics::{Metrics, RemovalReason};
use crate::route::{ConnId, RouteTable, Routes, UnregisterRequest};
use kv::KvStore;

/// One accepted connection, as handlers see it.
#[derive(Debug, Clone)]
pub(crate) struct ConnCtx {
    /// The connection's identity, recorded with broker registrations (liveness fencing).
    pub id: ConnId,
    /// The client's address (from a trusted proxy's PROXY preface when there was one).
    pub peer: SocketAddr,
    /// The TCP peer when it is not `peer` (the trusted proxy that named `peer`).
    pub proxy: Option<SocketAddr>,
    /// Notified when the server wants this connection closed (its broker expired).
    pub close: Arc<tokio::sync::Notify>,
    /// The subject CN of the client's TLS certificate, when it presented one that was verified
    /// against `tls.server.trustCertPath` (an identity for access control).
    pub certificate_cn: Option<Arc<str>>,
    /// Whether the connection's last registration went to the registration lane: only then
    /// does its next large frame ask the lane gate (`crate::limits::LaneGate`) before it begins.
    pub to_lane: Arc<std::sync::atomic::AtomicBool>,
    /// Whether the connection's last registration changed part of its broker's table (it was
    /// applied as a difference): its next one is not digested on arrival (`handler::broker`).
    pub changing: Arc<std::sync::atomic::AtomicBool>,
}

impl ConnCtx {
    /// A plain connection (no client certificate).
    pub fn new(id: ConnId, peer: SocketAddr, close: Arc<tokio::sync::Notify>) -> Self {
        let (to_lane, changing) = (Arc::default(), Arc::default());
        ConnCtx { id, peer, proxy: None, close, certificate_cn: None, to_lane, changing }
    }
}

/// An unregistration waiting for the batch task, with why it was asked for.
pub(crate) type QueuedUnregister = (UnregisterRequest, RemovalReason);

/// Where the server is in its life, as `/readyz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Readiness {
    /// The state is built (KV store loaded) but the remoting listener is not served yet.
    Starting = 0,
    /// Accepting and serving remoting connections.
    Ready = 1,
    /// A shutdown has begun (graceful window, drain): load balancers should stop sending.
    Draining = 2,
}

impl Readiness {
    /// True only for [`Readiness::Ready`].
    pub fn is_ready(self) -> bool {
        self == Self::Ready
    }
}

/// Everything the handlers and background tasks share: a handful of handles (the config, the
/// route tables, the KV store, the caps, access control, the sinks the core reports to, the
/// route work done off the request path), and the server's life and connections behind
/// methods.
pub struct State {
    pub config: Arc<SharedConfig>,
    pub routes: Arc<Routes>,
    pub kv: Arc<KvStore>,
    /// The resource caps' shared counters and budgets.
    pub limits: Arc<crate::limits::Limits>,
    /// Who may connect and what they may ask.
    pub access: Access,
    /// What the core reports to: counters, events, the versions brokers registered with.
    pub sinks: Sinks,
    /// Route work done off the request path: the unregistration queue, the registration lane,
    /// the route snapshot file.
    pub work: Work,
    life: Life,
    conns: Connections,
}

/// Who may connect and what they may ask.
pub struct Access {
    /// Access control; `None` when `authenticationEnabled` is off (every request accepted).
    pub auth: Option<Arc<acl::Auth>>,
    /// The TCP peers whose PROXY preface is honoured (`proxyProtocolTrustedAddresses`, read at
    /// start).
    pub trusted_proxies: acl::AddrList,
}

/// What the core reports to; `crates/ops` reads them.
pub struct Sinks {
    /// The counters the server records (see `metrics/mod.rs`; `crates/ops` exposes them).
    pub metrics: Metrics,
    /// Recent changes, for the API and its live stream (`crates/events`).
    pub events: events::Events,
    /// The version each live broker registered with.
    pub versions: crate::versions::BrokerVersions,
}

/// Route work done off the request path.
pub struct Work {
    unregister_tx: mpsc::Sender<QueuedUnregister>,
    unregister_rx: std::sync::Mutex<Option<mpsc::Receiver<QueuedUnregister>>>,
    /// Where large registrations are decoded and applied: one thread per core but one (at
    /// least one): the route reads keep a core.
    pub(crate) lane: lane::Lane,
    /// The route snapshot file, when `routeSnapshotEnable` is on.
    pub route_snapshot: Option<crate::snapshot::SnapshotFile>,
    /// Tables the prepare thread decoded, for bodies that send them again (the scan expires them).
    pub(crate) recent_tables: parking_lot::Mutex<remoting::body::difference::RecentTables>,
}

/// Where the server is in its life, and its clocks.
struct Life {
    started: tokio::time::Instant,
    /// Wall-clock milliseconds at `started`, so `now_ms` reads like Java's clock but never jumps.
    started_wall_ms: u64,
    /// A [`Readiness`] as a byte.
    readiness: AtomicU8,
    shutting_down: AtomicBool,
    /// Set once shutdown begins: connections closing from then on leave their brokers' routes
    /// in place (for the final snapshot).
    stopping: AtomicBool,
    /// The remoting listener's address, once serving (the address server's default answer).
    remoting_addr: std::sync::OnceLock<SocketAddr>,
}

/// The open connections, and how they are answered.
struct Connections {
    next: AtomicU64,
    /// Open connections, so an expired broker's connection can be closed (Java does).
    open: parking_lot::Mutex<std::collections::HashMap<ConnId, Arc<tokio::sync::Notify>>>,
    serialize_type: SerializeType,
}

/// The table size from which a write that scans every topic runs on the registration lane
/// ([`State::write_scanning`]): a broker's departure from a table of 999 topics (the scan,
/// then its group's topics rewritten) took 0.7–1.7 ms; from 9,000, 2.5–6.4 ms (#25).
pub const SCAN_ON_LANE_TOPICS: usize = 1_000;

impl State {
    /// Builds the state from a validated config and an already loaded KV store (access
    /// control off: set `access.auth` to turn it on).
    pub fn new(config: Arc<SharedConfig>, kv: KvStore) -> Self {
        let snapshot = config.snapshot();
        let capacity =
            usize::try_from(snapshot.un_register_broker_queue_capacity).unwrap_or(1).max(1);
        let (unregister_tx, unregister_rx) = mpsc::channel(capacity);
        let threads =
            std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1));
        let routes = Arc::new(Routes::new());
        let publisher = Arc::clone(&routes);
        let publish: lane::Flush = Arc::new(move || publisher.publish());
        Self {
            routes,
            kv: Arc::new(kv),
            limits: Arc::default(),
            access: Access { auth: None, trusted_proxies: snapshot.trusted_proxies() },
            sinks: Sinks {
                metrics: Metrics::new(snapshot.metrics_enable),
                events: events::Events::default(),
                versions: crate::versions::BrokerVersions::default(),
            },
            work: Work {
                unregister_tx,
                unregister_rx: std::sync::Mutex::new(Some(unregister_rx)),
                lane: lane::Lane::pipelined(threads, lane::LANE_NICE, publish),
                route_snapshot: snapshot
                    .route_snapshot_enable
                    .then(|| crate::snapshot::SnapshotFile::new(snapshot.route_snapshot_file())),
                recent_tables: parking_lot::Mutex::default(),
            },
            life: Life {
                started: tokio::time::Instant::now(),
                started_wall_ms: SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64),
                readiness: AtomicU8::new(Readiness::Starting as u8),
                shutting_down: AtomicBool::new(false),
                stopping: AtomicBool::new(false),
                remoting_addr: std::sync::OnceLock::new(),
            },
            conns: Connections {
                next: AtomicU64::new(1),
                open: parking_lot::Mutex::new(std::collections::HashMap::new()),
                serialize_type: snapshot.effective_serialize_type(),
            },
            config,
        }
    }

    /// The liveness clock in milliseconds: wall-clock time at start plus monotonic (tokio) time
    /// since, so a wall-clock step never expires brokers and tests can pause time.
    pub fn now_ms(&self) -> u64 {
        self.life.started_wall_ms + self.life.started.elapsed().as_millis() as u64
    }

    /// Time since the server state was built (Java: since the route processor was created).
    pub fn uptime(&self) -> Duration {
        self.life.started.elapsed()
    }

    /// [`State::uptime`] in milliseconds (a monotonic clock for rate limits).
    pub(crate) fn uptime_ms(&self) -> u64 {
        u64::try_from(self.life.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The header serialization of every response (Java `rocketmq.serialize.type`, default JSON).
    pub fn serialize_type(&self) -> SerializeType {
        self.conns.serialize_type
    }

    /// Registers a new connection: its id, and the signal that asks it to close.
    pub(crate) fn open_connection(&self) -> (ConnId, Arc<tokio::sync::Notify>) {
        let id = self.conns.next.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(tokio::sync::Notify::new());
        self.conns.open.lock().insert(id, Arc::clone(&close));
        (id, close)
    }

    /// Asks connection `id` to close (a no-op when it already has).
    pub(crate) fn close_connection(&self, id: ConnId) {
        if let Some(close) = self.conns.open.lock().get(&id) {
            close.notify_one();
        }
    }

    /// The number of open connections.
    pub fn connection_count(&self) -> usize {
        self.conns.open.lock().len()
    }

    /// True once shutdown has begun (new clients then get GO_AWAY).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.life.shutting_down.load(Ordering::Relaxed)
    }

    pub(crate) fn set_shutting_down(&self) {
        self.life.shutting_down.store(true, Ordering::Relaxed);
    }

    /// Marks the start of shutdown (see the `stopping` field).
    pub(crate) fn set_stopping(&self) {
        self.life.stopping.store(true, Ordering::Relaxed);
    }

    /// Whether the server is starting, serving or draining (`/readyz`).
    pub fn readiness(&self) -> Readiness {
        match self.life.readiness.load(Ordering::Relaxed) {
            1 => Readiness::Ready,
            2 => Readiness::Draining,
            _ => Readiness::Starting,
        }
    }

    pub(crate) fn set_readiness(&self, readiness: Readiness) {
        self.life.readiness.store(readiness as u8, Ordering::Relaxed);
    }

    /// Records an event at the current liveness-clock time.
    pub fn event(&self, event: events::NewEvent) {
        self.sinks.events.record(event, self.now_ms());
    }

    /// The remoting listener's address (set when serving starts).
    pub fn remoting_addr(&self) -> Option<SocketAddr> {
        self.life.remoting_addr.get().copied()
    }

    /// Records the remoting listener's address (the first call wins): what the address server
    /// answers. `server::serve` records it; whoever serves HTTP beside it may record it first.
    pub fn set_remoting_addr(&self, addr: SocketAddr) {
        let _ = self.life.remoting_addr.set(addr);
    }

    /// Unregistrations queued and not yet applied.
    pub fn unregister_queue_len(&self) -> usize {
        self.work.unregister_tx.max_capacity() - self.work.unregister_tx.capacity()
    }

    /// `serverChannelMaxIdleTimeSeconds` as a duration; `None` for 0, which never closes an
    /// idle connection (Java's `IdleStateHandler` with 0).
    pub(crate) fn idle_timeout(&self) -> Option<Duration> {
        let secs = self.config.load().server_channel_max_idle_time_seconds;
        let secs = u64::try_from(secs).unwrap_or(120);
        (secs > 0).then(|| Duration::from_secs(secs))
    }

    /// `Some(shutdownWaitTimeSeconds)` when `enableShutdownGracefully` is on.
    pub(crate) fn graceful_shutdown_window(&self) -> Option<Duration> {
        let config = self.config.load();
        config.enable_shutdown_gracefully.then(|| {
            Duration::from_secs(u64::try_from(config.shutdown_wait_time_seconds).unwrap_or(0))
        })
    }

    /// Runs a write that scans every topic (a batch of unregistrations, a write-permission
    /// switch), published before it returns: on the registration lane once the table holds
    /// [`SCAN_ON_LANE_TOPICS`] topics, where the scan (tens of milliseconds at 1,000,000, #25)
    /// and the wait for the writer would hold up an I/O thread's reads; below, on the caller.
    pub(crate) async fn write_scanning<R: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut RouteTable) -> R + Send + 'static,
    ) -> Result<R, lane::LaneStopped> {
        if self.routes.snapshot().topic_count() < SCAN_ON_LANE_TOPICS {
            return Ok(self.routes.write(f));
        }
        let writer = Arc::clone(self);
        self.work.lane.run(move || writer.routes.write_batched(f)).await
    }

    /// Queues an unregistration for the batch task. `false` when the queue is full.
    /// Java: `RouteInfoManager#submitUnRegisterBrokerRequest`
    pub(crate) fn submit_unregister(
        &self,
        request: UnregisterRequest,
        reason: RemovalReason,
    ) -> bool {
        match self.work.unregister_tx.try_send((request, reason)) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full((r, _))) => {
                warn!(broker = %remoting::text::clip(&r.broker_addr), "unregistration queue full");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// The receiving end of the unregistration queue, taken once by the batch task.
    pub(crate) fn take_unregister_rx(&self) -> Option<mpsc::Receiver<QueuedUnregister>> {
        self.work.unregister_rx.lock().map_or(None, |mut rx| rx.take())
    }

    /// A connection ended: every broker registered over it is unregistered (fenced, so a
    /// registration made since on another connection survives).
    /// Java: `BrokerHousekeepingService#onChannelClose`
    pub(crate) fn connection_closed(&self, id: ConnId) {
        self.conns.open.lock().remove(&id);
        if self.life.stopping.load(Ordering::Relaxed) {
            // Closed by our own shutdown: the brokers are still alive (and kept in the final
            // route snapshot); they re-register with whichever nameserver comes next.
            return;
        }
        for request in self.routes.snapshot().on_connection_closed(id) {
            debug!(broker = %remoting::text::clip(&request.broker_addr), "connection closed; unregistering broker");
            self.submit_unregister(request, RemovalReason::ConnectionClosed);
        }
    }
}
