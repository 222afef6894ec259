//! The unchanged re-registration shortcut gives exactly what the full algorithm would.

use remoting::body::TopicConfig;

use super::*;
use std::sync::Arc;

use crate::route::{Routes, UnchangedRegistration};

const DIGEST: u64 = 0xfeed;

/// Registers fully with `DIGEST` as the request digest.
fn register_stamped(table: &mut RouteTable, broker: &Broker, topics: &[&str]) -> RegisterOutcome {
    let mut req = broker.request(topics);
    req.request_digest = Some(DIGEST);
    table.register_owned(req, NOW, false).expect("registration accepted")
}

fn key(broker: &Broker, digest: u64) -> UnchangedRegistration<'_> {
    UnchangedRegistration {
        cluster: &broker.cluster,
        broker_addr: &broker.addr,
        broker_name: &broker.name,
        broker_id: broker.id,
        request_digest: digest,
        conn: broker.conn,
        data_version: None,
    }
}

#[test]
fn identical_re_registration_only_refreshes_liveness() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1", "T2"]);
    let topics_before = table.topics_gen;

    let later = NOW + 60_000;
    let moved = master.clone().conn(7);
    let outcome = table.refresh_unchanged(&key(&moved, DIGEST), later).expect("shortcut taken");
    assert_eq!(outcome, RegisterOutcome::default(), "a master learns no master address");
    assert_eq!(table.last_heartbeat(&master.cluster, &master.addr).map(|(t, _)| t), Some(later));
    assert_eq!(table.topics_gen, topics_before, "no topic touched");

    // The refreshed registration is fenced by its new connection: closing the old one is a no-op.
    assert!(table.on_connection_closed(master.conn).is_empty());
    assert_eq!(table.on_connection_closed(7).len(), 1);
}

#[test]
fn a_different_digest_or_no_stamp_takes_the_full_path() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none(), "never registered");
    register(&mut table, &master, &["T1"]);
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none(), "no digest recorded");
    register_stamped(&mut table, &master, &["T1"]);
    assert!(table.refresh_unchanged(&key(&master, DIGEST + 1), NOW).is_none(), "other request");
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_some());
}

#[test]
fn a_deleted_topic_disables_the_shortcut_so_the_topic_comes_back_like_java() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1", "T2"]);
    table.delete_topic("T1", None);
    assert!(table.pickup_route("T1", false).is_none());
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none(), "tables changed");
    register_stamped(&mut table, &master, &["T1", "T2"]);
    assert!(table.pickup_route("T1", false).is_some(), "§11 #32: the topic reappears");
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_some(), "stable again");
}

#[test]
fn a_wiped_write_perm_stays_wiped_through_identical_re_registrations() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1"]);
    assert_eq!(table.wipe_write_perm(&master.name), 2, "baseTopic and T1");
    if table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none() {
        register_stamped(&mut table, &master, &["T1"]);
    }
    assert_eq!(
        perm_of(&route(&table, "T1"), &master.name),
        4,
        "unchanged DataVersion keeps the wipe"
    );
}

#[test]
fn a_slave_learns_its_master_on_the_shortcut_too() {
    let mut table = RouteTable::new();
    let (master, slave) = (Broker::master(), Broker::slave());
    register(&mut table, &master, &["T1"]);
    register_stamped(&mut table, &slave, &["T1"]);
    let outcome = table.refresh_unchanged(&key(&slave, DIGEST), NOW).expect("shortcut taken");
    assert_eq!(outcome.master_addr.as_deref(), Some(MASTER_ADDR));
    assert_eq!(outcome.ha_server_addr.as_deref(), Some(MASTER_HA));
}

