//! The controller's JSON bodies (Java `SyncStateSet`, `ElectMasterResponseBody`,
//! `BrokerReplicasInfo`, `EpochEntryCache`, `EpochEntry`), fields in fastjson's (alphabetical)
//! order. Java writes them with fastjson's default features: nulls left out, `Map<Long,…>` keys
//! unquoted and `Set<Long>` in JDK `HashSet` order ([`to_legacy_json`](super::to_legacy_json)).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use super::{jdk_bucket, jdk_capacity, json, lenient, BrokerMemberGroup, IntKey, JsonMode};

/// A Java `Set<Long>` of broker ids. Legacy JSON writes it in JDK `HashSet` iteration order,
/// standard JSON in ascending order; reading accepts numbers and numeric strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LongSet(pub BTreeSet<i64>);

impl LongSet {
    /// The ids in the order a JDK `HashSet` built from them iterates them.
    pub fn jdk_hash_order(&self) -> Vec<i64> {
        let capacity = jdk_capacity(self.0.len());
        let mut ids: Vec<i64> = self.0.iter().copied().collect();
        // Stable: ascending within a bucket.
        ids.sort_by_key(|id| jdk_bucket(id.java_hash(), capacity));
        ids
    }
}

impl FromIterator<i64> for LongSet {
    fn from_iter<I: IntoIterator<Item = i64>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl Serialize for LongSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ids = match json::current_mode() {
            JsonMode::Legacy => self.jdk_hash_order(),
            JsonMode::Standard => self.0.iter().copied().collect(),
        };
        let mut seq = serializer.serialize_seq(Some(ids.len()))?;
        for id in ids {
            seq.serialize_element(&id)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for LongSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Ids;
        impl<'de> Visitor<'de> for Ids {
            type Value = LongSet;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of broker ids")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LongSet, A::Error> {
                let mut ids = BTreeSet::new();
                while let Some(id) = seq.next_element::<LenientId>()? {
                    ids.insert(id.0);
                }
                Ok(LongSet(ids))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<LongSet, E> {
                Ok(LongSet::default())
            }
        }
        deserializer.deserialize_any(Ids)
    }
}

/// One id of a [`LongSet`], read like fastjson reads a `Long`.
struct LenientId(i64);

impl<'de> Deserialize<'de> for LenientId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        lenient::int(d).map(LenientId)
    }
}

/// Java `SyncStateSet`: the body of 1001 (both ways), 1003/1004 responses and 1008.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncStateSet {
    #[serde(deserialize_with = "lenient::or_default")]
    pub sync_state_set: LongSet,
    #[serde(deserialize_with = "lenient::int")]
    pub sync_state_set_epoch: i32,
}

/// Java `ElectMasterResponseBody`: the body of a 1002 response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ElectMasterResponseBody {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_member_group: Option<BrokerMemberGroup>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub sync_state_set: LongSet,
}

/// Java `BrokerReplicasInfo`: the body of a 1006 response, per broker name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerReplicasInfo {
    #[serde(deserialize_with = "lenient::or_default")]
    pub replicas_info_table: BTreeMap<String, ReplicasInfo>,
}

/// Java `BrokerReplicasInfo.ReplicasInfo`: one group's master and replicas.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicasInfo {
    #[serde(deserialize_with = "lenient::or_default")]
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_text")]
    pub master_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_int")]
    pub master_broker_id: Option<i64>,
    #[serde(deserialize_with = "lenient::int")]
    pub master_epoch: i32,
    #[serde(deserialize_with = "lenient::or_default")]
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(deserialize_with = "lenient::int")]
    pub sync_state_set_epoch: i32,
}

/// Java `BrokerReplicasInfo.ReplicaIdentity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicaIdentity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alive: Option<bool>,
    #[serde(deserialize_with = "lenient::text")]
    pub broker_address: String,
    #[serde(deserialize_with = "lenient::int")]
    pub broker_id: i64,
    #[serde(deserialize_with = "lenient::text")]
    pub broker_name: String,
}

