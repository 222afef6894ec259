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
use remoting::RemotingCommand;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::{Instant, Sleep};
use tokio_util::codec::Framed;
use tracing::{debug, info, warn};

use crate::codec::{ServerCodec, ServerFrameError};
use crate::dispatch;
use crate::limits::{Admitted, Cap, Held};
use crate::metrics::{ConnKind, Pending};
use crate::shutdown::{self, Shutdown};
use crate::state::{ConnCtx, Readiness, State};
use counters::clock::{RequestClock, Stamp};
use transport::room::{Paced, Room};
use transport::TlsContext;

/// How long connections may take to drain after shutdown before they are dropped.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// Serves the remoting listener with `state` until `shutdown` completes (connections negotiate
/// their PROXY preface and TLS with `tls`), then: readiness turns to draining, the server stops
/// accepting (after the graceful window, if configured), lets every connection answer what it
/// has already received, stops the background tasks, writes the final route snapshot and closes
/// the event stream. Whatever serves HTTP next to it is stopped by the caller after this returns
/// (so `/healthz` answers to the end).
pub async fn serve(
    listener: TcpListener,
    tls: Arc<TlsContext>,
    state: Arc<State>,
    shutdown: impl Future<Output = ()>,
) {
    if let Ok(addr) = listener.local_addr() {
        state.set_remoting_addr(addr);
    }
    let (trigger, conn_shutdown) = shutdown::channel();
    let background = crate::background::spawn_all(&state, &trigger);
    let mut conns = JoinSet::new();
    state.set_readiness(Readiness::Ready);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => spawn_connection(&mut conns, &state, &tls, &conn_shutdown, tcp, peer),
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
    // Connections closed by the shutdown itself no longer unregister their brokers: the final
    // route snapshot keeps them for the next start.
    state.set_stopping();
    let grace = state.graceful_shutdown_window();
    if let Some(window) = grace {
        // Java enableShutdownGracefully: keep serving (new clients get GO_AWAY) for the window.
        state.set_shutting_down();
        info!(seconds = window.as_secs(), "answering GO_AWAY during the graceful window");
        let serve_window = async {
            loop {
                match listener.accept().await {
                    Ok((tcp, peer)) => {
                        spawn_connection(&mut conns, &state, &tls, &conn_shutdown, tcp, peer)
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
    drain(&mut conns).await;
    stop_the_rest(&state, background).await;
    info!("nameserver stopped");
}

/// A connection accepted: under `serverMaxConnections` it gets its own task in `conns`,
/// beyond it is dropped (so closed at once).
fn spawn_connection(
    conns: &mut JoinSet<()>,
    state: &Arc<State>,
    tls: &Arc<TlsContext>,
    shutdown: &Shutdown,
    tcp: TcpStream,
    peer: SocketAddr,
) {
    if let Some(admitted) = admit(state, peer) {
        let (state, tls, shutdown) = (state.clone(), tls.clone(), shutdown.clone());
        conns.spawn(accept_one(state, tls, tcp, peer, shutdown, admitted));
    }
}

/// Lets every connection answer what it has received, for [`DRAIN_LIMIT`] at most; the ones
/// still open then are dropped.
async fn drain(conns: &mut JoinSet<()>) {
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
}

/// After the drain: the background tasks end, the final route snapshot is written, the KV
/// journal folded, the registration lane stopped and the event stream closed.
async fn stop_the_rest(state: &Arc<State>, background: Vec<tokio::task::JoinHandle<()>>) {
    for task in background {
        let _ = task.await;
    }
    crate::snapshot::write_final(state).await;
    // A large KV store's journal folded into kvConfig.json: the file is whole for Java.
    let kv = Arc::clone(&state.kv);
    if let Ok(Err(e)) = tokio::task::spawn_blocking(move || kv.compact()).await {
        warn!(error = %e, "KV journal not compacted at shutdown; it is replayed at the next start");
    }
    let lane_state = Arc::clone(state);
    let _ = tokio::task::spawn_blocking(move || lane_state.work.lane.stop()).await;
    state.sinks.events.close();
}

/// A place for a new connection under `serverMaxConnections`; `None` (the connection is then
/// dropped, so closed at once) when all are taken.
fn admit(state: &State, peer: SocketAddr) -> Option<Admitted> {
    let max = usize::try_from(state.config.load().server_max_connections).unwrap_or(usize::MAX);
    let admitted = state.limits.admit(max);
    if admitted.is_none() {
        state.limits.triggered(
            Cap::Connections,
            state.uptime_ms(),
            format_args!("{max} connections open; {peer} closed (serverMaxConnections)"),
        );
    }
    admitted
}

async fn accept_one(
    state: Arc<State>,
    tls: Arc<TlsContext>,
    tcp: TcpStream,
    peer: SocketAddr,
    shutdown: Shutdown,
    _admitted: Admitted,
) {
    if let Err(e) = tcp.set_nodelay(true) {
        debug!(%peer, error = %e, "set_nodelay failed");
    }
    let (id, close) = state.open_connection();
    let preface = if state.access.trusted_proxies.matches(peer.ip()) {
        transport::Preface::Honoured
    } else {
        transport::Preface::Refused
    };
    let (idle, handshake) = (state.idle_timeout(), transport::HANDSHAKE_TIMEOUT);
    let negotiated = transport::accept(tcp, peer, preface, &tls, idle, handshake);
    match negotiated.await {
        Ok(negotiated) => {
            let metrics = &state.sinks.metrics;
            let kind = ConnKind { tls: negotiated.tls, proxied: negotiated.proxied };
            metrics.connection_opened(kind);
            let ctx = ConnCtx {
                certificate_cn: negotiated.certificate_cn.map(Arc::from),
                proxy: (negotiated.tcp_peer != negotiated.peer).then_some(negotiated.tcp_peer),
                ..ConnCtx::new(id, negotiated.peer, close)
            };
            let counters = metrics
                .enabled()
                .then(|| (metrics.received_bytes.clone(), metrics.sent_bytes.clone()));
            let stream = transport::Fair::new(transport::Counted::new(negotiated.stream, counters));
            serve_connection(&state, stream, &ctx, shutdown).await;
            state.sinks.metrics.connection_closed(kind);
        }
        Err(e) => {
            state.sinks.metrics.connection_refused(e.reason());
            if matches!(e, transport::TransportError::UntrustedProxy) {
                if let Some(since) = state.limits.untrusted_proxy.due(state.uptime_ms()) {
                    warn!(
                        %peer,
                        refused = since,
                        "PROXY preface from a peer not in proxyProtocolTrustedAddresses; closed"
                    );
                }
            }
            debug!(%peer, error = %e, "connection refused during negotiation");
        }
    }
    state.connection_closed(id);
}

/// Reads frames on one connection and has `dispatch` answer them, until EOF, a decode error,
/// the idle timeout, a frame that takes longer than `serverFrameTimeoutSeconds`, a client that
/// leaves more answers unread than the caps allow, or shutdown (after answering everything
/// already received).
pub(crate) async fn serve_connection<S>(
    state: &Arc<State>,
    stream: S,
    ctx: &ConnCtx,
    mut shutdown: Shutdown,
) where
    S: AsyncRead + AsyncWrite + Send + Unpin,
{
    let mut conn = Connection::new(state, stream, ctx);
    // One long-lived timer for the idle and frame deadlines, re-armed only when it fires (not
    // once per request).
    let now = Instant::now();
    let timer = tokio::time::sleep_until(conn.clock.next_deadline(now, now, None));
    tokio::pin!(timer);
    let mut draining = shutdown.is_shutdown();
    // False once a write failed or a cap closed the connection: nothing more is written.
    let mut writable = true;
    loop {
        let next = match conn.framed.next().now_or_never() {
            Some(item) => item,
            None => {
                conn.mark = None;
                if conn.flush().await.is_err() {
                    writable = false;
                    break;
                }
                if draining {
                    break;
                }
                match conn.wait(timer.as_mut(), &mut shutdown).await {
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
                if conn.handle(request).await.is_err() {
                    writable = false;
                    break;
                }
            }
        }
    }
    conn.close(writable).await;
}

/// One connection being served: its frames, deadlines, read-buffer policy, and request
/// timing with the recordings not yet added to the shared counters.
struct Connection<'a, S> {
    state: &'a Arc<State>,
    ctx: &'a ConnCtx,
    framed: Framed<Paced<S>, ServerCodec>,
    clock: Clock,
    large_frames: LargeFrames,
    /// Request timing (metricsEnable): a request's time starts where the previous answer of
    /// the batch ended (one clock read per request), or when it is taken up after a wait.
    timing: bool,
    request_clock: RequestClock,
    mark: Option<Stamp>,
    /// This connection's recordings not yet added to the shared counters: applied before
    /// every flush, so no answer leaves before its request is counted.
    pending: Pending,
}

impl<'a, S> Connection<'a, S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin,
{
    fn new(state: &'a Arc<State>, stream: S, ctx: &'a ConnCtx) -> Self {
        // One task owns the whole stream (no split halves to synchronise): read what is there,
        // answer it, flush once per batch.
        let room = Room::new(&state.limits.pending_frame_bytes);
        let gate = Arc::clone(&state.limits.lane_gate) as Arc<dyn transport::room::Gate>;
        let stream = Paced::with_gate(stream, &room, gate);
        let mut framed = Framed::new(stream, ServerCodec::new(state, &room, &ctx.to_lane));
        // Answers are buffered up to this much before a write is forced mid-batch (tokio-util's
        // default, 8 KiB, is under five 1.7 KB routes: a batch of pipelined reads took two
        // writes).
        framed.set_backpressure_boundary(WRITE_BATCH);
        Self {
            state,
            ctx,
            framed,
            clock: Clock::new(state),
            large_frames: LargeFrames::default(),
            timing: state.sinks.metrics.enabled(),
            request_clock: RequestClock::current(),
            mark: None,
            pending: Pending::default(),
        }
    }

    /// Answers one request (`dispatch::answer`, straight into the write buffer) and records
    /// it once; `Err` when the connection is to be closed (a write failed, or a cap).
    async fn handle(&mut self, request: RemotingCommand) -> Result<(), ()> {
        // The frame's part of the budget, if it took one, is held until it is answered.
        let _answering = self.framed.codec_mut().take_answering();
        let started = self.timing.then(|| self.mark.unwrap_or_else(|| self.request_clock.now()));
        let (code, counted) = (request.code, !request.is_response());
        let read = self.framed.read_buffer_mut();
        if read.capacity() - read.len() < READ_ROOM / 2 {
            // Room for the next batch in one read (tokio-util reserves a single byte, so reads
            // into the tail of a nearly full buffer came in small pieces).
            read.reserve(READ_ROOM);
        }
        let large = request.body_bytes().len() > READ_BUFFER_KEEP;
        if self.framed.write_buffer().len() >= WRITE_BATCH {
            self.flush().await?;
        }
        // Below the backpressure boundary (flushed above), so answering only encodes.
        let out = self.framed.write_buffer_mut();
        let result = dispatch::answer(self.state, self.ctx, request, out, &mut self.pending)
            .await
            .map_err(|e| debug!(peer = %self.ctx.peer, error = %e, "write failed; closing"))?;
        if let (Some(started), true) = (started, counted) {
            let now = self.request_clock.now();
            let ns = self.request_clock.nanos_between(started, now);
            let requests = &self.state.sinks.metrics.requests;
            requests.record_pending(&mut self.pending.requests, code, result, ns);
            self.mark = Some(now);
        }
        if large && self.large_frames.handled(Instant::now()) {
            shrink_read_buffer(self.framed.read_buffer_mut());
        }
        Ok(())
    }

    /// Adds the pending recordings to the shared counters, then writes out the answers in the
    /// write buffer. When the client does not take them at once, what waits is held to the
    /// caps ([`Connection::hold_unread`]) and must be taken within the idle timeout; `Err`
    /// (the connection is to be closed) when a cap is passed or the write fails.
    async fn flush(&mut self) -> Result<(), ()> {
        self.state.sinks.metrics.apply(&mut self.pending);
        let peer = self.ctx.peer;
        let failed = |e: ServerFrameError| debug!(%peer, error = %e, "write failed; closing");
        match SinkExt::<RemotingCommand>::flush(&mut self.framed).now_or_never() {
            Some(done) => return done.map_err(failed),
            None if self.framed.write_buffer().is_empty() => return Ok(()),
            None => {}
        }
        let _held = self.hold_unread(self.framed.write_buffer().len() as u64)?;
        let write = SinkExt::<RemotingCommand>::flush(&mut self.framed);
        let Some(limit) = self.clock.idle else {
            return write.await.map_err(failed);
        };
        match tokio::time::timeout(limit, write).await {
            Ok(done) => done.map_err(failed),
            Err(_) => {
                self.state.limits.triggered(
                    Cap::WriteTimeout,
                    self.state.uptime_ms(),
                    format_args!(
                        "{peer} took no answer for {}s; closed (serverChannelMaxIdleTimeSeconds)",
                        limit.as_secs()
                    ),
                );
                Err(())
            }
        }
    }

    /// Holds `waiting` bytes of answers the client has not taken yet against
    /// `serverConnectionMaxPendingResponseBytes` and the server-wide
    /// `serverMaxPendingResponseBytes` until the guard drops; `Err` when either is passed.
    fn hold_unread(&self, waiting: u64) -> Result<Held, ()> {
        let (state, peer) = (self.state, self.ctx.peer);
        let config = state.config.load();
        let per_conn =
            u64::try_from(config.server_connection_max_pending_response_bytes).unwrap_or(0);
        if waiting > per_conn {
            state.limits.triggered(
                Cap::ConnectionResponseBytes,
                state.uptime_ms(),
                format_args!(
                    "{peer} left {waiting} bytes of answers unread; closed \
                     (serverConnectionMaxPendingResponseBytes {per_conn})"
                ),
            );
            return Err(());
        }
        let all = u64::try_from(config.server_max_pending_response_bytes).unwrap_or(0);
        let mut held = Held::new(&state.limits.pending_response_bytes);
        if !held.set(waiting, all) {
            state.limits.triggered(
                Cap::PendingResponseBytes,
                state.uptime_ms(),
                format_args!(
                    "{} bytes of answers wait for their readers; {peer} needing {waiting} closed \
                     (serverMaxPendingResponseBytes {all})",
                    state.limits.pending_response_bytes.used(),
                ),
            );
            return Err(());
        }
        Ok(held)
    }

    /// Waits for the next frame, a deadline (idle: counted from now; frame: from its first
    /// bytes), shutdown or a close request.
    async fn wait(&mut self, mut timer: Pin<&mut Sleep>, shutdown: &mut Shutdown) -> Wake {
        let (clock, peer) = (&self.clock, self.ctx.peer);
        let mut quiet_since = Instant::now();
        let due =
            clock.next_deadline(quiet_since, quiet_since, self.framed.codec().frame_started());
        if timer.deadline() > due {
            // Armed for later than a deadline that counts from now (a frame timeout longer
            // than the idle timeout): rare, so the common path touches no timer.
            timer.as_mut().reset(due);
        }
        loop {
            tokio::select! {
                item = self.framed.next() => return Wake::Frame(item),
                () = &mut timer => {
                    let now = Instant::now();
                    let started = self.framed.codec().frame_started();
                    // Waiting for room in the partial-frame budget, or receiving a frame let on
                    // after that, is not being idle.
                    if self.framed.codec().waiting_for_room() {
                        quiet_since = now;
                    }
                    let quiet_since = started.map_or(quiet_since, |s| s.max(quiet_since));
                    if clock.idle.is_some_and(|idle| now >= quiet_since + idle) {
                        info!(%peer, "connection idle; closing");
                        return Wake::Close;
                    }
                    if let (Some(limit), Some(started)) = (clock.frame, started) {
                        if now >= started + limit {
                            self.state.limits.triggered(
                                Cap::FrameTimeout,
                                self.state.uptime_ms(),
                                format_args!(
                                    "{peer} sent {} bytes of a frame in {}s; closed \
                                     (serverFrameTimeoutSeconds)",
                                    self.framed.read_buffer().len(),
                                    limit.as_secs()
                                ),
                            );
                            return Wake::Close;
                        }
                    }
                    timer.as_mut().reset(clock.next_deadline(now, quiet_since, started));
                }
                () = shutdown.recv() => return Wake::Drain,
                () = self.ctx.close.notified() => {
                    info!(%peer, "closing the connection of an expired broker");
                    return Wake::Close;
                }
            }
        }
    }

    /// The connection ends: its recordings are added to the shared counters and, unless a
    /// write failed or a cap closed it, its last answers written out.
    async fn close(mut self, writable: bool) {
        if writable {
            let _ = self.flush().await;
        } else {
            self.state.sinks.metrics.apply(&mut self.pending);
        }
    }
}

/// The deadlines of one connection: `serverChannelMaxIdleTimeSeconds` (no complete frame for
/// so long) and `serverFrameTimeoutSeconds` (a frame begun that long ago and not complete).
struct Clock {
    idle: Option<Duration>,
    frame: Option<Duration>,
}

/// A deadline that never comes (both timeouts off).
const NEVER: Duration = Duration::from_secs(365 * 24 * 3600);

impl Clock {
    fn new(state: &State) -> Self {
        let frame = u64::try_from(state.config.load().server_frame_timeout_seconds).unwrap_or(0);
        Self { idle: state.idle_timeout(), frame: (frame > 0).then(|| Duration::from_secs(frame)) }
    }

    /// When the timer must next look: the idle deadline, the frame deadline, or (no frame
    /// begun) one frame timeout from now, to catch a frame that begins meanwhile.
    fn next_deadline(
        &self,
        now: Instant,
        quiet_since: Instant,
        started: Option<Instant>,
    ) -> Instant {
        let idle = self.idle.map(|d| quiet_since + d);
        let frame = self.frame.map(|d| started.map_or(now + d, |s| s + d));
        idle.into_iter().chain(frame).min().unwrap_or(now + NEVER)
    }
}

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
    Frame(Option<Result<RemotingCommand, ServerFrameError>>),
    /// Shutdown: answer what was received, then close.
    Drain,
    /// Idle for `serverChannelMaxIdleTimeSeconds`, or closed by the server (expired broker).
    Close,
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;
    use crate::config::Config;

    /// A server state whose KV store holds `NS/<n>` = `n` bytes for each of `values`.
    fn state_with(
        adjust: impl FnOnce(&mut Config),
        values: &[usize],
    ) -> (Arc<State>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("dir");
        let mut config = Config {
            kv_config_path: dir.path().join("kv.json").to_string_lossy().into_owned(),
            kv_config_max_value_bytes: 1 << 20,
            ..Config::default()
        };
        adjust(&mut config);
        let state = crate::build_state(config, None).expect("state");
        for n in values {
            state.kv.put("NS", &n.to_string(), Some(&"v".repeat(*n))).expect("put");
        }
        (state, dir)
    }

    /// A connection served over an in-memory pipe that buffers 4 KiB (a client that does not
    /// read stalls the server's writes after that); the client end and the connection task.
    fn connect(state: &Arc<State>, id: u64) -> (DuplexStream, tokio::task::JoinHandle<()>) {
        let (client, server_end) = tokio::io::duplex(4096);
        let state = Arc::clone(state);
        let ctx = ConnCtx::new(id, "127.0.0.1:1".parse().expect("addr"), Arc::default());
        let (trigger, shutdown) = crate::shutdown::channel();
        let task = tokio::spawn(async move {
            serve_connection(&state, server_end, &ctx, shutdown).await;
            drop(trigger);
        });
        (client, task)
    }

    /// GET_KV_CONFIG of the `n`-byte value: an answer of about `n` bytes.
    async fn ask(client: &mut DuplexStream, n: usize) {
        let mut cmd = remoting::RemotingCommand::request(remoting::RequestCode::GetKvConfig);
        cmd.ext_fields =
            Some([("namespace", "NS".to_owned()), ("key", n.to_string())].into_iter().collect());
        let bytes = remoting::frame::encode_to_bytes(&cmd).expect("encode");
        client.write_all(&bytes).await.expect("send");
    }

    /// Reads one whole answer frame; its length.
    async fn read_answer(client: &mut DuplexStream) -> usize {
        let len = client.read_u32().await.expect("prefix") as usize;
        let mut frame = vec![0u8; len];
        client.read_exact(&mut frame).await.expect("frame");
        len
    }

    /// Whether the connection task ends (the server closed it) within 100 s (of paused time
    /// where the test pauses it).
    async fn closed(task: tokio::task::JoinHandle<()>) -> bool {
        tokio::time::timeout(Duration::from_secs(100), task).await.is_ok()
    }

    #[tokio::test]
    async fn a_client_leaving_more_answers_unread_than_its_cap_is_closed_a_reader_is_not() {
        let (state, _dir) = state_with(
            |c| c.server_connection_max_pending_response_bytes = 64 * 1024,
            &[50_000, 200_000],
        );
        // A reader of 50 KB answers: each waits less than the 64 KiB cap while it reads.
        let (mut reader, reading) = connect(&state, 1);
        for _ in 0..5 {
            ask(&mut reader, 50_000).await;
            assert!(read_answer(&mut reader).await > 50_000);
        }
        // A client that never reads its 200 KB answer: closed.
        let (mut sleeper, sleeping) = connect(&state, 2);
        ask(&mut sleeper, 200_000).await;
        assert!(closed(sleeping).await, "closed by the per-connection cap");
        assert_eq!(state.limits.trigger_count(Cap::ConnectionResponseBytes), 1);
        assert_eq!(state.limits.pending_response_bytes.used(), 0, "nothing left held");
        ask(&mut reader, 50_000).await;
        assert!(read_answer(&mut reader).await > 50_000, "the reader is still served");
        drop(reader);
        assert!(closed(reading).await);
    }

    #[tokio::test]
    async fn unread_answers_share_one_budget_and_the_client_passing_it_is_closed() {
        let (state, _dir) = state_with(
            |c| {
                c.server_connection_max_pending_response_bytes = 256 * 1024;
                c.server_max_pending_response_bytes = 256 * 1024;
            },
            &[200_000],
        );
        let (mut first, first_task) = connect(&state, 1);
        ask(&mut first, 200_000).await;
        let mut waited = 0;
        while state.limits.pending_response_bytes.used() == 0 {
            waited += 1;
            assert!(waited < 10_000, "the first answer never waited");
            tokio::task::yield_now().await;
        }
        assert!(state.limits.pending_response_bytes.used() > 190_000);
        // The second unread 200 KB answer would pass the 256 KiB budget: closed.
        let (mut second, second_task) = connect(&state, 2);
        ask(&mut second, 200_000).await;
        assert!(closed(second_task).await, "closed by the server-wide budget");
        assert_eq!(state.limits.trigger_count(Cap::PendingResponseBytes), 1);
        // The first, still waiting, gets its whole answer once it reads, and gives back.
        assert!(read_answer(&mut first).await > 200_000);
        assert_eq!(state.limits.pending_response_bytes.used(), 0);
        drop(first);
        assert!(closed(first_task).await);
    }

    // Paused time: the idle timeout passes without waiting for it.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_takes_no_answer_for_the_idle_timeout_is_closed() {
        let (state, _dir) = state_with(|c| c.server_channel_max_idle_time_seconds = 30, &[50_000]);
        let (mut sleeper, sleeping) = connect(&state, 1);
        ask(&mut sleeper, 50_000).await;
        let asked = Instant::now();
        assert!(closed(sleeping).await);
        assert!(asked.elapsed() >= Duration::from_secs(30), "not before the idle timeout");
        assert_eq!(state.limits.trigger_count(Cap::WriteTimeout), 1);
        assert_eq!(state.limits.pending_response_bytes.used(), 0);
    }

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
