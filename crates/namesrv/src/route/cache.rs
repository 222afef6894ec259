//! `BodyCache`: a topic's encoded GET_ROUTEINFO_BY_TOPIC bodies, one per (JSON form,
//! `supportActingMaster`), filled lazily by readers.
//!
//! Validity: a topic entry is immutable, so any change to the topic's queues or static-topic
//! mapping builds a new entry with an empty cache. What the entry cannot see, changes of broker
//! groups and filter servers, is covered by a stamp: the table's `broker_gen` at encoding time.
//! A reader on a snapshot with a different `broker_gen` never uses the bodies.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use bytes::Bytes;

/// Number of variants: 2 JSON forms × `supportActingMaster` on/off.
pub(super) const VARIANTS: usize = 4;

/// The bodies encoded for one `broker_gen`. `None` in a slot caches "no route" (the topic's
/// brokers have no group).
struct Bodies {
    stamp: u64,
    slots: [OnceLock<Option<Bytes>>; VARIANTS],
}

/// Per-topic cache: 8 bytes until first use.
#[derive(Default)]
pub(super) struct BodyCache(ArcSwapOption<Bodies>);

impl BodyCache {
    /// The body of `variant` valid at `stamp`, encoding it with `encode` on a miss. Concurrent
    /// readers of one topic encode it once. A reader on an older snapshot than the cache's
    /// encodes for itself without storing.
    pub(super) fn get_or_encode(
        &self,
        stamp: u64,
        variant: usize,
        encode: impl FnOnce() -> Option<Bytes>,
    ) -> Option<Bytes> {
        let bodies = loop {
            let current = self.0.load();
            match current.as_ref() {
                Some(b) if b.stamp == stamp => break Arc::clone(b),
                Some(b) if b.stamp > stamp => return encode(),
                _ => {
                    let fresh = Arc::new(Bodies { stamp, slots: Default::default() });
                    let previous = self.0.compare_and_swap(&current, Some(Arc::clone(&fresh)));
                    if previous.as_ref().map(Arc::as_ptr) == current.as_ref().map(Arc::as_ptr) {
                        break fresh;
                    }
                    // Another reader installed a set first: look again.
                }
            }
        };
        bodies.slots[variant].get_or_init(encode).clone()
    }

    /// Calls `f` with the body of `variant` valid at `stamp`, borrowed when cached (no reference
    /// count touched: a shared body's count would bounce between cores), else encoded as by
    /// [`BodyCache::get_or_encode`].
    pub(super) fn with_body<R>(
        &self,
        stamp: u64,
        variant: usize,
        encode: impl FnOnce() -> Option<Bytes>,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> R {
        {
            let current = self.0.load();
            if let Some(cached) =
                current.as_ref().filter(|b| b.stamp == stamp).and_then(|b| b.slots[variant].get())
            {
                return f(cached.as_deref());
            }
        }
        f(self.get_or_encode(stamp, variant, encode).as_deref())
    }
}

/// Encoded route bodies shared between topics: a route body names no topic, so every topic on
/// the same queues of the same brokers has byte-identical bodies (thousands of topics in a
/// typical cluster). Caches hold one shared copy, which keeps the bodies served few and hot.
/// Touched only when a body is encoded (a cache miss), never on a cache hit.
#[derive(Default)]
pub(super) struct BodyInterner(parking_lot::Mutex<HashSet<Bytes>>);

impl BodyInterner {
    /// The shared copy of `body` (stored if it is the first).
    pub(super) fn intern(&self, body: Bytes) -> Bytes {
        let mut set = self.0.lock();
        if let Some(shared) = set.get(&body[..]) {
            return shared.clone();
        }
        set.insert(body.clone());
        body
    }

    /// Drops the bodies no cache holds any more. Returns how many remain.
    pub(super) fn prune(&self) -> usize {
        let mut set = self.0.lock();
        set.retain(|body| !body.is_unique());
        set.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_bodies_share_one_copy_until_no_cache_holds_it() {
        let interner = BodyInterner::default();
        let a = interner.intern(Bytes::from(b"{\"queueDatas\":[]}".to_vec()));
        let b = interner.intern(Bytes::from(b"{\"queueDatas\":[]}".to_vec()));
        assert_eq!(a.as_ptr(), b.as_ptr(), "one copy");
        let other = interner.intern(Bytes::from(b"{}".to_vec()));
        assert_ne!(other.as_ptr(), a.as_ptr());
        drop(other);
        assert_eq!(interner.prune(), 1, "the unheld body is dropped");
        drop((a, b));
        assert_eq!(interner.prune(), 0);
    }

    #[test]
    fn a_body_is_encoded_once_per_stamp_and_variant() {
        let cache = BodyCache::default();
        let mut calls = 0;
        let a = cache.get_or_encode(1, 0, || {
            calls += 1;
            Some(Bytes::from_static(b"a"))
        });
        let again = cache.get_or_encode(1, 0, || unreachable!("cached"));
        assert_eq!(a, again);
        assert_eq!(calls, 1);
        let other = cache.get_or_encode(1, 3, || Some(Bytes::from_static(b"b")));
        assert_eq!(other.as_deref(), Some(&b"b"[..]));
        let newer = cache.get_or_encode(2, 0, || Some(Bytes::from_static(b"c")));
        assert_eq!(newer.as_deref(), Some(&b"c"[..]));
    }

    #[test]
    fn an_older_stamp_neither_uses_nor_replaces_a_newer_cache() {
        let cache = BodyCache::default();
        cache.get_or_encode(5, 1, || Some(Bytes::from_static(b"new")));
        let old = cache.get_or_encode(4, 1, || Some(Bytes::from_static(b"old")));
        assert_eq!(old.as_deref(), Some(&b"old"[..]));
        let still = cache.get_or_encode(5, 1, || unreachable!("still cached"));
        assert_eq!(still.as_deref(), Some(&b"new"[..]));
    }

    #[test]
    fn no_route_is_cached_too() {
        let cache = BodyCache::default();
        assert_eq!(cache.get_or_encode(0, 2, || None), None);
        assert_eq!(cache.get_or_encode(0, 2, || unreachable!("cached")), None);
    }
}
