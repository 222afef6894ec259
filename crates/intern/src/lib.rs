//! `Interner`: slices with equal contents share one [`Shared`] list, with something attached.
//!
//! Why (#25): at 1,000,000 topics each topic's queue list (one `(broker, queues)` pair per broker
//! group, 64 bytes for two groups) was its own allocation, though every topic of a cluster has
//! the same list: 64 MB of the 232 MB route table (heaptrack of the table built in process).
//! Interned, a cluster's 10,000 topics share one list. What is attached to a list (the route
//! table attaches its encoded route bodies) is shared with it.
//!
//! The interner holds a reference to each list it gave out. A list that nothing else holds any
//! more is dropped by the next sweep, which runs when the set has doubled since the last one:
//! the work stays proportional to the lists made, and the set at most twice the lists in use.

use std::hash::{BuildHasher, Hash};
use std::ops::Deref;
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::HashTable;

/// The fewest lists the set holds before a sweep is worth it.
const MIN_SWEEP: usize = 1024;

/// A list given out by an [`Interner`]: its items (it derefs to them) and what is attached to
/// it, which starts as `A::default()` and lives as long as the list.
#[derive(Debug, Default)]
pub struct Shared<T, A = ()> {
    items: Box<[T]>,
    pub attached: A,
}

impl<T, A> Deref for Shared<T, A> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items
    }
}

/// A set of shared lists, looked up by content.
pub struct Interner<T, A = ()> {
    set: HashTable<Arc<Shared<T, A>>>,
    hasher: RandomState,
    /// The set's size after the last sweep.
    swept: usize,
}

impl<T, A> Default for Interner<T, A> {
    fn default() -> Self {
        Self { set: HashTable::new(), hasher: RandomState::default(), swept: 0 }
    }
}

impl<T: Hash + Eq + Clone, A: Default> Interner<T, A> {
    /// The shared list equal to `items`: the one given out before, or a new one.
    pub fn share(&mut self, items: &[T]) -> Arc<Shared<T, A>> {
        let hash = self.hasher.hash_one(items);
        if let Some(found) = self.set.find(hash, |held| held.items[..] == *items) {
            return Arc::clone(found);
        }
        if self.set.len() >= (2 * self.swept).max(MIN_SWEEP) {
            self.sweep();
        }
        let shared = Arc::new(Shared { items: items.into(), attached: A::default() });
        let hasher = &self.hasher;
        self.set.insert_unique(hash, Arc::clone(&shared), |held| hasher.hash_one(&held.items[..]));
        shared
    }

    /// Drops the lists only the interner holds.
    pub fn sweep(&mut self) {
        self.set.retain(|held| Arc::strong_count(held) > 1);
        self.swept = self.set.len();
    }

    /// How many distinct lists the interner holds (those no longer used included, until the
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
        let mut interner: Interner<String> = Interner::default();
        let a = interner.share(&["x".to_owned(), "y".to_owned()]);
        let b = interner.share(&["x".to_owned(), "y".to_owned()]);
        let c = interner.share(&["x".to_owned()]);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(interner.len(), 2);
    }

    #[test]
    fn a_sweep_drops_what_only_the_interner_holds() {
        let mut interner: Interner<i32> = Interner::default();
        let kept = interner.share(&[1, 2]);
        drop(interner.share(&[3]));
        assert_eq!(interner.len(), 2);
        interner.sweep();
        assert_eq!(interner.len(), 1);
        assert!(Arc::ptr_eq(&kept, &interner.share(&[1, 2])), "the held one stays shared");
    }

    #[test]
    fn what_is_attached_to_a_list_is_shared_by_its_holders() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let mut interner: Interner<u8, AtomicUsize> = Interner::default();
        let a = interner.share(&[1]);
        a.attached.fetch_add(5, Ordering::Relaxed);
        assert_eq!(interner.share(&[1]).attached.load(Ordering::Relaxed), 5);
        assert_eq!(interner.share(&[2]).attached.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn the_set_stays_within_twice_the_slices_in_use() {
        let mut interner: Interner<u32> = Interner::default();
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
            let mut interner: Interner<u8> = Interner::default();
            let mut out = Vec::new();
            for list in &lists {
                let shared = interner.share(list);
                prop_assert_eq!(&shared[..], &list[..]);
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
