//! The controller's replicated state machine: per broker group its [`SyncStateInfo`] and
//! [`BrokerReplicaInfo`]; the decisions a leader takes on requests ([`decide`]), and how every
//! node applies the resulting [`Event`]s in log order ([`Replicas::apply`]).
//!
//! Architecture invariant: pure — no sockets, no `RemotingCommand`, no clock; liveness comes in
//! through [`crate::elect::BrokerLiveness`].
//! Java: `ReplicasInfoManager`

pub mod decide;
pub mod event;
pub mod group;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use decide::{Decision, NoHeader};
pub use event::{Event, Fence};
pub use group::{BrokerReplicaInfo, Replica, SyncStateInfo, FIRST_BROKER_CONTROLLER_ID};

/// Every broker group's records. Java keeps the two tables apart (a clean can remove one and
/// not the other), and so does this.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replicas {
    pub replicas: BTreeMap<String, BrokerReplicaInfo>,
    pub sync_states: BTreeMap<String, SyncStateInfo>,
}

/// Whether an event changed the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Applied {
    /// Applied (or, like Java, a no-op for an unknown group).
    Done,
    /// Decided on epochs that are no longer current: nothing changed.
    Fenced,
}

impl Replicas {
    /// Both records of the group exist. Java: `ReplicasInfoManager#isContainsBroker`
    pub fn contains(&self, broker_name: &str) -> bool {
        self.replicas.contains_key(broker_name) && self.sync_states.contains_key(broker_name)
    }

    /// Applies one event. Java: `ReplicasInfoManager#applyEvent`
    pub fn apply(&mut self, event: &Event) -> Applied {
        match event {
            Event::AlterSyncStateSet { broker_name, new_sync_state_set, fence } => {
                if let Some(sync) = self.synced(broker_name) {
                    if fence.is_some_and(|f| f != (sync.master_epoch, sync.sync_state_set_epoch)) {
                        return Applied::Fenced;
                    }
                    sync.update_sync_state_set(new_sync_state_set.clone());
                }
            }
            Event::ApplyBrokerId {
                cluster_name,
                broker_name,
                broker_address,
                new_broker_id,
                register_check_code,
            } => {
                if self.contains(broker_name) {
                    let info = self.replicas.get_mut(broker_name).expect("contained");
                    if !info.brokers.contains_key(new_broker_id) {
                        info.add_broker(*new_broker_id, broker_address, register_check_code);
                    }
                } else {
                    // The group's first id (or a group half-removed by a clean): both records anew.
                    let mut info = BrokerReplicaInfo::new(cluster_name, broker_name);
                    info.add_broker(*new_broker_id, broker_address, register_check_code);
                    self.replicas.insert(broker_name.clone(), info);
                    self.sync_states
                        .insert(broker_name.clone(), SyncStateInfo::new(cluster_name, broker_name));
                }
            }
            Event::ElectMaster { broker_name, new_master_elected, new_master_broker_id, fence } => {
                let Some(sync) = self.synced(broker_name) else {
                    tracing::error!(broker = %broker_name, "elect-master event for an unregistered broker group");
                    return Applied::Done;
                };
                if fence.is_some_and(|f| f != (sync.master_epoch, sync.sync_state_set_epoch)) {
                    return Applied::Fenced;
                }
                if *new_master_elected {
                    sync.update_master(*new_master_broker_id);
                    sync.update_sync_state_set(new_master_broker_id.iter().copied().collect());
                } else {
                    // The master is gone and nobody could replace it: keep the set.
                    sync.update_master(None);
                }
            }
            Event::CleanBrokerData { broker_name, broker_id_set_to_clean } => {
                match broker_id_set_to_clean.as_ref().filter(|ids| !ids.is_empty()) {
                    None => {
                        self.replicas.remove(broker_name);
                        self.sync_states.remove(broker_name);
                    }
                    Some(ids) => {
                        if !self.contains(broker_name) {
                            return Applied::Done;
                        }
                        let info = self.replicas.get_mut(broker_name).expect("contained");
                        let sync = self.sync_states.get_mut(broker_name).expect("contained");
                        for id in ids {
                            info.brokers.remove(id);
                            sync.sync_state_set.remove(id);
                        }
                        if info.brokers.is_empty() {
                            self.replicas.remove(broker_name);
                        }
                        if sync.sync_state_set.is_empty() {
                            self.sync_states.remove(broker_name);
                        }
                    }
                }
            }
            Event::UpdateBrokerAddress { broker_name, broker_address, broker_id, .. } => {
                if let Some(replica) = self
                    .replicas
                    .get_mut(broker_name)
                    .and_then(|info| info.brokers.get_mut(broker_id))
                {
                    replica.address.clone_from(broker_address);
                }
            }
        }
        Applied::Done
    }

    /// The sync-state record of a group whose both records exist.
    fn synced(&mut self, broker_name: &str) -> Option<&mut SyncStateInfo> {
        if self.contains(broker_name) {
            self.sync_states.get_mut(broker_name)
        } else {
            None
        }
    }

    /// The groups whose master is not alive while another of their brokers is: the leader
    /// elects in them. Java: `ReplicasInfoManager#scanNeedReelectBrokerSets`
    pub fn groups_needing_election(&self, live: &dyn crate::elect::BrokerLiveness) -> Vec<String> {
        let mut out = Vec::new();
        for (name, sync) in &self.sync_states {
            let Some(master) = sync.master_broker_id else { continue };
            if live.is_alive(&sync.cluster_name, name, master) {
                continue;
            }
            let ids: BTreeSet<i64> =
                self.replicas.get(name).map(BrokerReplicaInfo::all_ids).unwrap_or_default();
            if ids.iter().any(|&id| live.is_alive(&sync.cluster_name, name, id)) {
                out.push(name.clone());
            }
        }
        out
    }
}