/// Another group's changes leave this group's shortcut alone (#25: with a table-wide stamp,
/// any broker's change made every other broker decode its next registration in full), even on
/// a topic both groups serve.
#[test]
fn another_groups_change_keeps_the_shortcut() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1"]);
    let other = Broker::master().name("broker-b").addr("127.0.0.1:50911");
    register(&mut table, &other, &["T1", "T9"]);
    table.wipe_write_perm(&other.name);
    table.delete_topic("T9", None);
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_some());
}

/// A change of this group's queues by anyone else (an admin's REGISTER_TOPIC here) does
/// disable it, and so does a change of the group itself (a slave joining).
#[test]
fn a_change_of_this_groups_queues_or_members_disables_the_shortcut() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1"]);
    let queue = remoting::body::QueueData {
        broker_name: master.name.clone(),
        perm: 2,
        read_queue_nums: 1,
        topic_sys_flag: 0,
        write_queue_nums: 1,
    };
    assert!(table.register_topic("T1", vec![queue]));
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none(), "queues changed");
    register_stamped(&mut table, &master, &["T1"]);
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_some());
    register(&mut table, &Broker::slave(), &["T1"]);
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none(), "members changed");
}

/// A base of one entry per topic (the test's stand-in for the digests of the body's entries).
fn base_of(req: &RegisterBroker) -> crate::route::DeltaBase {
    let mut entries: Vec<u64> =
        req.topic_config.topic_config_table.values().map(base_of_one).collect();
    entries.sort_unstable();
    crate::route::DeltaBase {
        rest_digest: 1,
        entries: entries.into(),
        shapes: [].into(),
        runs: [].into(),
    }
}

/// A registration that changed one topic of three, with a new DataVersion, is applied as that
/// topic alone, and leaves what the whole body would; a second difference follows from the
/// first; another group's change does not stop it, a change of this group's queues does.
#[test]
fn a_changed_registration_is_applied_as_its_difference() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    let mut req = master.request(&["T1", "T2", "T3"]);
    (req.delta_base, req.request_digest) = (Some(base_of(&req)), Some(DIGEST));
    table.register_owned(req, NOW, false).expect("registered");
    let mut prev = table.delta_base(CLUSTER, MASTER_ADDR).expect("a base is kept");

    for round in 0..2 {
        let next = master.clone().next_version();
        let master = if round == 0 { next } else { next.next_version() };
        let mut configs = vec![TopicConfig::named("baseTopic")];
        configs.extend(["T1", "T2"].iter().map(|t| topic_config(t, 6)));
        configs.push(topic_config("T3", if round == 0 { 4 } else { 2 }));
        let mut req = master.request_with(configs);
        (req.delta_base, req.request_digest) = (Some(base_of(&req)), Some(DIGEST + 1));
        let mut full = table.clone();
        full.register_owned(req.clone(), NOW, false).expect("registered");
        std::sync::Arc::make_mut(&mut req.topic_config.topic_config_table)
            .retain(|_, tc| !prev.has(base_of_one(tc)));
        assert_eq!(req.topic_config.topic_config_table.len(), 1, "T3 alone");
        table.register_delta(req, &prev, NOW).expect("applied as a difference").expect("ok");
        assert_eq!(perm_of(&route(&table, "T3"), BROKER), perm_of(&route(&full, "T3"), BROKER));
        assert_eq!(route(&table, "T1"), route(&full, "T1"));
        prev = table.delta_base(CLUSTER, MASTER_ADDR).expect("the new base");
    }
    assert_eq!(perm_of(&route(&table, "T3"), BROKER), 2);

    let other = Broker::master().name("broker-b").addr("127.0.0.1:50911");
    register(&mut table, &other, &["T1"]);
    let again = master.clone().next_version().next_version().next_version();
    let mut req = again.request(&["T1"]);
    (req.delta_base, req.request_digest) = (Some(base_of(&req)), Some(DIGEST + 2));
    assert!(table.clone().register_delta(req.clone(), &prev, NOW).is_some(), "other group");
    table.wipe_write_perm(BROKER);
    assert!(table.register_delta(req, &prev, NOW).is_none(), "this group's queues changed");
}

