//! A running controller node: its Raft instance, the replicated tables, the broker liveness
//! table, and the two ways requests reach the tables — [`Node::propose`] (decide on the
//! leader, replicate the event, answer once it is applied; one decision at a time, in arrival
//! order, like Java's event scheduler) and [`Node::read`] (leader only; a quorum check first
//! when `processReadEvent` is on).
//!
//! Leadership: a node serves as leader only while Raft says it is leader *and* a quorum has
//! confirmed it within the longest election timeout (checked every heartbeat interval). A
//! leader cut off from the majority therefore stops answering as leader within about two
//! election timeouts, and GET_METADATA stops naming it; it could never commit anyway.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use client::{Client, ClientConfig};
use openraft::error::{ClientWriteError, RaftError};
use openraft::ServerState;
use remoting::{LanguageCode, RemotingCommand, ResponseCode};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client_tls;
use crate::config::{Config, ConfigError, Peer, SharedConfig};
use crate::elect::BrokerLiveness;
use crate::liveness::Heartbeats;
use crate::metrics::Metrics;
use crate::notify::Notifier;
use crate::raft::network::{Cuts, Network};
use crate::raft::state_machine::{SharedReplicas, StateMachine};
use crate::raft::store::{CommittedIndex, Db, DbError, LogStore, FILE_NAME};
use crate::raft::{self, PeerNode, Raft};
use crate::replicas::{Applied, Event, Replicas};

/// How long a request waits for its event to commit (Java: 5 s on the request's future).
pub const COMMIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a node could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Store(#[from] DbError),
    #[error("raft: {0}")]
    Raft(String),
    #[error("peer ids {0} and {1} map to the same Raft id; rename one")]
    IdCollision(String, String),
    #[error(transparent)]
    Guard(#[from] crate::guard::GuardError),
}

/// Why a request could not be answered from the tables.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeError {
    /// This node is not serving as leader (Java CONTROLLER_NOT_LEADER).
    #[error("The controller is not in leader state")]
    NotLeader {
        /// The leader this node knows of, if any.
        leader: Option<PeerNode>,
    },
    /// The event did not commit, or the quorum did not answer, in time.
    #[error("{0}")]
    Timeout(String),
    /// The node is shutting down.
    #[error("the controller is shutting down")]
    Stopped,
}

/// What a decision produced: the answer, and the event to replicate before sending it.
pub struct Proposed {
    pub response: RemotingCommand,
    pub event: Option<Event>,
}

/// A decision taken on the leader's tables, its liveness view and its configuration.
pub type Decide = Box<dyn FnOnce(&Replicas, &dyn BrokerLiveness, &Config) -> Proposed + Send>;

struct Proposal {
    decide: Decide,
    reply: oneshot::Sender<Result<RemotingCommand, NodeError>>,
}

/// One controller node.
pub struct Node {
    raft: Raft,
    /// Kept to know when Raft's tasks have all let go of the store.
    db: Db,
    replicas: SharedReplicas,
    heartbeats: Mutex<Heartbeats>,
    config: Arc<SharedConfig>,
    id: u64,
    self_peer: Peer,
    peers: Vec<Peer>,
    members: BTreeMap<u64, PeerNode>,
    election_timeout: Duration,
    /// The client of NOTIFY_BROKER_ROLE_CHANGED (TLS when `tls.enable`).
    client: Client,
    /// The client of the Raft RPCs (TLS when `tls.enable` or `tls.server.mode=enforcing`).
    peer_client: Client,
    notifier: Notifier,
    /// When a quorum last confirmed this node's leadership.
    confirmed: Mutex<Option<Instant>>,
    /// What the node counts (requests, heartbeats, elections, leader changes).
    metrics: Metrics,
    /// The last committed Raft index its store saved.
    committed: CommittedIndex,
    /// The store file (`<controllerStorePath>/controller.redb`).
    store_file: std::path::PathBuf,
    proposals: mpsc::Sender<Proposal>,
    stop: CancellationToken,
}

