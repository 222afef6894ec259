//! The controller configuration: one [`Config`] holding the Java `ControllerConfig` and
//! `NettyServerConfig` keys under their Java names and defaults (a Java `controller.conf` works
//! unchanged), the few Raft timing keys this implementation adds, and a bag of extra keys;
//! [`SharedConfig`], the live copy that UPDATE_CONTROLLER_CONFIG (1009) swaps and
//! GET_CONTROLLER_CONFIG (1010) prints.
//!
//! Ports: like Java's DLedger controller, a node serves everything on the port of its own entry
//! in `controllerDLegerPeers` — the brokers' CONTROLLER_* requests and, under private request
//! codes, the Raft RPCs between controller nodes. `listenPort` is accepted and ignored there,
//! exactly as DLedger overrides it. Embedded in the nameserver (`enableControllerInNamesrv`),
//! the same keys come from the nameserver's file and the controller listens on its peer port
//! next to the nameserver's `listenPort`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use conf::{ConfigError, ConfigUpdateError};

/// The live configuration that 1009 swaps and 1010 prints. See [`conf::Live`].
pub type SharedConfig = conf::Live<Config>;

/// `$HOME/<rest>`, Java's `${user.home}/<rest>`.
fn home_path(rest: &str) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(rest).to_string_lossy().into_owned()
}

