//! JSON bodies (Java `RemotingSerializable` subclasses) as serde types.
//!
//! Field order in each struct is alphabetical, which is the order fastjson writes properties in.
//! Missing properties take Java's defaults; unknown ones are ignored. Writing: [`to_legacy_json`] /
//! [`to_standard_json`] ([`json`]); reading: [`from_json`]; the compressed
//! RegisterBrokerBody: [`compressed`]; the body checksum: [`crc`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

pub mod compressed;
mod controller;
pub mod crc;
pub mod difference;
pub mod guide;
pub mod json;
mod lenient;
pub mod plain_topic;
pub mod register_digest;
pub mod skim;
pub mod table_digest;

pub use controller::*;
pub use crc::{body_crc32, body_crc32_matches, VersionFrame};
pub use json::{to_json, to_legacy_json, to_standard_json, write_json, JsonMode};
pub use lenient::from_json;

/// Why a body could not be decoded. Java turns each of these into
/// `RemotingCommandException("Failed to decode RegisterBrokerBody")` → SYSTEM_ERROR.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Malformed JSON, or JSON of the wrong shape.
    #[error("invalid JSON body: {0}")]
    Json(#[from] crate::fastjson::LenientJsonError),
    /// The compressed body is not a valid zlib stream.
    #[error("failed to inflate compressed body: {0}")]
    Inflate(std::io::Error),
    /// The compressed body ended before a part it announces (Java: "End of compressed data has reached").
    #[error("End of compressed data has reached")]
    Truncated,
    /// A negative length prefix in the compressed body.
    #[error("negative length {0} in compressed body")]
    NegativeLength(i32),
    /// The compressed body inflates to more than the limit.
    #[error("compressed body inflates to more than {0} bytes")]
    TooLarge(u64),
    /// The body carries more topics than [`BodyLimits::max_topics`].
    #[error("{count} topics exceed the limit of {max}")]
    TooManyTopics {
        /// The topics the body carries (or announces, compressed).
        count: u64,
        /// The limit.
        max: usize,
    },
    /// A compact TopicConfig line that Java's `TopicConfig#decode` cannot take (errata B2).
    #[error("bad compact topic config {line:?}: {reason}")]
    CompactTopicConfig {
        /// The line as received.
        line: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A TopicQueueMappingInfo in the compressed body has no `topic`.
    #[error("topic queue mapping without a topic")]
    MappingWithoutTopic,
    /// The request version is negative (Java fails in `MQVersion.value2Version`).
    #[error("negative request version {0}")]
    NegativeVersion(i32),
}

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
/// unquoted, in JDK `HashMap` iteration order; standard JSON (and plain serde_json) quotes them and
/// sorts numerically. Reading accepts quoted and unquoted keys and skips a `"$ref"` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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

/// An integer type usable as an [`IntKeyMap`] key: Java `Long` or `Integer`.
pub trait IntKey: Ord + Copy + FromStr + TryFrom<i64> + TryFrom<u64> + Serialize {
    /// Java `hashCode()` of the boxed key (`Long`: `(int)(v ^ (v >>> 32))`, `Integer`: `v`).
    fn java_hash(self) -> i32;
}

impl IntKey for i64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn java_hash(self) -> i32 {
        let v = self as u64;
        (v ^ (v >> 32)) as i32
    }
}

impl IntKey for i32 {
    fn java_hash(self) -> i32 {
        self
    }
}

/// Bucket index of `hash` in a JDK `HashMap` table of `capacity` (a power of two).
/// Java: `HashMap#hash` + `(n - 1) & hash`
#[allow(clippy::cast_sign_loss)]
fn jdk_bucket(hash: i32, capacity: usize) -> usize {
    let h = hash as u32;
    ((h ^ (h >> 16)) as usize) & (capacity - 1)
}

