//! A broker's previous body as a guide to skimming its next one (#25). Under S7's 1 % churn at
//! 1,000,000 topics each registration resends ~2 MB of which 1 % changed, and the prepare
//! thread skimmed every entry (bracket matching, 31 % of that thread) before digesting it:
//! a broker writes its table in the same order each time, so the next entry is, as a rule,
//! the one that followed last time, of the same lengths. The guide places it there and
//! digests it; when the digest is that entry's, the bytes are the entry the previous body
//! held (which was skimmed then, or taken the same way), and the skim of it is skipped. An
//! entry that fits no shape is skimmed as before; the guide resyncs after changes in place
//! (the next shape), an insert (one behind) or removals (up to two ahead), and after
//! [`MISSES`] entries in a row fit none it tries one entry in [`RETRY`] (a table sent in
//! another order costs at most four digests more per entry until then, and one in eight after).
//!
//! A guide takes [`RUN`] entries at a time where it can: the previous body's entries in runs of
//! [`RUN`], each run written tight (`"key":{…},"key":{…}`, as brokers write them) digested whole
//! ([`Run`]). When the next entries are expected to be a run's and the bytes there are, by
//! digest, that run's, its entries are taken by their shapes with no per-entry digest or check:
//! under S7's 1 % churn at 1,000,000 topics ~92 % of a body's runs hold no change, and the
//! per-entry work (the digests, the placing) was about half of the prepare thread's samples.
//! With runs its CPU per registration went from 1.43–1.47 to 1.11–1.20 ms (three alternated
//! runs each). A shape keeps its key's digest for this (8 bytes more per topic and broker).
//!
//! A digest stands for the bytes, as in the difference itself ([`super::table_digest`]): a
//! broker that made an entry (or a run) collide with its own previous one keeps that previous
//! entry (it could have sent it), and the bytes it sent are not looked at.

use twox_hash::XxHash3_64;

use super::table_digest::TableDigests;

/// One topic-table entry of a skimmed body: where a guide expects its parts, and its digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The key's length between its quotes.
    pub key_len: u32,
    /// The value's length, from its `{` to its `}`.
    pub value_len: u32,
    /// Its entry digest ([`TableDigests::entry`]'s second).
    pub digest: u64,
    /// Its key digest ([`TableDigests::entry`]'s first), so that an entry taken in a run needs
    /// no digest of its own.
    pub key_digest: u64,
}

impl Shape {
    /// The shape of an entry written `"key":value`, whose [`TableDigests::entry`] digests are
    /// `(key_digest, digest)`.
    pub fn of(key: &[u8], value: &[u8], (key_digest, digest): (u64, u64)) -> Self {
        let len = |part: &[u8]| u32::try_from(part.len()).unwrap_or(u32::MAX);
        Self { key_len: len(key), value_len: len(value), digest, key_digest }
    }
}

/// Entries in a [`Run`].
pub const RUN: usize = 8;

/// [`RUN`] consecutive entries of a body, from the first's key on: their length in bytes and
/// their digest (XXH3 of those bytes); a length of 0 when they are not written tight (a guide
/// then takes them one by one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub len: u32,
    pub digest: u64,
}

impl Run {
    /// The runs of a body's topic-table `entries` (slices of `body`, in body order, as the skim
    /// gives them): one for each [`RUN`] entries, the last few (fewer than [`RUN`]) in none.
    pub fn all(body: &[u8], entries: &[(&[u8], &[u8])]) -> Vec<Run> {
        entries.chunks_exact(RUN).map(|run| Self::of(body, run)).collect()
    }

    /// The run of `run`'s entries (slices of `body`).
    pub(super) fn of(body: &[u8], run: &[(&[u8], &[u8])]) -> Run {
        const LOOSE: Run = Run { len: 0, digest: 0 };
        let at = |part: &[u8]| (part.as_ptr() as usize).wrapping_sub(body.as_ptr() as usize);
        // Tight: each value right after its key's `":`, each key right after the previous
        // value's `,` (the skim found those bytes there).
        let tight = run.iter().all(|(key, value)| at(value) == at(key) + key.len() + 2)
            && run.windows(2).all(|pair| at(pair[1].0) == at(pair[0].1) + pair[0].1.len() + 2);
        let (Some(first), Some(last)) = (run.first(), run.last()) else { return LOOSE };
        let (start, end) = (at(first.0).wrapping_sub(1), at(last.1) + last.1.len());
        match (tight, body.get(start..end), u32::try_from(end.wrapping_sub(start))) {
            (true, Some(bytes), Ok(len)) => Run { len, digest: XxHash3_64::oneshot(bytes) },
            _ => LOOSE,
        }
    }
}

