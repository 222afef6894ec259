//! Unregistration, topic deletion and write permissions (§5.4–§5.6; §11 #14, #20–#23, #35).

use remoting::body::{perm, QueueData};

use proptest::prelude::*;

use super::*;
use crate::route::MinBrokerIdChange;

#[test]
fn unregistering_the_only_broker_removes_its_topics_and_cluster() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    register(&mut t, &m, &["TestTopic", "TestTopic1"]);
    t.unregister_batch(&[m.unregister()]);
    assert!(t.pickup_route("TestTopic", true).is_none());
    assert!(t.pickup_route("TestTopic1", true).is_none());
    assert_eq!((t.topic_count(), t.group_count(), t.live_count()), (0, 0, 0));
    assert!(t.cluster_info().cluster_addr_table.is_empty());
}

#[test]
fn unregistering_a_slave_keeps_the_master() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    register(&mut t, &Broker::slave(), &["TestTopic"]);
    t.unregister_batch(&[Broker::slave().unregister()]);
    let r = route(&t, "TestTopic");
    assert_eq!(addrs_of(&r, BROKER), vec![(0, MASTER_ADDR.into())]);
    assert_eq!(perm_of(&r, BROKER), 6);
}

#[test]
fn losing_the_master_of_an_acting_master_group_makes_it_read_only_until_it_returns() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    register(&mut t, &Broker::slave(), &["TestTopic"]);
    t.unregister_batch(&[Broker::master().unregister()]);
    let r = route(&t, "TestTopic");
    assert_eq!(perm_of(&r, BROKER), perm::READ);
    assert_eq!(
        addrs_of(&r, BROKER),
        vec![(0, SLAVE_ADDR.into())],
        "the slave acts as master in the route"
    );
    assert_eq!(
        addrs_of(&t.pickup_route("TestTopic", false).unwrap(), BROKER),
        vec![(1, SLAVE_ADDR.into())]
    );

    register(&mut t, &Broker::master(), &["TestTopic"]);
    let r = route(&t, "TestTopic");
    assert_eq!(perm_of(&r, BROKER), 6, "the master's first registration rewrites its topics");
    assert_eq!(addrs_of(&r, BROKER), vec![(0, MASTER_ADDR.into()), (1, SLAVE_ADDR.into())]);
}

#[test]
fn losing_the_master_of_an_old_style_group_keeps_write_perm() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().acting_master(Some(false)), &["TestTopic"]);
    register(&mut t, &Broker::slave().acting_master(Some(false)), &["TestTopic"]);
    t.unregister_batch(&[Broker::master().unregister()]);
    let r = route(&t, "TestTopic");
    assert_eq!(perm_of(&r, BROKER), perm::READ | perm::WRITE);
    assert_eq!(addrs_of(&r, BROKER), vec![(1, SLAVE_ADDR.into())]);
}

#[test]
fn unregistration_removes_by_address_so_a_new_master_survives() {
    let mut t = RouteTable::new();
    let new_master = Broker::master().addr("127.0.0.1:50911");
    register(&mut t, &Broker::master(), &["TestTopic"]);
    register(&mut t, &new_master, &["TestTopic"]);
    t.unregister_batch(&[Broker::master().unregister()]);
    assert_eq!(addrs_of(&route(&t, "TestTopic"), BROKER), vec![(0, "127.0.0.1:50911".into())]);
    assert!(t.last_heartbeat(CLUSTER, "127.0.0.1:50911").is_some());
    assert_eq!(t.last_heartbeat(CLUSTER, MASTER_ADDR), None);
}

#[test]
fn a_batch_applies_every_request() {
    let mut t = RouteTable::new();
    let m1 = Broker::master();
    let m2 = Broker::master().name("broker-b").addr("127.0.0.1:10919");
    register(&mut t, &m1, &["TestTopic1"]);
    register(&mut t, &m2, &["TestTopic2"]);
    t.unregister_batch(&[m1.unregister(), m2.unregister()]);
    assert!(t.pickup_route("TestTopic1", true).is_none());
    assert!(t.pickup_route("TestTopic2", true).is_none());
    assert_eq!(t.topic_count(), 0);
}

