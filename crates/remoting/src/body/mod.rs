//! JSON bodies (Java `RemotingSerializable` subclasses) as serde types.
//!
//! Field order in each struct is alphabetical, which is the order fastjson writes properties in.
//! Missing properties take Java's defaults; unknown ones are ignored.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// Permission bits of `QueueData.perm` / `TopicConfig.perm` (Java `PermName`).
pub mod perm {
    pub const PRIORITY: i32 = 8;
    pub const READ: i32 = 4;
    pub const WRITE: i32 = 2;
    pub const INHERIT: i32 = 1;

    pub fn is_readable(perm: i32) -> bool {
        perm & READ == READ
    }

    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE == WRITE
    }
}

/// `topicSysFlag` bits (Java `TopicSysFlag`).
pub mod sys_flag {
    pub const UNIT: i32 = 1;
    pub const UNIT_SUB: i32 = 2;
}

/// A map with integer keys (Java `Map<Long,…>` / `Map<Integer,…>`). Legacy JSON writes its keys
/// unquoted; standard JSON quotes them and sorts numerically.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct IntKeyMap<K: Ord, V>(pub BTreeMap<K, V>);

impl<K: Ord, V> IntKeyMap<K, V> {
    pub fn new() -> Self {
        Self(BTreeMap::new())
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for IntKeyMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// Broker id → `"ip:port"` (0 = master).
pub type BrokerAddrs = IntKeyMap<i64, String>;

/// Java `DataVersion`; equality compares all three fields like Java.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    pub counter: i64,
    pub state_version: i64,
    pub timestamp: i64,
}

/// Java `QueueData`: one broker group's queues of a topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    pub broker_name: String,
    pub perm: i32,
    pub read_queue_nums: i32,
    pub topic_sys_flag: i32,
    pub write_queue_nums: i32,
}

/// Java `BrokerData`: a broker group and its members' addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    pub broker_addrs: BrokerAddrs,
    pub broker_name: String,
    pub cluster: String,
    pub enable_acting_master: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

/// Java `TopicQueueMappingInfo` (static topics).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicQueueMappingInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curr_id_map: Option<IntKeyMap<i32, i32>>,
    pub dirty: bool,
    pub epoch: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub total_queues: i32,
}

/// fastjson's default for `TopicQueueMappingInfo.scope`.
pub const MAPPING_SCOPE_GLOBAL: &str = "__global__";

impl Default for TopicQueueMappingInfo {
    fn default() -> Self {
        Self {
            bname: None,
            curr_id_map: None,
            dirty: false,
            epoch: 0,
            scope: Some(MAPPING_SCOPE_GLOBAL.to_owned()),
            topic: None,
            total_queues: 0,
        }
    }
}

/// Java `LogicQueueMappingItem`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LogicQueueMappingItem {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bname: Option<String>,
    pub end_offset: i64,
    pub gen: i32,
    pub logic_offset: i64,
    pub queue_id: i32,
    pub start_offset: i64,
    pub time_of_end: i64,
    pub time_of_start: i64,
}

/// Java `TopicQueueMappingDetail` (= `TopicQueueMappingInfo` + `hostedQueues`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicQueueMappingDetail {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curr_id_map: Option<IntKeyMap<i32, i32>>,
    pub dirty: bool,
    pub epoch: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosted_queues: Option<IntKeyMap<i32, Vec<LogicQueueMappingItem>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub total_queues: i32,
}

impl Default for TopicQueueMappingDetail {
    fn default() -> Self {
        Self {
            bname: None,
            curr_id_map: None,
            dirty: false,
            epoch: 0,
            hosted_queues: None,
            scope: Some(MAPPING_SCOPE_GLOBAL.to_owned()),
            topic: None,
            total_queues: 0,
        }
    }
}

/// Java `TopicRouteData`: the answer to GET_ROUTEINFO_BY_TOPIC.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    pub broker_datas: Vec<BrokerData>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<QueueData>,
    /// rocketmq-rust names this `topicQueueMappingInfo`; accept both.
    #[serde(skip_serializing_if = "Option::is_none", alias = "topicQueueMappingInfo")]
    pub topic_queue_mapping_by_broker: Option<BTreeMap<String, TopicQueueMappingInfo>>,
}

/// Java `ClusterInfo`: the answer to GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// Java `TopicList`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    pub topic_list: Vec<String>,
}

/// Java `KVTable`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KvTable {
    pub table: BTreeMap<String, String>,
}

/// Java `TopicFilterType`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TopicFilterType {
    #[default]
    #[serde(rename = "SINGLE_TAG")]
    SingleTag,
    #[serde(rename = "MULTI_TAG")]
    MultiTag,
}

/// Java `TopicConfig` as a broker sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<BTreeMap<String, String>>,
    pub order: bool,
    pub perm: i32,
    pub read_queue_nums: i32,
    pub topic_filter_type: TopicFilterType,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_name: Option<String>,
    pub topic_sys_flag: i32,
    pub write_queue_nums: i32,
}

impl Default for TopicConfig {
    fn default() -> Self {
        Self {
            attributes: Some(BTreeMap::new()),
            order: false,
            perm: perm::READ | perm::WRITE,
            read_queue_nums: 16,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_name: None,
            topic_sys_flag: 0,
            write_queue_nums: 16,
        }
    }
}

impl TopicConfig {
    /// Java `new TopicConfig(name)`: the defaults with a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self { topic_name: Some(name.into()), ..Self::default() }
    }
}

/// Java `TopicConfigSerializeWrapper` (pre-5.0 brokers, and pre-V3_0_11 bare bodies).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigSerializeWrapper {
    pub data_version: DataVersion,
    pub topic_config_table: BTreeMap<String, TopicConfig>,
}

/// Java `TopicConfigAndMappingSerializeWrapper` (5.x brokers). Also reads the plain wrapper.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigAndMappingSerializeWrapper {
    pub data_version: DataVersion,
    pub mapping_data_version: DataVersion,
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    pub topic_queue_mapping_detail_map: BTreeMap<String, TopicQueueMappingDetail>,
    pub topic_queue_mapping_info_map: BTreeMap<String, TopicQueueMappingInfo>,
}

/// Java `RegisterBrokerBody` (uncompressed JSON form; see [`compressed`] for the zlib form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    /// `None` when the broker sent `null` (Java: filter table left untouched).
    pub filter_server_list: Option<Vec<String>>,
    pub topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper,
}

impl Default for RegisterBrokerBody {
    fn default() -> Self {
        Self { filter_server_list: Some(Vec::new()), topic_config_serialize_wrapper: Default::default() }
    }
}

/// Java `BrokerMemberGroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerMemberGroup {
    pub broker_addrs: BrokerAddrs,
    pub broker_name: String,
    pub cluster: String,
}

/// Java `GetBrokerMemberGroupResponseBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetBrokerMemberGroupResponseBody {
    pub broker_member_group: BrokerMemberGroup,
}
