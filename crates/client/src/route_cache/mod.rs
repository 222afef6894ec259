//! Producer-side route cache: fetches topic routes from the nameservers, keeps them fresh on a
//! period and on demand after a failed send, turns them into publish queues like the Java client,
//! and picks queues while avoiding brokers that just failed (latency fault tolerance).
//!
//! Time comes from `tokio::time::Instant`, so tests drive it with paused time; the `*_at`
//! methods take it as a parameter.

pub mod fault;
pub mod publish;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use fault::{not_available_duration, LatencyFaultTolerance};
pub use publish::{subscribe_queues, MessageQueue, PublishInfo};

use crate::client::Client;
use crate::error::Result;

/// Settings of a [`RouteCache`].
#[derive(Debug, Clone)]
pub struct RouteCacheConfig {
    /// How often every cached topic is re-fetched (Java `pollNameServerInterval` = 30000 ms).
    pub poll_interval: Duration,
    /// Avoid brokers by latency / failure (Java `sendLatencyFaultEnable`). When off, only the
    /// broker that failed last is skipped.
    pub latency_fault_enable: bool,
}

impl Default for RouteCacheConfig {
    fn default() -> Self {
        Self { poll_interval: Duration::from_secs(30), latency_fault_enable: true }
    }
}

/// Cached routes and publish queues by topic, with fault tolerance per broker name.
pub struct RouteCache {
    client: Client,
    config: RouteCacheConfig,
    topics: Mutex<HashMap<String, Arc<PublishInfo>>>,
    faults: LatencyFaultTolerance,
}

/// The periodic refresh task; dropping it stops the task.
#[derive(Debug)]
pub struct Refresher(JoinHandle<()>);

impl Drop for Refresher {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl RouteCache {
    /// An empty cache that fetches routes through `client`.
    pub fn new(client: Client, config: RouteCacheConfig) -> Arc<Self> {
        Arc::new(Self {
            client,
            config,
            topics: Mutex::default(),
            faults: LatencyFaultTolerance::new(),
        })
    }

    pub fn config(&self) -> &RouteCacheConfig {
        &self.config
    }

    /// The fault table (for inspection, or to feed it directly).
    pub fn faults(&self) -> &LatencyFaultTolerance {
        &self.faults
    }