#[test]
fn unregistering_an_unknown_broker_changes_nothing() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    let notes =
        t.unregister_batch(&[Broker::master().name("ghost").addr("1.2.3.4:5").unregister()]);
    assert!(notes.is_empty());
    assert_eq!((t.topic_count(), t.group_count(), t.live_count()), (2, 1, 1));
}

#[test]
fn only_a_known_minimum_id_leaving_reports_a_min_broker_id_change() {
    let setup = || {
        let mut t = RouteTable::new();
        register(&mut t, &Broker::master(), &["T"]);
        register(&mut t, &Broker::slave(), &["T"]);
        t
    };
    let mut t = setup();
    let mut no_id = Broker::master().unregister();
    no_id.broker_id = None;
    assert!(t.unregister_batch(&[no_id]).is_empty(), "a null id is never the minimum");

    let mut t = setup();
    let notes = t.unregister_batch(&[Broker::master().unregister()]);
    assert_eq!(
        notes,
        vec![MinBrokerIdChange {
            broker_name: BROKER.into(),
            min_broker_id: 1,
            min_broker_addr: SLAVE_ADDR.into(),
            offline_broker_addr: Some(MASTER_ADDR.into()),
            ha_broker_addr: None,
            targets: vec![SLAVE_ADDR.into()],
        }]
    );

    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().acting_master(Some(false)), &["T"]);
    register(&mut t, &Broker::slave().acting_master(Some(false)), &["T"]);
    assert!(
        t.unregister_batch(&[Broker::master().unregister()]).is_empty(),
        "only acting-master groups"
    );
}

#[test]
fn delete_topic_with_a_cluster_removes_only_that_clusters_queues() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["TestTopic"]);
    register(
        &mut t,
        &Broker::master().cluster("AnotherCluster").name("AnotherBroker"),
        &["TestTopic"],
    );
    assert_eq!(route(&t, "TestTopic").broker_datas.len(), 2);

    t.delete_topic("TestTopic", Some("NoSuchCluster"));
    assert_eq!(route(&t, "TestTopic").broker_datas.len(), 2);
    t.delete_topic("TestTopic", Some(CLUSTER));
    let r = route(&t, "TestTopic");
    assert_eq!(r.broker_datas.len(), 1);
    assert_eq!(r.broker_datas[0].broker_name, "AnotherBroker");
    t.delete_topic("TestTopic", Some("AnotherCluster"));
    assert!(t.pickup_route("TestTopic", true).is_none());

    register(&mut t, &Broker::master().next_version(), &["Gone"]);
    t.delete_topic("Gone", Some(""));
    assert!(
        t.pickup_route("Gone", true).is_none(),
        "an empty cluster name deletes the whole topic"
    );
}

#[test]
fn wipe_and_add_write_perm_count_topics_and_add_resets_to_read_write() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    t.register_owned(
        m.request_with(vec![topic_config("T", 6), topic_config("Inherit", 7)]),
        NOW,
        false,
    )
    .unwrap();
    assert_eq!(t.wipe_write_perm(BROKER), 2);
    assert_eq!(perm_of(&route(&t, "T"), BROKER), 4);
    assert_eq!(perm_of(&route(&t, "Inherit"), BROKER), 5);
    assert_eq!(t.wipe_write_perm(BROKER), 2, "counts topics, changed or not");
    assert_eq!(t.add_write_perm(BROKER), 2);
    assert_eq!(perm_of(&route(&t, "T"), BROKER), 6);
    assert_eq!(perm_of(&route(&t, "Inherit"), BROKER), 6, "INHERIT is lost");
    assert_eq!((t.wipe_write_perm("ghost"), t.add_write_perm("ghost")), (0, 0));
}

