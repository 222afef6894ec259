//! The route table's data model: Java `RouteInfoManager`'s six maps (topic queues, broker groups,
//! clusters, live brokers, filter servers, static-topic mappings) and the helpers the operations in
//! the sibling files share.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use remoting::body::{BrokerData, DataVersion, IntKeyMap, TopicQueueMappingInfo};

use super::ConnId;
use cowmap::CowMap;

use super::entry::{changed_queues, list_queue, LastList};
pub(super) use super::entry::{Lists, QueueList, QueueSpec, TopicEntry};

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

/// A topic's static-topic mappings, by broker name.
pub(super) type Mappings = Arc<BTreeMap<String, TopicQueueMappingInfo>>;

/// Java `BrokerLiveInfo`, keyed by (cluster, address). Heartbeats and unchanged re-registrations
/// refresh it in place (an atomic timestamp, a locked [`Registration`]): no copy of the table.
#[derive(Debug)]
pub(super) struct Live {
    pub last_update_ms: AtomicU64,
    pub timeout_ms: i64,
    pub ha_server_addr: String,
    registration: Mutex<Registration>,
    /// Set when the registration was fully applied: lets an identical re-registration skip the
    /// work while nothing else changed the tables ([`RouteTable::refresh_unchanged`]).
    pub unchanged_stamp: Option<UnchangedStamp>,
}

/// What each registration sets in its live entry, the unchanged ones included.
#[derive(Debug, Clone, Copy)]
pub(super) struct Registration {
    pub data_version: DataVersion,
    pub conn: ConnId,
    /// Unique per registration (the fence of expiry / close unregistrations).
    pub generation: u64,
}

/// The digest of a registration request and the generations of what its outcome depends on,
/// right after it was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UnchangedStamp {
    pub request_digest: u64,
    /// Where the body's `DataVersion` sat, when the digest left it out.
    pub version_frame: Option<super::VersionFrame>,
    /// The registration put every topic and mapping of its body (or none was the registrant's
    /// to put), so the same body with another `DataVersion` would change nothing either.
    pub new_version_applies_nothing: bool,
    /// The registrant's group's generations. `queues` is `None` when the registrant puts no
    /// topics (a slave that is not the prime one): then its group's queues are not its concern.
    pub group: GroupGens,
    pub puts_topics: bool,
    /// [`RouteTable::mappings_gen`], for a registrant that puts topics (and so mappings).
    pub mappings_gen: u64,
    /// What the next registration of this address may be applied as a difference from.
    pub delta_base: Option<super::DeltaBase>,
}

/// What can change a broker group's registration outcome, as generations (values of
/// [`RouteTable::next_generation`], so a group removed and created again never repeats one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct GroupGens {
    /// The group itself: its addresses, zone, acting-master flag, its cluster membership.
    pub members: u64,
    /// The group's queues in the topic table (any topic's entry for this broker name).
    pub queues: u64,
}

impl UnchangedStamp {
    /// Whether a registration `key` may take the shortcut: same digest, nothing the outcome
    /// depends on changed since (the registrant's group, its queues when it puts topics, the
    /// static-topic mappings), and either the same `DataVersion` as `current` or a stamp that
    /// allows a new one. Other groups' changes do not matter: Java's algorithm for this request
    /// reads and writes only this group's entries.
    pub(super) fn covers(
        &self,
        key: &super::UnchangedRegistration<'_>,
        current: DataVersion,
        table: &RouteTable,
    ) -> bool {
        let now = table.group_gens.get(key.broker_name).copied().unwrap_or_default();
        self.request_digest == key.request_digest
            && self.group.members == now.members
            && (!self.puts_topics
                || (self.group.queues == now.queues && self.mappings_gen == table.mappings_gen))
            && (self.new_version_applies_nothing || key.data_version.is_none_or(|v| v == current))
    }

