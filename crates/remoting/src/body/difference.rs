//! A registration as its difference from the broker's previous one (#25): at a million topics a
//! broker's 10,000-topic body that changed in 1 % of its topics cost a full decode (~10 ms of
//! CPU) every time. Here the body is skimmed into its topic-table entries (no decoding), each
//! entry digested as sent, and only the entries the previous registration of the same address
//! did not have are decoded; the route tables apply them under the conditions that make the
//! result Java's (the nameserver's `RouteTable::register_delta`). Anything unusual — a
//! compressed or fastjson-only body, an escaped or repeated topic key, an entry that does not
//! decode or whose `topicName` is not its key — goes the full way.

use std::collections::{BTreeMap, VecDeque};
use std::hash::Hasher as _;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::compressed::BodyLimits;
use super::guide::{Run, Shape, RUN};
use super::plain_topic::{plain_text, read_topic_config};
use super::register_digest::{Around, Xxh3};
use super::skim::skim_and_digest;
use super::table_digest::{DeltaBase, TableDigests};
use super::{
    from_json, DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigAndMappingSerializeWrapper,
    VersionFrame,
};
use crate::RemotingCommand;

/// The entries a base lacked, decoded (`None`: the full decoder's case), with that base and the
/// topic cap they were decoded under.
type Changed = (DeltaBase, usize, Option<BTreeMap<String, TopicConfig>>);

/// The topic tables [`Skimmed::decode_whole`] decoded last, with their entries' digests: a
/// body with the same entries shares its table instead of decoding it again. The brokers of a
/// master/slave pair send the same table, and so do the brokers of a cluster whose topics are
/// all created cluster-wide; at S7's cold start of 1,000,000 topics (two brokers per cluster,
/// eight registrations in flight, so a pair's bodies arrive a few apart) decoding was a fifth
/// of the server's samples, half of it a table decoded a moment before (#25). Bounded: at most
/// [`RECENT_TABLES`] tables of [`RECENT_TOPICS`] topics in all, let go by [`expire`] once
/// idle.
///
/// [`expire`]: RecentTables::expire
#[derive(Default)]
pub struct RecentTables {
    /// Newest first: each table's sorted entry digests, and the table.
    tables: VecDeque<(Arc<[u64]>, SharedTable)>,
    used: Option<Instant>,
}

/// A decoded topic table, shared.
type SharedTable = Arc<BTreeMap<String, TopicConfig>>;

/// The most tables [`RecentTables`] holds.
pub const RECENT_TABLES: usize = 8;
/// The most topics the tables it holds have in all.
pub const RECENT_TOPICS: usize = 100_000;

impl RecentTables {
    /// A table whose entries are `entries` (sorted digests of each entry's key and value
    /// bytes): the same entries decode to the same table, provided no key repeats (a repeated
    /// key keeps its last entry, which depends on the order), which a table with as many topics
    /// as entries shows.
    fn same(&mut self, entries: &Arc<[u64]>) -> Option<SharedTable> {
        self.used = Some(Instant::now());
        let (_, table) = self.tables.iter().find(|(known, table)| {
            table.len() == entries.len() && (Arc::ptr_eq(known, entries) || known == entries)
        })?;
        Some(Arc::clone(table))
    }

    fn keep(&mut self, entries: &Arc<[u64]>, table: &SharedTable) {
        self.tables.push_front((Arc::clone(entries), Arc::clone(table)));
        let mut topics = 0;
        let within = self.tables.iter().take_while(|(_, t)| {
            topics += t.len();
            topics <= RECENT_TOPICS
        });
        let keep = within.count().min(RECENT_TABLES);
        self.tables.truncate(keep);
    }

    /// Lets go of every table when none was asked for or decoded for `idle`.
    pub fn expire(&mut self, idle: Duration) {
        if self.used.is_some_and(|used| used.elapsed() >= idle) {
            (self.tables, self.used) = (VecDeque::new(), None);
        }
    }

    /// How many tables it holds.
    pub fn len(&self) -> usize {
        self.tables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }
}

