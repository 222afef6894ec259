//! `Leaf`: one leaf of a [`CowMap`](super::CowMap), a handful of values (each with its key) in
//! one array, a byte of each one's hash beside it in another.
//!
//! Why not a hash table (#25): a leaf holds 8–16 keys, which a hash table keeps in 16 or 32
//! buckets, and copies with its empty buckets; a look-up reads the table's header, then its
//! control bytes, then the slot. Here the tags sit in the leaf itself (up to 24 of them), so a
//! look-up reads the leaf, then the value whose tag matched; a copy is as long as the values.
//! S7's cold start of 1,000,000 topics (the lane copies every leaf a registration touches):
//! 2.88–3.05 s against 3.35–3.57 s with hashbrown leaves, its peak 251–260 against 281–284
//! MiB (one run each, alternated). Tried with the route table's entries in the leaves (no
//! `Arc` each, so a copy touches no entry's reference count): 3.35–3.43 s and 258–272 MiB
//! steady, a leaf copy then being a kilobyte of entries instead of a few pointers.

use smallvec::SmallVec;

use super::Keyed;

/// The values of one leaf and their tags (`tags[i]` is a byte of `values[i]`'s hash).
pub(crate) struct Leaf<V: Keyed> {
    tags: SmallVec<[u8; 24]>,
    values: Vec<V>,
}

/// The byte of a hash a leaf keeps: its top one (the middle node and the leaf are picked by
/// bits 32–47).
fn tag(hash: u64) -> u8 {
    (hash >> 56) as u8
}

/// A copy holds exactly its values: no room to grow (a leaf is copied when first written after
/// a snapshot, and most copies take one or two writes at most).
impl<V: Keyed + Clone> Clone for Leaf<V> {
    fn clone(&self) -> Self {
        super::warm(self.values.iter());
        Self { tags: self.tags.clone(), values: self.values.clone() }
    }
}

/// Its drop lets go of each value, their counts read first (see [`super::warm`]).
impl<V: Keyed> Drop for Leaf<V> {
    fn drop(&mut self) {
        super::warm(self.values.iter());
    }
}

impl<V: Keyed + Clone> Leaf<V> {
    /// A copy with room for `more` values beyond these: a write that adds a key to a shared
    /// leaf copies it once, not once and then again to grow (#25: in the cold start of
    /// 1,000,000 topics a new key's copy and its growth were two allocations, the growth 5 % of
    /// the lane's samples).
    pub(crate) fn copy_with_room(&self, more: usize) -> Self {
        super::warm(self.values.iter());
        let mut values = Vec::with_capacity(self.values.len() + more);
        values.extend_from_slice(&self.values);
        let mut tags = SmallVec::with_capacity(self.tags.len() + more);
        tags.extend_from_slice(&self.tags);
        Self { tags, values }
    }
}

impl<V: Keyed> Leaf<V> {
    /// An empty leaf with room for `n` values.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self { tags: SmallVec::with_capacity(n), values: Vec::with_capacity(n) }
    }
}

impl<V: Keyed> Default for Leaf<V> {
    fn default() -> Self {
        Self { tags: SmallVec::new(), values: Vec::new() }
    }
}

impl<V: Keyed> Leaf<V> {
    fn position(&self, hash: u64, key: &str) -> Option<usize> {
        let tag = tag(hash);
        self.tags
            .iter()
            .enumerate()
            .filter(|(_, t)| **t == tag)
            .map(|(i, _)| i)
            .find(|&i| self.values[i].key() == key)
    }

    pub(crate) fn get(&self, hash: u64, key: &str) -> Option<&V> {
        self.position(hash, key).map(|i| &self.values[i])
    }

    pub(crate) fn get_mut(&mut self, hash: u64, key: &str) -> Option<&mut V> {
        self.position(hash, key).map(|i| &mut self.values[i])
    }

    /// Puts `value` under its key: the value it replaced, if any.
    pub(crate) fn insert(&mut self, hash: u64, value: V) -> Option<V> {
        match self.position(hash, value.key()) {
            Some(i) => Some(std::mem::replace(&mut self.values[i], value)),
            None => {
                self.push(hash, value);
                None
            }
        }
    }

    /// Adds a value whose key the leaf does not have; grows by a quarter when full (a leaf
    /// built key by key, the cold start's, ends at most a quarter larger than its values).
    pub(crate) fn push(&mut self, hash: u64, value: V) {
        if self.values.len() == self.values.capacity() {
            self.reserve((self.values.len() / 4).max(2));
        }
        self.tags.push(tag(hash));
        self.values.push(value);
    }

    /// Room for `more` values beyond those it has.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.values.reserve_exact(more);
        self.tags.reserve_exact(more);
    }

    pub(crate) fn remove(&mut self, hash: u64, key: &str) -> Option<V> {
        let i = self.position(hash, key)?;
        self.tags.swap_remove(i);
        Some(self.values.swap_remove(i))
    }

    /// Fetches the values' array ahead (its first two lines: 16 pointers).
    pub(crate) fn prefetch_values(&self) {
        for i in [0, 8] {
            if let Some(v) = self.values.get(i) {
                mem_prefetch::prefetch_read_data::<_, 3>(v);
            }
        }
    }

    /// Fetches ahead what the values whose tag matches `hash`'s point to, or with `all` what
    /// every value points to (a copy of the leaf counts a reference of each).
    pub(crate) fn prefetch_targets(&self, hash: u64, all: bool) {
        let tag = tag(hash);
        for (t, v) in self.tags.iter().zip(&self.values) {
            if all || *t == tag {
                v.prefetch();
            }
        }
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, V> {
        self.values.iter()
    }

    /// How many values it has room for.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.values.capacity()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    type Pair = (Arc<str>, u32);

    fn pair(key: &str, v: u32) -> Pair {
        (Arc::from(key), v)
    }

    /// Keys whose hashes share a tag are told apart by the key.
    #[test]
    fn values_with_the_same_tag_are_found_by_their_key() {
        let mut leaf: Leaf<Pair> = Leaf::default();
        let same = 0xAB00_0000_0000_0000;
        assert_eq!(leaf.insert(same, pair("a", 1)), None);
        assert_eq!(leaf.insert(same | 1, pair("b", 2)), None);
        assert_eq!(leaf.get(same, "a").map(|p| p.1), Some(1));
        assert_eq!(leaf.get(same | 1, "b").map(|p| p.1), Some(2));
        assert_eq!(leaf.get(same, "c"), None);
        assert_eq!(leaf.insert(same, pair("a", 10)).map(|p| p.1), Some(1));
        assert_eq!(leaf.values.len(), 2);
        assert_eq!(leaf.remove(same, "a").map(|p| p.1), Some(10));
        assert_eq!((leaf.get(same, "a"), leaf.get(same | 1, "b").map(|p| p.1)), (None, Some(2)));
    }

    /// A leaf built key by key keeps at most a quarter (or two) spare; its copy none.
    #[test]
    fn a_leaf_grows_by_a_quarter_and_a_copy_is_exact() {
        let mut leaf: Leaf<Pair> = Leaf::default();
        for i in 0..40u32 {
            leaf.push(u64::from(i) << 56, pair(&format!("k{i}"), i));
            let (len, cap) = (leaf.values.len(), leaf.values.capacity());
            assert!(cap <= len + (len / 4).max(2), "{len} values in room for {cap}");
        }
        let copy = leaf.clone();
        assert_eq!(copy.values.capacity(), 40);
        assert!((0..40u32).all(|i| copy.get(u64::from(i) << 56, &format!("k{i}")).is_some()));
    }
}
