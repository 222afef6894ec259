//! S7's "real change" churn: a broker table that changes from one registration to the next.
//! Registration k of a broker toggles one window of 1 % of its topics relative to registration
//! k − 1: most of the window's topics switch between 8 and 4 queues, a few are renamed (the old
//! name is gone from the body, a new one is added). The body of registration k is the base body
//! with every topic whose window was toggled an odd number of times patched in place: a queue
//! count is one digit either way and a renamed topic keeps its length, so the patched body is
//! the base's length, built with one copy and a few thousand byte writes (offsets found once).
//! A body written over the previous registration's has its CRC patched too ([`CrcPatch`]): the
//! CRC pass over the 2 MB body was the generator's largest cost of this churn (#25).

use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use remoting::body::{self, DataVersion};

use crate::crc_patch::{self, CrcPatch};
use crate::topology::{RegistrationBody, Table};

/// The percentage of a table that changes with each registration.
const CHANGE_PERCENT: usize = 1;
/// Windows: registration k toggles window (k − 1) mod WINDOWS.
const WINDOWS: usize = 100 / CHANGE_PERCENT;
/// The suffix CRCs of this many recent registrations are kept (the brokers sharing a table
/// are a few registrations apart).
const KEPT_CRCS: usize = 16;

/// Where one topic sits in the body's suffix (after the DataVersion).
#[derive(Debug, Clone, Copy)]
struct Spot {
    /// First byte of the name in the key (`"NAME":{`) and in `"topicName":"NAME"`.
    key_name: usize,
    field_name: usize,
    /// The queue-count digits.
    read_digit: usize,
    write_digit: usize,
    /// [`crc_patch::zeros`] of the bytes after each digit.
    read_factor: u32,
    write_factor: u32,
}

/// A broker table whose registrations each change 1 % of its topics.
#[derive(Debug)]
pub struct ChangingBody {
    base: Arc<RegistrationBody>,
    /// Topic i's spots, in the order of `topics`.
    spots: Vec<Spot>,
    /// The name topic i has while renamed (the same length as its own).
    renamed: Vec<Box<[u8]>>,
    /// Topics of a window renamed rather than given another queue count.
    renames_per_window: usize,
    /// The CRC of the suffix (the body after its version) of recent registrations, by `k % `
    /// [`KEPT_CRCS`]: a body written over registration j's is patched from j's.
    suffix_crcs: Mutex<[(u64, u32); KEPT_CRCS]>,
}

impl ChangingBody {
    /// The changing form of `base`, which must be a table of `topics` with 8 queues each.
    pub fn new(base: Arc<RegistrationBody>, topics: &[Arc<str>]) -> anyhow::Result<Self> {
        let suffix = base.suffix();
        let mut sorted: Vec<(usize, &Arc<str>)> = topics.iter().enumerate().collect();
        // The body's table is a sorted map: its topics appear in name order.
        sorted.sort_by(|a, b| a.1.cmp(b.1));
        let mut spots = vec![None; topics.len()];
        let mut cursor = 0;
        let mut keys = Vec::with_capacity(sorted.len());
        for (i, name) in &sorted {
            let key = format!("\"{name}\":{{");
            let at = memchr::memmem::find(&suffix[cursor..], key.as_bytes())
                .map(|p| cursor + p)
                .ok_or_else(|| anyhow::anyhow!("topic {name} not found in its body"))?;
            keys.push((*i, at));
            cursor = at + key.len();
        }
        for (n, (i, at)) in keys.iter().enumerate() {
            let end = keys.get(n + 1).map_or(suffix.len(), |(_, next)| *next);
            let object = &suffix[*at..end];
            let field = |needle: &str| {
                memchr::memmem::find(object, needle.as_bytes())
                    .map(|p| at + p + needle.len())
                    .ok_or_else(|| anyhow::anyhow!("{needle} not found for topic {i}"))
            };
            let (read_digit, write_digit) =
                (field("\"readQueueNums\":")?, field("\"writeQueueNums\":")?);
            let after = |at: usize| crc_patch::zeros(suffix.len() - at - 1);
            let spot = Spot {
                key_name: at + 1,
                field_name: field("\"topicName\":\"")?,
                read_digit,
                write_digit,
                read_factor: after(read_digit),
                write_factor: after(write_digit),
            };
            anyhow::ensure!(
                suffix[spot.read_digit] == b'8'
                    && suffix[spot.write_digit] == b'8'
                    && !suffix[spot.read_digit + 1].is_ascii_digit(),
                "the base body must have 8 queues per topic"
            );
            spots[*i] = Some(spot);
        }
        let renamed = topics
            .iter()
            .map(|t| {
                let mut other: Box<[u8]> = t.as_bytes().into();
                // Another name of the same length: the first letter's case flipped.
                if let Some(first) = other.first_mut() {
                    *first ^= 0x20;
                }
                other
            })
            .collect();
        let window = topics.len().div_ceil(WINDOWS).max(1);
        Ok(Self {
            base,
            spots: spots.into_iter().map(|s| s.expect("every topic was placed")).collect(),
            renamed,
            renames_per_window: (window * 3).div_ceil(100),
            suffix_crcs: Mutex::new([(u64::MAX, 0); KEPT_CRCS]),
        })
    }