conf::config_struct! {
    /// Every controller setting, under Rust names; [`Config::KEYS`] lists the Java names (the
    /// keys of the `-c` file, of 1009 and of 1010): `ControllerConfig`, then the
    /// `NettyServerConfig` keys that apply, then the Raft keys of this implementation.
    ///
    /// Read at start: the peers, the store, ports and Raft timings. Read on every use (take
    /// effect at once after 1009, marked `dynamic`): `enableElectUncleanMaster`,
    /// `notifyBrokerRoleChanged`, `processReadEvent`, `electMasterMaxRetryCount`. The `///`
    /// text and `#[key(...)]` markers of each key are its entry in the book's controller key
    /// reference (`cargo test -p controller --test book` regenerates it).
    pub struct Config {
    // ---- ControllerConfig ----
    /// `rocketmqHome`: install dir; default env `ROCKETMQ_HOME`. Optional here (Java exits
    /// without it). Black-listed for 1009.
    #[key(java = "ControllerConfig", no_effect,
          default_doc = "the `ROCKETMQ_HOME` environment variable; unset without it")]
    rocketmq_home: Option<String> = "rocketmqHome", std::env::var("ROCKETMQ_HOME").ok();
    /// `configStorePath`: where UPDATE_CONTROLLER_CONFIG (1009) persists the configuration;
    /// replaced by the `-c` path. Default `$HOME/controller/controller.properties`. Black-listed.
    #[key(java = "ControllerConfig", default_doc = "`$HOME/controller/controller.properties`")]
    config_store_path: String = "configStorePath", home_path("controller/controller.properties");
    /// `controllerType`: `DLedger` (the default, Java's DLedger key layout) is the only type
    /// served; `jRaft` stops start-up with an error. Read at start.
    #[key(java = "ControllerConfig")]
    controller_type: String = "controllerType", "DLedger".to_owned();
    /// `scanNotActiveBrokerInterval`: period of the broker liveness scan, in milliseconds
    /// (default 5000). A broker whose last BROKER_HEARTBEAT is older than the
    /// `heartbeatTimeoutMills` it sent (10 s when it sent none) is dropped; if it was a master,
    /// the leader elects a new one. Read at start.
    #[key(java = "ControllerConfig")]
    scan_not_active_broker_interval: i64 = "scanNotActiveBrokerInterval", 5000;
    /// `controllerThreadPoolNums`: how many controller requests run at once on one node
    /// (default 16). Writes are still decided one at a time, in order, as in Java. Read at start.
    #[key(java = "ControllerConfig")]
    controller_thread_pool_nums: i32 = "controllerThreadPoolNums", 16;
    /// `controllerRequestThreadPoolQueueCapacity`: requests that may wait for a free slot
    /// before new ones are refused with SYSTEM_BUSY (default 50000). Read at start.
    #[key(java = "ControllerConfig")]
    controller_request_thread_pool_queue_capacity: i32 = "controllerRequestThreadPoolQueueCapacity", 50000;
    /// `controllerDLegerGroup`: the controller group's name; every node of a group must use
    /// the same one, and Raft RPCs naming another group are refused. Required. Read at start.
    #[key(java = "ControllerConfig")]
    controller_dleger_group: Option<String> = "controllerDLegerGroup", None;
    /// `controllerDLegerPeers`: every node of the group as `id-host:port`, `;`-separated, e.g.
    /// `n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858`. A node listens on its own
    /// entry's port for brokers, `mqadmin` and the other nodes; brokers' `controllerAddr`
    /// lists these addresses. Required. Read at start.
    #[key(java = "ControllerConfig")]
    controller_dleger_peers: Option<String> = "controllerDLegerPeers", None;
    /// `controllerDLegerSelfId`: this node's id in `controllerDLegerPeers` (e.g. `n0`).
    /// Required. Read at start.
    #[key(java = "ControllerConfig")]
    controller_dleger_self_id: Option<String> = "controllerDLegerSelfId", None;
    /// `mappedFileSize`: DLedger's log segment size in Java; accepted and unused here (the
    /// log lives in one embedded database file).
    #[key(java = "ControllerConfig", no_effect)]
    mapped_file_size: i32 = "mappedFileSize", 1024 * 1024 * 1024;
    /// `controllerStorePath`: directory of this node's Raft log, vote and snapshots
    /// (`controller.redb`); empty means `$HOME/DLedgerController`, like Java. A Java DLedger
    /// store in the same directory is neither read nor touched. Read at start.
    #[key(java = "ControllerConfig")]
    controller_store_path: String = "controllerStorePath", String::new();
    /// `electMasterMaxRetryCount`: how many times the leader retries an election it starts
    /// itself (master gone) when the attempt fails (default 3). Read on every use.
    #[key(java = "ControllerConfig", dynamic)]
    elect_master_max_retry_count: i32 = "electMasterMaxRetryCount", 3;
    /// `enableElectUncleanMaster`: when no live member of the sync-state set is left, elect any
    /// live replica (may lose acknowledged messages). Default false. Read on every use.
    #[key(java = "ControllerConfig", dynamic)]
    enable_elect_unclean_master: bool = "enableElectUncleanMaster", false;
    /// `processReadEvent` (Java field `isProcessReadEvent`): confirm leadership with a quorum
    /// before answering a read (1004, 1006, 1012), so a deposed leader never answers stale
    /// data. Default false, as in Java. Read on every use.
    #[key(java = "ControllerConfig", dynamic)]
    process_read_event: bool = "processReadEvent", false;
    /// `notifyBrokerRoleChanged`: after an election, send NOTIFY_BROKER_ROLE_CHANGED (1008)
    /// to every live broker of the group instead of waiting for them to poll. Default true.
    /// Read on every use.
    #[key(java = "ControllerConfig", dynamic)]
    notify_broker_role_changed: bool = "notifyBrokerRoleChanged", true;
    /// `scanInactiveMasterInterval`: period, in milliseconds, at which the leader looks for
    /// groups whose master stopped heartbeating while another member still does, and elects
    /// (default 5000). Read at start.
    #[key(java = "ControllerConfig")]
    scan_inactive_master_interval: i64 = "scanInactiveMasterInterval", 5000;
    /// `configBlackList`: extra keys 1009 may not change, `;`-separated (`configBlackList`,
    /// `configStorePath` and `rocketmqHome` never can). Read at start.
    #[key(java = "ControllerConfig")]
    config_black_list: String = "configBlackList", "configBlackList;configStorePath".to_owned();

    // ---- NettyServerConfig ----
    /// `bindAddress`: the address the controller port binds (its port comes from this node's
    /// `controllerDLegerPeers` entry). Default `0.0.0.0`. Read at start.
    #[key(java = "NettyServerConfig")]
    bind_address: String = "bindAddress", "0.0.0.0".to_owned();
    /// `listenPort`: accepted and ignored, as in Java's DLedger controller, which listens on
    /// its peer address (default 19876, what `ControllerStartup` sets).
    #[key(java = "NettyServerConfig", no_effect)]
    listen_port: i32 = "listenPort", 19876;
    /// `serverChannelMaxIdleTimeSeconds`: a connection silent this long is closed (default
    /// 120). Read at start.
    #[key(java = "NettyServerConfig")]
    server_channel_max_idle_time_seconds: i32 = "serverChannelMaxIdleTimeSeconds", 120;

    // ---- this implementation's Raft timings (no Java equivalent) ----
    /// `raftHeartbeatIntervalMillis`: how often the Raft leader heartbeats the other
    /// controller nodes (default 300 ms). Read at start.
    raft_heartbeat_interval_millis: i64 = "raftHeartbeatIntervalMillis", 300;
    /// `raftElectionTimeoutMillis`: a follower that hears no leader for between this and
    /// twice this starts an election (default 1500 ms; a new leader takes about this long
    /// after the old one dies). Read at start.
    raft_election_timeout_millis: i64 = "raftElectionTimeoutMillis", 1500;
    /// `raftSnapshotLogs`: a state-machine snapshot is taken every this many log entries, and
    /// older entries are purged (default 1024). Read at start.
    raft_snapshot_logs: i64 = "raftSnapshotLogs", 1024;

    // ---- TLS on the controller port: the nameserver's `tls.*` keys (JVM system properties in
    // Java, whose controller reads them like its nameserver); embedded in the nameserver, the
    // nameserver's own TLS context serves the controller port too ----
    /// TLS on the controller port: `disabled`, `permissive` (TLS and plaintext on one port; the
    /// default) or `enforcing` (plaintext closes the connection). With `enforcing` the node
    /// also dials the other nodes of its group over TLS (as with `tls.enable=true`), its
    /// certificate checks and client certificate set by the `tls.client.*` keys.
    #[key(system_property)]
    tls_server_mode: Option<String> = "tls.server.mode", None;
    /// When `true` (the default when unset), TLS uses a self-signed certificate generated at
    /// start and ignores `tls.server.certPath` and `tls.server.keyPath`.
    #[key(system_property)]
    tls_test_mode_enable: Option<String> = "tls.test.mode.enable", None;
    /// Client certificates: `none` (the default), `optional` or `require`.
    #[key(system_property)]
    tls_server_need_client_auth: Option<String> = "tls.server.need.client.auth", None;
    /// The PEM private key. Reloaded without a restart when the file changes.
    #[key(system_property)]
    tls_server_key_path: Option<String> = "tls.server.keyPath", None;
    /// The password of an encrypted PKCS#8 `tls.server.keyPath`.
    #[key(system_property)]
    tls_server_key_password: Option<String> = "tls.server.keyPassword", None;
    /// The PEM certificate chain, leaf first. Reloaded without a restart when the file changes.
    #[key(system_property)]
    tls_server_cert_path: Option<String> = "tls.server.certPath", None;
    /// `true` checks client certificates against `tls.server.trustCertPath` (only a checked
    /// certificate's CN names an account); default `false`, as in Java.
    #[key(system_property)]
    tls_server_auth_client: Option<String> = "tls.server.authClient", None;
    /// The PEM CA certificates client certificates must chain to.
    #[key(system_property)]
    tls_server_trust_cert_path: Option<String> = "tls.server.trustCertPath", None;
    /// A properties file whose `tls.*` keys override these (all but `tls.server.mode` and
    /// `tls.enable`); `/etc/rocketmq/tls.properties` when unset.
    #[key(system_property)]
    tls_config_file: Option<String> = "tls.config.file", None;

    // ---- TLS when the node dials: the Raft RPCs to the other nodes of its group, and
    // NOTIFY_BROKER_ROLE_CHANGED to brokers (Java's client-side `tls.*` keys) ----
    /// `true` makes the node dial over TLS: the other controller nodes (Raft RPCs) and the
    /// brokers it notifies (1008). Default `false`, as in Java. The Raft RPCs go over TLS
    /// whenever `tls.server.mode` is `enforcing` too (the peers' ports refuse plaintext then).
    /// With `tls.test.mode.enable` (the default) the node trusts any certificate and presents
    /// none; otherwise as the `tls.client.*` keys say.
    #[key(system_property)]
    tls_enable: Option<String> = "tls.enable", None;
    /// `true` checks the certificate of each node or broker dialled: it must chain to
    /// `tls.client.trustCertPath` and name the host dialled (the host or IP of its
    /// `controllerDLegerPeers` entry). Default `false`, as in Java: any certificate is
    /// accepted. Ignored in test mode.
    #[key(system_property)]
    tls_client_auth_server: Option<String> = "tls.client.authServer", None;
    /// The PEM CA certificates a dialled certificate must chain to; required with
    /// `tls.client.authServer=true` (no system trust store is read). Reloaded without a
    /// restart when the file changes (for the connections made after).
    #[key(system_property)]
    tls_client_trust_cert_path: Option<String> = "tls.client.trustCertPath", None;
    /// The PEM certificate chain the node presents when it dials (mutual TLS, e.g. for peers
    /// with `tls.server.need.client.auth=require`); with `tls.client.keyPath`. Ignored in test
    /// mode. Reloaded without a restart when the file changes.
    #[key(system_property)]
    tls_client_cert_path: Option<String> = "tls.client.certPath", None;
    /// The PEM private key of `tls.client.certPath`. Reloaded without a restart when the file
    /// changes.
    #[key(system_property)]
    tls_client_key_path: Option<String> = "tls.client.keyPath", None;
    /// The password of an encrypted PKCS#8 `tls.client.keyPath`.
    #[key(system_property)]
    tls_client_key_password: Option<String> = "tls.client.keyPassword", None;

    // ---- Access control on the controller port (the nameserver's keys, same meaning; no Java
    // counterpart). Embedded in the nameserver, the nameserver's gate serves both ports. ----
    /// `authenticationEnabled`: check who sends each controller request against the accounts
    /// of `authConfigPath` (RocketMQ signatures, client certificates, allowed addresses):
    /// reads (1004–1007, 1010) need `reader`, a broker's requests (904, 1001, 1002 for its own
    /// group, 1003, 1012, 1013) `broker` and the account's `clusters`/`brokerNames`, and
    /// 1009, 1011 and an operator's 1002 (`designateElect=true`) `admin`; refused with
    /// NO_PERMISSION (16). Raft RPCs must then be signed with `controllerPeerCredentials`.
    /// Default `false` (Java-compatible). Read at start; 1009 may not change it.
    authentication_enabled: Option<bool> = "authenticationEnabled", None;
    /// `authConfigPath`: the accounts file, the nameserver's format. Default
    /// `$HOME/controller/auth.yml`. Re-read within a second of a change. Read at start.
    auth_config_path: Option<String> = "authConfigPath", None;
    /// `authenticationMode`: `writes` (default: reads stay open) or `all`. Read at start.
    authentication_mode: Option<String> = "authenticationMode", None;
    /// `controllerPeerCredentials`: the identity every node of the group signs its Raft RPCs
    /// (vote, append, snapshot) with, shaped like a broker's `innerClientAuthenticationCredentials`:
    /// `{"accessKey":"peers","secretKey":"…"}`, the same on every node. With
    /// `authenticationEnabled`, a Raft RPC not signed with it is refused (16) before Raft sees
    /// it, so a client that is not a peer can neither vote nor append; required then when the
    /// group has more than one node. It is not an account of the accounts file. Never shown
    /// (`******`). Read at start.
    controller_peer_credentials: Option<String> = "controllerPeerCredentials", None;
    /// `authFailureWindowSeconds`: with access control on, ten failed requests of one access
    /// key (or of unsigned requests, or of unknown keys) from one client address within this
    /// many seconds block that pair, and only that pair, until the window ends: its requests
    /// are refused with `too many failed attempts` without any signature being verified.
    /// Unset: 60. Read at start; 1009 may not change it.
    auth_failure_window_seconds: Option<i64> = "authFailureWindowSeconds", None;

    // ---- this implementation's HTTP listener (no Java equivalent) ----
    /// `httpListenPort`: the port of the node's HTTP listener: Prometheus metrics at
    /// `/metrics` (`rocketmq_controller_*`), liveness at `/healthz`, readiness at `/readyz`
    /// (200 while the node knows a leader and its store is open, 503 otherwise). Default 8081,
    /// so that a nameserver (8080) and a controller fit on one host; `0` turns it off. Three
    /// controllers on one host need a port each (or 0): a port that cannot be bound is logged
    /// and the node serves on without HTTP, as a monitoring port never takes a node out of its
    /// Raft group. Embedded in the nameserver (`enableControllerInNamesrv`) this key is the
    /// nameserver's own: the controller's metrics are on the nameserver's `/metrics`. Read at
    /// start.
    http_listen_port: i32 = "httpListenPort", 8081;
    /// `httpBindAddress`: the address the HTTP listener binds (host name, IPv4 or IPv6).
    /// Unset: the same as `bindAddress`. Read at start.
    http_bind_address: Option<String> = "httpBindAddress", None;
    }
}

