//! The route snapshot: a round trip keeps every table (liveness restamped), a v1 file of the
//! old code path restores identically, damage is detected (never a panic, never a wrong
//! table), a file's counts bound what its reader allocates, restored brokers expire unless they
//! register again, and a registration replaces a restored entry as any other.

use proptest::prelude::*;
use remoting::body::{TopicQueueMappingInfo, MAPPING_SCOPE_GLOBAL};

use super::super::snapshot::{to_v1_snapshot, RESTORED_CONN};
use super::super::{SnapshotError, SNAPSHOT_FORMAT_VERSION};
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
    t.register_owned(request, NOW, false).expect("master");
    register(&mut t, &Broker::slave().zone("zone-a"), &["T1", "T2", "Ordered"]);
    let other = Broker::master().cluster("OtherCluster").name("broker-b").addr("10.0.0.2:10911");
    register(&mut t, &other.conn(3), &["T1", "OnlyB"]);
    t
}

/// [`busy_table`] and a third group whose queue lists differ in every field, with a negative
/// state version and a 1 ms heartbeat timeout, and topic names sharing long prefixes or not
/// ASCII: every kind of entry a snapshot keeps.
fn full_table() -> RouteTable {
    let mut t = busy_table();
    // Queue lists that differ in every field, a name sharing a long prefix, a non-ASCII name.
    let odd = TopicConfig {
        perm: 2,
        read_queue_nums: 3,
        write_queue_nums: 5,
        topic_sys_flag: -7,
        ..TopicConfig::named("T1-odd")
    };
    let third = Broker::master().cluster("OtherCluster").name("broker-c").addr("10.0.0.3:10911");
    let third = third.state_version(-4).timeout(1);
    let configs = vec![odd, topic_config("T1", 4), topic_config("Tämä-ö", 6)];
    t.register_owned(third.conn(4).request_with(configs), NOW, false).expect("third");
    t
}

fn restored(t: &RouteTable, now: u64) -> RouteTable {
    let (back, info) = RouteTable::from_snapshot(&t.to_snapshot(WRITTEN_AT), now).expect("restore");
    assert_eq!(info.written_at_ms, WRITTEN_AT);
    assert_eq!(info.version, SNAPSHOT_FORMAT_VERSION);
    assert_eq!(
        (info.topics, info.groups, info.live),
        (t.topic_count(), t.group_count(), t.live_count())
    );
    back
}

/// `a` and `b` hold the same routes: every table the v1 JSON writes (a sorted, complete
/// listing, independent of the v2 code) and every route as a client reads it.
fn assert_same_tables(a: &RouteTable, b: &RouteTable) {
    assert_eq!(
        String::from_utf8_lossy(&to_v1_snapshot(a, WRITTEN_AT)),
        String::from_utf8_lossy(&to_v1_snapshot(b, WRITTEN_AT))
    );
    assert_eq!(a.cluster_info(), b.cluster_info());
    assert_eq!(a.all_topics(), b.all_topics());
    assert_buckets_cover(a);
    assert_buckets_cover(b);
    for topic in a.all_topics().topic_list {
        for acting in [false, true] {
            assert_eq!(a.pickup_route(&topic, acting), b.pickup_route(&topic, acting), "{topic}");
        }
    }
}

#[test]
fn a_round_trip_keeps_every_table_and_restamps_liveness() {
    let t = full_table();
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
    assert_eq!(back.last_heartbeat("OtherCluster", "10.0.0.3:10911"), Some((RESTART, 1)));
    assert_same_tables(&t, &back);
    assert_eq!(route(&back, "T1-odd").queue_datas[0].topic_sys_flag, -7);
    assert!(back.contains_topic("Tämä-ö"));
    // A slave still learns its live master, with the master's HA address.
    let (changed, version) =
        back.query_data_version(CLUSTER, MASTER_ADDR, Some(Broker::master().dv), RESTART);
    assert_eq!((changed, version), (false, Some(Broker::master().dv)));
    // And a restored table restores again the same.
    assert_same_tables(&restored(&back, RESTART), &t);
}

