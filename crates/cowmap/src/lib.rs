//! `CowMap`: a string-keyed map split into leaves under a two-level tree of shared nodes, copied
//! on first write, so cloning the whole route table for a new snapshot costs about a thousand
//! reference counts, and a write that touches k topics copies at most k leaves (plus the
//! middle nodes above them), never the whole table. A value carries its own key ([`Keyed`]),
//! so a leaf's slot is the value alone.
//!
//! Why two levels (#25): with one level of 256 shards a 10,000-topic registration at 1,000,000
//! topics touched every shard and so copied the whole table (S7's profile, bench/results/
//! scale.md: 61 % of the registration lane's time in this copy; 599 ms for a changed
//! 10k-topic table at 1M topics against 72 ms at 10k). At 1M a middle node splits into its
//! 64 leaves of ~15 topics, so the same registration copies ~150k entries instead of 1M, and a
//! small one (the 1 % churn) a few hundred.
//!
//! Why 1,024 middle nodes of up to 64 leaves rather than 256 of 256 (the same 65,536 leaves
//! at most, the same depth): a write copies the middle node above each leaf it touches, a
//! reference count per leaf of the node. Under S7's 1 % churn at 1,000,000 topics a
//! registration changes ~100 topics, so ~100 middle nodes: with 256 leaves each that copy was
//! half the lane's samples, and the reaper dropped as many. With 64, over 10 s of that
//! churn (two runs alternated): lane 0.92–0.98 against 1.16–1.18 CPU-s, reaper 0.41–0.43
//! against 0.65–0.67, reads 275–302k against 257–268k/s. A snapshot's clone counts 1,024
//! nodes instead of 256, once per publication. 2,048 of 32 (tried for #25): the 1 % churn's
//! writes and drops ~20 % cheaper in `examples/churn.rs`, S7's churn no different within this
//! machine's noise, S2's registrations slower in every paired round (p99 1.38×) and its reads
//! 0.90× (`bench/results/paired-25-fanout/`).
//!
//! Why the leaves per middle node grow with it (#23's paired S1 rounds): a fixed 65,536 leaves
//! left a 40,000-topic table with one key per leaf, spread over 65,536 small allocations, and a
//! route read's look-up took 63 ns against 35 ns with the old 256 shards (S1 0.91×). A middle
//! node now starts with one leaf and doubles its leaves when they hold more than
//! [`LEAF_KEYS`] keys on average (only its own keys move, 1/1,024 of the table), so a leaf holds
//! 8–16 keys at any size (`examples/lookups.rs` measures the look-up). Not 4–8 (tried for #25:
//! copying a leaf costs a reference count per key, 28 % of the lane's cold start of 1M topics,
//! and halving the leaves made that ~8 % faster, but S1's reads 10 % slower in paired rounds:
//! the look-up's share of the server's time went from 13 % to 21 %).

mod buckets;
mod key;
mod leaf;
mod pair;

pub use buckets::Buckets;
pub use key::InlineKey;
pub use pair::{ByPair, Shared};

use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use leaf::Leaf;

/// Middle nodes under the root.
const FANOUT: usize = 1024;

/// The most leaves under one middle node.
const LEAVES: usize = 64;

/// A middle node doubles its leaves when they would hold more than this many keys on average.
const LEAF_KEYS: usize = 16;

/// What a [`CowMap`] holds: a value that carries its own key, so a leaf's slot is the value
/// alone (#25: one pointer per topic instead of a key beside it; at 1,000,000 topics the
/// leaves were 42 MB live, and twice that in the allocator's pages after the cold start's
/// copies). A `(key, value)` pair is one too.
pub trait Keyed {
    fn key(&self) -> &str;

    /// Hints the processor to fetch what reading the key will read, without reading it (see
    /// [`CowMap::fetch_ahead`]); nothing for a value that holds its key inline.
    fn prefetch(&self) {}

    /// Hints the processor to fetch this value's own bytes that its readers read: the line it
    /// starts on, unless it says more (a value behind an `Arc` that spans two lines).
    fn prefetch_lines(&self)
    where
        Self: Sized,
    {
        mem_prefetch::prefetch_read_data::<Self, 3>(self);
    }

