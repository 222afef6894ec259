//! `ByPair`: a persistent map keyed by two strings (the route table's live brokers and filter
//! servers, by cluster and broker address), looked up with two `&str`; and `Shared`, the
//! persistent hash map it is made of.

use std::sync::Arc;

/// A persistent hash map: a clone shares every node, a write copies the path to its key.
pub type Shared<K, V> =
    imbl::GenericHashMap<K, V, foldhash::fast::RandomState, imbl::shared_ptr::DefaultSharedPtr>;

/// A map keyed by (outer, inner) string pairs, an inner map per outer key (dropped when empty).
#[derive(Clone)]
pub struct ByPair<V> {
    map: Shared<Arc<str>, Shared<Arc<str>, V>>,
}

impl<V: Clone> Default for ByPair<V> {
    fn default() -> Self {
        Self { map: Shared::default() }
    }
}

impl<V: Clone> ByPair<V> {
    pub fn get(&self, outer: &str, inner: &str) -> Option<&V> {
        self.map.get(outer)?.get(inner)
    }

    /// Stores `value`; the value it replaced, if any.
    pub fn insert(&mut self, outer: &Arc<str>, inner: &Arc<str>, value: V) -> Option<V> {
        self.map.entry(outer.clone()).or_default().insert(inner.clone(), value)
    }

    pub fn remove(&mut self, outer: &str, inner: &str) -> Option<V> {
        let map = self.map.get_mut(outer)?;
        let old = map.remove(inner);
        if map.is_empty() {
            self.map.remove(outer);
        }
        old
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn len(&self) -> usize {
        self.map.values().map(Shared::len).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, &V)> {
        self.map.iter().flat_map(|(outer, map)| map.iter().map(move |(inner, v)| (outer, inner, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_stored_removed_and_counted() {
        let (a, b, x) = (Arc::from("a"), Arc::from("b"), Arc::from("x"));
        let mut map = ByPair::default();
        assert_eq!(map.insert(&a, &x, 1), None);
        assert_eq!(map.insert(&b, &x, 2), None);
        assert_eq!(map.insert(&a, &x, 3), Some(1));
        let snapshot = map.clone();
        assert_eq!((map.get("a", "x"), map.get("a", "y"), map.len()), (Some(&3), None, 2));
        assert_eq!(map.remove("a", "x"), Some(3));
        assert_eq!(map.remove("a", "x"), None);
        assert_eq!(
            map.iter().map(|(o, i, v)| (&**o, &**i, *v)).collect::<Vec<_>>(),
            [("b", "x", 2)]
        );
        assert_eq!(snapshot.len(), 2, "a clone keeps what it had");
        map.remove("b", "x");
        assert!(map.is_empty());
    }
}
