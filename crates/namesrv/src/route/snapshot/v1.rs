//! Format v1 (read only): the route tables as one JSON document after the header line, what
//! builds before #25 wrote. Its writer is test and measurement code: `route/tests/v1_writer.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use remoting::body::{DataVersion, QueueData, TopicQueueMappingInfo};
use serde::Deserialize;

use super::super::table::{Group, Live, QueueSpec, Registration, RouteTable, TopicEntry};
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
        let registration = Registration {
            data_version: record.data_version,
            conn: RESTORED_CONN,
            generation: table.next_generation(),
        };
        let live = Live::new(now_ms, record.timeout_ms, record.ha_server_addr, registration);
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
            let entry = TopicEntry::new(&topic, queues, &table.lists);
            table.topics.insert(Arc::new(entry));
        }
    }
    for record in payload.filters {
        let cluster = table.cluster_key(&record.cluster);
        table.filters.insert(&cluster, &Arc::from(record.addr), Arc::from(record.servers));
    }
    for (topic, by_broker) in payload.mappings {
        table.mappings.insert((Arc::from(topic), Arc::new(by_broker)));
    }
    table.mark_buckets();
    (table, written_at_ms)
}