    /// Whether a registration may be applied as its difference from `base`, this stamp's
    /// delta base: the same base and rest, a new `DataVersion` (Java then re-puts every topic
    /// of the body), every topic of the last body put and nothing of this group's changed
    /// since (so the table holds exactly what that body put: re-putting an unchanged entry
    /// would change nothing).
    pub(super) fn allows_delta(
        &self,
        base: &super::DeltaBase,
        broker_name: &str,
        new_version: DataVersion,
        current: DataVersion,
        table: &RouteTable,
    ) -> bool {
        let now = table.group_gens.get(broker_name).copied().unwrap_or_default();
        self.delta_base.as_ref().is_some_and(|own| own.same_as(base))
            && self.new_version_applies_nothing
            && self.puts_topics
            && new_version != current
            && self.group == now
            && self.mappings_gen == table.mappings_gen
    }
}

impl Live {
    pub(super) fn new(now_ms: u64, timeout_ms: i64, ha: String, reg: Registration) -> Self {
        let registration = Mutex::new(reg);
        let last_update_ms = AtomicU64::new(now_ms);
        Self { last_update_ms, timeout_ms, ha_server_addr: ha, registration, unchanged_stamp: None }
    }

    pub(super) fn registration(&self) -> Registration {
        *self.registration.lock()
    }

    pub(super) fn data_version(&self) -> DataVersion {
        self.registration.lock().data_version
    }

    /// Replaces the registration in every snapshot holding this entry: only under the writer
    /// lock, so that no write is deciding on the old values meanwhile.
    pub(super) fn reregister(&self, registration: Registration, now_ms: u64) {
        *self.registration.lock() = registration;
        self.touch(now_ms);
    }

    pub(super) fn touch(&self, now_ms: u64) {
        self.last_update_ms.fetch_max(now_ms, Ordering::Relaxed);
    }

    /// Java: `last + timeout < now` (still alive exactly at the boundary).
    pub(super) fn is_expired(&self, now_ms: u64) -> bool {
        let last = i128::from(self.last_update_ms.load(Ordering::Relaxed));
        last + i128::from(self.timeout_ms) < i128::from(now_ms)
    }
}

/// A map keyed by (cluster, broker address).
pub(super) type ByAddr<V> = cowmap::ByPair<V>;

/// The whole routing state (Java `RouteInfoManager`'s maps). Cloning is cheap (shared nodes and
/// reference-counted entries), which is how [`Routes`](super::Routes) publishes snapshots.
///
/// Mutating methods take `&mut self`; liveness refreshes (`heartbeat`, `query_data_version`) and
/// the liveness scans take `&self`.
#[derive(Clone, Default)]
pub struct RouteTable {
    /// Java `topicQueueTable`.
    pub(super) topics: CowMap<Arc<TopicEntry>>,
    /// Per broker name, the buckets of `topics` where it may have queues: every topic with
    /// one of its queues is in one (marked where a queue is added, rebuilt on restore).
    pub(super) buckets: cowmap::Buckets,
    /// Java `brokerAddrTable`.
    pub(super) groups: imbl::OrdMap<Arc<str>, Arc<Group>>,
    /// Java `clusterAddrTable`.
    pub(super) clusters: imbl::OrdMap<Arc<str>, BTreeSet<Arc<str>>>,
    /// Java `brokerLiveTable`.
    pub(super) live: ByAddr<Arc<Live>>,
    /// Java `filterServerTable`.
    pub(super) filters: ByAddr<Arc<[String]>>,
    /// Java `topicQueueMappingInfoTable` (never shrinks, like Java).
    pub(super) mappings: CowMap<(Arc<str>, Mappings)>,
    /// Per broker group, the generations of what its registrations depend on (the unchanged
    /// shortcut's scope: a registration is compared with its own group's changes, not the
    /// whole table's).
    pub(super) group_gens: cowmap::Shared<Arc<str>, GroupGens>,
    /// Bumped whenever a static-topic mapping changes.
    pub(super) mappings_gen: u64,
    /// The last registration generation handed out (shared by every snapshot).
    pub(super) last_generation: Arc<AtomicU64>,
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
    pub(super) lists: Lists,
    /// The last list a put made.
    last_list: LastList,
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