/// Table size of a JDK `HashMap` built with the default constructor after `len` puts: 16,
/// doubled whenever the size passes 0.75 of it.
fn jdk_capacity(len: usize) -> usize {
    let mut capacity = 16usize;
    while len.saturating_mul(4) > capacity.saturating_mul(3) {
        capacity = capacity.saturating_mul(2);
    }
    capacity
}

impl<K: IntKey, V> IntKeyMap<K, V> {
    /// Entries in the order a JDK `HashMap` filled in ascending key order iterates them: by
    /// bucket, and ascending within a bucket. TV-13: `{10, 2, 16}` → `16, 2, 10`.
    pub fn jdk_hash_order(&self) -> Vec<(&K, &V)> {
        let capacity = jdk_capacity(self.0.len());
        let mut entries: Vec<(&K, &V)> = self.0.iter().collect();
        // Stable: keeps ascending order within a bucket.
        entries.sort_by_key(|(k, _)| jdk_bucket(k.java_hash(), capacity));
        entries
    }
}

impl<K: IntKey, V: Serialize> Serialize for IntKeyMap<K, V> {
    /// Legacy mode: JDK `HashMap` order; otherwise numeric order. The key style (unquoted or
    /// quoted) is the formatter's business ([`json`]).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match json::current_mode() {
            JsonMode::Legacy => serializer.collect_map(self.jdk_hash_order()),
            JsonMode::Standard => serializer.collect_map(&self.0),
        }
    }
}

impl<'de, K: IntKey, V: Deserialize<'de>> Deserialize<'de> for IntKeyMap<K, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(IntKeyMapVisitor(PhantomData))
    }
}

struct IntKeyMapVisitor<K, V>(PhantomData<(K, V)>);

impl<'de, K: IntKey, V: Deserialize<'de>> Visitor<'de> for IntKeyMapVisitor<K, V> {
    type Value = IntKeyMap<K, V>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map with integer keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = BTreeMap::new();
        while let Some(key) = access.next_key_seed(IntKeySeed::<K>(PhantomData))? {
            match key {
                Some(k) => {
                    map.insert(k, access.next_value()?);
                }
                None => {
                    access.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(IntKeyMap(map))
    }
}

/// Reads one map key as `K`; `None` for fastjson's `"$ref"` key.
struct IntKeySeed<K>(PhantomData<K>);

impl<'de, K: IntKey> DeserializeSeed<'de> for IntKeySeed<K> {
    type Value = Option<K>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<K: IntKey> Visitor<'_> for IntKeySeed<K> {
    type Value = Option<K>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer map key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if v == "$ref" {
            return Ok(None);
        }
        v.trim().parse().map(Some).map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        K::try_from(v).map(Some).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        K::try_from(v).map(Some).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }
}

/// Broker id → `"ip:port"` (0 = master).
pub type BrokerAddrs = IntKeyMap<i64, String>;

/// Java `DataVersion`; equality compares all three fields like Java.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    #[serde(deserialize_with = "lenient::int")]
    pub counter: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub state_version: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub timestamp: i64,
}

/// Java `QueueData`: one broker group's queues of a topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    #[serde(deserialize_with = "lenient::text")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub write_queue_nums: i32,
}

/// Java `BrokerData`: a broker group and its members' addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_addrs: BrokerAddrs,
    #[serde(deserialize_with = "lenient::text")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::text")]
    pub cluster: String,
    #[serde(deserialize_with = "lenient::flag")]
    pub enable_acting_master: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub zone_name: Option<String>,
}

/// Java `TopicQueueMappingInfo` (static topics).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicQueueMappingInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub bname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curr_id_map: Option<IntKeyMap<i32, i32>>,
    #[serde(deserialize_with = "lenient::flag")]
    pub dirty: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub epoch: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub topic: Option<String>,
    #[serde(deserialize_with = "lenient::int")]
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
    #[serde(deserialize_with = "lenient::opt_text")]
    pub bname: Option<String>,
    #[serde(deserialize_with = "lenient::int")]
    pub end_offset: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub gen: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub logic_offset: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub queue_id: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub start_offset: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub time_of_end: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub time_of_start: i64,
}