#[test]
fn a_v1_file_of_the_old_code_path_restores_identically() {
    let t = full_table();
    let v1 = to_v1_snapshot(&t, WRITTEN_AT);
    assert!(v1.starts_with(b"rocketmq-namesrv-rs route snapshot v1 len="));
    let (back, info) = RouteTable::from_snapshot(&v1, RESTART).expect("v1 restores");
    assert_eq!((info.version, info.written_at_ms), (1, WRITTEN_AT));
    assert_eq!((info.topics, info.groups, info.live), (t.topic_count(), 3, 4));
    assert_same_tables(&t, &back);
    assert_eq!(back.last_heartbeat(CLUSTER, MASTER_ADDR), Some((RESTART, 30_000)));
    // Written again as v2, it restores the same.
    assert_same_tables(&restored(&back, RESTART), &t);
}

#[test]
fn v2_is_binary_with_the_header_line_and_under_a_quarter_of_v1() {
    let mut t = full_table();
    let names: Vec<String> = (0..2_000).map(|i| format!("orders-service-topic-{i:05}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    register(&mut t, &Broker::master(), &names);
    let v2 = t.to_snapshot(WRITTEN_AT);
    let v1 = to_v1_snapshot(&t, WRITTEN_AT);
    let header = b"rocketmq-namesrv-rs route snapshot v2 len=";
    assert_eq!(&v2[..header.len()], header);
    assert!(v2.len() * 4 < v1.len(), "v2 {} bytes, v1 {}", v2.len(), v1.len());
    assert_same_tables(&t, &restored_any(&v2));
}

/// The writer's dictionary of queue lists is keyed by the list's address (the table interns
/// its lists): topics given the same queues by different registrations still write their list
/// once, and each further topic costs its name and a one-byte reference.
#[test]
fn a_list_shared_by_topics_registered_apart_is_written_once() {
    let names: Vec<String> = (0..1_000).map(|i| format!("shared-{i:04}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut t = RouteTable::new();
    let other = || Broker::master().name("broker-b").addr("10.0.0.2:10911").conn(3);
    register(&mut t, &Broker::master(), &names);
    // The second broker's topics in ten registrations, so that each builds lists of its own.
    for end in (100..=1_000).step_by(100) {
        register(&mut t, &other(), &names[..end]);
    }
    let payload_of = |t: &RouteTable| t.to_snapshot(WRITTEN_AT).len();
    let one = {
        let mut t = RouteTable::new();
        register(&mut t, &Broker::master(), &names[..1]);
        register(&mut t, &other(), &names[..1]);
        payload_of(&t)
    };
    // Each further topic: a length byte, its name, a one-byte dictionary reference.
    let per_topic: usize = names[1..].iter().map(|n| 1 + n.len() + 1).sum();
    assert_eq!(payload_of(&t), one + per_topic, "one list for 1,000 topics");
    assert_same_tables(&t, &restored_any(&t.to_snapshot(WRITTEN_AT)));
}

fn restored_any(bytes: &[u8]) -> RouteTable {
    RouteTable::from_snapshot(bytes, RESTART).expect("restore").0
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
    let mut future = b"rocketmq-namesrv-rs route snapshot v3 whatever\n".to_vec();
    future.extend_from_slice(&bytes[newline + 1..]);
    assert!(matches!(RouteTable::from_snapshot(&future, RESTART), Err(SnapshotError::Version(3))));
    assert!(matches!(
        RouteTable::from_snapshot(b"rocketmq-namesrv-rs route snapshot v0 len=0 crc32=0\n", 1),
        Err(SnapshotError::Version(0))
    ));
    // The v2 header is canonical: fixed width, digits only.
    let payload = &bytes[newline + 1..];
    let crc = crc32fast::hash(payload);
    for line in [
        format!("rocketmq-namesrv-rs route snapshot v2 len={} crc32={crc:08x}", payload.len()),
        format!("rocketmq-namesrv-rs route snapshot v2 len=+{:019} crc32={crc:08x}", payload.len()),
        format!("rocketmq-namesrv-rs route snapshot v2 len={:020} crc32={crc:08X}", payload.len()),
    ]
    .into_iter()
    // An all-digit checksum reads the same in either case: only a line that differs is odd.
    .filter(|line| !bytes.starts_with(format!("{line}\n").as_bytes()))
    {
        let mut odd = format!("{line}\n").into_bytes();
        odd.extend_from_slice(payload);
        assert!(
            matches!(RouteTable::from_snapshot(&odd, RESTART), Err(SnapshotError::Header)),
            "{line}"
        );
    }
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
    // A v2 payload whose checksum matches but which does not parse: refused too.
    let mut sealed = with_payload(&[0x01, 0x00]);
    assert!(matches!(
        RouteTable::from_snapshot(&sealed, RESTART),
        Err(SnapshotError::Malformed { .. })
    ));
    sealed = with_payload(&bytes[newline + 1..bytes.len() - 1]);
    assert!(RouteTable::from_snapshot(&sealed, RESTART).is_err(), "one byte short");
    let mut longer = bytes[newline + 1..].to_vec();
    longer.push(0);
    assert!(matches!(
        RouteTable::from_snapshot(&with_payload(&longer), RESTART),
        Err(SnapshotError::Malformed { .. })
    ));
}

/// `payload` under a v2 header with its true length and checksum (a crafted file).
fn with_payload(payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "rocketmq-namesrv-rs route snapshot v2 len={:020} crc32={:08x}\n",
        payload.len(),
        crc32fast::hash(payload)
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

#[test]
fn a_file_s_counts_never_size_an_allocation_beyond_its_bytes() {
    // written at 0; u64::MAX / 2 strings; then nothing.
    let mut payload = vec![0x00];
    payload.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    let err = RouteTable::from_snapshot(&with_payload(&payload), RESTART).expect_err("refused");
    assert!(err.to_string().contains("count larger than the bytes left"), "{err}");
    // No strings, no clusters, no groups, no live entries, no filters, then 2^28 mappings.
    let payload = [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x01];
    let err = RouteTable::from_snapshot(&with_payload(&payload), RESTART).expect_err("refused");
    assert!(err.to_string().contains("count larger than the bytes left"), "{err}");
    // An index past the string table.
    let payload = [0x00, 0x00, 0x01, 0x05, 0x00];
    let err = RouteTable::from_snapshot(&with_payload(&payload), RESTART).expect_err("refused");
    assert!(err.to_string().contains("string index"), "{err}");
}

/// A v2 payload written by hand from the module's description: a string table of one broker
/// name, no group, three topics: the first with a new queue list, the second on that list, the
/// third with a new list naming a broker the string table did not have.
#[test]
fn a_hand_written_v2_file_restores_and_one_naming_a_topic_twice_is_refused() {
    let payload = |second: u8| {
        vec![
            0x2a, // written at 42
            0x01, 0x01, b'b', // strings: "b"
            0x00, 0x00, 0x00, 0x00, 0x00, // no clusters, groups, live, filters, mappings
            0x01, b'T', 0x00, 0x01, 0x01, 12, 16, 16, 0, // T: new list [(sid 0, 6, 8, 8, 0)]
            0x01, second, 0x01, // `second`: list 0
            0x01, b'V', 0x00, 0x01, 0x00, 0x01, b'c', 8, 2, 4, 1, // V: [("c", 4, 1, 2, -1)]
        ]
    };
    let (back, info) = RouteTable::from_snapshot(&with_payload(&payload(b'U')), RESTART)
        .expect("a valid hand-written file");
    assert_eq!((info.written_at_ms, info.topics, info.groups), (42, 3, 0));
    let queues = |topic: &str| back.topics.get(topic).expect("topic").queues.to_vec();
    let u = queues("U");
    assert_eq!((u.len(), &*u[0].0), (1, "b"));
    assert_eq!((u[0].1.perm, u[0].1.read_queue_nums, u[0].1.write_queue_nums), (6, 8, 8));
    let v = queues("V");
    assert_eq!((&*v[0].0, v[0].1.perm, v[0].1.topic_sys_flag), ("c", 4, -1));
    let err = RouteTable::from_snapshot(&with_payload(&payload(b'T')), RESTART).expect_err("twice");
    assert!(err.to_string().contains("a topic twice"), "{err}");
}

/// A v2 file of [`full_table`], built once for the property tests.
fn busy_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| full_table().to_snapshot(WRITTEN_AT))
}

/// The v1 JSON of [`full_table`] (a complete, sorted listing of its tables).
fn full_v1() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| to_v1_snapshot(&full_table(), WRITTEN_AT))
}

/// One way to damage a file.
#[derive(Debug, Clone)]
enum Damage {
    Flip { at: usize, bit: u8 },
    Set { at: usize, byte: u8 },
    Truncate { to: usize },
    Insert { at: usize, byte: u8 },
    Remove { at: usize },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Damage::Set { at, byte }),
        any::<usize>().prop_map(|to| Damage::Truncate { to }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Damage::Insert { at, byte }),
        any::<usize>().prop_map(|at| Damage::Remove { at }),
    ]
}

