//! The route table's data model: Java `RouteInfoManager`'s six maps (topic queues, broker groups,
//! clusters, live brokers, filter servers, static-topic mappings) and the helpers the operations in
//! the sibling files share.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use remoting::body::{
    BrokerData, DataVersion, IntKeyMap, QueueData, TopicConfig, TopicQueueMappingInfo,
};

use super::cache::BodyCache;
use super::cow::CowMap;
use super::ConnId;

/// Java `BrokerData`: one broker group (a master and its slaves sharing a broker name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Group {
    /// Set when the group is created, never changed (Java).
    pub cluster: Arc<str>,
    pub name: Arc<str>,
    /// Broker id → address; an address appears at most once.
    pub addrs: BTreeMap<i64, Arc<str>>,
    pub zone_name: Option<String>,
    pub enable_acting_master: bool,
}

impl Group {
    pub(super) fn new(cluster: Arc<str>, name: Arc<str>) -> Self {
        Self { cluster, name, addrs: BTreeMap::new(), zone_name: None, enable_acting_master: false }
    }

    pub(super) fn min_id(&self) -> Option<i64> {
        self.addrs.keys().next().copied()
    }

    /// Java: `RouteInfoManager#isNoMasterExists` (for an existing group).
    pub(super) fn has_no_master(&self) -> bool {
        self.min_id().is_none_or(|min| min > 0)
    }

    /// A wire copy (Java `new BrokerData(brokerData)`).
    pub(super) fn to_broker_data(&self) -> BrokerData {
        BrokerData {
            broker_addrs: self
                .addrs
                .iter()
                .map(|(id, addr)| (*id, addr.to_string()))
                .collect::<IntKeyMap<_, _>>(),
            broker_name: self.name.to_string(),
            cluster: self.cluster.to_string(),
            enable_acting_master: self.enable_acting_master,
            zone_name: self.zone_name.clone(),
        }
    }
}

/// Java `QueueData` without its broker name (stored beside it): 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct QueueSpec {
    pub perm: i32,
    pub read_queue_nums: i32,
    pub write_queue_nums: i32,
    pub topic_sys_flag: i32,
}

impl QueueSpec {
    /// Java: `RouteInfoManager#createAndUpdateQueueData` (the QueueData part), with `perm` given.
    pub(super) fn from_topic_config(tc: &TopicConfig, perm: i32) -> Self {
        Self {
            perm,
            read_queue_nums: tc.read_queue_nums,
            write_queue_nums: tc.write_queue_nums,
            topic_sys_flag: tc.topic_sys_flag,
        }
    }

    pub(super) fn from_queue_data(qd: &QueueData) -> Self {
        Self {
            perm: qd.perm,
            read_queue_nums: qd.read_queue_nums,
            write_queue_nums: qd.write_queue_nums,
            topic_sys_flag: qd.topic_sys_flag,
        }
    }

    pub(super) fn to_queue_data(self, broker_name: &str) -> QueueData {
        QueueData {
            broker_name: broker_name.to_owned(),
            perm: self.perm,
            read_queue_nums: self.read_queue_nums,
            topic_sys_flag: self.topic_sys_flag,
            write_queue_nums: self.write_queue_nums,
        }
    }
}

/// One topic's queues, one entry per broker group, sorted by broker name (never empty in the
/// table). Immutable: a change builds a new entry, which also starts with an empty body cache.
pub(super) struct TopicEntry {
    pub queues: Box<[(Arc<str>, QueueSpec)]>,
    pub cache: BodyCache,
}

impl TopicEntry {
    pub(super) fn new(mut queues: Vec<(Arc<str>, QueueSpec)>) -> Self {
        queues.sort_by(|a, b| a.0.cmp(&b.0));
        queues.dedup_by(|later, earlier| later.0 == earlier.0);
        Self { queues: queues.into_boxed_slice(), cache: BodyCache::default() }
    }

