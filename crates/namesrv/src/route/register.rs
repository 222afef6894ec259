//! Registration: REGISTER_BROKER (Java `RouteInfoManager#registerBroker`, every step in Java's
//! order) and REGISTER_TOPIC_IN_NAMESRV (`#registerTopic`).

use remoting::text::clip;
use std::collections::BTreeMap;
use std::sync::Arc;

use remoting::body::{
    perm, QueueData, TopicConfigAndMappingSerializeWrapper, TopicQueueMappingInfo,
};
use tracing::{info, warn};

use super::table::{Group, Live, Put, QueueSpec, Registration, RouteTable, UnchangedStamp};
use super::{
    MinBrokerIdChange, RegisterBroker, RegisterError, RegisterOutcome, UnchangedRegistration,
    DEFAULT_HEARTBEAT_TIMEOUT_MS,
};

/// Java `MixAll.MASTER_ID`.
const MASTER_ID: i64 = 0;

impl Group {
    /// Steps 3–5 for a registrant: its acting-master flag and zone overwrite the group's; then
    /// its address leaves any other id (a role switch). Returns whether it is a pre-5.0 broker
    /// (no acting-master flag) and whether its id is below the group's minimum so far.
    /// Java: `RouteInfoManager#registerBroker` (`setEnableActingMaster`, `isMinBrokerIdChanged`,
    /// "Switch slave to master")
    fn admit(&mut self, req: &RegisterBroker, zone_name: Option<String>) -> (bool, bool) {
        self.enable_acting_master = req.enable_acting_master.unwrap_or(false);
        self.zone_name = zone_name;
        let min_id_changed = req.broker_id < self.min_id().unwrap_or(0);
        let (id, addr) = (req.broker_id, req.broker_addr.as_str());
        self.addrs.retain(|other, held| !(**held == *addr && *other != id));
        (req.enable_acting_master.is_none(), min_id_changed)
    }
}

impl RouteTable {
    /// Registers (or refreshes) a broker and, for a master or a prime slave, its topics.
    ///
    /// Steps, as Java (§5.3): cluster membership; group creation; acting-master flag and zone;
    /// previous minimum id; role switch (the address leaves any other id); the stateVersion fence
    /// (an older registrant for an id held by another live address is ignored: `Ok` with
    /// `stale_state_version`, and the registrant's live entry removed); the single-topic guard
    /// (`Err`); the address put; topics (10b deletion when `delete_topic_with_registration` and no
    /// static topics, 10c create/update of new or changed topics, 10d mappings); the live entry;
    /// filter servers; the master's addresses for a slave. Steps before an early return stay
    /// applied, as in Java. The registration is left with the caller, to be freed elsewhere
    /// (#25: dropping a decoded 10,000-topic table was a tenth of the lane's time at 1M topics).
    /// Java: `RouteInfoManager#registerBroker`
    pub fn register_broker(
        &mut self,
        req: &mut RegisterBroker,
        now_ms: u64,
        delete_topic_with_registration: bool,
    ) -> Result<RegisterOutcome, RegisterError> {
        let (broker_id, broker_addr, wrapper) =
            (req.broker_id, &req.broker_addr, &req.topic_config);

        // 1. Cluster membership.
        let (cluster, name, before) = self.join_cluster(&req.cluster, &req.broker_name);

        // 2. The group (created empty; its cluster is fixed from now on).
        let mut register_first = before.is_none();
        let mut group =
            before.as_deref().cloned().unwrap_or_else(|| Group::new(cluster.clone(), name.clone()));

        // 3–5. Acting master and zone; a lowered minimum id; the role switch.
        let zone_name = req.zone_name.take();
        let (old_version_broker, min_id_changed) = group.admit(req, zone_name);

        // 6. Conflict fence: the id's current holder is live with a newer stateVersion.
        let state_version = wrapper.data_version.state_version;
        if self.is_outdated(&cluster, &group, broker_id, broker_addr, state_version) {
            self.remove_live(&cluster, broker_addr);
            self.commit_group(before.as_ref(), group);
            return Ok(RegisterOutcome { stale_state_version: true, ..RegisterOutcome::default() });
        }

        // 7. Single-topic guard: incremental registrations only after a full one.
        if !group.addrs.contains_key(&broker_id) && wrapper.topic_config_table.len() == 1 {
            warn!(broker = %clip(&name), broker_id, addr = %clip(broker_addr), "single-topic registration before the broker registered");
            self.commit_group(before.as_ref(), group);
            return Err(RegisterError::NotRegisteredYet { broker_id });
        }

        // 8. The address.
        let addr: Arc<str> = Arc::from(broker_addr.as_str());
        let old_addr = group.addrs.insert(broker_id, addr.clone());
        register_first |= old_addr.is_none_or(|a| a.is_empty());

        // 9. Who may write the group's topics.
        let is_master = broker_id == MASTER_ID;
        let is_prime_slave = !old_version_broker && !is_master && group.min_id() == Some(broker_id);
        let wipe_write = is_prime_slave && group.enable_acting_master;
        self.commit_group(before.as_ref(), group);

        // 10. Topics, compared against this address's previous registration.
        let broker_changed = self
            .live
            .get(&cluster, broker_addr)
            .is_none_or(|live| live.data_version() != wrapper.data_version);
        // Whether every topic and mapping of the body was put (or none may be): only then may a
        // body differing in its DataVersion alone skip the algorithm (`refresh_unchanged`).
        let puts = is_master || is_prime_slave;
        let applied_all = !puts || broker_changed || register_first;
        if puts {
            let changed = register_first || broker_changed;
            self.put_topics(&name, wrapper, changed, wipe_write, delete_topic_with_registration);
        }

        // 12. Filter servers (before 11, so its stamp sees them; they touch other tables).
        self.put_filter_servers(&cluster, &addr, req.filter_server_list.take());

        // 11. The live entry, always replaced.
        self.put_live_entry(req, &cluster, &addr, now_ms, (applied_all, puts));

        // 13. A slave learns its live master.
        let mut outcome = self.master_of(&cluster, &name, broker_id);
        let group = self.groups.get(&name).cloned();

        // 14. What Java would notify (no acting-master check on this path).
        if min_id_changed {
            let ha = Some(std::mem::take(&mut req.ha_server_addr));
            outcome.min_broker_id_change =
                group.and_then(|g| MinBrokerIdChange::for_group(&g, None, ha));
        }
        Ok(outcome)
    }

