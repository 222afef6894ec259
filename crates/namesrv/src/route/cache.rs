//! `BodyCache`: encoded GET_ROUTEINFO_BY_TOPIC bodies, one per (JSON form,
//! `supportActingMaster`), filled lazily by readers; and `BodyInterner`, which makes caches with
//! the same body share one copy.
//!
//! Where: a route body names no topic, so the topics on one (interned) queue list share the
//! list's cache (#25: a cache in each topic entry was 32 bytes a topic, and dropping one cost
//! four walks of `arc_swap`'s reader lists: 6.3 % of a 1M-topic cold start's samples). A topic
//! whose body has something of its own (a static-topic mapping; the acting-master exception of
//! the sync topics) caches it in its entry.
//!
//! Validity: a list is immutable, and a topic entry too, so a change to a topic's queues or
//! static-topic mapping gives it another list or a new entry. What neither can see, changes of
//! broker groups and filter servers, is covered by a stamp: the table's `broker_gen` at
//! encoding time, carried with each body. A reader on a snapshot with a different `broker_gen`
//! never uses it.

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use bytes::Bytes;

/// Number of variants: 2 JSON forms × `supportActingMaster` on/off.
pub(super) const VARIANTS: usize = 4;

/// A body and the `broker_gen` it was encoded at; `None` caches "no route" (the topic's brokers
/// have no group). Shared between topics through [`BodyInterner`].
pub(super) struct Stamped {
    stamp: u64,
    body: Option<Bytes>,
}

/// A cache: one pointer per variant. A hit reads the list (shared, and so usually in the CPU's
/// cache), then the shared `Stamped` body.
#[derive(Default)]
pub(super) struct BodyCache([ArcSwapOption<Stamped>; VARIANTS]);

impl BodyCache {
    /// The body of `variant` valid at `stamp`, encoding it with `encode` on a miss (concurrent
    /// readers of a topic may both encode; the interner makes them share the result). A reader
    /// on an older snapshot than the cached body encodes for itself without storing. (The
    /// owned form of [`BodyCache::with_body`], for the tests.)
    #[cfg(test)]
    pub(super) fn get_or_encode(
        &self,
        interner: &BodyInterner,
        stamp: u64,
        variant: usize,
        encode: impl FnOnce() -> Option<Bytes>,
    ) -> Option<Bytes> {
        self.with_body(interner, stamp, variant, encode, |body| body.cloned())
    }

    /// Calls `f` with the body of `variant` valid at `stamp`, borrowed (no reference count
    /// touched on a hit: a shared body's count would bounce between cores). On a miss the body
    /// is encoded with `encode` (concurrent readers of a topic may both encode; the interner
    /// makes them share the result) and stored; a reader on an older snapshot than the cached
    /// body encodes for itself without storing.
    pub(super) fn with_body<R>(
        &self,
        interner: &BodyInterner,
        stamp: u64,
        variant: usize,
        encode: impl FnOnce() -> Option<Bytes>,
        f: impl FnOnce(Option<&Bytes>) -> R,
    ) -> R {
        let slot = &self.0[variant];
        let current = slot.load();
        match current.as_deref() {
            Some(cached) if cached.stamp == stamp => f(cached.body.as_ref()),
            Some(cached) if cached.stamp > stamp => f(encode().as_ref()),
            _ => {
                let fresh = interner.intern(stamp, encode());
                // Stored unless another reader stored a body meanwhile (then it stands).
                slot.compare_and_swap(&current, Some(Arc::clone(&fresh)));
                f(fresh.body.as_ref())
            }
        }
    }
}

/// Encoded route bodies shared between topics: a route body names no topic, so every topic on
/// the same queues of the same brokers has byte-identical bodies (thousands of topics in a
/// typical cluster). Caches hold one shared copy, which keeps the bodies served few and hot.
/// Touched only when a body is encoded (a cache miss), never on a cache hit.
#[derive(Default)]
pub(super) struct BodyInterner(parking_lot::Mutex<HashMap<(u64, Bytes), Arc<Stamped>>>);

