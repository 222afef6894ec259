//! What a controller node reports about itself when asked (a scrape, `/readyz`, the
//! dashboard): its role, Raft term and indexes, the leader it knows, every broker group with
//! its master and sync-state set, the live brokers and the size of its store. Read from Raft's
//! metrics, the tables and the liveness table at that moment; nothing is kept up to date for it.

use openraft::ServerState;
use tokio::time::Instant;

use crate::elect::BrokerLiveness;
use crate::node::Node;
use crate::raft::PeerNode;

/// The part a node plays now (`role{role}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Serving as leader: Raft elected it and a quorum confirmed it lately.
    Leader,
    /// Following a leader (or waiting to hear from one).
    Follower,
    /// Electing, or elected and not yet confirmed by a quorum (not serving as leader).
    Candidate,
    /// Stopping or stopped.
    Shutdown,
}

impl Role {
    /// Every role, in gauge order.
    pub const ALL: [Role; 4] = [Self::Leader, Self::Follower, Self::Candidate, Self::Shutdown];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Leader => "leader",
            Self::Follower => "follower",
            Self::Candidate => "candidate",
            Self::Shutdown => "shutdown",
        }
    }
}

/// One broker group as this node's tables and liveness table hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupStatus {
    pub cluster: String,
    pub broker_name: String,
    /// The master's broker id, if the group has one.
    pub master_broker_id: Option<i64>,
    pub master_address: Option<String>,
    /// The master is heartbeating this node.
    pub master_alive: bool,
    pub master_epoch: i32,
    /// The broker ids in sync with the master.
    pub sync_state_set: Vec<i64>,
    /// Brokers registered in the group (ids handed out).
    pub brokers: usize,
}

impl GroupStatus {
    /// The group has a master, and it is alive.
    pub fn has_master(&self) -> bool {
        self.master_broker_id.is_some() && self.master_alive
    }
}

/// A node's report, read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// This node's id (`controllerDLegerSelfId`) and the group's name.
    pub self_id: String,
    pub group: String,
    pub role: Role,
    /// The Raft term.
    pub term: u64,
    /// The leader this node knows of (itself while it leads).
    pub leader: Option<PeerNode>,
    /// The index of the last entry in this node's log, the last committed and the last
    /// applied to the tables.
    pub last_log_index: Option<u64>,
    pub commit_index: Option<u64>,
    pub applied_index: Option<u64>,
    /// Brokers heartbeating this node within their timeout.
    pub live_brokers: usize,
    /// Size of the store file (`controller.redb`), if it can be read.
    pub store_bytes: Option<u64>,
    /// `/readyz`: the node knows a leader and its store is open (not stopping).
    pub ready: bool,
    pub groups: Vec<GroupStatus>,
}

impl Node {
    /// This node's report, read now.
    pub fn status(&self) -> Status {
        let stopping = self.stop_token().is_cancelled();
        let leader = self.leader();
        let (state, term, last_log_index, applied_index) = {
            let m = self.raft().metrics();
            let m = m.borrow();
            (m.state, m.current_term, m.last_log_index, m.last_applied.map(|l| l.index))
        };
        let role = if stopping || state == ServerState::Shutdown {
            Role::Shutdown
        } else if self.is_leader() {
            Role::Leader
        } else if matches!(state, ServerState::Candidate | ServerState::Leader) {
            Role::Candidate
        } else {
            Role::Follower
        };
        let tables = self.tables();
        let now = Instant::now();
        let (live_brokers, groups) = self.with_heartbeats(|beats| {
            let groups = tables
                .sync_states
                .iter()
                .map(|(name, sync)| {
                    let info = tables.replicas.get(name);
                    let master_alive = sync
                        .master_broker_id
                        .is_some_and(|id| beats.at(now).is_alive(&sync.cluster_name, name, id));
                    GroupStatus {
                        cluster: sync.cluster_name.clone(),
                        broker_name: name.clone(),
                        master_broker_id: sync.master_broker_id,
                        master_address: info
                            .and_then(|i| i.address(sync.master_broker_id))
                            .map(str::to_owned),
                        master_alive,
                        master_epoch: sync.master_epoch,
                        sync_state_set: sync.sync_state_set.iter().copied().collect(),
                        brokers: info.map_or(0, |i| i.brokers.len()),
                    }
                })
                .collect();
            (beats.live_count(now), groups)
        });
        Status {
            self_id: self.self_peer().id.clone(),
            group: self.group(),
            role,
            term,
            ready: leader.is_some() && role != Role::Shutdown,
            leader,
            last_log_index,
            commit_index: self.commit_index(),
            applied_index,
            live_brokers,
            store_bytes: std::fs::metadata(self.store_file()).ok().map(|m| m.len()),
            groups,
        }
    }
}
