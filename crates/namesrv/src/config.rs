//! The nameserver configuration: one [`Config`] holding every `NamesrvConfig` and
//! `NettyServerConfig` key under its Java name and Java default, the TLS and serialize-type keys
//! that Java takes from JVM system properties, and a bag of extra keys; [`SharedConfig`], the
//! live copy that UPDATE_NAMESRV_CONFIG (318) swaps and GET_NAMESRV_CONFIG (319) prints.
//!
//! Precedence: defaults < `-c` file < command line (`-c` itself sets `configStorePath`).
//! Unlike Java, which silently ignores a value it cannot convert, a bad value is an error that
//! names the key and the value, both at start-up and in an update.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use conf::table::invalid;
use remoting::SerializeType;

pub use conf::{ConfigError, ConfigUpdateError};

/// The live configuration that UPDATE_NAMESRV_CONFIG (318) swaps and GET_NAMESRV_CONFIG (319)
/// prints. See [`conf::Live`].
pub type SharedConfig = conf::Live<Config>;

/// `$HOME/namesrv/<file>`, Java's `${user.home}/namesrv/<file>`.
fn home_file(file: &str) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join("namesrv").join(file).to_string_lossy().into_owned()
}

conf::config_struct! {
    /// Every nameserver setting, under Rust names; [`Config::KEYS`] lists the Java names (the
    /// keys of the `-c` file, of 318 and of 319) in Java declaration order: `NamesrvConfig`,
    /// then `NettyServerConfig`, then the keys Java reads from system properties.
    ///
    /// Which keys take effect at runtime after an update depends only on where they are read:
    /// code that reads `SharedConfig::load()` per request sees a change at once (Java's "Dyn"
    /// keys: `orderMessageEnable`, `returnOrderTopicConfigToBroker`, `supportActingMaster`,
    /// `enableAllTopicList`, `enableTopicList`, `notifyMinBrokerIdChanged`,
    /// `needWaitForService`, `waitSecondsForService`, `deleteTopicWithBrokerRegistration`);
    /// sizes, ports and paths are read once at start.
    pub struct Config {
    // ---- NamesrvConfig ----
    /// `rocketmqHome`: install dir; default env `ROCKETMQ_HOME`. Optional here (Java exits -2
    /// without it). Black-listed.
    rocketmq_home: Option<String> = "rocketmqHome", std::env::var("ROCKETMQ_HOME").ok();
    /// `kvConfigPath`: the KV store file. Black-listed.
    kv_config_path: String = "kvConfigPath", home_file("kvConfig.json");
    /// `configStorePath`: where 318 persists the config; replaced by the `-c` path. Black-listed.
    config_store_path: String = "configStorePath", home_file("namesrv.properties");
    /// `productEnvName`: cluster-test upstream environment.
    product_env_name: String = "productEnvName", "center".to_owned();
    /// `clusterTest`: cluster-test mode (§3.3).
    cluster_test: bool = "clusterTest", false;
    /// `orderMessageEnable` (dynamic): add `orderTopicConf` to routes.
    order_message_enable: bool = "orderMessageEnable", false;
    /// `returnOrderTopicConfigToBroker` (dynamic): ORDER_TOPIC_CONFIG in REGISTER_BROKER replies.
    return_order_topic_config_to_broker: bool = "returnOrderTopicConfigToBroker", true;
    /// `clientRequestThreadPoolNums`: client (route query) pool size.
    client_request_thread_pool_nums: i32 = "clientRequestThreadPoolNums", 8;
    /// `defaultThreadPoolNums`: default pool size.
    default_thread_pool_nums: i32 = "defaultThreadPoolNums", 16;
    /// `clientRequestThreadPoolQueueCapacity`.
    client_request_thread_pool_queue_capacity: i32 = "clientRequestThreadPoolQueueCapacity", 50000;
    /// `defaultThreadPoolQueueCapacity`.
    default_thread_pool_queue_capacity: i32 = "defaultThreadPoolQueueCapacity", 10000;
    /// `scanNotActiveBrokerInterval`: liveness scan period, ms.
    scan_not_active_broker_interval: i64 = "scanNotActiveBrokerInterval", 5000;
    /// `unRegisterBrokerQueueCapacity`: batch-unregister queue bound.
    un_register_broker_queue_capacity: i32 = "unRegisterBrokerQueueCapacity", 3000;
    /// `supportActingMaster` (dynamic): acting-master route rewrite.
    support_acting_master: bool = "supportActingMaster", false;
    /// `enableAllTopicList` (dynamic): gate for GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206).
    enable_all_topic_list: bool = "enableAllTopicList", true;
    /// `enableTopicList` (dynamic): gate for 224 and 311–313.
    enable_topic_list: bool = "enableTopicList", true;
    /// `notifyMinBrokerIdChanged` (dynamic): send NOTIFY_MIN_BROKER_ID_CHANGE.
    notify_min_broker_id_changed: bool = "notifyMinBrokerIdChanged", false;
    /// `enableControllerInNamesrv`: also run a RocketMQ 5 controller node in this process, on
    /// its own port (its entry in `controllerDLegerPeers`; the controller keys are read from
    /// the same file, see the controller's key reference). Default false. Read at start.
    enable_controller_in_namesrv: bool = "enableControllerInNamesrv", false;
    /// `needWaitForService` (dynamic): refuse route queries during warm-up.
    need_wait_for_service: bool = "needWaitForService", false;
    /// `waitSecondsForService` (dynamic): warm-up length, seconds.
    wait_seconds_for_service: i32 = "waitSecondsForService", 45;
    /// `deleteTopicWithBrokerRegistration` (dynamic): drop topics missing from a registration.
    delete_topic_with_broker_registration: bool = "deleteTopicWithBrokerRegistration", false;
    /// `configBlackList`: extra keys 318 may not change, `;`-separated; read once at start.
    config_black_list: String = "configBlackList", "configBlackList;configStorePath;kvConfigPath".to_owned();

    // ---- NettyServerConfig ----
    /// `bindAddress`: listen address (hostname, IPv4 or IPv6). Read at start;
    /// UPDATE_NAMESRV_CONFIG may not change it (Java persists it for the next start).
    bind_address: String = "bindAddress", "0.0.0.0".to_owned();
    /// `listenPort`: 0 lets the OS choose. Read at start; UPDATE_NAMESRV_CONFIG may not change
    /// it (Java persists it, and a bad port then stops the next start).
    listen_port: i32 = "listenPort", 9876;
    /// `serverWorkerThreads`.
    server_worker_threads: i32 = "serverWorkerThreads", 8;
    /// `serverCallbackExecutorThreads` (0 means 4).
    server_callback_executor_threads: i32 = "serverCallbackExecutorThreads", 0;
    /// `serverSelectorThreads`: I/O threads.
    server_selector_threads: i32 = "serverSelectorThreads", 3;
    /// `serverOnewaySemaphoreValue`: limit on server-initiated oneway calls.
    server_oneway_semaphore_value: i32 = "serverOnewaySemaphoreValue", 256;
    /// `serverAsyncSemaphoreValue`: limit on server-initiated async calls.
    server_async_semaphore_value: i32 = "serverAsyncSemaphoreValue", 64;
    /// `serverChannelMaxIdleTimeSeconds`: a connection that sends no complete frame for this
    /// long is closed (Java's all-idle close); 0 never closes one. Read when a connection
    /// opens; an update refuses 1–59 (brokers re-register every 30 s).
    server_channel_max_idle_time_seconds: i32 = "serverChannelMaxIdleTimeSeconds", 120;
    /// `serverSocketSndBufSize`: SO_SNDBUF, not set when 0.
    server_socket_snd_buf_size: i32 = "serverSocketSndBufSize", 0;
    /// `serverSocketRcvBufSize`: SO_RCVBUF, not set when 0.
    server_socket_rcv_buf_size: i32 = "serverSocketRcvBufSize", 0;
    /// `writeBufferHighWaterMark`: used only if both marks are > 0.
    write_buffer_high_water_mark: i32 = "writeBufferHighWaterMark", 0;
    /// `writeBufferLowWaterMark`: used only if both marks are > 0.
    write_buffer_low_water_mark: i32 = "writeBufferLowWaterMark", 0;
    /// `serverSocketBacklog` (Java ignores it and uses 1024).
    server_socket_backlog: i32 = "serverSocketBacklog", 1024;
    /// `serverNettyWorkerGroupEnable`.
    server_netty_worker_group_enable: bool = "serverNettyWorkerGroupEnable", true;
    /// `serverPooledByteBufAllocatorEnable`.
    server_pooled_byte_buf_allocator_enable: bool = "serverPooledByteBufAllocatorEnable", true;
    /// `enableShutdownGracefully`: GO_AWAY window before closing.
    enable_shutdown_gracefully: bool = "enableShutdownGracefully", false;
    /// `shutdownWaitTimeSeconds`: length of that window.
    shutdown_wait_time_seconds: i32 = "shutdownWaitTimeSeconds", 30;
    /// `useEpollNativeSelector`.
    use_epoll_native_selector: bool = "useEpollNativeSelector", false;

    // ---- rocketmq-namesrv-rs keys (no Java equivalent) ----
    /// `routeSnapshotEnable`: keep a route snapshot for a warm restart (default `true`). When
    /// on, the route tables (clusters, broker groups, live brokers, topic queues, filter
    /// servers, static-topic mappings) are written to `routeSnapshotPath` at most every 5 s
    /// after they change and once more at graceful shutdown, and restored before the port opens
    /// at the next start: every broker in it is live again from the start time, so clients get
    /// routes at once, and a broker that does not register again expires by its heartbeat
    /// timeout as usual. A missing snapshot is an empty start; a damaged one is logged and
    /// skipped for its `.bak`, never fatal. Read at start-up.
    route_snapshot_enable: bool = "routeSnapshotEnable", true;
    /// `routeSnapshotPath`: the route snapshot file; unset means `routes.snapshot` in the
    /// directory of `kvConfigPath`. The previous snapshot is kept as `<path>.bak`. Read at
    /// start-up; UPDATE_NAMESRV_CONFIG may not change it (black-listed, like the other paths).
    route_snapshot_path: Option<String> = "routeSnapshotPath", None;
    /// `serverMaxConnections`: the most client connections served at once (default 50000). A
    /// connection beyond it is closed as soon as it is accepted (logged, counted in the
    /// `connections` cap metric). Takes effect at once for new connections.
    server_max_connections: i32 = "serverMaxConnections", 50_000;
    /// `serverFrameTimeoutSeconds`: how long a frame may take to arrive once its first byte has
    /// (default 60; 0 never times out). A slower sender's connection is closed. Read when a
    /// connection opens; an update refuses 1–9 (a broker's multi-MB registration over a slow
    /// link needs seconds).
    server_frame_timeout_seconds: i32 = "serverFrameTimeoutSeconds", 60;
    /// `com.rocketmq.remoting.frameMaxLength`: the largest frame accepted, length prefix
    /// included, bytes (Java's system property, default 16777216). It also bounds what one
    /// connection holds for a partially received frame: its buffer grows with the bytes that
    /// arrived, never to the announced length. A longer frame closes the connection. Read when
    /// a connection opens; an update refuses values under 4 MiB (broker registrations).
    frame_max_length: i32 = "com.rocketmq.remoting.frameMaxLength", 16_777_216;
    /// `serverMaxPendingFrameBytes`: the most bytes all connections together hold for frames
    /// not yet complete (default 536870912, 512 MiB; at least `frameMaxLength`). A connection
    /// whose partial frame would take the total over it is closed (logged, counted in the
    /// `pending_frame_bytes` cap metric). Takes effect at once.
    server_max_pending_frame_bytes: i64 = "serverMaxPendingFrameBytes", 512 << 20;
    /// `serverConnectionMaxPendingResponseBytes`: the most bytes of answers one connection may
    /// have waiting for its client to read them (default 33554432, 32 MiB; more than any one
    /// answer). A client that asks for more without reading is closed. Takes effect at once.
    server_connection_max_pending_response_bytes: i64 =
        "serverConnectionMaxPendingResponseBytes", 32 << 20;
    /// `serverMaxPendingResponseBytes`: the most bytes of answers all connections together may
    /// have waiting for slow or stuck readers (default 536870912, 512 MiB; at least
    /// `serverConnectionMaxPendingResponseBytes`). A connection whose waiting answers would
    /// take the total over it is closed. Takes effect at once.
    server_max_pending_response_bytes: i64 = "serverMaxPendingResponseBytes", 512 << 20;
    /// `registerBodyMaxInflatedBytes`: the most bytes a compressed REGISTER_BROKER body may
    /// inflate to (default 67108864, 64 MiB; a 50,000-topic table inflates to under 5 MiB).
    /// A larger one is refused with SYSTEM_ERROR and the broker's routes stay as they were.
    /// Takes effect at once.
    register_body_max_inflated_bytes: i64 = "registerBodyMaxInflatedBytes", 64 << 20;
    /// `registerBrokerMaxTopics`: the most topics one REGISTER_BROKER body may carry (default
    /// 200000, four times the largest broker we benchmark). A registration with more is
    /// refused with SYSTEM_ERROR `register broker failed: <n> topics exceed the limit of <max>
    /// (registerBrokerMaxTopics)`, and nothing of it is applied: the broker keeps its previous
    /// routes until they expire (it retries every 30 s and logs the remark). A compressed body
    /// is refused from its announced count, before its topics are read. Takes effect at once.
    register_broker_max_topics: i32 = "registerBrokerMaxTopics", 200_000;
    /// `kvConfigMaxValueBytes`: the longest value PUT_KV_CONFIG accepts, bytes of UTF-8
    /// (default 65536). A longer one is refused with SYSTEM_ERROR and nothing is stored.
    /// Takes effect at once.
    kv_config_max_value_bytes: i32 = "kvConfigMaxValueBytes", 65_536;

    // ---- JVM system properties in Java, read from the same file here ----
    /// `rocketmq.serialize.type`: header serialization of our responses, `JSON` (default when
    /// unset) or `ROCKETMQ`.
    serialize_type: Option<SerializeType> = "rocketmq.serialize.type", None;
    /// `tls.server.mode`: `disabled`, `permissive` (Java default) or `enforcing`; raw text.
    tls_server_mode: Option<String> = "tls.server.mode", None;
    /// `tls.test.mode.enable`: raw text (Java default `true`).
    tls_test_mode_enable: Option<String> = "tls.test.mode.enable", None;
    /// `tls.server.need.client.auth`: `none`, `optional` or `require`; raw text.
    tls_server_need_client_auth: Option<String> = "tls.server.need.client.auth", None;
    /// `tls.server.keyPath`: raw text.
    tls_server_key_path: Option<String> = "tls.server.keyPath", None;
    /// `tls.server.keyPassword`: raw text.
    tls_server_key_password: Option<String> = "tls.server.keyPassword", None;
    /// `tls.server.certPath`: raw text.
    tls_server_cert_path: Option<String> = "tls.server.certPath", None;
    /// `tls.server.authClient`: raw text.
    tls_server_auth_client: Option<String> = "tls.server.authClient", None;
    /// `tls.server.trustCertPath`: raw text.
    tls_server_trust_cert_path: Option<String> = "tls.server.trustCertPath", None;
    /// `tls.config.file`: raw text (Java default `/etc/rocketmq/tls.properties`).
    tls_config_file: Option<String> = "tls.config.file", None;

    // ---- The operations surface (ours; Java has none) ----
    /// `httpListenPort`: TCP port of the HTTP listener (metrics at `/metrics`, probes at
    /// `/healthz` and `/readyz`, the JSON API under `/api/v1/`, the dashboard at `/`, the
    /// address server at `/rocketmq/nsaddr`). Default 8080, the port the Java client's
    /// address-server lookup uses when `rocketmq.namesrv.domain` has none; `0` disables the
    /// listener. A port already taken stops start-up. Read once at start; UPDATE_NAMESRV_CONFIG
    /// may not change it (the probes would lose the server at the next start).
    http_listen_port: i32 = "httpListenPort", 8080;
    /// `httpBindAddress`: address the HTTP listener binds (hostname, IPv4 or IPv6). Unset (the
    /// default): the same as `bindAddress`. Read once at start; UPDATE_NAMESRV_CONFIG may not
    /// change it.
    http_bind_address: Option<String> = "httpBindAddress", None;
    /// `metricsEnable`: record per-request metrics and serve `/metrics` (default `true`). With
    /// `false` the connection path reads no clock and counts nothing per request, and
    /// `/metrics` answers 404; the probes, API, dashboard and address server still work. Read
    /// once at start.
    metrics_enable: bool = "metricsEnable", true;
    /// `httpNamesrvAddr`: the nameserver list the address server answers at
    /// `GET /rocketmq/nsaddr` (and `/rocketmq/<any subgroup>`), `;`-separated `host:port` as in
    /// a client's `namesrvAddr`; the Java client fetches it when started with
    /// `-Drocketmq.namesrv.domain=<this host>:<httpListenPort>`. Unset (the default): this
    /// server's own remoting address (`bindAddress`, or the address the HTTP request came in on
    /// when that is a wildcard, and the remoting port). Dynamic: an update applies at once.
    http_namesrv_addr: Option<String> = "httpNamesrvAddr", None;
    }
}

