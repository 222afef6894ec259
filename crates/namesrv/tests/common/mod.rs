//! Test harness: a nameserver on 127.0.0.1:0 in this process, and a raw remoting connection.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use namesrv::Config;
use remoting::frame::RemotingCodec;
use remoting::{ExtFields, RemotingCommand, RequestCode};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::codec::Framed;

/// How long a test waits for any single answer.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A running nameserver with its own temp dir for the KV and config files.
pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<Result<(), namesrv::RunError>>>,
}

impl TestServer {
    /// A server with the default config (files in a temp dir).
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// A server whose config `adjust` may change first.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::start_in(dir, adjust).await
    }

    /// A server using `dir` for its files (to restart on the same KV file).
    pub async fn start_in(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> Self {
        let mut config = Config {
            kv_config_path: dir.path().join("kvConfig.json").to_string_lossy().into_owned(),
            config_store_path: dir.path().join("namesrv.properties").to_string_lossy().into_owned(),
            ..Config::default()
        };
        adjust(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(namesrv::run(listener, config, async move {
            let _ = stopped.await;
        }));
        Self { addr, dir, stop: Some(stop), handle: Some(handle) }
    }

    /// A new raw connection.
    pub async fn connect(&self) -> Conn {
        Conn::connect(self.addr).await
    }

    /// Asks the server to stop and waits until `run` returns.
    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(ANSWER_TIMEOUT, handle)
                .await
                .expect("server stops in time")
                .expect("server task")
                .expect("server ran");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        std::mem::replace(&mut self.dir, dir)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One raw remoting connection with opaque bookkeeping.
pub struct Conn {
    pub framed: Framed<TcpStream, RemotingCodec>,
    next_opaque: i32,
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> Self {
        let tcp = TcpStream::connect(addr).await.expect("connect");
        Self { framed: Framed::new(tcp, RemotingCodec::new()), next_opaque: 1 }
    }

    /// Sends `request` (its opaque is assigned here) and returns the answer.
    pub async fn call(&mut self, mut request: RemotingCommand) -> RemotingCommand {
        request.opaque = self.next_opaque;
        self.next_opaque += 1;
        let opaque = request.opaque;
        self.framed.send(request).await.expect("send");
        let response = self.recv().await.expect("an answer");
        assert_eq!(response.opaque, opaque, "response echoes the opaque");
        assert!(response.is_response(), "flag has the response bit");
        response
    }

    /// Sends without waiting for an answer.
    pub async fn send(&mut self, request: RemotingCommand) {
        self.framed.send(request).await.expect("send");
    }

    /// The next frame, `None` when the server closed the connection or nothing came in time.
    pub async fn recv(&mut self) -> Option<RemotingCommand> {
        match tokio::time::timeout(ANSWER_TIMEOUT, self.framed.next()).await {
            Ok(Some(Ok(cmd))) => Some(cmd),
            _ => None,
        }
    }
}

/// A Java-5.3.3-like request with these ext fields and body.
pub fn request(code: RequestCode, ext: &[(&str, &str)], body: Option<&[u8]>) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(code);
    if !ext.is_empty() {
        cmd.ext_fields = Some(ext.iter().copied().collect::<ExtFields>());
    }
    cmd.body = body.map(bytes::Bytes::copy_from_slice);
    cmd
}

/// The body as UTF-8 text.
pub fn body_text(cmd: &RemotingCommand) -> String {
    String::from_utf8(cmd.body_bytes().to_vec()).expect("utf-8 body")
}
