//! Turning a `TopicRouteData` into the queues a producer writes to and a consumer reads from,
//! exactly as the Java client does. Pure: no sockets, no clock.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};

use remoting::body::{perm, TopicRouteData};

/// Broker id of a group's master (Java `MixAll.MASTER_ID`).
pub const MASTER_ID: i64 = 0;
/// Prefix of the mock broker names of static-topic logical queues (Java `MixAll.LOGICAL_QUEUE_MOCK_BROKER_PREFIX`).
pub const LOGICAL_QUEUE_MOCK_BROKER_PREFIX: &str = "__syslo__";
/// Endpoint of a static-topic logical queue that no broker hosts (Java `MixAll.LOGICAL_QUEUE_MOCK_BROKER_NAME_NOT_EXIST`).
pub const LOGICAL_QUEUE_MOCK_BROKER_NAME_NOT_EXIST: &str = "__syslo__none__";
const METADATA_SCOPE_GLOBAL: &str = "__global__";

/// One queue of a topic on one broker group (Java `MessageQueue`); ordered by topic, broker
/// name, queue id like Java's `compareTo`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageQueue {
    pub topic: String,
    pub broker_name: String,
    pub queue_id: i32,
}

impl MessageQueue {
    pub fn new(topic: impl Into<String>, broker_name: impl Into<String>, queue_id: i32) -> Self {
        Self { topic: topic.into(), broker_name: broker_name.into(), queue_id }
    }
}

/// What a producer knows about a topic (Java `TopicPublishInfo`): the route it came from, the
/// write queues in selection order, and a rotating index.
#[derive(Debug)]
pub struct PublishInfo {
    /// True when the queues come from an `orderTopicConf`.
    pub order_topic: bool,
    /// Write queues, in the order the Java client builds them.
    pub queues: Vec<MessageQueue>,
    /// Static topics: logical queue → the broker that hosts it (or
    /// [`LOGICAL_QUEUE_MOCK_BROKER_NAME_NOT_EXIST`]). Empty for ordinary topics.
    pub static_endpoints: BTreeMap<MessageQueue, String>,
    /// The route the queues were computed from.
    pub route: TopicRouteData,
    index: AtomicU32,
}

impl PublishInfo {
    /// Builds the publish info of `topic` from its route.
    ///
    /// Java: MQClientInstance#topicRouteData2TopicPublishInfo
    pub fn from_route(topic: &str, route: TopicRouteData) -> Self {
        let order_conf = route.order_topic_conf.as_deref().unwrap_or("");
        let mapping_present =
            route.topic_queue_mapping_by_broker.as_ref().is_some_and(|m| !m.is_empty());
        let mut static_endpoints = BTreeMap::new();
        let (order_topic, queues) = if !order_conf.is_empty() {
            (true, queues_from_order_conf(topic, order_conf))
        } else if route.order_topic_conf.is_none() && mapping_present {
            static_endpoints = static_topic_endpoints(topic, &route);
            let mut queues: Vec<MessageQueue> = static_endpoints.keys().cloned().collect();
            queues.sort_by_key(|q| q.queue_id);
            (false, queues)
        } else {
            (false, writable_master_queues(topic, &route))
        };
        Self { order_topic, queues, static_endpoints, route, index: AtomicU32::new(random_start()) }
    }

    /// True when there is at least one queue to write to (Java `TopicPublishInfo#ok`).
    pub fn ok(&self) -> bool {
        !self.queues.is_empty()
    }

    /// The next queue in rotation that passes `filter`, trying each queue at most once.
    ///
    /// Java: TopicPublishInfo#selectOneMessageQueue(QueueFilter...)
    pub fn select_filtered(
        &self,
        mut filter: impl FnMut(&MessageQueue) -> bool,
    ) -> Option<&MessageQueue> {
        let n = self.queues.len();
        for _ in 0..n {
            let q = &self.queues[self.next_index() % n];
            if filter(q) {
                return Some(q);
            }
        }
        None
    }

    /// The next queue in rotation, whatever its broker.
    ///
    /// Java: TopicPublishInfo#selectOneMessageQueue()
    pub fn select_any(&self) -> Option<&MessageQueue> {
        let n = self.queues.len();
        (n > 0).then(|| &self.queues[self.next_index() % n])
    }

    /// Restarts the rotation (Java `TopicPublishInfo#resetIndex`).
    pub fn reset_index(&self) {
        self.index.store(random_start(), Ordering::Relaxed);
    }

    /// The write-queue count of `broker_name` in the route, or -1 (Java `getWriteQueueNumsByBroker`).
    pub fn write_queue_nums_by_broker(&self, broker_name: &str) -> i32 {
        self.route
            .queue_datas
            .iter()
            .find(|q| q.broker_name == broker_name)
            .map_or(-1, |q| q.write_queue_nums)
    }

