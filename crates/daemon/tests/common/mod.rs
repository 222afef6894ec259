//! Test harness: a nameserver on 127.0.0.1:0 in this process, and a raw remoting connection.
#![allow(dead_code)]

pub mod captured;
pub mod controllers;
pub mod exposition;
/// Test certificates, shared with the transport crate's tests.
#[path = "../../../transport/tests/common/pki.rs"]
pub mod pki;

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
    /// The HTTP listener's address, when started with [`TestServer::start_with_http`].
    pub http: Option<SocketAddr>,
    /// The embedded controller's port, when started with [`TestServer::start_with_controller`].
    pub controller: Option<SocketAddr>,
    pub dir: tempfile::TempDir,
    /// The server's state (its counters, budgets and tables).
    pub state: std::sync::Arc<namesrv::State>,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<()>>,
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

    /// A server with an HTTP listener on 127.0.0.1:0 too.
    pub async fn start_with_http(adjust: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        Self::start_full(dir, adjust, true, None).await
    }

    /// [`TestServer::start_in`] with an HTTP listener on 127.0.0.1:0 too.
    pub async fn start_in_with_http(
        dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut Config),
    ) -> Self {
        Self::start_full(dir, adjust, true, None).await
    }

    /// A server using `dir` for its files (to restart on the same KV file).
    pub async fn start_in(dir: tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> Self {
        Self::start_full(dir, adjust, false, None).await
    }

    /// A server with an HTTP listener and an embedded controller (`enableControllerInNamesrv`):
    /// a one-node group `embedded` on its own 127.0.0.1:0 port, fast Raft timings, its keys in
    /// the nameserver's `-c` file as an operator writes them.
    pub async fn start_with_controller(adjust: impl FnOnce(&mut Config)) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind controller");
        let addr = listener.local_addr().expect("controller addr");
        let keys = format!(
            "controllerDLegerGroup=embedded\ncontrollerDLegerPeers=n0-{addr}\n\
             controllerDLegerSelfId=n0\nraftElectionTimeoutMillis=300\n"
        );
        Self::start_embedding(listener, &keys, adjust).await
    }

    /// A server with an HTTP listener and an embedded controller on `listener`, whose `-c` file
    /// holds `keys` (the group, its peers, this node's id, more) after `enableControllerInNamesrv`,
    /// a store in the server's directory and fast Raft timings.
    pub async fn start_embedding(
        listener: tokio::net::TcpListener,
        keys: &str,
        adjust: impl FnOnce(&mut Config),
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("namesrv.properties");
        std::fs::write(
            &file,
            format!(
                "enableControllerInNamesrv=true\ncontrollerStorePath={}\n\
                 raftHeartbeatIntervalMillis=100\nscanNotActiveBrokerInterval=500\n{keys}",
                dir.path().join("controller").display()
            ),
        )
        .expect("write the -c file");
        let adjust = move |c: &mut Config| {
            c.enable_controller_in_namesrv = true;
            c.loaded_from = Some(file);
            adjust(c);
        };
        Self::start_full(dir, adjust, true, Some(listener)).await
    }

    async fn start_full(
        dir: tempfile::TempDir,
        adjust: impl FnOnce(&mut Config),
        with_http: bool,
        controller: Option<tokio::net::TcpListener>,
    ) -> Self {
        let mut config = Config {
            kv_config_path: dir.path().join("kvConfig.json").to_string_lossy().into_owned(),
            config_store_path: dir.path().join("namesrv.properties").to_string_lossy().into_owned(),
            ..Config::default()
        };
        adjust(&mut config);
        let daemon = daemon::Daemon::build(config).expect("server state");
        let state = daemon.state().clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let http = if with_http {
            Some(tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind http"))
        } else {
            None
        };
        let http_addr = http.as_ref().map(|l| l.local_addr().expect("http addr"));
        let controller_addr = controller.as_ref().map(|l| l.local_addr().expect("controller"));
        let (stop, stopped) = oneshot::channel::<()>();
        let listeners = daemon::Listeners { remoting: listener, http, controller };
        let handle = tokio::spawn(daemon.serve(listeners, async move {
            let _ = stopped.await;
        }));
        Self {
            addr,
            http: http_addr,
            controller: controller_addr,
            dir,
            state,
            stop: Some(stop),
            handle: Some(handle),
        }
    }

    /// `GET path` on the HTTP listener.
    pub async fn get(&self, path: &str) -> HttpResponse {
        http_get(self.http.expect("started with HTTP"), path, &[]).await
    }

    /// A new raw connection.
    pub async fn connect(&self) -> Conn {
        Conn::connect(self.addr).await
    }

    /// Asks the server to stop without waiting for it (e.g. to observe a graceful window).
    pub fn trigger_stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// A new raw connection (exact bytes in and out).
    pub async fn connect_raw(&self) -> RawConn {
        RawConn::connect(self.addr).await
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
                .expect("server task");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        std::mem::replace(&mut self.dir, dir)
    }
}