fn base_of_one(tc: &TopicConfig) -> u64 {
    let name = tc.topic_name.as_deref().unwrap_or_default();
    name.bytes().fold(tc.perm as u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

/// The key of a re-registration whose digest left its `DataVersion` out.
fn key_with_version(broker: &Broker) -> UnchangedRegistration<'_> {
    UnchangedRegistration { data_version: Some(broker.dv), ..key(broker, DIGEST) }
}

#[test]
fn a_new_data_version_alone_is_stored_when_every_topic_was_put() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1", "T2"]);
    let (topics, brokers) = (table.topics_gen, table.broker_gen);

    let bumped = master.clone().next_version();
    assert!(table.refresh_unchanged(&key_with_version(&bumped), NOW + 1).is_some());
    assert_eq!(
        table.query_data_version(&master.cluster, &master.addr, Some(bumped.dv), NOW + 2),
        (false, Some(bumped.dv)),
        "the live entry holds the new version"
    );
    assert_eq!((table.topics_gen, table.broker_gen), (topics, brokers), "no topic touched");
}

#[test]
fn a_new_data_version_takes_the_full_path_after_a_registration_that_skipped_topics() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1"]);
    table.wipe_write_perm(&master.name);
    // Same DataVersion: Java leaves existing queues alone, so the wiped perm stays...
    register_stamped(&mut table, &master, &["T1"]);
    assert_eq!(perm_of(&route(&table, "T1"), &master.name), 4);
    // ...and a new one would re-put them: the shortcut must not swallow that.
    let bumped = master.clone().next_version();
    assert!(table.refresh_unchanged(&key_with_version(&bumped), NOW).is_none());
    assert!(table.refresh_unchanged(&key_with_version(&master), NOW).is_some(), "same version");
    let mut req = bumped.request(&["T1"]);
    req.request_digest = Some(DIGEST);
    table.register_owned(req, NOW, false).expect("registered");
    assert_eq!(perm_of(&route(&table, "T1"), &master.name), 6);
}

/// Whatever happens between two registrations, a re-registration that takes the shortcut
/// leaves the tables exactly as Java's full algorithm would (#25's per-group stamp): random
/// sequences of registrations (masters and slaves of two groups sharing topics, topic sets and
/// perms that change, DataVersions that move or not), admin changes (REGISTER_TOPIC, write
/// permissions, topic deletion) and unregistrations, every registration tried both ways.
mod equivalence {
    use proptest::prelude::*;

    use remoting::body::TopicConfig;

    use super::super::*;
    use crate::route::{DeltaBase, UnchangedRegistration};

    #[derive(Debug, Clone)]
    enum Op {
        /// Broker `b` (0..4: broker-a master/slave, broker-b master/slave) registers topic set
        /// `set` (0..3) with perm `perm`, its DataVersion bumped or not, digested whole or
        /// around the version.
        Register {
            b: usize,
            set: usize,
            perm: i32,
            bump: bool,
            around: bool,
        },
        Wipe(usize),
        Add(usize),
        Delete(usize),
        AdminTopic {
            group: usize,
            topic: usize,
            perm: i32,
        },
        Unregister(usize),
    }

