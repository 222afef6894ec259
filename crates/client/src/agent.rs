//! Broker-side registration agent: keeps one broker (identity + topic table) registered with
//! every nameserver of a list, in parallel, the way a Java broker does — register at start,
//! re-register every period, optionally heartbeat, unregister on shutdown. Tests and benchmarks
//! run hundreds of these in one process to simulate brokers.
//!
//! Beyond Java: when a registered connection closes (e.g. the nameserver restarted), the agent
//! re-registers as soon as it can reconnect instead of waiting for the next period, and a failed
//! registration is retried after `retry_interval` (doubling up to the period).
//!
//! Java: BrokerController#registerBrokerAll + BrokerOuterAPI#registerBrokerAll / #unregisterBrokerAll

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use remoting::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigAndMappingSerializeWrapper,
};
use remoting::RemotingCommand;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::{Client, ClientConfig};
use crate::error::{Error, Result};
use crate::namesrv::{BrokerIdentity, RegisterBroker, RegisterBrokerResult};

/// How the optional heartbeat is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeartbeatKind {
    /// QUERY_DATA_VERSION oneway with the topic DataVersion (Java `compatibleWithOldNameSrv=true`, the default).
    QueryDataVersion,
    /// BROKER_HEARTBEAT oneway.
    BrokerHeartbeat,
}

/// Settings of an [`Agent`].
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Re-registration period (Java `registerNameServerPeriod` = 30 s).
    pub period: Duration,
    /// Timeout of one registration (Java `registerBrokerTimeoutMills` = 24 s).
    pub register_timeout: Duration,
    /// First retry delay after a failed registration or a closed connection; doubles up to `period`.
    pub retry_interval: Duration,
    /// Send a oneway heartbeat this often (Java: 1 s, only with `enableSlaveActingMaster`).
    pub heartbeat: Option<Duration>,
    pub heartbeat_kind: HeartbeatKind,
    /// Send the zlib RegisterBrokerBody of old brokers instead of JSON.
    pub compressed: bool,
    /// Connection settings; `version` is the broker version the requests claim.
    pub client: ClientConfig,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            period: Duration::from_secs(30),
            register_timeout: Duration::from_secs(24),
            retry_interval: Duration::from_secs(1),
            heartbeat: None,
            heartbeat_kind: HeartbeatKind::QueryDataVersion,
            compressed: false,
            client: ClientConfig::default(),
        }
    }
}

/// A broker's topic table as it registers it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicTable {
    pub data_version: DataVersion,
    /// Topic name → config. The nameserver keys topics by `TopicConfig.topicName`; [`TopicTable::new`]
    /// fills it in.
    pub topics: BTreeMap<String, TopicConfig>,
}

impl TopicTable {
    /// A table of `topics` with a fresh DataVersion (timestamp now, counter 1).
    pub fn new(topics: impl IntoIterator<Item = TopicConfig>) -> Self {
        let topics = topics.into_iter().filter_map(|t| Some((t.topic_name.clone()?, t))).collect();
        Self {
            data_version: DataVersion { counter: 1, state_version: 0, timestamp: now_millis() },
            topics,
        }
    }

    /// A table of `topics` plus the two system topics every Java broker registers: its cluster
    /// name and its broker name (perm 7, 16 queues). A nameserver refuses a first registration
    /// whose table holds exactly one topic, so a simulated broker should start from this.
    /// Java: TopicConfigManager (clusterTopicEnable, brokerTopicEnable)
    pub fn with_broker_topics(
        identity: &BrokerIdentity,
        topics: impl IntoIterator<Item = TopicConfig>,
    ) -> Self {
        let system = [&identity.cluster_name, &identity.broker_name].map(|name| TopicConfig {
            perm: remoting::body::perm::INHERIT
                | remoting::body::perm::READ
                | remoting::body::perm::WRITE,
            ..TopicConfig::named(name.as_str())
        });
        Self::new(system.into_iter().chain(topics))
    }

    /// Bumps the DataVersion like Java `DataVersion#nextVersion` (counter + 1, timestamp now), so
    /// nameservers take the changed table.
    pub fn bump(&mut self) {
        self.data_version.counter += 1;
        self.data_version.timestamp = now_millis().max(self.data_version.timestamp);
    }

