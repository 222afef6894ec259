//! Cases beyond Java's `ReplicasInfoManagerTest`: the state-machine cases of
//! `DLedgerControllerTest` (unclean elections, all replicas restarting), cleaning ids from one
//! table only, taken ids, every alter rejection code, fenced events, election answers.

use remoting::body::{from_json, ElectMasterResponseBody, SyncStateSet};
use remoting::headers::*;
use remoting::ResponseCode;

use super::*;

/// `DLedgerControllerTest#testAllReplicasShutdownAndRestartWithUnEnableElectUnCleanMaster`
#[test]
fn without_unclean_elections_only_the_last_in_sync_broker_can_come_back_as_master() {
    let mut f = Fixture::mock_meta_data();
    f.alter(1, 1, &[1], 2);
    let d = f.controller_elect(&all_but(1));
    f.apply(&d);
    let got =
        f.state.replica_info(&GetReplicaInfoRequestHeader { broker_name: Some(BROKER.into()) });
    let set: SyncStateSet = from_json(got.body.as_deref().expect("body")).expect("decode");
    assert_eq!(set.sync_state_set.0, ids(&[1]));
    assert_eq!(got.header.clone().expect("header").master_address, None);

    // Broker 2 (not in the set) tries: nobody is elected.
    let req = ElectMasterRequestHeader {
        cluster_name: Some(CLUSTER.into()),
        broker_name: Some(BROKER.into()),
        broker_id: Some(2),
        designate_elect: Some(false),
        invoke_time: Some(0),
    };
    let d = f.state.elect_master(&req, &all_but(1), false).expect("complete request");
    let h = d.header.expect("header");
    assert_eq!((h.master_broker_id, h.master_address), (None, None));
    // Broker 1 comes back and tries: it is elected.
    let req = ElectMasterRequestHeader { broker_id: Some(1), ..req };
    let d = f.state.elect_master(&req, &AllAlive, false).expect("complete request");
    let h = d.header.expect("header");
    assert_eq!(
        (h.master_broker_id, h.master_address.as_deref(), h.master_epoch),
        (Some(1), Some(IP[0]), Some(3))
    );
}

/// `DLedgerControllerTest#testEnableElectUnCleanMaster`
#[test]
fn unclean_elections_pick_a_replica_outside_the_sync_state_set() {
    let mut f = Fixture::mock_meta_data();
    f.unclean = true;
    f.alter(1, 1, &[1], 2);
    let d = f.controller_elect(&all_but(1));
    f.apply(&d);
    let got =
        f.state.replica_info(&GetReplicaInfoRequestHeader { broker_name: Some(BROKER.into()) });
    let h = got.header.clone().expect("header");
    let set: SyncStateSet = from_json(got.body.as_deref().expect("body")).expect("decode");
    let master = h.master_broker_id.expect("a master");
    assert_ne!(master, 1);
    assert_eq!(set.sync_state_set.0, ids(&[master]));
    assert_eq!(h.master_epoch, Some(2));
}

#[test]
fn cleaning_ids_applies_to_both_tables_apart() {
    let mut f = Fixture::mock_meta_data();
    f.alter(1, 1, &[1], 2);
    // Cleaning 1 empties the sync-state set (its record goes) but not the replicas.
    let clean = Event::CleanBrokerData {
        broker_name: BROKER.into(),
        broker_id_set_to_clean: Some(ids(&[1])),
    };
    f.state.apply(&clean);
    assert!(!f.state.contains(BROKER));
    assert_eq!(f.state.replicas[BROKER].all_ids(), ids(&[2, 3]));
    // The next id keeps counting; applying it rebuilds both records from scratch (Java's way).
    let next = f.state.next_broker_id(&GetNextBrokerIdRequestHeader {
        cluster_name: Some(CLUSTER.into()),
        broker_name: Some(BROKER.into()),
    });
    assert_eq!(next.header.and_then(|h| h.next_broker_id), Some(4));
    let whole = Event::CleanBrokerData { broker_name: BROKER.into(), broker_id_set_to_clean: None };
    f.state.apply(&whole);
    assert_eq!(f.state, Replicas::default());
}