    const TOPICS: [&str; 4] = ["T0", "T1", "T2", "T3"];
    const SETS: [&[&str]; 3] = [&["T0", "T1"], &["T1", "T2"], &["T0", "T1", "T3"]];

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..4usize, 0..3usize, prop::sample::select(vec![2, 4, 6]), any::<bool>(), any::<bool>())
                .prop_map(|(b, set, perm, bump, around)| Op::Register { b, set, perm, bump, around }),
            1 => (0..2usize).prop_map(Op::Wipe),
            1 => (0..2usize).prop_map(Op::Add),
            1 => (0..4usize).prop_map(Op::Delete),
            1 => (0..2usize, 0..4usize, prop::sample::select(vec![2, 6]))
                .prop_map(|(group, topic, perm)| Op::AdminTopic { group, topic, perm }),
            1 => (0..4usize).prop_map(Op::Unregister),
        ]
    }

    fn broker(b: usize, versions: &[i64; 4]) -> Broker {
        let base = if b < 2 { Broker::master() } else { Broker::master().name("broker-b") };
        let mut broker = if b.is_multiple_of(2) {
            base.addr(&format!("127.0.0.1:{}", 10911 + b))
        } else {
            base.id(1).addr(&format!("127.0.0.1:{}", 10911 + b))
        };
        broker.conn = b as u64 + 1;
        broker.dv.counter = versions[b];
        broker
    }

    /// Everything a client or a broker can observe of the tables.
    fn observed(table: &RouteTable) -> String {
        let mut out = format!("{:?}\n", table.cluster_info());
        for topic in TOPICS.iter().chain(["baseTopic"].iter()) {
            out += &format!("{topic}: {:?}\n", table.pickup_route(topic, true));
        }
        for b in 0..4 {
            let addr = format!("127.0.0.1:{}", 10911 + b);
            out += &format!("{addr}: {:?}\n", table.query_data_version(CLUSTER, &addr, None, NOW));
        }
        out
    }

    proptest! {
        // 96 sequences of up to 40 steps (~6 s in a debug build; the default 256 took 17 s).
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn the_shortcut_equals_the_full_algorithm(ops in prop::collection::vec(op(), 1..40)) {
            let mut table = RouteTable::new();
            let mut versions = [1i64; 4];
            let (mut shortcuts, mut deltas) = (0, 0);
            for op in ops {
                match op {
                    Op::Register { b, set, perm, bump, around } => {
                        if bump {
                            versions[b] += 1;
                        }
                        let broker = broker(b, &versions);
                        let configs = SETS[set].iter().map(|t| topic_config(t, perm)).collect();
                        let mut req = broker.request_with(configs);
                        // The digest: the request without its DataVersion when `around`.
                        let digest = (b as u64) << 32 | (set as u64) << 16 | perm as u64
                            | if around { 0 } else { (versions[b] as u64) << 40 };
                        req.request_digest = Some(digest ^ u64::from(around) << 63);
                        let key = UnchangedRegistration {
                            cluster: CLUSTER,
                            broker_addr: &broker.addr,
                            broker_name: &broker.name,
                            broker_id: broker.id,
                            request_digest: digest ^ u64::from(around) << 63,
                            conn: broker.conn,
                            data_version: around.then_some(broker.dv),
                        };
                        // The delta base: the broker's fields, and each entry's content.
                        let digest_of = |tc: &TopicConfig| {
                            let name = tc.topic_name.as_deref().unwrap_or_default();
                            TOPICS.iter().position(|t| *t == name).unwrap_or(9) as u64 * 100
                                + tc.perm as u64
                        };
                        let mut entries: Vec<u64> =
                            req.topic_config.topic_config_table.values().map(digest_of).collect();
                        entries.sort_unstable();
                        req.delta_base =
                            Some(DeltaBase {
                                rest_digest: b as u64,
                                entries: entries.into(),
                                shapes: [].into(),
                                runs: [].into(),
                            });
                        let mut full = table.clone();
                        full.register_owned(req.clone(), NOW, false).ok();
                        // As the server: the shortcut, else the difference, else the full body;
                        // whichever is taken must leave what the full algorithm leaves.
                        let short = table.clone();
                        let mut delta = table.clone();
                        table = if short.refresh_unchanged(&key, NOW).is_some() {
                            shortcuts += 1;
                            prop_assert_eq!(observed(&short), observed(&full));
                            short
                        } else if let Some(base) = table.delta_base(CLUSTER, &broker.addr) {
                            let mut partial = req;
                            std::sync::Arc::make_mut(&mut partial.topic_config.topic_config_table).retain(|_, tc| !base.has(digest_of(tc)));
                            if delta.register_delta(partial, &base, NOW).is_some() {
                                deltas += 1;
                                prop_assert_eq!(observed(&delta), observed(&full));
                                delta
                            } else {
                                full
                            }
                        } else {
                            full
                        };
                    }
                    Op::Wipe(g) => {
                        table.wipe_write_perm(["broker-a", "broker-b"][g]);
                    }
                    Op::Add(g) => {
                        table.add_write_perm(["broker-a", "broker-b"][g]);
                    }
                    Op::Delete(t) => table.delete_topic(TOPICS[t], None),
                    Op::AdminTopic { group, topic, perm } => {
                        let queue = remoting::body::QueueData {
                            broker_name: ["broker-a", "broker-b"][group].to_owned(),
                            perm,
                            read_queue_nums: 8,
                            topic_sys_flag: 0,
                            write_queue_nums: 8,
                        };
                        table.register_topic(TOPICS[topic], vec![queue]);
                    }
                    Op::Unregister(b) => {
                        table.unregister_batch(&[broker(b, &versions).unregister()]);
                    }
                }
            }
            // (That both ways are taken at all: the two tests below.)
            let _ = (shortcuts, deltas);
        }
    }
}