    pub(super) fn queue(&self, broker: &str) -> Option<&QueueSpec> {
        self.queues
            .binary_search_by(|(name, _)| (**name).cmp(broker))
            .ok()
            .map(|i| &self.queues[i].1)
    }

    /// This entry with `broker`'s queue set to `spec` (added or replaced).
    pub(super) fn with_queue(&self, broker: &Arc<str>, spec: QueueSpec) -> Self {
        let mut queues: Vec<_> =
            self.queues.iter().filter(|(name, _)| name != broker).cloned().collect();
        queues.push((broker.clone(), spec));
        Self::new(queues)
    }

    /// The same queues with a fresh cache (a static-topic mapping changed).
    pub(super) fn refreshed(&self) -> Self {
        Self { queues: self.queues.clone(), cache: BodyCache::default() }
    }
}

/// Java `BrokerLiveInfo`, keyed by (cluster, address). The timestamp is atomic so heartbeats need
/// no write access to the table.
#[derive(Debug)]
pub(super) struct Live {
    pub last_update_ms: AtomicU64,
    pub timeout_ms: i64,
    pub data_version: DataVersion,
    pub conn: ConnId,
    pub ha_server_addr: String,
    /// Unique per registration (the fence of expiry / close unregistrations).
    pub generation: u64,
    /// Set when the registration was fully applied: lets an identical re-registration skip the
    /// work while nothing else changed the tables ([`RouteTable::refresh_unchanged`]).
    pub unchanged_stamp: Option<UnchangedStamp>,
}

/// The digest of a registration request and the table generations right after it was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct UnchangedStamp {
    pub request_digest: u64,
    /// Where the body's `DataVersion` sat, when the digest left it out.
    pub version_frame: Option<super::VersionFrame>,
    /// The registration put every topic and mapping of its body (or none was the registrant's
    /// to put), so the same body with another `DataVersion` would change nothing either.
    pub new_version_applies_nothing: bool,
    pub broker_gen: u64,
    pub topics_gen: u64,
}

impl UnchangedStamp {
    /// Whether a registration `key` may take the shortcut: same digest, no table change since,
    /// and either the same `DataVersion` as `current` or a stamp that allows a new one.
    pub(super) fn covers(
        &self,
        key: &super::UnchangedRegistration<'_>,
        current: DataVersion,
        table: &RouteTable,
    ) -> bool {
        self.request_digest == key.request_digest
            && self.broker_gen == table.broker_gen
            && self.topics_gen == table.topics_gen
            && (self.new_version_applies_nothing || key.data_version.is_none_or(|v| v == current))
    }
}

impl Live {
    pub(super) fn touch(&self, now_ms: u64) {
        self.last_update_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    /// Java: `last + timeout < now` (still alive exactly at the boundary).
    pub(super) fn is_expired(&self, now_ms: u64) -> bool {
        let last = i128::from(self.last_update_ms.load(Ordering::Relaxed));
        last + i128::from(self.timeout_ms) < i128::from(now_ms)
    }
}

/// A map keyed by (cluster, broker address) that is looked up with two `&str`.
#[derive(Clone)]
pub(super) struct ByAddr<V> {
    map: HashMap<Arc<str>, HashMap<Arc<str>, V>>,
}

impl<V> Default for ByAddr<V> {
    fn default() -> Self {
        Self { map: HashMap::new() }
    }
}

impl<V> ByAddr<V> {
    pub(super) fn get(&self, cluster: &str, addr: &str) -> Option<&V> {
        self.map.get(cluster)?.get(addr)
    }

    pub(super) fn insert(&mut self, cluster: &Arc<str>, addr: &Arc<str>, value: V) -> Option<V> {
        self.map.entry(cluster.clone()).or_default().insert(addr.clone(), value)
    }