/// A body skimmed for its difference: where its entries are (byte ranges of the body, so it may
/// be skimmed on the lane's prepare thread and applied on a lane thread), their digests and the
/// base it leaves for the next registration.
pub struct Skimmed {
    entries: Vec<(Range<usize>, Range<usize>)>,
    /// The `topicConfigTable` value.
    table: Range<usize>,
    data_version: DataVersion,
    /// The body's length before and after its `DataVersion` value.
    around: (usize, usize),
    /// The body digested around its `DataVersion` (the request digest) and its frame, on the
    /// way (`None` when the version did not come before the table).
    digested: Option<(Around, VersionFrame)>,
    digests: TableDigests,
    /// `deleteTopicWithBrokerRegistration` when it was skimmed (a field of its digests).
    pub delete_topics: bool,
    /// The difference from the address's base of the moment, decoded ahead.
    ahead: Option<Changed>,
}

impl Skimmed {
    /// An uncompressed body's topic table ([`skim_and_digest`]) and its digests; `fields` is
    /// the digest of the request's header fields, made with `delete_topics`; `guide`: the
    /// address's base of the moment, whose shapes guide the skim.
    pub fn new(
        request: &RemotingCommand,
        fields: &Xxh3,
        delete_topics: bool,
        guide: Option<&DeltaBase>,
    ) -> Option<Self> {
        let body = request.body.as_deref()?;
        let shapes = guide.map_or(&[][..], |base| &base.shapes);
        let runs = guide.map_or(&[][..], |base| &base.runs);
        let mut table = skim_and_digest(body, request.version, shapes, runs, fields)?;
        let mut rest = fields.clone();
        rest.write(&[2]);
        for part in table.outside {
            rest.write(&(part.len() as u64).to_le_bytes());
            rest.write(part);
        }
        debug_assert_eq!(table.digests.len(), table.entries.len());
        let mut digests =
            TableDigests::of(&table.entries, std::mem::take(&mut table.digests), rest.finish());
        digests.base.runs = std::mem::take(&mut table.runs).into();
        // Every part is a slice of `body`: its place there.
        let at = |part: &[u8]| {
            let start = part.as_ptr() as usize - body.as_ptr() as usize;
            start..start + part.len()
        };
        Some(Self {
            entries: table.entries.iter().map(|(key, value)| (at(key), at(value))).collect(),
            table: at(table.table),
            data_version: table.data_version,
            around: (table.before.len(), table.after.len()),
            digested: table.around.take(),
            digests,
            delete_topics,
            ahead: None,
        })
    }

