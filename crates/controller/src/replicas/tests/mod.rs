//! Every case of Java's `ReplicasInfoManagerTest` on [`Replicas`], and the fixture the `edge`
//! cases share.

use std::collections::BTreeSet;
use std::time::Duration;

use remoting::body::{from_json, BrokerReplicasInfo, ReplicasInfo, SyncStateSet};
use remoting::headers::*;
use remoting::ResponseCode;
use tokio::time::Instant;

use super::*;
use crate::elect::{AllAlive, BrokerLiveness, LiveInfo};
use crate::liveness::{BrokerKey, Heartbeat, Heartbeats};

const CLUSTER: &str = "cluster-a";
const BROKER: &str = "broker-set-a";
const IP: [&str; 3] = ["127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.1:9002"];

/// Brokers alive by a predicate on their id, no reports.
struct Alive<F: Fn(&str, i64) -> bool>(F);

impl<F: Fn(&str, i64) -> bool> BrokerLiveness for Alive<F> {
    fn is_alive(&self, cluster: &str, _: &str, id: i64) -> bool {
        (self.0)(cluster, id)
    }
    fn live_info(&self, _: &str, _: &str, _: i64) -> Option<LiveInfo> {
        None
    }
}

fn all_but(dead: i64) -> Alive<impl Fn(&str, i64) -> bool> {
    Alive(move |_: &str, id: i64| id != dead)
}

fn only(alive: i64) -> Alive<impl Fn(&str, i64) -> bool> {
    Alive(move |_: &str, id: i64| id == alive)
}

fn none_alive() -> Alive<impl Fn(&str, i64) -> bool> {
    Alive(|_: &str, _: i64| false)
}

fn ids(v: &[i64]) -> BTreeSet<i64> {
    v.iter().copied().collect()
}

#[derive(Default)]
struct Fixture {
    state: Replicas,
    unclean: bool,
}

impl Fixture {
    fn apply<H>(&mut self, d: &Decision<H>) {
        if let Some(e) = &d.event {
            assert_eq!(self.state.apply(e), Applied::Done);
        }
    }

    fn replicas_info(&self, name: &str) -> ReplicasInfo {
        let d = self.state.sync_state_data(&[name.to_owned()], &AllAlive);
        let info: BrokerReplicasInfo = from_json(d.body.as_deref().expect("body")).expect("decode");
        info.replicas_info_table.get(name).cloned().expect("group present")
    }

    fn replica_info(&self, name: &str) -> GetReplicaInfoResponseHeader {
        let req = GetReplicaInfoRequestHeader { broker_name: Some(name.into()) };
        self.state.replica_info(&req).header.expect("header")
    }

    fn register_new_broker(&mut self, addr: &str, expect_id: i64, expect_master: Option<i64>) {
        let next = self.state.next_broker_id(&GetNextBrokerIdRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(BROKER.into()),
        });
        assert_eq!(next.code, ResponseCode::Success);
        let id = next.header.and_then(|h| h.next_broker_id).expect("next id");
        assert_eq!(id, expect_id);
        let applied = self
            .state
            .apply_broker_id(&ApplyBrokerIdRequestHeader {
                cluster_name: Some(CLUSTER.into()),
                broker_name: Some(BROKER.into()),
                applied_broker_id: Some(id),
                register_check_code: Some(format!("{addr};1700000000000")),
            })
            .expect("complete request");
        assert_eq!(applied.code, ResponseCode::Success);
        self.apply(&applied);
        let info = self.replicas_info(BROKER);
        let replica = info
            .not_in_sync_replicas
            .iter()
            .find(|r| r.broker_id == id)
            .expect("registered, not in sync");
        assert_eq!((replica.broker_name.as_str(), replica.broker_address.as_str()), (BROKER, addr));

