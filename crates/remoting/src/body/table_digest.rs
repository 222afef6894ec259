//! The digests of a skimmed topic table (#25): each entry digested as sent (its key, and its
//! value seeded with the key), so a registration can be applied as its difference from the
//! same address's previous one: only the entries that one did not have need decoding. The
//! nameserver keeps a registration's [`DeltaBase`] and asks [`TableDigests::changed`] of the
//! next one; anything that could make the difference differ from a full decode (a repeated
//! key, a repeated entry) gives `None`, and the caller decodes the body whole.

use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};
use rapidhash::v3::{rapidhash_v3_seeded, RapidSecrets};
use twox_hash::XxHash3_64;

use super::guide::{Run, Shape};

/// What a fully applied registration leaves for applying the broker's next one as a
/// difference: digests of the request outside its topic table and `DataVersion` (computed by
/// the caller) and of each topic-table entry as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaBase {
    /// The header fields and the body outside the topic table and the `DataVersion`.
    pub rest_digest: u64,
    /// Every entry's digest (key and value bytes), sorted.
    pub entries: Arc<[u64]>,
    /// Every entry's shape, in body order: the guide to skimming the next body
    /// ([`super::guide`]).
    pub shapes: Arc<[Shape]>,
    /// The entries in runs ([`Run::all`]; set by the caller, which has the body): the guide's
    /// way to take a run of unchanged entries at once.
    pub runs: Arc<[Run]>,
}

impl DeltaBase {
    /// The same base: the same rest and the very same entries (shared, not compared).
    pub fn same_as(&self, other: &DeltaBase) -> bool {
        self.rest_digest == other.rest_digest && Arc::ptr_eq(&self.entries, &other.entries)
    }

    /// Whether an entry with this digest was in the base's body.
    pub fn has(&self, entry_digest: u64) -> bool {
        self.entries.binary_search(&entry_digest).is_ok()
    }
}

/// A topic table's entries digested, in body order, and the base it leaves.
#[derive(Debug)]
pub struct TableDigests {
    /// Each entry's key digest and entry digest (key and value), in body order.
    digests: Vec<(u64, u64)>,
    /// Whether an entry is repeated byte for byte (equal entry digests).
    repeated_entry: bool,
    pub base: DeltaBase,
}

impl TableDigests {
    /// The digests of `entries` (key, value; as [`super::skim::TopicTable`] gives them), with
    /// the caller's digest of everything else.
    pub fn new(entries: &[(&[u8], &[u8])], rest_digest: u64) -> Self {
        let digests = entries.iter().map(|(key, value)| Self::entry(key, value)).collect();
        Self::of(entries, digests, rest_digest)
    }

    /// An entry's key digest and entry digest (its value seeded with the key's). The value
    /// (~160 bytes for a Java broker's entry) is digested with rapidhash: 21–22 against 36–40
    /// ns an entry with xxh3 here (AMD EPYC), where the entry digests were a quarter of the
    /// prepare thread's samples under S7's 1 % churn. Neither is keyed (see
    /// [`sort_uniform`]); a digest lives only in this process (a [`DeltaBase`] is not saved).
    pub fn entry(key: &[u8], value: &[u8]) -> (u64, u64) {
        let key = XxHash3_64::oneshot(key);
        (key, rapidhash_v3_seeded(value, &RapidSecrets::seed_cpp(key)))
    }

    /// [`TableDigests::new`] of `entries`, whose [`TableDigests::entry`] digests, in body
    /// order, are `digests`.
    pub fn of(entries: &[(&[u8], &[u8])], digests: Vec<(u64, u64)>, rest_digest: u64) -> Self {
        let sorted = sort_uniform(digests.iter().map(|&(_, entry)| entry).collect());
        let repeated_entry = sorted.windows(2).any(|pair| pair[0] == pair[1]);
        let shapes = entries.iter().zip(&digests).map(|((k, v), &d)| Shape::of(k, v, d)).collect();
        let base = DeltaBase { rest_digest, entries: sorted.into(), shapes, runs: [].into() };
        Self { digests, repeated_entry, base }
    }

