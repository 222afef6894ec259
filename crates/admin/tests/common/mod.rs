//! Test harness for the `mqadmin` binary: real nameservers (`daemon::run`) on 127.0.0.1 in a
//! background runtime, brokers registered through the client crate, and a runner for the binary.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use assert_cmd::Command;
use client::{BrokerIdentity, Client, RegisterBroker};
use remoting::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigAndMappingSerializeWrapper,
};
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

/// Upper bound for any single step.
pub const LIMIT: Duration = Duration::from_secs(20);

/// Nameservers running on their own runtime while the test drives the binary synchronously.
pub struct Net {
    pub servers: Vec<Server>,
    /// Clients that registered brokers: a nameserver drops a broker when its connection closes,
    /// so they live as long as the test.
    brokers: std::sync::Mutex<Vec<Client>>,
    pub rt: Runtime,
}

pub struct Server {
    pub addr: String,
    _dir: tempfile::TempDir,
    _stop: oneshot::Sender<()>,
}

impl Net {
    /// `n` nameservers with default config.
    pub fn start(n: usize) -> Self {
        Self::start_with(n, None)
    }

    /// `n` nameservers enforcing access control (`authenticationMode=writes`) with this
    /// accounts file.
    pub fn start_enforcing(n: usize, accounts: &str) -> Self {
        Self::start_with(n, Some(accounts))
    }

    fn start_with(n: usize, accounts: Option<&str>) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let servers = (0..n).map(|_| rt.block_on(start_server(accounts))).collect();
        Self { servers, brokers: std::sync::Mutex::default(), rt }
    }

    /// `"a;b"` of every server.
    pub fn list(&self) -> String {
        self.servers.iter().map(|s| s.addr.as_str()).collect::<Vec<_>>().join(";")
    }

    pub fn addr(&self, i: usize) -> &str {
        &self.servers[i].addr
    }

    /// A client for server `i` only.
    pub fn client(&self, i: usize) -> Client {
        Client::new(&self.servers[i].addr).expect("client")
    }

    /// Runs `f` on the servers' runtime, bounded by [`LIMIT`].
    pub fn block_on<T>(&self, f: impl Future<Output = T>) -> T {
        self.rt.block_on(async {
            tokio::time::timeout(LIMIT, f).await.expect("step finished in time")
        })
    }

    /// Registers master `name` of DefaultCluster at `addr` with `topics` (plus its broker-name
    /// topic) on server `i`.
    pub fn register(&self, i: usize, name: &str, addr: &str, topics: &[(&str, i32)]) {
        self.register_signed(i, name, addr, topics, None);
    }

    /// [`Net::register`] with requests signed by `credentials`.
    pub fn register_signed(
        &self,
        i: usize,
        name: &str,
        addr: &str,
        topics: &[(&str, i32)],
        credentials: Option<client::Credentials>,
    ) {
        let id = BrokerIdentity::master("DefaultCluster", name, addr);
        self.register_identity(i, id, topics, credentials);
    }

    /// Registers the broker `id` (any cluster, name and broker id) with `topics` (plus its
    /// broker-name topic) on server `i`, signed by `credentials` when given.
    pub fn register_identity(
        &self,
        i: usize,
        id: BrokerIdentity,
        topics: &[(&str, i32)],
        credentials: Option<client::Credentials>,
    ) {
        let name = id.broker_name.clone();
        let table = topics
            .iter()
            .map(|(t, q)| TopicConfig {
                read_queue_nums: *q,
                write_queue_nums: *q,
                ..TopicConfig::named(*t)
            })
            .chain([TopicConfig::named(&name)])
            .map(|t| (t.topic_name.clone().unwrap_or_default(), t))
            .collect();
        let req = RegisterBroker {
            identity: id,
            body: RegisterBrokerBody {
                filter_server_list: Some(Vec::new()),
                topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                    data_version: DataVersion { counter: 1, state_version: 0, timestamp: 1 },
                    topic_config_table: std::sync::Arc::new(table),
                    ..Default::default()
                },
            },
            compressed: false,
        };
        let config = client::ClientConfig { credentials, ..client::ClientConfig::default() };
        let client = Client::with_config(&self.servers[i].addr, config).expect("client");
        self.block_on(client.register_broker(&req)).expect("registered");
        self.brokers.lock().expect("lock").push(client);
    }

    /// `mqadmin` with `-n` set to every server.
    pub fn mqadmin(&self) -> Command {
        let mut cmd = mqadmin();
        cmd.arg("-n").arg(self.list());
        cmd
    }
}

async fn start_server(accounts: Option<&str>) -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = |f: &str| dir.path().join(f).to_string_lossy().into_owned();
    let mut config = daemon::Config {
        kv_config_path: path("kvConfig.json"),
        config_store_path: path("namesrv.properties"),
        ..daemon::Config::default()
    };
    if let Some(accounts) = accounts {
        std::fs::write(dir.path().join("auth.yml"), accounts).expect("accounts file");
        config.authentication_enabled = Some(true);
        config.auth_config_path = Some(path("auth.yml"));
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(daemon::run(listener, config, async move {
        let _ = stopped.await;
    }));
    Server { addr, _dir: dir, _stop: stop }
}

/// The `mqadmin` binary with NAMESRV_ADDR and the credential sources cleared and a time limit.
pub fn mqadmin() -> Command {
    let mut cmd = Command::cargo_bin("mqadmin").expect("binary built");
    cmd.env_remove("NAMESRV_ADDR")
        .env_remove("ROCKETMQ_ACCESS_KEY")
        .env_remove("ROCKETMQ_SECRET_KEY")
        .env_remove("ROCKETMQ_HOME")
        .timeout(LIMIT);
    cmd
}

/// Stdout of a finished command as text.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
