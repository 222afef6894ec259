//! `CowMap`: a string-keyed map split into shards that are shared between clones and copied on
//! first write, so cloning the whole route table for a new snapshot costs a few hundred reference
//! counts, and a write that touches k topics copies at most min(k, SHARDS) shards.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::Arc;

/// Number of shards: 50k topics ⇒ ~200 per shard, so a one-topic write copies ~200 entries.
const SHARDS: usize = 256;

/// A `HashMap<Arc<str>, V>` with copy-on-write shards. `V` should be cheap to clone (an `Arc`).
#[derive(Clone)]
pub(super) struct CowMap<V> {
    shards: Vec<Arc<HashMap<Arc<str>, V>>>,
    len: usize,
}

impl<V> Default for CowMap<V> {
    fn default() -> Self {
        Self { shards: (0..SHARDS).map(|_| Arc::new(HashMap::new())).collect(), len: 0 }
    }
}

/// Which shard a key lives in (fixed keys: shard choice must not differ between clones).
fn shard_of(key: &str) -> usize {
    let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
    // SHARDS is a power of two; the high bits of SipHash are as good as the low ones.
    (hash as usize) & (SHARDS - 1)
}

impl<V: Clone> CowMap<V> {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn get(&self, key: &str) -> Option<&V> {
        self.shards[shard_of(key)].get(key)
    }

    pub(super) fn get_key_value(&self, key: &str) -> Option<(&Arc<str>, &V)> {
        self.shards[shard_of(key)].get_key_value(key)
    }

    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; copies the shard if it is shared with another snapshot.
    pub(super) fn insert(&mut self, key: Arc<str>, value: V) -> Option<V> {
        let shard = Arc::make_mut(&mut self.shards[shard_of(&key)]);
        let old = shard.insert(key, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes; copies the shard only when the key is present.
    pub(super) fn remove(&mut self, key: &str) -> Option<V> {
        let index = shard_of(key);
        if !self.shards[index].contains_key(key) {
            return None;
        }
        let old = Arc::make_mut(&mut self.shards[index]).remove(key);
        if old.is_some() {
            self.len -= 1;
        }
        old
    }

    /// Every entry, shard by shard (no particular order).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.shards.iter().flat_map(|shard| shard.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_shares_until_written_and_writes_stay_private() {
        let mut a: CowMap<u32> = CowMap::default();
        a.insert(Arc::from("t1"), 1);
        a.insert(Arc::from("t2"), 2);
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.shards[shard_of("t1")], &b.shards[shard_of("t1")]));
        a.insert(Arc::from("t1"), 10);
        assert_eq!(a.get("t1"), Some(&10));
        assert_eq!(b.get("t1"), Some(&1));
        assert!(!Arc::ptr_eq(&a.shards[shard_of("t1")], &b.shards[shard_of("t1")]));
        assert_eq!(a.remove("t2"), Some(2));
        assert_eq!(a.remove("t2"), None);
        assert_eq!((a.len(), b.len()), (1, 2));
        assert_eq!(b.iter().count(), 2);
    }

    #[test]
    fn removing_an_absent_key_copies_nothing() {
        let a: CowMap<u32> = CowMap::default();
        let mut b = a.clone();
        assert_eq!(b.remove("nope"), None);
        assert!(a.shards.iter().zip(&b.shards).all(|(x, y)| Arc::ptr_eq(x, y)));
    }
}