impl BodyInterner {
    /// The shared `Stamped` for `body` at `stamp` (stored if it is the first; "no route" is
    /// not shared).
    pub(super) fn intern(&self, stamp: u64, body: Option<Bytes>) -> Arc<Stamped> {
        let Some(body) = body else {
            return Arc::new(Stamped { stamp, body: None });
        };
        let mut map = self.0.lock();
        Arc::clone(
            map.entry((stamp, body.clone()))
                .or_insert_with(|| Arc::new(Stamped { stamp, body: Some(body) })),
        )
    }

    /// Drops the bodies no cache holds any more. Returns how many remain.
    pub(super) fn prune(&self) -> usize {
        let mut map = self.0.lock();
        map.retain(|_, shared| Arc::strong_count(shared) > 1);
        map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(body: Option<Bytes>) -> Option<Vec<u8>> {
        body.map(|b| b.to_vec())
    }

    #[test]
    fn equal_bodies_share_one_copy_until_no_cache_holds_it() {
        let interner = BodyInterner::default();
        let (a, b) = (BodyCache::default(), BodyCache::default());
        let body = || Some(Bytes::from(b"{\"queueDatas\":[]}".to_vec()));
        let first = a.get_or_encode(&interner, 1, 0, body).expect("body");
        let second = b.get_or_encode(&interner, 1, 0, body).expect("body");
        assert_eq!(first.as_ptr(), second.as_ptr(), "one copy");
        let c = BodyCache::default();
        c.get_or_encode(&interner, 1, 0, || Some(Bytes::from_static(b"{}")));
        drop(c);
        assert_eq!(interner.prune(), 1, "the body no cache holds is dropped");
        drop((a, b));
        assert_eq!(interner.prune(), 0);
    }

    #[test]
    fn a_body_is_encoded_once_per_stamp_and_variant() {
        let (interner, cache) = (BodyInterner::default(), BodyCache::default());
        let mut calls = 0;
        let a = cache.get_or_encode(&interner, 1, 0, || {
            calls += 1;
            Some(Bytes::from_static(b"a"))
        });
        let again = cache.get_or_encode(&interner, 1, 0, || unreachable!("cached"));
        assert_eq!(a, again);
        assert_eq!(calls, 1);
        let other = cache.get_or_encode(&interner, 1, 3, || Some(Bytes::from_static(b"b")));
        assert_eq!(text(other), Some(b"b".to_vec()));
        let newer = cache.get_or_encode(&interner, 2, 0, || Some(Bytes::from_static(b"c")));
        assert_eq!(text(newer), Some(b"c".to_vec()));
        let borrowed = cache.with_body(&interner, 2, 0, || unreachable!("cached"), |b| b.cloned());
        assert_eq!(text(borrowed), Some(b"c".to_vec()));
    }

    #[test]
    fn an_older_stamp_neither_uses_nor_replaces_a_newer_cache() {
        let (interner, cache) = (BodyInterner::default(), BodyCache::default());
        cache.get_or_encode(&interner, 5, 1, || Some(Bytes::from_static(b"new")));
        let old = cache.get_or_encode(&interner, 4, 1, || Some(Bytes::from_static(b"old")));
        assert_eq!(text(old), Some(b"old".to_vec()));
        let still = cache.get_or_encode(&interner, 5, 1, || unreachable!("still cached"));
        assert_eq!(text(still), Some(b"new".to_vec()));
    }

    #[test]
    fn no_route_is_cached_too() {
        let (interner, cache) = (BodyInterner::default(), BodyCache::default());
        assert_eq!(cache.get_or_encode(&interner, 0, 2, || None), None);
        assert_eq!(cache.get_or_encode(&interner, 0, 2, || unreachable!("cached")), None);
    }
}