    /// The master address of `broker_name` in the route, if it has one.
    pub fn master_addr(&self, broker_name: &str) -> Option<&str> {
        self.route
            .broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| b.broker_addrs.0.get(&MASTER_ID))
            .map(String::as_str)
    }

    fn next_index(&self) -> usize {
        // Java ThreadLocalIndex: incrementAndGet() & Integer.MAX_VALUE.
        ((self.index.fetch_add(1, Ordering::Relaxed).wrapping_add(1)) & 0x7FFF_FFFF) as usize
    }
}

/// The queues a consumer reads: every readable QueueData, `0..readQueueNums`; for a static topic
/// the logical queues.
///
/// Java: MQClientInstance#topicRouteData2TopicSubscribeInfo
pub fn subscribe_queues(topic: &str, route: &TopicRouteData) -> BTreeSet<MessageQueue> {
    if route.topic_queue_mapping_by_broker.as_ref().is_some_and(|m| !m.is_empty()) {
        return static_topic_endpoints(topic, route).into_keys().collect();
    }
    route
        .queue_datas
        .iter()
        .filter(|qd| perm::is_readable(qd.perm))
        .flat_map(|qd| {
            (0..qd.read_queue_nums).map(move |i| MessageQueue::new(topic, &qd.broker_name, i))
        })
        .collect()
}

/// `"brokerA:4;brokerB:8"` → queues `brokerA/0..4`, `brokerB/0..8`, in that order. Malformed
/// items (Java would throw) are skipped.
fn queues_from_order_conf(topic: &str, conf: &str) -> Vec<MessageQueue> {
    let mut queues = Vec::new();
    for item in conf.split(';').filter(|s| !s.is_empty()) {
        let mut parts = item.split(':');
        let (Some(broker), Some(nums)) = (parts.next(), parts.next()) else { continue };
        let Ok(nums) = nums.trim().parse::<i32>() else { continue };
        queues.extend((0..nums).map(|i| MessageQueue::new(topic, broker, i)));
    }
    queues
}

/// Each writable QueueData (sorted by broker name) whose BrokerData has a master: `0..writeQueueNums`.
fn writable_master_queues(topic: &str, route: &TopicRouteData) -> Vec<MessageQueue> {
    let mut qds: Vec<_> = route.queue_datas.iter().collect();
    qds.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let mut queues = Vec::new();
    for qd in qds {
        if !perm::is_writeable(qd.perm) {
            continue;
        }
        let Some(bd) = route.broker_datas.iter().find(|b| b.broker_name == qd.broker_name) else {
            continue;
        };
        if !bd.broker_addrs.0.contains_key(&MASTER_ID) {
            continue;
        }
        queues
            .extend((0..qd.write_queue_nums).map(|i| MessageQueue::new(topic, &qd.broker_name, i)));
    }
    queues
}

/// The mock broker name of a mapping scope (Java `TopicQueueMappingUtils#getMockBrokerName`).
pub fn mock_broker_name(scope: &str) -> String {
    if scope == METADATA_SCOPE_GLOBAL {
        format!("{LOGICAL_QUEUE_MOCK_BROKER_PREFIX}{}", &scope[2..])
    } else {
        format!("{LOGICAL_QUEUE_MOCK_BROKER_PREFIX}{scope}")
    }
}

/// Static topic: logical queue → hosting broker name.
///
/// Java: ClientMetadata#topicRouteData2EndpointsForStaticTopic
fn static_topic_endpoints(topic: &str, route: &TopicRouteData) -> BTreeMap<MessageQueue, String> {
    let mut out = BTreeMap::new();
    let Some(mapping) = route.topic_queue_mapping_by_broker.as_ref() else { return out };
    let mut by_scope: HashMap<&str, Vec<&remoting::body::TopicQueueMappingInfo>> = HashMap::new();
    for info in mapping.values() {
        if let Some(scope) = info.scope.as_deref() {
            by_scope.entry(scope).or_default().push(info);
        }
    }
    for (scope, mut infos) in by_scope {
        let mock = mock_broker_name(scope);
        infos.sort_by_key(|i| std::cmp::Reverse(i.epoch));
        let mut max_total = 0;
        let max_total_epoch = -1;
        let mut hosted: HashMap<i32, &remoting::body::TopicQueueMappingInfo> = HashMap::new();
        for info in infos {
            if info.epoch >= max_total_epoch && info.total_queues > max_total {
                max_total = info.total_queues;
            }
            for &global_id in info.curr_id_map.iter().flat_map(|m| m.0.keys()) {
                match hosted.get(&global_id) {
                    Some(old) if old.epoch > info.epoch => {}
                    _ => {
                        hosted.insert(global_id, info);
                    }
                }
            }
        }
        for i in 0..max_total {
            let endpoint = hosted
                .get(&i)
                .and_then(|info| info.bname.clone())
                .unwrap_or_else(|| LOGICAL_QUEUE_MOCK_BROKER_NAME_NOT_EXIST.to_owned());
            out.insert(MessageQueue::new(topic, mock.clone(), i), endpoint);
        }
    }
    out
}

