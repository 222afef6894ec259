//! Format v2: the route tables as a compact binary payload (after the header line of
//! `mod.rs`). Numbers are LEB128 varints (signed ones zigzag), strings and byte strings are
//! length-prefixed; a "sid" is an index into the string table. In order:
//!
//! ```text
//! writtenAtMs
//! strings   n × bytes                       every cluster, broker name, address, HA address,
//!                                            zone and filter server, once
//! clusters  n × (cluster sid, m × member sid)
//! groups    n × (cluster sid, name sid, m × (signed id, addr sid), zone sid+1 or 0,
//!                acting-master byte)
//! live      n × (cluster sid, addr sid, signed timeout, signed counter, signed state version,
//!                signed timestamp, HA address sid)
//! filters   n × (cluster sid, addr sid, m × server sid)
//! mappings  n × (topic bytes, JSON bytes of broker name → TopicQueueMappingInfo)
//! topics    up to the end: name bytes, then its queue list: k > 0 is the dictionary's list
//!           k - 1; 0 is a new list, added to the dictionary, that follows:
//!           m × (broker, signed perm, read queues, write queues, topic sys flag), where the
//!           broker is sid + 1, or 0 followed by a name's bytes (a new string, added to the
//!           table)
//! ```
//!
//! Every "n ×" and "m ×" is a count before its records. The topics come last, in the topic
//! map's own order, in one pass straight from the table: the writer holds nothing per topic,
//! only the dictionary of distinct queue lists (most topics share one: the topics of one set of
//! brokers). A file that names a topic twice is refused. Everything else is in key order.
//! Static-topic mappings are rare and nested, so they stay JSON.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::Arc;

use foldhash::fast::RandomState;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use remoting::body::{DataVersion, TopicQueueMappingInfo};

use super::super::table::{
    Group, Live, QueueList, QueueSpec, Registration, RouteTable, TopicEntry,
};
use packed::{Reader, Sink};

use super::{SnapshotError, RESTORED_CONN};

type Result<T> = std::result::Result<T, SnapshotError>;

/// One topic's queues, as the table holds them.
type Queues = <QueueList as std::ops::Deref>::Target;

/// Streams the v2 payload of `table` into `out`; the writer back, the payload's length and
/// CRC32.
pub(super) fn write<W: Write>(
    table: &RouteTable,
    written_at_ms: u64,
    out: W,
) -> io::Result<(W, u64, u32)> {
    let records = Records::of(table);
    let mut strings = Strings::default();
    strings.collect(table, &records);

    let mut sink = Sink::new(out);
    sink.varint(written_at_ms)?;
    sink.count(strings.list.len())?;
    for s in &strings.list {
        sink.bytes(s.as_bytes())?;
    }
    sink.count(table.clusters.len())?;
    for (cluster, members) in &table.clusters {
        sink.varint(strings.id(cluster)?)?;
        sink.count(members.len())?;
        for member in members {
            sink.varint(strings.id(member)?)?;
        }
    }
    sink.count(table.groups.len())?;
    for group in table.groups.values() {
        write_group(&mut sink, &strings, group)?;
    }
    records.write(&mut sink, &strings)?;
    write_mappings(&mut sink, table)?;
    write_topics(&mut sink, &mut strings, table)?;
    sink.finish()
}

fn write_group<W: Write>(
    sink: &mut Sink<W>,
    strings: &Strings<'_>,
    group: &Group,
) -> io::Result<()> {
    sink.varint(strings.id(&group.cluster)?)?;
    sink.varint(strings.id(&group.name)?)?;
    sink.count(group.addrs.len())?;
    for (id, addr) in &group.addrs {
        sink.signed(*id)?;
        sink.varint(strings.id(addr)?)?;
    }
    match &group.zone_name {
        Some(zone) => sink.varint(strings.id(zone)? + 1)?,
        None => sink.varint(0)?,
    }
    sink.byte(u8::from(group.enable_acting_master))
}

