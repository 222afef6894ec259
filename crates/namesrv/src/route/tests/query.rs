//! Route pickup, acting-master rewrite, zone filter and the lists (§5.7, §5.9, §6;
//! §11 #15, #25, #27, #28, #34).

use std::collections::{BTreeMap, BTreeSet};

use remoting::body::{BrokerData, IntKeyMap, QueueData, TopicRouteData};

use super::*;
use crate::route::{zone_filter, UnitKind};

#[test]
fn a_route_has_the_queues_and_groups_of_every_broker_of_the_topic() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    let r = route(&t, "TestTopic");
    assert_eq!(r.broker_datas.len(), 1);
    assert_eq!(r.broker_datas[0].cluster, CLUSTER);
    assert!(r.broker_datas[0].enable_acting_master);
    assert_eq!(
        r.queue_datas,
        vec![QueueData {
            broker_name: BROKER.into(),
            perm: 6,
            read_queue_nums: 8,
            topic_sys_flag: 0,
            write_queue_nums: 8
        }]
    );
    assert_eq!(r.topic_queue_mapping_by_broker, None);

    register(&mut t, &Broker::master().name("AnotherBroker"), &["TestTopic"]);
    let r = route(&t, "TestTopic");
    let names: Vec<_> = r.broker_datas.iter().map(|b| b.broker_name.as_str()).collect();
    assert_eq!(names, ["AnotherBroker", BROKER]);
    assert_eq!(r.queue_datas.len(), 2);
}

#[test]
fn a_topic_whose_groups_are_gone_has_no_route() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    t.groups.remove(BROKER); // unreachable through the API: groups and queues go together
    assert!(t.pickup_route("TestTopic", true).is_none());
    assert!(t.route_body("TestTopic", crate::route::RouteForm::Legacy, true).is_none());
}

#[test]
fn a_slave_only_group_acts_as_master_only_with_support_and_not_for_sync_topics() {
    let mut t = RouteTable::new();
    let sync = "rmq_sys_SYNC_BROKER_MEMBER_broker-a";
    register(&mut t, &Broker::slave(), &["Order", sync]);
    assert_eq!(addrs_of(&route(&t, "Order"), BROKER), vec![(0, SLAVE_ADDR.into())]);
    assert_eq!(
        addrs_of(&t.pickup_route("Order", false).unwrap(), BROKER),
        vec![(1, SLAVE_ADDR.into())]
    );
    assert_eq!(addrs_of(&route(&t, sync), BROKER), vec![(1, SLAVE_ADDR.into())]);
    assert_eq!(perm_of(&route(&t, "Order"), BROKER), 4);
}

#[test]
fn the_rewrite_leaves_groups_with_a_master_a_writable_queue_or_no_acting_master() {
    let mut t = RouteTable::new();
    let other = "broker-b";
    register(&mut t, &Broker::slave(), &["Order"]);
    register(&mut t, &Broker::master().name(other).addr("127.0.0.1:10919"), &["Order"]);
    register(&mut t, &Broker::slave().name(other).addr("127.0.0.1:30919"), &["Order"]);
    let r = route(&t, "Order");
    assert_eq!(addrs_of(&r, BROKER), vec![(0, SLAVE_ADDR.into())]);
    assert_eq!(
        addrs_of(&r, other),
        vec![(0, "127.0.0.1:10919".into()), (1, "127.0.0.1:30919".into())]
    );

    t.add_write_perm(BROKER);
    assert_eq!(
        addrs_of(&route(&t, "Order"), BROKER),
        vec![(1, SLAVE_ADDR.into())],
        "writable: no rewrite"
    );

    let mut t = RouteTable::new();
    register(&mut t, &Broker::slave().acting_master(Some(false)), &["Order"]);
    t.wipe_write_perm(BROKER);
    assert_eq!(
        addrs_of(&route(&t, "Order"), BROKER),
        vec![(1, SLAVE_ADDR.into())],
        "acting master disabled"
    );
}

fn bd(name: &str, zone: Option<&str>, addrs: &[(i64, &str)]) -> BrokerData {
    BrokerData {
        broker_addrs: addrs
            .iter()
            .map(|(id, a)| (*id, (*a).to_owned()))
            .collect::<IntKeyMap<_, _>>(),
        broker_name: name.into(),
        cluster: CLUSTER.into(),
        enable_acting_master: false,
        zone_name: zone.map(str::to_owned),
    }
}

fn q(name: &str) -> QueueData {
    QueueData {
        broker_name: name.into(),
        perm: 6,
        read_queue_nums: 4,
        topic_sys_flag: 0,
        write_queue_nums: 4,
    }
}