    pub(super) fn remove(&mut self, cluster: &str, addr: &str) -> Option<V> {
        let inner = self.map.get_mut(cluster)?;
        let old = inner.remove(addr);
        if inner.is_empty() {
            self.map.remove(cluster);
        }
        old
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.map.values().map(HashMap::len).sum()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, &V)> {
        self.map
            .iter()
            .flat_map(|(cluster, inner)| inner.iter().map(move |(addr, v)| (cluster, addr, v)))
    }
}

/// The whole routing state (Java `RouteInfoManager`'s maps). Cloning is cheap (shared shards and
/// reference-counted entries), which is how [`Routes`](super::Routes) publishes snapshots.
///
/// Mutating methods take `&mut self`; liveness refreshes (`heartbeat`, `query_data_version`) and
/// the liveness scans take `&self`.
#[derive(Clone, Default)]
pub struct RouteTable {
    /// Java `topicQueueTable`.
    pub(super) topics: CowMap<Arc<TopicEntry>>,
    /// Java `brokerAddrTable`.
    pub(super) groups: BTreeMap<Arc<str>, Arc<Group>>,
    /// Java `clusterAddrTable`.
    pub(super) clusters: BTreeMap<Arc<str>, BTreeSet<Arc<str>>>,
    /// Java `brokerLiveTable`.
    pub(super) live: ByAddr<Arc<Live>>,
    /// Java `filterServerTable`.
    pub(super) filters: ByAddr<Arc<[String]>>,
    /// Java `topicQueueMappingInfoTable` (never shrinks, like Java).
    pub(super) mappings: CowMap<Arc<BTreeMap<String, TopicQueueMappingInfo>>>,
    /// The last registration generation handed out.
    pub(super) last_generation: u64,
    /// Bumped whenever a group or a filter-server entry changes: cached route bodies built at an
    /// older value are stale.
    pub(super) broker_gen: u64,
    /// Bumped whenever a topic entry, a static-topic mapping or a cluster's member set changes.
    pub(super) topics_gen: u64,
    /// Bumped whenever a live entry comes or goes, or its heartbeat timeout or HA address
    /// changes (what a route snapshot keeps of it).
    pub(super) live_gen: u64,
    /// Shared by every snapshot: one copy of each distinct encoded route body.
    pub(super) bodies: Arc<super::cache::BodyInterner>,
}

impl fmt::Debug for RouteTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteTable")
            .field("topics", &self.topics.len())
            .field("groups", &self.groups.len())
            .field("clusters", &self.clusters.len())
            .field("live", &self.live.len())
            .field("broker_gen", &self.broker_gen)
            .finish_non_exhaustive()
    }
}

