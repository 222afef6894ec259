//! The key table: every nameserver key under its Java name and Java default, with the `///`
//! text the book's key reference is generated from.

use remoting::SerializeType;

use super::home_file;

conf::config_struct! {
    /// Every nameserver setting, under Rust names; [`Config::KEYS`] lists the Java names (the
    /// keys of the `-c` file, of 318 and of 319) in Java declaration order: `NamesrvConfig`,
    /// then `NettyServerConfig`, then the keys Java reads from system properties, then this
    /// server's own keys.
    ///
    /// One entry per key: its `///` text is the key's documentation in the book (what it does,
    /// its unit, what "0" or "unset" means); `#[key(...)]` markers say where it comes from in
    /// Java and whether an update changes the running server at once (`dynamic`: the code reads
    /// it from `SharedConfig::load()` each time it needs it), see `conf::KeyInfo`. After
    /// adding or changing a key, run `cargo test -p namesrv --test book` twice: the first run
    /// rewrites `docs/src/reference/keys.md` and fails, the second passes; commit the page.
    pub struct Config {
    // ---- NamesrvConfig ----
    /// Java's installation directory, where it finds its logging configuration. Java refuses to
    /// start without it; here it is optional and unused (logging is configured with `RUST_LOG`).
    /// UPDATE_NAMESRV_CONFIG refuses it.
    #[key(java = "NamesrvConfig", no_effect,
          default_doc = "the `ROCKETMQ_HOME` environment variable; unset without it")]
    rocketmq_home: Option<String> = "rocketmqHome", std::env::var("ROCKETMQ_HOME").ok();
    /// The KV store file (JSON, the same format as Java's `kvConfig.json`, so the file moves
    /// between the two servers): loaded at start, rewritten atomically (temporary file, fsync,
    /// rename) before every KV change is answered. UPDATE_NAMESRV_CONFIG refuses it.
    #[key(java = "NamesrvConfig", default_doc = "`$HOME/namesrv/kvConfig.json`")]
    kv_config_path: String = "kvConfigPath", home_file("kvConfig.json");
    /// Where UPDATE_NAMESRV_CONFIG persists the whole configuration (sorted `key=value` lines;
    /// the previous content is kept in `<path>.bak`). Replaced by the `-c` file's path when one
    /// is given, so updates survive a restart. UPDATE_NAMESRV_CONFIG refuses it.
    #[key(java = "NamesrvConfig", default_doc = "`$HOME/namesrv/namesrv.properties`")]
    config_store_path: String = "configStorePath", home_file("namesrv.properties");
    /// The upstream environment that Java's cluster-test mode queries for unknown topics.
    /// Unused: cluster-test mode is not supported.
    #[key(java = "NamesrvConfig", no_effect)]
    product_env_name: String = "productEnvName", "center".to_owned();
    /// Java's cluster-test mode, in which every request is answered as a route query and unknown
    /// topics are looked up in `productEnvName`. Not supported: the value is accepted and
    /// ignored, and the server behaves as with `false`.
    #[key(java = "NamesrvConfig", no_effect)]
    cluster_test: bool = "clusterTest", false;
    /// Adds `orderTopicConf` (the topic's entry in the KV namespace `ORDER_TOPIC_CONFIG`) to
    /// GET_ROUTEINFO_BY_TOPIC answers, for ordered messages on clients that read it.
    #[key(java = "NamesrvConfig", dynamic)]
    order_message_enable: bool = "orderMessageEnable", false;
    /// Answers REGISTER_BROKER with the KV namespace `ORDER_TOPIC_CONFIG` as the body, so
    /// brokers learn the ordered-topic configuration.
    #[key(java = "NamesrvConfig", dynamic)]
    return_order_topic_config_to_broker: bool = "returnOrderTopicConfigToBroker", true;
    /// Java's thread pool for route queries. Unused: requests run on the async runtime's worker
    /// threads (one per core) and registrations on the registration lane.
    #[key(java = "NamesrvConfig", no_effect)]
    client_request_thread_pool_nums: i32 = "clientRequestThreadPoolNums", 8;
    /// Java's thread pool for every other request. Unused, like `clientRequestThreadPoolNums`.
    #[key(java = "NamesrvConfig", no_effect)]
    default_thread_pool_nums: i32 = "defaultThreadPoolNums", 16;
    /// The queue bound of Java's route-query pool. Unused.
    #[key(java = "NamesrvConfig", no_effect)]
    client_request_thread_pool_queue_capacity: i32 = "clientRequestThreadPoolQueueCapacity", 50000;
    /// The queue bound of Java's default pool. Unused.
    #[key(java = "NamesrvConfig", no_effect)]
    default_thread_pool_queue_capacity: i32 = "defaultThreadPoolQueueCapacity", 10000;
    /// How often, in milliseconds, the server looks for brokers whose heartbeat timeout (sent by
    /// each broker when it registers; 120 s when it sends none) has passed, and removes them
    /// from the routes. The first scan runs 5 s after start.
    #[key(java = "NamesrvConfig")]
    scan_not_active_broker_interval: i64 = "scanNotActiveBrokerInterval", 5000;
    /// The bound of the queue of pending unregistrations (UNREGISTER_BROKER, closed connections,
    /// expired brokers), applied in batches. When it is full an unregistration is refused.
    #[key(java = "NamesrvConfig")]
    un_register_broker_queue_capacity: i32 = "unRegisterBrokerQueueCapacity", 3000;
    /// When a broker group's master is gone, routes name the slave with the lowest id as the
    /// acting master (broker id 0), for RocketMQ 5's slave-acting-master mode.
    #[key(java = "NamesrvConfig", dynamic)]
    support_acting_master: bool = "supportActingMaster", false;
    /// Allows GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206); when false it is answered with
    /// SYSTEM_ERROR `disable`.
    #[key(java = "NamesrvConfig", dynamic)]
    enable_all_topic_list: bool = "enableAllTopicList", true;
    /// Allows GET_TOPICS_BY_CLUSTER (224) and the unit-topic lists (311–313); when false they
    /// are answered with SYSTEM_ERROR `disable`.
    #[key(java = "NamesrvConfig", dynamic)]
    enable_topic_list: bool = "enableTopicList", true;
    /// Java pushes NOTIFY_MIN_BROKER_ID_CHANGE to a broker group's members when its lowest
    /// broker id changes. Not sent by this server: the value is accepted and ignored.
    #[key(java = "NamesrvConfig", no_effect)]
    notify_min_broker_id_changed: bool = "notifyMinBrokerIdChanged", false;
    /// Also runs a RocketMQ 5 controller node in this process, on its own port (its entry in
    /// `controllerDLegerPeers`); the controller's keys are read from the same file (see the
    /// [controller key reference](controller-keys.md)). Route serving never depends on it.
    #[key(java = "NamesrvConfig")]
    enable_controller_in_namesrv: bool = "enableControllerInNamesrv", false;
    /// Refuses route queries (SYSTEM_ERROR `name server not ready`) for the first
    /// `waitSecondsForService` seconds after start, so that brokers register before clients
    /// read routes from a freshly started nameserver.
    #[key(java = "NamesrvConfig", dynamic)]
    need_wait_for_service: bool = "needWaitForService", false;
    /// The warm-up of `needWaitForService`, in seconds from start.
    #[key(java = "NamesrvConfig", dynamic)]
    wait_seconds_for_service: i32 = "waitSecondsForService", 45;
    /// A full registration removes the broker's topics that are missing from it (topics deleted
    /// on the broker then leave the routes). Meant for brokers with `enableSingleTopicRegister`.
    #[key(java = "NamesrvConfig", dynamic)]
    delete_topic_with_broker_registration: bool = "deleteTopicWithBrokerRegistration", false;
    /// Keys UPDATE_NAMESRV_CONFIG refuses with NO_PERMISSION, `;`-separated, on top of the fixed
    /// `configBlackList`, `configStorePath`, `kvConfigPath` and `rocketmqHome`. Read once at
    /// start; UPDATE_NAMESRV_CONFIG refuses it.
    #[key(java = "NamesrvConfig")]
    config_black_list: String = "configBlackList", "configBlackList;configStorePath;kvConfigPath".to_owned();

    // ---- NettyServerConfig ----
    /// The listen address of the remoting port: an IPv4 or IPv6 address or a host name.
    /// UPDATE_NAMESRV_CONFIG refuses it (Java persists it, and the next start then leaves the
    /// address clients and brokers use).
    #[key(java = "NettyServerConfig")]
    bind_address: String = "bindAddress", "0.0.0.0".to_owned();
    /// The remoting port (TCP; plaintext and TLS on the same port). 0 lets the OS choose.
    /// UPDATE_NAMESRV_CONFIG refuses it (Java persists it, and a bad port then stops the next
    /// start).
    #[key(java = "NettyServerConfig")]
    listen_port: i32 = "listenPort", 9876;
    /// Java's Netty handler threads. Unused: the async runtime runs one worker per core.
    #[key(java = "NettyServerConfig", no_effect)]
    server_worker_threads: i32 = "serverWorkerThreads", 8;
    /// Java's callback executor (0 means 4). Unused.
    #[key(java = "NettyServerConfig", no_effect)]
    server_callback_executor_threads: i32 = "serverCallbackExecutorThreads", 0;
    /// Java's Netty I/O threads. Unused.
    #[key(java = "NettyServerConfig", no_effect)]
    server_selector_threads: i32 = "serverSelectorThreads", 3;
    /// Java's limit on concurrent server-initiated oneway calls. Unused (the server initiates
    /// none).
    #[key(java = "NettyServerConfig", no_effect)]
    server_oneway_semaphore_value: i32 = "serverOnewaySemaphoreValue", 256;
    /// Java's limit on concurrent server-initiated async calls. Unused (the server initiates
    /// none).
    #[key(java = "NettyServerConfig", no_effect)]
    server_async_semaphore_value: i32 = "serverAsyncSemaphoreValue", 64;
    /// A connection that sends no complete frame for this many seconds is closed (a broker's
    /// connection closing removes the broker, like Java's all-idle close); 0 never closes one.
    /// An update applies to connections accepted after it and refuses 1–59 (brokers re-register
    /// every 30 s).
    #[key(java = "NettyServerConfig", dynamic)]
    server_channel_max_idle_time_seconds: i32 = "serverChannelMaxIdleTimeSeconds", 120;
    /// SO_SNDBUF of accepted connections in Java (0: the OS default). Unused: the OS default
    /// applies.
    #[key(java = "NettyServerConfig", no_effect)]
    server_socket_snd_buf_size: i32 = "serverSocketSndBufSize", 0;
    /// SO_RCVBUF of accepted connections in Java (0: the OS default). Unused: the OS default
    /// applies.
    #[key(java = "NettyServerConfig", no_effect)]
    server_socket_rcv_buf_size: i32 = "serverSocketRcvBufSize", 0;
    /// Netty's write-buffer high-water mark in Java. Unused.
    #[key(java = "NettyServerConfig", no_effect)]
    write_buffer_high_water_mark: i32 = "writeBufferHighWaterMark", 0;
    /// Netty's write-buffer low-water mark in Java. Unused.
    #[key(java = "NettyServerConfig", no_effect)]
    write_buffer_low_water_mark: i32 = "writeBufferLowWaterMark", 0;
    /// The listen backlog. Unused, as in Java: the backlog is 1024.
    #[key(java = "NettyServerConfig", no_effect)]
    server_socket_backlog: i32 = "serverSocketBacklog", 1024;
    /// A Netty threading switch in Java. Unused.
    #[key(java = "NettyServerConfig", no_effect)]
    server_netty_worker_group_enable: bool = "serverNettyWorkerGroupEnable", true;
    /// Netty's pooled buffer allocator in Java. Unused.
    #[key(java = "NettyServerConfig", no_effect)]
    server_pooled_byte_buf_allocator_enable: bool = "serverPooledByteBufAllocatorEnable", true;
    /// On SIGTERM or SIGINT, keep serving for `shutdownWaitTimeSeconds` while answering new
    /// clients with GO_AWAY (so they move to another nameserver), then close. When false the
    /// server stops accepting at once, answers what connections already sent, and exits.
    /// Read when the shutdown begins.
    #[key(java = "NettyServerConfig", dynamic)]
    enable_shutdown_gracefully: bool = "enableShutdownGracefully", false;
    /// The length of the graceful-shutdown window, in seconds. Read when the shutdown begins.
    #[key(java = "NettyServerConfig", dynamic)]
    shutdown_wait_time_seconds: i32 = "shutdownWaitTimeSeconds", 30;
    /// Netty's native epoll transport in Java. Unused (tokio uses epoll on Linux anyway).
    #[key(java = "NettyServerConfig", no_effect)]
    use_epoll_native_selector: bool = "useEpollNativeSelector", false;

    // ---- JVM system properties in Java, read from the same file here ----
    /// The header encoding of this server's responses: `JSON` (the default when unset) or
    /// `ROCKETMQ` (binary). Clients read both.
    #[key(system_property)]
    serialize_type: Option<SerializeType> = "rocketmq.serialize.type", None;
    /// TLS on the remoting port: `disabled` (a TLS handshake closes the connection),
    /// `permissive` (TLS and plaintext on the same port; the default when unset or unknown) or
    /// `enforcing` (plaintext closes the connection).
    #[key(system_property)]
    tls_server_mode: Option<String> = "tls.server.mode", None;
    /// When `true` (the default when unset), TLS uses a self-signed certificate generated at
    /// start and ignores `tls.server.certPath` and `tls.server.keyPath`; set `false` to serve
    /// your own certificate.
    #[key(system_property)]
    tls_test_mode_enable: Option<String> = "tls.test.mode.enable", None;
    /// Client certificates: `none` (the default when unset), `optional` (verified against
    /// `tls.server.trustCertPath` when sent) or `require`.
    #[key(system_property)]
    tls_server_need_client_auth: Option<String> = "tls.server.need.client.auth", None;
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1; encrypted PKCS#8 with
    /// `tls.server.keyPassword`). Reloaded without a restart when the file changes.
    #[key(system_property)]
    tls_server_key_path: Option<String> = "tls.server.keyPath", None;
    /// The password of an encrypted PKCS#8 `tls.server.keyPath`.
    #[key(system_property)]
    tls_server_key_password: Option<String> = "tls.server.keyPassword", None;
    /// The PEM certificate chain, leaf first. Reloaded without a restart when the file changes.
    #[key(system_property)]
    tls_server_cert_path: Option<String> = "tls.server.certPath", None;
    /// Java's switch for verifying client certificates: `true` checks a client certificate
    /// (asked for by `tls.server.need.client.auth`) against `tls.server.trustCertPath`, and only
    /// a checked certificate's subject CN can name an account; default `false` accepts any
    /// certificate unchecked, as Java does (a warning at start says so).
    #[key(system_property)]
    tls_server_auth_client: Option<String> = "tls.server.authClient", None;
    /// The PEM CA certificates that client certificates must chain to. Reloaded without a
    /// restart when the file changes.
    #[key(system_property)]
    tls_server_trust_cert_path: Option<String> = "tls.server.trustCertPath", None;
    /// A properties file whose `tls.*` keys override these (all but `tls.server.mode`), read at
    /// start when it exists; `/etc/rocketmq/tls.properties` when unset.
    #[key(system_property)]
    tls_config_file: Option<String> = "tls.config.file", None;

    // ---- Keys of this server only (no Java equivalent): new keys go here, no marker needed
    // unless they are `dynamic` ----
    // Warm restart and resource caps.
    /// Keep a route snapshot for a warm restart (default `true`). When
    /// on, the route tables (clusters, broker groups, live brokers, topic queues, filter
    /// servers, static-topic mappings) are written to `routeSnapshotPath` at most every 5 s
    /// after they change (a table whose write takes longer than 250 ms: at most 1/20 of the
    /// time) and once more at graceful shutdown, and restored before the port opens
    /// at the next start: every broker in it is live again from the start time, so clients get
    /// routes at once, and a broker that does not register again expires by its heartbeat
    /// timeout as usual. A missing snapshot is an empty start; a damaged one is logged and
    /// skipped for its `.bak`, never fatal. Read at start-up.
    route_snapshot_enable: bool = "routeSnapshotEnable", true;
    /// The route snapshot file; unset means `routes.snapshot` in the
    /// directory of `kvConfigPath`. The previous snapshot is kept as `<path>.bak`. Read at
    /// start-up; UPDATE_NAMESRV_CONFIG may not change it (black-listed, like the other paths).
    route_snapshot_path: Option<String> = "routeSnapshotPath", None;
    /// The most client connections served at once (default 50000). A
    /// connection beyond it is closed as soon as it is accepted (logged, counted in the
    /// `connections` cap metric). Takes effect at once for new connections.
    #[key(dynamic)]
    server_max_connections: i32 = "serverMaxConnections", 50_000;
    /// How long a frame may take to arrive once its first byte has
    /// (default 60; 0 never times out). A slower sender's connection is closed. Read when a
    /// connection opens; an update refuses 1–9 (a broker's multi-MB registration over a slow
    /// link needs seconds).
    #[key(dynamic)]
    server_frame_timeout_seconds: i32 = "serverFrameTimeoutSeconds", 60;
    /// The largest frame accepted, length prefix
    /// included, bytes (Java's system property, default 16777216). It also bounds what one
    /// connection holds for a partially received frame: its buffer grows with the bytes that
    /// arrived, never to the announced length. A longer frame closes the connection. Read when
    /// a connection opens; an update refuses values under 4 MiB (broker registrations).
    #[key(system_property, dynamic)]
    frame_max_length: i32 = "com.rocketmq.remoting.frameMaxLength", 16_777_216;
    /// The most bytes all connections together hold for frames
    /// being received or answered (default 536870912, 512 MiB; at least `frameMaxLength`): a
    /// frame over 16 KiB that arrived in parts keeps its bytes until its answer is written, so
    /// registrations waiting for the registration lane count too. A frame holds its buffer,
    /// which grows with what arrives, to sixteen times that at most: never to the length the sender
    /// announces. A connection whose frame would take the total over it waits for room,
    /// reading nothing more (the sender's bytes wait in the network) until others give theirs
    /// back (logged, counted in the `pending_frame_bytes` cap metric; gauge
    /// `frames_waiting_for_room`). One that held nothing yet waits its turn, and its frame
    /// deadline runs from when it is let on; one whose frame is under way keeps what it holds
    /// and its deadline, and the first of those to wait takes past this limit instead (one
    /// frame at a time, until it is answered, so frames under way never wait on one
    /// another): all together hold at most this plus one `frameMaxLength`. Frames over 1 MiB
    /// may take the total to three quarters of this at most (or one `frameMaxLength`, if more),
    /// so stalled large frames always leave room for ordinary requests and broker
    /// registrations. What the lane decodes ahead of the registration it applies is held
    /// besides, for at most 8 registrations and 32 MiB (one registration ahead, whatever it
    /// holds). Independently of this key, a connection whose last registration went to the lane
    /// (a changed table) waits before its next frame over 1 MiB, holding nothing, while the
    /// lane has 16 MiB of registrations queued or on their way (in the order they came; gauge
    /// `frames_waiting_for_lane`); re-registrations answered in place never wait there. Takes
    /// effect at once.
    #[key(dynamic)]
    server_max_pending_frame_bytes: i64 = "serverMaxPendingFrameBytes", 512 << 20;
    /// The most bytes of answers one connection may
    /// have waiting for its client to read them (default 33554432, 32 MiB; more than any one
    /// answer). A client that asks for more without reading is closed. Takes effect at once.
    #[key(dynamic)]
    server_connection_max_pending_response_bytes: i64 =
        "serverConnectionMaxPendingResponseBytes", 32 << 20;
    /// The most bytes of answers all connections together may
    /// have waiting for slow or stuck readers (default 536870912, 512 MiB; at least
    /// `serverConnectionMaxPendingResponseBytes`). A connection whose waiting answers would
    /// take the total over it is closed. Takes effect at once.
    #[key(dynamic)]
    server_max_pending_response_bytes: i64 = "serverMaxPendingResponseBytes", 512 << 20;
    /// The most bytes a compressed REGISTER_BROKER body may
    /// inflate to (default 67108864, 64 MiB; a 50,000-topic table inflates to under 5 MiB).
    /// A larger one is refused with SYSTEM_ERROR and the broker's routes stay as they were.
    /// Takes effect at once.
    #[key(dynamic)]
    register_body_max_inflated_bytes: i64 = "registerBodyMaxInflatedBytes", 64 << 20;
    /// The most topics one REGISTER_BROKER body may carry (default
    /// 200000, four times the largest broker we benchmark). A registration with more is
    /// refused with SYSTEM_ERROR `register broker failed: <n> topics exceed the limit of <max>
    /// (registerBrokerMaxTopics)`, and nothing of it is applied: the broker keeps its previous
    /// routes until they expire (it retries every 30 s and logs the remark). A compressed body
    /// is refused from its announced count, before its topics are read. Takes effect at once.
    #[key(dynamic)]
    register_broker_max_topics: i32 = "registerBrokerMaxTopics", 200_000;
    /// The longest value PUT_KV_CONFIG accepts, bytes of UTF-8
    /// (default 65536). A longer one is refused with SYSTEM_ERROR and nothing is stored.
    /// Takes effect at once.
    #[key(dynamic)]
    kv_config_max_value_bytes: i32 = "kvConfigMaxValueBytes", 65_536;
    /// Whether the process may use transparent huge pages as the system and the allocator
    /// allow (default `true`); `false` disables them (Linux `PR_SET_THP_DISABLE`): reads at a
    /// million topics for a faster cold start where a virtual machine's host backs memory on
    /// first touch (figures: the book's performance page). Read at start-up by the binary.
    transparent_huge_pages: bool = "transparentHugePages", true;

    // The operations surface (Java has none).
    /// The TCP port of the HTTP listener: metrics at `/metrics`, probes at `/healthz` and
    /// `/readyz`, the JSON API under `/api/v1/`, the dashboard at `/`, the address server at
    /// `/rocketmq/nsaddr`. 8080 is the port the Java client's address-server lookup uses when
    /// `rocketmq.namesrv.domain` has none; `0` disables the listener. A port already taken stops
    /// start-up. UPDATE_NAMESRV_CONFIG refuses it (the probes would lose the server at the next
    /// start).
    http_listen_port: i32 = "httpListenPort", 8080;
    /// The address the HTTP listener binds (host name, IPv4 or IPv6). Unset: the same as
    /// `bindAddress`. UPDATE_NAMESRV_CONFIG refuses it.
    http_bind_address: Option<String> = "httpBindAddress", None;
    /// Records per-request metrics and serves `/metrics`. With `false` the connection path reads
    /// no clock and counts nothing per request, and `/metrics` answers 404; the probes, API,
    /// dashboard and address server still work.
    metrics_enable: bool = "metricsEnable", true;
    /// The nameserver list the address server answers at `GET /rocketmq/nsaddr` (and
    /// `/rocketmq/<any subgroup>`), `;`-separated `host:port` as in a client's `namesrvAddr`; the
    /// Java client fetches it when started with
    /// `-Drocketmq.namesrv.domain=<this host>:<httpListenPort>`. Unset: this server's own
    /// remoting address (`bindAddress`, or the address the HTTP request came in on when that is a
    /// wildcard, and the remoting port).
    #[key(dynamic)]
    http_namesrv_addr: Option<String> = "httpNamesrvAddr", None;

    // ---- Access control (no Java counterpart: the Java NameServer checks nothing). Unset
    // (so absent from 319, like Java's output) unless the `-c` file sets them. ----
    /// `authenticationEnabled`: check who sends each request (RocketMQ request signatures,
    /// client certificates, address allow-lists) against the accounts in `authConfigPath`, and
    /// refuse with NO_PERMISSION (16) what an account's role does not allow. Default `false`
    /// (Java-compatible: every request accepted). Read once at start; 318 may not change it.
    authentication_enabled: Option<bool> = "authenticationEnabled", None;
    /// `authConfigPath`: the accounts file (YAML: `accounts` with `accessKey`, `secretKey`,
    /// `role`, optional `whiteRemoteAddress`, `certificateCN`, and the `clusters` and
    /// `brokerNames` a broker account may act for; optional `globalWhiteRemoteAddresses`). Default `$HOME/namesrv/auth.yml`. Must exist and be valid
    /// at start when authentication is on; re-read within a second of a change (a broken or
    /// removed file keeps the previous accounts). Read once at start; 318 may not change it.
    auth_config_path: Option<String> = "authConfigPath", None;
    /// `authenticationMode`: `writes` (default: only state-changing requests must be
    /// authenticated; route, cluster, topic, KV and config reads stay open) or `all` (every
    /// request). Read once at start; 318 may not change it.
    authentication_mode: Option<String> = "authenticationMode", None;
    /// `proxyProtocolTrustedAddresses`: the TCP peers (load balancers) whose PROXY v1/v2
    /// preface is honoured, comma-separated IPs and CIDR blocks (`10.0.0.5, 10.8.0.0/16`) or `*`
    /// for any, in the accounts file's address syntax. From a peer not listed, a connection
    /// that starts with a preface is closed before any request is read
    /// (`connections_refused_total{reason="untrusted_proxy"}`). The client address every
    /// address rule, failure window, audit line and metric uses is the preface's source when
    /// the peer is trusted, else the TCP peer. Unset: `*` while `authenticationEnabled=false`
    /// (Java honours every preface; the address only names the peer), empty (no proxy trusted)
    /// while it is true; `-p` prints the value in force. Read once at start; 318 may not change it.
    proxy_protocol_trusted_addresses: Option<String> = "proxyProtocolTrustedAddresses", None;
    /// `authFailureWindowSeconds`: with access control on, ten failed requests of one access
    /// key (or of unsigned requests, or of unknown keys) from one client address within this
    /// many seconds block that pair, and only that pair, until the window ends: its requests
    /// are refused with `too many failed attempts` without any signature being verified.
    /// Unset: 60. Read once at start; 318 may not change it.
    auth_failure_window_seconds: Option<i64> = "authFailureWindowSeconds", None;

    // ---- The HTTP listener under the same rules (#21). ----
    /// Serves the HTTP listener over TLS only, with the remoting port's certificate and key
    /// (`tls.server.*`, reloaded with them; client certificates as `tls.server.need.client.auth`
    /// says). Needs `tls.server.mode` `permissive` or `enforcing`. Read once at start.
    http_tls_enable: bool = "httpTlsEnable", false;
    /// Accepts HTTP Basic credentials over plain HTTP from a peer that is not on the loopback
    /// interface. Default `false`: such a request is refused with 403 (and no page asks for
    /// credentials there), so a secret key never crosses the network in clear; serve the
    /// listener with `httpTlsEnable=true` instead. Takes effect at once.
    #[key(dynamic)]
    http_allow_plain_credentials: bool = "httpAllowPlainCredentials", false;
    /// Seconds an HTTP connection may take to send a request's headers (from its opening, or
    /// from the end of its previous answer; the TLS handshake included); after that it is
    /// closed and counted (`http_connections_refused_total{reason="header_timeout"}`).
    /// Read at start.
    http_header_read_timeout_seconds: i32 = "httpHeaderReadTimeoutSeconds", 10;
    /// The most HTTP connections open at once; one more is answered 503 and closed, and
    /// counted (`http_connections_refused_total{reason="max_connections"}`). Takes effect at
    /// once.
    #[key(dynamic)]
    http_max_connections: i32 = "httpMaxConnections", 1024;
    /// The most event streams (`/api/v1/events/stream`, one per open dashboard) at once; one
    /// more is answered 503 and counted (`http_connections_refused_total{reason="max_event_streams"}`).
    /// Takes effect at once.
    #[key(dynamic)]
    http_max_event_streams: i32 = "httpMaxEventStreams", 64;
    /// Host names the HTTP listener answers to (comma-separated, case-insensitive, any port),
    /// against DNS rebinding: a request whose `Host` names another host is answered 421 and
    /// counted (`http_connections_refused_total{reason="host"}`). IP addresses and `localhost`
    /// are always accepted (a rebinding attack needs a name). Unset: any `Host`. Takes effect
    /// at once.
    #[key(dynamic)]
    http_allowed_hosts: Option<String> = "httpAllowedHosts", None;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use remoting::SerializeType;

    use crate::config::{Config, SharedConfig};

    #[test]
    fn keys_are_unique() {
        let set: BTreeSet<_> = Config::KEYS.iter().collect();
        assert_eq!(set.len(), Config::KEYS.len());
    }

    #[test]
    fn every_key_round_trips_through_get_and_set() {
        let mut config = Config {
            rocketmq_home: Some("/opt/rmq".into()),
            serialize_type: Some(SerializeType::RocketMq),
            tls_server_mode: Some("enforcing".into()),
            ..Config::default()
        };
        let original = config.clone();
        for key in Config::KEYS {
            if let Some(value) = original.get(key) {
                assert!(
                    config.set_known(key, &value).expect("own value is valid"),
                    "{key} is known"
                );
            }
        }
        assert_eq!(config, original);
    }

    #[test]
    fn numbers_and_booleans_are_not_trimmed_but_strings_are() {
        let mut config = Config::default();
        let err = config.set_known("listenPort", "9876 ").expect_err("trailing space");
        assert!(err.to_string().contains("listenPort"), "{err}");
        assert!(err.to_string().contains("whitespace"), "{err}");
        assert!(config.set_known("clusterTest", " true").is_err());
        config.set_known("productEnvName", "  test \t").expect("string");
        assert_eq!(config.product_env_name, "test");
    }

    #[test]
    fn booleans_accept_any_ascii_case() {
        let mut config = Config::default();
        config.set_known("orderMessageEnable", "TRUE").expect("bool");
        assert!(config.order_message_enable);
        assert!(config.set_known("orderMessageEnable", "yes").is_err());
    }

    #[test]
    fn secrets_are_redacted_in_print_and_319_but_persisted() {
        let mut config = Config {
            tls_server_key_password: Some("hunter2".into()),
            authentication_enabled: Some(true),
            ..Config::default()
        };
        config
            .extra
            .insert("innerClientAuthenticationCredentials".into(), "{\"secretKey\":\"x\"}".into());
        for shown in [config.to_print_text(), config.to_public_properties_text()] {
            assert!(!shown.contains("hunter2") && !shown.contains("secretKey"), "{shown}");
            assert!(shown.contains("tls.server.keyPassword=******"), "{shown}");
            assert!(shown.contains("innerClientAuthenticationCredentials=******"), "{shown}");
            assert!(shown.contains("authenticationEnabled=true"), "{shown}");
        }
        assert!(config.to_properties_text().contains("tls.server.keyPassword=hunter2"));
    }

    #[test]
    fn a_redacted_secret_sent_back_by_318_keeps_the_secret() {
        let dir = tempfile::tempdir().expect("dir");
        let config = Config {
            tls_server_key_password: Some("hunter2".into()),
            config_store_path: dir.path().join("ns.properties").to_string_lossy().into_owned(),
            ..Config::default()
        };
        let shared = SharedConfig::new(config);
        let listing = shared.to_public_properties_text();
        let line =
            listing.lines().find(|l| l.starts_with("tls.server.keyPassword=")).expect("listed");
        assert_eq!(line, "tls.server.keyPassword=******");
        shared
            .apply_update(format!("{line}\norderMessageEnable=true\n").as_bytes())
            .expect("update");
        assert_eq!(shared.load().tls_server_key_password.as_deref(), Some("hunter2"));
        assert!(shared.load().order_message_enable);
    }

    #[test]
    fn properties_text_is_sorted_and_skips_unset_values() {
        let mut config = Config { rocketmq_home: None, ..Config::default() };
        config.extra.insert("aaa".into(), "1".into());
        let text = config.to_properties_text();
        assert!(text.starts_with("aaa=1\nbindAddress=0.0.0.0\n"), "{text}");
        assert!(!text.contains("rocketmqHome"));
        assert!(!text.contains("tls."));
        let keys: Vec<&str> =
            text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted);
    }
}
