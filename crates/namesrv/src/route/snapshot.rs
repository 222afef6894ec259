//! The route snapshot: the route tables as bytes and back, for a warm restart. Pure: the
//! server's `snapshot.rs` owns the file, the schedule and the clock.
//!
//! Format (version 1): one header line, then a JSON document.
//!
//! ```text
//! rocketmq-namesrv-rs route snapshot v1 len=<payload bytes> crc32=<8 hex digits>\n
//! {"writtenAtMs":…,"clusters":{…},"groups":[…],"live":[…],"topics":{…},"filters":[…],"mappings":{…}}
//! ```
//!
//! The header makes a truncated or altered file detectable (length and CRC32 of the payload)
//! and names the format version, so a later version can refuse or convert an older file. The
//! JSON stays readable by an operator (`tail -n +2 routes.snapshot | jq`).
//!
//! What is kept: every table Java's `RouteInfoManager` has (clusters, broker groups, live
//! brokers with their DataVersion, heartbeat timeout and HA address, topic queues, filter
//! servers, static-topic mappings). What is not: liveness stamps (a restored broker is live
//! from the restore time on, and expires by its heartbeat timeout unless it registers again),
//! connections (a restored entry has none: [`RESTORED_CONN`]) and the digests that let an
//! unchanged re-registration skip decoding (the first registration after a restart runs the
//! full algorithm).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use remoting::body::{DataVersion, QueueData, TopicQueueMappingInfo};
use serde::{Deserialize, Serialize};

use super::table::{Group, Live, QueueSpec, RouteTable, TopicEntry};
use super::ConnId;

/// The format version written by this build.
pub const FORMAT_VERSION: u32 = 1;

/// The connection of a restored live entry: none (connection ids start at 1), so no connection
/// close ever unregisters it; only expiry or a new registration replaces it.
pub const RESTORED_CONN: ConnId = 0;

const MAGIC: &str = "rocketmq-namesrv-rs route snapshot";

/// Why snapshot bytes could not be restored.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The first line is not a snapshot header.
    #[error("not a route snapshot (bad header line)")]
    Header,
    /// Written by a format this build does not read.
    #[error("route snapshot format v{0} is not supported (this build reads v{FORMAT_VERSION})")]
    Version(u32),
    /// The payload is shorter or longer than the header says (a torn write).
    #[error("route snapshot payload is {actual} bytes, the header says {expected}")]
    Length { expected: usize, actual: usize },
    /// The payload's CRC32 differs from the header's.
    #[error("route snapshot checksum mismatch (header {expected:08x}, payload {actual:08x})")]
    Checksum { expected: u32, actual: u32 },
    /// The payload is not the expected JSON.
    #[error("route snapshot payload: {0}")]
    Json(#[from] serde_json::Error),
}

/// What a restored snapshot held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// When it was written (the writer's wall-clock milliseconds).
    pub written_at_ms: u64,
    pub topics: usize,
    pub groups: usize,
    pub live: usize,
}

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

impl RouteTable {
    /// The snapshot bytes of this table, stamped `written_at_ms` (see the module docs).
    /// Serialized from borrowed views of the table (no string is copied), in sorted order.
    pub fn to_snapshot(&self, written_at_ms: u64) -> Vec<u8> {
        let mut live: Vec<_> = self
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
        let mut filters: Vec<_> = self
            .filters
            .iter()
            .map(|(cluster, addr, servers)| FilterOut { cluster, addr, servers })
            .collect();
        filters.sort_unstable_by(|a, b| (a.cluster, a.addr).cmp(&(b.cluster, b.addr)));
        let mut topics: Vec<_> =
            self.topics.iter().map(|(t, e)| (&**t, Queues(&e.queues))).collect();
        topics.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let mut mappings: Vec<_> = self.mappings.iter().map(|(t, m)| (&**t, &**m)).collect();
        mappings.sort_unstable_by(|a, b| a.0.cmp(b.0));
        let payload = PayloadOut {
            written_at_ms,
            clusters: Sorted(
                self.clusters
                    .iter()
                    .map(|(c, names)| (&**c, names.iter().map(|n| &**n).collect()))
                    .collect(),
            ),
            groups: self
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
        let mut out = format!(
            "{MAGIC} v{FORMAT_VERSION} len={} crc32={:08x}\n",
            json.len(),
            crc32fast::hash(&json)
        )
        .into_bytes();
        out.extend_from_slice(&json);
        out
    }

    /// The table held by snapshot `bytes`, every live broker stamped alive at `now_ms` with no
    /// connection; errors for a bad header, an unknown version, a torn or altered payload.
    pub fn from_snapshot(bytes: &[u8], now_ms: u64) -> Result<(Self, SnapshotInfo), SnapshotError> {
        let newline = memchr::memchr(b'\n', bytes).ok_or(SnapshotError::Header)?;
        let header = std::str::from_utf8(&bytes[..newline]).map_err(|_| SnapshotError::Header)?;
        let (expected_len, expected_crc) = parse_header(header)?;
        let json = &bytes[newline + 1..];
        if json.len() != expected_len {
            return Err(SnapshotError::Length { expected: expected_len, actual: json.len() });
        }
        let actual = crc32fast::hash(json);
        if actual != expected_crc {
            return Err(SnapshotError::Checksum { expected: expected_crc, actual });
        }
        let payload: Payload = serde_json::from_slice(json)?;
        Ok(Self::restore(payload, now_ms))
    }

    fn restore(payload: Payload, now_ms: u64) -> (Self, SnapshotInfo) {
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
        let info = SnapshotInfo {
            written_at_ms,
            topics: table.topics.len(),
            groups: table.groups.len(),
            live: table.live.len(),
        };
        (table, info)
    }
}

/// `MAGIC v<version> len=<n> crc32=<hex>` → (n, crc); the version is checked first, so a
/// later format may change the rest of the line.
fn parse_header(line: &str) -> Result<(usize, u32), SnapshotError> {
    let rest =
        line.strip_prefix(MAGIC).and_then(|r| r.strip_prefix(" v")).ok_or(SnapshotError::Header)?;
    let mut parts = rest.split(' ');
    let version: u32 = parts.next().and_then(|v| v.parse().ok()).ok_or(SnapshotError::Header)?;
    if version != FORMAT_VERSION {
        return Err(SnapshotError::Version(version));
    }
    let len = parts
        .next()
        .and_then(|p| p.strip_prefix("len="))
        .and_then(|n| n.parse().ok())
        .ok_or(SnapshotError::Header)?;
    let crc = parts
        .next()
        .and_then(|p| p.strip_prefix("crc32="))
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or(SnapshotError::Header)?;
    if parts.next().is_some() {
        return Err(SnapshotError::Header);
    }
    Ok((len, crc))
}