    pub(super) fn next_generation(&self) -> u64 {
        self.last_generation.fetch_add(1, Ordering::Relaxed) + 1
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
        self.bump_members(&group.name);
        self.groups.insert(group.name.clone(), Arc::new(group));
        self.broker_gen += 1;
    }

    pub(super) fn remove_group(&mut self, name: &str) {
        if self.groups.remove(name).is_some() {
            self.group_gens.remove(name);
            self.broker_gen += 1;
        }
    }

    /// A change of `name`'s group or its cluster membership.
    pub(super) fn bump_members(&mut self, name: &Arc<str>) {
        let generation = self.next_generation();
        self.group_gens.entry(name.clone()).or_default().members = generation;
    }

    /// A change of one of `name`'s queues in the topic table.
    pub(super) fn bump_queues(&mut self, name: &Arc<str>) {
        let generation = self.next_generation();
        match self.group_gens.get_mut(name) {
            Some(gens) => gens.queues = generation,
            None => {
                self.group_gens.insert(name.clone(), GroupGens { members: 0, queues: generation });
            }
        }
    }

    pub(super) fn remove_filter(&mut self, cluster: &str, addr: &str) {
        if self.filters.remove(cluster, addr).is_some() {
            self.broker_gen += 1;
        }
    }

    /// Replaces a topic's entry (`None` removes the topic); the groups whose queue in it
    /// changed are told ([`GroupGens::queues`]).
    pub(super) fn set_topic(&mut self, topic: &str, entry: Option<TopicEntry>) {
        let old = self.topics.get(topic).cloned();
        self.replace_topic(topic, old.as_deref(), entry);
    }

    /// [`RouteTable::set_topic`] for a caller that has the old entry (one probe less). `new`
    /// is `key`'s.
    fn replace_topic(&mut self, key: &str, old: Option<&TopicEntry>, new: Option<TopicEntry>) {
        debug_assert!(new.as_ref().is_none_or(|entry| entry.name() == key));
        self.topics_gen += 1;
        for name in &changed_queues(old, new.as_ref()) {
            self.bump_queues(name);
            if new.as_ref().is_some_and(|e| e.queue(name).is_some())
                && old.is_none_or(|e| e.queue(name).is_none())
            {
                self.buckets.mark(name, [self.topics.hash_of(key)]);
            }
        }
        match new {
            Some(entry) => self.topics.insert(Arc::new(entry)).map(drop),
            None => self.topics.remove(key).map(drop),
        };
    }

    /// A static-topic mapping changed.
    pub(super) fn bump_mappings(&mut self) {
        self.topics_gen += 1;
        self.mappings_gen += 1;
    }

    /// Sets `broker`'s queue of `topic`, creating the topic; identical content is a no-op.
    /// Java: `RouteInfoManager#createAndUpdateQueueData`
    pub(super) fn put_queue(&mut self, topic: &str, broker: &Arc<str>, spec: QueueSpec) {
        let hash = self.topics.hash_of(topic);
        let put = self.set_queue(topic, hash, broker, spec);
        if put == Put::Added {
            self.buckets.mark(broker, [hash]);
        }
        if put != Put::Same {
            self.bump_queues(broker);
        }
    }

    /// [`RouteTable::put_queue`] but for the bump of `broker`'s queue generation and the mark
    /// of its bucket, left to the caller (once for a registration's puts), with the topic's
    /// hash given: what the put did. An entry no
    /// snapshot holds (made earlier in this batch: a cluster's brokers register together) is
    /// changed in place (#25).
    pub(super) fn set_queue(
        &mut self,
        topic: &str,
        hash: u64,
        broker: &Arc<str>,
        spec: QueueSpec,
    ) -> Put {
        let found = self.topics.get_hashed(hash, topic).map(|entry| &entry.queues);
        let had = found.and_then(|list| list_queue(list, broker));
        if had == Some(&spec) {
            return Put::Same;
        }
        let put = if had.is_some() { Put::Changed } else { Put::Added };
        let from = found.cloned();
        let queues = self.last_list.with(&self.lists, from, broker, spec);
        self.topics_gen += 1;
        match self.topics.get_mut_hashed(hash, topic) {
            Some(slot) => match Arc::get_mut(slot) {
                Some(entry) => (entry.queues, entry.own) = (queues, OnceLock::new()),
                None => *slot = Arc::new(TopicEntry::of_list(topic, queues)),
            },
            None => {
                drop(self.topics.insert_hashed(hash, Arc::new(TopicEntry::of_list(topic, queues))))
            }
        }
        put
    }