    fn body(&self) -> RegisterBrokerBody {
        RegisterBrokerBody {
            filter_server_list: Some(Vec::new()),
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                data_version: self.data_version,
                topic_config_table: self.topics.clone().into(),
                ..Default::default()
            },
        }
    }
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Registration state towards one nameserver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamesrvStatus {
    pub addr: String,
    /// Successful registrations so far.
    pub registrations: u64,
    /// The error of the last attempt, if it failed.
    pub last_error: Option<String>,
    /// The answer to the last successful registration.
    pub last_result: Option<RegisterBrokerResult>,
}

struct Shared {
    client: Client,
    identity: BrokerIdentity,
    config: AgentConfig,
    /// The encoded REGISTER_BROKER command (rebuilt when the table changes) and the DataVersion.
    command: Mutex<(RemotingCommand, DataVersion)>,
    status: watch::Sender<Vec<NamesrvStatus>>,
}

impl Shared {
    fn command(&self) -> (RemotingCommand, DataVersion) {
        self.command.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn update(&self, i: usize, f: impl FnOnce(&mut NamesrvStatus)) {
        self.status.send_modify(|all| {
            if let Some(s) = all.get_mut(i) {
                f(s);
            }
        });
    }
}

/// A running registration agent. Dropping it stops its tasks (without unregistering); use
/// [`Agent::shutdown`] to unregister like a broker that stops.
pub struct Agent {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    /// Bumped to make every loop register now.
    kick: watch::Sender<u64>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Agent {
    /// Starts registering `identity` with `table` to every nameserver of `namesrv_addrs`
    /// (`"a:9876;b:9876"`), one task per nameserver. Errors only on a bad address list.
    pub fn start(
        namesrv_addrs: &str,
        identity: BrokerIdentity,
        table: &TopicTable,
        config: AgentConfig,
    ) -> Result<Self> {
        let client = Client::with_config(namesrv_addrs, config.client.clone())?;
        let req = RegisterBroker {
            identity: identity.clone(),
            body: table.body(),
            compressed: config.compressed,
        };
        let command = client.register_broker_command(&req);
        let status = client
            .addrs()
            .iter()
            .map(|a| NamesrvStatus { addr: a.clone(), ..Default::default() })
            .collect();
        let shared = Arc::new(Shared {
            client,
            identity,
            config,
            command: Mutex::new((command, table.data_version)),
            status: watch::Sender::new(status),
        });
        let (stop, _) = watch::channel(false);
        let (kick, _) = watch::channel(0u64);
        let tasks = (0..shared.client.addrs().len())
            .map(|i| tokio::spawn(run_one(shared.clone(), i, stop.subscribe(), kick.subscribe())))
            .collect();
        Ok(Self { shared, stop, kick, tasks })
    }

    pub fn identity(&self) -> &BrokerIdentity {
        &self.shared.identity
    }

    /// The agent's client (shares its connections).
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// The state towards each nameserver, in list order.
    pub fn status(&self) -> Vec<NamesrvStatus> {
        self.shared.status.borrow().clone()
    }

    /// Waits until every nameserver has at least `n` successful registrations.
    pub async fn wait_registered(&self, n: u64) {
        let mut rx = self.shared.status.subscribe();
        let _ = rx.wait_for(|all| all.iter().all(|s| s.registrations >= n)).await;
    }

    /// Waits until nameserver `addr` has more than `n` successful registrations.
    pub async fn wait_registered_at(&self, addr: &str, n: u64) {
        let mut rx = self.shared.status.subscribe();
        let _ = rx.wait_for(|all| all.iter().any(|s| s.addr == addr && s.registrations > n)).await;
    }

    /// Replaces the topic table and registers it with every nameserver now. Bump the table's
    /// DataVersion ([`TopicTable::bump`]) or nameservers keep the queues they have.
    pub fn set_topics(&self, table: &TopicTable) {
        let req = RegisterBroker {
            identity: self.shared.identity.clone(),
            body: table.body(),
            compressed: self.shared.config.compressed,
        };
        let command = self.shared.client.register_broker_command(&req);
        *self.shared.command.lock().unwrap_or_else(|e| e.into_inner()) =
            (command, table.data_version);
        self.register_now();
    }

    /// Makes every nameserver loop register now.
    pub fn register_now(&self) {
        self.kick.send_modify(|n| *n += 1);
    }

    /// Stops the loops, sends UNREGISTER_BROKER to every nameserver in parallel and closes the
    /// connections. Returns each nameserver's result, in list order.
    /// Java: BrokerOuterAPI#unregisterBrokerAll
    pub async fn shutdown(mut self) -> Vec<(String, Result<()>)> {
        self.stop.send_replace(true);
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
        let shared = self.shared.clone();
        let calls = shared.client.each_namesrv().into_iter().map(|ns| {
            let id = shared.identity.clone();
            async move {
                let addr = ns.pinned_addr().unwrap_or_default().to_owned();
                (addr, ns.unregister_broker(&id).await)
            }
        });
        let results = futures::future::join_all(calls).await;
        shared.client.close().await;
        results
    }
}

/// The loop for nameserver `i`: register, then wait for the period, a kick, a closed connection
/// (re-register on reconnect) or stop; heartbeats in between when configured.
async fn run_one(
    shared: Arc<Shared>,
    i: usize,
    mut stop: watch::Receiver<bool>,
    mut kick: watch::Receiver<u64>,
) {
    let ns = shared.client.each_namesrv().swap_remove(i);
    let addr = ns.pinned_addr().unwrap_or_default().to_owned();
    let cfg = &shared.config;
    let mut backoff = cfg.retry_interval;
    let mut heartbeat = cfg.heartbeat.map(|p| {
        let mut t = tokio::time::interval_at(tokio::time::Instant::now() + p, p);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    loop {
        if *stop.borrow() {
            return;
        }
        let (command, _) = shared.command();
        let ok = tokio::select! {
            r = ns.send_register_broker_timeout(command, cfg.register_timeout) => match r {
                Ok(result) => {
                    tracing::debug!(namesrv = %addr, broker = %shared.identity.broker_addr, "registered");
                    shared.update(i, |s| {
                        s.registrations += 1;
                        s.last_error = None;
                        s.last_result = Some(result);
                    });
                    backoff = cfg.retry_interval;
                    true
                }
                Err(e) => {
                    tracing::warn!(namesrv = %addr, broker = %shared.identity.broker_addr, error = %e, "registration failed");
                    shared.update(i, |s| s.last_error = Some(e.to_string()));
                    false
                }
            },
            _ = stop.changed() => return,
        };
        let wait = if ok { cfg.period } else { backoff };
        if !ok {
            backoff = (backoff * 2).min(cfg.period);
        }
        let sleep = tokio::time::sleep(wait);
        tokio::pin!(sleep);
        let closed = ns.connection_closed(&addr);
        tokio::pin!(closed);
        let mut watch_close = ok;
        loop {
            tokio::select! {
                _ = &mut sleep => break,
                _ = &mut closed, if watch_close => {
                    // The nameserver went away (restart?): re-register once it is back.
                    tracing::debug!(namesrv = %addr, "connection closed; re-registering soon");
                    watch_close = false;
                    sleep.as_mut().reset(tokio::time::Instant::now() + cfg.retry_interval);
                }
                r = kick.changed() => {
                    if r.is_err() { return; }
                    break;
                }
                _ = tick(&mut heartbeat) => send_heartbeat(&shared, &ns).await,
                _ = stop.changed() => return,
            }
        }
    }
}

async fn tick(t: &mut Option<tokio::time::Interval>) {
    match t {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

async fn send_heartbeat(shared: &Shared, ns: &Client) {
    let (_, version) = shared.command();
    let r = match shared.config.heartbeat_kind {
        HeartbeatKind::QueryDataVersion => {
            ns.query_data_version_oneway(&shared.identity, &version).await
        }
        HeartbeatKind::BrokerHeartbeat => ns.broker_heartbeat(&shared.identity).await,
    };
    if let Err(e) = r {
        if !matches!(e, Error::Connect { .. } | Error::ConnectTimeout { .. }) {
            tracing::debug!(error = %e, "heartbeat failed");
        }
    }
}