fn write_mappings<W: Write>(sink: &mut Sink<W>, table: &RouteTable) -> io::Result<()> {
    let mut mappings: Vec<_> = table.mappings.iter().collect();
    mappings.sort_unstable_by(|a, b| a.0.cmp(b.0));
    sink.count(mappings.len())?;
    for (topic, by_broker) in mappings {
        sink.bytes(topic.as_bytes())?;
        sink.bytes(&serde_json::to_vec(&*by_broker.1)?)?;
    }
    Ok(())
}

/// The live and filter-server entries in key order (their maps are hash maps).
struct Records<'a> {
    live: Vec<(&'a str, &'a str, &'a Live)>,
    filters: Vec<(&'a str, &'a str, &'a [String])>,
}

impl<'a> Records<'a> {
    fn of(table: &'a RouteTable) -> Self {
        let mut live: Vec<_> = table.live.iter().map(|(c, a, l)| (&**c, &**a, &**l)).collect();
        live.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut filters: Vec<_> =
            table.filters.iter().map(|(c, a, s)| (&**c, &**a, &**s)).collect();
        filters.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        Self { live, filters }
    }

    fn write<W: Write>(&self, sink: &mut Sink<W>, strings: &Strings<'_>) -> io::Result<()> {
        sink.count(self.live.len())?;
        for (cluster, addr, live) in &self.live {
            sink.varint(strings.id(cluster)?)?;
            sink.varint(strings.id(addr)?)?;
            let data_version = live.data_version();
            sink.signed(live.timeout_ms)?;
            sink.signed(data_version.counter)?;
            sink.signed(data_version.state_version)?;
            sink.signed(data_version.timestamp)?;
            sink.varint(strings.id(&live.ha_server_addr)?)?;
        }
        sink.count(self.filters.len())?;
        for (cluster, addr, servers) in &self.filters {
            sink.varint(strings.id(cluster)?)?;
            sink.varint(strings.id(addr)?)?;
            sink.count(servers.len())?;
            for server in *servers {
                sink.varint(strings.id(server)?)?;
            }
        }
        Ok(())
    }
}

/// The string table being built: each string once, numbered in order of first use.
#[derive(Default)]
struct Strings<'a> {
    ids: HashMap<&'a str, u64, RandomState>,
    list: Vec<&'a str>,
}

impl<'a> Strings<'a> {
    fn add(&mut self, s: &'a str) {
        if !self.ids.contains_key(s) {
            self.ids.insert(s, self.list.len() as u64);
            self.list.push(s);
        }
    }

    fn id(&self, s: &str) -> io::Result<u64> {
        self.ids
            .get(s)
            .copied()
            .ok_or_else(|| io::Error::other("route snapshot: a name missing from its string table"))
    }

    /// Every string the sections before the topics name, in the order they are written.
    fn collect(&mut self, table: &'a RouteTable, records: &Records<'a>) {
        for (cluster, members) in &table.clusters {
            self.add(cluster);
            members.iter().for_each(|m| self.add(m));
        }
        for group in table.groups.values() {
            self.add(&group.cluster);
            self.add(&group.name);
            group.addrs.values().for_each(|a| self.add(a));
            if let Some(zone) = &group.zone_name {
                self.add(zone);
            }
        }
        for &(cluster, addr, live) in &records.live {
            self.add(cluster);
            self.add(addr);
            self.add(&live.ha_server_addr);
        }
        for &(cluster, addr, servers) in &records.filters {
            self.add(cluster);
            self.add(addr);
            servers.iter().for_each(|s| self.add(s));
        }
    }

    /// A queue list's broker: sid + 1, or 0 and the name (then in the table).
    fn write_broker<W: Write>(&mut self, sink: &mut Sink<W>, name: &'a str) -> io::Result<()> {
        match self.ids.get(name) {
            Some(id) => sink.varint(id + 1),
            None => {
                self.add(name);
                sink.varint(0)?;
                sink.bytes(name.as_bytes())
            }
        }
    }
}

