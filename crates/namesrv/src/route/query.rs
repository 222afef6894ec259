//! Reads: the route of a topic (Java `pickupTopicRouteData`, with the acting-master rewrite), its
//! cached encoded body, the zone filter (`ZoneRouteRPCHook`), cluster info and the topic lists.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use remoting::body::{
    perm, sys_flag, to_json, BrokerMemberGroup, ClusterInfo, GetBrokerMemberGroupResponseBody,
    JsonMode, TopicList, TopicRouteData,
};

use super::cache::VARIANTS;
use super::routes::RouteForm;
use super::table::RouteTable;
use super::SYNC_BROKER_MEMBER_PREFIX;

/// Which unit-topic list (311 / 312 / 313), judged on the topic's first QueueData's sysflag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnitKind {
    /// 311 GET_UNIT_TOPIC_LIST: `FLAG_UNIT` set.
    Unit,
    /// 312 GET_HAS_UNIT_SUB_TOPIC_LIST: `FLAG_UNIT_SUB` set.
    HasUnitSub,
    /// 313 GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: `FLAG_UNIT_SUB` set and `FLAG_UNIT` clear.
    HasUnitSubNotUnit,
}

impl UnitKind {
    fn matches(self, flag: i32) -> bool {
        let unit = flag & sys_flag::UNIT == sys_flag::UNIT;
        let unit_sub = flag & sys_flag::UNIT_SUB == sys_flag::UNIT_SUB;
        match self {
            Self::Unit => unit,
            Self::HasUnitSub => unit_sub,
            Self::HasUnitSubNotUnit => !unit && unit_sub,
        }
    }
}

/// The one place a route is turned into bytes.
fn encode_route(route: &TopicRouteData, form: RouteForm) -> Bytes {
    let mode = match form {
        RouteForm::Legacy => JsonMode::Legacy,
        RouteForm::Standard => JsonMode::Standard,
    };
    Bytes::from(to_json(route, mode))
}

impl RouteTable {
    /// The route of `topic`: its queues, the groups of those queues' brokers (copies), their
    /// filter servers and the static-topic mapping. `None` when the topic has no queue or none of
    /// its brokers has a group. With `support_acting_master`, a group without a master whose
    /// queue is read-only shows its lowest-id member as id 0 (not for
    /// `rmq_sys_SYNC_BROKER_MEMBER_*` topics).
    /// Java: `RouteInfoManager#pickupTopicRouteData`
    pub fn pickup_route(&self, topic: &str, support_acting_master: bool) -> Option<TopicRouteData> {
        let entry = self.topics.get(topic)?;
        let queue_datas = entry.queues.iter().map(|(b, spec)| spec.to_queue_data(b)).collect();
        let mut broker_datas = Vec::with_capacity(entry.queues.len());
        let mut filter_server_table = BTreeMap::new();
        for (broker, _) in entry.queues.iter() {
            let Some(group) = self.groups.get(broker) else {
                continue;
            };
            if !self.filters.is_empty() {
                for addr in group.addrs.values() {
                    // Java stores null for an address without filter servers; fastjson omits it.
                    if let Some(list) = self.filters.get(&group.cluster, addr) {
                        filter_server_table.insert(addr.to_string(), list.to_vec());
                    }
                }
            }
            broker_datas.push(group.to_broker_data());
        }
        if broker_datas.is_empty() {
            return None;
        }
        let mut route = TopicRouteData {
            broker_datas,
            filter_server_table,
            order_topic_conf: None,
            queue_datas,
            topic_queue_mapping_by_broker: self.mappings.get(topic).map(|(_, m)| (**m).clone()),
        };
        if support_acting_master && !topic.starts_with(SYNC_BROKER_MEMBER_PREFIX) {
            apply_acting_master(&mut route);
        }
        Some(route)
    }