#[test]
fn closing_connections_removes_the_master_then_the_route() {
    let mut t = RouteTable::new();
    let master = Broker::master().acting_master(Some(false)).conn(10);
    let slave = Broker::slave().acting_master(Some(false)).conn(11);
    register(&mut t, &master, &["TestTopic"]);
    register(&mut t, &slave, &["TestTopic"]);

    let reqs = t.on_connection_closed(10);
    assert_eq!(reqs.len(), 1);
    assert_eq!((reqs[0].broker_name.as_str(), reqs[0].broker_id), (BROKER, Some(0)));
    t.unregister_batch(&reqs);
    assert_eq!(addrs_of(&route(&t, "TestTopic"), BROKER), vec![(1, SLAVE_ADDR.into())]);

    let reqs = t.on_connection_closed(11);
    t.unregister_batch(&reqs);
    assert!(t.pickup_route("TestTopic", true).is_none());
    assert!(t.on_connection_closed(11).is_empty());
}

/// What a table of three groups should hold after wipes, adds and removals: topic → group →
/// perm.
type Model = std::collections::BTreeMap<String, std::collections::BTreeMap<&'static str, i32>>;

#[derive(Debug, Clone)]
enum PermOp {
    Wipe(usize),
    Add(usize),
    Remove(Vec<usize>),
}

const GROUPS: [&str; 3] = ["broker-a", "broker-b", "broker-c"];

/// Every way a broker gets a queue in a topic marks the topic's bucket for it
/// (`RouteTable::buckets`), so the scans that read only a group's buckets find all of its
/// topics: after registrations that add topics, REGISTER_TOPIC (a new topic, and an existing
/// one gaining a group), a restore from a snapshot and a deleting registration, each group's
/// write-permission count is the topics that have it, and its removal leaves none of them.
#[test]
fn every_way_a_group_gets_a_queue_lets_its_scans_find_it() {
    let mut t = RouteTable::new();
    let b: Vec<Broker> = (0..3)
        .map(|g| {
            let name = format!("g{g}");
            Broker::master().name(&name).addr(&format!("127.0.0.{}:10911", g + 1)).conn(g + 1)
        })
        .collect();
    let names = |from: usize, to: usize| (from..to).map(|i| format!("T{i}")).collect::<Vec<_>>();
    let put = |t: &mut RouteTable, broker: &Broker, topics: &[String], delete: bool| {
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        t.register_owned(broker.request(&topics), NOW, delete).expect("registered");
    };
    put(&mut t, &b[0], &names(0, 1_000), false);
    put(&mut t, &b[1], &names(500, 1_500), false);
    put(&mut t, &b[0].clone().next_version(), &names(0, 2_000), false);
    put(&mut t, &b[2], &names(2_900, 2_901), false);
    let qd = |g: &str| QueueData {
        broker_name: g.into(),
        perm: 6,
        read_queue_nums: 8,
        write_queue_nums: 8,
        topic_sys_flag: 0,
    };
    assert!(t.register_topic("New", vec![qd("g2"), qd("g1")]));
    assert!(t.register_topic("T3", vec![qd("g2")]));
    let (mut t, _) = RouteTable::from_snapshot(&t.to_snapshot(NOW), NOW).expect("restored");
    put(&mut t, &b[2].clone().next_version(), &names(2_500, 3_000), false);
    put(&mut t, &b[1].clone().next_version(), &names(1_000, 1_500), true);
    assert!(t.register_topic("T2", vec![qd("g1")]), "after the deleting registration");
    assert!(t.register_topic("Fresh", vec![qd("g0"), qd("g2")]));
    let having =
        |t: &RouteTable, g: &str| t.topics.iter().filter(|(_, e)| e.queue(g).is_some()).count();
    // baseTopic, T0–T1999 and Fresh; baseTopic, T1000–T1499 and T2; baseTopic, New, T3,
    // T2500–T2999 and Fresh.
    assert_eq!([having(&t, "g0"), having(&t, "g1"), having(&t, "g2")], [2_002, 502, 504]);
    assert_buckets_cover(&t);
    for (i, g) in ["g0", "g1", "g2"].into_iter().enumerate() {
        assert_eq!(t.wipe_write_perm(g) as usize, having(&t, g), "{g}'s count");
        t.unregister_batch(&[b[i].unregister()]);
        assert_eq!(having(&t, g), 0, "{g} removed from every topic");
    }
    assert_eq!(t.topic_count(), 0);
    assert_eq!(t.buckets.owners(), 0, "a removed group's marks go with it");
}

