//! Controllers for the end-to-end tests: a standalone controller node in this process, served
//! as `mqcontroller` serves it (`daemon::standalone`: its peer port and its HTTP listener on
//! 127.0.0.1:0), and a broker group of simulated controller-mode brokers (the controller crate's
//! harness, `ctl`).

/// The controller crate's test harness (simulated brokers, requests).
#[path = "../../../controller/tests/common/mod.rs"]
pub mod ctl;

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A one-node controller group in this process with its HTTP listener.
pub struct Standalone {
    /// The peer port (brokers' `controllerAddr`).
    pub addr: String,
    /// The HTTP listener (`/metrics`, `/healthz`, `/readyz`).
    pub http: SocketAddr,
    pub node: Arc<controller::Node>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Standalone {
    /// Starts group `group` (fast Raft timings, store in a temp dir) and serves it.
    pub async fn start(group: &str) -> Self {
        Self::start_with(group, &[]).await
    }

    /// [`Standalone::start`] with these keys set too (TLS, access control), read as
    /// `mqcontroller` reads its `-c` file: the controller port's guard comes from them.
    pub async fn start_with(group: &str, keys: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let peer = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind peer");
        let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind http");
        let addr = peer.local_addr().expect("peer addr").to_string();
        let http_addr = http.local_addr().expect("http addr");
        let config = controller::Config {
            controller_dleger_group: Some(group.to_owned()),
            controller_dleger_peers: Some(format!("n0-{addr}")),
            controller_dleger_self_id: Some("n0".to_owned()),
            controller_store_path: dir.path().join("store").to_string_lossy().into_owned(),
            config_store_path: dir.path().join("c.properties").to_string_lossy().into_owned(),
            raft_heartbeat_interval_millis: 100,
            raft_election_timeout_millis: 300,
            scan_not_active_broker_interval: 500,
            scan_inactive_master_interval: 500,
            ..controller::Config::default()
        };
        let mut config = config;
        for (key, value) in keys {
            config.set_known(key, value).expect("a known key");
        }
        config.validate().expect("valid");
        let guard = controller::Guard::from_config(&config).expect("guard");
        let node = controller::Node::start(Arc::new(controller::SharedConfig::new(config)), None)
            .await
            .expect("node starts");
        let stop = CancellationToken::new();
        let stopped = stop.clone().cancelled_owned();
        let task =
            tokio::spawn(daemon::standalone::serve(peer, Some(http), node.clone(), guard, stopped));
        Self { addr, http: http_addr, node, stop, task: Some(task), _dir: dir }
    }

    /// Stops the node and its HTTP listener and waits for both.
    pub async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(ctl::DEADLINE, task).await.expect("stops in time").expect("task");
        }
    }
}

impl Drop for Standalone {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A broker group of `n` simulated brokers in controller mode at the one-node group `addr`:
/// ids handed out and registered, the first elected master (a broker-triggered election), all in
/// the sync-state set, all heartbeating (until the token is cancelled).
pub async fn broker_group(
    addr: &str,
    name: &str,
    n: usize,
) -> (CancellationToken, Vec<ctl::Broker>) {
    let leader = ctl::Solo(addr.to_owned());
    let client = ctl::client(&[addr.to_owned()]);
    let mut brokers = Vec::new();
    for i in 0..n {
        let broker_addr = format!("10.7.0.{}:10911", i + 1);
        brokers.push(ctl::Broker::register(&leader, &client, name, &broker_addr).await);
    }
    let beats = ctl::keep_heartbeating(
        vec![addr.to_owned()],
        brokers.iter().map(|b| (b.name.clone(), b.addr.clone(), b.id)).collect(),
        ctl::NEVER_EXPIRES_MS,
    )
    .await;
    let elected = brokers[0].elect(&leader, &client).await;
    assert_eq!(elected.code, 0, "elect: {:?}", elected.remark);
    let ids: Vec<i64> = brokers.iter().map(|b| b.id).collect();
    let altered = ctl::alter(&leader, &client, name, brokers[0].id, 1, &ids, 1).await;
    assert_eq!(altered.code, 0, "alter: {:?}", altered.remark);
    (beats, brokers)
}
