//! `CowMap`: a string-keyed map split into leaves under a two-level tree of shared nodes, copied
//! on first write, so cloning the whole route table for a new snapshot costs a few hundred
//! reference counts, and a write that touches k topics copies at most k leaves (plus the
//! ≤ 256-pointer middle nodes above them), never the whole table.
//!
//! Why two levels (#25): with one level of 256 shards a 10,000-topic registration at 1,000,000
//! topics touched every shard and so copied the whole table (S7's profile, bench/results/
//! scale.md: 61 % of the registration lane's time in this copy; 599 ms for a changed
//! 10k-topic table at 1M topics against 72 ms at 10k). With 65,536 leaves a leaf holds ~15 topics
//! at 1M, so the same registration copies ~150k entries instead of 1M, and a small one (the 1 %
//! churn) a few hundred.

use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// Fan-out of each level: 256 middle nodes of 256 leaves.
const FANOUT: usize = 256;

/// A string-keyed map with copy-on-write nodes. `V` should be cheap to clone (an `Arc`).
/// A key is hashed once (foldhash, seeded per map): bits 32–39 pick the middle node, bits 40–47
/// the leaf (the leaf's table uses the low bits for buckets and the top 7 for its control bytes).
#[derive(Clone)]
pub struct CowMap<V> {
    mids: Vec<Arc<Mid<V>>>,
    hasher: RandomState,
    len: usize,
}

/// One leaf: keys and values in a table probed with the map's hash.
type Leaf<V> = HashTable<(Arc<str>, V)>;

/// A middle node: [`FANOUT`] leaves, shared until written.
type Mid<V> = Vec<Arc<Leaf<V>>>;

impl<V> Default for CowMap<V> {
    fn default() -> Self {
        // Every slot starts on one shared empty leaf and middle node (copied on first write), so
        // an empty map is a few allocations, not 65,536.
        let leaf: Arc<Leaf<V>> = Arc::new(HashTable::new());
        let mid: Arc<Mid<V>> = Arc::new((0..FANOUT).map(|_| Arc::clone(&leaf)).collect());
        Self {
            mids: (0..FANOUT).map(|_| Arc::clone(&mid)).collect(),
            hasher: RandomState::default(),
            len: 0,
        }
    }
}

/// Which middle node and leaf a hash lives in (the hasher is shared by clones, so the choice is
/// too).
fn slot_of(hash: u64) -> (usize, usize) {
    (((hash >> 32) as usize) & (FANOUT - 1), ((hash >> 40) as usize) & (FANOUT - 1))
}