    /// Step 1: the cluster's own key, the group's name (its own `Arc` when it exists) and the
    /// group before this registration; the group joins its cluster.
    /// Java: `RouteInfoManager#registerBroker` (`clusterAddrTable.computeIfAbsent`)
    fn join_cluster(
        &mut self,
        cluster: &str,
        broker_name: &str,
    ) -> (Arc<str>, Arc<str>, Option<Arc<Group>>) {
        let cluster = self.cluster_key(cluster);
        let before = self.groups.get(broker_name).cloned();
        let name: Arc<str> =
            before.as_ref().map_or_else(|| Arc::from(broker_name), |g| g.name.clone());
        if self.clusters.entry(cluster.clone()).or_default().insert(name.clone()) {
            self.topics_gen += 1;
            self.bump_members(&name);
        }
        (cluster, name, before)
    }

    /// Step 6: another live address holds `broker_id` with a newer stateVersion than the
    /// registrant's, which is then ignored (logged).
    /// Java: `RouteInfoManager#registerBroker` ("Registered Broker conflicts with the existed one")
    fn is_outdated(
        &self,
        cluster: &str,
        group: &Group,
        broker_id: i64,
        broker_addr: &str,
        new_sv: i64,
    ) -> bool {
        let Some(old_addr) = group.addrs.get(&broker_id).filter(|a| ***a != *broker_addr) else {
            return false;
        };
        let Some(old_live) = self.live.get(cluster, old_addr) else { return false };
        let old_sv = old_live.data_version().state_version;
        if old_sv <= new_sv {
            return false;
        }
        warn!(
            cluster = %clip(cluster), broker = %clip(&group.name), broker_id, old = %clip(old_addr), old_state_version = old_sv,
            new = %clip(broker_addr), new_state_version = new_sv,
            "registering broker conflicts with the existing one; ignored"
        );
        true
    }

