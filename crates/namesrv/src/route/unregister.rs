//! Removal: batched unregistration (Java `RouteInfoManager#unRegisterBroker(Set)` and
//! `#cleanTopicByUnRegisterRequests`), topic deletion, and the write-permission switches.

use remoting::text::clip;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use remoting::body::perm;
use tracing::{debug, info};

use super::entry::list_setting;
use super::table::{QueueList, QueueSpec, RouteTable, TopicEntry};
use super::{MinBrokerIdChange, UnregisterOutcome, UnregisterRequest};

impl RouteTable {
    /// Applies a batch of unregistrations, in order. Per request: a fenced request whose live
    /// entry is gone or belongs to a later registration is skipped; otherwise the live and
    /// filter-server entries go, every id of the group holding that address goes (by address, so a
    /// new master registered under the same id from another address survives), an emptied group
    /// leaves its cluster. Then topics lose the queues of removed groups (and vanish when empty),
    /// and reduced acting-master groups without a master lose write permission.
    ///
    /// Returns the NOTIFY_MIN_BROKER_ID_CHANGE messages Java would send (when
    /// `notifyMinBrokerIdChanged` is on): groups whose minimum id left and that still exist with
    /// acting master enabled.
    /// Java: `RouteInfoManager#unRegisterBroker`
    pub fn unregister_batch(&mut self, reqs: &[UnregisterRequest]) -> Vec<MinBrokerIdChange> {
        self.apply_unregister_batch(reqs).notify
    }

    /// [`RouteTable::unregister_batch`], also telling which requests removed a live broker.
    pub fn apply_unregister_batch(&mut self, reqs: &[UnregisterRequest]) -> UnregisterOutcome {
        let mut live_removed = Vec::new();
        let mut removed: BTreeSet<String> = BTreeSet::new();
        let mut reduced: BTreeSet<String> = BTreeSet::new();
        let mut notify: BTreeMap<String, String> = BTreeMap::new();

        for (index, req) in reqs.iter().enumerate() {
            let (cluster, addr) = (req.cluster_name.as_str(), req.broker_addr.as_str());
            if let Some(fence) = req.fence {
                let current =
                    self.live.get(cluster, addr).map(|live| live.registration().generation);
                if current != Some(fence.generation()) {
                    debug!(
                        cluster,
                        broker = addr,
                        "unregistration superseded by a later registration; skipped"
                    );
                    continue;
                }
            }
            let was_live = self.remove_live(cluster, addr);
            info!(cluster = %clip(cluster), broker = %clip(addr), was_live, "unregister broker");
            if was_live {
                live_removed.push(index);
            }
            self.remove_filter(cluster, addr);
            if req.fence.is_some_and(|f| f.is_orphan()) {
                continue; // the address is in no group: the live entry was all there was
            }

            let name = req.broker_name.as_str();
            let (group_removed, min_left) = self.leave_group(cluster, name, addr, req.broker_id);
            if min_left {
                notify.insert(name.to_owned(), addr.to_owned());
            }
            if group_removed {
                removed.insert(name.to_owned());
            } else {
                reduced.insert(name.to_owned());
            }
        }

        // Java: cleanTopicByUnRegisterRequests. A reduced name without a group is skipped (Java
        // throws, errata E); a reduced acting-master group with no master goes read-only.
        let wipe: BTreeSet<&str> = reduced
            .iter()
            .filter(|name| {
                self.groups
                    .get(name.as_str())
                    .is_some_and(|g| g.enable_acting_master && g.has_no_master())
            })
            .map(String::as_str)
            .collect();
        let gone: BTreeSet<&str> = removed.iter().map(String::as_str).collect();
        self.rewrite_topics(&gone, &wipe, !perm::WRITE);

        UnregisterOutcome { notify: self.min_id_notices(notify), live_removed }
    }

    /// `addr` leaves its group `name`, and the group its cluster when `addr` was its last
    /// member. Returns whether the group is gone, and whether a group that stays lost its
    /// minimum id (`broker_id` was it).
    /// Java: `RouteInfoManager#unRegisterBroker` (`brokerAddrTable`, `clusterAddrTable`)
    fn leave_group(
        &mut self,
        cluster: &str,
        name: &str,
        addr: &str,
        broker_id: Option<i64>,
    ) -> (bool, bool) {
        let Some(before) = self.groups.get(name).cloned() else {
            return (false, false);
        };
        let min_changed = match (before.min_id(), broker_id) {
            (Some(min), Some(id)) => min == id,
            _ => false,
        };
        let mut group = (*before).clone();
        group.addrs.retain(|_, a| **a != *addr);
        if !group.addrs.is_empty() {
            self.commit_group(Some(&before), group);
            return (false, min_changed);
        }
        self.remove_group(name);
        if let Some(names) = self.clusters.get_mut(cluster) {
            names.remove(name);
            if names.is_empty() {
                self.clusters.remove(cluster);
            }
        }
        (true, false)
    }

