//! Broker liveness from BROKER_HEARTBEAT (904): who is alive, what each last reported, and
//! which brokers expired or lost their connection. Pure: time is a parameter, connections are
//! opaque ids. Every controller node keeps its own table (brokers heartbeat every node).
//! Java: `DefaultBrokerHeartbeatManager`, `BrokerLiveInfo`

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::elect::{BrokerLiveness, LiveInfo};

/// Timeout of a broker that sent none (Java `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`).
pub const DEFAULT_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(10);

/// A broker: `(clusterName, brokerName, brokerId)`. Java: `BrokerIdentityInfo`
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerKey {
    pub cluster: String,
    pub broker_name: String,
    pub broker_id: i64,
}

/// One BROKER_HEARTBEAT, absent fields already defaulted like Java (epoch, offsets -1;
/// timeout 10 s; priority `i32::MAX`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    pub key: BrokerKey,
    pub broker_addr: String,
    pub timeout: Duration,
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    pub election_priority: i32,
}

/// What the table knows of a live broker. Java: `BrokerLiveInfo`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub broker_addr: String,
    pub last_update: Instant,
    pub timeout: Duration,
    /// The connection it last heartbeated on.
    pub conn: Option<u64>,
    pub epoch: i32,
    pub max_offset: i64,
    pub confirm_offset: i64,
    pub election_priority: i32,
}

impl LiveBroker {
    /// Heard from within its timeout as of `now`.
    fn alive_at(&self, now: Instant) -> bool {
        self.last_update + self.timeout >= now
    }
}

/// A broker that stopped being alive (expired, or its connection closed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inactive {
    pub key: BrokerKey,
    /// Its connection, for the server to close.
    pub conn: Option<u64>,
}

/// The liveness table.
#[derive(Debug, Default)]
pub struct Heartbeats {
    table: HashMap<BrokerKey, LiveBroker>,
}

impl Heartbeats {
    /// Records a heartbeat received at `now` on `conn`. The broker's epoch and offsets are
    /// replaced only by a newer epoch, or the same epoch with a larger max offset; its timeout,
    /// priority and connection always. Java: `DefaultBrokerHeartbeatManager#onBrokerHeartbeat`
    /// (which keeps the first connection; here the latest, so a stale connection's close does
    /// not drop a broker that has reconnected)
    pub fn on_heartbeat(&mut self, hb: Heartbeat, conn: Option<u64>, now: Instant) {
        match self.table.get_mut(&hb.key) {
            None => {
                tracing::info!(cluster = %hb.key.cluster, broker = %hb.key.broker_name, id = hb.key.broker_id, addr = %hb.broker_addr, "new broker heartbeat");
                self.table.insert(
                    hb.key,
                    LiveBroker {
                        broker_addr: hb.broker_addr,
                        last_update: now,
                        timeout: hb.timeout,
                        conn,
                        epoch: hb.epoch,
                        max_offset: hb.max_offset,
                        confirm_offset: hb.confirm_offset,
                        election_priority: hb.election_priority,
                    },
                );
            }
            Some(prev) => {
                prev.last_update = now;
                prev.timeout = hb.timeout;
                prev.election_priority = hb.election_priority;
                prev.conn = conn;
                prev.broker_addr = hb.broker_addr;
                if hb.epoch > prev.epoch
                    || (hb.epoch == prev.epoch && hb.max_offset > prev.max_offset)
                {
                    prev.epoch = hb.epoch;
                    prev.max_offset = hb.max_offset;
                    prev.confirm_offset = hb.confirm_offset;
                }
            }
        }
    }

    /// Alive: heard from within its timeout. Java: `DefaultBrokerHeartbeatManager#isBrokerActive`
    pub fn is_alive(&self, key: &BrokerKey, now: Instant) -> bool {
        self.table.get(key).is_some_and(|b| b.alive_at(now))
    }

    /// The broker's entry, alive or not.
    pub fn get(&self, key: &BrokerKey) -> Option<&LiveBroker> {
        self.table.get(key)
    }

    /// Removes and returns every broker not heard from for longer than its timeout.
    /// Java: `DefaultBrokerHeartbeatManager#scanNotActiveBroker`
    pub fn expire(&mut self, now: Instant) -> Vec<Inactive> {
        let mut gone = Vec::new();
        self.table.retain(|key, b| {
            let alive = now.saturating_duration_since(b.last_update) <= b.timeout;
            if !alive {
                gone.push(Inactive { key: key.clone(), conn: b.conn });
            }
            alive
        });
        gone.sort_by(|a, b| a.key.cmp(&b.key));
        gone
    }