    /// Starts re-fetching every cached topic each `poll_interval`. The task holds only a weak
    /// reference: it ends when the cache is dropped, or when the returned handle is.
    pub fn spawn_refresher(self: &Arc<Self>) -> Refresher {
        let weak: Weak<Self> = Arc::downgrade(self);
        let period = self.config.poll_interval;
        Refresher(tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(cache) = weak.upgrade() else { return };
                cache.refresh_all().await;
            }
        }))
    }

    /// The cached publish info of `topic`, fetching the route first if it is not cached.
    pub async fn publish_info(&self, topic: &str) -> Result<Arc<PublishInfo>> {
        if let Some(info) = self.cached(topic) {
            return Ok(info);
        }
        self.refresh(topic).await
    }

    /// The cached publish info of `topic`, without fetching.
    pub fn cached(&self, topic: &str) -> Option<Arc<PublishInfo>> {
        self.lock().get(topic).cloned()
    }

    /// Topics in the cache.
    pub fn topics(&self) -> BTreeSet<String> {
        self.lock().keys().cloned().collect()
    }

    /// Fetches the route of `topic` now and replaces the cached entry when the route changed
    /// (compared after sorting, like Java's `topicRouteDataChanged`), keeping the rotation
    /// otherwise. On error the cached entry (if any) stays.
    /// Java: MQClientInstance#updateTopicRouteInfoFromNameServer
    pub async fn refresh(&self, topic: &str) -> Result<Arc<PublishInfo>> {
        let route = self.client.get_route(topic).await?;
        let mut topics = self.lock();
        if let Some(old) = topics.get(topic) {
            if same_route(&old.route, &route) {
                return Ok(old.clone());
            }
        }
        let info = Arc::new(PublishInfo::from_route(topic, route));
        topics.insert(topic.to_owned(), info.clone());
        Ok(info)
    }

    /// Re-fetches every cached topic; failures are logged and keep the old entry.
    pub async fn refresh_all(&self) {
        for topic in self.topics() {
            if let Err(e) = self.refresh(&topic).await {
                tracing::warn!(%topic, error = %e, "route refresh failed");
            }
        }
    }

    /// Drops `topic` from the cache.
    pub fn remove(&self, topic: &str) {
        self.lock().remove(topic);
    }

    /// Picks the next write queue of `topic`, avoiding `last_failed_broker` and (with latency
    /// fault tolerance) brokers inside their isolation time; falls back to any queue when every
    /// broker is avoided. Fetches the route if needed; `Ok(None)` when the topic has no
    /// writable queue.
    /// Java: MQFaultStrategy#selectOneMessageQueue
    pub async fn select_queue(
        &self,
        topic: &str,
        last_failed_broker: Option<&str>,
    ) -> Result<Option<MessageQueue>> {
        let info = self.publish_info(topic).await?;
        Ok(self.select_queue_at(&info, last_failed_broker, Instant::now()))
    }

    /// [`RouteCache::select_queue`] on given publish info at time `now`.
    pub fn select_queue_at(
        &self,
        info: &PublishInfo,
        last_failed_broker: Option<&str>,
        now: Instant,
    ) -> Option<MessageQueue> {
        let not_last = |q: &MessageQueue| last_failed_broker.is_none_or(|b| q.broker_name != b);
        if self.config.latency_fault_enable {
            if let Some(q) = info
                .select_filtered(|q| self.faults.is_available(&q.broker_name, now) && not_last(q))
            {
                return Some(q.clone());
            }
            if let Some(q) =
                info.select_filtered(|q| self.faults.is_reachable(&q.broker_name) && not_last(q))
            {
                return Some(q.clone());
            }
            return info.select_any().cloned();
        }
        info.select_filtered(not_last).or_else(|| info.select_any()).cloned()
    }

    /// Records a send to `broker` that succeeded after `latency` (slow brokers are avoided for
    /// a while). Java: MQFaultStrategy#updateFaultItem(broker, latency, false, true)
    pub fn report_success(&self, broker: &str, latency: Duration) {
        self.report_success_at(broker, latency, Instant::now());
    }

    /// [`RouteCache::report_success`] at time `now`.
    pub fn report_success_at(&self, broker: &str, latency: Duration, now: Instant) {
        if self.config.latency_fault_enable {
            self.faults.update(broker, latency, false, true, now);
        }
    }

    /// Records a failed send to `broker`: it is isolated (Java: 10 s) and the topic's route is
    /// re-fetched on demand. Returns the refresh result.
    /// Java: DefaultMQProducerImpl#sendDefaultImpl on a send exception
    pub async fn report_failure(
        &self,
        topic: &str,
        broker: &str,
        latency: Duration,
    ) -> Result<Arc<PublishInfo>> {
        self.report_failure_at(broker, latency, Instant::now());
        self.refresh(topic).await
    }

    /// Isolates `broker` as a failed send at time `now`, without refreshing.
    pub fn report_failure_at(&self, broker: &str, latency: Duration, now: Instant) {
        if self.config.latency_fault_enable {
            self.faults.update(broker, latency, true, false, now);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<PublishInfo>>> {
        self.topics.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Route equality after sorting queue and broker lists (Java `topicRouteDataChanged` sorts both
/// before comparing).
fn same_route(a: &remoting::body::TopicRouteData, b: &remoting::body::TopicRouteData) -> bool {
    let sorted = |r: &remoting::body::TopicRouteData| {
        let mut r = r.clone();
        r.queue_datas.sort_by(|x, y| x.broker_name.cmp(&y.broker_name));
        r.broker_datas.sort_by(|x, y| x.broker_name.cmp(&y.broker_name));
        r
    };
    sorted(a) == sorted(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use remoting::body::{BrokerData, QueueData, TopicRouteData};

    fn route(brokers: &[&str]) -> TopicRouteData {
        TopicRouteData {
            broker_datas: brokers
                .iter()
                .map(|b| BrokerData {
                    broker_addrs: [(0, format!("{b}:10911"))].into_iter().collect(),
                    broker_name: (*b).into(),
                    ..Default::default()
                })
                .collect(),
            queue_datas: brokers
                .iter()
                .map(|b| QueueData {
                    broker_name: (*b).into(),
                    perm: 6,
                    read_queue_nums: 2,
                    write_queue_nums: 2,
                    topic_sys_flag: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    fn cache(latency: bool) -> Arc<RouteCache> {
        let client = Client::new("127.0.0.1:1").expect("address parses");
        RouteCache::new(
            client,
            RouteCacheConfig { latency_fault_enable: latency, ..Default::default() },
        )
    }

    #[tokio::test(start_paused = true)]
    async fn failed_broker_is_avoided_for_its_isolation_time() {
        let cache = cache(true);
        let info = PublishInfo::from_route("T", route(&["a", "b"]));
        let t0 = Instant::now();
        cache.report_failure_at("a", Duration::from_millis(5), t0);
        for _ in 0..20 {
            let q = cache
                .select_queue_at(&info, None, t0 + Duration::from_millis(9_999))
                .expect("a queue");
            assert_eq!(q.broker_name, "b");
        }
        let later = t0 + Duration::from_secs(10);
        let brokers: BTreeSet<String> = (0..8)
            .filter_map(|_| cache.select_queue_at(&info, None, later))
            .map(|q| q.broker_name)
            .collect();
        assert!(brokers.contains("a"), "a is used again after 10 s: {brokers:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn all_brokers_isolated_still_yields_a_queue() {
        let cache = cache(true);
        let info = PublishInfo::from_route("T", route(&["a"]));
        cache.report_failure_at("a", Duration::ZERO, Instant::now());
        assert_eq!(
            cache.select_queue_at(&info, Some("a"), Instant::now()).map(|q| q.broker_name),
            Some("a".into())
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_latency_tolerance_only_last_failed_broker_is_skipped() {
        let cache = cache(false);
        let info = PublishInfo::from_route("T", route(&["a", "b"]));
        cache.report_failure_at("a", Duration::ZERO, Instant::now());
        for _ in 0..10 {
            assert_eq!(
                cache.select_queue_at(&info, Some("b"), Instant::now()).expect("queue").broker_name,
                "a"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn slow_broker_is_avoided_for_its_latency_band() {
        let cache = cache(true);
        let info = PublishInfo::from_route("T", route(&["a", "b"]));
        let t0 = Instant::now();
        cache.report_success_at("a", Duration::from_millis(600), t0);
        assert!(!cache.faults().is_available("a", t0 + Duration::from_millis(1_999)));
        for _ in 0..10 {
            assert_eq!(
                cache
                    .select_queue_at(&info, None, t0 + Duration::from_secs(1))
                    .expect("queue")
                    .broker_name,
                "b"
            );
        }
        assert!(cache.faults().is_available("a", t0 + Duration::from_secs(2)));
    }

    #[test]
    fn route_comparison_ignores_list_order() {
        let a = route(&["a", "b"]);
        let mut b = a.clone();
        b.queue_datas.reverse();
        b.broker_datas.reverse();
        assert!(same_route(&a, &b));
        b.queue_datas[0].perm = 4;
        assert!(!same_route(&a, &b));
    }
}