    /// Reads the value's reference count, where it has one (an `Arc`'s), in a plain load; 0
    /// for a value without. See [`warm`].
    fn count(&self) -> usize {
        0
    }
}

/// Reads the reference counts of `values` before a copy or a drop updates them one by one
/// (#25): an update is a locked instruction, which waits for its line before the next one
/// starts, so a leaf's copy (or its drop) took one cache miss after another, while plain loads
/// of the same lines overlap. The sum is only there so that the loads are kept.
fn warm<'a, V: Keyed + 'a>(values: impl Iterator<Item = &'a V>) {
    std::hint::black_box(values.map(Keyed::count).fold(0usize, usize::wrapping_add));
}

impl<T: Keyed> Keyed for Arc<T> {
    fn key(&self) -> &str {
        (**self).key()
    }

    fn prefetch(&self) {
        (**self).prefetch_lines();
    }

    fn count(&self) -> usize {
        Arc::strong_count(self)
    }
}

impl<V> Keyed for (Arc<str>, V) {
    fn key(&self) -> &str {
        &self.0
    }

    fn count(&self) -> usize {
        Arc::strong_count(&self.0)
    }
}

/// A string-keyed map with copy-on-write nodes. A value is cloned when a write copies its leaf:
/// it should be small and cheap to clone (an `Arc`, or a small struct of them).
/// A key is hashed once (foldhash, seeded per map): bits 32–41 pick the middle node, the next
/// bits (as many as its leaves need, up to 6) the leaf, and the top byte is the value's tag in
/// its leaf ([`leaf`]).
#[derive(Clone)]
pub struct CowMap<V: Keyed> {
    mids: [Slot<V>; FANOUT],
    hasher: RandomState,
    len: usize,
}

/// The root's pointer to a middle node, beside the node's mask (`mask + 1` leaves in use, a
/// power of two): a look-up reads both from one line of the root, then the leaf pointer from
/// the node, then the leaf, then the value (as many dependent reads as a one-level map of
/// shards).
#[derive(Clone)]
struct Slot<V: Keyed> {
    mask: usize,
    node: Arc<Mid<V>>,
}

/// A middle node: its leaves, shared until written (those past the mask point to the empty
/// leaf), inline in its `Arc`, and how many keys they hold.
struct Mid<V: Keyed> {
    len: usize,
    leaves: [Arc<Leaf<V>>; LEAVES],
}

impl<V: Keyed> Mid<V> {
    /// Reads its leaves' reference counts before a copy or a drop updates them (see [`warm`]).
    fn warm(&self) {
        std::hint::black_box(self.leaves.iter().map(Arc::strong_count).sum::<usize>());
    }
}

/// A copy counts a reference of each leaf, their counts read first.
impl<V: Keyed> Clone for Mid<V> {
    fn clone(&self) -> Self {
        self.warm();
        Self { len: self.len, leaves: self.leaves.clone() }
    }
}

/// Its drop lets go of each leaf, their counts read first.
impl<V: Keyed> Drop for Mid<V> {
    fn drop(&mut self) {
        self.warm();
    }
}

impl<V: Keyed> Default for CowMap<V> {
    fn default() -> Self {
        // Every slot starts on one shared empty leaf and middle node (copied on first write), so
        // an empty map is a few allocations.
        let leaf: Arc<Leaf<V>> = Arc::new(Leaf::default());
        let mid = Arc::new(Mid { len: 0, leaves: std::array::from_fn(|_| Arc::clone(&leaf)) });
        Self {
            mids: std::array::from_fn(|_| Slot { mask: 0, node: Arc::clone(&mid) }),
            hasher: RandomState::default(),
            len: 0,
        }
    }
}

/// Which middle node a hash lives in (the hasher is shared by clones, so the choice is too).
fn mid_of(hash: u64) -> usize {
    ((hash >> 32) as usize) & (FANOUT - 1)
}