/// Entries in a row that fit no shape before the guide tries only one entry in [`RETRY`].
const MISSES: u32 = 32;
const RETRY: u32 = 8;

/// Shapes an entry is tried against besides the one behind: the expected one and the two
/// after it.
const AHEAD: usize = 3;

/// A walk through a previous body's shapes, entry by entry of the new body.
pub(super) struct Guide<'g> {
    shapes: &'g [Shape],
    /// The previous body's runs: run `r` is the entries of shapes `r * RUN..(r + 1) * RUN`.
    runs: &'g [Run],
    /// The shape the next entry is expected to have.
    next: usize,
    misses: u32,
}

/// An entry the guide placed: its key, its value, its digests and the index after it.
pub(super) type Placed<'a> = (&'a [u8], &'a [u8], (u64, u64), usize);

impl<'g> Guide<'g> {
    pub fn new(shapes: &'g [Shape], runs: &'g [Run]) -> Self {
        Self { shapes, runs, next: 0, misses: 0 }
    }

    /// Whether it may place anything at all.
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// The [`RUN`] entries starting at `at` (the first's key's opening quote) when the expected
    /// shape starts a run of the previous body and the bytes there are, by digest, that run's:
    /// each entry pushed to `entries` and `digests` as [`Guide::place`] would have placed it;
    /// the index after the run, and the run. `None` (nothing pushed) otherwise.
    pub fn take_run<'a>(
        &mut self,
        bytes: &'a [u8],
        at: usize,
        entries: &mut Vec<(&'a [u8], &'a [u8])>,
        digests: &mut Vec<(u64, u64)>,
    ) -> Option<(usize, Run)> {
        if self.misses >= MISSES || !self.next.is_multiple_of(RUN) {
            return None;
        }
        let run = self.runs.get(self.next / RUN)?;
        let shapes = self.shapes.get(self.next..self.next + RUN)?;
        // The run's shapes fill its bytes exactly (a run and its shapes come from one body).
        let spans = shapes.iter().map(|s| s.key_len as usize + 3 + s.value_len as usize);
        if run.len == 0 || spans.sum::<usize>() + RUN - 1 != run.len as usize {
            return None;
        }
        let end = at.checked_add(run.len as usize)?;
        let span = bytes.get(at..end)?;
        if span.first() != Some(&b'"') || XxHash3_64::oneshot(span) != run.digest {
            return None;
        }
        let mut i = at;
        for shape in shapes {
            let (key_len, value_len) = (shape.key_len as usize, shape.value_len as usize);
            let key = &bytes[i + 1..i + 1 + key_len];
            let value = &bytes[i + key_len + 3..i + key_len + 3 + value_len];
            entries.push((key, value));
            digests.push((shape.key_digest, shape.digest));
            i += key_len + 3 + value_len + 1;
        }
        self.next += RUN;
        self.misses = 0;
        Some((end, *run))
    }

    /// The entry starting at `at` (its key's opening quote) when its bytes are, by digest, the
    /// expected shape's entry or one of the next two; `None` when they are not (the caller
    /// skims it).
    pub fn place<'a>(&mut self, bytes: &'a [u8], at: usize) -> Option<Placed<'a>> {
        if self.misses >= MISSES && !self.misses.is_multiple_of(RETRY) {
            self.next += 1;
            self.misses += 1;
            return None;
        }
        // The expected shape, two ahead (removals), one behind (an insert).
        let behind = self.next.checked_sub(1);
        let tries = (self.next..self.next + AHEAD).map(Some).chain([behind]);
        for index in tries.flatten() {
            let Some(shape) = self.shapes.get(index) else { continue };
            if let Some(placed) = fit(bytes, at, shape) {
                self.next = index + 1;
                self.misses = 0;
                return Some(placed);
            }
        }
        // Taken for a changed entry in place: the next is expected to have the next shape.
        self.next += 1;
        self.misses += 1;
        None
    }
}

