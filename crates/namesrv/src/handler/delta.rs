//! A registration as its difference from the broker's previous one (#25): at a million topics a
//! broker's 10,000-topic body that changed in 1 % of its topics cost a full decode (~10 ms of
//! CPU) every time. Here the body is skimmed into its topic-table entries (no decoding), each
//! entry digested as sent, and only the entries the previous registration of the same address
//! did not have are decoded; the route tables apply them under the conditions that make the
//! result Java's ([`crate::route::RouteTable::register_delta`]). Anything unusual — a
//! compressed or fastjson-only body, an escaped or repeated topic key, an entry that does not
//! decode or whose `topicName` is not its key — goes the full way.

use std::collections::BTreeMap;

use hashbrown::hash_table::{Entry, HashTable};
use remoting::body::skim::{skim_topic_table, TopicTable};
use remoting::body::{from_json, DataVersion, TopicConfig};
use remoting::RemotingCommand;
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed, Xxh3};

use crate::route::DeltaBase;

/// A body skimmed for its difference: its entries, their digests (body order) and the base it
/// leaves for the next registration.
pub(super) struct Skimmed<'a> {
    table: TopicTable<'a>,
    /// Each entry's key digest and entry digest (key and value), in body order.
    digests: Vec<(u64, u64)>,
    /// Whether an entry is repeated byte for byte (equal entry digests).
    repeated_entry: bool,
    pub base: DeltaBase,
}

impl<'a> Skimmed<'a> {
    /// An uncompressed body's topic table ([`skim_topic_table`]).
    pub fn table(request: &'a RemotingCommand) -> Option<TopicTable<'a>> {
        skim_topic_table(request.body.as_deref()?, request.version)
    }

    /// The skimmed table's digests; `fields` is the digest of the request's header fields.
    pub fn new(table: TopicTable<'a>, fields: &Xxh3) -> Self {
        let mut rest = fields.clone();
        rest.update(&[2]);
        for part in table.outside {
            rest.update(&(part.len() as u64).to_le_bytes());
            rest.update(part);
        }
        let digests: Vec<(u64, u64)> = table
            .entries
            .iter()
            .map(|(key, value)| {
                let key = xxh3_64(key);
                (key, xxh3_64_with_seed(value, key))
            })
            .collect();
        let mut sorted: Vec<u64> = digests.iter().map(|&(_, entry)| entry).collect();
        sorted.sort_unstable();
        let repeated_entry = sorted.windows(2).any(|pair| pair[0] == pair[1]);
        let base = DeltaBase { rest_digest: rest.digest(), entries: sorted.into() };
        Self { table, digests, repeated_entry, base }
    }

    /// The number of topic-table entries in the body.
    pub fn topics(&self) -> usize {
        self.table.entries.len()
    }

    pub fn data_version(&self) -> DataVersion {
        self.table.data_version
    }

    /// Whether a fully decoded table is exactly the skimmed entries, each under its own
    /// `topicName` (no repeated key folded away, none unnamed): only then may the next
    /// registration be applied as a difference from this one.
    pub fn matches(&self, decoded: &BTreeMap<String, TopicConfig>) -> bool {
        decoded.len() == self.table.entries.len()
            && decoded.iter().all(|(key, tc)| tc.topic_name.as_deref() == Some(key.as_str()))
    }

    /// The entries `base` did not have, decoded; `None` when any of them does not decode, is not
    /// named by its key or shares its key with another entry, when an entry is repeated (the
    /// full decoder decides those), or the body has more than `max_topics` entries.
    ///
    /// Only the changed entries' keys need checking: a base holds no two different entries
    /// under one key (its body decoded fully to as many topics as entries, or passed this
    /// check), so neither do the unchanged entries.
    pub fn changed(
        &self,
        base: &DeltaBase,
        max_topics: usize,
    ) -> Option<BTreeMap<String, TopicConfig>> {
        let entries = &self.table.entries;
        if entries.len() > max_topics || self.repeated_entry {
            return None;
        }
        let new = DigestSet::of(&missing_from(&self.base.entries, &base.entries));
        let mut changed = BTreeMap::new();
        let mut changed_keys = Vec::new();
        for ((key, value), &(key_digest, digest)) in entries.iter().zip(&self.digests) {
            if !new.has(digest) {
                continue;
            }
            let tc: TopicConfig = from_json(value).ok()?;
            let key = std::str::from_utf8(key).ok()?;
            if tc.topic_name.as_deref() != Some(key) {
                return None;
            }
            changed.insert(key.to_owned(), tc);
            changed_keys.push(key_digest);
        }
        // Each changed entry's key once in the whole body (else the full decoder keeps the last).
        let keys = DigestSet::of(&changed_keys);
        let under_changed_keys = || self.digests.iter().filter(|&&(key, _)| keys.has(key)).count();
        if keys.len() != changed_keys.len()
            || (!changed_keys.is_empty() && under_changed_keys() != changed_keys.len())
        {
            return None;
        }
        Some(changed)
    }
}

/// A set of digests, asked once per entry of the body: a hash table keyed by the digests
/// themselves (already uniform), a probe or two, where a binary search over the changed
/// entries' digests mispredicted at every step (#25's 1 % churn profile).
struct DigestSet(HashTable<u64>);

impl DigestSet {
    fn of(digests: &[u64]) -> Self {
        let mut set = HashTable::with_capacity(digests.len());
        for &digest in digests {
            if let Entry::Vacant(slot) = set.entry(digest, |&d| d == digest, |&d| d) {
                slot.insert(digest);
            }
        }
        Self(set)
    }