        let registered = self
            .state
            .register_broker(
                &RegisterBrokerToControllerRequestHeader {
                    cluster_name: Some(CLUSTER.into()),
                    broker_name: Some(BROKER.into()),
                    broker_id: Some(id),
                    broker_address: Some(addr.into()),
                    invoke_time: Some(0),
                },
                &AllAlive,
            )
            .expect("complete request");
        self.apply(&registered);
        assert_eq!(registered.code, ResponseCode::Success);
        assert_eq!(registered.header.expect("header").master_broker_id, expect_master);
    }

    fn broker_elect(
        &mut self,
        id: i64,
        addr: &str,
        first: bool,
        expect_elected: bool,
        live: &dyn BrokerLiveness,
    ) {
        let before = self.replica_info(BROKER);
        let in_sync_before =
            self.replicas_info(BROKER).in_sync_replicas.iter().any(|r| r.broker_id == id);
        let req = ElectMasterRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(BROKER.into()),
            broker_id: Some(id),
            designate_elect: Some(false),
            invoke_time: Some(0),
        };
        let d = self.state.elect_master(&req, live, self.unclean).expect("complete request");
        self.apply(&d);
        let after = self.replica_info(BROKER);
        let resp = d.header.clone().expect("header");
        if first {
            assert_eq!(d.code, ResponseCode::Success);
            assert_eq!((resp.master_epoch, resp.sync_state_set_epoch), (Some(1), Some(1)));
            assert_eq!(
                (resp.master_address.as_deref(), resp.master_broker_id),
                (Some(addr), Some(id))
            );
            assert_eq!(
                (after.master_address.as_deref(), after.master_epoch, after.master_broker_id),
                (Some(addr), Some(1), Some(id))
            );
            return;
        }
        if before.master_broker_id.is_some_and(|m| live.is_alive(CLUSTER, BROKER, m)) {
            assert_eq!(d.code, ResponseCode::ControllerMasterStillExist);
            assert_eq!(resp.master_address, before.master_address);
            assert_eq!(resp.master_epoch, before.master_epoch);
            assert_eq!(resp.master_broker_id, before.master_broker_id);
            assert_eq!(after.master_broker_id, before.master_broker_id);
            return;
        }
        if in_sync_before || self.unclean {
            assert_eq!(d.code, ResponseCode::Success);
            assert_eq!(after.master_epoch, before.master_epoch.map(|e| e + 1));
            if expect_elected {
                assert_eq!(
                    (resp.master_address.as_deref(), resp.master_broker_id),
                    (Some(addr), Some(id))
                );
                assert_eq!(
                    (after.master_address.as_deref(), after.master_broker_id),
                    (Some(addr), Some(id))
                );
            }
        } else {
            assert_eq!(d.code, ResponseCode::ControllerElectMasterFailed);
        }
    }

    fn alter(&mut self, master: i64, master_epoch: i32, set: &[i64], set_epoch: i32) {
        let d = self
            .state
            .alter_sync_state_set(
                &AlterSyncStateSetRequestHeader {
                    broker_name: Some(BROKER.into()),
                    master_broker_id: Some(master),
                    master_epoch: Some(master_epoch),
                    invoke_time: Some(0),
                },
                &SyncStateSet {
                    sync_state_set: ids(set).into_iter().collect(),
                    sync_state_set_epoch: set_epoch,
                },
                &AllAlive,
            )
            .expect("complete request");
        assert_eq!(d.code, ResponseCode::Success, "{:?}", d.remark);
        self.apply(&d);
        let got = self
            .state
            .replica_info(&GetReplicaInfoRequestHeader { broker_name: Some(BROKER.into()) });
        let body: SyncStateSet = from_json(got.body.as_deref().expect("body")).expect("decode");
        assert_eq!(body.sync_state_set.0, ids(set));
        assert_eq!(body.sync_state_set_epoch, set_epoch + 1);
    }

    /// Java `mockMetaData`: three brokers, 1 elected first, the others find it alive, then the
    /// sync-state set grows to all three.
    fn mock_meta_data() -> Self {
        let mut f = Fixture::default();
        f.register_new_broker(IP[0], 1, None);
        f.register_new_broker(IP[1], 2, None);
        f.register_new_broker(IP[2], 3, None);
        f.broker_elect(1, IP[0], true, true, &AllAlive);
        f.broker_elect(2, IP[1], false, false, &AllAlive);
        f.broker_elect(3, IP[2], false, false, &AllAlive);
        f.alter(1, 1, &[1, 2, 3], 1);
        f
    }

    fn controller_elect(&self, live: &dyn BrokerLiveness) -> Decision<ElectMasterResponseHeader> {
        let req = ElectMasterRequestHeader {
            cluster_name: Some(String::new()),
            broker_name: Some(BROKER.into()),
            broker_id: Some(-1),
            designate_elect: Some(false),
            invoke_time: Some(0),
        };
        self.state.elect_master(&req, live, self.unclean).expect("complete request")
    }

    fn admin_elect(
        &self,
        id: i64,
        live: &dyn BrokerLiveness,
    ) -> Decision<ElectMasterResponseHeader> {
        let req = ElectMasterRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(BROKER.into()),
            broker_id: Some(id),
            designate_elect: Some(true),
            invoke_time: Some(0),
        };
        self.state.elect_master(&req, live, self.unclean).expect("complete request")
    }
}