/// Java `EpochEntryCache`: a broker's answer to GET_BROKER_EPOCH_CACHE (1007).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EpochEntryCache {
    #[serde(deserialize_with = "lenient::int")]
    pub broker_id: i64,
    #[serde(deserialize_with = "lenient::text")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::text")]
    pub cluster_name: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub epoch_list: Vec<EpochEntry>,
    #[serde(deserialize_with = "lenient::int")]
    pub max_offset: i64,
}

/// Java `EpochEntry`: the commit-log offsets a master epoch covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EpochEntry {
    #[serde(deserialize_with = "lenient::int")]
    pub end_offset: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub epoch: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub start_offset: i64,
}

impl Default for EpochEntry {
    /// Java's defaults: `endOffset` = `Long.MAX_VALUE` (the current epoch).
    fn default() -> Self {
        Self { end_offset: i64::MAX, epoch: 0, start_offset: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{from_json, to_legacy_json, BrokerAddrs};

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn sync_state_set_is_written_like_fastjson() {
        let s = SyncStateSet {
            sync_state_set: [3, 1, 2].into_iter().collect(),
            sync_state_set_epoch: 2,
        };
        assert_eq!(text(to_legacy_json(&s)), r#"{"syncStateSet":[1,2,3],"syncStateSetEpoch":2}"#);
        assert_eq!(
            from_json::<SyncStateSet>(br#"{"syncStateSet":["2",1],"syncStateSetEpoch":"4"}"#)
                .expect("decode"),
            SyncStateSet { sync_state_set: [1, 2].into_iter().collect(), sync_state_set_epoch: 4 }
        );
    }

    /// A JDK HashSet of capacity 16 puts 17 in bucket 1, before 2.
    #[test]
    fn long_sets_iterate_in_jdk_hash_set_order() {
        let s: LongSet = [1, 2, 17, 16].into_iter().collect();
        assert_eq!(s.jdk_hash_order(), [16, 1, 17, 2]);
    }

    #[test]
    fn elect_master_body_leaves_out_a_missing_member_group() {
        let mut body = ElectMasterResponseBody {
            broker_member_group: None,
            sync_state_set: [1].into_iter().collect(),
        };
        assert_eq!(text(to_legacy_json(&body)), r#"{"syncStateSet":[1]}"#);
        body.broker_member_group = Some(BrokerMemberGroup {
            broker_addrs: BrokerAddrs::from_iter([(1, "127.0.0.1:30911".to_owned())]),
            broker_name: "broker-a".into(),
            cluster: "c".into(),
        });
        assert_eq!(
            text(to_legacy_json(&body)),
            r#"{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:30911"},"brokerName":"broker-a","cluster":"c"},"syncStateSet":[1]}"#
        );
        assert_eq!(
            from_json::<ElectMasterResponseBody>(&to_legacy_json(&body)).expect("decode"),
            body
        );
    }

    #[test]
    fn replicas_info_leaves_out_an_absent_master() {
        let mut info = BrokerReplicasInfo::default();
        info.replicas_info_table.insert(
            "broker-a".into(),
            ReplicasInfo {
                in_sync_replicas: vec![],
                master_address: None,
                master_broker_id: None,
                master_epoch: 2,
                not_in_sync_replicas: vec![ReplicaIdentity {
                    alive: Some(false),
                    broker_address: "a:1".into(),
                    broker_id: 1,
                    broker_name: "broker-a".into(),
                }],
                sync_state_set_epoch: 3,
            },
        );
        let json = text(to_legacy_json(&info));
        assert_eq!(
            json,
            r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[],"masterEpoch":2,"notInSyncReplicas":[{"alive":false,"brokerAddress":"a:1","brokerId":1,"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}"#
        );
        assert_eq!(from_json::<BrokerReplicasInfo>(json.as_bytes()).expect("decode"), info);
    }

    #[test]
    fn epoch_entries_default_to_an_open_end() {
        let cache: EpochEntryCache = from_json(
            br#"{"brokerId":1,"brokerName":"b","clusterName":"c","epochList":[{"epoch":1,"startOffset":0}],"maxOffset":9}"#,
        )
        .expect("decode");
        assert_eq!(
            cache.epoch_list,
            vec![EpochEntry { end_offset: i64::MAX, epoch: 1, start_offset: 0 }]
        );
    }
}
