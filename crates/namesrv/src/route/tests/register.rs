//! REGISTER_BROKER and REGISTER_TOPIC (§5.3, §5.5; §11 #5, #11–#13, #15–#19, #29–#32).

use std::collections::BTreeMap;

use remoting::body::{QueueData, TopicConfig, TopicQueueMappingInfo};

use super::*;
use crate::route::{MinBrokerIdChange, RegisterError};

fn qd(broker: &str, perm: i32) -> QueueData {
    QueueData {
        broker_name: broker.to_owned(),
        perm,
        read_queue_nums: 8,
        topic_sys_flag: 0,
        write_queue_nums: 8,
    }
}

#[test]
fn master_gets_no_master_info_and_slave_gets_the_masters_addresses() {
    let mut t = RouteTable::new();
    let m = register(&mut t, &Broker::master(), &["TestTopic"]);
    assert_eq!((m.master_addr, m.ha_server_addr), (None, None));
    let s = register(&mut t, &Broker::slave(), &["TestTopic"]);
    assert_eq!(s.master_addr.as_deref(), Some(MASTER_ADDR));
    assert_eq!(s.ha_server_addr.as_deref(), Some(MASTER_HA));
    assert_eq!(
        addrs_of(&route(&t, "TestTopic"), BROKER),
        vec![(0, MASTER_ADDR.into()), (1, SLAVE_ADDR.into())]
    );
}

#[test]
fn old_version_slave_registers_its_address_but_no_topics() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().id(2333).acting_master(None), &["TestTopic"]);
    let info = t.cluster_info();
    let group = &info.broker_addr_table[BROKER];
    assert_eq!(group.broker_addrs.0, BTreeMap::from([(2333, MASTER_ADDR.to_owned())]));
    assert!(!group.enable_acting_master);
    assert_eq!(t.topic_count(), 0);
    assert!(t.pickup_route("TestTopic", true).is_none());
}

#[test]
fn role_switch_moves_an_address_to_its_new_id() {
    let mut t = RouteTable::new();
    let master = Broker::master().acting_master(Some(false));
    let slave = Broker::slave().acting_master(Some(false));
    register(&mut t, &master, &["TestTopic"]);
    register(&mut t, &slave, &["TestTopic"]);
    t.unregister_batch(&[master.unregister()]);
    assert_eq!(addrs_of(&route(&t, "TestTopic"), BROKER), vec![(1, SLAVE_ADDR.into())]);

    register(&mut t, &slave.clone().id(0).next_version(), &["TestTopic"]);
    assert_eq!(addrs_of(&route(&t, "TestTopic"), BROKER), vec![(0, SLAVE_ADDR.into())]);

    register(&mut t, &master.clone().id(1).next_version(), &["TestTopic"]);
    assert_eq!(
        addrs_of(&route(&t, "TestTopic"), BROKER),
        vec![(0, SLAVE_ADDR.into()), (1, MASTER_ADDR.into())]
    );
}

#[test]
fn a_new_master_address_takes_over_id_0_and_the_old_live_entry_lingers() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    register(&mut t, &Broker::master().addr("127.0.0.1:50911"), &["TestTopic"]);
    assert_eq!(addrs_of(&route(&t, "TestTopic"), BROKER), vec![(0, "127.0.0.1:50911".into())]);
    assert_eq!(t.live_count(), 2, "Java keeps the old address's live entry until it expires");
}

#[test]
fn same_address_in_two_clusters_has_independent_live_entries() {
    let mut t = RouteTable::new();
    let a = Broker::master();
    let mut b = Broker::master().cluster("OtherCluster").name("broker-b");
    b.dv.counter = 9;
    register(&mut t, &a, &["TestTopic"]);
    register(&mut t, &b, &["TestTopic"]);
    assert_eq!(t.live_count(), 2);
    assert_eq!(t.query_data_version(CLUSTER, MASTER_ADDR, Some(a.dv), NOW), (false, Some(a.dv)));
    assert_eq!(
        t.query_data_version("OtherCluster", MASTER_ADDR, Some(a.dv), NOW),
        (true, Some(b.dv))
    );
}