impl RouteTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `topic` has an entry.
    pub fn contains_topic(&self, topic: &str) -> bool {
        self.topics.contains_key(topic)
    }

    /// Number of topics with at least one queue.
    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    /// Number of broker groups (Java `brokerAddrTable` size).
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Number of live entries (Java `brokerLiveTable` size).
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Changes whenever something a route snapshot holds changes (liveness stamps, connections
    /// and DataVersions aside): the snapshot writer's "dirty" test.
    pub fn change_stamp(&self) -> u64 {
        self.topics_gen + self.broker_gen + self.live_gen
    }

    /// Stores the live entry of (cluster, addr); true when the address had none.
    pub(super) fn put_live(&mut self, cluster: &Arc<str>, addr: &Arc<str>, live: Live) -> bool {
        let old = self.live.get(cluster, addr);
        if old.is_none_or(|o| {
            o.timeout_ms != live.timeout_ms || o.ha_server_addr != live.ha_server_addr
        }) {
            self.live_gen += 1;
        }
        self.live.insert(cluster, addr, Arc::new(live)).is_none()
    }

    /// Removes the live entry of (cluster, addr); true when there was one.
    pub(super) fn remove_live(&mut self, cluster: &str, addr: &str) -> bool {
        let removed = self.live.remove(cluster, addr).is_some();
        if removed {
            self.live_gen += 1;
        }
        removed
    }

    /// Live entries per cluster, sorted by cluster (every cluster of the cluster table, with 0
    /// when none of its brokers is live).
    pub fn live_by_cluster(&self) -> Vec<(String, usize)> {
        let mut counts: BTreeMap<&str, usize> = self.clusters.keys().map(|c| (&**c, 0)).collect();
        for (cluster, _, _) in self.live.iter() {
            *counts.entry(&**cluster).or_default() += 1;
        }
        counts.into_iter().map(|(c, n)| (c.to_owned(), n)).collect()
    }

    pub(super) fn next_generation(&mut self) -> u64 {
        self.last_generation += 1;
        self.last_generation
    }

    /// The table's own `Arc` for a cluster name, or a new one.
    pub(super) fn cluster_key(&self, cluster: &str) -> Arc<str> {
        self.clusters.get_key_value(cluster).map_or_else(|| Arc::from(cluster), |(k, _)| k.clone())
    }

    /// Stores `group` unless it equals `before`; any change invalidates cached route bodies.
    pub(super) fn commit_group(&mut self, before: Option<&Arc<Group>>, group: Group) {
        if before.is_some_and(|b| **b == group) {
            return;
        }
        self.groups.insert(group.name.clone(), Arc::new(group));
        self.broker_gen += 1;
    }

    pub(super) fn remove_group(&mut self, name: &str) {
        if self.groups.remove(name).is_some() {
            self.broker_gen += 1;
        }
    }

    pub(super) fn remove_filter(&mut self, cluster: &str, addr: &str) {
        if self.filters.remove(cluster, addr).is_some() {
            self.broker_gen += 1;
        }
    }

    /// Replaces a topic's entry (`None` removes the topic).
    pub(super) fn set_topic(&mut self, topic: Arc<str>, entry: Option<TopicEntry>) {
        self.topics_gen += 1;
        match entry {
            Some(entry) => {
                self.topics.insert(topic, Arc::new(entry));
            }
            None => {
                self.topics.remove(&topic);
            }
        }
    }

    /// The table's key for `topic` if present, else a new `Arc`.
    pub(super) fn topic_key(&self, topic: &str) -> Arc<str> {
        self.topics.get_key_value(topic).map_or_else(|| Arc::from(topic), |(k, _)| k.clone())
    }

    /// Sets `broker`'s queue of `topic`, creating the topic; identical content is a no-op.
    /// Java: `RouteInfoManager#createAndUpdateQueueData`
    pub(super) fn put_queue(&mut self, topic: &str, broker: &Arc<str>, spec: QueueSpec) {
        let next = match self.topics.get(topic) {
            None => TopicEntry::new(vec![(broker.clone(), spec)]),
            Some(entry) if entry.queue(broker) == Some(&spec) => return,
            Some(entry) => entry.with_queue(broker, spec),
        };
        let key = self.topic_key(topic);
        self.set_topic(key, Some(next));
    }

    /// Removes `brokers`' queues from every topic and applies `perm_and` to the queues of
    /// `wipe` brokers; topics left without queues disappear. Scans without copying, then writes
    /// only the topics that change.
    pub(super) fn rewrite_topics(
        &mut self,
        remove: &BTreeSet<&str>,
        wipe: &BTreeSet<&str>,
        perm_and: i32,
    ) {
        if remove.is_empty() && wipe.is_empty() {
            return;
        }
        let mut changes = Vec::new();
        for (topic, entry) in self.topics.iter() {
            let touched = entry.queues.iter().any(|(b, spec)| {
                remove.contains(&**b) || (wipe.contains(&**b) && spec.perm & perm_and != spec.perm)
            });
            if !touched {
                continue;
            }
            let queues: Vec<_> = entry
                .queues
                .iter()
                .filter(|(b, _)| !remove.contains(&**b))
                .map(|(b, spec)| {
                    let mut spec = *spec;
                    if wipe.contains(&**b) {
                        spec.perm &= perm_and;
                    }
                    (b.clone(), spec)
                })
                .collect();
            changes.push((topic.clone(), (!queues.is_empty()).then(|| TopicEntry::new(queues))));
        }
        for (topic, entry) in changes {
            self.set_topic(topic, entry);
        }
    }
}