/// The topics, straight from the table, each with its queue list: a reference into the
/// dictionary of lists already written, or the list itself (then in the dictionary).
fn write_topics<'a, W: Write>(
    sink: &mut Sink<W>,
    strings: &mut Strings<'a>,
    table: &'a RouteTable,
) -> io::Result<()> {
    // Keyed by the list's address: the table's lists are interned (`RouteTable::lists`), so one
    // address is one content, and a look-up reads no list. Two copies of one content would
    // only cost a repeated list in the file.
    let mut lists: HashMap<*const Queues, u64, RandomState> = HashMap::default();
    for (name, entry) in table.topics.iter() {
        sink.bytes(name.as_bytes())?;
        let next = lists.len() as u64 + 1;
        match lists.entry(Arc::as_ptr(&entry.queues)) {
            Entry::Occupied(known) => sink.varint(*known.get())?,
            Entry::Vacant(new) => {
                new.insert(next);
                sink.varint(0)?;
                sink.count(entry.queues.len())?;
                for (broker, spec) in entry.queues.iter() {
                    strings.write_broker(sink, broker)?;
                    for v in [
                        spec.perm,
                        spec.read_queue_nums,
                        spec.write_queue_nums,
                        spec.topic_sys_flag,
                    ] {
                        sink.signed(i64::from(v))?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// The table of a v2 payload (checksum already verified) and when it was written.
pub(super) fn read(payload: &[u8], now_ms: u64) -> Result<(RouteTable, u64)> {
    let mut r = Reader::new(payload);
    let written_at_ms = r.varint()?;
    let n = r.count(1)?;
    let mut strings = Vec::with_capacity(n);
    for _ in 0..n {
        strings.push(Arc::<str>::from(r.str()?));
    }
    let strings = Sids(strings);
    let mut table = RouteTable::new();
    for _ in 0..r.count(2)? {
        let cluster = strings.get(&mut r)?;
        let members = (0..r.count(1)?).map(|_| strings.get(&mut r)).collect::<Result<_>>()?;
        table.clusters.insert(cluster, members);
    }
    for _ in 0..r.count(5)? {
        let group = read_group(&mut r, &strings)?;
        table.groups.insert(group.name.clone(), Arc::new(group));
    }
    read_live(&mut r, &strings, &mut table, now_ms)?;
    for _ in 0..r.count(3)? {
        let cluster = strings.get(&mut r)?;
        let addr = strings.get(&mut r)?;
        let servers: Vec<String> = (0..r.count(1)?)
            .map(|_| strings.get(&mut r).map(|s| s.to_string()))
            .collect::<Result<_>>()?;
        table.filters.insert(&cluster, &addr, Arc::from(servers));
    }
    for _ in 0..r.count(2)? {
        let topic = r.str()?;
        let by_broker: BTreeMap<String, TopicQueueMappingInfo> =
            serde_json::from_slice(r.bytes()?)?;
        table.mappings.insert((Arc::from(topic), Arc::new(by_broker)));
    }
    read_topics(&mut r, strings, &mut table)?;
    Ok((table, written_at_ms))
}

/// The string table read back.
struct Sids(Vec<Arc<str>>);

impl Sids {
    fn get(&self, r: &mut Reader<'_>) -> Result<Arc<str>> {
        let i = r.index()?;
        self.at(r, i)
    }

    fn at(&self, r: &Reader<'_>, i: usize) -> Result<Arc<str>> {
        Ok(self.0.get(i).cloned().ok_or_else(|| r.malformed("a string index out of the table"))?)
    }

    /// A queue list's broker: sid + 1, or 0 and a new string.
    fn broker(&mut self, r: &mut Reader<'_>) -> Result<Arc<str>> {
        match r.index()? {
            0 => {
                let name = Arc::<str>::from(r.str()?);
                self.0.push(name.clone());
                Ok(name)
            }
            k => self.at(r, k - 1),
        }
    }
}

fn read_group(r: &mut Reader<'_>, strings: &Sids) -> Result<Group> {
    let cluster = strings.get(r)?;
    let name = strings.get(r)?;
    let mut group = Group::new(cluster, name);
    for _ in 0..r.count(2)? {
        let id = r.signed()?;
        group.addrs.insert(id, strings.get(r)?);
    }
    group.zone_name = match r.index()? {
        0 => None,
        zone => Some(
            strings
                .0
                .get(zone - 1)
                .ok_or_else(|| r.malformed("a string index out of the table"))?
                .to_string(),
        ),
    };
    group.enable_acting_master = match r.byte()? {
        0 => false,
        1 => true,
        _ => return Err(r.malformed("a flag that is neither 0 nor 1").into()),
    };
    Ok(group)
}

fn read_live(
    r: &mut Reader<'_>,
    strings: &Sids,
    table: &mut RouteTable,
    now_ms: u64,
) -> Result<()> {
    for _ in 0..r.count(7)? {
        let cluster = strings.get(r)?;
        let addr = strings.get(r)?;
        let timeout_ms = r.signed()?;
        let data_version = DataVersion {
            counter: r.signed()?,
            state_version: r.signed()?,
            timestamp: r.signed()?,
        };
        let ha_server_addr = strings.get(r)?.to_string();
        let registration =
            Registration { data_version, conn: RESTORED_CONN, generation: table.next_generation() };
        let live = Live::new(now_ms, timeout_ms, ha_server_addr, registration);
        table.live.insert(&cluster, &addr, Arc::new(live));
    }
    Ok(())
}

/// A queue list written in full (the first topic that has it).
fn read_list(r: &mut Reader<'_>, strings: &mut Sids) -> Result<Vec<(Arc<str>, QueueSpec)>> {
    let m = r.count(5)?;
    let mut list = Vec::with_capacity(m);
    for _ in 0..m {
        let broker = strings.broker(r)?;
        let spec = QueueSpec {
            perm: r.i32()?,
            read_queue_nums: r.i32()?,
            write_queue_nums: r.i32()?,
            topic_sys_flag: r.i32()?,
        };
        list.push((broker, spec));
    }
    Ok(list)
}

/// The topics, to the end of the payload: parsed first, then put into the topic map leaf by
/// leaf (`CowMap::insert_many`: one random walk of the map per topic made the restore 2–3×
/// slower at 1,000,000 topics), and their buckets marked per list for its brokers (each key
/// hashed once for both).
fn read_topics(r: &mut Reader<'_>, mut strings: Sids, table: &mut RouteTable) -> Result<()> {
    // One entry per list, each topic's entry a copy of it (sharing the list), and the hashes
    // of the topics that have it.
    let mut lists: Vec<(TopicEntry, Vec<u64>)> = Vec::new();
    let mut topics = Vec::new();
    while !r.at_end() {
        let topic = r.str()?;
        let list = match r.index()? {
            0 => {
                let list = read_list(r, &mut strings)?;
                lists.push((TopicEntry::new("", list, &table.lists), Vec::new()));
                lists.len() - 1
            }
            k if k <= lists.len() => k - 1,
            _ => return Err(r.malformed("a queue list index out of the dictionary").into()),
        };
        let (entry, hashes) = &mut lists[list];
        if entry.queues.is_empty() {
            continue; // no queue, no topic (as v1)
        }
        let hash = table.topics.hash_of(topic);
        hashes.push(hash);
        topics.push((hash, Arc::new(entry.named(topic))));
    }
    if table.topics.insert_many_hashed(topics) > 0 {
        return Err(r.malformed("a topic twice").into());
    }
    table.mark_lists(lists.iter().map(|(entry, hashes)| (&entry.queues, &hashes[..])));
    Ok(())
}
