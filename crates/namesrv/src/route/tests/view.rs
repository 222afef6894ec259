//! The operations API's views: broker rows with their live entries, and topic pages.

use super::*;
use crate::route::TopicFilter;

/// broker-a with `topics` topics T00000… (plus Java's `baseTopic`).
fn table(topics: usize) -> RouteTable {
    let mut t = RouteTable::new();
    let names: Vec<String> = (0..topics).map(|i| format!("T{i:05}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    register(&mut t, &Broker::master(), &refs);
    t
}

#[test]
fn every_page_is_the_sorted_slice_of_the_matching_topics() {
    let t = table(999);
    let all = TopicFilter::default();
    let mut seen = Vec::new();
    for offset in (0..1000).step_by(70) {
        let page = t.topic_page(&all, offset, 70);
        assert_eq!(page.total, 1000);
        seen.extend(page.topics.into_iter().map(|(name, _)| name));
    }
    let mut expected: Vec<String> = (0..999).map(|i| format!("T{i:05}")).collect();
    expected.push("baseTopic".to_owned());
    expected.sort();
    assert_eq!(seen, expected);
    assert!(t.topic_page(&all, 1000, 10).topics.is_empty());

    let prefix = TopicFilter { prefix: Some("T0009".into()), cluster: None };
    let page = t.topic_page(&prefix, 5, 3);
    assert_eq!(page.total, 10);
    let names: Vec<&str> = page.topics.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["T00095", "T00096", "T00097"]);
    assert_eq!(page.topics[0].1[0].broker_name, BROKER);
    assert_eq!(page.topics[0].1[0].write_queue_nums, 8);
}

#[test]
fn the_cluster_filter_keeps_topics_on_that_clusters_groups() {
    let t = table(5);
    let mine = TopicFilter { prefix: Some("T".into()), cluster: Some(CLUSTER.into()) };
    assert_eq!(t.topic_page(&mine, 0, 100).total, 5);
    let other = TopicFilter { prefix: None, cluster: Some("nope".into()) };
    assert_eq!(t.topic_page(&other, 0, 100).total, 0);
}

#[test]
fn broker_rows_carry_the_live_entry() {
    let mut t = table(1);
    register(&mut t, &Broker::slave(), &["T00000"]);
    let rows = t.broker_rows();
    let addrs: Vec<(&str, i64)> = rows.iter().map(|r| (r.addr.as_str(), r.id)).collect();
    assert_eq!(addrs, [(MASTER_ADDR, 0), (SLAVE_ADDR, 1)]);
    let live = rows[0].live.as_ref().expect("live");
    assert_eq!(live.last_update_ms, NOW);
    assert_eq!(live.ha_server_addr, MASTER_HA);
    assert_eq!(live.timeout_ms, crate::route::DEFAULT_HEARTBEAT_TIMEOUT_MS);
}