impl Node {
    /// Opens the store under `controllerStorePath`, starts Raft (initializing the group from
    /// `controllerDLegerPeers` on first start) and the node's tasks. The controller port must
    /// be served separately ([`crate::server`]). `cuts` only for partition tests.
    pub async fn start(
        config: Arc<SharedConfig>,
        cuts: Option<Arc<Cuts>>,
    ) -> Result<Arc<Self>, StartError> {
        let snapshot = config.snapshot();
        snapshot.validate()?;
        let peers = snapshot.peers()?;
        let self_peer = snapshot.self_peer()?;
        for (i, a) in peers.iter().enumerate() {
            if let Some(b) =
                peers[i + 1..].iter().find(|b| raft::node_id(&b.id) == raft::node_id(&a.id))
            {
                return Err(StartError::IdCollision(a.id.clone(), b.id.clone()));
            }
        }
        let id = raft::node_id(&self_peer.id);
        let members = raft::members(&peers);
        let dir = snapshot.store_dir();
        warn_about_java_store(&dir, &self_peer.id);
        let store_file = dir.join(FILE_NAME);
        let db = tokio::task::spawn_blocking(move || Db::open(&dir))
            .await
            .map_err(|e| StartError::Raft(e.to_string()))??;
        let sm = StateMachine::open(db.clone()).await?;
        let replicas = sm.replicas();
        let raft_config =
            raft::raft_config(&snapshot).map_err(|e| StartError::Raft(e.to_string()))?;
        let election_timeout = Duration::from_millis(raft_config.election_timeout_min);
        let heartbeat = Duration::from_millis(raft_config.heartbeat_interval);
        let (client, peer_client) = clients(&snapshot, &peers)?;
        let network = Network::new(snapshot.group(), &self_peer.addr, peer_client.clone(), cuts);
        let log_store = LogStore::new(db.clone());
        let committed = log_store.committed_index();
        let raft = Raft::new(id, Arc::new(raft_config), network, log_store, sm)
            .await
            .map_err(|e| StartError::Raft(e.to_string()))?;
        if !raft.is_initialized().await.map_err(|e| StartError::Raft(e.to_string()))? {
            // Every node initializes with the same members: the same first log entry everywhere.
            match raft.initialize(members.clone()).await {
                Ok(())
                | Err(RaftError::APIError(openraft::error::InitializeError::NotAllowed(_))) => {}
                Err(e) => return Err(StartError::Raft(e.to_string())),
            }
        }
        let (tx, rx) = mpsc::channel(1024);
        let node = Arc::new(Self {
            raft,
            db,
            replicas,
            heartbeats: Mutex::new(Heartbeats::default()),
            config,
            id,
            self_peer,
            peers,
            members,
            election_timeout,
            client,
            peer_client,
            notifier: Notifier::default(),
            confirmed: Mutex::new(None),
            metrics: Metrics::default(),
            committed,
            store_file,
            proposals: tx,
            stop: CancellationToken::new(),
        });
        if let Some(tls) =
            node.peer_client.config().tls.clone().or(node.client.config().tls.clone())
        {
            let settings = snapshot.tls_client_settings();
            let every = conf::watch::DEFAULT_INTERVAL;
            client_tls::spawn_watcher(tls, settings, every, node.stop.clone());
        }
        tokio::spawn(propose_loop(node.clone(), rx));
        tokio::spawn(lease_loop(node.clone(), heartbeat));
        tokio::spawn(watch_leader(node.clone()));
        tracing::info!(id = %node.self_peer.id, addr = %node.self_peer.addr, group = %node.group(), "controller node started");
        Ok(node)
    }

    /// The group name.
    pub fn group(&self) -> String {
        self.config.load().group().to_owned()
    }

    /// This node's peer entry.
    pub fn self_peer(&self) -> &Peer {
        &self.self_peer
    }

    /// Every peer, in `controllerDLegerPeers` order.
    pub fn peers(&self) -> &[Peer] {
        &self.peers
    }

    /// The live configuration.
    pub fn config(&self) -> &Arc<SharedConfig> {
        &self.config
    }

    /// The client this node sends Raft RPCs and broker notifications with.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The role-change notifications in flight.
    pub fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// The Raft handle (metrics, tests).
    pub fn raft(&self) -> &Raft {
        &self.raft
    }

    /// What the node counts.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The last committed Raft log index, as saved by the store.
    pub fn commit_index(&self) -> Option<u64> {
        self.committed.get()
    }

    /// The store file (`controller.redb` under `controllerStorePath`).
    pub fn store_file(&self) -> &std::path::Path {
        &self.store_file
    }