fn apply(bytes: &mut Vec<u8>, damage: &Damage) {
    let n = bytes.len();
    if n == 0 {
        bytes.push(0);
        return;
    }
    match *damage {
        Damage::Flip { at, bit } => bytes[at % n] ^= 1 << bit,
        Damage::Set { at, byte } => bytes[at % n] = byte,
        Damage::Truncate { to } => bytes.truncate(to % n),
        Damage::Insert { at, byte } => bytes.insert(at % (n + 1), byte),
        Damage::Remove { at } => drop(bytes.remove(at % n)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Damage anywhere (header or payload, one change or several): the file is refused with an
    /// error, never restored as another table.
    #[test]
    fn damaged_files_are_refused_never_misread(damages in prop::collection::vec(damage(), 1..4)) {
        let mut bytes = busy_bytes().to_vec();
        for d in &damages {
            apply(&mut bytes, d);
        }
        match RouteTable::from_snapshot(&bytes, RESTART) {
            Err(_) => {}
            // Only when the damage undid itself (the header is canonical, the payload's
            // CRC32 catches the rest): the table is the original.
            Ok((back, _)) => prop_assert_eq!(to_v1_snapshot(&back, WRITTEN_AT), full_v1().to_vec()),
        }
    }

    /// A crafted payload (damaged, then sealed with its true length and checksum): never a
    /// panic; whatever it gives is a table that writes and restores again.
    #[test]
    fn crafted_payloads_never_panic(damages in prop::collection::vec(damage(), 1..4)) {
        let bytes = busy_bytes();
        let newline = bytes.iter().position(|b| *b == b'\n').unwrap_or(0);
        let mut payload = bytes[newline + 1..].to_vec();
        for d in &damages {
            apply(&mut payload, d);
        }
        if let Ok((back, _)) = RouteTable::from_snapshot(&with_payload(&payload), RESTART) {
            let again = back.to_snapshot(WRITTEN_AT);
            prop_assert!(RouteTable::from_snapshot(&again, RESTART).is_ok());
        }
    }

    /// Arbitrary bytes after a v2 header with a matching checksum: never a panic.
    #[test]
    fn arbitrary_payloads_never_panic(payload in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = RouteTable::from_snapshot(&with_payload(&payload), RESTART);
    }
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
    back.register_owned(master.request(&["T1", "T3"]), RESTART + 10, false).expect("register");
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
