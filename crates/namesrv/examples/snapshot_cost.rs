//! What a route snapshot costs: a table of 200 brokers (100 groups of master and slave, 500
//! topics each) plus one broker of 50,000 topics, as the benchmark's S3 and the fault suite's
//! storm build it; the time to encode it, its size, and the time to restore it (the warm
//! restart's whole delay before the first route is served).
//!
//! `cargo run --release -p namesrv --example snapshot_cost`

use std::time::Instant;

use namesrv::route::{RegisterBroker, RouteTable};
use remoting::body::{DataVersion, TopicConfig, TopicConfigAndMappingSerializeWrapper};

fn registration(
    cluster: &str,
    name: &str,
    addr: &str,
    id: i64,
    topics: &[String],
) -> RegisterBroker {
    let mut wrapper = TopicConfigAndMappingSerializeWrapper {
        data_version: DataVersion { counter: 1, state_version: 0, timestamp: 1 },
        ..Default::default()
    };
    for topic in topics {
        let mut config = TopicConfig::named(topic.clone());
        config.read_queue_nums = 8;
        config.write_queue_nums = 8;
        wrapper.topic_config_table.insert(topic.clone(), config);
    }
    RegisterBroker {
        cluster: cluster.to_owned(),
        broker_addr: addr.to_owned(),
        broker_name: name.to_owned(),
        broker_id: id,
        ha_server_addr: addr.to_owned(),
        enable_acting_master: Some(false),
        topic_config: wrapper,
        filter_server_list: Some(Vec::new()),
        conn: 1,
        ..Default::default()
    }
}

fn main() {
    let mut table = RouteTable::new();
    for group in 0..100 {
        let topics: Vec<String> = (0..500).map(|t| format!("Topic-{group}-{t}")).collect();
        for id in 0..2 {
            let addr = format!("10.0.{group}.{id}:10911");
            let req = registration("Storm", &format!("broker-{group}"), &addr, id, &topics);
            table.register_broker(req, 1, false).expect("register");
        }
    }
    let big: Vec<String> = (0..50_000).map(|t| format!("BigTopic-{t:05}")).collect();
    table
        .register_broker(registration("Big", "big", "10.1.0.1:10911", 0, &big), 1, false)
        .expect("big");

    let started = Instant::now();
    let bytes = table.to_snapshot(1);
    let encoded = started.elapsed();
    let started = Instant::now();
    let (restored, info) = RouteTable::from_snapshot(&bytes, 2).expect("restore");
    let decoded = started.elapsed();
    println!(
        "{} topics, {} live brokers: snapshot {:.1} MB, encoded in {:.0} ms, restored in {:.0} ms",
        info.topics,
        info.live,
        bytes.len() as f64 / 1e6,
        encoded.as_secs_f64() * 1e3,
        decoded.as_secs_f64() * 1e3
    );
    assert_eq!(restored.topic_count(), table.topic_count());
}