proptest::proptest! {
    /// The write-permission switches and a batch's removals rewrite each list the topics share
    /// once (`RouteTable::rewrite_topics`, `operate_write_perm`): whatever lists the topics end
    /// up sharing, every topic comes out as a model applying each change topic by topic says,
    /// and the counts are the topics that have the group.
    #[test]
    fn rewriting_shared_lists_gives_every_topic_its_own_answer(
        cells in proptest::collection::vec(proptest::collection::vec(0usize..4, 3), 1..40),
        ops in proptest::collection::vec(
            proptest::prop_oneof![
                (0usize..3).prop_map(PermOp::Wipe),
                (0usize..3).prop_map(PermOp::Add),
                proptest::collection::vec(0usize..3, 1..3).prop_map(PermOp::Remove),
            ],
            1..5,
        ),
    ) {
        // cells[topic][group]: 0 = no queue, else perm 2, 4 or 6.
        let mut t = RouteTable::new();
        let mut model = Model::new();
        for (g, group) in GROUPS.iter().enumerate() {
            let broker = Broker::master()
                .name(group)
                .addr(&format!("127.0.0.{}:10911", g + 1))
                .acting_master(None)
                .conn(g as ConnId + 1);
            let mut configs = vec![TopicConfig::named("baseTopic")];
            for (i, cell) in cells.iter().enumerate() {
                if cell[g] > 0 {
                    let perm = 2 * cell[g] as i32;
                    configs.push(topic_config(&format!("T{i}"), perm));
                    model.entry(format!("T{i}")).or_default().insert(group, perm);
                }
            }
            // Two topics at least: a single-topic registration is refused before a full one.
            configs.push(topic_config(&format!("own-{group}"), 6));
            model.entry(format!("own-{group}")).or_default().insert(group, 6);
            model.entry("baseTopic".into()).or_default().insert(group, 6);
            t.register_owned(broker.request_with(configs), NOW, false).expect("registered");
        }
        for op in ops {
            match op {
                PermOp::Wipe(g) | PermOp::Add(g) => {
                    let wipe = matches!(op, PermOp::Wipe(_));
                    let expected = model.values().filter(|q| q.contains_key(GROUPS[g])).count();
                    for perm in model.values_mut().filter_map(|q| q.get_mut(GROUPS[g])) {
                        *perm = if wipe { *perm & !perm::WRITE } else { perm::READ | perm::WRITE };
                    }
                    let count =
                        if wipe { t.wipe_write_perm(GROUPS[g]) } else { t.add_write_perm(GROUPS[g]) };
                    prop_assert_eq!(count as usize, expected);
                }
                PermOp::Remove(groups) => {
                    let requests: Vec<UnregisterRequest> = groups
                        .iter()
                        .map(|&g| {
                            let broker = Broker::master()
                                .name(GROUPS[g])
                                .addr(&format!("127.0.0.{}:10911", g + 1));
                            broker.unregister()
                        })
                        .collect();
                    t.unregister_batch(&requests);
                    for queues in model.values_mut() {
                        queues.retain(|group, _| !groups.iter().any(|&g| GROUPS[g] == *group));
                    }
                    model.retain(|_, queues| !queues.is_empty());
                }
            }
            prop_assert_eq!(t.topic_count(), model.len());
            for (topic, queues) in &model {
                let route = route(&t, topic);
                let got: std::collections::BTreeMap<&str, i32> =
                    route.queue_datas.iter().map(|q| (q.broker_name.as_str(), q.perm)).collect();
                let want: std::collections::BTreeMap<&str, i32> =
                    queues.iter().map(|(g, p)| (*g, *p)).collect();
                prop_assert_eq!(got, want, "topic {}", topic);
            }
        }
    }
}
