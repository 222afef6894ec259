//! `Buckets`: per owner (a broker group), the [`bucket`]s of a [`CowMap`](super::CowMap) where
//! its keys may be, so that finding an owner's keys reads those leaves
//! ([`CowMap::iter_buckets`](super::CowMap::iter_buckets)) instead of the whole map.
//!
//! A superset: the caller marks the bucket of every key it gives an owner, and a mark stays
//! until the owner is forgotten (a key that leaves costs a leaf read more, never a key missed).
//! Why (#25): removing a broker group, wiping its write permission or deleting the topics its
//! body no longer has read every topic; at 1,000,000 topics an unregistration held the
//! registration lane ~85 ms, whatever the group's size.
//!
//! Each owner's set is a `RoaringBitmap` (the field's compressed bitmap): 2 bytes a bucket up
//! to 4,096 of them, 8 KiB past that (a 10,000-topic group's ~9,300 buckets of 65,536), shared
//! by snapshots and copied when first marked after one.

use std::sync::Arc;

use roaring::RoaringBitmap;

use super::{bucket, Shared};

/// Per owner, the buckets that may hold its keys.
#[derive(Clone, Default)]
pub struct Buckets {
    by: Shared<Arc<str>, Arc<RoaringBitmap>>,
}

impl Buckets {
    /// Marks the buckets of `hashes` ([`CowMap::hash_of`](super::CowMap::hash_of)) as
    /// `owner`'s: sorted once, the owner's set copied (when a snapshot shares it) only when
    /// one is new.
    pub fn mark(&mut self, owner: &Arc<str>, hashes: impl IntoIterator<Item = u64>) {
        let mut new: Vec<u16> = hashes.into_iter().map(bucket).collect();
        if new.is_empty() {
            return; // most registrations add no (topic, group) pair
        }
        if let Some(set) = self.by.get(owner) {
            new.retain(|b| !set.contains(u32::from(*b)));
        }
        if new.is_empty() {
            return;
        }
        new.sort_unstable();
        new.dedup();
        let batch = RoaringBitmap::from_sorted_iter(new.into_iter().map(u32::from))
            .expect("sorted and deduplicated");
        *Arc::make_mut(self.by.entry(owner.clone()).or_default()) |= batch;
    }

    /// The buckets that may hold a key of any of `owners`, ascending.
    pub fn of<'a>(&self, owners: impl IntoIterator<Item = &'a str>) -> Vec<u16> {
        let mut all = RoaringBitmap::new();
        for set in owners.into_iter().filter_map(|owner| self.by.get(owner)) {
            all |= &**set;
        }
        // Every bucket is below 2^16: marks are made from `u16`s.
        all.iter().map(|b| b as u16).collect()
    }

    /// Drops `owner`'s marks (it has no key left).
    pub fn forget(&mut self, owner: &str) {
        self.by.remove(owner);
    }

    /// How many owners have marks.
    pub fn owners(&self) -> usize {
        self.by.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::CowMap;
    use super::*;

    type Pair = (Arc<str>, u32);

    /// An owner's keys are all found by a scan of its buckets, which reads a few leaves of a
    /// large map, not the map.
    #[test]
    fn an_owners_keys_are_found_in_its_buckets_without_reading_the_map() {
        let mut m: CowMap<Pair> = CowMap::default();
        m.insert_many((0..200_000).map(|i| (Arc::from(format!("t{i}")), i % 100)).collect());
        let (mut buckets, owner) = (Buckets::default(), Arc::from("g7"));
        buckets.mark(
            &owner,
            (0..200_000).filter(|i| i % 100 == 7).map(|i| m.hash_of(&format!("t{i}"))),
        );
        let scanned: Vec<_> = m.iter_buckets(buckets.of(["g7"])).collect();
        let mut found: Vec<u32> = scanned
            .iter()
            .filter(|(_, (_, v))| *v == 7)
            .map(|(k, _)| k[1..].parse().unwrap())
            .collect();
        found.sort_unstable();
        assert_eq!(found, (0..200_000).filter(|i| i % 100 == 7).collect::<Vec<_>>());
        // 2,000 keys in ~1,900 of the 16,384 leaves of ~12 keys: ~24,000 read, not 200,000.
        assert!(scanned.len() < 40_000, "read {} entries for 2,000 keys", scanned.len());
        let mut keys: Vec<&str> = scanned.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), scanned.len(), "each leaf read once");
    }

    /// A bucket names its leaf whatever size its middle node has grown to since the mark.
    #[test]
    fn a_mark_made_on_a_small_map_still_finds_the_key_after_it_grew() {
        let mut m: CowMap<Pair> = CowMap::default();
        let (mut buckets, owner) = (Buckets::default(), Arc::from("g"));
        m.insert((Arc::from("mine"), 1));
        buckets.mark(&owner, [m.hash_of("mine")]);
        m.insert_many((0..300_000).map(|i| (Arc::from(format!("t{i}")), 0)).collect());
        let found: Vec<_> =
            m.iter_buckets(buckets.of(["g"])).filter(|(k, _)| *k == "mine").collect();
        assert_eq!(found.len(), 1);
    }

    /// Marks are per owner, unioned on request, dropped by `forget`; a clone keeps its own.
    #[test]
    fn marks_are_per_owner_and_a_clone_keeps_its_own() {
        let (mut buckets, a, b) = (Buckets::default(), Arc::from("a"), Arc::from("b"));
        buckets.mark(&a, [1 << 32, 2 << 32]);
        buckets.mark(&b, [2 << 32, 3 << 32 | 5]);
        let snapshot = buckets.clone();
        buckets.mark(&a, [9 << 32, 1 << 32]);
        assert_eq!(buckets.of(["a"]), [1, 2, 9]);
        assert_eq!(buckets.of(["a", "b", "c"]), [1, 2, 3, 9]);
        assert_eq!(snapshot.of(["a"]), [1, 2], "the clone's marks are its own");
        buckets.forget("a");
        assert_eq!((buckets.of(["a"]), buckets.owners()), (vec![], 1));
        buckets.mark(&b, []);
        assert_eq!(buckets.of(["b"]), [2, 3]);
    }
}
