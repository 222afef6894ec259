//! The route snapshot: a round trip keeps every table (liveness restamped), damage is detected,
//! restored brokers expire unless they register again, and a registration replaces a restored
//! entry as any other.

use remoting::body::{TopicQueueMappingInfo, MAPPING_SCOPE_GLOBAL};

use super::super::snapshot::RESTORED_CONN;
use super::super::SnapshotError;
use super::*;

const WRITTEN_AT: u64 = 1_700_000_123_456;
const RESTART: u64 = 5_000_000;

/// Two clusters, a master with a slave (zone, filters, acting master, a short timeout), a
/// second group, a static-topic mapping.
fn busy_table() -> RouteTable {
    let mut t = RouteTable::new();
    let mut master = Broker::master().zone("zone-a").timeout(30_000);
    master.filters = Some(vec!["10.9.9.9:4000".to_owned()]);
    let mut request = master.request(&["T1", "T2", "Ordered"]);
    request.topic_config.topic_queue_mapping_info_map.insert(
        "T2".to_owned(),
        TopicQueueMappingInfo {
            bname: Some(BROKER.to_owned()),
            topic: Some("T2".to_owned()),
            scope: Some(MAPPING_SCOPE_GLOBAL.to_owned()),
            total_queues: 8,
            epoch: 7,
            ..TopicQueueMappingInfo::default()
        },
    );
    t.register_broker(request, NOW, false).expect("master");
    register(&mut t, &Broker::slave().zone("zone-a"), &["T1", "T2", "Ordered"]);
    let other = Broker::master().cluster("OtherCluster").name("broker-b").addr("10.0.0.2:10911");
    register(&mut t, &other.conn(3), &["T1", "OnlyB"]);
    t
}

fn restored(t: &RouteTable, now: u64) -> RouteTable {
    let (back, info) = RouteTable::from_snapshot(&t.to_snapshot(WRITTEN_AT), now).expect("restore");
    assert_eq!(info.written_at_ms, WRITTEN_AT);
    assert_eq!((info.topics, info.groups, info.live), (t.topic_count(), 2, 3));
    back
}

#[test]
fn a_round_trip_keeps_every_table_and_restamps_liveness() {
    let t = busy_table();
    let back = restored(&t, RESTART);
    assert_eq!(back.cluster_info(), t.cluster_info());
    assert_eq!(back.all_topics(), t.all_topics());
    for topic in ["T1", "T2", "Ordered", "OnlyB", "baseTopic"] {
        for acting in [false, true] {
            assert_eq!(back.pickup_route(topic, acting), t.pickup_route(topic, acting), "{topic}");
        }
    }
    assert!(route(&back, "T2").topic_queue_mapping_by_broker.is_some(), "mapping kept");
    assert_eq!(route(&back, "T1").filter_server_table.len(), 1, "filter servers kept");
    assert_eq!(back.last_heartbeat(CLUSTER, MASTER_ADDR), Some((RESTART, 30_000)));
    assert_eq!(back.last_heartbeat(CLUSTER, SLAVE_ADDR), Some((RESTART, 120_000)));
    assert_eq!(back.last_heartbeat("OtherCluster", "10.0.0.2:10911"), Some((RESTART, 120_000)));
    // A slave still learns its live master, with the master's HA address.
    let (changed, version) =
        back.query_data_version(CLUSTER, MASTER_ADDR, Some(Broker::master().dv), RESTART);
    assert_eq!((changed, version), (false, Some(Broker::master().dv)));
    // And the bytes of a restored table are those of the original.
    assert_eq!(back.to_snapshot(WRITTEN_AT), t.to_snapshot(WRITTEN_AT));
}

#[test]
fn an_empty_table_round_trips() {
    let (back, info) =
        RouteTable::from_snapshot(&RouteTable::new().to_snapshot(1), RESTART).expect("restore");
    assert_eq!((info.topics, info.groups, info.live), (0, 0, 0));
    assert_eq!(back.topic_count(), 0);
}

