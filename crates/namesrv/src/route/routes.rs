//! `Routes`: the route table shared by every connection task, the scan task and the
//! registration lane (which also applies the batched unregistrations).
//!
//! Design: readers never take a lock. The current [`RouteTable`] is an immutable snapshot behind
//! an `ArcSwap`; a reader loads it (a few atomic operations) and works on it as long as it likes.
//! Writers are serialized by one mutex; each clones the current snapshot (the topic map is a
//! copy-on-write tree: a clone is one reference count, a write copies the leaves it touches),
//! applies the Java algorithm unchanged to its private copy, and publishes it with one store:
//! * readers see the table before or after a whole registration (Java's atomicity), never wait;
//! * `register.rs` / `unregister.rs` stay a plain transcription of Java;
//! * heartbeats, QUERY_DATA_VERSION and unchanged re-registrations refresh the live entry every
//!   snapshot shares, in place (an atomic timestamp; the DataVersion, connection and generation
//!   under the writer lock): no copy of the table, at ~70 a second for 2,000 brokers;
//! * the registration lane writes a batch of registrations into one copy (`write_batched`) and
//!   publishes it once (`publish`) before answering any of them;
//! * the reaper thread frees the snapshot a write replaced once no reader holds it, so neither
//!   a reader nor the writer pays for freeing what a big write replaced.
//!
//! Encoded bodies are cached per queue list, which the topics on it share (see `cache.rs`); a
//! cached `Bytes` is reused until the topic's list changes or a group / filter-server entry
//! changes.

use std::fmt;
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};
use parking_lot::Mutex;

use super::table::RouteTable;
use super::{RegisterOutcome, UnchangedRegistration};

/// The JSON form of a GET_ROUTEINFO_BY_TOPIC body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteForm {
    /// fastjson's default output (clients before V4_9_4 that did not ask for standard JSON).
    Legacy = 0,
    /// BrowserCompatible output (version ≥ 401 or `acceptStandardJsonOnly`).
    Standard = 1,
}

/// The route table as the server shares it. See the module docs for the concurrency design.
#[derive(Default)]
pub struct Routes {
    current: ArcSwap<RouteTable>,
    /// Serializes writers; holds the writes of [`Routes::write_batched`] since the last
    /// publication.
    writer: Mutex<Option<RouteTable>>,
    /// Frees the replaced snapshots, and what a write used up, off the writer's thread (and
    /// without its lock).
    reaper: lane::Reaper<RouteTable>,
}

impl fmt::Debug for Routes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Routes").field(&**self.current.load()).finish()
    }
}

impl Routes {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current snapshot: every read goes through it (a few atomic operations, no lock; many
    /// reads on one consistent state share one). Drop it soon: while a reader holds it, a
    /// write that replaced it cannot free it (`lane::Reaper`).
    pub fn snapshot(&self) -> Guard<Arc<RouteTable>> {
        self.current.load()
    }

    /// Runs one mutation on a private copy of the table and publishes it (with the batch before
    /// it, if any); writers are serialized, readers never wait.
    pub fn write<R>(&self, f: impl FnOnce(&mut RouteTable) -> R) -> R {
        let result = self.write_batched(f);
        self.publish();
        result
    }

    /// Runs one mutation on the batch (a private copy shared by the writes until [`publish`]):
    /// a leaf several of them change is copied once. Readers see none of it until then, so
    /// whoever answers for the write must wait for the publication (the lane's flush).
    ///
    /// [`publish`]: Routes::publish
    pub fn write_batched<R>(&self, f: impl FnOnce(&mut RouteTable) -> R) -> R {
        let mut writer = self.writer.lock();
        let mut next = writer.take().unwrap_or_else(|| (**self.current.load()).clone());
        let result = f(&mut next);
        *writer = Some(next);
        result
    }

    /// Frees `spent` off the caller's thread (the reaper's; see [`lane::Reaper::discard`]).
    pub fn discard(&self, spent: Box<dyn Send>) {
        self.reaper.discard(spent);
    }

    /// Publishes the batch of [`Routes::write_batched`], if any, and frees what it replaced.
    pub fn publish(&self) {
        let mut writer = self.writer.lock();
        if let Some(next) = writer.take() {
            self.reaper.retire(self.current.swap(Arc::new(next)));
        }
    }

    /// An identical re-registration, applied by refreshing the live entry in place; `None` when
    /// the full algorithm must run. See [`RouteTable::refresh_unchanged`]. It takes the writer
    /// lock (a fenced unregistration must not decide between its check and its removal), but
    /// never waits for it: `wait == false` (an I/O thread) gives `None` while a write or a batch
    /// is under way, and the caller registers on the lane instead.
    pub fn refresh_unchanged(
        &self,
        key: &UnchangedRegistration<'_>,
        now_ms: u64,
        wait: bool,
    ) -> Option<RegisterOutcome> {
        let writer = if wait { Some(self.writer.lock()) } else { self.writer.try_lock() }?;
        match &*writer {
            // An unpublished batch: only a caller that answers after its publication may see it.
            Some(_) if !wait => None,
            Some(batch) => batch.refresh_unchanged(key, now_ms),
            None => self.current.load().refresh_unchanged(key, now_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use remoting::body::QueueData;

    use super::*;

    /// A write (REGISTER_TOPIC for a broker group the table does not have: it changes nothing).
    fn add_topic(routes: &Routes, topic: &str) {
        let queues = QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 4,
            topic_sys_flag: 0,
            write_queue_nums: 4,
        };
        routes.write(|t| t.register_topic(topic, vec![queues]));
    }

    #[test]
    fn a_replaced_snapshot_is_freed_by_the_reaper_not_by_its_last_reader() {
        let routes = Routes::new();
        add_topic(&routes, "T1");
        let held = routes.snapshot();
        add_topic(&routes, "T2");
        // The reader still has the old table, and so has the reaper: the reader's drop is not
        // the last one...
        assert_eq!(Arc::strong_count(&held), 2);
        let weak = Arc::downgrade(&held);
        drop(held);
        // ...the reaper's is, soon after.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while weak.upgrade().is_some() {
            assert!(std::time::Instant::now() < deadline, "the reaper freed the snapshot");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