/// Range rules checked by [`Config::validate`]: (key, minimum, maximum).
const INT_RANGES: &[(&str, i64, i64)] = &[
    ("listenPort", 0, 65535),
    ("httpListenPort", 0, 65535),
    ("clientRequestThreadPoolNums", 1, i32::MAX as i64),
    ("defaultThreadPoolNums", 1, i32::MAX as i64),
    ("clientRequestThreadPoolQueueCapacity", 1, i32::MAX as i64),
    ("defaultThreadPoolQueueCapacity", 1, i32::MAX as i64),
    ("scanNotActiveBrokerInterval", 1, i64::MAX),
    ("unRegisterBrokerQueueCapacity", 1, i32::MAX as i64),
    ("waitSecondsForService", 0, i32::MAX as i64),
    ("serverWorkerThreads", 1, i32::MAX as i64),
    ("serverCallbackExecutorThreads", 0, i32::MAX as i64),
    ("serverSelectorThreads", 1, i32::MAX as i64),
    ("serverOnewaySemaphoreValue", 1, i32::MAX as i64),
    ("serverAsyncSemaphoreValue", 1, i32::MAX as i64),
    ("serverChannelMaxIdleTimeSeconds", 0, i32::MAX as i64),
    ("serverSocketSndBufSize", 0, i32::MAX as i64),
    ("serverSocketRcvBufSize", 0, i32::MAX as i64),
    ("writeBufferHighWaterMark", 0, i32::MAX as i64),
    ("writeBufferLowWaterMark", 0, i32::MAX as i64),
    ("serverSocketBacklog", 0, i32::MAX as i64),
    ("shutdownWaitTimeSeconds", 0, i32::MAX as i64),
    ("serverMaxConnections", 1, i32::MAX as i64),
    ("serverFrameTimeoutSeconds", 0, i32::MAX as i64),
    ("com.rocketmq.remoting.frameMaxLength", 64 * 1024, i32::MAX as i64),
    ("serverMaxPendingFrameBytes", 64 * 1024, i64::MAX),
    ("serverConnectionMaxPendingResponseBytes", 64 * 1024, i64::MAX),
    ("serverMaxPendingResponseBytes", 64 * 1024, i64::MAX),
    ("registerBodyMaxInflatedBytes", 64 * 1024, i64::MAX),
    ("registerBrokerMaxTopics", 1, i32::MAX as i64),
    ("kvConfigMaxValueBytes", 1, i32::MAX as i64),
];