#[test]
fn damage_is_detected_never_restored() {
    let bytes = busy_table().to_snapshot(WRITTEN_AT);
    let newline = bytes.iter().position(|b| *b == b'\n').expect("header line");

    let mut flipped = bytes.clone();
    flipped[newline + 40] ^= 0x20;
    assert!(matches!(
        RouteTable::from_snapshot(&flipped, RESTART),
        Err(SnapshotError::Checksum { .. })
    ));
    assert!(matches!(
        RouteTable::from_snapshot(&bytes[..bytes.len() - 1], RESTART),
        Err(SnapshotError::Length { .. })
    ));
    assert!(matches!(RouteTable::from_snapshot(b"", RESTART), Err(SnapshotError::Header)));
    assert!(matches!(
        RouteTable::from_snapshot(b"{\"configTable\":{}}\n{}", RESTART),
        Err(SnapshotError::Header)
    ));
    let mut future = b"rocketmq-namesrv-rs route snapshot v2 whatever\n".to_vec();
    future.extend_from_slice(&bytes[newline + 1..]);
    assert!(matches!(RouteTable::from_snapshot(&future, RESTART), Err(SnapshotError::Version(2))));
    // A payload whose checksum matches but whose JSON does not: refused too.
    let json = b"{\"writtenAtMs\":1}";
    let mut odd = format!(
        "rocketmq-namesrv-rs route snapshot v1 len={} crc32={:08x}\n",
        json.len(),
        crc32fast::hash(json)
    )
    .into_bytes();
    odd.extend_from_slice(json);
    assert!(matches!(RouteTable::from_snapshot(&odd, RESTART), Err(SnapshotError::Json(_))));
}

#[test]
fn a_restored_broker_that_never_returns_expires_by_its_timeout_from_the_restart() {
    let back = restored(&busy_table(), RESTART);
    assert!(back.expire_inactive(RESTART + 30_000).is_empty(), "alive up to its 30 s timeout");
    let expired = back.expire_inactive(RESTART + 30_001);
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].broker_addr, MASTER_ADDR);
    assert_eq!(expired[0].fence.expect("fenced").conn(), RESTORED_CONN);
    let mut back = back;
    back.unregister_batch(&back.expire_inactive(RESTART + 120_001));
    assert_eq!(back.live_count(), 0);
    assert!(back.pickup_route("T1", true).is_none(), "every route gone with its brokers");
}

#[test]
fn a_registration_replaces_a_restored_entry_and_is_not_undone_by_its_expiry() {
    let mut back = restored(&busy_table(), RESTART);
    // Decided before the broker came back: fenced by the restored entry's generation.
    let stale = back.expire_inactive(RESTART + 30_001);
    let master = Broker::master().conn(42).next_version();
    back.register_broker(master.request(&["T1", "T3"]), RESTART + 10, false).expect("register");
    assert_eq!(back.last_heartbeat(CLUSTER, MASTER_ADDR), Some((RESTART + 10, 120_000)));
    let unconnected: Vec<_> =
        back.on_connection_closed(RESTORED_CONN).into_iter().map(|r| r.broker_addr).collect();
    assert!(!unconnected.contains(&MASTER_ADDR.to_owned()), "{unconnected:?}");
    assert_eq!(unconnected.len(), 2, "the slave and broker-b are still the restored entries");
    back.unregister_batch(&stale);
    assert_eq!(back.live_count(), 3, "the expiry decided on the restored entry does nothing");
    assert!(back.pickup_route("T3", true).is_some(), "the new topic is routed");
    assert_eq!(back.on_connection_closed(42).len(), 1, "the entry is the new connection's");
}

#[test]
fn only_changes_a_snapshot_keeps_move_the_change_stamp() {
    let mut t = busy_table();
    let stamp = t.change_stamp();
    assert!(t.heartbeat(CLUSTER, MASTER_ADDR, NOW + 1));
    register(&mut t, &Broker::slave().zone("zone-a"), &["T1", "T2", "Ordered"]);
    assert_eq!(t.change_stamp(), stamp, "a heartbeat and an identical re-registration");
    let other = Broker::master().cluster("OtherCluster").name("broker-b").addr("10.0.0.2:10911");
    register(&mut t, &other.conn(3), &["T1", "OnlyB", "New"]);
    assert_ne!(t.change_stamp(), stamp, "a new topic");
    let stamp = t.change_stamp();
    t.unregister_batch(&[Broker::slave().unregister()]);
    assert_ne!(t.change_stamp(), stamp, "a broker gone");
}