#[test]
fn unchanged_data_version_keeps_existing_queues_but_readds_missing_ones() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    register(&mut t, &m, &["TestTopic"]);
    assert_eq!(t.wipe_write_perm(BROKER), 2); // baseTopic and TestTopic
    register(&mut t, &m, &["TestTopic", "NewTopic"]);
    assert_eq!(
        perm_of(&route(&t, "TestTopic"), BROKER),
        4,
        "wiped perm survives an unchanged re-registration"
    );
    assert_eq!(perm_of(&route(&t, "NewTopic"), BROKER), 6, "an unknown topic is always added");

    t.delete_topic("TestTopic", None);
    assert!(t.pickup_route("TestTopic", true).is_none());
    register(&mut t, &m, &["TestTopic", "NewTopic"]);
    assert_eq!(
        perm_of(&route(&t, "TestTopic"), BROKER),
        6,
        "a deleted topic comes back with the broker"
    );
}

#[test]
fn any_data_version_field_change_rewrites_the_queues() {
    let mut t = RouteTable::new();
    let base = Broker::master();
    register(&mut t, &base, &["TestTopic"]);
    let bumps: [fn(&mut Broker); 3] =
        [|b| b.dv.timestamp += 1, |b| b.dv.counter += 1, |b| b.dv.state_version += 1];
    let mut b = base;
    for bump in bumps {
        t.wipe_write_perm(BROKER);
        bump(&mut b);
        register(&mut t, &b, &["TestTopic"]);
        assert_eq!(perm_of(&route(&t, "TestTopic"), BROKER), 6);
    }
}

#[test]
fn topics_missing_from_a_registration_are_kept_by_default() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic", "TestTopic1"]);
    register(&mut t, &Broker::master(), &["TestTopic1"]);
    assert!(t.pickup_route("TestTopic", true).is_some());
    assert!(t.pickup_route("TestTopic1", true).is_some());
}

#[test]
fn delete_topic_with_registration_removes_only_that_brokers_queues() {
    let mut t = RouteTable::new();
    let m1 = Broker::master();
    let m2 = Broker::master().name("broker-b").addr("127.0.0.1:10919");
    for b in [&m1, &m2] {
        t.register_owned(b.request(&["TestTopic", "TestTopic1"]), NOW, true).unwrap();
    }
    assert_eq!(route(&t, "TestTopic").broker_datas.len(), 2);

    t.register_owned(m1.request(&["TestTopic1"]), NOW, true).unwrap();
    let r = route(&t, "TestTopic");
    assert_eq!(r.broker_datas.len(), 1);
    assert_eq!(r.broker_datas[0].broker_name, "broker-b");
    assert_eq!(route(&t, "TestTopic1").broker_datas.len(), 2);

    t.register_owned(m2.request(&["TestTopic1"]), NOW, true).unwrap();
    assert!(t.pickup_route("TestTopic", true).is_none());
    assert_eq!(route(&t, "TestTopic1").broker_datas.len(), 2);
}

#[test]
fn registered_single_topics_need_a_broker_and_go_with_the_next_full_registration() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    assert!(!t.register_topic("TestTopic", vec![qd(BROKER, 6)]), "unknown broker");
    assert!(t.pickup_route("TestTopic", true).is_none());

    t.register_owned(m.request(&["TestTopic"]), NOW, true).unwrap();
    assert!(t.register_topic("TestTopic1", vec![qd(BROKER, 6)]));
    assert!(t.pickup_route("TestTopic1", true).is_some());

    t.register_owned(m.request(&["TestTopic", "TestTopic1"]), NOW, true).unwrap();
    assert!(t.pickup_route("TestTopic1", true).is_some());
    t.register_owned(m.request(&["TestTopic"]), NOW, true).unwrap();
    assert!(t.pickup_route("TestTopic", true).is_some());
    assert!(t.pickup_route("TestTopic1", true).is_none());

    t.register_topic("TestTopic1", vec![qd(BROKER, 6)]);
    t.unregister_batch(&[m.unregister()]);
    assert!(t.pickup_route("TestTopic", true).is_none());
    assert!(t.pickup_route("TestTopic1", true).is_none());
}

#[test]
fn register_topic_applies_queues_until_an_unknown_broker() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["Existing"]);
    assert!(!t.register_topic("Existing", vec![qd(BROKER, 2), qd("ghost", 6), qd(BROKER, 4)]));
    assert_eq!(
        perm_of(&route(&t, "Existing"), BROKER),
        2,
        "queues before the unknown broker stay applied"
    );

    assert!(!t.register_topic("Fresh", vec![qd(BROKER, 6), qd("ghost", 6)]));
    assert!(t.pickup_route("Fresh", true).is_none(), "a new topic is validated as a whole");
    assert!(t.register_topic("Fresh", vec![qd(BROKER, 6), qd(BROKER, 2)]));
    assert_eq!(perm_of(&route(&t, "Fresh"), BROKER), 2, "the last queue of a broker wins");
}

