//! The event ring: what changed in the server (brokers registered, re-registered with a changed
//! table, expired, unregistered; write permission wiped or added; config updated; topic
//! deleted), kept in a bounded in-memory ring for `/api/v1/events` and pushed live to
//! `/api/v1/events/stream` (Server-Sent Events) subscribers.
//!
//! Events are recorded by the handlers and background tasks after a change is applied, never by
//! the route tables and never on the route read path. Recording takes a short mutex (the ring)
//! and a broadcast send; events are rare (a broker re-registers with a changed table, not on
//! every heartbeat).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::{broadcast, Notify};

/// Events kept for `/api/v1/events` (older ones are dropped).
pub const RING_CAPACITY: usize = 1000;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A broker registered for the first time (or again after it was removed).
    BrokerRegistered,
    /// A live broker registered again with a changed topic table or header.
    BrokerReregistered,
    /// A broker missed its heartbeat timeout and was removed.
    BrokerExpired,
    /// A broker was removed by UNREGISTER_BROKER or because its connection closed (`reason`).
    BrokerUnregistered,
    /// WIPE_WRITE_PERM_OF_BROKER.
    WritePermWiped,
    /// ADD_WRITE_PERM_OF_BROKER.
    WritePermAdded,
    /// UPDATE_NAMESRV_CONFIG applied.
    ConfigUpdated,
    /// DELETE_TOPIC_IN_NAMESRV.
    TopicDeleted,
}

/// One event, as the API serves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Increasing from 1 (the SSE `id`).
    pub id: u64,
    /// Wall-clock milliseconds since the Unix epoch (the server's liveness clock).
    pub time_ms: u64,
    pub kind: EventKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// A human sentence ("topic count 12", "reason connection_closed", …).
    pub detail: String,
}

/// An event before it is stamped with its id and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub kind: EventKind,
    pub cluster: Option<String>,
    pub broker_name: Option<String>,
    pub broker_addr: Option<String>,
    pub broker_id: Option<i64>,
    pub topic: Option<String>,
    pub detail: String,
}

impl NewEvent {
    /// An event of `kind` with only a detail.
    pub fn new(kind: EventKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            cluster: None,
            broker_name: None,
            broker_addr: None,
            broker_id: None,
            topic: None,
            detail: {
                let detail: String = detail.into();
                if detail.len() > remoting::text::KEEP_BYTES {
                    remoting::text::kept(&detail)
                } else {
                    detail
                }
            },
        }
    }

    /// This event about a broker (wire strings cut to [`remoting::text::KEEP_BYTES`]).
    pub fn broker(mut self, cluster: &str, name: &str, addr: &str, id: Option<i64>) -> Self {
        self.cluster = Some(remoting::text::kept(cluster));
        self.broker_name = Some(remoting::text::kept(name));
        self.broker_addr = Some(remoting::text::kept(addr));
        self.broker_id = id;
        self
    }

    /// This event about a topic.
    pub fn topic(mut self, topic: &str) -> Self {
        self.topic = Some(remoting::text::kept(topic));
        self
    }
}

/// The ring and its live subscribers.
#[derive(Debug)]
pub struct Events {
    ring: Mutex<VecDeque<Arc<Event>>>,
    capacity: usize,
    next_id: AtomicU64,
    live: broadcast::Sender<Arc<Event>>,
    closed: AtomicBool,
    closing: Notify,
}

impl Default for Events {
    fn default() -> Self {
        Self::with_capacity(RING_CAPACITY)
    }
}

impl Events {
    /// An empty ring keeping the last `capacity` events.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            ring: Mutex::new(VecDeque::with_capacity(capacity.min(1024))),
            capacity: capacity.max(1),
            next_id: AtomicU64::new(1),
            live: broadcast::channel(256).0,
            closed: AtomicBool::new(false),
            closing: Notify::new(),
        }
    }

    /// Records `event` at `time_ms` and sends it to the live subscribers.
    pub fn record(&self, event: NewEvent, time_ms: u64) {
        let mut ring = self.ring.lock();
        // The id is taken under the ring lock, so the ring is in id order.
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let event = Arc::new(Event {
            id,
            time_ms,
            kind: event.kind,
            cluster: event.cluster,
            broker_name: event.broker_name,
            broker_addr: event.broker_addr,
            broker_id: event.broker_id,
            topic: event.topic,
            detail: event.detail,
        });
        if ring.len() == self.capacity {
            ring.pop_front();
        }
        ring.push_back(Arc::clone(&event));
        // No subscriber is not an error.
        let _ = self.live.send(event);
    }

    /// The events with an id above `after`, oldest first, at most `limit` (the newest ones).
    pub fn since(&self, after: u64, limit: usize) -> Vec<Arc<Event>> {
        let ring = self.ring.lock();
        let start = ring.partition_point(|e| e.id <= after);
        let skip = (ring.len() - start).saturating_sub(limit);
        ring.iter().skip(start + skip).cloned().collect()
    }

    /// A live subscription, and the events after `after` already in the ring (taken together,
    /// so none is missed or sent twice).
    pub fn subscribe(&self, after: u64) -> (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>) {
        let ring = self.ring.lock();
        let receiver = self.live.subscribe();
        let start = ring.partition_point(|e| e.id <= after);
        (ring.iter().skip(start).cloned().collect(), receiver)
    }

    /// Ends every live stream (the server is stopping).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Relaxed);
        self.closing.notify_waiters();
    }

    /// Completes once [`Events::close`] has been called.
    pub async fn closed(&self) {
        loop {
            let notified = self.closing.notified();
            if self.closed.load(Ordering::Relaxed) {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered(addr: &str) -> NewEvent {
        NewEvent::new(EventKind::BrokerRegistered, "").broker("C", "b", addr, Some(0))
    }

    #[test]
    fn the_ring_keeps_the_newest_events_in_order() {
        let events = Events::with_capacity(3);
        for i in 0..5 {
            events.record(registered(&format!("10.0.0.{i}:10911")), 100 + i);
        }
        let ids: Vec<u64> = events.since(0, 100).iter().map(|e| e.id).collect();
        assert_eq!(ids, [3, 4, 5]);
        let ids: Vec<u64> = events.since(3, 100).iter().map(|e| e.id).collect();
        assert_eq!(ids, [4, 5]);
        let ids: Vec<u64> = events.since(0, 1).iter().map(|e| e.id).collect();
        assert_eq!(ids, [5]);
        assert_eq!(events.since(5, 10).len(), 0);
    }

    #[tokio::test]
    async fn a_subscriber_gets_the_backlog_then_live_events() {
        let events = Events::default();
        events.record(registered("a:1"), 1);
        let (backlog, mut live) = events.subscribe(0);
        assert_eq!(backlog.len(), 1);
        events.record(registered("b:1"), 2);
        let next = live.recv().await.expect("live event");
        assert_eq!((next.id, next.broker_addr.as_deref()), (2, Some("b:1")));
        let json = serde_json::to_value(&*next).expect("json");
        assert_eq!(json["kind"], "broker_registered");
        assert_eq!(json["brokerAddr"], "b:1");
        assert_eq!(json["timeMs"], 2);
    }

    #[tokio::test]
    async fn close_ends_waiters() {
        let events = Arc::new(Events::default());
        let waiter = tokio::spawn({
            let events = Arc::clone(&events);
            async move { events.closed().await }
        });
        events.close();
        waiter.await.expect("closed");
        events.closed().await; // and at once after
    }
}
