//! A group of controller nodes in one process on 127.0.0.1:0 ports, with stores in temporary
//! directories, cuttable links, and simulated brokers that speak the controller protocol.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use client::{Client, ClientConfig};
use controller::raft::network::Cuts;
use controller::replicas::Replicas;
use controller::{Config, Node, SharedConfig};
use remoting::body::{from_json, to_legacy_json, SyncStateSet};
use remoting::headers::*;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Generous bound for anything the cluster must reach (elections, catch-up) on a busy machine.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// One running node.
pub struct Running {
    pub node: Arc<Node>,
    stop: CancellationToken,
    served: JoinHandle<()>,
}

/// Three (or n) controller nodes of one group.
pub struct Group {
    pub addrs: Vec<String>,
    pub dirs: Vec<tempfile::TempDir>,
    pub nodes: Vec<Option<Running>>,
    pub cuts: Arc<Cuts>,
    pub peers: String,
    pub group: String,
    pub tweak: fn(&mut Config),
}

fn no_tweak(_: &mut Config) {}

impl Group {
    /// Starts `n` nodes; `tweak` adjusts each node's configuration.
    pub async fn start(n: usize) -> Self {
        Self::start_with(n, no_tweak).await
    }

    /// Starts `n` nodes with `tweak` applied to every configuration.
    pub async fn start_with(n: usize, tweak: fn(&mut Config)) -> Self {
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        for _ in 0..n {
            let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            addrs.push(l.local_addr().expect("addr").to_string());
            listeners.push(l);
        }
        let peers: Vec<String> =
            addrs.iter().enumerate().map(|(i, a)| format!("n{i}-{a}")).collect();
        let mut g = Group {
            addrs,
            dirs: (0..n).map(|_| tempfile::tempdir().expect("tempdir")).collect(),
            nodes: Vec::new(),
            cuts: Arc::new(Cuts::default()),
            peers: peers.join(";"),
            group: format!("group-{}", std::process::id()),
            tweak,
        };
        for (i, l) in listeners.into_iter().enumerate() {
            let running = g.launch(i, l).await;
            g.nodes.push(Some(running));
        }
        g
    }

    /// The configuration of node `i`.
    pub fn config(&self, i: usize) -> Config {
        let mut c = Config {
            controller_dleger_group: Some(self.group.clone()),
            controller_dleger_peers: Some(self.peers.clone()),
            controller_dleger_self_id: Some(format!("n{i}")),
            controller_store_path: self.dirs[i].path().to_string_lossy().into_owned(),
            config_store_path: self.dirs[i]
                .path()
                .join("controller.properties")
                .to_string_lossy()
                .into_owned(),
            raft_heartbeat_interval_millis: 100,
            raft_election_timeout_millis: 800,
            scan_not_active_broker_interval: 500,
            scan_inactive_master_interval: 500,
            ..Config::default()
        };
        (self.tweak)(&mut c);
        c
    }

    async fn launch(&self, i: usize, listener: TcpListener) -> Running {
        // A restarted node's store may still be open for a moment: the stopped node's last Raft
        // tasks let go of it after the node itself (slower on a loaded machine).
        let deadline = tokio::time::Instant::now() + DEADLINE;
        let node = loop {
            let config = Arc::new(SharedConfig::new(self.config(i)));
            match Node::start(config, Some(self.cuts.clone())).await {
                Ok(node) => break node,
                Err(e)
                    if format!("{e:?}").contains("DatabaseAlreadyOpen")
                        && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("node starts: {e:?}"),
            }
        };
        let stop = CancellationToken::new();
        let token = stop.clone();
        let served_node = node.clone();
        let guard = controller::Guard::from_config(&self.config(i)).expect("guard");
        let served = tokio::spawn(async move {
            controller::server::serve(listener, served_node, guard, token.cancelled_owned()).await;
        });
        Running { node, stop, served }
    }