/// Range rules checked by [`Config::validate`]: (key, minimum, maximum).
const INT_RANGES: &[(&str, i64, i64)] = &[
    ("scanNotActiveBrokerInterval", 1, i64::MAX),
    ("controllerThreadPoolNums", 1, i32::MAX as i64),
    ("controllerRequestThreadPoolQueueCapacity", 1, i32::MAX as i64),
    ("electMasterMaxRetryCount", 1, i32::MAX as i64),
    ("scanInactiveMasterInterval", 1, i64::MAX),
    ("listenPort", 0, 65535),
    ("serverChannelMaxIdleTimeSeconds", 0, i32::MAX as i64),
    ("raftHeartbeatIntervalMillis", 10, 60_000),
    ("raftElectionTimeoutMillis", 50, 600_000),
    ("raftSnapshotLogs", 1, i64::MAX),
    ("httpListenPort", 0, 65535),
    ("authFailureWindowSeconds", 1, 86_400),
];

/// Keys UPDATE_CONTROLLER_CONFIG may never change, whatever `configBlackList` says.
/// Java: `ControllerRequestProcessor#initConfigBlackList`
pub const FIXED_BLACK_LIST: [&str; 3] = ["configBlackList", "configStorePath", "rocketmqHome"];

/// Keys 1009 may never change either: who may do what, and TLS (an admin account must not be
/// able to turn access control off over the wire).
pub const SECURITY_KEYS: [&str; 20] = [
    "authenticationEnabled",
    "authConfigPath",
    "authenticationMode",
    "controllerPeerCredentials",
    "authFailureWindowSeconds",
    "tls.enable",
    "tls.client.authServer",
    "tls.client.trustCertPath",
    "tls.client.certPath",
    "tls.client.keyPath",
    "tls.client.keyPassword",
    "tls.server.mode",
    "tls.test.mode.enable",
    "tls.server.need.client.auth",
    "tls.server.keyPath",
    "tls.server.keyPassword",
    "tls.server.certPath",
    "tls.server.authClient",
    "tls.server.trustCertPath",
    "tls.config.file",
];

