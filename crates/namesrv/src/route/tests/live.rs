//! Liveness: expiry boundary, per-broker timeouts, heartbeats, QUERY_DATA_VERSION, and the
//! fenced unregistrations that close Java's races (§5.8, §11 #13, #24, #36).

use super::*;

const DEFAULT_TIMEOUT: u64 = 120_000;

#[test]
fn a_broker_is_alive_at_exactly_its_timeout_and_expired_one_ms_later() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["T"]);
    assert!(t.expire_inactive(NOW + DEFAULT_TIMEOUT).is_empty());
    let expired = t.expire_inactive(NOW + DEFAULT_TIMEOUT + 1);
    assert_eq!(expired.len(), 1);
    let req = &expired[0];
    assert_eq!(
        (
            req.cluster_name.as_str(),
            req.broker_addr.as_str(),
            req.broker_name.as_str(),
            req.broker_id
        ),
        (CLUSTER, MASTER_ADDR, BROKER, Some(0))
    );
    let fence = req.fence.expect("expiry is fenced");
    assert_eq!(fence.conn(), Broker::master().conn);
    assert!(!fence.is_orphan());
    assert_eq!(t.live_count(), 1, "the scan only decides");

    t.unregister_batch(&expired);
    assert_eq!(t.live_count(), 0);
    assert!(t.pickup_route("T", true).is_none());
}

#[test]
fn each_broker_has_its_own_timeout() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().timeout(30_000), &["T"]);
    register(&mut t, &Broker::slave(), &["T"]);
    assert!(t.expire_inactive(NOW + 30_000).is_empty());
    let expired = t.expire_inactive(NOW + 30_001);
    let addrs: Vec<_> = expired.iter().map(|r| r.broker_addr.as_str()).collect();
    assert_eq!(addrs, [MASTER_ADDR]);
    assert_eq!(t.last_heartbeat(CLUSTER, MASTER_ADDR), Some((NOW, 30_000)));
    assert_eq!(t.last_heartbeat(CLUSTER, SLAVE_ADDR), Some((NOW, 120_000)));
}

#[test]
fn heartbeats_refresh_liveness_and_never_move_it_back() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master(), &["T"]);
    assert!(t.heartbeat(CLUSTER, MASTER_ADDR, NOW + 100_000));
    assert!(t.heartbeat(CLUSTER, MASTER_ADDR, NOW + 5));
    assert_eq!(t.last_heartbeat(CLUSTER, MASTER_ADDR), Some((NOW + 100_000, 120_000)));
    assert!(t.expire_inactive(NOW + DEFAULT_TIMEOUT + 1).is_empty());
    assert_eq!(t.expire_inactive(NOW + 100_000 + DEFAULT_TIMEOUT + 1).len(), 1);
    assert!(!t.heartbeat(CLUSTER, "1.2.3.4:5", NOW));
    assert!(!t.heartbeat("OtherCluster", MASTER_ADDR, NOW), "liveness is per (cluster, address)");
}

#[test]
fn query_data_version_compares_every_field_and_refreshes() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    assert_eq!(t.query_data_version(CLUSTER, MASTER_ADDR, Some(m.dv), NOW), (true, None));
    register(&mut t, &m, &["T"]);
    assert_eq!(
        t.query_data_version(CLUSTER, MASTER_ADDR, Some(m.dv), NOW + 50_000),
        (false, Some(m.dv))
    );
    assert_eq!(t.last_heartbeat(CLUSTER, MASTER_ADDR), Some((NOW + 50_000, 120_000)));
    for changed in [
        DataVersion { counter: m.dv.counter + 1, ..m.dv },
        DataVersion { timestamp: m.dv.timestamp + 1, ..m.dv },
        DataVersion { state_version: m.dv.state_version + 1, ..m.dv },
    ] {
        assert_eq!(
            t.query_data_version(CLUSTER, MASTER_ADDR, Some(changed), NOW),
            (true, Some(m.dv))
        );
    }
    assert_eq!(
        t.query_data_version(CLUSTER, MASTER_ADDR, None, NOW),
        (true, Some(m.dv)),
        "no body: changed"
    );
}