    /// Step 10, for a master or a prime slave: 10b the topics its body no longer has (with
    /// `delete`, and no static topics), 10c new or changed topics, 10d static-topic mappings.
    fn put_topics(
        &mut self,
        name: &Arc<str>,
        wrapper: &TopicConfigAndMappingSerializeWrapper,
        changed: bool,
        wipe_write: bool,
        delete: bool,
    ) {
        let mappings = &wrapper.topic_queue_mapping_info_map;
        if delete && mappings.is_empty() {
            self.delete_topics_missing_from(name, wrapper);
        }
        self.create_and_update_queue_data(name, wrapper, changed, wipe_write);
        if changed {
            self.put_topic_queue_mappings(mappings);
        }
    }

    /// Step 10b: removes `name`'s queues from the topics its body no longer has (static topics
    /// are not supported here).
    /// Java: `RouteInfoManager#registerBroker` (`deleteTopicWithBrokerRegistration`)
    fn delete_topics_missing_from(
        &mut self,
        name: &Arc<str>,
        wrapper: &TopicConfigAndMappingSerializeWrapper,
    ) {
        let gone: Vec<String> = self
            .topics
            .iter_buckets(self.buckets.of([&**name]))
            .filter(|(topic, entry)| {
                entry.queue(name).is_some() && !wrapper.topic_config_table.contains_key(*topic)
            })
            .map(|(topic, _)| topic.to_owned())
            .collect();
        for topic in gone {
            let next = self.topics.get(&topic).and_then(|entry| {
                let rest: Vec<_> =
                    entry.queues.iter().filter(|(b, _)| *b != *name).cloned().collect();
                (!rest.is_empty()).then(|| super::table::TopicEntry::new(&topic, rest, &self.lists))
            });
            info!(broker = %clip(name), topic = %clip(&topic), "deleteTopic with broker registration");
            self.set_topic(&topic, next);
        }
    }

    /// Step 10c: new or changed topics; with `changed` false (an unchanged DataVersion, not a
    /// first registration) only the topics missing `name`'s queue are put.
    /// Java: `RouteInfoManager#createAndUpdateQueueData`
    fn create_and_update_queue_data(
        &mut self,
        name: &Arc<str>,
        wrapper: &TopicConfigAndMappingSerializeWrapper,
        changed: bool,
        wipe_write: bool,
    ) {
        let topics = wrapper.named_topics();
        let hashes: Vec<u64> = topics.iter().map(|(topic, _)| self.topics.hash_of(topic)).collect();
        let (mut bump, mut added) = (false, Vec::new());
        for (i, &(topic, tc)) in topics.iter().enumerate() {
            self.topics.fetch_ahead(&hashes, i);
            let hash = hashes[i];
            let put = changed
                || self.topics.get_hashed(hash, topic).is_none_or(|e| e.queue(name).is_none());
            if put {
                let perm = if wipe_write { tc.perm & !perm::WRITE } else { tc.perm };
                let spec = QueueSpec::from_topic_config(tc, perm);
                match self.set_queue(topic, hash, name, spec) {
                    Put::Same => {}
                    Put::Changed => bump = true,
                    Put::Added => {
                        bump = true;
                        added.push(hash);
                    }
                }
            }
        }
        self.buckets.mark(name, added);
        if bump {
            self.bump_queues(name);
        }
    }

    /// Step 10d: static-topic mappings (never removed).
    /// Java: `RouteInfoManager#registerBroker` (`topicQueueMappingInfoTable`)
    fn put_topic_queue_mappings(&mut self, mappings: &BTreeMap<String, TopicQueueMappingInfo>) {
        for (topic, info) in mappings {
            let Some(bname) = info.bname.as_deref() else {
                continue; // Java would key it by null; no such mapping is routable.
            };
            let mut map =
                self.mappings.get(topic).map_or_else(BTreeMap::new, |(_, m)| (**m).clone());
            if map.get(bname) == Some(info) {
                continue;
            }
            map.insert(bname.to_owned(), info.clone());
            self.mappings.insert((Arc::from(topic.as_str()), Arc::new(map)));
            self.bump_mappings();
            if let Some(entry) = self.topics.get(topic) {
                let entry = entry.refreshed();
                self.set_topic(topic, Some(entry));
            }
        }
    }