impl<V: Clone> CowMap<V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn hash(&self, key: &str) -> u64 {
        self.hasher.hash_one(key)
    }

    fn leaf(&self, hash: u64) -> &Arc<Leaf<V>> {
        let (mid, leaf) = slot_of(hash);
        &self.mids[mid][leaf]
    }

    /// The leaf of `hash`, made private to this map (copying it and its middle node if shared).
    fn leaf_mut(&mut self, hash: u64) -> &mut Leaf<V> {
        let (mid, leaf) = slot_of(hash);
        Arc::make_mut(&mut Arc::make_mut(&mut self.mids[mid])[leaf])
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        self.get_key_value(key).map(|(_, v)| v)
    }

    pub fn get_key_value(&self, key: &str) -> Option<(&Arc<str>, &V)> {
        let hash = self.hash(key);
        self.leaf(hash).find(hash, |(k, _)| **k == *key).map(|(k, v)| (k, v))
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces; copies the leaf (and its middle node) if shared with a snapshot.
    pub fn insert(&mut self, key: Arc<str>, value: V) -> Option<V> {
        let hash = self.hash(&key);
        let hasher = self.hasher.clone();
        let leaf = self.leaf_mut(hash);
        match leaf.entry(hash, |(k, _)| *k == key, |(k, _)| hasher.hash_one(&**k)) {
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

    /// Removes; copies the leaf only when the key is present.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let hash = self.hash(key);
        self.leaf(hash).find(hash, |(k, _)| **k == *key)?;
        let leaf = self.leaf_mut(hash);
        let ((_, old), _) = leaf.find_entry(hash, |(k, _)| **k == *key).ok()?.remove();
        self.len -= 1;
        Some(old)
    }

    /// Inserts every entry of `entries`, leaf by leaf: each key hashed once, the entries sorted
    /// by the leaf their hash picks, each leaf sized once for its new keys, so each leaf and
    /// middle node is reached once, in order, and no key's bytes are read again (a route
    /// snapshot restore: one random walk of the tree per key, and a re-hash of keys long out of
    /// the cache, made 1,000,000 inserts 2–3× slower). Returns how many keys were already
    /// present (their value replaced).
    pub fn insert_many(&mut self, entries: Vec<(Arc<str>, V)>) -> usize {
        let mut hashed: Vec<(u64, Arc<str>, V)> =
            entries.into_iter().map(|(k, v)| (self.hash(&k), k, v)).collect();
        hashed.sort_unstable_by_key(|(hash, _, _)| slot_of(*hash));
        let runs: Vec<usize> =
            hashed.chunk_by(|a, b| slot_of(a.0) == slot_of(b.0)).map(<[_]>::len).collect();
        let hasher = self.hasher.clone();
        let (mut inserted, mut replaced) = (0, 0);
        let mut entries = hashed.into_iter();
        for run in runs {
            let mut run_entries = entries.by_ref().take(run).peekable();
            let Some(&(hash, _, _)) = run_entries.peek() else { break };
            let leaf = self.leaf_mut(hash);
            leaf.reserve(run, |(k, _)| hasher.hash_one(&**k));
            for (hash, key, value) in run_entries {
                match leaf.entry(hash, |(k, _)| *k == key, |(k, _)| hasher.hash_one(&**k)) {
                    hashbrown::hash_table::Entry::Occupied(mut slot) => {
                        slot.get_mut().1 = value;
                        replaced += 1;
                    }
                    hashbrown::hash_table::Entry::Vacant(slot) => {
                        slot.insert((key, value));
                        inserted += 1;
                    }
                }
            }
        }
        self.len += inserted;
        replaced
    }

    /// Every entry, leaf by leaf (no particular order).
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &V)> {
        self.mids
            .iter()
            .flat_map(|mid| mid.iter())
            .flat_map(|leaf| leaf.iter().map(|(k, v)| (k, v)))
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
        let t1 = a.hash("t1");
        assert!(Arc::ptr_eq(a.leaf(t1), b.leaf(t1)));
        a.insert(Arc::from("t1"), 10);
        assert_eq!(a.get("t1"), Some(&10));
        assert_eq!(b.get("t1"), Some(&1));
        assert!(!Arc::ptr_eq(a.leaf(t1), b.leaf(t1)));
        assert_eq!(a.remove("t2"), Some(2));
        assert_eq!(a.remove("t2"), None);
        assert_eq!((a.len(), b.len()), (1, 2));
        assert_eq!(b.iter().count(), 2);
    }

    #[test]
    fn insert_many_is_insert_of_each() {
        let mut a: CowMap<u32> = CowMap::default();
        a.insert(Arc::from("t3"), 0);
        let snapshot = a.clone();
        let entries = (0..5_000).map(|i| (Arc::from(format!("t{i}")), i)).collect();
        assert_eq!(a.insert_many(entries), 1, "t3 was there");
        assert_eq!(a.len(), 5_000);
        assert!((0..5_000).all(|i| a.get(&format!("t{i}")) == Some(&i)));
        assert_eq!((snapshot.len(), snapshot.get("t3")), (1, Some(&0)), "a snapshot unchanged");
    }

    #[test]
    fn removing_an_absent_key_copies_nothing() {
        let a: CowMap<u32> = CowMap::default();
        let mut b = a.clone();
        assert_eq!(b.remove("nope"), None);
        assert!(a.mids.iter().zip(&b.mids).all(|(x, y)| Arc::ptr_eq(x, y)));
    }

    /// A write copies the leaves it touches, not the table: after one insert into a clone of a
    /// 20,000-key map every leaf but one is still shared.
    #[test]
    fn a_write_copies_one_leaf_not_the_table() {
        let mut a: CowMap<u32> = CowMap::default();
        for i in 0..20_000 {
            a.insert(Arc::from(format!("topic-{i}")), i);
        }
        let mut b = a.clone();
        b.insert(Arc::from("topic-7"), 70);
        let leaves =
            |m: &CowMap<u32>| m.mids.iter().flat_map(|mid| mid.iter().cloned()).collect::<Vec<_>>();
        let shared =
            leaves(&a).iter().zip(leaves(&b).iter()).filter(|(x, y)| Arc::ptr_eq(x, y)).count();
        assert_eq!(shared, FANOUT * FANOUT - 1);
        assert_eq!((a.get("topic-7"), b.get("topic-7")), (Some(&7), Some(&70)));
        assert_eq!(b.iter().count(), 20_000);
    }
}