/// Which of a middle node's leaves a hash lives in, given the node's mask.
fn leaf_of(hash: u64, mask: usize) -> usize {
    ((hash >> 42) as usize) & mask
}

/// The mask a middle node holding `len` keys should have.
fn mask_for(len: usize) -> usize {
    let leaves = len.div_ceil(LEAF_KEYS).next_power_of_two().min(LEAVES);
    leaves - 1
}

impl<V: Keyed + Clone> Slot<V> {
    /// The node made private to this map, with its mask grown for `len` keys: each doubling
    /// splits every leaf between it and its new sibling by the next hash bit (new tables; the
    /// old leaves stay with any snapshot that shares them).
    fn private_for(&mut self, len: usize, hasher: &RandomState) -> (&mut Mid<V>, usize) {
        let node = Arc::make_mut(&mut self.node);
        while self.mask < mask_for(len) {
            let old = self.mask + 1;
            for j in 0..old {
                // Each half sized for its share and a little more (not grown a few at a time).
                let n = node.leaves[j].iter().len();
                let half = n / 2 + n / 8 + 2;
                let (mut low, mut high) = (Leaf::with_capacity(half), Leaf::with_capacity(half));
                for v in node.leaves[j].iter() {
                    let hash = hasher.hash_one(v.key());
                    let to = if leaf_of(hash, 2 * old - 1) == j { &mut low } else { &mut high };
                    to.push(hash, v.clone());
                }
                node.leaves[j] = Arc::new(low);
                node.leaves[j + old] = Arc::new(high);
            }
            self.mask = 2 * old - 1;
        }
        (node, self.mask)
    }
}