impl TestServer {
    /// Stops the server as a crash would: its task is dropped where it stands (nothing drained,
    /// no final write). Returns its directory for a restart.
    pub async fn crash(mut self) -> tempfile::TempDir {
        if let Some(handle) = self.handle.take() {
            handle.abort();
            let _ = handle.await;
        }
        self.stop.take();
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
        // Like Java clients. Without it, Nagle holds a frame that follows an unanswered (oneway)
        // one until a delayed ACK, and paused-time tests race past that real-time wait.
        tcp.set_nodelay(true).expect("TCP_NODELAY");
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

// ---- Raw frames: the exact bytes the server writes ----

/// A connection that writes raw bytes and reads whole frames as the server wrote them.
pub struct RawConn {
    pub stream: TcpStream,
    next_opaque: i32,
}

impl RawConn {
    pub async fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        Self { stream, next_opaque: 1 }
    }

    /// Writes `bytes` as they are.
    pub async fn write(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt;
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Writes `bytes` as they are; false when the server closed the connection meanwhile (a
    /// hostile client's write may be cut short).
    pub async fn try_write(&mut self, bytes: &[u8]) -> bool {
        use tokio::io::AsyncWriteExt;
        self.stream.write_all(bytes).await.is_ok()
    }

    /// Writes `cmd` encoded by the remoting codec (its opaque as given).
    pub async fn send(&mut self, cmd: &RemotingCommand) {
        let bytes = remoting::frame::encode_to_bytes(cmd).expect("encode");
        self.write(&bytes).await;
    }

    /// Sends `cmd` with the next opaque (or the one it has when `keep_opaque`) and returns the
    /// answer's whole frame, length prefix included.
    pub async fn call(&mut self, mut cmd: RemotingCommand) -> bytes::Bytes {
        cmd.opaque = self.next_opaque;
        self.next_opaque += 1;
        self.send(&cmd).await;
        self.read_frame().await.expect("an answer frame")
    }

    /// Sends `cmd` exactly as given (opaque included) and returns the answer's whole frame.
    pub async fn call_as_is(&mut self, cmd: &RemotingCommand) -> bytes::Bytes {
        self.send(cmd).await;
        self.read_frame().await.expect("an answer frame")
    }

    /// The next whole frame (prefix included); `None` on EOF, error or timeout.
    pub async fn read_frame(&mut self) -> Option<bytes::Bytes> {
        self.read_frame_within(ANSWER_TIMEOUT).await
    }

    /// The next whole frame within `limit`; `None` on EOF, error or timeout.
    pub async fn read_frame_within(&mut self, limit: Duration) -> Option<bytes::Bytes> {
        use tokio::io::AsyncReadExt;
        let read = async {
            let mut prefix = [0u8; 4];
            self.stream.read_exact(&mut prefix).await.ok()?;
            let len = u32::from_be_bytes(prefix) as usize;
            if len > 16 << 20 {
                return None;
            }
            let mut frame = vec![0u8; 4 + len];
            frame[..4].copy_from_slice(&prefix);
            self.stream.read_exact(&mut frame[4..]).await.ok()?;
            Some(bytes::Bytes::from(frame))
        };
        tokio::time::timeout(limit, read).await.ok().flatten()
    }

    /// True when the server closes the connection (EOF or reset) within the answer timeout
    /// without sending anything; false if it sends bytes or keeps the connection open.
    pub async fn is_closed_by_server(&mut self) -> bool {
        use tokio::io::AsyncReadExt;
        let mut buf = [0u8; 64];
        match tokio::time::timeout(ANSWER_TIMEOUT, self.stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) | Err(_) => false,
        }
    }
}

/// The serialize-type byte of a whole frame.
pub fn frame_type(frame: &[u8]) -> u8 {
    frame[4]
}

/// The header bytes of a whole frame.
pub fn frame_header(frame: &[u8]) -> &[u8] {
    let len = u32::from_be_bytes([0, frame[5], frame[6], frame[7]]) as usize;
    &frame[8..8 + len]
}

/// The JSON header of a whole frame as text.
pub fn header_json(frame: &[u8]) -> String {
    assert_eq!(frame_type(frame), 0, "a JSON header");
    String::from_utf8(frame_header(frame).to_vec()).expect("utf-8 header")
}

/// The body bytes of a whole frame.
pub fn frame_body(frame: &[u8]) -> &[u8] {
    &frame[8 + frame_header(frame).len()..]
}

/// Decodes a whole frame.
pub fn decode(frame: &[u8]) -> RemotingCommand {
    remoting::frame::decode_frame(frame).expect("decodable frame")
}

/// A frame with a hand-written JSON header and no body.
pub fn json_frame(header: &str) -> Vec<u8> {
    let h = header.as_bytes();
    let mut out = Vec::with_capacity(8 + h.len());
    out.extend_from_slice(&((4 + h.len()) as u32).to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    out.extend_from_slice(h);
    out
}

/// The Java success header for `opaque` with no extFields and no remark (TV-11).
pub fn plain_success_header(opaque: i32) -> String {
    format!(
        r#"{{"code":0,"flag":1,"language":"JAVA","opaque":{opaque},"serializeTypeCurrentRPC":"JSON","version":479}}"#
    )
}

// ---- Brokers ----

/// A broker identity used to build REGISTER_BROKER and friends.
#[derive(Debug, Clone)]
pub struct Broker {
    pub cluster: String,
    pub name: String,
    pub addr: String,
    pub id: i64,
    pub ha: String,
    /// Extra ext fields (e.g. `heartbeatTimeoutMillis`, `__ZONE_NAME`).
    pub extra: Vec<(String, String)>,
}

impl Broker {
    /// A 5.x broker (`enableActingMaster=false`) with HA address `<host>:<port+1>`.
    pub fn new(cluster: &str, name: &str, addr: &str, id: i64) -> Self {
        let ha = match addr.rsplit_once(':') {
            Some((host, port)) => {
                let port: u32 = port.parse().unwrap_or(10911);
                format!("{host}:{}", port + 1)
            }
            None => addr.to_owned(),
        };
        Self {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
            addr: addr.to_owned(),
            id,
            ha,
            extra: Vec::new(),
        }
    }

    /// Adds an ext field to every request built from this broker.
    pub fn with_ext(mut self, key: &str, value: &str) -> Self {
        self.extra.push((key.to_owned(), value.to_owned()));
        self
    }

    fn ext(&self) -> ExtFields {
        let id = self.id.to_string();
        let mut ext: ExtFields = [
            ("brokerName", self.name.as_str()),
            ("brokerAddr", self.addr.as_str()),
            ("clusterName", self.cluster.as_str()),
            ("haServerAddr", self.ha.as_str()),
            ("brokerId", id.as_str()),
            ("enableActingMaster", "false"),
            ("compressed", "false"),
        ]
        .into_iter()
        .collect();
        for (k, v) in &self.extra {
            ext.insert(k.clone(), v.clone());
        }
        ext
    }

    /// REGISTER_BROKER with these topics (8 queues, perm 6), DataVersion counter 1.
    pub fn register(&self, topics: &[&str]) -> RemotingCommand {
        self.register_body(register_body(topics, data_version(1)))
    }

    /// REGISTER_BROKER with a ready-made body (no CRC).
    pub fn register_body(&self, body: Vec<u8>) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::RegisterBroker);
        cmd.ext_fields = Some(self.ext());
        cmd.body = Some(body.into());
        cmd
    }

    /// A request with this broker's cluster/name/address/id header (for 104, 322, 904).
    pub fn request(&self, code: RequestCode, body: Option<Vec<u8>>) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(code);
        cmd.ext_fields = Some(self.ext());
        cmd.body = body.map(Into::into);
        cmd
    }
}