/// The server's path: the refresh is applied to the live entry every snapshot shares, with no
/// copy of the table published, and still fences what was decided on the entry it refreshed.
#[test]
fn routes_refresh_in_place_and_fence_what_was_decided_before() {
    let routes = Routes::new();
    let master = Broker::master();
    routes.write(|t| register_stamped(t, &master, &["T1", "T2"]));
    let before = routes.snapshot();
    let expired_before = before.expire_inactive(u64::MAX);
    let closed_before = before.on_connection_closed(master.conn);
    assert_eq!((expired_before.len(), closed_before.len()), (1, 1));

    let later = NOW + 60_000;
    let moved = master.clone().conn(7);
    assert!(routes.refresh_unchanged(&key(&moved, DIGEST), later, false).is_some());
    let after = routes.snapshot();
    assert!(Arc::ptr_eq(&before, &after), "no copy of the table was published");
    assert_eq!(after.last_heartbeat(&master.cluster, &master.addr).map(|(t, _)| t), Some(later));
    assert_eq!(after.on_connection_closed(7).len(), 1, "the entry moved to the new connection");
    drop((before, after));

    // An expiry or a close decided on the refreshed entry's old generation removes nothing.
    let outcome = routes.write(|t| t.apply_unregister_batch(&expired_before));
    assert!(outcome.live_removed.is_empty(), "expiry decided before the refresh");
    let outcome = routes.write(|t| t.apply_unregister_batch(&closed_before));
    assert!(outcome.live_removed.is_empty(), "close of the old connection");
    assert!(routes.snapshot().contains_topic("T1"));
}

/// An I/O thread never waits for a write under way (a big registration holds the writer lock
/// for as long as it takes): the refresh says no, and the registration goes to the lane.
#[test]
fn an_io_thread_does_not_wait_for_a_write_under_way() {
    let routes = Arc::new(Routes::new());
    let master = Broker::master();
    routes.write(|t| register_stamped(t, &master, &["T1"]));
    let (tx, rx) = std::sync::mpsc::channel();
    let (shared, broker) = (Arc::clone(&routes), master.clone());
    std::thread::spawn(move || {
        let during = shared.write(|_| shared.refresh_unchanged(&key(&broker, DIGEST), NOW, false));
        let after = shared.refresh_unchanged(&key(&broker, DIGEST), NOW, false);
        tx.send((during.is_some(), after.is_some())).ok();
    });
    let answered = rx.recv_timeout(std::time::Duration::from_secs(10));
    assert_eq!(answered, Ok((false, true)), "refused during the write, taken after it");
}