impl<V: Keyed + Clone> CowMap<V> {
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
        let slot = &self.mids[mid_of(hash)];
        &slot.node.leaves[leaf_of(hash, slot.mask)]
    }

    /// Middle node `m`, made private to this map with room for `more` keys, and its mask.
    fn mid_mut(&mut self, m: usize, more: usize) -> (&mut Mid<V>, usize) {
        let slot = &mut self.mids[m];
        let len = slot.node.len + more;
        slot.private_for(len, &self.hasher)
    }

    pub fn get(&self, key: &str) -> Option<&V> {
        self.get_hashed(self.hash(key), key)
    }

    /// [`CowMap::get`] for a key whose [`CowMap::hash_of`] the caller has: a run of writes
    /// hashes each key once (at 1,000,000 topics the lane hashed each topic three times, 3 %
    /// of its samples).
    pub fn get_hashed(&self, hash: u64, key: &str) -> Option<&V> {
        debug_assert_eq!(hash, self.hash(key));
        self.leaf(hash).get(hash, key)
    }

    /// The hash this map files `key` under (for [`CowMap::fetch_ahead`]).
    pub fn hash_of(&self, key: &str) -> u64 {
        self.hash(key)
    }

    /// For a run of look-ups and writes of the keys whose hashes ([`CowMap::hash_of`]) are
    /// `hashes`, in order, now at the `i`th: fetches ahead what the later ones will read, a step
    /// of each one's chain of dependent reads at a time (the leaf of the 12th next, its values
    /// of the 8th next, and the values the tag picks, with every value when the leaf is shared
    /// and a write would copy it counting a reference of each, of the 4th next). A hint only.
    /// At a fleet's cold start of 1,000,000 topics each step of a registration's writes missed
    /// the cache: the look-ups were 20 % of the lane's samples and the leaf copies 16 %; with
    /// this 2 % and 6 %, and the fetching itself 16 % (the misses now taken ahead) (#25).
    pub fn fetch_ahead(&self, hashes: &[u64], i: usize) {
        if let Some(&hash) = hashes.get(i + 12) {
            mem_prefetch::prefetch_read_data::<_, 3>(&**self.leaf(hash));
        }
        if let Some(&hash) = hashes.get(i + 8) {
            self.leaf(hash).prefetch_values();
        }
        if let Some(&hash) = hashes.get(i + 4) {
            let leaf = self.leaf(hash);
            leaf.prefetch_targets(hash, Arc::strong_count(leaf) > 1);
        }
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Inserts or replaces (under the value's key); copies the leaf (and its middle node) if
    /// shared with a snapshot.
    pub fn insert(&mut self, value: V) -> Option<V> {
        self.insert_hashed(self.hash(value.key()), value)
    }

    /// [`CowMap::insert`] with the value's key's hash given (see [`CowMap::get_hashed`]).
    pub fn insert_hashed(&mut self, hash: u64, value: V) -> Option<V> {
        debug_assert_eq!(hash, self.hash(value.key()));
        // Room for one more key only when it is new (a replacement never moves a leaf).
        let new = self.leaf(hash).get(hash, value.key()).is_none();
        let (mid, mask) = self.mid_mut(mid_of(hash), usize::from(new));
        let slot = &mut mid.leaves[leaf_of(hash, mask)];
        if new && Arc::get_mut(slot).is_none() {
            *slot = Arc::new(slot.copy_with_room(2));
        }
        let old = Arc::make_mut(slot).insert(hash, value);
        if old.is_none() {
            mid.len += 1;
            self.len += 1;
        }
        old
    }

    /// The value under `key`, made private to this map (its leaf and middle node copied when
    /// shared); nothing is copied when the key is absent. The value's key must not change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.get_mut_hashed(self.hash(key), key)
    }

    /// [`CowMap::get_mut`] with the key's hash given (see [`CowMap::get_hashed`]).
    pub fn get_mut_hashed(&mut self, hash: u64, key: &str) -> Option<&mut V> {
        debug_assert_eq!(hash, self.hash(key));
        self.leaf(hash).get(hash, key)?;
        let (mid, mask) = self.mid_mut(mid_of(hash), 0);
        Arc::make_mut(&mut mid.leaves[leaf_of(hash, mask)]).get_mut(hash, key)
    }

    /// Removes; copies the leaf only when the key is present. (A middle node keeps its leaves:
    /// a table that shrank is looked up as fast as before.)
    pub fn remove(&mut self, key: &str) -> Option<V> {
        let hash = self.hash(key);
        self.leaf(hash).get(hash, key)?;
        let (mid, mask) = self.mid_mut(mid_of(hash), 0);
        let leaf = Arc::make_mut(&mut mid.leaves[leaf_of(hash, mask)]);
        let old = leaf.remove(hash, key)?;
        mid.len -= 1;
        self.len -= 1;
        Some(old)
    }

    /// Inserts every entry of `entries`, leaf by leaf: each key hashed once, each middle node
    /// grown once for its new keys, the entries sorted by the leaf their hash picks, each leaf
    /// sized once, so each leaf and middle node is reached once, in order, and no key's bytes
    /// are read again (a route snapshot restore: one random walk of the tree per key, and a
    /// re-hash of keys long out of the cache, made 1,000,000 inserts 2–3× slower). Returns how
    /// many keys were already present (their value replaced).
    pub fn insert_many(&mut self, entries: Vec<V>) -> usize {
        let hashed = entries.into_iter().map(|v| (self.hash(v.key()), v)).collect();
        self.insert_many_hashed(hashed)
    }

    /// [`CowMap::insert_many`] with each value's key's hash given ([`CowMap::hash_of`]).
    pub fn insert_many_hashed(&mut self, mut hashed: Vec<(u64, V)>) -> usize {
        debug_assert!(hashed.iter().all(|(hash, v)| *hash == self.hash(v.key())));
        // Room first (counting every key as new), so the leaf of a hash no longer moves.
        let mut more = [0usize; FANOUT];
        for (hash, _) in &hashed {
            more[mid_of(*hash)] += 1;
        }
        for (m, &n) in more.iter().enumerate().filter(|(_, n)| **n > 0) {
            self.mid_mut(m, n);
        }
        let slot_of = |mids: &[Slot<V>; FANOUT], hash: u64| {
            let m = mid_of(hash);
            (m, leaf_of(hash, mids[m].mask))
        };
        hashed.sort_unstable_by_key(|(hash, _)| slot_of(&self.mids, *hash));
        let runs: Vec<usize> = hashed
            .chunk_by(|a, b| slot_of(&self.mids, a.0) == slot_of(&self.mids, b.0))
            .map(<[_]>::len)
            .collect();
        let (mut inserted, mut replaced) = (0, 0);
        let mut entries = hashed.into_iter();
        for run in runs {
            let mut run_entries = entries.by_ref().take(run).peekable();
            let Some(&(hash, _)) = run_entries.peek() else { break };
            let (mid, mask) = self.mid_mut(mid_of(hash), 0);
            let leaf = Arc::make_mut(&mut mid.leaves[leaf_of(hash, mask)]);
            leaf.reserve(run);
            for (hash, value) in run_entries {
                if leaf.insert(hash, value).is_some() {
                    replaced += 1;
                } else {
                    mid.len += 1;
                    inserted += 1;
                }
            }
        }
        self.len += inserted;
        replaced
    }

    /// Every entry, leaf by leaf (no particular order). The leaves ahead are fetched a step of
    /// their chain at a time, as [`CowMap::fetch_ahead`] does: the leaf six ahead, its values
    /// four ahead, what they point to two ahead. A scan of every topic at 1,000,000 topics (an
    /// unregistration's, #25) was a cache miss per entry: ~100 ms.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        scan(self.leaves())
    }

    /// The entries of the leaves that hold `buckets`' keys ([`bucket`]), each leaf once: every
    /// key in those buckets, and the others that share their leaves. A scan for the keys a
    /// [`Buckets`] owner may have reads those leaves, not the whole map (#25: removing a
    /// 10,000-topic broker group read all 1,000,000 topics, ~85 ms of the registration lane).
    pub fn iter_buckets(
        &self,
        buckets: impl IntoIterator<Item = u16>,
    ) -> impl Iterator<Item = (&str, &V)> {
        let mut ids: Vec<u32> = buckets
            .into_iter()
            .map(|b| {
                let (m, l) = (usize::from(b) & (FANOUT - 1), usize::from(b) >> FANOUT.ilog2());
                (m * LEAVES + (l & self.mids[m].mask)) as u32
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let leaf = move |id: u32| {
            let id = id as usize;
            &self.mids[id / LEAVES].node.leaves[id % LEAVES]
        };
        scan(ids.into_iter().map(leaf))
    }

    /// Every leaf in use, node by node.
    fn leaves(&self) -> impl Iterator<Item = &Arc<Leaf<V>>> + Clone {
        self.mids.iter().flat_map(|slot| slot.node.leaves[..=slot.mask].iter())
    }
}

/// The entries of `leaves`, fetching the leaves ahead a step of their chain at a time (see
/// [`CowMap::iter`]).
fn scan<'a, V: Keyed + 'a>(
    leaves: impl Iterator<Item = &'a Arc<Leaf<V>>> + Clone,
) -> impl Iterator<Item = (&'a str, &'a V)> {
    let (mut far, mut near, mut next) =
        (leaves.clone().skip(6), leaves.clone().skip(4), leaves.clone().skip(2));
    leaves.flat_map(move |leaf| {
        if let Some(far) = far.next() {
            mem_prefetch::prefetch_read_data::<_, 3>(&**far);
        }
        if let Some(near) = near.next() {
            near.prefetch_values();
        }
        if let Some(next) = next.next() {
            next.prefetch_targets(0, true);
        }
        leaf.iter().map(|v| (v.key(), v))
    })
}

/// A key's bucket: the bits of its hash ([`CowMap::hash_of`]) that pick its middle node and,
/// at the most leaves a node has, its leaf. A bucket's keys sit in one leaf whatever size its
/// node has grown to, so a set of buckets names the leaves to read ([`CowMap::iter_buckets`]).
pub fn bucket(hash: u64) -> u16 {
    const _: () = assert!(FANOUT * LEAVES == 1 << 16);
    (hash >> 32) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pair = (Arc<str>, u32);

    /// The value under `key`.
    fn get(m: &CowMap<Pair>, key: &str) -> Option<u32> {
        m.get(key).map(|(_, v)| *v)
    }

    /// A key added to a leaf shared with a snapshot is written into a copy made with room
    /// for it: the copy is not grown again (by a quarter) to take it.
    #[test]
    fn a_key_added_to_a_shared_leaf_goes_into_a_copy_with_room() {
        let mut m: CowMap<Pair> = CowMap::default();
        m.insert_many((0..40_000).map(|i| (Arc::from(format!("t{i}")), 0)).collect());
        let snapshot = m.clone();
        // A new key whose leaf holds at least 12 keys (a quarter more would be 3 or more), in a
        // middle node that one more key does not split (a split sizes its leaves its own way).
        let key = (40_000..)
            .map(|i| format!("t{i}"))
            .find(|k| {
                let (hash, slot) = (m.hash(k), &m.mids[mid_of(m.hash(k))]);
                m.leaf(hash).iter().len() >= 12 && mask_for(slot.node.len + 1) == slot.mask
            })
            .expect("a full leaf");
        let before = m.leaf(m.hash(&key)).iter().len();
        m.insert((Arc::from(key.as_str()), 1));
        let leaf = m.leaf(m.hash(&key));
        assert_eq!((leaf.iter().len(), leaf.capacity()), (before + 1, before + 2));
        assert_eq!(snapshot.leaf(snapshot.hash(&key)).iter().len(), before, "the snapshot's own");
    }

    /// Every leaf in use, middle node by middle node.
    fn leaves(m: &CowMap<Pair>) -> Vec<Arc<Leaf<Pair>>> {
        m.mids.iter().flat_map(|s| s.node.leaves[..=s.mask].iter().cloned()).collect()
    }

    /// The leaves grow with the table, so a leaf holds a handful of keys at any size: 40,000
    /// keys do not spread over 65,536 leaves (one key each), and 1,000,000 use all of them.
    #[test]
    fn leaves_hold_a_handful_of_keys_at_any_size() {
        for (n, step) in [(100usize, 1usize), (40_000, 1), (1_000_000, 1)] {
            let mut m: CowMap<Pair> = CowMap::default();
            let keys: Vec<_> =
                (0..n).step_by(step).map(|i| (Arc::from(format!("t{i}")), 0)).collect();
            m.insert_many(keys);
            let used = leaves(&m).len();
            let per_leaf = n as f64 / used as f64;
            assert!(used <= FANOUT * LEAVES);
            assert!(per_leaf <= LEAF_KEYS as f64, "{n} keys: {used} leaves");
            if n >= 40_000 {
                assert!(per_leaf >= 8.0, "{n} keys in {used} leaves: too many leaves");
            }
            assert_eq!(m.iter().count(), n);
        }
    }

    /// A node that grows leaves its old leaves to the snapshot that shares them: one key at a
    /// time, the snapshot taken at every step still reads exactly its keys.
    #[test]
    fn growing_a_node_leaves_every_snapshot_whole() {
        let mut m: CowMap<Pair> = CowMap::default();
        let mut snapshots = Vec::new();
        for i in 0..20_000u32 {
            m.insert((Arc::from(format!("k{i}")), i));
            if i % 2_000 == 0 {
                snapshots.push((i, m.clone()));
            }
        }
        for (last, s) in &snapshots {
            assert_eq!(s.len(), *last as usize + 1);
            assert!((0..=*last).all(|i| get(s, &format!("k{i}")) == Some(i)));
            assert_eq!(get(s, &format!("k{}", last + 1)), None);
        }
        assert!(leaves(&m).len() > FANOUT, "the nodes grew");
    }

    #[test]
    fn clone_shares_until_written_and_writes_stay_private() {
        let mut a: CowMap<Pair> = CowMap::default();
        a.insert((Arc::from("t1"), 1));
        a.insert((Arc::from("t2"), 2));
        let b = a.clone();
        let t1 = a.hash("t1");
        assert!(Arc::ptr_eq(a.leaf(t1), b.leaf(t1)));
        a.insert((Arc::from("t1"), 10));
        assert_eq!(get(&a, "t1"), Some(10));
        assert_eq!(get(&b, "t1"), Some(1));
        assert!(!Arc::ptr_eq(a.leaf(t1), b.leaf(t1)));
        assert_eq!(a.remove("t2").map(|(_, v)| v), Some(2));
        assert_eq!(a.remove("t2"), None);
        assert_eq!((a.len(), b.len()), (1, 2));
        assert_eq!(b.iter().count(), 2);
    }

    #[test]
    fn insert_many_is_insert_of_each() {
        let mut a: CowMap<Pair> = CowMap::default();
        a.insert((Arc::from("t3"), 0));
        let snapshot = a.clone();
        let entries = (0..5_000).map(|i| (Arc::from(format!("t{i}")), i)).collect();
        assert_eq!(a.insert_many(entries), 1, "t3 was there");
        assert_eq!(a.len(), 5_000);
        assert!((0..5_000).all(|i| get(&a, &format!("t{i}")) == Some(i)));
        assert_eq!((snapshot.len(), get(&snapshot, "t3")), (1, Some(0)), "a snapshot unchanged");
    }

    /// A value changed through `get_mut` changes in this map only; an absent key copies
    /// nothing.
    #[test]
    fn get_mut_writes_a_private_copy() {
        let mut a: CowMap<Pair> = CowMap::default();
        a.insert_many((0..1_000).map(|i| (Arc::from(format!("t{i}")), i)).collect());
        let b = a.clone();
        a.get_mut("t7").expect("t7").1 = 70;
        assert_eq!((get(&a, "t7"), get(&b, "t7")), (Some(70), Some(7)));
        assert!(!Arc::ptr_eq(a.leaf(a.hash("t7")), b.leaf(b.hash("t7"))));
        let mut c = b.clone();
        assert!(c.get_mut("nope").is_none());
        assert!(b.mids.iter().zip(c.mids.iter()).all(|(x, y)| Arc::ptr_eq(&x.node, &y.node)));
    }

    #[test]
    fn removing_an_absent_key_copies_nothing() {
        let a: CowMap<Pair> = CowMap::default();
        let mut b = a.clone();
        assert_eq!(b.remove("nope"), None);
        assert!(a.mids.iter().zip(b.mids.iter()).all(|(x, y)| Arc::ptr_eq(&x.node, &y.node)));
    }

    /// A write copies the leaves it touches, not the table: after one insert into a clone of a
    /// 20,000-key map every leaf but one is still shared.
    #[test]
    fn a_write_copies_one_leaf_not_the_table() {
        let mut a: CowMap<Pair> = CowMap::default();
        for i in 0..20_000 {
            a.insert((Arc::from(format!("topic-{i}")), i));
        }
        let mut b = a.clone();
        b.insert((Arc::from("topic-7"), 70));
        let shared =
            leaves(&a).iter().zip(leaves(&b).iter()).filter(|(x, y)| Arc::ptr_eq(x, y)).count();
        assert_eq!(shared, leaves(&a).len() - 1);
        assert_eq!((get(&a, "topic-7"), get(&b, "topic-7")), (Some(7), Some(70)));
        assert_eq!(b.iter().count(), 20_000);
    }

    /// A value that holds its own key, behind an `Arc` (as the route table's topic entries).
    struct Named {
        name: Box<str>,
        n: u32,
    }

    impl Keyed for Named {
        fn key(&self) -> &str {
            &self.name
        }
    }

    #[test]
    fn a_value_that_carries_its_key_is_found_by_it() {
        let named = |name: &str, n| Arc::new(Named { name: name.into(), n });
        let mut m: CowMap<Arc<Named>> = CowMap::default();
        m.insert_many((0..100).map(|i| named(&format!("t{i}"), i)).collect());
        assert_eq!(m.insert(named("t5", 50)).map(|old| old.n), Some(5));
        assert_eq!(m.get("t5").map(|v| v.n), Some(50));
        assert_eq!(m.get("t6").map(|v| (v.key(), v.n)), Some(("t6", 6)));
        assert_eq!(m.remove("t7").map(|old| old.n), Some(7));
        assert_eq!((m.len(), m.iter().filter(|(k, v)| *k == &*v.name).count()), (99, 99));
    }
}
