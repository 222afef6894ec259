//! `Interner`: slices with equal contents share one `Arc<[T]>`.
//!
//! Why (#25): at 1,000,000 topics each topic's queue list (one `(broker, queues)` pair per broker
//! group, 64 bytes for two groups) was its own allocation, though every topic of a cluster has
//! the same list: 64 MB of the 232 MB route table (heaptrack of the table built in process).
//! Interned, a cluster's 10,000 topics share one list.
//!
//! The interner holds a reference to each list it gave out. A list that nothing else holds any
//! more is dropped by the next sweep, which runs when the set has doubled since the last one:
//! the work stays proportional to the lists made, and the set at most twice the lists in use.

use std::hash::{BuildHasher, Hash};
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// The fewest lists the set holds before a sweep is worth it.
const MIN_SWEEP: usize = 1024;

/// A set of shared slices, looked up by content.
pub struct Interner<T> {
    set: HashTable<Arc<[T]>>,
    hasher: RandomState,
    /// The set's size after the last sweep.
    swept: usize,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Self { set: HashTable::new(), hasher: RandomState::default(), swept: 0 }
    }
}

impl<T: Hash + Eq + Clone> Interner<T> {
    /// The shared slice equal to `items`: the one given out before, or a new one.
    pub fn share(&mut self, items: &[T]) -> Arc<[T]> {
        let hash = self.hasher.hash_one(items);
        if let Some(found) = self.set.find(hash, |held| **held == *items) {
            return Arc::clone(found);
        }
        if self.set.len() >= (2 * self.swept).max(MIN_SWEEP) {
            self.sweep();
        }
        let shared: Arc<[T]> = Arc::from(items);
        let hasher = &self.hasher;
        self.set.insert_unique(hash, Arc::clone(&shared), |held| hasher.hash_one(&**held));
        shared
    }

    /// Drops the slices only the interner holds.
    pub fn sweep(&mut self) {
        self.set.retain(|held| Arc::strong_count(held) > 1);
        self.swept = self.set.len();
    }

    /// How many distinct slices the interner holds (those no longer used included, until the
    /// next sweep).
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_contents_share_one_slice() {
        let mut interner = Interner::default();
        let a = interner.share(&["x".to_owned(), "y".to_owned()]);
        let b = interner.share(&["x".to_owned(), "y".to_owned()]);
        let c = interner.share(&["x".to_owned()]);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(interner.len(), 2);
    }

    #[test]
    fn a_sweep_drops_what_only_the_interner_holds() {
        let mut interner = Interner::default();
        let kept = interner.share(&[1, 2]);
        drop(interner.share(&[3]));
        assert_eq!(interner.len(), 2);
        interner.sweep();
        assert_eq!(interner.len(), 1);
        assert!(Arc::ptr_eq(&kept, &interner.share(&[1, 2])), "the held one stays shared");
    }

    #[test]
    fn the_set_stays_within_twice_the_slices_in_use() {
        let mut interner = Interner::default();
        let mut held = Vec::new();
        for i in 0..100_000u32 {
            let list = interner.share(&[i]);
            if i % 10 == 0 {
                held.push(list);
            }
            assert!(
                interner.len() <= (2 * held.len()).max(MIN_SWEEP) + 1,
                "{} held for {} in use",
                interner.len(),
                held.len()
            );
        }
    }

    proptest! {
        #[test]
        fn a_shared_slice_equals_what_was_asked(lists in proptest::collection::vec(
            proptest::collection::vec(0u8..4, 0..4), 0..200)) {
            let mut interner = Interner::default();
            let mut out = Vec::new();
            for list in &lists {
                let shared = interner.share(list);
                prop_assert_eq!(&*shared, &list[..]);
                out.push(shared);
            }
            for (i, a) in lists.iter().enumerate() {
                for (j, b) in lists.iter().enumerate() {
                    prop_assert_eq!(a == b, Arc::ptr_eq(&out[i], &out[j]));
                }
            }
        }
    }
}
