//! The replicated events: what the leader decides and the Raft log carries, and how every node
//! applies them to its [`super::Replicas`] in log order.
//!
//! Java applies events blindly. Here an election or a sync-state change also carries the
//! epochs it was decided on (`fence`); applied on top of a different state (which only a
//! leader change between decision and commit can cause), it changes nothing and its request is
//! answered as fenced. Java: `impl/event/*Event`

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// The epochs a decision was made on: `(masterEpoch, syncStateSetEpoch)`.
pub type Fence = (i32, i32);

/// One state change. Java: `EventMessage` and its subclasses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    /// Replace a group's sync-state set. Java: `AlterSyncStateSetEvent`
    AlterSyncStateSet {
        broker_name: String,
        new_sync_state_set: BTreeSet<i64>,
        fence: Option<Fence>,
    },
    /// Register a broker id (creating the group on its first id). Java: `ApplyBrokerIdEvent`
    ApplyBrokerId {
        cluster_name: String,
        broker_name: String,
        broker_address: String,
        new_broker_id: i64,
        register_check_code: String,
    },
    /// Record an election: a new master (its sync-state set becomes `{master}`), or none.
    /// Java: `ElectMasterEvent`
    ElectMaster {
        broker_name: String,
        new_master_elected: bool,
        new_master_broker_id: Option<i64>,
        fence: Option<Fence>,
    },
    /// Forget a whole group (`None`) or some of its ids. Java: `CleanBrokerDataEvent`
    CleanBrokerData { broker_name: String, broker_id_set_to_clean: Option<BTreeSet<i64>> },
    /// A registered broker came back at a new address. Java: `UpdateBrokerAddressEvent`
    UpdateBrokerAddress {
        cluster_name: String,
        broker_name: String,
        broker_address: String,
        broker_id: i64,
    },
}

impl Event {
    /// The broker group the event concerns.
    pub fn broker_name(&self) -> &str {
        match self {
            Event::AlterSyncStateSet { broker_name, .. }
            | Event::ApplyBrokerId { broker_name, .. }
            | Event::ElectMaster { broker_name, .. }
            | Event::CleanBrokerData { broker_name, .. }
            | Event::UpdateBrokerAddress { broker_name, .. } => broker_name,
        }
    }
}
