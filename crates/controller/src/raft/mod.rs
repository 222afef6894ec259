//! Replication of the controller's events with openraft: the type configuration, the nodes
//! (DLedger ids and addresses from `controllerDLegerPeers`), the durable store ([`store`]), the
//! state machine ([`state_machine`]) and the Raft RPCs over the remoting protocol ([`network`]).
//!
//! Architecture invariant: Raft is the only writer of [`crate::replicas::Replicas`]; every
//! node applies the same events in log order, and nothing else changes the tables.

pub mod network;
pub mod state_machine;
pub mod store;

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};

use crate::config::{Config, Peer};
use crate::replicas::{Applied, Event};

/// A controller node as the membership records it: its DLedger id and its address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerNode {
    /// The id in `controllerDLegerPeers`, e.g. `n0`.
    pub id: String,
    /// `host:port`: Raft RPCs and the controller's requests.
    pub addr: String,
}

impl fmt::Display for PeerNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.id, self.addr)
    }
}

openraft::declare_raft_types!(
    /// The controller's Raft types: events in, apply outcomes out, nodes named by DLedger ids.
    pub TypeConfig:
        D = Event,
        R = Applied,
        NodeId = u64,
        Node = PeerNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// The Raft handle of a controller node.
pub type Raft = openraft::Raft<TypeConfig>;

/// The numeric Raft id of a DLedger id: FNV-1a over its bytes, kept positive. Stable whatever
/// the order of `controllerDLegerPeers` (start-up refuses peers whose ids collide).
pub fn node_id(dleger_id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dleger_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h >> 1
}

/// The members of the group: Raft id → node.
pub fn members(peers: &[Peer]) -> std::collections::BTreeMap<u64, PeerNode> {
    peers
        .iter()
        .map(|p| (node_id(&p.id), PeerNode { id: p.id.clone(), addr: p.addr.clone() }))
        .collect()
}

/// openraft's settings from the controller's keys: heartbeat and election timeouts, snapshots
/// every `raftSnapshotLogs` entries keeping as many behind the snapshot.
pub fn raft_config(config: &Config) -> Result<openraft::Config, Box<openraft::ConfigError>> {
    let heartbeat = u64::try_from(config.raft_heartbeat_interval_millis).unwrap_or(300);
    let election =
        u64::try_from(config.raft_election_timeout_millis).unwrap_or(1500).max(heartbeat * 3);
    let logs = u64::try_from(config.raft_snapshot_logs).unwrap_or(1024);
    openraft::Config {
        cluster_name: config.group().to_owned(),
        heartbeat_interval: heartbeat,
        election_timeout_min: election,
        election_timeout_max: election * 2,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(logs),
        max_in_snapshot_log_to_keep: logs,
        ..Default::default()
    }
    .validate()
    .map_err(Box::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_stable_and_distinct() {
        assert_eq!(node_id("n0"), node_id("n0"));
        assert_ne!(node_id("n0"), node_id("n1"));
        assert!(node_id("n0") < u64::MAX / 2 + 1);
    }
}