/// Keys whose value must be at least another key's: (key, the key it may not be below).
const AT_LEAST: &[(&str, &str)] = &[
    ("serverMaxPendingFrameBytes", "com.rocketmq.remoting.frameMaxLength"),
    ("serverMaxPendingResponseBytes", "serverConnectionMaxPendingResponseBytes"),
];

/// Floors an UPDATE_NAMESRV_CONFIG must respect (a start-up file may go lower, e.g. in a
/// test): (key, minimum, why). Zero stays allowed for the keys in [`ZERO_IS_OFF`].
const UPDATE_FLOORS: &[(&str, i64, &str)] = &[
    (
        "serverChannelMaxIdleTimeSeconds",
        60,
        "must be 0 (never) or at least 60 at run time: brokers re-register every 30 s (60 s at \
         most), so a shorter idle timeout closes their connections and drops their routes",
    ),
    (
        "serverFrameTimeoutSeconds",
        10,
        "must be 0 (never) or at least 10 at run time: a broker's multi-MB registration may \
         take seconds to arrive",
    ),
    (
        "scanNotActiveBrokerInterval",
        1000,
        "must be at least 1000 (ms) at run time: the liveness scan would run continuously",
    ),
    (
        "com.rocketmq.remoting.frameMaxLength",
        4 << 20,
        "must be at least 4194304 at run time: broker registrations of a few thousand topics \
         are larger",
    ),
];