/// A broker DataVersion with this counter.
pub fn data_version(counter: i64) -> remoting::body::DataVersion {
    remoting::body::DataVersion { counter, state_version: 0, timestamp: 1_700_000_000_000 }
}

/// A RegisterBrokerBody (legacy JSON) with these topics, 8 read/write queues, perm 6.
pub fn register_body(topics: &[&str], dv: remoting::body::DataVersion) -> Vec<u8> {
    let configs = topics
        .iter()
        .map(|t| {
            let mut tc = remoting::body::TopicConfig::named(*t);
            tc.read_queue_nums = 8;
            tc.write_queue_nums = 8;
            tc
        })
        .collect::<Vec<_>>();
    register_body_of(configs, dv)
}

/// A RegisterBrokerBody (legacy JSON) with these topic configs.
pub fn register_body_of(
    configs: Vec<remoting::body::TopicConfig>,
    dv: remoting::body::DataVersion,
) -> Vec<u8> {
    let mut body = remoting::body::RegisterBrokerBody::default();
    let wrapper = &mut body.topic_config_serialize_wrapper;
    wrapper.data_version = dv;
    for tc in configs {
        let name = tc.topic_name.clone().unwrap_or_default();
        std::sync::Arc::make_mut(&mut wrapper.topic_config_table).insert(name, tc);
    }
    remoting::body::to_legacy_json(&body)
}

