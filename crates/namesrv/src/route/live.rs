//! Broker liveness: heartbeats (BROKER_HEARTBEAT, QUERY_DATA_VERSION), the expiry scan and
//! connection close. All take `&self`; decisions come back as fenced [`UnregisterRequest`]s for
//! the batch queue, never as direct removals (Java `scanNotActiveBroker` / `onChannelDestroy`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use remoting::body::DataVersion;

use super::table::{Live, RouteTable};
use super::{ConnId, Fence, UnregisterRequest};

impl RouteTable {
    /// Refreshes the live entry of (cluster, addr); false when there is none.
    /// Java: `RouteInfoManager#updateBrokerInfoUpdateTimestamp`
    pub fn heartbeat(&self, cluster: &str, addr: &str, now_ms: u64) -> bool {
        self.live.get(cluster, addr).map(|live| live.touch(now_ms)).is_some()
    }

    /// QUERY_DATA_VERSION: `changed` is true when there is no live entry or its DataVersion differs
    /// from `data_version` (all three fields; an absent one always differs). Also refreshes the
    /// live entry. Returns `(changed, stored DataVersion)`.
    /// Java: `DefaultRequestProcessor#queryBrokerTopicConfig`
    pub fn query_data_version(
        &self,
        cluster: &str,
        addr: &str,
        data_version: Option<DataVersion>,
        now_ms: u64,
    ) -> (bool, Option<DataVersion>) {
        let Some(live) = self.live.get(cluster, addr) else {
            return (true, None);
        };
        let stored = live.data_version();
        let changed = data_version != Some(stored);
        live.touch(now_ms);
        (changed, Some(stored))
    }

    /// The live entry's last refresh (ms) and timeout, for diagnostics and tests.
    pub fn last_heartbeat(&self, cluster: &str, addr: &str) -> Option<(u64, i64)> {
        self.live
            .get(cluster, addr)
            .map(|live| (live.last_update_ms.load(Ordering::Relaxed), live.timeout_ms))
    }

    /// Every live entry silent for longer than its timeout (`last + timeout < now`), as fenced
    /// unregistrations. Nothing is removed here.
    /// Java: `RouteInfoManager#scanNotActiveBroker`
    pub fn expire_inactive(&self, now_ms: u64) -> Vec<UnregisterRequest> {
        self.live
            .iter()
            .filter(|(_, _, live)| live.is_expired(now_ms))
            .map(|(cluster, addr, live)| self.fenced_request(cluster, addr, live))
            .collect()
    }

    /// Every broker registered over `conn` (its latest registration), as fenced unregistrations.
    /// Java: `RouteInfoManager#onChannelDestroy(Channel)` (which stops at the first match)
    pub fn on_connection_closed(&self, conn: ConnId) -> Vec<UnregisterRequest> {
        self.live
            .iter()
            .filter(|(_, _, live)| live.registration().conn == conn)
            .map(|(cluster, addr, live)| self.fenced_request(cluster, addr, live))
            .collect()
    }

    /// The unregistration for one live entry: its group and id are those of the group of the
    /// same cluster holding the address; with none, an orphan request that removes only the live
    /// entry (Java leaks it, §11 #13).
    /// Java: `RouteInfoManager#setupUnRegisterRequest`
    fn fenced_request(
        &self,
        cluster: &Arc<str>,
        addr: &Arc<str>,
        live: &Live,
    ) -> UnregisterRequest {
        let holder = self.groups.values().filter(|g| g.cluster == *cluster).find_map(|g| {
            g.addrs.iter().find(|(_, a)| *a == addr).map(|(id, _)| (g.name.to_string(), *id))
        });
        let orphan = holder.is_none();
        let registration = live.registration();
        let (broker_name, broker_id) =
            holder.map_or((String::new(), None), |(name, id)| (name, Some(id)));
        UnregisterRequest {
            cluster_name: cluster.to_string(),
            broker_addr: addr.to_string(),
            broker_name,
            broker_id,
            fence: Some(Fence {
                generation: registration.generation,
                conn: registration.conn,
                orphan,
            }),
        }
    }
}
