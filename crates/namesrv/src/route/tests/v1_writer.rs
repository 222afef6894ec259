//! The v1 route-snapshot writer, as builds before #25 wrote (JSON): test and measurement code
//! only (the server writes v2). Compiled into `route::snapshot` for tests and for the
//! `snapshot_cost` example (feature `snapshot-v1-writer`); the tests use it to make v1 files to
//! restore and as a canonical dump of a table.

use std::collections::BTreeMap;
use std::sync::Arc;

use remoting::body::{DataVersion, TopicQueueMappingInfo};
use serde::Serialize;

use super::super::table::{QueueSpec, RouteTable};
use super::MAGIC;

// The written form borrows from the table; the read form (`v1.rs`) owns its strings. Both have
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
            data_version: live.data_version(),
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
    let mut topics: Vec<_> = table.topics.iter().map(|(t, e)| (t, Queues(&e.queues))).collect();
    topics.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut mappings: Vec<_> = table.mappings.iter().map(|(t, m)| (t, &*m.1)).collect();
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
    let mut out = format!("{MAGIC} v1 len={} crc32={:08x}\n", json.len(), crc32fast::hash(&json))
        .into_bytes();
    out.extend_from_slice(&json);
    out
}