    fn has(&self, digest: u64) -> bool {
        self.0.find(digest, |&d| d == digest).is_some()
    }

    /// How many different digests it holds.
    fn len(&self) -> usize {
        self.0.len()
    }
}

/// The digests of `sorted` that `base` (sorted) does not hold, sorted: one merge of the two.
fn missing_from(sorted: &[u64], base: &[u64]) -> Vec<u64> {
    let mut missing = Vec::new();
    let mut base = base.iter().peekable();
    for &digest in sorted {
        while base.next_if(|&&b| b < digest).is_some() {}
        if base.peek() != Some(&&digest) {
            missing.push(digest);
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(entries: &[(&str, i32)]) -> Vec<u8> {
        let table: Vec<String> = entries
            .iter()
            .map(|(t, perm)| format!(r#""{t}":{{"perm":{perm},"topicName":"{t}"}}"#))
            .collect();
        format!(
            r#"{{"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":1}},"topicConfigTable":{{{}}}}}}}"#,
            table.join(",")
        )
        .into_bytes()
    }

    fn changed(base: &[(&str, i32)], new: &[(&str, i32)]) -> Option<Vec<(String, i32)>> {
        let base_bytes = body(base);
        let base = Skimmed::new(skim_topic_table(&base_bytes, 500).unwrap(), &Xxh3::new());
        let new_bytes = body(new);
        let new = Skimmed::new(skim_topic_table(&new_bytes, 500).unwrap(), &Xxh3::new());
        let changed = new.changed(&base.base, 100)?;
        Some(changed.into_iter().map(|(k, tc)| (k, tc.perm)).collect())
    }

    #[test]
    fn only_the_entries_the_base_lacks_are_decoded() {
        let base = [("A", 6), ("B", 6), ("C", 6)];
        assert_eq!(changed(&base, &base), Some(vec![]));
        let new = [("C", 6), ("B", 2), ("A", 6), ("D", 4)];
        assert_eq!(changed(&base, &new), Some(vec![("B".into(), 2), ("D".into(), 4)]));
        assert_eq!(changed(&base, &[("A", 6)]), Some(vec![]), "a removal changes nothing here");
    }

    /// A key twice (the full decoder keeps the last of them) or an entry twice goes the full
    /// way, wherever the repeats sit.
    #[test]
    fn a_repeated_key_or_entry_is_left_to_the_full_decoder() {
        let base = [("A", 6), ("B", 6)];
        for new in [
            &[("B", 2), ("A", 6), ("B", 6)][..],
            &[("A", 6), ("B", 6), ("B", 2)],
            &[("A", 6), ("C", 2), ("C", 4)],
            &[("A", 6), ("A", 6), ("B", 6)],
            &[("A", 6), ("C", 4), ("C", 4)],
        ] {
            assert_eq!(changed(&base, new), None, "{new:?}");
        }
        assert_eq!(changed(&base, &[("B", 2), ("A", 6)]), Some(vec![("B".into(), 2)]));
    }

    #[test]
    fn the_merge_finds_what_the_base_lacks() {
        assert_eq!(missing_from(&[1, 3, 5, 7], &[2, 3, 7, 9]), [1, 5]);
        assert_eq!(missing_from(&[1, 2], &[]), [1, 2]);
        assert_eq!(missing_from(&[], &[1]), Vec::<u64>::new());
        assert_eq!(missing_from(&[4, 4, 8], &[4]), [8]);
    }
}
