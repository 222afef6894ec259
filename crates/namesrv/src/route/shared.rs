//! `Routes`: the route table shared by every connection task, the scan task and the batch
//! unregistration task.
//!
//! Design: readers never take a lock. The current [`RouteTable`] is an immutable snapshot behind
//! an `ArcSwap`; a reader loads it (a few atomic operations) and works on it as long as it likes.
//! Writers are serialized by one mutex; each writer clones the current snapshot (cheap: the topic
//! table is a sharded copy-on-write map, so a clone is a few hundred reference counts, and only the
//! shards a write touches are copied), applies the Java algorithm unchanged to its private copy,
//! and publishes the result with one atomic store. Consequences:
//! * a 50k-topic registration never blocks a route lookup, not even for a chunk: readers see the
//!   table before or after the whole registration (Java's atomicity, with no reader waiting);
//! * the algorithms in `register.rs` / `unregister.rs` stay a plain transcription of Java, with no
//!   plan/apply split to keep consistent;
//! * heartbeats and QUERY_DATA_VERSION update an atomic timestamp in the shared live entry, so
//!   they take no lock either; one that lands on an entry a concurrent registration is replacing
//!   is lost, which is harmless (the registration sets a fresh timestamp);
//! * cost: a write that changes k topics copies min(k, 256) shards of ~n/256 entries each, and
//!   the small tables (groups, clusters, live, filters) are cloned per write (reference counts).
//!   An unchanged re-registration (every 30 s per broker) copies no topic shard at all.
//! * the writer frees the snapshot it replaced (waiting up to 1 ms for readers still on it), so a
//!   reader never pays for freeing what a big write replaced.
//!
//! Encoded bodies are cached per topic (see `cache.rs`); a cached `Bytes` is reused until the
//! topic's entry is replaced or a group / filter-server entry changes.

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::Mutex;
use remoting::body::{
    ClusterInfo, DataVersion, GetBrokerMemberGroupResponseBody, QueueData, TopicList,
    TopicRouteData,
};

use super::query::UnitKind;
use super::table::RouteTable;
use super::{
    ConnId, RegisterBroker, RegisterError, RegisterOutcome, UnchangedRegistration,
    UnregisterOutcome, UnregisterRequest,
};

/// The JSON form of a GET_ROUTEINFO_BY_TOPIC body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteForm {
    /// fastjson's default output (clients before V4_9_4 that did not ask for standard JSON).
    Legacy = 0,
    /// BrowserCompatible output (version ≥ 401 or `acceptStandardJsonOnly`).
    Standard = 1,
}

/// The route table as the server shares it. See the module docs for the concurrency design.
pub struct Routes {
    current: ArcSwap<RouteTable>,
    /// Serializes writers; holds the replaced snapshots some reader still had (see
    /// `crate::retired`).
    writer: Mutex<Vec<Arc<RouteTable>>>,
}

impl Default for Routes {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Routes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Routes").field(&**self.current.load()).finish()
    }
}

impl Routes {
    /// Empty tables.
    pub fn new() -> Self {
        Self { current: ArcSwap::from_pointee(RouteTable::new()), writer: Mutex::new(Vec::new()) }
    }

    /// The current snapshot, for reads not covered below (or many reads on one consistent state).
    pub fn snapshot(&self) -> Arc<RouteTable> {
        self.current.load_full()
    }

    /// Runs one mutation on a private copy of the table and publishes it.
    fn write<R>(&self, f: impl FnOnce(&mut RouteTable) -> R) -> R {
        let mut retired = self.writer.lock();
        let mut next = RouteTable::clone(&self.current.load());
        let result = f(&mut next);
        let replaced = self.current.swap(Arc::new(next));
        retired.push(replaced);
        crate::retired::free_unheld(&mut retired);
        result
    }

    /// Replaces the whole table (a route snapshot restored at start-up).
    pub fn restore(&self, table: RouteTable) {
        self.write(|t| *t = table);
    }

    /// See [`RouteTable::change_stamp`] (current snapshot).
    pub fn change_stamp(&self) -> u64 {
        self.current.load().change_stamp()
    }

    /// REGISTER_BROKER. See [`RouteTable::register_broker`].
    pub fn register_broker(
        &self,
        req: RegisterBroker,
        now_ms: u64,
        delete_topic_with_registration: bool,
    ) -> Result<RegisterOutcome, RegisterError> {
        self.write(|t| t.register_broker(req, now_ms, delete_topic_with_registration))
    }

    /// An identical re-registration, applied by refreshing the live entry only; `None` when the
    /// full algorithm must run. See [`RouteTable::refresh_unchanged`].
    pub fn refresh_unchanged(
        &self,
        key: &UnchangedRegistration<'_>,
        now_ms: u64,
    ) -> Option<RegisterOutcome> {
        // Checked on the current snapshot first, so a miss costs no copy of the table.
        if !self.current.load().may_refresh_unchanged(key) {
            return None;
        }
        self.write(|t| t.refresh_unchanged(key, now_ms))
    }

    /// See [`RouteTable::version_frame`] (current snapshot).
    pub fn version_frame(
        &self,
        cluster: &str,
        broker_addr: &str,
    ) -> Option<(super::VersionFrame, u64)> {
        self.current.load().version_frame(cluster, broker_addr)
    }

    /// See [`RouteTable::prune_route_bodies`].
    pub fn prune_route_bodies(&self) -> usize {
        self.current.load().prune_route_bodies()
    }

    /// Applies a batch from the unregistration queue. See
    /// [`RouteTable::apply_unregister_batch`].
    pub fn apply_unregisters(&self, reqs: &[UnregisterRequest]) -> UnregisterOutcome {
        if reqs.is_empty() {
            return UnregisterOutcome::default();
        }
        self.write(|t| t.apply_unregister_batch(reqs))
    }