fn heartbeat(
    t: &mut Heartbeats,
    id: i64,
    timeout_ms: u64,
    epoch: i32,
    max_offset: i64,
    priority: i32,
) {
    t.on_heartbeat(
        Heartbeat {
            key: BrokerKey { cluster: CLUSTER.into(), broker_name: BROKER.into(), broker_id: id },
            broker_addr: IP[usize::try_from(id - 1).expect("id")].into(),
            timeout: Duration::from_millis(timeout_ms),
            epoch,
            max_offset,
            confirm_offset: -1,
            election_priority: priority,
        },
        None,
        Instant::now(),
    );
}

const LONG: u64 = 10_000_000_000;

#[test]
fn register_broker_success() {
    let f = Fixture::mock_meta_data();
    let info = f.replicas_info(BROKER);
    assert_eq!(info.master_broker_id, Some(1));
    assert_eq!(info.master_address.as_deref(), Some(IP[0]));
    assert_eq!((info.master_epoch, info.sync_state_set_epoch), (1, 2));
    assert_eq!((info.in_sync_replicas.len(), info.not_in_sync_replicas.len()), (3, 0));
}

#[test]
fn register_with_master_exist_resp() {
    let mut f = Fixture::default();
    f.register_new_broker(IP[0], 1, None);
    f.register_new_broker(IP[1], 2, None);
    f.broker_elect(1, IP[0], true, true, &AllAlive);
    f.broker_elect(2, IP[1], false, false, &AllAlive);
    f.register_new_broker(IP[2], 3, Some(1));
    f.broker_elect(3, IP[2], false, false, &AllAlive);
    let info = f.replicas_info(BROKER);
    assert_eq!((info.master_broker_id, info.master_address.as_deref()), (Some(1), Some(IP[0])));
    assert_eq!((info.master_epoch, info.sync_state_set_epoch), (1, 1));
    assert_eq!((info.in_sync_replicas.len(), info.not_in_sync_replicas.len()), (1, 2));
}

#[test]
fn register_with_old_master_inactive() {
    let mut f = Fixture::mock_meta_data();
    // Only broker 3 alive: it becomes master.
    f.broker_elect(3, IP[2], false, true, &only(3));
    let info = f.replicas_info(BROKER);
    assert_eq!((info.master_broker_id, info.master_address.as_deref()), (Some(3), Some(IP[2])));
    assert_eq!((info.master_epoch, info.sync_state_set_epoch), (2, 3));
    assert_eq!((info.in_sync_replicas.len(), info.not_in_sync_replicas.len()), (1, 2));
}