impl Conn {
    /// Registers `broker` with `topics` and asserts SUCCESS.
    pub async fn register(&mut self, broker: &Broker, topics: &[&str]) -> RemotingCommand {
        let resp = self.call(broker.register(topics)).await;
        assert_eq!(resp.code, 0, "register {}: {:?}", broker.addr, resp.remark);
        resp
    }

    /// GET_ROUTEINFO_BY_TOPIC (standard JSON); `None` on TOPIC_NOT_EXIST.
    pub async fn route(&mut self, topic: &str) -> Option<remoting::body::TopicRouteData> {
        let resp =
            self.call(request(RequestCode::GetRouteinfoByTopic, &[("topic", topic)], None)).await;
        match resp.code {
            0 => Some(remoting::body::from_json(resp.body_bytes()).expect("route JSON")),
            17 => None,
            other => panic!("route {topic}: code {other} {:?}", resp.remark),
        }
    }

    /// UPDATE_NAMESRV_CONFIG with `properties` and asserts SUCCESS.
    pub async fn update_config(&mut self, properties: &str) {
        let resp = self
            .call(request(RequestCode::UpdateNamesrvConfig, &[], Some(properties.as_bytes())))
            .await;
        assert_eq!(resp.code, 0, "update {properties:?}: {:?}", resp.remark);
    }

    /// PUT_KV_CONFIG and asserts SUCCESS.
    pub async fn put_kv(&mut self, namespace: &str, key: &str, value: &str) {
        let resp = self
            .call(request(
                RequestCode::PutKvConfig,
                &[("namespace", namespace), ("key", key), ("value", value)],
                None,
            ))
            .await;
        assert_eq!(resp.code, 0, "put {namespace}/{key}: {:?}", resp.remark);
    }

    /// Polls the route of `topic` (bounded) until `done(route)` holds; panics otherwise.
    pub async fn wait_for_route(
        &mut self,
        topic: &str,
        what: &str,
        done: impl Fn(Option<&remoting::body::TopicRouteData>) -> bool,
    ) {
        // A generous real-time bound: a registration may wait for the (low-priority) lane on a
        // busy machine.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if done(self.route(topic).await.as_ref()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("route of {topic} never became: {what}");
    }
}

// ---- HTTP ----

/// An HTTP answer.
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    /// The first header of this (lower-case) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// Sends `method path` as HTTP/1.0 (so the body ends with the connection) with extra headers.
pub async fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<HttpResponse> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut tcp = TcpStream::connect(addr).await?;
        let mut text = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        tcp.write_all(text.as_bytes()).await?;
        let mut raw = Vec::new();
        tcp.read_to_end(&mut raw).await?;
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(ANSWER_TIMEOUT, exchange)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "no HTTP answer"))??;
    let text = String::from_utf8(raw).expect("UTF-8 HTTP answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP head");
    let mut lines = head.lines();
    let status_line = lines.next().expect("status line");
    let status = status_line.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(HttpResponse { status, headers, body: body.to_owned() })
}

/// `GET path` with extra headers; panics when the server does not answer.
pub async fn http_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
    http_request(addr, "GET", path, headers).await.unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// A parsed Prometheus scrape.
pub struct Scrape(pub prometheus_parse::Scrape);

impl Scrape {
    /// Parses the Prometheus text format.
    pub fn parse(text: &str) -> Self {
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        Self(prometheus_parse::Scrape::parse(lines).expect("a valid Prometheus text scrape"))
    }

    /// The value of `metric` with these labels (others ignored); `None` when absent.
    pub fn value(&self, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.0
            .samples
            .iter()
            .find(|s| s.metric == metric && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                _ => panic!("{metric} is not a plain value"),
            })
    }
}

/// Writes an accounts file readable by its owner only (a world-readable one is warned about).
pub fn write_accounts(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).expect("accounts file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
}