/// The entry at `at` if it is written `"key":{…}` with the shape's lengths and its digest.
fn fit<'a>(bytes: &'a [u8], at: usize, shape: &Shape) -> Option<Placed<'a>> {
    let key_end = at.checked_add(1 + shape.key_len as usize)?;
    let value_start = key_end + 2;
    let end = value_start.checked_add(shape.value_len as usize)?;
    let framed = bytes.get(at) == Some(&b'"')
        && bytes.get(key_end) == Some(&b'"')
        && bytes.get(key_end + 1) == Some(&b':')
        && bytes.get(value_start) == Some(&b'{')
        && end <= bytes.len()
        && bytes.get(end - 1) == Some(&b'}');
    if !framed {
        return None;
    }
    let (key, value) = (&bytes[at + 1..key_end], &bytes[value_start..end]);
    let digests = TableDigests::entry(key, value);
    (digests.1 == shape.digest).then_some((key, value, digests, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(body: &[u8], entries: &[(usize, usize, usize)]) -> Vec<Shape> {
        entries
            .iter()
            .map(|&(at, key_len, value_len)| {
                let (key, value) =
                    (&body[at + 1..at + 1 + key_len], &body[at + 3 + key_len..][..value_len]);
                Shape::of(key, value, TableDigests::entry(key, value))
            })
            .collect()
    }

    #[test]
    fn an_entry_is_placed_only_when_its_bytes_are_the_shapes() {
        let old = br#""a":{"x":1},"bb":{"y":22}"#;
        let guide_shapes = shapes(old, &[(0, 1, 7), (12, 2, 8)]);
        let mut guide = Guide::new(&guide_shapes, &[]);
        let (key, value, _, end) = guide.place(old, 0).expect("the first entry");
        assert_eq!((key, value, end), (b"a".as_slice(), br#"{"x":1}"#.as_slice(), 11));
        assert_eq!(guide.place(old, 12).map(|p| p.3), Some(old.len()));
        // The same lengths, another byte: skimmed, not placed.
        let new = br#""a":{"x":2},"bb":{"y":22}"#;
        let mut guide = Guide::new(&guide_shapes, &[]);
        assert!(guide.place(new, 0).is_none());
        // The next entry still found (the expected shape's successor).
        assert_eq!(guide.place(new, 12).map(|p| p.0), Some(b"bb".as_slice()));
        // Cut short: never read past the end.
        let mut guide = Guide::new(&guide_shapes, &[]);
        assert!(guide.place(&old[..20], 12).is_none());
    }

    #[test]
    fn it_resyncs_after_inserts_and_removals() {
        let old = br#""a":{},"b":{},"c":{},"d":{}"#;
        let guide_shapes = shapes(old, &[(0, 1, 2), (7, 1, 2), (14, 1, 2), (21, 1, 2)]);
        // "b" and "c" removed: "d" is two shapes ahead of the expected one.
        let new = br#""a":{},"d":{}"#;
        let mut guide = Guide::new(&guide_shapes, &[]);
        assert!(guide.place(new, 0).is_some() && guide.place(new, 7).is_some());
        // "x" inserted before "b": it misses, and "b" is still the expected shape.
        let new = br#""a":{},"x":{},"b":{}"#;
        let mut guide = Guide::new(&guide_shapes, &[]);
        assert!(guide.place(new, 0).is_some());
        assert!(guide.place(new, 7).is_none());
        assert_eq!(guide.place(new, 14).map(|p| p.0), Some(b"b".as_slice()));
    }

    /// A table of `n` entries `"kNN":{"v":V}`, written tight; entry `i`'s value is `v(i)`.
    fn tight(n: usize, v: impl Fn(usize) -> u8) -> Vec<u8> {
        let entries: Vec<String> =
            (0..n).map(|i| format!("\"k{i:02}\":{{\"v\":{}}}", v(i))).collect();
        format!("{{{}}}", entries.join(",")).into_bytes()
    }

    /// Each entry of a [`tight`] table, as the skim gives it.
    fn entries(body: &[u8], n: usize) -> Vec<(&[u8], &[u8])> {
        (0..n).map(|i| (&body[2 + i * 14..][..3], &body[7 + i * 14..][..7])).collect()
    }

    #[test]
    fn a_run_is_taken_whole_when_its_bytes_are_the_runs() {
        let old = tight(2 * RUN + 3, |_| 1);
        let old_entries = entries(&old, 2 * RUN + 3);
        let spec: Vec<_> = (0..2 * RUN + 3).map(|i| (1 + i * 14, 3, 7)).collect();
        let guide_shapes = shapes(&old, &spec);
        let runs = Run::all(&old, &old_entries);
        assert_eq!(runs.len(), 2, "the last three entries are in no run");
        assert!(runs.iter().all(|run| run.len as usize == RUN * 14 - 1));
        // The same bytes: both runs taken, their entries and digests the entries' own.
        let mut guide = Guide::new(&guide_shapes, &runs);
        let (mut taken, mut digests) = (Vec::new(), Vec::new());
        let ends = [1, 1 + RUN * 14].map(|at| guide.take_run(&old, at, &mut taken, &mut digests));
        assert_eq!(ends, [Some((RUN * 14, runs[0])), Some((2 * RUN * 14, runs[1]))]);
        assert_eq!(taken, old_entries[..2 * RUN]);
        let own: Vec<_> = taken.iter().map(|(k, v)| TableDigests::entry(k, v)).collect();
        assert_eq!(digests, own);
        // Past the last run: entry by entry.
        assert!(guide.take_run(&old, 1 + 2 * RUN * 14, &mut taken, &mut digests).is_none());
        // One byte of the second run changed: the first run taken, the second not, nothing
        // pushed for it.
        let new = tight(2 * RUN + 3, |i| if i == RUN + 2 { 2 } else { 1 });
        let mut guide = Guide::new(&guide_shapes, &runs);
        let (mut taken, mut digests) = (Vec::new(), Vec::new());
        assert!(guide.take_run(&new, 1, &mut taken, &mut digests).is_some());
        assert!(guide.take_run(&new, 1 + RUN * 14, &mut taken, &mut digests).is_none());
        assert_eq!((taken.len(), digests.len()), (RUN, RUN));
        // A body cut inside the run: never read past its end.
        let mut guide = Guide::new(&guide_shapes, &runs);
        assert!(guide.take_run(&old[..RUN * 14 - 2], 1, &mut taken, &mut digests).is_none());
    }

    #[test]
    fn a_run_written_loose_is_taken_entry_by_entry() {
        let body = br#"{"a":{},"b":{}, "c":{},"d":{},"e":{},"f":{},"g":{},"h":{}}"#;
        let keys = [1, 8, 16, 23, 30, 37, 44, 51];
        let entries: Vec<(&[u8], &[u8])> =
            keys.iter().map(|&at| (&body[at + 1..at + 2], &body[at + 4..at + 6])).collect();
        assert_eq!(entries[2], (b"c".as_slice(), b"{}".as_slice()));
        assert_eq!(Run::all(body, &entries), [Run { len: 0, digest: 0 }]);
        let tight = br#"{"a":{},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{}}"#;
        let entries: Vec<(&[u8], &[u8])> =
            (0..8).map(|i| (&tight[2 + i * 7..][..1], &tight[5 + i * 7..][..2])).collect();
        assert_eq!(Run::all(tight, &entries)[0].len, 55);
    }

    #[test]
    fn after_a_long_run_of_changes_it_tries_one_entry_in_eight_and_resyncs() {
        let table = |changed: usize| {
            let entries: Vec<String> = (0..60)
                .map(|i| format!("\"k{i:02}\":{}", if i < changed { "{ }" } else { "{}" }))
                .collect();
            format!("{{{}}}", entries.join(",")).into_bytes()
        };
        let old = table(0);
        let starts: Vec<usize> = (0..60).map(|i| 1 + i * 9).collect();
        let spec: Vec<_> = starts.iter().map(|&at| (at, 3, 2)).collect();
        let guide_shapes = shapes(&old, &spec);
        // The first 40 changed (another length): 32 misses, then one try in eight.
        let new = table(40);
        let new_starts: Vec<usize> = (0..60).map(|i| 1 + i * 9 + i.min(40)).collect();
        let mut guide = Guide::new(&guide_shapes, &[]);
        let placed: Vec<bool> =
            new_starts.iter().map(|&at| guide.place(&new, at).is_some()).collect();
        assert!(placed[..40].iter().all(|p| !p), "the changed entries are skimmed");
        // 40 misses in a row: entry 40 is tried (40 is 0 mod 8), fits, and so does every
        // entry after it.
        assert!(placed[40..].iter().all(|p| *p), "{placed:?}");
        // Another 4 changed: entry 36 is not tried, 40 is.
        let new = table(36);
        let new_starts: Vec<usize> = (0..60).map(|i| 1 + i * 9 + i.min(36)).collect();
        let mut guide = Guide::new(&guide_shapes, &[]);
        let placed: Vec<bool> =
            new_starts.iter().map(|&at| guide.place(&new, at).is_some()).collect();
        assert_eq!(placed.iter().position(|p| *p), Some(40), "{placed:?}");
        assert!(placed[40..].iter().all(|p| *p));
    }
}

#[cfg(test)]
mod agreement {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::super::skim::{skim_and_digest, skim_topic_table};
    use super::super::{
        to_legacy_json, to_standard_json, DataVersion, RegisterBrokerBody, TopicConfig,
        TopicConfigAndMappingSerializeWrapper,
    };
    use super::*;

    fn body(topics: &[(String, i32)], legacy: bool) -> Vec<u8> {
        let table: BTreeMap<String, TopicConfig> = topics
            .iter()
            .map(|(name, perm)| {
                let mut tc = TopicConfig::named(name.clone());
                tc.perm = *perm;
                (name.clone(), tc)
            })
            .collect();
        let body = RegisterBrokerBody {
            filter_server_list: Some(Vec::new()),
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                data_version: DataVersion { counter: 1, ..Default::default() },
                topic_config_table: table.into(),
                ..Default::default()
            },
        };
        if legacy {
            to_legacy_json(&body)
        } else {
            to_standard_json(&body)
        }
    }

    proptest! {
        /// Guided by any previous body's shapes (another table, the same one changed in
        /// place, with topics added or removed, or a body cut short or spliced), the skim gives
        /// the unguided skim's answer: the same entries, the same digests, or `None` alike.
        #[test]
        fn a_guided_skim_gives_the_unguided_answer(
            old in proptest::collection::btree_map("[a-e]{1,3}", 2..8i32, 0..40),
            edits in proptest::collection::vec((0usize..40, 0u8..4, "[a-e]{1,3}"), 0..8),
            legacy in any::<bool>(),
            cut in proptest::option::of(0usize..2000),
        ) {
            let old: Vec<(String, i32)> = old.into_iter().collect();
            let mut new = old.clone();
            for (at, op, name) in edits {
                let at = at % (new.len() + 1);
                match op {
                    0 if at < new.len() => new[at].1 ^= 1,
                    1 if at < new.len() => { new.remove(at); }
                    2 => new.insert(at, (name, 3)),
                    _ if at < new.len() => new[at].0.push('x'),
                    _ => {}
                }
            }
            let old_body = body(&old, legacy);
            let mut new_body = body(&new, legacy);
            if let Some(cut) = cut {
                // Cut short, or the old body's tail spliced on.
                let cut = cut.min(new_body.len());
                new_body.truncate(cut);
                if cut % 2 == 0 {
                    new_body.extend_from_slice(&old_body[cut.min(old_body.len())..]);
                }
            }
            let fields = super::super::register_digest::Xxh3::new();
            let (shapes, runs): (Vec<Shape>, Vec<Run>) =
                skim_and_digest(&old_body, 500, &[], &[], &fields)
                    .map(|t| {
                        let shapes = (t.entries.iter().zip(&t.digests))
                            .map(|((k, v), &d)| Shape::of(k, v, d))
                            .collect();
                        (shapes, Run::all(&old_body, &t.entries))
                    })
                    .unwrap_or_default();
            prop_assert_eq!(shapes.len(), old.len());
            prop_assert_eq!(runs.len(), old.len() / RUN);
            let unguided = skim_and_digest(&new_body, 500, &[], &[], &fields);
            let guided = skim_and_digest(&new_body, 500, &shapes, &[], &fields);
            prop_assert_eq!(&guided, &unguided);
            let in_runs = skim_and_digest(&new_body, 500, &shapes, &runs, &fields);
            prop_assert_eq!(&in_runs, &unguided);
            if let Some(table) = &unguided {
                prop_assert_eq!(&table.runs, &Run::all(&new_body, &table.entries));
            }
            let plain = skim_topic_table(&new_body, 500);
            prop_assert_eq!(plain.map(|t| t.entries), unguided.map(|t| t.entries));
        }
    }
}