    /// The body before and after its `DataVersion` value.
    pub fn around<'b>(&self, body: &'b [u8]) -> (&'b [u8], &'b [u8]) {
        (&body[..self.around.0], &body[body.len() - self.around.1..])
    }

    /// The request digest around the body's `DataVersion` and the body's frame (its CRCs),
    /// computed by the skim: neither needs a pass over the body of its own.
    pub fn digested(&self) -> Option<&(Around, VersionFrame)> {
        self.digested.as_ref()
    }

    /// The base this body leaves for the next registration's difference.
    pub fn base(&self) -> &DeltaBase {
        &self.digests.base
    }

    /// The bytes it holds besides the body: each entry's place and digests, and the entries
    /// decoded ahead (their strings at most the body's bytes, counted by the caller).
    pub fn held_bytes(&self) -> usize {
        let per_entry =
            std::mem::size_of::<(Range<usize>, Range<usize>)>() + 3 * 8 + size_of::<Shape>();
        let runs = self.entries.len() / RUN * size_of::<Run>();
        let decoded = match &self.ahead {
            Some((_, _, Some(changed))) => {
                changed.len() * std::mem::size_of::<(String, TopicConfig)>()
            }
            _ => 0,
        };
        self.entries.len() * per_entry + runs + decoded
    }

    /// The number of topic-table entries in the body.
    pub fn topics(&self) -> usize {
        self.entries.len()
    }

    pub fn data_version(&self) -> DataVersion {
        self.data_version
    }

    /// Whether a fully decoded table is exactly the skimmed entries, each under its own
    /// `topicName` (no repeated key folded away, none unnamed): only then may the next
    /// registration be applied as a difference from this one.
    pub fn matches(&self, decoded: &BTreeMap<String, TopicConfig>) -> bool {
        decoded.len() == self.entries.len()
            && decoded.iter().all(|(key, tc)| tc.topic_name.as_deref() == Some(key.as_str()))
    }

    /// The whole body (the skimmed one, `request`'s) decoded from its skim, as the full decoder
    /// would decode it: each entry read by [`read_topic_config`] (the lenient decoder for one
    /// that is not plain), the body outside the table by the lenient decoder, the table emptied
    /// (a few hundred bytes). A broker's first registration at a fleet's cold start (#25):
    /// serde's decode of the whole body was ~2/3 of the prepare thread's time. `None` when an
    /// entry or the rest does not decode, a key is not plain text, or more than
    /// `limits.max_topics` entries are sent: the full decoder then gives the answer or the
    /// error. A table whose entries are those of one of `recent`'s, byte for byte, is that one,
    /// not decoded again; `recent` keeps this one.
    pub fn decode_whole(
        &self,
        request: &RemotingCommand,
        limits: BodyLimits,
        recent: &mut RecentTables,
    ) -> Option<RegisterBrokerBody> {
        let (body, broker_version) = (request.body.as_deref()?, request.version);
        if self.entries.len() > limits.max_topics {
            return None;
        }
        let mut rest = Vec::with_capacity(body.len() - self.table.len() + 2);
        rest.extend_from_slice(&body[..self.table.start]);
        rest.extend_from_slice(b"{}");
        rest.extend_from_slice(&body[self.table.end..]);
        let mut decoded =
            RegisterBrokerBody::decode_limited(&rest, false, broker_version, limits).ok()?;
        let wrapper = &mut decoded.topic_config_serialize_wrapper;
        if let Some(table) = recent.same(&self.digests.base.entries) {
            wrapper.topic_config_table = table;
            return Some(decoded);
        }
        let mut entries = Vec::with_capacity(self.entries.len());
        for (key, value) in &self.entries {
            let key = plain_text(&body[key.clone()])?;
            let value = &body[value.clone()];
            let tc = read_topic_config(value).or_else(|| from_json(value).ok())?;
            entries.push((key.to_owned(), tc));
        }
        // Built in one go from the array, no copy of it grown on the way (sorted, a repeated
        // key keeping its last entry, as the decoder's inserts do).
        let table = Arc::new(BTreeMap::from_iter(entries));
        recent.keep(&self.digests.base.entries, &table);
        wrapper.topic_config_table = table;
        Some(decoded)
    }

    /// Decodes the difference from `base` ahead ([`Skimmed::changed`] takes it when asked for
    /// the same); whether there is one.
    pub fn decode_ahead(&mut self, body: &[u8], base: DeltaBase, max_topics: usize) -> bool {
        let changed = self.changed(body, &base, max_topics);
        let found = changed.is_some();
        self.ahead = Some((base, max_topics, changed));
        found
    }

    /// The registration body of [`Skimmed::changed`]: its entries as the topic table, this
    /// body's `DataVersion`, no filter servers (the base's, which the tables hold).
    pub fn changed_body(
        &mut self,
        body: &[u8],
        base: &DeltaBase,
        max_topics: usize,
    ) -> Option<RegisterBrokerBody> {
        let changed = self.changed(body, base, max_topics)?;
        Some(RegisterBrokerBody {
            filter_server_list: None,
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                data_version: self.data_version,
                topic_config_table: changed.into(),
                ..Default::default()
            },
        })
    }

    /// The entries `base` did not have ([`TableDigests::changed`]), decoded from `body` (the
    /// skimmed one); `None` when any of them does not decode or is not named by its key, when a
    /// key or an entry repeats (the full decoder decides those), or the body has more than
    /// `max_topics` entries.
    pub fn changed(
        &mut self,
        body: &[u8],
        base: &DeltaBase,
        max_topics: usize,
    ) -> Option<BTreeMap<String, TopicConfig>> {
        if let Some((ahead, max, changed)) = self.ahead.take() {
            if ahead.same_as(base) && max == max_topics {
                return changed;
            }
        }
        if self.entries.len() > max_topics {
            return None;
        }
        let mut changed = BTreeMap::new();
        for i in self.digests.changed(base)? {
            let (key, value) = &self.entries[i];
            let tc: TopicConfig = from_json(&body[value.clone()]).ok()?;
            let key = std::str::from_utf8(&body[key.clone()]).ok()?;
            if tc.topic_name.as_deref() != Some(key) {
                return None;
            }
            changed.insert(key.to_owned(), tc);
        }
        Some(changed)
    }
}