    /// A copy of the replicated tables as this node has applied them.
    pub fn tables(&self) -> Replicas {
        self.replicas.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Runs `f` on the liveness table (a short lock; never across an `.await`).
    pub fn with_heartbeats<T>(&self, f: impl FnOnce(&mut Heartbeats) -> T) -> T {
        f(&mut self.heartbeats.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// True while Raft says this node leads and a quorum confirmed it within one election
    /// timeout.
    pub fn is_leader(&self) -> bool {
        let raft_leader = {
            let m = self.raft.metrics();
            let m = m.borrow();
            m.state == ServerState::Leader && m.current_leader == Some(self.id)
        };
        raft_leader && self.lease_valid(Instant::now())
    }

    /// Confirmed by a quorum within the longest election timeout (a busy machine delays the
    /// confirmation rounds; a successor cannot be elected sooner than that anyway).
    fn lease_valid(&self, now: Instant) -> bool {
        self.confirmed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|t| now.saturating_duration_since(t) <= self.election_timeout * 2)
    }

    /// The leader as this node knows it: itself while [`Node::is_leader`], else the leader Raft
    /// last heard from (never itself).
    pub fn leader(&self) -> Option<PeerNode> {
        if self.is_leader() {
            return self.members.get(&self.id).cloned();
        }
        let leader = self.raft.metrics().borrow().current_leader;
        leader.filter(|&l| l != self.id).and_then(|l| self.members.get(&l).cloned())
    }

    fn not_leader(&self) -> NodeError {
        NodeError::NotLeader { leader: self.leader() }
    }

    /// Decides on the leader's tables (after making sure they hold every committed event),
    /// replicates the decision's event and answers once it is applied. Decisions run one at a
    /// time, in arrival order. Java: `DLedgerController.EventScheduler` +
    /// `ControllerEventHandler`
    pub async fn propose(&self, decide: Decide) -> Result<RemotingCommand, NodeError> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        let (reply, rx) = oneshot::channel();
        self.proposals.send(Proposal { decide, reply }).await.map_err(|_| NodeError::Stopped)?;
        rx.await.map_err(|_| NodeError::Stopped)?
    }

    /// Answers a read from the tables on the leader; with `processReadEvent`, only after a
    /// quorum confirmed the leadership (so a deposed leader never answers stale data).
    /// Java: `DLedgerController` read events
    pub async fn read<T>(
        &self,
        f: impl FnOnce(&Replicas, &dyn BrokerLiveness) -> T,
    ) -> Result<T, NodeError> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        if self.config.load().process_read_event {
            self.linearize().await?;
        }
        let tables = self.replicas.read().unwrap_or_else(PoisonError::into_inner);
        let heartbeats = self.heartbeats.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(f(&tables, &heartbeats.at(Instant::now())))
    }

    /// Waits until this leader's tables hold every event committed so far (a quorum round).
    async fn linearize(&self) -> Result<(), NodeError> {
        match tokio::time::timeout(COMMIT_TIMEOUT, self.raft.ensure_linearizable()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(self.not_leader()),
            Err(_) => Err(NodeError::Timeout(
                "the controller quorum did not confirm leadership in time".into(),
            )),
        }
    }

    async fn handle(&self, p: Proposal) {
        let result = self.decide_and_commit(p.decide).await;
        let _ = p.reply.send(result);
    }

    async fn decide_and_commit(&self, decide: Decide) -> Result<RemotingCommand, NodeError> {
        if !self.is_leader() {
            return Err(self.not_leader());
        }
        self.linearize().await?;
        let proposed = {
            let config = self.config.load();
            let tables = self.replicas.read().unwrap_or_else(PoisonError::into_inner);
            let heartbeats = self.heartbeats.lock().unwrap_or_else(PoisonError::into_inner);
            decide(&tables, &heartbeats.at(Instant::now()), &config)
        };
        let Some(event) = proposed.event else { return Ok(proposed.response) };
        let fenced_code = match event {
            Event::AlterSyncStateSet { .. } => ResponseCode::ControllerFencedSyncStateSetEpoch,
            _ => ResponseCode::ControllerFencedMasterEpoch,
        };
        match tokio::time::timeout(COMMIT_TIMEOUT, self.raft.client_write(event)).await {
            Ok(Ok(written)) if written.data == Applied::Fenced => Ok(RemotingCommand::response(
                fenced_code,
                Some("the decision's epochs changed before it was committed (controller leader change); retry".into()),
            )),
            Ok(Ok(_)) => Ok(proposed.response),
            Ok(Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_)))) => Err(self.not_leader()),
            Ok(Err(e)) => Err(NodeError::Timeout(format!("failed to append the event to the Raft log: {e}"))),
            Err(_) => Err(NodeError::Timeout(
                "the event was not committed in time (is a majority of controllers up?)".into(),
            )),
        }
    }

    /// Stops the node's tasks and Raft, and waits (up to 5 s) until Raft's last tasks have
    /// released the store, so it can be opened again at once. Idempotent.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "raft shutdown");
        }
        self.client.close().await;
        self.peer_client.close().await;
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.db.handles() > 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Completes when [`Node::shutdown`] has been called.
    pub async fn stopped(&self) {
        self.stop.cancelled().await;
    }

    /// A token cancelled when the node stops.
    pub fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }
}

