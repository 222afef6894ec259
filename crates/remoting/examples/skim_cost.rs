//! Time to skim a 10,000-topic REGISTER_BROKER body for its topic table (what the registration
//! lane does first with every changed re-registration, #25), per body and per byte, in both
//! JSON forms: `cargo run --release -p remoting --example skim_cost`.

use std::collections::BTreeMap;
use std::time::Instant;

use remoting::body::skim::skim_topic_table;
use remoting::body::{
    to_legacy_json, to_standard_json, DataVersion, RegisterBrokerBody, TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
};

const TOPICS: usize = 10_000;
const REPEAT: usize = 200;

fn main() {
    let table: BTreeMap<String, TopicConfig> = (0..TOPICS)
        .map(|i| {
            let name = format!("scale-c{:03}-topic-{i:05}", i % 100);
            let mut tc = TopicConfig::named(name.clone());
            tc.read_queue_nums = 8;
            tc.write_queue_nums = 8;
            tc.perm = 6;
            tc.attributes = Some(BTreeMap::new());
            (name, tc)
        })
        .collect();
    let body = RegisterBrokerBody {
        filter_server_list: Some(Vec::new()),
        topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
            data_version: DataVersion { counter: 7, state_version: 0, timestamp: 1_700_000_000 },
            topic_config_table: table,
            ..Default::default()
        },
    };
    for (form, bytes) in [("legacy", to_legacy_json(&body)), ("standard", to_standard_json(&body))]
    {
        for _ in 0..3 {
            let started = Instant::now();
            let mut entries = 0;
            for _ in 0..REPEAT {
                entries += skim_topic_table(&bytes, 500).expect("skims").entries.len();
            }
            let elapsed = started.elapsed();
            assert_eq!(entries, REPEAT * TOPICS);
            let per_body = elapsed / REPEAT as u32;
            let per_byte = elapsed.as_nanos() as f64 / (REPEAT * bytes.len()) as f64;
            println!(
                "{form:8} body {:>9} B: {per_body:>10.2?} per body, {per_byte:.3} ns/byte",
                bytes.len()
            );
        }
    }
}
