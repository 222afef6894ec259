//! Format v1 (read only): the route tables as one JSON document after the header line, what
//! builds before #25 wrote. Its writer is kept for the tests (a v1 file made by the old code
//! path must restore identically) and for the measurement example (feature
//! `snapshot-v1-writer`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use remoting::body::{DataVersion, QueueData, TopicQueueMappingInfo};
use serde::Deserialize;

use super::super::table::{Group, Live, QueueSpec, RouteTable, TopicEntry};
use super::{SnapshotError, RESTORED_CONN};

/// The table of a v1 payload (the JSON after the header line) and when it was written.
pub(super) fn read(json: &[u8], now_ms: u64) -> Result<(RouteTable, u64), SnapshotError> {
    let payload: Payload = serde_json::from_slice(json)?;
    Ok(restore(payload, now_ms))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    written_at_ms: u64,
    /// Cluster → broker names.
    clusters: BTreeMap<String, BTreeSet<String>>,
    groups: Vec<GroupRecord>,
    live: Vec<LiveRecord>,
    /// Topic → its queues, one per broker group.
    topics: BTreeMap<String, Vec<QueueData>>,
    filters: Vec<FilterRecord>,
    /// Topic → broker name → mapping.
    mappings: BTreeMap<String, BTreeMap<String, TopicQueueMappingInfo>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupRecord {
    cluster: String,
    name: String,
    addrs: BTreeMap<i64, String>,
    zone_name: Option<String>,
    enable_acting_master: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LiveRecord {
    cluster: String,
    addr: String,
    timeout_ms: i64,
    data_version: DataVersion,
    ha_server_addr: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FilterRecord {
    cluster: String,
    addr: String,
    servers: Vec<String>,
}

fn restore(payload: Payload, now_ms: u64) -> (RouteTable, u64) {
    let mut table = RouteTable::new();
    let written_at_ms = payload.written_at_ms;
    for (cluster, names) in payload.clusters {
        let names = names.into_iter().map(|n| Arc::from(n.as_str())).collect();
        table.clusters.insert(Arc::from(cluster.as_str()), names);
    }
    for record in payload.groups {
        let cluster = table.cluster_key(&record.cluster);
        let name = table
            .clusters
            .get(&cluster)
            .and_then(|names| names.get(record.name.as_str()).cloned())
            .unwrap_or_else(|| Arc::from(record.name.as_str()));
        let mut group = Group::new(cluster, name.clone());
        group.addrs = record.addrs.into_iter().map(|(id, a)| (id, Arc::from(a))).collect();
        group.zone_name = record.zone_name;
        group.enable_acting_master = record.enable_acting_master;
        table.groups.insert(name, Arc::new(group));
    }
    for record in payload.live {
        let cluster = table.cluster_key(&record.cluster);
        let generation = table.next_generation();
        let live = Live {
            last_update_ms: AtomicU64::new(now_ms),
            timeout_ms: record.timeout_ms,
            data_version: record.data_version,
            conn: RESTORED_CONN,
            ha_server_addr: record.ha_server_addr,
            generation,
            unchanged_stamp: None,
        };
        table.live.insert(&cluster, &Arc::from(record.addr), Arc::new(live));
    }
    for (topic, queues) in payload.topics {
        let queues: Vec<_> = queues
            .iter()
            .map(|qd| {
                let broker = table
                    .groups
                    .get_key_value(qd.broker_name.as_str())
                    .map_or_else(|| Arc::from(qd.broker_name.as_str()), |(k, _)| k.clone());
                (broker, QueueSpec::from_queue_data(qd))
            })
            .collect();
        if !queues.is_empty() {
            table.topics.insert(Arc::from(topic), Arc::new(TopicEntry::new(queues)));
        }
    }
    for record in payload.filters {
        let cluster = table.cluster_key(&record.cluster);
        table.filters.insert(&cluster, &Arc::from(record.addr), Arc::from(record.servers));
    }
    for (topic, by_broker) in payload.mappings {
        table.mappings.insert(Arc::from(topic), Arc::new(by_broker));
    }
    (table, written_at_ms)
}

#[cfg(any(test, feature = "snapshot-v1-writer"))]
pub use writer::to_v1_snapshot;

/// The v1 writer, as it was (test and measurement only).
#[cfg(any(test, feature = "snapshot-v1-writer"))]
mod writer {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use remoting::body::{DataVersion, TopicQueueMappingInfo};
    use serde::Serialize;

    use super::super::super::table::{QueueSpec, RouteTable};
    use super::super::MAGIC;

    // The written form borrows from the table; the read form (below) owns its strings. Both have
    // the same field names.

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct PayloadOut<'a> {
        written_at_ms: u64,
        clusters: Sorted<&'a str, Vec<&'a str>>,
        groups: Vec<GroupOut<'a>>,
        live: Vec<LiveOut<'a>>,
        topics: Sorted<&'a str, Queues<'a>>,
        filters: Vec<FilterOut<'a>>,
        mappings: Sorted<&'a str, &'a BTreeMap<String, TopicQueueMappingInfo>>,
    }

    /// Entries already in key order, written as a JSON object.
    struct Sorted<K, V>(Vec<(K, V)>);

    impl<K: Serialize, V: Serialize> Serialize for Sorted<K, V> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
        }
    }

    /// A topic's queues, written as `QueueData` objects.
    struct Queues<'a>(&'a [(Arc<str>, QueueSpec)]);

    impl Serialize for Queues<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_seq(self.0.iter().map(|(broker, spec)| QueueOut {
                broker_name: broker,
                perm: spec.perm,
                read_queue_nums: spec.read_queue_nums,
                topic_sys_flag: spec.topic_sys_flag,
                write_queue_nums: spec.write_queue_nums,
            }))
        }
    }

    /// `QueueData`'s fields, borrowed.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct QueueOut<'a> {
        broker_name: &'a str,
        perm: i32,
        read_queue_nums: i32,
        topic_sys_flag: i32,
        write_queue_nums: i32,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct GroupOut<'a> {
        cluster: &'a str,
        name: &'a str,
        addrs: Sorted<i64, &'a str>,
        zone_name: Option<&'a str>,
        enable_acting_master: bool,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct LiveOut<'a> {
        cluster: &'a str,
        addr: &'a str,
        timeout_ms: i64,
        data_version: DataVersion,
        ha_server_addr: &'a str,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct FilterOut<'a> {
        cluster: &'a str,
        addr: &'a str,
        servers: &'a [String],
    }

    /// The v1 snapshot bytes of `table`, stamped `written_at_ms`, exactly as builds before #25
    /// wrote them: serialized from borrowed views of the table, in sorted order.
    pub fn to_v1_snapshot(table: &RouteTable, written_at_ms: u64) -> Vec<u8> {
        let mut live: Vec<_> = table
            .live
            .iter()
            .map(|(cluster, addr, live)| LiveOut {
                cluster,
                addr,
                timeout_ms: live.timeout_ms,
                data_version: live.data_version,
                ha_server_addr: &live.ha_server_addr,
            })
            .collect();
        live.sort_unstable_by(|a, b| (a.cluster, a.addr).cmp(&(b.cluster, b.addr)));
        let mut filters: Vec<_> = table
            .filters
            .iter()
            .map(|(cluster, addr, servers)| FilterOut { cluster, addr, servers })
            .collect();
        filters.sort_unstable_by(|a, b| (a.cluster, a.addr).cmp(&(b.cluster, b.addr)));
        let mut topics: Vec<_> =
            table.topics.iter().map(|(t, e)| (&**t, Queues(&e.queues))).collect();
        topics.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut mappings: Vec<_> = table.mappings.iter().map(|(t, m)| (&**t, &**m)).collect();
        mappings.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let payload = PayloadOut {
            written_at_ms,
            clusters: Sorted(
                table
                    .clusters
                    .iter()
                    .map(|(c, names)| (&**c, names.iter().map(|n| &**n).collect()))
                    .collect(),
            ),
            groups: table
                .groups
                .values()
                .map(|g| GroupOut {
                    cluster: &g.cluster,
                    name: &g.name,
                    addrs: Sorted(g.addrs.iter().map(|(id, a)| (*id, &**a)).collect()),
                    zone_name: g.zone_name.as_deref(),
                    enable_acting_master: g.enable_acting_master,
                })
                .collect(),
            live,
            topics: Sorted(topics),
            filters,
            mappings: Sorted(mappings),
        };
        // Serializing plain data into a Vec cannot fail.
        let json = serde_json::to_vec(&payload).unwrap_or_default();
        let mut out =
            format!("{MAGIC} v1 len={} crc32={:08x}\n", json.len(), crc32fast::hash(&json))
                .into_bytes();
        out.extend_from_slice(&json);
        out
    }
}