    /// A connection closed: removes the broker that heartbeated on it last, if any.
    /// Java: `DefaultBrokerHeartbeatManager#onBrokerChannelClose`
    pub fn connection_closed(&mut self, conn: u64) -> Option<Inactive> {
        let key = self.table.iter().find(|(_, b)| b.conn == Some(conn)).map(|(k, _)| k.clone())?;
        self.table.remove(&key);
        Some(Inactive { key, conn: Some(conn) })
    }

    /// A view answering liveness questions as of `now`.
    pub fn at(&self, now: Instant) -> LivenessAt<'_> {
        LivenessAt { table: self, now }
    }

    /// Brokers heard from within their timeout as of `now`.
    pub fn live_count(&self, now: Instant) -> usize {
        self.table.values().filter(|b| b.alive_at(now)).count()
    }

    /// Number of brokers in the table.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no broker is known.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// [`Heartbeats`] as of one instant.
#[derive(Debug, Clone, Copy)]
pub struct LivenessAt<'a> {
    table: &'a Heartbeats,
    now: Instant,
}

fn key(cluster: &str, broker_name: &str, id: i64) -> BrokerKey {
    BrokerKey { cluster: cluster.to_owned(), broker_name: broker_name.to_owned(), broker_id: id }
}

impl BrokerLiveness for LivenessAt<'_> {
    fn is_alive(&self, cluster: &str, broker_name: &str, id: i64) -> bool {
        self.table.is_alive(&key(cluster, broker_name, id), self.now)
    }

    fn live_info(&self, cluster: &str, broker_name: &str, id: i64) -> Option<LiveInfo> {
        self.table.get(&key(cluster, broker_name, id)).map(|b| LiveInfo {
            epoch: b.epoch,
            max_offset: b.max_offset,
            election_priority: b.election_priority,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(id: i64, timeout_ms: u64, epoch: i32, max_offset: i64) -> Heartbeat {
        Heartbeat {
            key: key("c", "b", id),
            broker_addr: format!("127.0.0.1:{}", 10000 + id),
            timeout: Duration::from_millis(timeout_ms),
            epoch,
            max_offset,
            confirm_offset: -1,
            election_priority: 0,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_broker_expires_after_its_own_timeout() {
        let mut t = Heartbeats::default();
        let start = Instant::now();
        t.on_heartbeat(hb(1, 3000, 1, 1), Some(7), start);
        t.on_heartbeat(hb(2, 10_000, 1, 1), Some(8), start);
        tokio::time::advance(Duration::from_millis(3000)).await;
        assert!(t.is_alive(&key("c", "b", 1), Instant::now()), "exactly at the timeout: alive");
        assert!(t.expire(Instant::now()).is_empty());
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(!t.at(Instant::now()).is_alive("c", "b", 1));
        let gone = t.expire(Instant::now());
        assert_eq!(gone, [Inactive { key: key("c", "b", 1), conn: Some(7) }]);
        assert!(t.at(Instant::now()).is_alive("c", "b", 2));
        assert_eq!(t.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_heartbeat_refreshes_and_reports_only_move_forward() {
        let mut t = Heartbeats::default();
        t.on_heartbeat(hb(1, 1000, 2, 50), None, Instant::now());
        tokio::time::advance(Duration::from_millis(900)).await;
        t.on_heartbeat(hb(1, 1000, 1, 99), None, Instant::now());
        let info = t.at(Instant::now()).live_info("c", "b", 1).expect("known");
        assert_eq!((info.epoch, info.max_offset), (2, 50), "an older epoch does not replace");
        t.on_heartbeat(hb(1, 1000, 2, 60), None, Instant::now());
        assert_eq!(t.at(Instant::now()).live_info("c", "b", 1).expect("known").max_offset, 60);
        tokio::time::advance(Duration::from_millis(900)).await;
        assert!(t.at(Instant::now()).is_alive("c", "b", 1), "refreshed 900 ms ago");
    }

    #[test]
    fn a_closed_connection_drops_only_the_broker_that_used_it_last() {
        let mut t = Heartbeats::default();
        let now = Instant::now();
        t.on_heartbeat(hb(1, 1000, 1, 1), Some(1), now);
        t.on_heartbeat(hb(1, 1000, 1, 1), Some(2), now);
        assert_eq!(t.connection_closed(1), None, "the broker moved to connection 2");
        assert_eq!(t.connection_closed(2).map(|i| i.key.broker_id), Some(1));
        assert!(t.is_empty());
    }
}