/// Decides proposals one at a time (Java's single event-scheduler thread).
async fn propose_loop(node: Arc<Node>, mut rx: mpsc::Receiver<Proposal>) {
    loop {
        tokio::select! {
            () = node.stop.cancelled() => break,
            p = rx.recv() => match p {
                Some(p) => node.handle(p).await,
                None => break,
            },
        }
    }
}

/// Confirms leadership with a quorum every heartbeat interval while Raft says leader.
async fn lease_loop(node: Arc<Node>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = node.stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        let raft_leader = node.raft.metrics().borrow().state == ServerState::Leader;
        if !raft_leader {
            *node.confirmed.lock().unwrap_or_else(PoisonError::into_inner) = None;
            continue;
        }
        let asked = Instant::now();
        let confirmed = matches!(
            tokio::time::timeout(node.election_timeout, node.raft.get_read_log_id()).await,
            Ok(Ok(_))
        );
        if confirmed {
            let was = node.lease_valid(asked);
            *node.confirmed.lock().unwrap_or_else(PoisonError::into_inner) = Some(asked);
            if !was {
                tracing::info!(id = %node.self_peer.id, "serving as controller leader");
            }
        }
    }
}

/// Counts every new Raft leader this node hears of (`leader_changes_total`), from Raft's
/// metrics, until the node stops.
async fn watch_leader(node: Arc<Node>) {
    let mut metrics = node.raft.metrics();
    let mut known = metrics.borrow().current_leader;
    loop {
        tokio::select! {
            () = node.stop.cancelled() => break,
            changed = metrics.changed() => if changed.is_err() { break },
        }
        let leader = metrics.borrow().current_leader;
        if leader.is_some() && leader != known {
            node.metrics.leader_changed();
            tracing::info!(id = %node.self_peer.id, leader = ?leader.and_then(|l| node.members.get(&l)).map(|p| &p.id), "controller leader changed");
        }
        if leader.is_some() {
            known = leader;
        }
    }
}

/// The node's two clients: to brokers (NOTIFY_BROKER_ROLE_CHANGED; TLS when `tls.enable`) and
/// to the other nodes (the Raft RPCs; TLS when `tls.enable` or this node's port is in
/// `enforcing` mode). Both sign with `controllerPeerCredentials` when set.
fn clients(config: &Config, peers: &[Peer]) -> Result<(Client, Client), StartError> {
    let settings = config.tls_client_settings();
    let tls = config.client_tls()?;
    let addrs: Vec<&str> = peers.iter().map(|p| p.addr.as_str()).collect();
    let base = ClientConfig {
        connect_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(3),
        language: LanguageCode::Java,
        // The peers' Raft RPCs are signed (`controllerPeerCredentials`).
        credentials: config.peer_credentials()?.map(|p| p.credentials().clone()),
        ..ClientConfig::default()
    };
    let make = |tls: Option<client::ClientTls>| {
        Client::with_config(&addrs.join(";"), ClientConfig { tls, ..base.clone() })
            .map_err(|e| StartError::Raft(e.to_string()))
    };
    let to_brokers = make(settings.enable.then(|| tls.clone()))?;
    let to_peers = make(config.peers_over_tls().then_some(tls))?;
    Ok((to_brokers, to_peers))
}

/// Java's DLedger keeps its data in `<controllerStorePath>/dledger-<selfId>`; say that it is
/// not used here.
fn warn_about_java_store(dir: &std::path::Path, self_id: &str) {
    let java = dir.join(format!("dledger-{self_id}"));
    if java.exists() {
        tracing::warn!(path = %java.display(), "a Java DLedger store is present; it is neither read nor changed (this controller keeps its own state in controller.redb)");
    }
}