#[tokio::test(start_paused = true)]
async fn elect_master_old_master_still_alive() {
    let f = Fixture::mock_meta_data();
    let mut t = Heartbeats::default();
    heartbeat(&mut t, 1, LONG, 1, 1, 0);
    heartbeat(&mut t, 2, LONG, 1, 2, 0);
    heartbeat(&mut t, 3, LONG, 1, 3, 0);
    let d = f.controller_elect(&t.at(Instant::now()));
    assert_eq!(d.code, ResponseCode::ControllerMasterStillExist);
    assert!(d.event.is_none());
}

/// Broker 1's heartbeat has already expired (Java sends a negative timeout; here it is 0 and
/// time moves on by 1 ms).
async fn expire_broker_one(t: &mut Heartbeats, reports: [(i32, i64, i32); 3]) {
    heartbeat(t, 1, 0, reports[0].0, reports[0].1, reports[0].2);
    heartbeat(t, 2, LONG, reports[1].0, reports[1].1, reports[1].2);
    heartbeat(t, 3, LONG, reports[2].0, reports[2].1, reports[2].2);
    tokio::time::advance(Duration::from_millis(1)).await;
}

#[tokio::test(start_paused = true)]
async fn elect_master_prefers_higher_epoch() {
    let f = Fixture::mock_meta_data();
    let mut t = Heartbeats::default();
    expire_broker_one(&mut t, [(1, 3, 0), (1, 2, 0), (0, 3, 0)]).await;
    let h = f.controller_elect(&t.at(Instant::now())).header.expect("header");
    assert_eq!(
        (h.master_address.as_deref(), h.master_broker_id, h.master_epoch),
        (Some(IP[1]), Some(2), Some(2))
    );
}

#[tokio::test(start_paused = true)]
async fn elect_master_prefers_higher_offset_when_epochs_are_equal() {
    let f = Fixture::mock_meta_data();
    let mut t = Heartbeats::default();
    expire_broker_one(&mut t, [(1, 3, 0), (1, 2, 0), (1, 3, 0)]).await;
    let h = f.controller_elect(&t.at(Instant::now())).header.expect("header");
    assert_eq!(
        (h.master_address.as_deref(), h.master_broker_id, h.master_epoch),
        (Some(IP[2]), Some(3), Some(2))
    );
}

#[tokio::test(start_paused = true)]
async fn elect_master_prefers_higher_priority_when_epoch_and_offset_are_equal() {
    let f = Fixture::mock_meta_data();
    let mut t = Heartbeats::default();
    expire_broker_one(&mut t, [(1, 3, 3), (1, 3, 2), (1, 3, 1)]).await;
    let h = f.controller_elect(&t.at(Instant::now())).header.expect("header");
    assert_eq!(
        (h.master_address.as_deref(), h.master_broker_id, h.master_epoch),
        (Some(IP[2]), Some(3), Some(2))
    );
}

#[test]
fn elect_master_by_controller_then_by_admin() {
    let mut f = Fixture::mock_meta_data();
    let d = f.controller_elect(&all_but(1));
    let h = d.header.clone().expect("header");
    assert_eq!(h.master_epoch, Some(2));
    assert_ne!(h.master_broker_id, Some(1));
    assert_ne!(h.master_address.as_deref(), Some(IP[0]));
    f.apply(&d);
    let master = h.master_broker_id.expect("master");
    f.alter(master, 2, &[1, 2, 3], h.sync_state_set_epoch.expect("epoch"));

    // An admin asks for broker 1, which is not alive.
    assert_eq!(f.admin_elect(1, &all_but(1)).code, ResponseCode::ControllerElectMasterFailed);
    // An admin asks for the current master, which is alive.
    assert_eq!(f.admin_elect(master, &AllAlive).code, ResponseCode::ControllerMasterStillExist);
    // An admin moves the master to broker 1.
    let d = f.admin_elect(1, &all_but(master));
    assert_eq!(d.code, ResponseCode::Success);
    let h = d.header.expect("header");
    assert_eq!(
        (h.master_broker_id, h.master_address.as_deref(), h.master_epoch),
        (Some(1), Some(IP[0]), Some(3))
    );
}

