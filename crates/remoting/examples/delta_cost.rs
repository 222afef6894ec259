//! Time of each part of what the registration lane does with a changed 10,000-topic
//! REGISTER_BROKER body before applying it as its difference (#25): the skim (in both JSON
//! forms), the skim with each entry digested as it is skimmed (the prepare thread's way, and
//! guided by the previous body's shapes, and its runs), the
//! checksum, the whole-body digest, the entries' digests and the difference from the previous
//! body (1 % of the entries changed):
//! `cargo run --release -p remoting --example delta_cost`.

use std::collections::BTreeMap;
use std::time::Instant;

use remoting::body::guide::Run;
use remoting::body::skim::{skim_and_digest, skim_topic_table};
use remoting::body::table_digest::TableDigests;
use remoting::body::{
    to_legacy_json, to_standard_json, DataVersion, RegisterBrokerBody, TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
};

const TOPICS: usize = 10_000;

/// A broker's body, each topic's `perm` given by `perm_of`.
fn body(perm_of: impl Fn(usize) -> i32, encode: fn(&RegisterBrokerBody) -> Vec<u8>) -> Vec<u8> {
    let table: BTreeMap<String, TopicConfig> = (0..TOPICS)
        .map(|i| {
            let name = format!("scale-c{:03}-topic-{i:05}", i % 100);
            let mut tc = TopicConfig::named(name.clone());
            tc.read_queue_nums = 8;
            tc.write_queue_nums = 8;
            tc.perm = perm_of(i);
            tc.attributes = Some(BTreeMap::new());
            (name, tc)
        })
        .collect();
    encode(&RegisterBrokerBody {
        filter_server_list: Some(Vec::new()),
        topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
            data_version: DataVersion { counter: 7, state_version: 0, timestamp: 1_700_000_000 },
            topic_config_table: table.into(),
            ..Default::default()
        },
    })
}

/// The best of five rounds of 50 calls, per call.
fn time(name: &str, mut f: impl FnMut() -> usize) {
    let mut best = f64::MAX;
    for _ in 0..5 {
        let started = Instant::now();
        let mut sink = 0usize;
        for _ in 0..50 {
            sink = sink.wrapping_add(f());
        }
        best = best.min(started.elapsed().as_secs_f64() / 50.0 * 1e6);
        std::hint::black_box(sink);
    }
    println!("{name:20} {best:8.1} µs");
}

fn main() {
    let legacy = body(|_| 6, to_legacy_json);
    time("skim, legacy JSON", || skim_topic_table(&legacy, 500).map_or(0, |t| t.entries.len()));
    let old = body(|_| 6, to_standard_json);
    // 1 % changed, spread over the body (its order is by name: by `i % 100`, then `i`).
    let new = body(|i| if i / 100 % 100 == 0 { 2 } else { 6 }, to_standard_json);
    println!("body {} B, {TOPICS} topics, 1 % changed", new.len());
    time("skim", || skim_topic_table(&new, 500).map_or(0, |t| t.entries.len()));
    time("skim and digests", || {
        skim_and_digest(&new, 500, &[], &[], &Default::default())
            .map_or(0, |t| TableDigests::of(&t.entries, t.digests, 1).base.entries.len())
    });
    let old_entries = skim_topic_table(&old, 500).unwrap().entries;
    let guide = TableDigests::new(&old_entries, 1).base;
    time("… guided by the last", || {
        skim_and_digest(&new, 500, &guide.shapes, &[], &Default::default())
            .map_or(0, |t| TableDigests::of(&t.entries, t.digests, 1).base.entries.len())
    });
    let runs = Run::all(&old, &old_entries);
    time("… and its runs", || {
        skim_and_digest(&new, 500, &guide.shapes, &runs, &Default::default())
            .map_or(0, |t| TableDigests::of(&t.entries, t.digests, 1).base.entries.len())
    });
    let new_entries = skim_topic_table(&new, 500).unwrap().entries;
    time("runs of a body", || Run::all(&new, &new_entries).len());
    time("crc32", || crc32fast::hash(&new) as usize);
    time("xxh3 of the body", || twox_hash::XxHash3_64::oneshot(&new) as usize);
    let (old, new) = (skim_topic_table(&old, 500).unwrap(), skim_topic_table(&new, 500).unwrap());
    time("entry digests", || TableDigests::new(&new.entries, 1).base.entries.len());
    let (base, digests) =
        (TableDigests::new(&old.entries, 1).base, TableDigests::new(&new.entries, 1));
    assert_eq!(digests.changed(&base).map(|c| c.len()), Some(TOPICS / 100));
    time("difference", || digests.changed(&base).map_or(0, |c| c.len()));
}
