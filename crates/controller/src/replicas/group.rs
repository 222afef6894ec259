//! One broker group's two records: [`SyncStateInfo`] (master, epochs, sync-state set) and
//! [`BrokerReplicaInfo`] (broker ids, their addresses and register check codes).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// The first broker id the controller hands out in a group (Java
/// `MixAll.FIRST_BROKER_CONTROLLER_ID`).
pub const FIRST_BROKER_CONTROLLER_ID: i64 = 1;

/// A group's master and the replicas in sync with it. Java: `SyncStateInfo`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncStateInfo {
    pub cluster_name: String,
    pub broker_name: String,
    /// Raised by every election, successful or not; 0 means no election yet.
    pub master_epoch: i32,
    /// Raised by every change of the sync-state set (an election sets it to the new master).
    pub sync_state_set_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
    pub master_broker_id: Option<i64>,
}

impl SyncStateInfo {
    /// A group with no master and an empty set, both epochs 0.
    pub fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            master_epoch: 0,
            sync_state_set_epoch: 0,
            sync_state_set: BTreeSet::new(),
            master_broker_id: None,
        }
    }

    /// Records a new master (or none) and raises the master epoch.
    /// Java: `SyncStateInfo#updateMasterInfo`
    pub fn update_master(&mut self, master: Option<i64>) {
        self.master_broker_id = master;
        self.master_epoch += 1;
    }

    /// Replaces the sync-state set and raises its epoch. Java: `SyncStateInfo#updateSyncStateSetInfo`
    pub fn update_sync_state_set(&mut self, set: BTreeSet<i64>) {
        self.sync_state_set = set;
        self.sync_state_set_epoch += 1;
    }

    /// No election has happened in this group yet. Java: `SyncStateInfo#isFirstTimeForElect`
    pub fn is_first_time_for_elect(&self) -> bool {
        self.master_epoch == 0
    }
}

/// One registered broker: its address and the check code it registered with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    pub address: String,
    pub register_check_code: String,
}

/// A group's broker ids. Java: `BrokerReplicaInfo`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerReplicaInfo {
    pub cluster_name: String,
    pub broker_name: String,
    /// Starts at 1; raised by every id added (even one not equal to it).
    pub next_assign_broker_id: i64,
    pub brokers: BTreeMap<i64, Replica>,
}

impl BrokerReplicaInfo {
    /// An empty group whose next id is 1.
    pub fn new(cluster_name: &str, broker_name: &str) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            next_assign_broker_id: FIRST_BROKER_CONTROLLER_ID,
            brokers: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) a broker and raises the next id. Java: `BrokerReplicaInfo#addBroker`
    pub fn add_broker(&mut self, id: i64, address: &str, register_check_code: &str) {
        self.brokers.insert(
            id,
            Replica {
                address: address.to_owned(),
                register_check_code: register_check_code.to_owned(),
            },
        );
        self.next_assign_broker_id += 1;
    }

    /// The address of `id`, if registered.
    pub fn address(&self, id: Option<i64>) -> Option<&str> {
        id.and_then(|id| self.brokers.get(&id)).map(|r| r.address.as_str())
    }

    /// Every registered id.
    pub fn all_ids(&self) -> BTreeSet<i64> {
        self.brokers.keys().copied().collect()
    }
}