    /// Whether topic `i` is in its changed state at registration `k` (its window toggled an odd
    /// number of times by registrations 1..=k).
    fn toggled(i: usize, k: u64) -> bool {
        let w = (i % WINDOWS) as u64;
        let n = WINDOWS as u64;
        let flips = k / n + u64::from(k % n > w);
        flips % 2 == 1
    }

    /// Whether topic `i`'s change is a rename (else a queue count).
    fn renamed(&self, i: usize) -> bool {
        i / WINDOWS < self.renames_per_window
    }

    /// Topics of registration `k` that differ from the base: (queue counts changed, renamed).
    pub fn changed_counts(&self, k: u64) -> (usize, usize) {
        (0..self.spots.len()).filter(|i| Self::toggled(*i, k)).fold((0, 0), |(q, r), i| {
            if self.renamed(i) {
                (q, r + 1)
            } else {
                (q + 1, r)
            }
        })
    }

    /// The body of registration `k` with `version`, written into `buf`, and its `bodyCrc32`.
    /// With `holds` (`Some(j)`: `buf` holds registration `j`'s body as written here, with a
    /// version of the same length), only the version and the topics whose state differs
    /// between `j` and `k` are written, and the CRC is patched from `j`'s.
    pub fn with_version_in(
        &self,
        version: &DataVersion,
        k: u64,
        mut buf: BytesMut,
        holds: Option<u64>,
    ) -> (Bytes, i32) {
        let dv = body::to_legacy_json(version);
        let held = holds.filter(|_| self.base.rewrite_version(&dv, &mut buf));
        if held.is_none() {
            self.base.write_with(&dv, &mut buf);
        }
        let at = self.base.prefix().len() + dv.len();
        let out = &mut buf[at..];
        let mut patch = held.and_then(|j| self.suffix_crc(j)).map(CrcPatch::new);
        for i in 0..self.spots.len() {
            let toggled = Self::toggled(i, k);
            // A fresh body is the base: only the toggled topics differ from it.
            if held.map_or(toggled, |j| Self::toggled(i, j) != toggled) {
                self.write_topic(out, i, toggled, patch.as_mut());
            }
        }
        let suffix = patch.map_or_else(|| crc32fast::hash(out), |p| p.crc());
        self.suffix_crcs.lock().expect("suffix CRCs")[k as usize % KEPT_CRCS] = (k, suffix);
        let suffix = crc32fast::Hasher::new_with_initial_len(suffix, out.len() as u64);
        let crc = self.base.body_crc32(&dv, &suffix);
        (buf.freeze(), crc)
    }

    /// The CRC of registration `j`'s suffix, if it is still kept.
    fn suffix_crc(&self, j: u64) -> Option<u32> {
        let kept = self.suffix_crcs.lock().expect("suffix CRCs")[j as usize % KEPT_CRCS];
        (kept.0 == j).then_some(kept.1)
    }

    /// Writes topic `i` into `out` (the body after its version) in its changed state or, when
    /// not `toggled`, in the base's; with `patch`, `out`'s CRC follows.
    fn write_topic(
        &self,
        out: &mut [u8],
        i: usize,
        toggled: bool,
        mut patch: Option<&mut CrcPatch>,
    ) {
        let spot = self.spots[i];
        let mut put = |out: &mut [u8], at: usize, new: &[u8], factor: Option<u32>| {
            let end = at + new.len();
            if let Some(patch) = patch.as_deref_mut() {
                let factor = factor.unwrap_or_else(|| crc_patch::zeros(out.len() - end));
                patch.write(&out[at..end], new, factor);
            }
            out[at..end].copy_from_slice(new);
        };
        if self.renamed(i) {
            let base = &self.base.suffix()[spot.key_name..spot.key_name + self.renamed[i].len()];
            let name = if toggled { &self.renamed[i][..] } else { base };
            put(out, spot.field_name, name, None);
            put(out, spot.key_name, name, None);
        } else {
            let digit = if toggled { b"4" } else { b"8" };
            put(out, spot.read_digit, digit, Some(spot.read_factor));
            put(out, spot.write_digit, digit, Some(spot.write_factor));
        }
    }
}