#[test]
fn all_replicas_shut_down_and_restart() {
    let mut f = Fixture::mock_meta_data();
    f.alter(1, 1, &[1], 2);
    // The master is gone and the set holds only it: the election fails, and says so in the log.
    let d = f.controller_elect(&all_but(1));
    assert_eq!(d.code, ResponseCode::ControllerMasterNotAvailable);
    assert!(matches!(d.event, Some(Event::ElectMaster { new_master_elected: false, .. })));
    f.apply(&d);
    let info = f.replica_info(BROKER);
    assert_eq!((info.master_address, info.master_epoch), (None, Some(2)));
}

#[test]
fn clean_broker_data() {
    let f = Fixture::mock_meta_data();
    let req = |cluster: Option<&str>, name: &str, ids: Option<&str>, living: bool| {
        CleanControllerBrokerDataRequestHeader {
            cluster_name: cluster.map(str::to_owned),
            broker_name: Some(name.into()),
            broker_controller_ids_to_clean: ids.map(str::to_owned),
            is_clean_living_broker: Some(living),
            invoke_time: Some(0),
        }
    };
    let code = ResponseCode::ControllerInvalidCleanBrokerMetadata;
    let d = f
        .state
        .clean_broker_data(&req(Some(CLUSTER), BROKER, Some("1"), false), &AllAlive)
        .expect("ok");
    assert_eq!(d.code, code);
    let d =
        f.state.clean_broker_data(&req(Some(CLUSTER), BROKER, None, false), &AllAlive).expect("ok");
    assert_eq!(
        (d.code, d.remark.as_deref()),
        (code, Some("Broker broker-set-a is still alive, clean up failure"))
    );
    let d = f
        .state
        .clean_broker_data(&req(Some(CLUSTER), BROKER, Some("1"), false), &none_alive())
        .expect("ok");
    assert_eq!(d.code, ResponseCode::Success);
    let d = f
        .state
        .clean_broker_data(&req(Some(CLUSTER), BROKER, Some("1;2;3"), false), &none_alive())
        .expect("ok");
    assert_eq!(d.code, ResponseCode::Success);
    let d = f
        .state
        .clean_broker_data(&req(Some(CLUSTER), "broker12", Some("1;2;3"), true), &none_alive())
        .expect("ok");
    assert_eq!(
        (d.code, d.remark.as_deref()),
        (code, Some("Broker broker12 is not existed,clean broker data failure."))
    );
    let cluster_set = Alive(|cluster: &str, _: i64| !cluster.is_empty());
    let d = f
        .state
        .clean_broker_data(&req(None, "broker12", Some("1;2;3"), true), &cluster_set)
        .expect("ok");
    assert_eq!(d.code, code);
    let d = f
        .state
        .clean_broker_data(&req(None, BROKER, Some("1;2;3"), true), &none_alive())
        .expect("ok");
    assert_eq!(d.code, ResponseCode::Success);
    let d = f
        .state
        .clean_broker_data(&req(Some(CLUSTER), BROKER, Some("1;x"), false), &none_alive())
        .expect("ok");
    assert_eq!(
        d.remark.as_deref(),
        Some("Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \"x\"")
    );
}

/// Java `testSerialize`: the snapshot form restores the same tables.
#[test]
fn the_state_round_trips_through_its_snapshot_form() {
    let f = Fixture::mock_meta_data();
    let bytes = serde_json::to_vec(&f.state).expect("encode");
    let back: Replicas = serde_json::from_slice(&bytes).expect("decode");
    assert_eq!(back, f.state);
}

mod edge;