    /// The indices (body order) of the entries `base` did not have; `None` when one of them
    /// shares its key with another entry (the full decoder keeps the last) or an entry is
    /// repeated.
    ///
    /// Only the changed entries' keys need checking: a base holds no two different entries
    /// under one key (its body decoded fully to as many topics as entries, or passed this
    /// check), so neither do the unchanged entries. The new and the base's sorted digests are
    /// merged once, and each entry looked up in a hash set of what the base lacks (a binary
    /// search over the base per entry was 6–8 % of the registration lane under 1 % churn).
    pub fn changed(&self, base: &DeltaBase) -> Option<Vec<usize>> {
        if self.repeated_entry {
            return None;
        }
        let new = DigestSet::of(&missing_from(&self.base.entries, &base.entries));
        let mut changed = Vec::new();
        let mut changed_keys = Vec::new();
        for (i, &(key, digest)) in self.digests.iter().enumerate() {
            if new.has(digest) {
                changed.push(i);
                changed_keys.push(key);
            }
        }
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

/// A set of digests, asked once per entry of the body: a bitmap of their low bits in front
/// of a hash table keyed by the digests themselves (already uniform). The set holds the few
/// digests a registration changed, so most questions end at the bitmap (the table's probe
/// alone was 6 % of the registration lane under S7's 1 % churn).
struct DigestSet {
    bits: [u64; FILTER_WORDS],
    table: HashTable<u64>,
}

/// The bitmap's size: 4,096 bits, a 2.4 % false hit for 100 digests.
const FILTER_WORDS: usize = 64;

impl DigestSet {
    fn of(digests: &[u64]) -> Self {
        let mut set =
            Self { bits: [0; FILTER_WORDS], table: HashTable::with_capacity(digests.len()) };
        for &digest in digests {
            let (word, bit) = Self::slot(digest);
            set.bits[word] |= bit;
            if let Entry::Vacant(slot) = set.table.entry(digest, |&d| d == digest, |&d| d) {
                slot.insert(digest);
            }
        }
        set
    }

    /// The bitmap's word and bit for a digest (its low 12 bits).
    fn slot(digest: u64) -> (usize, u64) {
        ((digest as usize >> 6) % FILTER_WORDS, 1 << (digest & 63))
    }

    fn has(&self, digest: u64) -> bool {
        let (word, bit) = Self::slot(digest);
        self.bits[word] & bit != 0 && self.table.find(digest, |&d| d == digest).is_some()
    }

    /// How many different digests it holds.
    fn len(&self) -> usize {
        self.table.len()
    }
}

/// `digests` sorted, for digests spread evenly over the `u64`s (a hash's): counted into about
/// half as many buckets as digests by their top bits, placed, then an insertion sort that moves
/// each only within its bucket. A bucket of more than [`BUCKET_MOST`] (digests made to share
/// their top bits: `xxh3` is not keyed) falls back to `sort_unstable`. 10,000 digests in 63 µs,
/// against 156 µs for `radsort` and 100 µs for `sort_unstable`; sorting was 2.7 % of the
/// server's samples under S7's 1 % churn at 1,000,000 topics (#25).
fn sort_uniform(mut digests: Vec<u64>) -> Vec<u64> {
    let n = digests.len();
    if n < 64 {
        digests.sort_unstable();
        return digests;
    }
    let bits = usize::BITS - 1 - n.leading_zeros();
    let bucket = |digest: u64| (digest >> (u64::BITS - bits)) as usize;
    let mut starts = vec![0usize; 1 << bits];
    for &digest in &digests {
        starts[bucket(digest)] += 1;
    }
    let mut most = 0;
    let mut at = 0;
    for start in &mut starts {
        most = most.max(*start);
        (*start, at) = (at, at + *start);
    }
    if most > BUCKET_MOST {
        digests.sort_unstable();
        return digests;
    }
    let mut placed = vec![0u64; n];
    for &digest in &digests {
        let next = &mut starts[bucket(digest)];
        placed[*next] = digest;
        *next += 1;
    }
    for i in 1..n {
        let digest = placed[i];
        let mut j = i;
        while j > 0 && placed[j - 1] > digest {
            placed[j] = placed[j - 1];
            j -= 1;
        }
        placed[j] = digest;
    }
    placed
}

/// The most digests one bucket of [`sort_uniform`] may hold.
const BUCKET_MOST: usize = 32;

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

    fn digests(entries: &[(&str, i32)]) -> TableDigests {
        let values: Vec<(String, String)> = entries
            .iter()
            .map(|(t, perm)| (t.to_string(), format!(r#"{{"perm":{perm},"topicName":"{t}"}}"#)))
            .collect();
        let pairs: Vec<(&[u8], &[u8])> =
            values.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())).collect();
        TableDigests::new(&pairs, 1)
    }

    fn changed(base: &[(&str, i32)], new: &[(&str, i32)]) -> Option<Vec<usize>> {
        digests(new).changed(&digests(base).base)
    }

    #[test]
    fn only_the_entries_the_base_lacks_are_changed() {
        let base = [("A", 6), ("B", 6), ("C", 6)];
        assert_eq!(changed(&base, &base), Some(vec![]));
        assert_eq!(changed(&base, &[("C", 6), ("B", 2), ("A", 6), ("D", 4)]), Some(vec![1, 3]));
        assert_eq!(changed(&base, &[("A", 6)]), Some(vec![]), "a removal changes nothing here");
    }

    /// The entry digest is seeded with the key: the same value bytes under another key (a
    /// topic renamed, its value not naming it) are a change, and so is any value byte.
    #[test]
    fn an_entry_digest_covers_its_key_and_every_value_byte() {
        let value = br#"{"perm":6,"readQueueNums":8,"writeQueueNums":8}"#;
        let base = TableDigests::new(&[(b"A", value)], 1);
        let renamed = TableDigests::new(&[(b"B", value)], 1);
        assert_eq!(renamed.changed(&base.base), Some(vec![0]));
        for at in 0..value.len() {
            let mut other = value.to_vec();
            other[at] ^= 1;
            assert_ne!(TableDigests::entry(b"A", &other), TableDigests::entry(b"A", value), "{at}");
        }
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
        assert_eq!(changed(&base, &[("B", 2), ("A", 6)]), Some(vec![0]));
    }

    proptest::proptest! {
        /// Any digests, spread or crowded into a few top bits, come out as `sort_unstable`
        /// sorts them.
        #[test]
        fn digests_sort_as_sort_unstable_sorts_them(
            digests in proptest::collection::vec(proptest::num::u64::ANY, 0..3_000),
            crowd in 0u32..64,
        ) {
            let crowded: Vec<u64> = digests.iter().map(|d| d >> crowd).collect();
            for input in [digests, crowded] {
                let mut expected = input.clone();
                expected.sort_unstable();
                proptest::prop_assert_eq!(sort_uniform(input), expected);
            }
        }
    }

    /// The bitmap in front of the set never turns a member away, and the set holds nothing
    /// else.
    #[test]
    fn a_digest_set_has_exactly_its_digests() {
        let members: Vec<u64> =
            (0..300u64).map(|i| XxHash3_64::oneshot(&i.to_le_bytes())).collect();
        let set = DigestSet::of(&members);
        assert_eq!(set.len(), 300);
        assert!(members.iter().all(|&d| set.has(d)));
        let others = (300..20_000u64).map(|i| XxHash3_64::oneshot(&i.to_le_bytes()));
        assert_eq!(others.filter(|&d| set.has(d)).count(), 0);
        // Low bits alike, the rest not: the bitmap lets them through, the table does not.
        assert!(!set.has(members[0] ^ (1 << 40)));
    }

    #[test]
    fn the_merge_finds_what_the_base_lacks() {
        assert_eq!(missing_from(&[1, 3, 5, 7], &[2, 3, 7, 9]), [1, 5]);
        assert_eq!(missing_from(&[1, 2], &[]), [1, 2]);
        assert_eq!(missing_from(&[], &[1]), Vec::<u64>::new());
        assert_eq!(missing_from(&[4, 4, 8], &[4]), [8]);
    }
}
