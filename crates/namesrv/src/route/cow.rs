//! `CowMap`: a string-keyed map split into shards that are shared between clones and copied on
//! first write, so cloning the whole route table for a new snapshot costs a few hundred reference
//! counts, and a write that touches k topics copies at most min(k, SHARDS) shards.

use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// Number of shards: 50k topics ⇒ ~200 per shard, so a one-topic write copies ~200 entries.
const SHARDS: usize = 256;

/// A string-keyed map with copy-on-write shards. `V` should be cheap to clone (an `Arc`).
/// A key is hashed once (foldhash, seeded per map): bits 32–39 pick the shard (the shard's
/// table uses the low bits for buckets and the top 7 for its control bytes).
#[derive(Clone)]
pub(super) struct CowMap<V> {
    shards: Vec<Arc<Shard<V>>>,
    hasher: RandomState,
    len: usize,
}

impl<V> Default for CowMap<V> {
    fn default() -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Arc::new(HashTable::new())).collect(),
            hasher: RandomState::default(),
            len: 0,
        }
    }
}

/// One shard: keys and values in a table probed with the map's hash.
type Shard<V> = HashTable<(Arc<str>, V)>;

/// Which shard a hash lives in (the hasher is shared by clones, so the choice is too).
fn shard_of(hash: u64) -> usize {
    ((hash >> 32) as usize) & (SHARDS - 1)
}

impl<V: Clone> CowMap<V> {
    pub(super) fn len(&self) -> usize {
        self.len
    }

    fn hash(&self, key: &str) -> u64 {
        self.hasher.hash_one(key)
    }

    pub(super) fn get(&self, key: &str) -> Option<&V> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    pub(super) fn get_key_value(&self, key: &str) -> Option<(&Arc<str>, &V)> {
        let hash = self.hash(key);
        self.shards[shard_of(hash)].find(hash, |(k, _)| **k == *key).map(|(k, v)| (k, v))
    }

    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; copies the shard if it is shared with another snapshot.
    pub(super) fn insert(&mut self, key: Arc<str>, value: V) -> Option<V> {
        let hash = self.hash(&key);
        let hasher = &self.hasher;
        let shard = Arc::make_mut(&mut self.shards[shard_of(hash)]);
        match shard.entry(hash, |(k, _)| *k == key, |(k, _)| hasher.hash_one(&**k)) {
            hashbrown::hash_table::Entry::Occupied(mut slot) => {
                Some(std::mem::replace(&mut slot.get_mut().1, value))
            }
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert((key, value));
                self.len += 1;
                None
            }
        }
    }

    /// Removes; copies the shard only when the key is present.
    pub(super) fn remove(&mut self, key: &str) -> Option<V> {
        let hash = self.hash(key);
        let index = shard_of(hash);
        self.shards[index].find(hash, |(k, _)| **k == *key)?;
        let shard = Arc::make_mut(&mut self.shards[index]);
        let ((_, old), _) = shard.find_entry(hash, |(k, _)| **k == *key).ok()?.remove();
        self.len -= 1;
        Some(old)
    }

    /// Every entry, shard by shard (no particular order).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.shards.iter().flat_map(|shard| shard.iter().map(|(k, v)| (k, v)))
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
        let t1 = shard_of(a.hash("t1"));
        assert!(Arc::ptr_eq(&a.shards[t1], &b.shards[t1]));
        a.insert(Arc::from("t1"), 10);
        assert_eq!(a.get("t1"), Some(&10));
        assert_eq!(b.get("t1"), Some(&1));
        assert!(!Arc::ptr_eq(&a.shards[t1], &b.shards[t1]));
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
