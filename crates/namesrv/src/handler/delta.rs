//! A registration as its difference from the broker's previous one (#25): at a million topics a
//! broker's 10,000-topic body that changed in 1 % of its topics cost a full decode (~10 ms of
//! CPU) every time. Here the body is skimmed into its topic-table entries (no decoding), each
//! entry digested as sent, and only the entries the previous registration of the same address
//! did not have are decoded; the route tables apply them under the conditions that make the
//! result Java's ([`crate::route::RouteTable::register_delta`]). Anything unusual — a
//! compressed or fastjson-only body, an escaped or repeated topic key, an entry that does not
//! decode or whose `topicName` is not its key — goes the full way.

use std::collections::BTreeMap;

use remoting::body::skim::{skim_topic_table, TopicTable};
use remoting::body::table_digest::TableDigests;
use remoting::body::{from_json, DataVersion, TopicConfig};
use remoting::RemotingCommand;
use xxhash_rust::xxh3::Xxh3;

use crate::route::DeltaBase;

/// A body skimmed for its difference: its entries, their digests and the base it leaves for
/// the next registration.
pub(super) struct Skimmed<'a> {
    table: TopicTable<'a>,
    digests: TableDigests,
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
        Self { digests: TableDigests::new(&table.entries, rest.digest()), table }
    }

    /// The base this body leaves for the next registration's difference.
    pub fn base(&self) -> &DeltaBase {
        &self.digests.base
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

    /// The entries `base` did not have ([`TableDigests::changed`]), decoded; `None` when any of
    /// them does not decode or is not named by its key, when a key or an entry repeats (the
    /// full decoder decides those), or the body has more than `max_topics` entries.
    pub fn changed(
        &self,
        base: &DeltaBase,
        max_topics: usize,
    ) -> Option<BTreeMap<String, TopicConfig>> {
        let entries = &self.table.entries;
        if entries.len() > max_topics {
            return None;
        }
        let mut changed = BTreeMap::new();
        for i in self.digests.changed(base)? {
            let (key, value) = entries[i];
            let tc: TopicConfig = from_json(value).ok()?;
            let key = std::str::from_utf8(key).ok()?;
            if tc.topic_name.as_deref() != Some(key) {
                return None;
            }
            changed.insert(key.to_owned(), tc);
        }
        Some(changed)
    }
}