#[test]
fn single_topic_registration_fails_before_a_full_one_but_leaves_the_group() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    let err = t.register_owned(m.request_with(vec![topic_config("Only", 6)]), NOW, false);
    assert_eq!(err, Err(RegisterError::NotRegisteredYet { broker_id: 0 }));
    let info = t.cluster_info();
    assert!(info.cluster_addr_table[CLUSTER].contains(BROKER));
    assert!(info.broker_addr_table[BROKER].broker_addrs.0.is_empty());
    assert_eq!((t.topic_count(), t.live_count()), (0, 0));

    register(&mut t, &m, &["TestTopic"]);
    let one =
        t.register_owned(m.next_version().request_with(vec![topic_config("Only", 6)]), NOW, false);
    assert!(one.is_ok(), "accepted once the id is registered");
    assert!(t.pickup_route("Only", true).is_some());
}

#[test]
fn topic_configs_without_a_name_are_skipped() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    let nameless = TopicConfig { topic_name: None, ..TopicConfig::default() };
    t.register_owned(m.request_with(vec![nameless, topic_config("Named", 6)]), NOW, false).unwrap();
    assert!(t.pickup_route("Named", true).is_some());
    assert_eq!(t.topic_count(), 1);
    assert_eq!(t.query_data_version(CLUSTER, MASTER_ADDR, Some(m.dv), NOW), (false, Some(m.dv)));
}

#[test]
fn an_older_state_version_for_a_taken_id_is_ignored_after_the_role_switch() {
    let mut t = RouteTable::new();
    let other = "127.0.0.1:50911";
    register(&mut t, &Broker::master().state_version(5), &["TestTopic"]);
    register(&mut t, &Broker::slave().addr(other).state_version(3), &["TestTopic"]);
    assert!(t.last_heartbeat(CLUSTER, other).is_some());

    let out = t.register_owned(
        Broker::master().addr(other).state_version(3).request(&["TestTopic"]),
        NOW,
        false,
    );
    let out = out.unwrap();
    assert!(out.stale_state_version);
    assert_eq!((out.master_addr, out.ha_server_addr), (None, None));
    assert_eq!(
        addrs_of(&route(&t, "TestTopic"), BROKER),
        vec![(0, MASTER_ADDR.into())],
        "role switch stays applied"
    );
    assert_eq!(
        t.last_heartbeat(CLUSTER, other),
        None,
        "the rejected address's live entry is evicted"
    );

    register(&mut t, &Broker::master().addr(other).state_version(7), &["TestTopic"]);
    assert_eq!(addrs_of(&route(&t, "TestTopic"), BROKER), vec![(0, other.into())]);
}

#[test]
fn a_prime_slave_registers_read_only_topics_only_with_acting_master() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::slave(), &["TestTopic"]);
    assert_eq!(perm_of(&route(&t, "TestTopic"), BROKER), 4);

    let mut t = RouteTable::new();
    register(&mut t, &Broker::slave().acting_master(Some(false)), &["TestTopic"]);
    assert_eq!(perm_of(&route(&t, "TestTopic"), BROKER), 6);

    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["MasterTopic"]);
    register(&mut t, &Broker::slave().next_version(), &["SlaveOnly"]);
    assert!(
        t.pickup_route("SlaveOnly", true).is_none(),
        "a slave behind a master registers no topics"
    );
}

#[test]
fn a_lower_id_reports_a_min_broker_id_change() {
    let mut t = RouteTable::new();
    assert_eq!(register(&mut t, &Broker::slave(), &["T"]).min_broker_id_change, None);
    let change = register(&mut t, &Broker::master(), &["T"]).min_broker_id_change;
    assert_eq!(
        change,
        Some(MinBrokerIdChange {
            broker_name: BROKER.into(),
            min_broker_id: 0,
            min_broker_addr: MASTER_ADDR.into(),
            offline_broker_addr: None,
            ha_broker_addr: Some(MASTER_HA.into()),
            targets: vec![SLAVE_ADDR.into()],
        })
    );
    assert_eq!(register(&mut t, &Broker::master(), &["T"]).min_broker_id_change, None);
}