    /// Step 12: the filter servers (`None` leaves them, an empty list removes them).
    /// Java: `RouteInfoManager#registerBroker` (`filterServerTable`)
    fn put_filter_servers(
        &mut self,
        cluster: &Arc<str>,
        addr: &Arc<str>,
        list: Option<Vec<String>>,
    ) {
        let Some(list) = list else { return };
        if list.is_empty() {
            self.remove_filter(cluster, addr);
        } else if self.filters.get(cluster, addr).is_none_or(|old| **old != *list) {
            self.filters.insert(cluster, addr, Arc::from(list));
            self.broker_gen += 1;
        }
    }

    /// Step 11: the registrant's live entry, always replaced (a new generation), stamped for
    /// the unchanged-registration shortcut when the server computed a digest, with its group's
    /// generations after every other step.
    /// Java: `RouteInfoManager#registerBroker` (`brokerLiveTable.put`)
    fn put_live_entry(
        &mut self,
        req: &RegisterBroker,
        cluster: &Arc<str>,
        addr: &Arc<str>,
        now_ms: u64,
        (applied_all, puts_topics): (bool, bool),
    ) {
        let mut live = Live::new(
            now_ms,
            req.heartbeat_timeout_millis.unwrap_or(DEFAULT_HEARTBEAT_TIMEOUT_MS),
            req.ha_server_addr.clone(),
            Registration {
                data_version: req.topic_config.data_version,
                conn: req.conn,
                generation: self.next_generation(),
            },
        );
        live.unchanged_stamp = req.request_digest.map(|request_digest| UnchangedStamp {
            request_digest,
            version_frame: req.version_frame,
            new_version_applies_nothing: applied_all,
            group: self.group_gens.get(&*req.broker_name).copied().unwrap_or_default(),
            puts_topics,
            mappings_gen: self.mappings_gen,
            delta_base: req.delta_base.clone(),
        });
        if self.put_live(cluster, addr, live) {
            info!(cluster = %clip(cluster), broker = %clip(addr), ha = %clip(&req.ha_server_addr), "new broker registered");
        }
    }

    /// This address's delta base, when its last registration left one: what the server
    /// compares the next body's topic entries with.
    pub fn delta_base(&self, cluster: &str, broker_addr: &str) -> Option<super::DeltaBase> {
        self.live.get(cluster, broker_addr)?.unchanged_stamp.as_ref()?.delta_base.clone()
    }

    /// A registration whose topic table holds only the entries that differ from `base` (the
    /// delta base of this address's last registration, which the server diffed against),
    /// applied with Java's algorithm (§5.3): when the stamp allows it (see
    /// [`UnchangedStamp::allows_delta`]), every entry `req` leaves out would be re-put as the
    /// table already holds it, so the result is the full algorithm's. `None`, with nothing
    /// applied, when it does not (the server then registers the whole body).
    /// Java: `RouteInfoManager#registerBroker`
    pub fn register_delta(
        &mut self,
        mut req: RegisterBroker,
        base: &super::DeltaBase,
        now_ms: u64,
    ) -> Option<Result<RegisterOutcome, RegisterError>> {
        // The same request outside its topic table and DataVersion.
        req.delta_base.as_ref().filter(|new| new.rest_digest == base.rest_digest)?;
        let live = self.live.get(&req.cluster, &req.broker_addr)?;
        let version = req.topic_config.data_version;
        let stamp = live.unchanged_stamp.as_ref()?;
        if !stamp.allows_delta(base, &req.broker_name, version, live.data_version(), self) {
            return None;
        }
        Some(self.register_broker(&mut req, now_ms, false))
    }

    /// A re-registration identical to this address's last one (same request digest), while no
    /// topic, mapping, cluster, group or filter changed since: Java's full algorithm would change
    /// nothing but the live entry, so only that is refreshed, in place (new timestamp,
    /// connection, generation and, when the digest left it out, `DataVersion`: with a new
    /// version Java re-puts every topic, which finds each queue as it is). No copy of the table
    /// is made, so its cost does not grow with the table. `None` when the shortcut does not
    /// apply; the caller then registers fully. Writes must be excluded meanwhile
    /// ([`Routes::refresh_unchanged`](super::Routes::refresh_unchanged) holds the writer lock):
    /// a fenced unregistration decides on the generation this replaces.
    pub fn refresh_unchanged(
        &self,
        key: &UnchangedRegistration<'_>,
        now_ms: u64,
    ) -> Option<RegisterOutcome> {
        let live = self.live.get(key.cluster, key.broker_addr)?;
        let stamp = live.unchanged_stamp.as_ref()?;
        let current = live.registration();
        if !stamp.covers(key, current.data_version, self) {
            return None;
        }
        let registration = Registration {
            data_version: key.data_version.unwrap_or(current.data_version),
            conn: key.conn,
            generation: self.next_generation(),
        };
        live.reregister(registration, now_ms);
        Some(self.master_of(key.cluster, key.broker_name, key.broker_id))
    }