    /// [`pickup_route`](Self::pickup_route) encoded in `form`, from its queue list's cache (or
    /// the topic's own) when it is still valid (same broker generation), else encoded now and
    /// cached.
    pub fn route_body(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
    ) -> Option<Bytes> {
        self.lookup_route_body(topic, form, support_acting_master).0
    }

    /// [`RouteTable::route_body`], and whether the body came from the cache (`false`: encoded
    /// for this call, or no route).
    pub fn lookup_route_body(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
    ) -> (Option<Bytes>, bool) {
        self.with_cached_body(topic, form, support_acting_master, |body, cached| {
            (body.cloned(), cached)
        })
    }

    /// [`RouteTable::route_body`], borrowed: `f` gets the body (`None`: no route) and whether it
    /// came from the cache.
    pub fn with_route_body<R>(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
        f: impl FnOnce(Option<&[u8]>, bool) -> R,
    ) -> R {
        self.with_cached_body(topic, form, support_acting_master, |body, cached| {
            f(body.map(|b| &b[..]), cached)
        })
    }

    /// The one road to a topic's cached body (see [`RouteTable::route_body`]); `f` also learns
    /// whether the body was cached (no encoding needed).
    fn with_cached_body<R>(
        &self,
        topic: &str,
        form: RouteForm,
        support_acting_master: bool,
        f: impl FnOnce(Option<&Bytes>, bool) -> R,
    ) -> R {
        let Some(entry) = self.topics.get(topic) else {
            return f(None, false);
        };
        let variant = (form as usize) * 2 + usize::from(support_acting_master);
        debug_assert!(variant < VARIANTS);
        // The list's bodies, unless the topic's body has something of its own: a static-topic
        // mapping, or the exception of the acting-master rewrite.
        let own = (support_acting_master && topic.starts_with(SYNC_BROKER_MEMBER_PREFIX))
            || (!self.mappings.is_empty() && self.mappings.contains_key(topic));
        let cache = if own { entry.own.get_or_init(Box::default) } else { &entry.queues.attached };
        let encoded = std::cell::Cell::new(false);
        let encode = || {
            encoded.set(true);
            self.pickup_route(topic, support_acting_master).map(|route| encode_route(&route, form))
        };
        cache.with_body(&self.bodies, self.broker_gen, variant, encode, |body| {
            f(body, body.is_some() && !encoded.get())
        })
    }

    /// Drops the queue lists no topic holds any more, and so their bodies, then the shared
    /// route bodies no cache holds any more; the number left.
    pub fn prune_route_bodies(&self) -> usize {
        self.lists.lock().sweep();
        self.bodies.prune()
    }

