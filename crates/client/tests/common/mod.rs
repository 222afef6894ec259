//! Test harness: a real nameserver (`daemon::run`) on 127.0.0.1 in this process, stoppable and
//! restartable on the same port, plus polling helpers with bounded time.
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use daemon::Config;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Upper bound for any wait in these tests.
pub const LIMIT: Duration = Duration::from_secs(20);

/// A running nameserver with its own temp dir for the KV and config files.
pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<Result<(), daemon::RunError>>>,
}

impl TestServer {
    /// A server on a fresh port with the default config (files in a temp dir).
    pub async fn start() -> Self {
        Self::start_on(
            "127.0.0.1:0".parse().expect("addr"),
            tempfile::tempdir().expect("temp dir"),
            |_| {},
        )
        .await
    }

    /// A server whose config `adjust` may change first.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Self {
        Self::start_on(
            "127.0.0.1:0".parse().expect("addr"),
            tempfile::tempdir().expect("temp dir"),
            adjust,
        )
        .await
    }

    /// A server on `addr` (e.g. the port of a stopped one) using `dir` for its files.
    pub async fn start_on(
        addr: SocketAddr,
        dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut Config),
    ) -> Self {
        let path = |f: &str| dir.path().join(f).to_string_lossy().into_owned();
        let mut config = Config {
            kv_config_path: path("kvConfig.json"),
            config_store_path: path("namesrv.properties"),
            ..Config::default()
        };
        adjust(&mut config);
        let listener = bind_retrying(addr).await;
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(daemon::run(listener, config, async move {
            let _ = stopped.await;
        }));
        Self { addr, dir, stop: Some(stop), handle: Some(handle) }
    }

    /// `"127.0.0.1:port"`.
    pub fn addr_string(&self) -> String {
        self.addr.to_string()
    }

    /// Stops the server, waits until `run` returns, and gives back its address and files.
    pub async fn stop(mut self) -> (SocketAddr, tempfile::TempDir) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(LIMIT, handle)
                .await
                .expect("server stops in time")
                .expect("server task")
                .expect("server ran");
        }
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
        (self.addr, dir)
    }

    /// Stops the server and starts a fresh one (same KV files) on the same port.
    pub async fn restart(self) -> Self {
        let (addr, dir) = self.stop().await;
        Self::start_on(addr, dir, |_| {}).await
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `addr`, retrying briefly while a just-closed listener on that port goes away.
async fn bind_retrying(addr: SocketAddr) -> tokio::net::TcpListener {
    let mut last = None;
    for _ in 0..50 {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => return l,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("cannot bind {addr}: {last:?}");
}

/// Polls `check` every 50 ms until it returns `Some`, failing the test after [`LIMIT`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