impl Table for ChangingBody {
    fn body(
        &self,
        version: &DataVersion,
        k: u64,
        buf: BytesMut,
        holds: Option<u64>,
    ) -> (Bytes, i32) {
        self.with_version_in(version, k, buf, holds)
    }

    fn encoded_len(&self) -> usize {
        self.base.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::random_names;
    use remoting::body::RegisterBrokerBody;

    fn decode(bytes: &[u8]) -> std::collections::BTreeMap<String, (i32, i32)> {
        let b: RegisterBrokerBody = body::from_json(bytes).expect("valid JSON body");
        b.topic_config_serialize_wrapper
            .topic_config_table
            .iter()
            .map(|(k, c)| {
                let k = k.clone();
                assert_eq!(c.topic_name.as_deref(), Some(k.as_str()), "key and name agree");
                (k, (c.read_queue_nums, c.write_queue_nums))
            })
            .collect()
    }

    #[test]
    fn each_registration_changes_one_percent_of_the_table_and_renames_a_few() {
        let topics = random_names(5, 1_000, "t");
        let base = Arc::new(RegistrationBody::new(&topics));
        let table = ChangingBody::new(base.clone(), &topics).expect("offsets found");
        let v = DataVersion { counter: 3, state_version: 0, timestamp: 1_700_000_000_000 };
        let mut previous = decode(&base.with_version_in(&v, BytesMut::new(), false).0);
        for k in 1..=3u64 {
            let (bytes, crc) = table.with_version_in(&v, k, BytesMut::new(), None);
            assert_eq!(bytes.len(), base.len() + body::to_legacy_json(&v).len());
            assert_eq!(crc, body::body_crc32(&bytes));
            let now = decode(&bytes);
            assert_eq!(now.len(), 1_000, "a rename keeps the count");
            let queues_changed =
                now.iter().filter(|(k, q)| previous.get(*k).is_some_and(|p| p != *q)).count();
            let added = now.keys().filter(|k| !previous.contains_key(*k)).count();
            let removed = previous.keys().filter(|k| !now.contains_key(*k)).count();
            // 1 % of 1,000 topics: 10, of which 3 % of the window (1) renamed.
            assert_eq!((queues_changed, added, removed), (9, 1, 1), "registration {k}");
            assert_eq!(table.changed_counts(k), (9 * k as usize, k as usize));
            previous = now;
        }
    }

    /// A body written over the one it follows is the body written afresh, whatever the step
    /// between them, and so is its CRC: only the version and the topics whose state changed
    /// between the two are written (a mark left in the buffer's last byte stays), unless the
    /// version's length changed (then it is written whole).
    #[test]
    fn a_body_written_over_the_last_one_is_the_body_written_afresh() {
        let topics = random_names(6, 2_000, "t");
        let table = ChangingBody::new(Arc::new(RegistrationBody::new(&topics)), &topics)
            .expect("offsets found");
        let v = |counter| DataVersion { counter, state_version: 0, timestamp: 1_700_000_000_000 };
        let mut held = table.with_version_in(&v(10), 0, BytesMut::new(), None).0;
        let mut j = 0;
        for (k, counter) in [(1, 11), (2, 12), (2, 13), (150, 14), (3, 15), (103, 9), (0, 16)] {
            let fresh = table.with_version_in(&v(counter), k, BytesMut::new(), None).0;
            let mut buf = held.try_into_mut().expect("sole owner");
            let last = buf.len() - 1;
            buf[last] = b' ';
            let (over, crc) = table.with_version_in(&v(counter), k, buf, Some(j));
            // The CRC is the body's as written afresh (patched from j's, the mark unseen).
            assert_eq!(crc, body::body_crc32(&fresh), "registration {k} over {j}");
            let whole = counter == 9 || counter == 16;
            let end = if whole { over.len() } else { last };
            assert_eq!(over[..end], fresh[..end], "registration {k} over {j}");
            assert_eq!(over[over.len() - 1] == b' ', !whole, "registration {k}: written over");
            held = table.with_version_in(&v(counter), k, BytesMut::new(), None).0;
            j = k;
        }
    }
}