#[test]
fn expiry_decided_before_a_reregistration_does_not_remove_it() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    register(&mut t, &m, &["T"]);
    let late = NOW + DEFAULT_TIMEOUT + 1;
    let expired = t.expire_inactive(late);
    assert_eq!(expired.len(), 1);
    t.register_owned(m.request(&["T"]), late + 1, false).unwrap();
    t.unregister_batch(&expired);
    assert!(t.pickup_route("T", true).is_some());
    assert_eq!(t.last_heartbeat(CLUSTER, MASTER_ADDR), Some((late + 1, 120_000)));
}

#[test]
fn closing_an_old_connection_does_not_remove_a_registration_on_a_new_one() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().conn(1), &["T"]);
    let closed = t.on_connection_closed(1);
    assert_eq!(closed.len(), 1);
    register(&mut t, &Broker::master().conn(2), &["T"]);
    assert!(t.on_connection_closed(1).is_empty(), "the new registration is not on connection 1");
    t.unregister_batch(&closed);
    assert!(t.pickup_route("T", true).is_some());
    assert_eq!(t.live_count(), 1);

    let closed = t.on_connection_closed(2);
    t.unregister_batch(&closed);
    assert!(t.pickup_route("T", true).is_none());
}

#[test]
fn an_explicit_unregister_is_not_fenced() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    register(&mut t, &m, &["T"]);
    let header = m.unregister();
    register(&mut t, &m, &["T"]);
    t.unregister_batch(&[header]);
    assert!(t.pickup_route("T", true).is_none());
}

#[test]
fn a_fenced_request_whose_entry_is_gone_does_nothing() {
    let mut t = RouteTable::new();
    let m = Broker::master();
    register(&mut t, &m, &["T"]);
    let expired = t.expire_inactive(NOW + DEFAULT_TIMEOUT + 1);
    t.unregister_batch(&[m.unregister()]);
    register(&mut t, &m.clone().conn(7), &["T"]);
    t.unregister_batch(&expired);
    assert!(t.pickup_route("T", true).is_some());
}

#[test]
fn an_orphan_live_entry_is_removed_when_it_expires() {
    let mut t = RouteTable::new();
    let replacement = "127.0.0.1:50911";
    register(&mut t, &Broker::master(), &["T"]);
    t.register_owned(
        Broker::master().addr(replacement).conn(9).request(&["T"]),
        NOW + 60_000,
        false,
    )
    .unwrap();
    assert_eq!(t.live_count(), 2);

    let expired = t.expire_inactive(NOW + DEFAULT_TIMEOUT + 1);
    assert_eq!(expired.len(), 1);
    let req = &expired[0];
    assert_eq!(
        (req.broker_addr.as_str(), req.broker_name.as_str(), req.broker_id),
        (MASTER_ADDR, "", None)
    );
    assert!(req.fence.is_some_and(|f| f.is_orphan()));
    t.unregister_batch(&expired);
    assert_eq!(t.live_count(), 1);
    assert_eq!(t.last_heartbeat(CLUSTER, MASTER_ADDR), None);
    assert_eq!(addrs_of(&route(&t, "T"), BROKER), vec![(0, replacement.into())]);
}

#[test]
fn an_orphan_connection_close_removes_only_the_live_entry() {
    let mut t = RouteTable::new();
    register(&mut t, &Broker::master().conn(3), &["T"]);
    register(&mut t, &Broker::master().addr("127.0.0.1:50911").conn(4), &["T"]);
    let closed = t.on_connection_closed(3);
    assert!(closed.iter().all(|r| r.fence.is_some_and(|f| f.is_orphan())));
    t.unregister_batch(&closed);
    assert_eq!((t.live_count(), t.group_count()), (1, 1));
    assert!(t.pickup_route("T", true).is_some());
}