/// A start index that differs between publish infos (Java seeds `ThreadLocalIndex` randomly).
fn random_start() -> u32 {
    use std::hash::{BuildHasher, RandomState};
    (RandomState::new().hash_one(0u8) & 0x7FFF_FFFF) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::body::{BrokerData, IntKeyMap, QueueData, TopicQueueMappingInfo};

    fn broker(name: &str, ids: &[i64]) -> BrokerData {
        BrokerData {
            broker_addrs: ids.iter().map(|&id| (id, format!("127.0.0.1:{}", 10911 + id))).collect(),
            broker_name: name.into(),
            cluster: "DefaultCluster".into(),
            ..Default::default()
        }
    }

    fn queue(name: &str, perm: i32, read: i32, write: i32) -> QueueData {
        QueueData {
            broker_name: name.into(),
            perm,
            read_queue_nums: read,
            topic_sys_flag: 0,
            write_queue_nums: write,
        }
    }

    fn names(queues: &[MessageQueue]) -> Vec<String> {
        queues.iter().map(|q| format!("{}/{}", q.broker_name, q.queue_id)).collect()
    }

    #[test]
    fn writable_masters_give_write_queues_sorted_by_broker_name() {
        let route = TopicRouteData {
            broker_datas: vec![broker("b", &[0]), broker("a", &[0, 1])],
            queue_datas: vec![queue("b", 6, 1, 2), queue("a", 6, 4, 1)],
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route);
        assert!(!info.order_topic);
        assert_eq!(names(&info.queues), ["a/0", "b/0", "b/1"]);
    }

    #[test]
    fn slave_only_group_gets_no_write_queues_but_is_readable() {
        let route = TopicRouteData {
            broker_datas: vec![broker("a", &[0]), broker("s", &[1])],
            queue_datas: vec![queue("a", 6, 2, 2), queue("s", 6, 3, 3)],
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route.clone());
        assert_eq!(names(&info.queues), ["a/0", "a/1"]);
        let sub = subscribe_queues("T", &route);
        assert_eq!(sub.len(), 5);
        assert!(sub.contains(&MessageQueue::new("T", "s", 2)));
    }

    #[test]
    fn wiped_write_perm_removes_write_queues_only() {
        let route = TopicRouteData {
            broker_datas: vec![broker("a", &[0]), broker("b", &[0])],
            queue_datas: vec![queue("a", perm::READ, 2, 2), queue("b", 6, 1, 1)],
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route.clone());
        assert_eq!(names(&info.queues), ["b/0"]);
        assert_eq!(subscribe_queues("T", &route).len(), 3);
    }

    #[test]
    fn queue_data_without_broker_data_is_skipped() {
        let route =
            TopicRouteData { queue_datas: vec![queue("ghost", 6, 1, 1)], ..Default::default() };
        assert!(!PublishInfo::from_route("T", route).ok());
    }

    #[test]
    fn order_conf_wins_and_keeps_its_order() {
        let route = TopicRouteData {
            broker_datas: vec![broker("a", &[0])],
            queue_datas: vec![queue("a", 6, 8, 8)],
            order_topic_conf: Some("z:2;a:1;bad;x:y".into()),
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route);
        assert!(info.order_topic);
        assert_eq!(names(&info.queues), ["z/0", "z/1", "a/0"]);
    }

    #[test]
    fn empty_order_conf_falls_back_to_queue_datas() {
        let route = TopicRouteData {
            broker_datas: vec![broker("a", &[0])],
            queue_datas: vec![queue("a", 6, 1, 1)],
            order_topic_conf: Some(String::new()),
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route);
        assert!(!info.order_topic);
        assert_eq!(names(&info.queues), ["a/0"]);
    }

    #[test]
    fn static_mapping_gives_logical_queues_with_endpoints() {
        let info_a = TopicQueueMappingInfo {
            bname: Some("a".into()),
            curr_id_map: Some(IntKeyMap([(0, 0), (1, 1)].into_iter().collect())),
            epoch: 2,
            topic: Some("T".into()),
            total_queues: 3,
            ..Default::default()
        };
        let route = TopicRouteData {
            broker_datas: vec![broker("a", &[0])],
            queue_datas: vec![queue("a", 6, 2, 2)],
            topic_queue_mapping_by_broker: Some([("a".to_owned(), info_a)].into_iter().collect()),
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route);
        assert_eq!(
            names(&info.queues),
            ["__syslo__global__/0", "__syslo__global__/1", "__syslo__global__/2"]
        );
        assert_eq!(info.static_endpoints[&info.queues[1]], "a");
        assert_eq!(
            info.static_endpoints[&info.queues[2]],
            LOGICAL_QUEUE_MOCK_BROKER_NAME_NOT_EXIST
        );
    }

    #[test]
    fn rotation_visits_every_queue() {
        let route = TopicRouteData {
            broker_datas: vec![broker("a", &[0])],
            queue_datas: vec![queue("a", 6, 4, 4)],
            ..Default::default()
        };
        let info = PublishInfo::from_route("T", route);
        let seen: BTreeSet<i32> =
            (0..4).filter_map(|_| info.select_any().map(|q| q.queue_id)).collect();
        assert_eq!(seen.len(), 4);
        assert!(info.select_filtered(|q| q.broker_name == "nope").is_none());
    }
}