    /// Marks every topic's bucket for each broker with a queue in it (a table restored from a
    /// v1 file, built topic by topic): the hashes gathered per shared list first.
    pub(super) fn mark_buckets(&mut self) {
        let mut by_list: foldhash::HashMap<*const (), (QueueList, Vec<u64>)> =
            foldhash::HashMap::default();
        for (topic, entry) in self.topics.iter() {
            let list = &entry.queues;
            let at = by_list
                .entry(Arc::as_ptr(list).cast())
                .or_insert_with(|| (list.clone(), Vec::new()));
            at.1.push(self.topics.hash_of(topic));
        }
        self.mark_lists(by_list.values().map(|(list, hashes)| (list, &hashes[..])));
    }

    /// Marks the buckets of `hashes` (topics that have `list`) for each broker of `list`.
    pub(super) fn mark_lists<'a>(
        &mut self,
        lists: impl IntoIterator<Item = (&'a QueueList, &'a [u64])>,
    ) {
        for (list, hashes) in lists {
            for (name, _) in list.iter() {
                self.buckets.mark(name, hashes.iter().copied());
            }
        }
    }

    /// Removes `remove`'s queues from every topic and applies `perm_and` to the queues of
    /// `wipe` brokers; topics left without queues disappear. Scans the leaves of their buckets
    /// without copying, then writes only the topics that change. Each list is rewritten once,
    /// however many topics share it (a cluster's topics share one): the scan itself reads a
    /// pointer per topic.
    pub(super) fn rewrite_topics(
        &mut self,
        remove: &BTreeSet<&str>,
        wipe: &BTreeSet<&str>,
        perm_and: i32,
    ) {
        if remove.is_empty() && wipe.is_empty() {
            return;
        }
        // A list's rewrite: `None` when it stays, `Some(None)` when no queue is left.
        let mut rewritten: foldhash::HashMap<*const (), Option<Option<QueueList>>> =
            foldhash::HashMap::default();
        let mut changes = Vec::new();
        let owners = remove.iter().chain(wipe).copied();
        for (topic, entry) in self.topics.iter_buckets(self.buckets.of(owners)) {
            let list = &entry.queues;
            let rewrite = rewritten
                .entry(Arc::as_ptr(list).cast())
                .or_insert_with(|| rewrite_list(list, remove, wipe, perm_and, &self.lists));
            if let Some(list) = rewrite {
                changes.push((topic.to_owned(), list.clone()));
            }
        }
        for (topic, list) in changes {
            let entry = list.map(|list| TopicEntry::of_list(&topic, list));
            self.set_topic(&topic, entry);
        }
        for name in remove {
            self.buckets.forget(name); // none of its queues is left
        }
    }
}

/// What a put did to a topic's queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Put {
    Same,
    Changed,
    /// The broker had no queue in the topic.
    Added,
}

/// `list` without `remove`'s queues and with `perm_and` applied to `wipe`'s, shared through
/// `lists`: `None` when that changes nothing, `Some(None)` when no queue is left.
fn rewrite_list(
    list: &QueueList,
    remove: &BTreeSet<&str>,
    wipe: &BTreeSet<&str>,
    perm_and: i32,
    lists: &Lists,
) -> Option<Option<QueueList>> {
    let touched = list.iter().any(|(b, spec)| {
        remove.contains(&**b) || (wipe.contains(&**b) && spec.perm & perm_and != spec.perm)
    });
    if !touched {
        return None;
    }
    let queues: Vec<_> = list
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
    Some((!queues.is_empty()).then(|| lists.lock().share(&queues)))
}