    /// The encoded GET_ROUTEINFO_BY_TOPIC body (cached). `None` ⇒ TOPIC_NOT_EXIST.
    pub fn route_body(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
    ) -> Option<Bytes> {
        self.current.load().route_body(topic, form, support_acting_master)
    }

    /// See [`RouteTable::lookup_route_body`].
    pub fn lookup_route_body(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
    ) -> (Option<Bytes>, bool) {
        self.current.load().lookup_route_body(topic, form, support_acting_master)
    }

    /// [`Routes::route_body`], borrowed from the current snapshot for the length of `f` (which
    /// also learns whether the body was cached).
    pub fn with_route_body<R>(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
        f: impl FnOnce(Option<&[u8]>, bool) -> R,
    ) -> R {
        self.current.load().with_route_body(topic, form, support_acting_master, f)
    }

    /// The route itself, uncached (for `orderTopicConf` or the zone filter).
    pub fn route(&self, topic: &str, support_acting_master: bool) -> Option<TopicRouteData> {
        self.current.load().pickup_route(topic, support_acting_master)
    }

    /// WIPE_WRITE_PERM_OF_BROKER. See [`RouteTable::wipe_write_perm`].
    pub fn wipe_write_perm(&self, broker_name: &str) -> i32 {
        self.write(|t| t.wipe_write_perm(broker_name))
    }

    /// ADD_WRITE_PERM_OF_BROKER. See [`RouteTable::add_write_perm`].
    pub fn add_write_perm(&self, broker_name: &str) -> i32 {
        self.write(|t| t.add_write_perm(broker_name))
    }

    /// DELETE_TOPIC_IN_NAMESRV. See [`RouteTable::delete_topic`].
    pub fn delete_topic(&self, topic: &str, cluster: Option<&str>) {
        if self.current.load().topics.contains_key(topic) {
            self.write(|t| t.delete_topic(topic, cluster));
        }
    }

    /// Whether `topic` has a route (any queue).
    pub fn contains_topic(&self, topic: &str) -> bool {
        self.current.load().topics.contains_key(topic)
    }

    /// REGISTER_TOPIC_IN_NAMESRV. See [`RouteTable::register_topic`] (its result is only logged).
    pub fn register_topic(&self, topic: &str, queue_datas: Vec<QueueData>) {
        self.write(|t| t.register_topic(topic, queue_datas));
    }

    /// GET_BROKER_CLUSTER_INFO. See [`RouteTable::cluster_info`].
    pub fn cluster_info(&self) -> ClusterInfo {
        self.current.load().cluster_info()
    }

    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER. See [`RouteTable::all_topics`].
    pub fn all_topics(&self) -> TopicList {
        self.current.load().all_topics()
    }

    /// GET_TOPICS_BY_CLUSTER. See [`RouteTable::topics_by_cluster`].
    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        self.current.load().topics_by_cluster(cluster)
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS. See [`RouteTable::system_topics`].
    pub fn system_topics(&self) -> TopicList {
        self.current.load().system_topics()
    }

    /// 311/312/313. See [`RouteTable::unit_topics`].
    pub fn unit_topics(&self, kind: UnitKind) -> TopicList {
        self.current.load().unit_topics(kind)
    }

    /// GET_BROKER_MEMBER_GROUP. See [`RouteTable::broker_member_group`].
    pub fn broker_member_group(
        &self,
        cluster: &str,
        broker_name: &str,
    ) -> GetBrokerMemberGroupResponseBody {
        self.current.load().broker_member_group(cluster, broker_name)
    }

    /// BROKER_HEARTBEAT (lock-free). See [`RouteTable::heartbeat`].
    pub fn heartbeat(&self, cluster: &str, addr: &str, now_ms: u64) -> bool {
        self.current.load().heartbeat(cluster, addr, now_ms)
    }

    /// QUERY_DATA_VERSION (lock-free). See [`RouteTable::query_data_version`].
    pub fn query_data_version(
        &self,
        cluster: &str,
        addr: &str,
        data_version: Option<DataVersion>,
        now_ms: u64,
    ) -> (bool, Option<DataVersion>) {
        self.current.load().query_data_version(cluster, addr, data_version, now_ms)
    }

    /// The liveness scan (lock-free; decisions only). See [`RouteTable::expire_inactive`].
    pub fn expire_inactive(&self, now_ms: u64) -> Vec<UnregisterRequest> {
        self.current.load().expire_inactive(now_ms)
    }

    /// A connection closed (lock-free; decisions only). See [`RouteTable::on_connection_closed`].
    pub fn on_connection_closed(&self, conn: ConnId) -> Vec<UnregisterRequest> {
        self.current.load().on_connection_closed(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write (REGISTER_TOPIC for a broker group the table does not have: it changes nothing).
    fn add_topic(routes: &Routes, topic: &str) {
        let queues = QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 4,
            topic_sys_flag: 0,
            write_queue_nums: 4,
        };
        routes.register_topic(topic, vec![queues]);
    }

    #[test]
    fn a_writer_frees_the_snapshot_it_replaced_not_its_last_reader() {
        let routes = Routes::new();
        add_topic(&routes, "T1");
        let held = routes.snapshot();
        add_topic(&routes, "T2");
        // The reader still has the old table, so the writer kept a reference to it...
        assert_eq!(Arc::strong_count(&held), 2);
        assert_eq!(routes.writer.lock().len(), 1);
        // ...and the reader letting go does not free it (no work on the reader's thread)...
        drop(held);
        assert_eq!(routes.writer.lock().len(), 1);
        // ...the next write does.
        add_topic(&routes, "T3");
        assert!(routes.writer.lock().is_empty());
    }
}
