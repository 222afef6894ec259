//! The unchanged re-registration shortcut gives exactly what the full algorithm would.

use super::*;
use crate::route::UnchangedRegistration;

const DIGEST: u64 = 0xfeed;

/// Registers fully with `DIGEST` as the request digest.
fn register_stamped(table: &mut RouteTable, broker: &Broker, topics: &[&str]) -> RegisterOutcome {
    let mut req = broker.request(topics);
    req.request_digest = Some(DIGEST);
    table.register_broker(req, NOW, false).expect("registration accepted")
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

#[test]
fn another_brokers_change_of_the_tables_disables_the_shortcut() {
    let mut table = RouteTable::new();
    let master = Broker::master();
    register_stamped(&mut table, &master, &["T1"]);
    register(&mut table, &Broker::master().name("broker-b").addr("127.0.0.1:50911"), &["T9"]);
    assert!(table.refresh_unchanged(&key(&master, DIGEST), NOW).is_none());
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
    table.register_broker(req, NOW, false).expect("registered");
    assert_eq!(perm_of(&route(&table, "T1"), &master.name), 6);
}