    /// Every group and cluster (GET_BROKER_CLUSTER_INFO).
    /// Java: `RouteInfoManager#getAllClusterInfo`
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self
                .groups
                .iter()
                .map(|(name, g)| (name.to_string(), g.to_broker_data()))
                .collect(),
            cluster_addr_table: self
                .clusters
                .iter()
                .map(|(c, names)| (c.to_string(), names.iter().map(|n| n.to_string()).collect()))
                .collect(),
        }
    }

    /// Every topic name (sorted).
    /// Java: `RouteInfoManager#getAllTopicList`
    pub fn all_topics(&self) -> TopicList {
        let mut topics: Vec<String> = self.topics.iter().map(|(t, _)| t.to_string()).collect();
        topics.sort_unstable();
        TopicList { broker_addr: None, topic_list: topics }
    }

    /// Topics with a queue on any group of `cluster` (empty for an unknown cluster).
    /// Java: `RouteInfoManager#getTopicsByCluster`
    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let Some(names) = self.clusters.get(cluster) else {
            return TopicList::default();
        };
        let mut topics: Vec<String> = self
            .topics
            .iter()
            .filter(|(_, entry)| entry.queues.iter().any(|(b, _)| names.contains(b)))
            .map(|(t, _)| t.to_string())
            .collect();
        topics.sort_unstable();
        TopicList { broker_addr: None, topic_list: topics }
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS: every cluster name and broker name, plus the lowest-id
    /// address of the first group that has one, "first" in the iteration order of Java's
    /// `brokerAddrTable` (so the client is sent to the same broker as by a Java nameserver).
    /// Java: `RouteInfoManager#getSystemTopicList`
    pub fn system_topics(&self) -> TopicList {
        let mut names: BTreeSet<String> = BTreeSet::new();
        for (cluster, brokers) in &self.clusters {
            names.insert(cluster.to_string());
            names.extend(brokers.iter().map(|b| b.to_string()));
        }
        let table_size = java_broker_table_size(self.groups.len());
        let broker_addr = self
            .groups
            .iter()
            .filter_map(|(name, g)| g.addrs.values().next().map(|addr| (name, addr)))
            .min_by_key(|(name, _)| (java_bucket(name, table_size), *name))
            .map(|(_, addr)| addr.to_string());
        TopicList { broker_addr, topic_list: names.into_iter().collect() }
    }

    /// Unit-topic lists (311/312/313), judged on the sysflag of each topic's first QueueData
    /// (the one of the smallest broker name).
    /// Java: `RouteInfoManager#getUnitTopics` / `#getHasUnitSubTopicList` / `#getHasUnitSubUnUnitTopicList`
    pub fn unit_topics(&self, kind: UnitKind) -> TopicList {
        let mut topics: Vec<String> = self
            .topics
            .iter()
            .filter(|(_, entry)| {
                entry.queues.first().is_some_and(|(_, spec)| kind.matches(spec.topic_sys_flag))
            })
            .map(|(t, _)| t.to_string())
            .collect();
        topics.sort_unstable();
        TopicList { broker_addr: None, topic_list: topics }
    }

    /// The members of a group (the cluster is echoed, not checked; unknown group ⇒ no members).
    /// Java: `RouteInfoManager#getBrokerMemberGroup`
    pub fn broker_member_group(
        &self,
        cluster: &str,
        broker_name: &str,
    ) -> GetBrokerMemberGroupResponseBody {
        let broker_addrs = self
            .groups
            .get(broker_name)
            .map(|g| g.addrs.iter().map(|(id, a)| (*id, a.to_string())).collect())
            .unwrap_or_default();
        GetBrokerMemberGroupResponseBody {
            broker_member_group: BrokerMemberGroup {
                broker_addrs,
                broker_name: broker_name.to_owned(),
                cluster: cluster.to_owned(),
            },
        }
    }
}

/// Java's acting-master rewrite (the tail of `pickupTopicRouteData`): if some group has members
/// but no master, each such group with acting master enabled whose queue is not writable shows
/// its lowest-id member under id 0.
fn apply_acting_master(route: &mut TopicRouteData) {
    if route.broker_datas.is_empty() || route.queue_datas.is_empty() {
        return;
    }
    let needed = route
        .broker_datas
        .iter()
        .any(|bd| !bd.broker_addrs.0.is_empty() && !bd.broker_addrs.0.contains_key(&0));
    if !needed {
        return;
    }
    for bd in &mut route.broker_datas {
        let addrs = &mut bd.broker_addrs.0;
        if addrs.is_empty() || addrs.contains_key(&0) || !bd.enable_acting_master {
            continue;
        }
        let Some(queue) = route.queue_datas.iter().find(|q| q.broker_name == bd.broker_name) else {
            continue;
        };
        if !perm::is_writeable(queue.perm) {
            if let Some((_, addr)) = addrs.pop_first() {
                addrs.insert(0, addr);
            }
        }
    }
}