/// Java `TopicQueueMappingDetail` (= `TopicQueueMappingInfo` + `hostedQueues`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicQueueMappingDetail {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub bname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub curr_id_map: Option<IntKeyMap<i32, i32>>,
    #[serde(deserialize_with = "lenient::flag")]
    pub dirty: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub epoch: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosted_queues: Option<IntKeyMap<i32, Vec<LogicQueueMappingItem>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub topic: Option<String>,
    #[serde(deserialize_with = "lenient::int")]
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
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_datas: Vec<BrokerData>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub order_topic_conf: Option<String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub queue_datas: Vec<QueueData>,
    /// rocketmq-rust names this `topicQueueMappingInfo`; accept both.
    #[serde(skip_serializing_if = "Option::is_none", alias = "topicQueueMappingInfo")]
    pub topic_queue_mapping_by_broker: Option<BTreeMap<String, TopicQueueMappingInfo>>,
}

/// Java `ClusterInfo`: the answer to GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// Java `TopicList`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicList {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub broker_addr: Option<String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_list: Vec<String>,
}

/// Java `KVTable`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KvTable {
    #[serde(deserialize_with = "lenient::or_default")]
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
    #[serde(deserialize_with = "lenient::flag")]
    pub order: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_filter_type: TopicFilterType,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "lenient::opt_text")]
    pub topic_name: Option<String>,
    #[serde(deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
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
    #[serde(deserialize_with = "lenient::or_default")]
    pub data_version: DataVersion,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
}

/// Java `TopicConfigAndMappingSerializeWrapper` (5.x brokers). Also reads the plain wrapper.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigAndMappingSerializeWrapper {
    #[serde(deserialize_with = "lenient::or_default")]
    pub data_version: DataVersion,
    #[serde(deserialize_with = "lenient::or_default")]
    pub mapping_data_version: DataVersion,
    /// Shared: the brokers of a master/slave pair (and of a cluster whose topics are created
    /// cluster-wide) send the same table, decoded once (see `difference::Skimmed::decode_whole`).
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_config_table: Arc<BTreeMap<String, TopicConfig>>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_queue_mapping_detail_map: BTreeMap<String, TopicQueueMappingDetail>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_queue_mapping_info_map: BTreeMap<String, TopicQueueMappingInfo>,
}

impl TopicConfigAndMappingSerializeWrapper {
    /// The topic table's configs that name their topic, with the name, in the table's order (a
    /// nameless one, on which Java's registration throws (§11 #29), is left out: the safe
    /// reading). Sized once: grown by doubling, its copies were most of the fresh memory the
    /// registration lane faulted in during S7's cold start at 1,000,000 topics (#25).
    pub fn named_topics(&self) -> Vec<(&str, &TopicConfig)> {
        let mut named = Vec::with_capacity(self.topic_config_table.len());
        let configs = self.topic_config_table.values();
        named.extend(configs.filter_map(|tc| Some((tc.topic_name.as_deref()?, tc))));
        named
    }
}

/// Java `RegisterBrokerBody` (uncompressed JSON form; see [`compressed`] for the zlib form).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    /// `None` when the broker sent `null` (Java: filter table left untouched).
    pub filter_server_list: Option<Vec<String>>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper,
}

impl Default for RegisterBrokerBody {
    fn default() -> Self {
        Self {
            filter_server_list: Some(Vec::new()),
            topic_config_serialize_wrapper: Default::default(),
        }
    }
}

/// Java `BrokerMemberGroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerMemberGroup {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_addrs: BrokerAddrs,
    #[serde(deserialize_with = "lenient::text")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::text")]
    pub cluster: String,
}

/// Java `GetBrokerMemberGroupResponseBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetBrokerMemberGroupResponseBody {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_member_group: BrokerMemberGroup,
}