#[test]
fn filter_servers_follow_the_registration_list() {
    let mut t = RouteTable::new();
    let mut m = Broker::master();
    m.filters = Some(vec!["10.0.0.1:9999".into()]);
    register(&mut t, &m, &["T"]);
    let expected = BTreeMap::from([(MASTER_ADDR.to_owned(), vec!["10.0.0.1:9999".to_owned()])]);
    assert_eq!(route(&t, "T").filter_server_table, expected);
    m.filters = None;
    register(&mut t, &m, &["T"]);
    assert_eq!(route(&t, "T").filter_server_table, expected, "a null list leaves the entry");
    m.filters = Some(Vec::new());
    register(&mut t, &m, &["T"]);
    assert!(route(&t, "T").filter_server_table.is_empty());
}

#[test]
fn static_topic_mappings_are_attached_and_block_deletion_by_registration() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    register(&mut t, &m, &["Old"]);
    let info = TopicQueueMappingInfo {
        bname: Some(BROKER.into()),
        topic: Some("Static".into()),
        total_queues: 8,
        ..Default::default()
    };
    let mut req = m.next_version().request(&["Static"]);
    req.topic_config.topic_queue_mapping_info_map.insert("Static".into(), info.clone());
    t.register_owned(req, NOW, true).unwrap();
    assert_eq!(
        route(&t, "Static").topic_queue_mapping_by_broker,
        Some(BTreeMap::from([(BROKER.to_owned(), info)]))
    );
    assert!(t.pickup_route("Old", true).is_some(), "no deletion when the broker has static topics");
}

/// A write copies what it changes, not the small tables beside it: at 2,000 brokers a copy of
/// the groups and clusters per registration was most of its cost (S7 b2000).
#[test]
fn a_write_shares_the_small_tables_it_does_not_change() {
    let routes = crate::route::Routes::new();
    let (master, other) = (Broker::master(), Broker::master().name("broker-b").addr("10.0.0.2:1"));
    routes.write(|t| register(t, &master, &["T1"]));
    routes.write(|t| register(t, &other, &["T1"]));
    let before = routes.snapshot();
    routes.write(|t| t.delete_topic("T1", None));
    let after = routes.snapshot();
    assert!(!after.contains_topic("T1"));
    assert!(before.groups.ptr_eq(&after.groups), "the groups are shared, not copied");
    assert!(before.clusters.ptr_eq(&after.clusters), "the clusters are shared, not copied");
}

/// The distinct queue lists of `table`'s topics (by address) and how many topics it has.
fn lists_in_use(table: &RouteTable) -> (usize, usize) {
    let lists: std::collections::HashSet<*const u8> =
        table.topics.iter().map(|(_, entry)| entry.queues.as_ptr().cast::<u8>()).collect();
    (lists.len(), table.topic_count())
}