/// Java `StringUtils.equalsIgnoreCase`: UTF-16 lengths equal and every unit equal after
/// upper-casing or lower-casing (one-to-one case mappings only, like `Character.toUpperCase`).
fn java_equals_ignore_case(a: &str, b: &str) -> bool {
    fn single(mut it: impl Iterator<Item = char>, fallback: char) -> char {
        match (it.next(), it.next()) {
            (Some(c), None) => c,
            _ => fallback,
        }
    }
    if a.encode_utf16().count() != b.encode_utf16().count() {
        return false;
    }
    a.chars().zip(b.chars()).all(|(x, y)| {
        if x == y {
            return true;
        }
        let (ux, uy) = (single(x.to_uppercase(), x), single(y.to_uppercase(), y));
        ux == uy || single(ux.to_lowercase(), ux) == single(uy.to_lowercase(), uy)
    })
}

/// Zone-aware routing for a client in `zone` (the server applies it to 105 answers when the
/// request has `__ZONE_MODE=true` and a non-blank `__ZONE_NAME`, then encodes the result as
/// legacy JSON). Groups keep their place when they have no master ("read from any slave") or
/// their zone equals `zone` ignoring case; the others go, with their queues and their
/// addresses' filter servers.
/// Java: `ZoneRouteRPCHook#filterByZoneName`
pub fn zone_filter(mut route: TopicRouteData, zone: &str) -> TopicRouteData {
    let (kept, removed): (Vec<_>, Vec<_>) =
        std::mem::take(&mut route.broker_datas).into_iter().partition(|bd| {
            !bd.broker_addrs.0.contains_key(&0)
                || bd.zone_name.as_deref().is_some_and(|z| java_equals_ignore_case(z, zone))
        });
    route.broker_datas = kept;
    let removed_names: BTreeSet<&str> = removed.iter().map(|bd| bd.broker_name.as_str()).collect();
    route.queue_datas.retain(|q| !removed_names.contains(q.broker_name.as_str()));
    for bd in &removed {
        for addr in bd.broker_addrs.0.values() {
            route.filter_server_table.remove(addr);
        }
    }
    route
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_ignore_case_matches_ascii_and_simple_unicode_only() {
        assert!(java_equals_ignore_case("Zone-A", "zONE-a"));
        assert!(java_equals_ignore_case("ÄRGER", "ärger"));
        assert!(!java_equals_ignore_case("zone-a", "zone-b"));
        assert!(!java_equals_ignore_case("straße", "STRASSE"));
        assert!(!java_equals_ignore_case("a", "ab"));
    }

    #[test]
    fn unit_kinds_read_the_two_flag_bits() {
        assert!(
            UnitKind::Unit.matches(1) && UnitKind::Unit.matches(3) && !UnitKind::Unit.matches(2)
        );
        assert!(
            UnitKind::HasUnitSub.matches(2)
                && UnitKind::HasUnitSub.matches(3)
                && !UnitKind::HasUnitSub.matches(1)
        );
        assert!(UnitKind::HasUnitSubNotUnit.matches(2) && !UnitKind::HasUnitSubNotUnit.matches(3));
    }
}

/// The table size of Java's `brokerAddrTable` (`new ConcurrentHashMap<>(128)`: 256 buckets,
/// doubled whenever `groups` reaches three quarters of it).
fn java_broker_table_size(groups: usize) -> usize {
    let mut size = 256;
    while groups >= size - size / 4 {
        size *= 2;
    }
    size
}

/// The bucket of a `String` key in a JDK `ConcurrentHashMap` of `table_size` buckets.
fn java_bucket(key: &str, table_size: usize) -> usize {
    let h = remoting::headers::java_string_hash(key);
    let spread = (h ^ ((h as u32) >> 16) as i32) & 0x7fff_ffff;
    spread as usize & (table_size - 1)
}

#[cfg(test)]
mod java_order_tests {
    use super::java_bucket;

    /// Buckets computed by the JDK for a 256-bucket table (the interop differential test saw
    /// Java choose broker-b first).
    #[test]
    fn broker_names_land_in_jdk_buckets() {
        assert_eq!(java_bucket("broker-b", 256), 88);
        assert_eq!(java_bucket("broker-a", 256), 91);
        assert_eq!(java_bucket("broker-legacy", 256), 212);
    }
}