#[test]
fn the_zone_filter_keeps_same_zone_and_masterless_groups_only() {
    let route = TopicRouteData {
        broker_datas: vec![
            bd("a", Some("zone-1"), &[(0, "a0"), (1, "a1")]),
            bd("b", Some("zone-2"), &[(0, "b0"), (1, "b1")]),
            bd("c", Some("zone-2"), &[(1, "c1")]),
            bd("d", None, &[(0, "d0")]),
        ],
        filter_server_table: [("a0", "fa"), ("b0", "fb"), ("b1", "fb1"), ("c1", "fc")]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), vec![(*v).to_owned()]))
            .collect(),
        order_topic_conf: None,
        queue_datas: vec![q("a"), q("b"), q("c"), q("d")],
        topic_queue_mapping_by_broker: None,
    };
    let filtered = zone_filter(route.clone(), "ZONE-1");
    let names: Vec<_> = filtered.broker_datas.iter().map(|b| b.broker_name.as_str()).collect();
    assert_eq!(names, ["a", "c"]);
    let queues: Vec<_> = filtered.queue_datas.iter().map(|q| q.broker_name.as_str()).collect();
    assert_eq!(queues, ["a", "c"]);
    let filters: BTreeSet<_> = filtered.filter_server_table.keys().map(String::as_str).collect();
    assert_eq!(filters, BTreeSet::from(["a0", "c1"]));

    let none_match = zone_filter(route, "zone-3");
    let names: Vec<_> = none_match.broker_datas.iter().map(|b| b.broker_name.as_str()).collect();
    assert_eq!(names, ["c"], "a group without a master is readable from any zone");
}

#[test]
fn the_group_zone_is_the_last_registrants() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().zone("zone-1"), &["T"]);
    assert_eq!(route(&t, "T").broker_datas[0].zone_name.as_deref(), Some("zone-1"));
    register(&mut t, &Broker::slave(), &["T"]);
    assert_eq!(route(&t, "T").broker_datas[0].zone_name, None);
}

#[test]
fn topics_by_cluster_lists_topics_of_its_groups_and_nothing_for_unknown_clusters() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["A"]);
    register(
        &mut t,
        &Broker::master().cluster("Other").name("broker-o").addr("127.0.0.1:1"),
        &["B"],
    );
    assert_eq!(t.topics_by_cluster(CLUSTER).topic_list, ["A", "baseTopic"]);
    assert_eq!(t.topics_by_cluster("Other").topic_list, ["B", "baseTopic"]);
    assert!(t.topics_by_cluster("Nope").topic_list.is_empty());
    assert_eq!(t.all_topics().topic_list, ["A", "B", "baseTopic"]);
}

#[test]
fn unit_lists_judge_only_the_first_queue_by_broker_name() {
    let mut t = RouteTable::new();
    let a = Broker::master();
    let b = Broker::master().name("broker-b").addr("127.0.0.1:10919");
    let with_flags = |flags: [(&str, i32); 4]| {
        flags
            .iter()
            .map(|(name, flag)| remoting::body::TopicConfig {
                topic_sys_flag: *flag,
                ..topic_config(name, 6)
            })
            .collect::<Vec<_>>()
    };
    t.register_owned(
        a.request_with(with_flags([("U", 0), ("V", 1), ("S", 2), ("N", 3)])),
        NOW,
        false,
    )
    .unwrap();
    t.register_owned(
        b.request_with(with_flags([("U", 1), ("V", 0), ("S", 0), ("N", 2)])),
        NOW,
        false,
    )
    .unwrap();
    assert_eq!(t.unit_topics(UnitKind::Unit).topic_list, ["N", "V"]);
    assert_eq!(t.unit_topics(UnitKind::HasUnitSub).topic_list, ["N", "S"]);
    assert_eq!(t.unit_topics(UnitKind::HasUnitSubNotUnit).topic_list, ["S"]);
}

#[test]
fn system_topics_are_cluster_and_broker_names_with_one_address() {
    let mut t = RouteTable::new();
    assert_eq!(t.system_topics(), remoting::body::TopicList::default());
    register(&mut t, &Broker::slave(), &["T"]);
    register(&mut t, &Broker::master(), &["T"]);
    let list = t.system_topics();
    assert_eq!(list.topic_list, [CLUSTER, BROKER]);
    assert_eq!(list.broker_addr.as_deref(), Some(MASTER_ADDR), "the lowest id of the first group");
}

#[test]
fn cluster_info_and_member_group_copy_the_groups() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["T"]);
    register(&mut t, &Broker::slave(), &["T"]);
    let info = t.cluster_info();
    assert_eq!(info.cluster_addr_table[CLUSTER], BTreeSet::from([BROKER.to_owned()]));
    let expected = BTreeMap::from([(0, MASTER_ADDR.to_owned()), (1, SLAVE_ADDR.to_owned())]);
    assert_eq!(info.broker_addr_table[BROKER].broker_addrs.0, expected);

    let group = t.broker_member_group("AnyCluster", BROKER).broker_member_group;
    assert_eq!((group.cluster.as_str(), group.broker_name.as_str()), ("AnyCluster", BROKER));
    assert_eq!(group.broker_addrs.0, expected);
    assert!(t.broker_member_group(CLUSTER, "ghost").broker_member_group.broker_addrs.0.is_empty());
}