#[test]
fn topics_with_the_same_queues_share_one_list() {
    let mut t = RouteTable::new();
    let topics: Vec<String> = (0..500).map(|i| format!("T{i}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let (a, b) = (Broker::master(), Broker::master().name("broker-b").addr("127.0.0.1:10912"));
    register(&mut t, &a, &names);
    // baseTopic's queues differ from the others' (Java's default config).
    assert_eq!(lists_in_use(&t), (2, 501), "the 500 topics share one list after the first broker");
    register(&mut t, &b, &names);
    assert_eq!(lists_in_use(&t), (2, 501), "and after the second");
    assert_eq!(route(&t, "T7").queue_datas.len(), 2);

    // A changed topic has its own list; the others keep theirs.
    let mut configs = vec![TopicConfig::named("baseTopic")];
    configs.extend(names.iter().map(|n| topic_config(n, if *n == "T7" { 4 } else { 6 })));
    t.register_owned(b.clone().next_version().request_with(configs), NOW, false).expect("ok");
    assert_eq!(lists_in_use(&t), (3, 501));
    assert_eq!(perm_of(&route(&t, "T7"), "broker-b"), 4);

    // A broker gone leaves the topics one shared list again, and so does a restore.
    t.unregister_batch(&[b.unregister()]);
    assert_eq!(lists_in_use(&t), (2, 501));
    register(&mut t, &b, &names);
    assert_eq!(lists_in_use(&t), (2, 501), "a returning broker's topics share theirs");
    let (back, _) = RouteTable::from_snapshot(&t.to_snapshot(NOW), NOW).expect("restore");
    assert_eq!(lists_in_use(&back), (2, 501));
    assert_eq!(route(&back, "T9"), route(&t, "T9"));
}

/// Names kept inline in their entry (up to 40 bytes) and longer ones are found, listed,
/// deleted and restored alike.
#[test]
fn short_and_long_topic_names_alike() {
    let names: Vec<String> =
        [1, 39, 40, 41, 127].iter().map(|n| "é".repeat(n / 2) + &"t".repeat(n % 2)).collect();
    let topics: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &topics);
    let (back, _) = RouteTable::from_snapshot(&t.to_snapshot(NOW), NOW).expect("restore");
    for table in [&t, &back] {
        for name in &topics {
            assert_eq!(route(table, name).queue_datas.len(), 1, "{} bytes", name.len());
            assert!(table.contains_topic(name));
        }
    }
    t.delete_topic(topics[4], None);
    assert!(!t.contains_topic(topics[4]) && t.contains_topic(topics[2]));
}

/// The brokers whose queues a topic's route lists.
fn brokers_of(table: &RouteTable, topic: &str) -> Vec<String> {
    route(table, topic).queue_datas.into_iter().map(|q| q.broker_name).collect()
}

/// A cluster's two brokers in one write (one batch of the lane): the second changes the
/// entries the first made in place, no snapshot holding them; in two writes, the snapshot
/// published between them keeps the first's entries as they were.
#[test]
fn entries_no_snapshot_holds_change_in_place_and_published_ones_are_copied() {
    let (a, b) = (Broker::master(), Broker::master().name("broker-b").addr("127.0.0.1:10912"));
    let names = ["T1", "T2", "T3"];
    let entry = |t: &RouteTable, n: &str| std::sync::Arc::as_ptr(t.topics.get(n).expect(n));

    let mut one = RouteTable::new();
    register(&mut one, &a, &names);
    let made: Vec<_> = names.iter().map(|n| entry(&one, n)).collect();
    register(&mut one, &b, &names);
    for (n, made) in names.iter().zip(made) {
        assert!(std::ptr::eq(entry(&one, n), made), "{n} changed in place");
        assert_eq!(brokers_of(&one, n), ["broker-a", "broker-b"]);
    }

    let mut two = RouteTable::new();
    register(&mut two, &a, &names);
    let published = two.clone();
    register(&mut two, &b, &names);
    for n in names {
        assert!(!std::ptr::eq(entry(&two, n), entry(&published, n)), "{n} copied");
        assert_eq!(brokers_of(&published, n), ["broker-a"], "the snapshot keeps {n}");
        assert_eq!(route(&two, n), route(&one, n));
    }
}

/// A put reuses the list the previous put made only when it starts from the same list: a topic
/// whose other broker differs gets its own.
#[test]
fn a_put_reuses_the_last_list_only_from_the_same_list() {
    let a = Broker::master();
    let b = Broker::master().name("broker-b").addr("127.0.0.1:10912");
    let c = Broker::master().name("broker-c").addr("127.0.0.1:10913");
    let mut t = RouteTable::new();
    register(&mut t, &a, &["T1", "T2"]);
    register(&mut t, &c, &["T3"]);
    register(&mut t, &b, &["T1", "T2", "T3"]); // put in this order
    assert_eq!(brokers_of(&t, "T1"), ["broker-a", "broker-b"]);
    assert_eq!(brokers_of(&t, "T3"), ["broker-b", "broker-c"]);
    assert_eq!(brokers_of(&t, "T2"), ["broker-a", "broker-b"]);
    assert!(std::sync::Arc::ptr_eq(
        &t.topics.get("T1").expect("T1").queues,
        &t.topics.get("T2").expect("T2").queues
    ));
}

/// A registration whose puts change its group's queues moves the group's queue generation
/// (what the stamps of the group's registrants are compared with); one that changes none
/// leaves it.
#[test]
fn a_registration_that_changes_queues_moves_its_groups_queue_generation() {
    let gen = |t: &RouteTable| t.group_gens.get(BROKER).copied().unwrap_or_default().queues;
    let master = Broker::master();
    let mut t = RouteTable::new();
    register(&mut t, &master, &["T1"]);
    let first = gen(&t);
    assert!(first > 0);
    let master = master.next_version();
    register(&mut t, &master, &["T1"]);
    assert_eq!(gen(&t), first, "every topic re-put as it was");
    let before = t.next_generation();
    register(&mut t, &master.next_version(), &["T1", "T2", "T3"]);
    assert!(gen(&t) > before, "two topics added");
}