#[test]
fn applying_an_id_taken_by_another_broker_fails() {
    let f = Fixture::mock_meta_data();
    let d = f
        .state
        .apply_broker_id(&ApplyBrokerIdRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(BROKER.into()),
            applied_broker_id: Some(2),
            register_check_code: Some("127.0.0.1:9999;1".into()),
        })
        .expect("complete");
    assert_eq!(d.code, ResponseCode::ControllerBrokerIdInvalid);
    assert_eq!(d.remark.as_deref(), Some("Fail to apply brokerId: 2 in broker-set: broker-set-a"));
    let d = f
        .state
        .apply_broker_id(&ApplyBrokerIdRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some("other".into()),
            applied_broker_id: Some(2),
            register_check_code: Some("127.0.0.1:9999;1".into()),
        })
        .expect("complete");
    assert_eq!(
        d.remark.as_deref(),
        Some("Broker-set: other hasn't been registered in controller, but broker try to apply brokerId: 2")
    );
}

#[test]
fn alter_sync_state_set_rejections_carry_java_codes() {
    let f = Fixture::mock_meta_data();
    let alter =
        |master: i64, epoch: i32, set: &[i64], set_epoch: i32, live: &dyn BrokerLiveness| {
            f.state
                .alter_sync_state_set(
                    &AlterSyncStateSetRequestHeader {
                        broker_name: Some(BROKER.into()),
                        master_broker_id: Some(master),
                        master_epoch: Some(epoch),
                        invoke_time: Some(0),
                    },
                    &SyncStateSet {
                        sync_state_set: ids(set).into_iter().collect(),
                        sync_state_set_epoch: set_epoch,
                    },
                    live,
                )
                .expect("complete")
        };
    use ResponseCode as R;
    assert_eq!(
        alter(1, 1, &[1, 2, 3], 2, &AllAlive).code,
        R::ControllerAlterSyncStateSetFailed,
        "unchanged"
    );
    let d = alter(2, 1, &[1, 2], 2, &AllAlive);
    assert_eq!(
        (d.code, d.remark.as_deref()),
        (
            R::ControllerInvalidMaster,
            Some("Rejecting alter syncStateSet request because the current leader is:{1}, not {2}")
        )
    );
    assert_eq!(alter(1, 0, &[1, 2], 2, &AllAlive).code, R::ControllerFencedMasterEpoch);
    assert_eq!(alter(1, 1, &[1, 2], 1, &AllAlive).code, R::ControllerFencedSyncStateSetEpoch);
    assert_eq!(alter(1, 1, &[1, 4], 2, &AllAlive).code, R::ControllerInvalidReplicas);
    assert_eq!(alter(1, 1, &[1, 2], 2, &all_but(2)).code, R::ControllerBrokerNotAlive);
    assert_eq!(
        alter(1, 1, &[2, 3], 2, &AllAlive).code,
        R::ControllerAlterSyncStateSetFailed,
        "without the master"
    );
    let d = alter(1, 1, &[1, 2], 2, &AllAlive);
    assert_eq!(d.header.and_then(|h| h.new_sync_state_set_epoch), Some(3));
    assert_eq!(
        String::from_utf8(d.body.expect("body")).expect("utf8"),
        r#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#
    );
}

#[test]
fn a_decision_applied_on_other_epochs_is_fenced() {
    let mut f = Fixture::mock_meta_data();
    let first = f.controller_elect(&all_but(1));
    let second = f.controller_elect(&all_but(1));
    f.apply(&first);
    let before = f.state.clone();
    assert_eq!(f.state.apply(second.event.as_ref().expect("event")), Applied::Fenced);
    assert_eq!(f.state, before, "a fenced event changes nothing");
}

#[test]
fn an_election_answer_lists_the_group_members() {
    let mut f = Fixture::default();
    f.register_new_broker(IP[0], 1, None);
    f.register_new_broker(IP[1], 2, None);
    let req = ElectMasterRequestHeader {
        cluster_name: Some(CLUSTER.into()),
        broker_name: Some(BROKER.into()),
        broker_id: Some(2),
        designate_elect: Some(false),
        invoke_time: Some(0),
    };
    let d = f.state.elect_master(&req, &AllAlive, false).expect("complete");
    let body: ElectMasterResponseBody =
        from_json(d.body.as_deref().expect("body")).expect("decode");
    assert_eq!(body.sync_state_set.0, ids(&[2]));
    let group = body.broker_member_group.expect("members");
    assert_eq!(group.broker_addrs.0.len(), 2);
    assert_eq!((group.cluster.as_str(), group.broker_name.as_str()), (CLUSTER, BROKER));
}

#[test]
fn groups_whose_master_died_while_another_lives_need_an_election() {
    let f = Fixture::mock_meta_data();
    assert!(f.state.groups_needing_election(&AllAlive).is_empty());
    assert_eq!(f.state.groups_needing_election(&all_but(1)), [BROKER.to_owned()]);
    assert!(f.state.groups_needing_election(&none_alive()).is_empty(), "nobody left to elect");
}