    /// Node `i` (panics if stopped).
    pub fn node(&self, i: usize) -> &Arc<Node> {
        &self.nodes[i].as_ref().expect("running").node
    }

    /// Stops node `i` (like a kill: its port closes, its store stays).
    pub async fn stop(&mut self, i: usize) {
        if let Some(r) = self.nodes[i].take() {
            r.stop.cancel();
            tokio::time::timeout(DEADLINE, r.served)
                .await
                .expect("node stops")
                .expect("serve task");
            // The store is open until the last task holding the node has ended (a restart in
            // this process opens it again).
            let node = Arc::downgrade(&r.node);
            drop(r.node);
            eventually("the stopped node released", || async {
                (node.strong_count() == 0).then_some(())
            })
            .await;
        }
    }

    /// Restarts node `i` from its store, on its address.
    pub async fn restart(&mut self, i: usize) {
        assert!(self.nodes[i].is_none(), "node {i} still running");
        let listener = bind_again(&self.addrs[i]).await;
        let running = self.launch(i, listener).await;
        self.nodes[i] = Some(running);
    }

    /// Stops every node.
    pub async fn stop_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.stop(i).await;
        }
    }

    /// Waits until exactly one running node serves as leader (among `among`, if given) and
    /// every other running node (not cut off) names it; returns its index.
    pub async fn wait_leader(&self, among: &[usize]) -> usize {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let leaders: Vec<usize> = (0..self.nodes.len())
                .filter(|&i| self.nodes[i].as_ref().is_some_and(|r| r.node.is_leader()))
                .collect();
            if let [one] = leaders[..] {
                if among.is_empty() || among.contains(&one) {
                    return one;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no single leader in time: {leaders:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends `req` to the node serving as leader, following CONTROLLER_NOT_LEADER and transport
    /// failures (as a broker does) until a leader answers; returns its index and the answer.
    pub async fn call_leader(
        &self,
        client: &Client,
        req: RemotingCommand,
    ) -> (usize, RemotingCommand) {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let leader = self.wait_leader(&[]).await;
            match client.pinned(&self.addrs[leader]).invoke(req.clone()).await {
                Ok((_, r)) if r.code != ResponseCode::ControllerNotLeader.to_i32() => {
                    return (leader, r)
                }
                Ok(_) | Err(_) => {}
            }
            assert!(tokio::time::Instant::now() < deadline, "no leader answered in time");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until every running node in `which` has applied the same tables as node `like`.
    pub async fn wait_same_tables(&self, like: usize, which: &[usize]) -> Replicas {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let want = self.node(like).tables();
            if which.iter().all(|&i| self.node(i).tables() == want) {
                return want;
            }
            assert!(tokio::time::Instant::now() < deadline, "tables did not converge in time");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Binds `addr` again after its previous listener closed (retrying while the port is busy).
pub async fn bind_again(addr: &str) -> TcpListener {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        match TcpListener::bind(addr).await {
            Ok(l) => return l,
            Err(e) => {
                assert!(tokio::time::Instant::now() < deadline, "cannot bind {addr} again: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// A client for controller requests, pinned to one node at a time.
pub fn client(addrs: &[String]) -> Client {
    Client::with_config(
        &addrs.join(";"),
        ClientConfig { request_timeout: Duration::from_secs(10), ..ClientConfig::default() },
    )
    .expect("client")
}

/// Sends `req` to `addr` and returns the response.
pub async fn call(client: &Client, addr: &str, req: RemotingCommand) -> RemotingCommand {
    client.pinned(addr).invoke(req).await.expect("answered").1
}

/// A request with a typed header.
pub fn request<H: CommandHeader>(code: RequestCode, header: &H) -> RemotingCommand {
    RemotingCommand::request(code).with_header(header)
}

pub const CLUSTER: &str = "DefaultCluster";

/// Where a simulated broker's requests for the leader go: a [`Group`] in this process, or a
/// one-node group served elsewhere ([`Solo`]).
#[allow(async_fn_in_trait)]
pub trait Leader {
    /// Sends `req` to the group's leader (following CONTROLLER_NOT_LEADER) and returns the
    /// answer.
    async fn leader_call(&self, client: &Client, req: RemotingCommand) -> RemotingCommand;
}

impl Leader for Group {
    async fn leader_call(&self, client: &Client, req: RemotingCommand) -> RemotingCommand {
        self.call_leader(client, req).await.1
    }
}

/// A one-node controller group at this address (its node leads once it has elected itself).
pub struct Solo(pub String);

impl Leader for Solo {
    async fn leader_call(&self, client: &Client, req: RemotingCommand) -> RemotingCommand {
        eventually("the one node answers as leader", || async {
            match client.pinned(&self.0).invoke(req.clone()).await {
                Ok((_, r)) if r.code != ResponseCode::ControllerNotLeader.to_i32() => Some(r),
                _ => None,
            }
        })
        .await
    }
}

/// A simulated broker of group `name`: registers like a Java broker in controller mode.
pub struct Broker {
    pub name: String,
    pub addr: String,
    pub id: i64,
}

impl Broker {
    /// Registers (next id, apply id, register) through the group's leader; returns the broker
    /// with its id.
    pub async fn register(g: &impl Leader, client: &Client, name: &str, addr: &str) -> Broker {
        let next = g
            .leader_call(
                client,
                request(
                    RequestCode::ControllerGetNextBrokerId,
                    &GetNextBrokerIdRequestHeader {
                        cluster_name: Some(CLUSTER.into()),
                        broker_name: Some(name.into()),
                    },
                ),
            )
            .await;
        assert_eq!(next.code, 0, "next id: {:?}", next.remark);
        let id = next.decode_header::<GetNextBrokerIdResponseHeader>().next_broker_id.expect("id");
        let applied = g
            .leader_call(
                client,
                request(
                    RequestCode::ControllerApplyBrokerId,
                    &ApplyBrokerIdRequestHeader {
                        cluster_name: Some(CLUSTER.into()),
                        broker_name: Some(name.into()),
                        applied_broker_id: Some(id),
                        register_check_code: Some(format!("{addr};1")),
                    },
                ),
            )
            .await;
        assert_eq!(applied.code, 0, "apply id: {:?}", applied.remark);
        let registered = g
            .leader_call(
                client,
                request(
                    RequestCode::ControllerRegisterBroker,
                    &RegisterBrokerToControllerRequestHeader {
                        cluster_name: Some(CLUSTER.into()),
                        broker_name: Some(name.into()),
                        broker_id: Some(id),
                        broker_address: Some(addr.into()),
                        invoke_time: Some(1),
                    },
                ),
            )
            .await;
        assert_eq!(registered.code, 0, "register: {:?}", registered.remark);
        Broker { name: name.into(), addr: addr.into(), id }
    }

    /// One BROKER_HEARTBEAT (oneway) to `node`.
    pub async fn heartbeat(&self, client: &Client, node: &str, timeout_ms: i64) {
        let _ = client.pinned(node).invoke_oneway(self.heartbeat_request(timeout_ms)).await;
    }

    /// A heartbeat sent as a request: it has been applied when this returns (the node answers a
    /// heartbeat that asks for an answer; a oneway one may still be queued when the next request,
    /// on another connection, is served).
    pub async fn heartbeat_acked(&self, client: &Client, node: &str, timeout_ms: i64) {
        // A node that is down answers nothing: as with a oneway heartbeat, the caller finds out
        // from what it asks next.
        let _ = client.pinned(node).invoke(self.heartbeat_request(timeout_ms)).await;
    }

    fn heartbeat_request(&self, timeout_ms: i64) -> RemotingCommand {
        let header = BrokerHeartbeatRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_addr: Some(self.addr.clone()),
            broker_name: Some(self.name.clone()),
            broker_id: Some(self.id),
            epoch: Some(0),
            max_offset: Some(0),
            confirm_offset: Some(0),
            heartbeat_timeout_mills: Some(timeout_ms),
            election_priority: Some(0),
        };
        request(RequestCode::BrokerHeartbeat, &header)
    }

    /// Asks the group's leader to elect this broker (a broker-triggered election).
    pub async fn elect(&self, g: &impl Leader, client: &Client) -> RemotingCommand {
        g.leader_call(
            client,
            request(
                RequestCode::ControllerElectMaster,
                &ElectMasterRequestHeader {
                    cluster_name: Some(CLUSTER.into()),
                    broker_name: Some(self.name.clone()),
                    broker_id: Some(self.id),
                    designate_elect: Some(false),
                    invoke_time: Some(1),
                },
            ),
        )
        .await
    }
}

/// A heartbeat timeout no test outlives: a broker heartbeating with it never expires while the
/// test runs, however slow the machine (an expiry would trigger an election of its own).
pub const NEVER_EXPIRES_MS: i64 = 600_000;

/// Keeps `brokers` heartbeating every node in `addrs`, each on its own connections like real
/// brokers, until the returned token is cancelled; each heartbeat asks for `timeout_ms` of
/// liveness.
pub async fn keep_heartbeating(
    addrs: Vec<String>,
    brokers: Vec<(String, String, i64)>,
    timeout_ms: i64,
) -> CancellationToken {
    let stop = CancellationToken::new();
    let token = stop.clone();
    let clients: Vec<Client> = brokers.iter().map(|_| client(&addrs)).collect();
    // The first round before returning: every broker is alive on every node when the caller
    // goes on (an election or a sync-state change right after would otherwise race it): answered,
    // not oneway, so that each has been applied.
    for ((name, addr, id), client) in brokers.iter().zip(&clients) {
        let b = Broker { name: name.clone(), addr: addr.clone(), id: *id };
        for node in &addrs {
            b.heartbeat_acked(client, node, timeout_ms).await;
        }
    }
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = token.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
            for ((name, addr, id), client) in brokers.iter().zip(&clients) {
                let b = Broker { name: name.clone(), addr: addr.clone(), id: *id };
                for node in &addrs {
                    b.heartbeat(client, node, timeout_ms).await;
                }
            }
        }
    });
    stop
}

/// GET_REPLICA_INFO from `addr`: the header and the sync-state set.
pub async fn replica_info(
    client: &Client,
    addr: &str,
    name: &str,
) -> (i32, GetReplicaInfoResponseHeader, Option<SyncStateSet>) {
    let resp = call(
        client,
        addr,
        request(
            RequestCode::ControllerGetReplicaInfo,
            &GetReplicaInfoRequestHeader { broker_name: Some(name.into()) },
        ),
    )
    .await;
    let set = resp.body.as_deref().and_then(|b| from_json(b).ok());
    (resp.code, resp.decode_header(), set)
}

/// CONTROLLER_ALTER_SYNC_STATE_SET as the master `master` would send it, to the leader.
pub async fn alter(
    g: &impl Leader,
    client: &Client,
    name: &str,
    master: i64,
    master_epoch: i32,
    set: &[i64],
    set_epoch: i32,
) -> RemotingCommand {
    let body = SyncStateSet {
        sync_state_set: set.iter().copied().collect(),
        sync_state_set_epoch: set_epoch,
    };
    let req = request(
        RequestCode::ControllerAlterSyncStateSet,
        &AlterSyncStateSetRequestHeader {
            broker_name: Some(name.into()),
            master_broker_id: Some(master),
            master_epoch: Some(master_epoch),
            invoke_time: Some(1),
        },
    )
    .with_body(to_legacy_json(&body));
    g.leader_call(client, req).await
}

/// Polls `f` until it returns `Some`, failing after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: not reached in time");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn success() -> i32 {
    ResponseCode::Success.to_i32()
}