    /// Where the `DataVersion` sat in the body of this address's last fully applied
    /// registration, when its digest left the version out.
    /// With it, that registration's digest.
    pub fn version_frame(
        &self,
        cluster: &str,
        broker_addr: &str,
    ) -> Option<(super::VersionFrame, u64)> {
        let stamp = self.live.get(cluster, broker_addr)?.unchanged_stamp.as_ref()?;
        Some((stamp.version_frame?, stamp.request_digest))
    }

    /// Step 13: a non-master learns its group's live master and the master's HA address.
    fn master_of(&self, cluster: &str, broker_name: &str, broker_id: i64) -> RegisterOutcome {
        let mut outcome = RegisterOutcome::default();
        if broker_id != MASTER_ID {
            if let Some(master) = self.groups.get(broker_name).and_then(|g| g.addrs.get(&MASTER_ID))
            {
                if let Some(master_live) = self.live.get(cluster, master) {
                    outcome.master_addr = Some(master.to_string());
                    outcome.ha_server_addr = Some(master_live.ha_server_addr.clone());
                }
            }
        }
        outcome
    }

    /// Adds or replaces queues of a topic from an admin request. A new topic is stored only if
    /// every queue's broker group exists; for an existing topic the queues are applied in order
    /// until one names an unknown broker (earlier ones stay, like Java). Returns whether the
    /// whole list was applied. No permission or DataVersion logic.
    /// Java: `RouteInfoManager#registerTopic`
    pub fn register_topic(&mut self, topic: &str, queue_datas: Vec<QueueData>) -> bool {
        if queue_datas.is_empty() {
            return true;
        }
        let known = |table: &RouteTable, qd: &QueueData| {
            table.groups.get_key_value(qd.broker_name.as_str()).map(|(k, _)| k.clone())
        };
        if self.topics.contains_key(topic) {
            for qd in &queue_datas {
                let Some(broker) = known(self, qd) else {
                    warn!(topic = %clip(topic), broker = %clip(&qd.broker_name), "register topic contains an unknown broker");
                    return false;
                };
                // Java puts even an identical QueueData; an identical one changes nothing here.
                self.put_queue(topic, &broker, QueueSpec::from_queue_data(qd));
            }
            true
        } else {
            let mut queues = Vec::with_capacity(queue_datas.len());
            for qd in &queue_datas {
                let Some(broker) = known(self, qd) else {
                    warn!(topic = %clip(topic), broker = %clip(&qd.broker_name), "register topic contains an unknown broker");
                    return false;
                };
                // Later entries for the same broker win, as with Java's map put.
                queues.retain(|(b, _): &(Arc<str>, QueueSpec)| *b != broker);
                queues.push((broker, QueueSpec::from_queue_data(qd)));
            }
            info!(topic = %clip(topic), "register topic route");
            let entry = super::table::TopicEntry::new(topic, queues, &self.lists);
            self.set_topic(topic, Some(entry));
            true
        }
    }
}

impl MinBrokerIdChange {
    /// The notification for `group`'s current members; `None` for an empty group.
    /// Java: `RouteInfoManager#notifyMinBrokerIdChanged(Map, String, String)`
    pub(super) fn for_group(
        group: &Group,
        offline: Option<String>,
        ha: Option<String>,
    ) -> Option<Self> {
        let (&min_id, min_addr) = group.addrs.iter().next()?;
        let targets = if offline.is_some() || group.addrs.len() == 1 {
            group.addrs.values().map(|a| a.to_string()).collect()
        } else {
            group
                .addrs
                .iter()
                .filter(|(id, _)| **id != min_id)
                .map(|(_, a)| a.to_string())
                .collect()
        };
        Some(Self {
            broker_name: group.name.to_string(),
            min_broker_id: min_id,
            min_broker_addr: min_addr.to_string(),
            offline_broker_addr: offline,
            ha_broker_addr: ha,
            targets,
        })
    }
}