    /// What Java would notify for the groups (name → the address that left) whose minimum id
    /// left: those that still exist with acting master enabled.
    /// Java: `RouteInfoManager#unRegisterBroker` (`needNotifyBrokerMap`)
    fn min_id_notices(&self, left: BTreeMap<String, String>) -> Vec<MinBrokerIdChange> {
        left.into_iter()
            .filter_map(|(name, offline)| {
                let group = self.groups.get(name.as_str())?;
                if !group.enable_acting_master {
                    return None;
                }
                MinBrokerIdChange::for_group(group, Some(offline), None)
            })
            .collect()
    }

    /// Removes a topic; with a (non-empty) cluster, only the queues of that cluster's broker
    /// groups (the topic goes when none is left; an unknown cluster is a no-op). Static-topic
    /// mappings stay.
    /// Java: `RouteInfoManager#deleteTopic(String)` / `#deleteTopic(String, String)`
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) {
        let Some(entry) = self.topics.get(topic).cloned() else {
            return;
        };
        let queues: Vec<_> = match cluster.filter(|c| !c.is_empty()) {
            None => Vec::new(),
            Some(cluster) => {
                let Some(names) = self.clusters.get(cluster) else {
                    return;
                };
                entry.queues.iter().filter(|(b, _)| !names.contains(b)).cloned().collect()
            }
        };
        if queues.len() == entry.queues.len() {
            return;
        }
        info!(topic = %clip(topic), cluster = cluster.map(|c| tracing::field::display(clip(c))), "delete topic");
        let entry = (!queues.is_empty()).then(|| TopicEntry::new(topic, queues, &self.lists));
        self.set_topic(topic, entry);
    }

    /// Clears the write bit of every queue of `broker_name`; returns how many topics have one.
    /// Java: `RouteInfoManager#wipeWritePermOfBrokerByLock`
    pub fn wipe_write_perm(&mut self, broker_name: &str) -> i32 {
        self.operate_write_perm(broker_name, |p| p & !perm::WRITE)
    }

    /// Sets every queue of `broker_name` to read+write (exactly 6: other bits are lost, like
    /// Java); returns how many topics have one.
    /// Java: `RouteInfoManager#addWritePermOfBrokerByLock`
    pub fn add_write_perm(&mut self, broker_name: &str) -> i32 {
        self.operate_write_perm(broker_name, |_| perm::READ | perm::WRITE)
    }

    /// Java: `RouteInfoManager#operateWritePermOfBroker`. Reads the topics of the broker's
    /// buckets; each shared list is looked at, and rewritten, once however many topics share
    /// it (see [`RouteTable::rewrite_topics`]).
    fn operate_write_perm(&mut self, broker_name: &str, op: impl Fn(i32) -> i32) -> i32 {
        // Per list: whether it has the broker's queue, and the list with its new perm (when
        // that changes it).
        let mut rewritten: foldhash::HashMap<*const (), (bool, Option<QueueList>)> =
            foldhash::HashMap::default();
        let mut count: i32 = 0;
        let mut changes = Vec::new();
        for (topic, entry) in self.topics.iter_buckets(self.buckets.of([broker_name])) {
            let list = &entry.queues;
            let (has, new) = rewritten.entry(Arc::as_ptr(list).cast()).or_insert_with(|| {
                let Some((broker, spec)) = list.iter().find(|(b, _)| &**b == broker_name) else {
                    return (false, None);
                };
                let perm = op(spec.perm);
                let changed = (perm != spec.perm)
                    .then(|| list_setting(&self.lists, list, broker, QueueSpec { perm, ..*spec }));
                (true, changed)
            });
            if *has {
                count = count.saturating_add(1);
            }
            if let Some(list) = new {
                changes.push((topic.to_owned(), list.clone()));
            }
        }
        for (topic, list) in changes {
            let entry = TopicEntry::of_list(&topic, list);
            self.set_topic(&topic, Some(entry));
        }
        count
    }
}