/// One controller node: its DLedger id and its address (Raft and remoting share it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The id, e.g. `n0`.
    pub id: String,
    /// `host:port`.
    pub addr: String,
}

impl Config {
    /// Builds the start-up configuration: defaults, then the `-c` file if given (typed keys
    /// converted, other keys kept in [`Config::extra`], `configStorePath` set to `file`), then
    /// [`Config::validate`]. Java: `ControllerStartup#createControllerManager`
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut config = Config::default();
        if let Some(path) = file {
            conf::table::load_file(&mut config, path)?;
            config.config_store_path = path.to_string_lossy().into_owned();
        }
        config.validate()?;
        Ok(config)
    }

    /// Builds the configuration of a controller embedded in the nameserver from the
    /// nameserver's file entries (the controller's keys are read, the others ignored), then
    /// [`Config::validate`]. `configStorePath` stays the controller's own default unless the
    /// entries set it. Java: `NamesrvStartup#parseCommandlineAndConfigFile`
    pub fn from_entries<I>(entries: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let mut config = Config::default();
        for (key, value) in entries {
            config.set_known(&key, &value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges and the peer keys: group, peers and self id present, every peer
    /// `id-host:port` with a unique id, the self id among them, `controllerType` DLedger.
    /// The error names the key and value.
    pub fn validate(&self) -> Result<(), ConfigError> {
        conf::table::check_ranges(self, INT_RANGES)?;
        if !self.controller_type.eq_ignore_ascii_case("DLedger") {
            return Err(conf::table::invalid(
                "controllerType",
                &self.controller_type,
                "only DLedger is supported (the jRaft key layout is not)",
            ));
        }
        if self.controller_dleger_group.as_deref().unwrap_or("").is_empty() {
            return Err(missing("controllerDLegerGroup"));
        }
        let self_id = self.controller_dleger_self_id.as_deref().unwrap_or("");
        if self_id.is_empty() {
            return Err(missing("controllerDLegerSelfId"));
        }
        let peers = self.peers()?;
        if !peers.iter().any(|p| p.id == self_id) {
            return Err(conf::table::invalid(
                "controllerDLegerSelfId",
                self_id,
                "not among the ids of controllerDLegerPeers",
            ));
        }
        if let Some(mode) = &self.authentication_mode {
            if acl::AuthMode::parse(mode).is_none() {
                return Err(conf::table::invalid(
                    "authenticationMode",
                    mode,
                    "expected writes or all",
                ));
            }
        }
        let peer = self.peer_credentials()?;
        if self.authentication_enabled == Some(true) && peer.is_none() && peers.len() > 1 {
            return Err(conf::table::invalid(
                "controllerPeerCredentials",
                "",
                "required with authenticationEnabled=true in a group of more than one node \
                 (the nodes sign their Raft RPCs with it)",
            ));
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

    /// The peers of `controllerDLegerPeers` in the order written.
    /// Java: `DLedgerConfig#getPeers` parsing (`id-host:port;…`)
    pub fn peers(&self) -> Result<Vec<Peer>, ConfigError> {
        let raw = self.controller_dleger_peers.as_deref().unwrap_or("");
        if raw.trim().is_empty() {
            return Err(missing("controllerDLegerPeers"));
        }
        let mut peers = Vec::new();
        let mut ids = BTreeSet::new();
        for item in raw.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = |why: &str| conf::table::invalid("controllerDLegerPeers", raw, why);
            let (id, addr) = item.split_once('-').ok_or_else(|| bad("expected id-host:port"))?;
            let port_ok = addr
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if id.is_empty() || !port_ok {
                return Err(bad("expected id-host:port"));
            }
            if !ids.insert(id.to_owned()) {
                return Err(bad("a peer id appears twice"));
            }
            peers.push(Peer { id: id.to_owned(), addr: addr.to_owned() });
        }
        if peers.is_empty() {
            return Err(missing("controllerDLegerPeers"));
        }
        Ok(peers)
    }

    /// This node's peer entry (call after [`Config::validate`]).
    pub fn self_peer(&self) -> Result<Peer, ConfigError> {
        let id = self.controller_dleger_self_id.clone().unwrap_or_default();
        self.peers()?
            .into_iter()
            .find(|p| p.id == id)
            .ok_or_else(|| missing("controllerDLegerSelfId"))
    }

    /// The group name (call after [`Config::validate`]).
    pub fn group(&self) -> &str {
        self.controller_dleger_group.as_deref().unwrap_or("")
    }

    /// The store directory: `controllerStorePath`, or `$HOME/DLedgerController` when empty.
    pub fn store_dir(&self) -> PathBuf {
        if self.controller_store_path.is_empty() {
            PathBuf::from(home_path(&format!("{}Controller", self.controller_type)))
        } else {
            PathBuf::from(&self.controller_store_path)
        }
    }

    /// The keys UPDATE_CONTROLLER_CONFIG may not change: [`FIXED_BLACK_LIST`] plus the
    /// `configBlackList` value split on `;`. Java: `ControllerRequestProcessor#initConfigBlackList`
    pub fn black_list(&self) -> BTreeSet<String> {
        let mut list: BTreeSet<String> =
            FIXED_BLACK_LIST.iter().chain(&SECURITY_KEYS).map(|k| (*k).to_owned()).collect();
        list.extend(self.config_black_list.split(';').filter(|k| !k.is_empty()).map(str::to_owned));
        list
    }

    /// The access-control settings of a standalone controller (`authenticationEnabled`,
    /// `authenticationMode`, `authConfigPath`, default `$HOME/controller/auth.yml`).
    pub fn acl_settings(&self) -> acl::Settings {
        acl::Settings {
            enabled: self.authentication_enabled.unwrap_or(false),
            mode: self
                .authentication_mode
                .as_deref()
                .and_then(acl::AuthMode::parse)
                .unwrap_or_default(),
            path: self
                .auth_config_path
                .clone()
                .map_or_else(|| PathBuf::from(home_path("controller/auth.yml")), PathBuf::from),
            failure_window: self
                .auth_failure_window_seconds
                .and_then(|secs| u64::try_from(secs).ok())
                .map(Duration::from_secs),
        }
    }

    /// `controllerPeerCredentials` parsed: `{"accessKey":…,"secretKey":…}`, as a broker's
    /// `innerClientAuthenticationCredentials`; `None` when unset or empty.
    pub fn peer_credentials(&self) -> Result<Option<acl::Peer>, ConfigError> {
        let Some(raw) =
            self.controller_peer_credentials.as_deref().filter(|r| !r.trim().is_empty())
        else {
            return Ok(None);
        };
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Pair {
            access_key: String,
            secret_key: String,
        }
        let bad = |why: String| {
            conf::table::invalid("controllerPeerCredentials", conf::table::REDACTED, &why)
        };
        let pair: Pair = serde_json::from_str(raw)
            .map_err(|_| bad("expected {\"accessKey\":\"…\",\"secretKey\":\"…\"}".into()))?;
        acl::Peer::new(&pair.access_key, &pair.secret_key).map(Some).map_err(bad)
    }

    /// The `tls.*` settings of the controller port: these keys, overridden by the file
    /// `tls.config.file` names when it exists. Java: `TlsHelper#extractTlsConfigFromFile`
    pub fn tls_settings(&self) -> transport::TlsSettings {
        let overrides = self.tls_file();
        transport::TlsSettings::from_layers(|key| self.get(key), |key| overrides.get(key).cloned())
    }

    /// The TLS settings of the node's outgoing connections: `tls.enable`, `tls.test.mode.enable`
    /// and `tls.client.*`, the last two overridden by `tls.config.file` like the server's.
    /// Java: `TlsHelper#buildSslContext(true)`
    pub fn tls_client_settings(&self) -> client::TlsSettings {
        let overrides = self.tls_file();
        client::TlsSettings::from_lookup(|key| {
            let file = (key != client::tls::KEY_ENABLE).then(|| overrides.get(key).cloned());
            file.flatten().or_else(|| self.get(key))
        })
    }

    /// [`Config::tls_client_settings`] built (the files read now); an error names the key.
    pub fn client_tls(&self) -> Result<client::ClientTls, ConfigError> {
        self.tls_client_settings()
            .build()
            .map_err(|e| conf::table::invalid(e.key(), "", &e.to_string()))
    }

    /// Whether the Raft RPCs to the other nodes go over TLS: `tls.enable`, or this node's port
    /// (and so, in a consistent group, every peer's) in `enforcing` mode.
    pub fn peers_over_tls(&self) -> bool {
        self.tls_client_settings().enable
            || transport::TlsMode::parse(self.tls_server_mode.as_deref())
                == transport::TlsMode::Enforcing
    }

    /// The `tls.*` keys of the file `tls.config.file` names (empty when it cannot be read).
    fn tls_file(&self) -> std::collections::BTreeMap<String, String> {
        let file = transport::TlsSettings::config_file_path(|key| self.get(key));
        std::fs::read(&file)
            .ok()
            .and_then(|bytes| conf::properties::parse_bytes(&bytes).ok())
            .map(|entries| entries.into_iter().collect())
            .unwrap_or_default()
    }

    /// `scanNotActiveBrokerInterval` as a duration.
    pub fn scan_not_active_broker_interval(&self) -> Duration {
        millis(self.scan_not_active_broker_interval)
    }

    /// `scanInactiveMasterInterval` as a duration.
    pub fn scan_inactive_master_interval(&self) -> Duration {
        millis(self.scan_inactive_master_interval)
    }
}

impl Config {
    /// What the book's controller key reference says about every key: [`Config::key_infos`]
    /// with the black-listed keys marked refused and the ranges [`Config::validate`] checks.
    pub fn documented_keys() -> Vec<conf::KeyInfo> {
        conf::table::documented_keys::<Config>(Config::key_infos(), INT_RANGES)
    }
}

impl conf::Rules for Config {
    fn check(&self) -> Result<(), ConfigError> {
        self.validate()
    }
    fn update_black_list(&self) -> BTreeSet<String> {
        self.black_list()
    }
    fn store_path(&self) -> PathBuf {
        PathBuf::from(&self.config_store_path)
    }
}

fn missing(key: &str) -> ConfigError {
    conf::table::invalid(key, "", "required")
}

/// A positive millisecond count as a duration (validated values are at least 1).
pub(crate) fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Config {
        Config {
            controller_dleger_group: Some("g".into()),
            controller_dleger_peers: Some("n0-127.0.0.1:9878;n1-127.0.0.1:9868".into()),
            controller_dleger_self_id: Some("n1".into()),
            ..Config::default()
        }
    }

    #[test]
    fn keys_are_unique() {
        let set: BTreeSet<_> = Config::KEYS.iter().collect();
        assert_eq!(set.len(), Config::KEYS.len());
    }

    #[test]
    fn peers_parse_java_dleger_syntax() {
        let config = sample();
        config.validate().expect("valid");
        assert_eq!(
            config.peers().expect("peers"),
            [
                Peer { id: "n0".into(), addr: "127.0.0.1:9878".into() },
                Peer { id: "n1".into(), addr: "127.0.0.1:9868".into() },
            ]
        );
        assert_eq!(config.self_peer().expect("self").addr, "127.0.0.1:9868");
    }

    #[test]
    fn bad_peer_keys_name_the_key() {
        for (key, value) in [
            ("controllerDLegerPeers", "n0:127.0.0.1:9878"),
            ("controllerDLegerPeers", "n0-127.0.0.1:9878;n0-127.0.0.1:9868"),
            ("controllerDLegerPeers", "n0-127.0.0.1:x"),
            ("controllerDLegerSelfId", "n7"),
            ("controllerType", "jRaft"),
        ] {
            let mut config = sample();
            config.set_known(key, value).expect("set");
            let err = config.validate().expect_err(value);
            assert!(err.to_string().contains(key), "{err}");
        }
        let config = Config { controller_dleger_group: None, ..sample() };
        assert!(config
            .validate()
            .expect_err("group")
            .to_string()
            .contains("controllerDLegerGroup"));
    }

    #[test]
    fn the_store_defaults_under_home_like_java() {
        let config = sample();
        assert!(config.store_dir().ends_with("DLedgerController"));
        let config = Config { controller_store_path: "/tmp/x".into(), ..sample() };
        assert_eq!(config.store_dir(), PathBuf::from("/tmp/x"));
    }

    #[test]
    fn the_shipped_example_config_loads() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conf/controller.properties");
        let config = Config::load(Some(&path)).expect("the example is valid");
        assert_eq!(config.group(), "group1");
        assert_eq!(config.self_peer().expect("self").addr, "127.0.0.1:9878");
        assert_eq!(config.peers().expect("peers").len(), 3);
        assert!(config.extra.is_empty(), "every key of the example is known: {:?}", config.extra);
    }

    #[test]
    fn embedded_config_takes_only_controller_keys() {
        let config = Config::from_entries([
            ("listenPort".to_owned(), "9876".to_owned()),
            ("kvConfigPath".to_owned(), "/x".to_owned()),
            ("controllerDLegerGroup".to_owned(), "g".to_owned()),
            ("controllerDLegerPeers".to_owned(), "n0-127.0.0.1:9878".to_owned()),
            ("controllerDLegerSelfId".to_owned(), "n0".to_owned()),
        ])
        .expect("valid");
        assert!(config.extra.is_empty());
        assert_eq!(config.group(), "g");
    }
}
