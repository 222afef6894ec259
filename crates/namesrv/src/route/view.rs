//! Read-only views of the tables for the operations API (`/api/v1/`): every broker with its
//! live entry, and a filtered page of topics. Pure data, computed from one snapshot.

use std::sync::atomic::Ordering;

use remoting::body::{DataVersion, QueueData};

use super::table::RouteTable;

/// One broker address of a broker group, with its live entry when it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRow {
    pub cluster: String,
    pub group: String,
    pub zone: Option<String>,
    pub enable_acting_master: bool,
    pub id: i64,
    pub addr: String,
    pub live: Option<LiveRow>,
}

/// A broker's live entry (Java `BrokerLiveInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRow {
    /// Liveness clock of the last registration or heartbeat (ms).
    pub last_update_ms: u64,
    pub timeout_ms: i64,
    pub data_version: DataVersion,
    pub ha_server_addr: String,
}

/// Which topics a page lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicFilter {
    /// Only names starting with this.
    pub prefix: Option<String>,
    /// Only topics with a queue on a broker group of this cluster.
    pub cluster: Option<String>,
}

/// One page of topics, sorted by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicPage {
    /// Topics matching the filter (all pages).
    pub total: usize,
    /// The page: name and queues per broker group.
    pub topics: Vec<(String, Vec<QueueData>)>,
}

impl RouteTable {
    /// Every broker address of every group (sorted by cluster, group, id), with its live
    /// entry; groups whose cluster is not in the cluster table are listed under their own.
    pub fn broker_rows(&self) -> Vec<BrokerRow> {
        let mut rows = Vec::new();
        for group in self.groups.values() {
            for (id, addr) in &group.addrs {
                let live = self.live.get(&group.cluster, addr).map(|l| LiveRow {
                    last_update_ms: l.last_update_ms.load(Ordering::Relaxed),
                    timeout_ms: l.timeout_ms,
                    data_version: l.data_version(),
                    ha_server_addr: l.ha_server_addr.clone(),
                });
                rows.push(BrokerRow {
                    cluster: group.cluster.to_string(),
                    group: group.name.to_string(),
                    zone: group.zone_name.clone(),
                    enable_acting_master: group.enable_acting_master,
                    id: *id,
                    addr: addr.to_string(),
                    live,
                });
            }
        }
        rows.sort_by(|a, b| (&a.cluster, &a.group, a.id).cmp(&(&b.cluster, &b.group, b.id)));
        rows
    }

    /// The topics matching `filter`, sorted by name, from `offset`, at most `limit`. One pass
    /// over the table and a partial sort: O(topics + limit·log limit), whatever the page.
    pub fn topic_page(&self, filter: &TopicFilter, offset: usize, limit: usize) -> TopicPage {
        let groups = filter.cluster.as_deref().map(|c| self.clusters.get(c));
        let mut names: Vec<&str> = self
            .topics
            .iter()
            .filter(|(name, entry)| {
                filter.prefix.as_deref().is_none_or(|p| name.starts_with(p))
                    && match groups {
                        None => true,
                        Some(None) => false,
                        Some(Some(names)) => entry.queues.iter().any(|(b, _)| names.contains(b)),
                    }
            })
            .map(|(name, _)| name)
            .collect();
        let total = names.len();
        let end = offset.saturating_add(limit).min(total);
        if offset >= end {
            return TopicPage { total, topics: Vec::new() };
        }
        if end < total {
            names.select_nth_unstable(end);
        }
        let head = &mut names[..end];
        if offset > 0 {
            head.select_nth_unstable(offset);
        }
        let page = &mut head[offset..];
        page.sort_unstable();
        let topics = page
            .iter()
            .map(|name| {
                let queues = self.topics.get(name).map_or_else(Vec::new, |entry| {
                    entry.queues.iter().map(|(broker, spec)| spec.to_queue_data(broker)).collect()
                });
                (name.to_string(), queues)
            })
            .collect();
        TopicPage { total, topics }
    }
}