/// Where the server listens: an update may not change them (the next start would leave the
/// address clients, brokers and probes use, or fail to bind).
const RESTART_ONLY: [&str; 4] = ["listenPort", "bindAddress", "httpListenPort", "httpBindAddress"];

/// Keys of [`UPDATE_FLOORS`] for which 0 means "off".
const ZERO_IS_OFF: &[&str] = &["serverChannelMaxIdleTimeSeconds", "serverFrameTimeoutSeconds"];

/// Keys that UPDATE_NAMESRV_CONFIG may never change, whatever `configBlackList` says.
/// Java: `DefaultRequestProcessor#initConfigBlackList`
/// Java's four, plus `routeSnapshotPath` (a path the server writes to, like the other two).
pub const FIXED_BLACK_LIST: [&str; 5] =
    ["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "routeSnapshotPath"];

impl Config {
    /// Builds the start-up configuration: defaults, then the `-c` file if given (typed keys
    /// converted, other keys kept in [`Config::extra`], `configStorePath` set to `file`), then
    /// [`Config::validate`]. Java: `NamesrvStartup#parseCommandlineAndConfigFile`
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut config = Config::default();
        if let Some(path) = file {
            conf::table::load_file(&mut config, path)?;
            config.config_store_path = path.to_string_lossy().into_owned();
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges: `listenPort` within 0–65535, pool sizes and queue capacities at least 1,
    /// other numbers not negative, `bindAddress` not empty. The error names the key and value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        conf::table::check_ranges(self, INT_RANGES)?;
        for &(key, floor) in AT_LEAST {
            let number = |k: &str| self.get(k).and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
            if number(key) < number(floor) {
                let value = self.get(key).unwrap_or_default();
                return Err(invalid(key, &value, &format!("must be at least {floor}")));
            }
        }
        if self.bind_address.is_empty() {
            return Err(conf::table::invalid(
                "bindAddress",
                &self.bind_address,
                "must not be empty",
            ));
        }
        Ok(())
    }

    /// The checks an UPDATE_NAMESRV_CONFIG (318) must also pass, beyond [`Config::validate`]:
    /// no value that would break the running server or take it off its address at the next
    /// start. `self` is the updated configuration, `running` the one in use. The error names
    /// the key and says why.
    pub fn validate_update(&self, running: &Config) -> Result<(), ConfigError> {
        let restart_only = |key: &str, value: String, now: String| {
            invalid(
                key,
                &value,
                &format!(
                    "cannot be changed at run time (the server listens with {now}); change it \
                     in the config file and restart"
                ),
            )
        };
        for key in RESTART_ONLY {
            let (value, now) = (self.get(key), running.get(key));
            if value != now {
                let shown = |v: Option<String>| v.unwrap_or_else(|| "unset".to_owned());
                return Err(restart_only(key, shown(value), shown(now)));
            }
        }
        for &(key, min, why) in UPDATE_FLOORS {
            let Some(value) = self.get(key) else { continue };
            if running.get(key).as_ref() == Some(&value) {
                continue; // unchanged: the running value, whatever the start-up file said
            }
            let number: i64 = value.parse().unwrap_or(0);
            let off = number == 0 && ZERO_IS_OFF.contains(&key);
            if !off && number < min {
                return Err(invalid(key, &value, why));
            }
        }
        Ok(())
    }

    /// The keys UPDATE_NAMESRV_CONFIG may not change: [`FIXED_BLACK_LIST`] plus the
    /// `configBlackList` value split on `;` (empty pieces skipped; exact, case-sensitive).
    /// Java: `DefaultRequestProcessor#initConfigBlackList`
    pub fn black_list(&self) -> BTreeSet<String> {
        let mut list: BTreeSet<String> = FIXED_BLACK_LIST.iter().map(|k| (*k).to_owned()).collect();
        list.extend(self.config_black_list.split(';').filter(|k| !k.is_empty()).map(str::to_owned));
        list
    }

    /// The route snapshot file: `routeSnapshotPath`, or `routes.snapshot` in the directory of
    /// `kvConfigPath`.
    pub fn route_snapshot_file(&self) -> PathBuf {
        match self.route_snapshot_path.as_deref() {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => Path::new(&self.kv_config_path)
                .parent()
                .unwrap_or_else(|| Path::new("."))
                .join("routes.snapshot"),
        }
    }

    /// The serialize type of our responses (`JSON` unless `rocketmq.serialize.type` says
    /// otherwise).
    pub fn effective_serialize_type(&self) -> SerializeType {
        self.serialize_type.unwrap_or_default()
    }
}

impl conf::Rules for Config {
    fn check(&self) -> Result<(), ConfigError> {
        self.validate()
    }
    fn check_update(&self, running: &Self) -> Result<(), ConfigError> {
        self.validate_update(running)
    }
    fn update_black_list(&self) -> BTreeSet<String> {
        self.black_list()
    }
    fn store_path(&self) -> PathBuf {
        PathBuf::from(&self.config_store_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn validate_rejects_out_of_range_values() {
        let mut config = Config { listen_port: -1, ..Config::default() };
        let err = config.validate().expect_err("negative port");
        assert_eq!(
            err.to_string(),
            "invalid value for config key listenPort: \"-1\" (must be between 0 and 65535)"
        );
        config.listen_port = 0;
        config.default_thread_pool_nums = 0;
        assert!(config
            .validate()
            .expect_err("zero pool")
            .to_string()
            .contains("defaultThreadPoolNums"));
    }

    #[test]
    fn black_list_adds_configured_keys_to_fixed_ones() {
        let config = Config { config_black_list: "a;;b".into(), ..Config::default() };
        let list: Vec<_> = config.black_list().into_iter().collect();
        assert_eq!(
            list,
            [
                "a",
                "b",
                "configBlackList",
                "configStorePath",
                "kvConfigPath",
                "rocketmqHome",
                "routeSnapshotPath"
            ]
        );
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
