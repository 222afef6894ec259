//! Three controller nodes in one process: leader failover keeps every committed event, an
//! isolated leader cannot commit (never two masters for one group), nodes restarted from disk
//! come back with the same state, and the leader elects (and announces) a new master when the
//! master's heartbeats stop.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use futures::StreamExt;
use remoting::body::{from_json, SyncStateSet};
use remoting::headers::{
    ElectMasterRequestHeader, ElectMasterResponseHeader, GetMetaDataResponseHeader,
    NotifyBrokerRoleChangedRequestHeader,
};
use remoting::{RemotingCodec, RemotingCommand, RequestCode, ResponseCode};
use tokio::net::TcpListener;
use tokio_util::codec::FramedRead;

const GROUP_A: &str = "broker-a";

fn admin_elect(id: i64) -> RemotingCommand {
    request(
        RequestCode::ControllerElectMaster,
        &ElectMasterRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(GROUP_A.into()),
            broker_id: Some(id),
            designate_elect: Some(true),
            invoke_time: Some(1),
        },
    )
}

/// Registers brokers 1..=3 of group A through the leader and elects broker 1; returns them.
async fn three_brokers(g: &Group, client: &client::Client) -> Vec<Broker> {
    let mut brokers = Vec::new();
    for port in [30911, 30921, 30931] {
        brokers.push(Broker::register(g, client, GROUP_A, &format!("127.0.0.1:{port}")).await);
    }
    assert_eq!(brokers.iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2, 3]);
    brokers
}

/// Keeps `brokers` heartbeating every node, asking for `timeout_ms` of liveness each time
/// ([`NEVER_EXPIRES_MS`] unless the test wants a broker to expire once it stops).
async fn heartbeat_all(
    g: &Group,
    brokers: &[Broker],
    timeout_ms: i64,
) -> tokio_util::sync::CancellationToken {
    keep_heartbeating(
        g.addrs.clone(),
        brokers.iter().map(|b| (b.name.clone(), b.addr.clone(), b.id)).collect(),
        timeout_ms,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_failover_keeps_every_committed_event() {
    let mut g = Group::start(3).await;
    let client = client(&g.addrs);
    let leader = g.wait_leader(&[]).await;
    let brokers = three_brokers(&g, &client).await;
    let beats = heartbeat_all(&g, &brokers, NEVER_EXPIRES_MS).await;
    let elected = brokers[0].elect(&g, &client).await;
    assert_eq!(elected.code, success(), "{:?}", elected.remark);
    let altered = alter(&g, &client, GROUP_A, 1, 1, &[1, 2, 3], 1).await;
    assert_eq!(altered.code, success(), "{:?}", altered.remark);

    // A follower refuses writes and names the leader.
    let follower = (leader + 1) % 3;
    let refused = call(&client, &g.addrs[follower], admin_elect(2)).await;
    assert_eq!(refused.code, ResponseCode::ControllerNotLeader.to_i32());
    assert_eq!(refused.remark.as_deref(), Some("The controller is not in leader state"));
    assert_eq!(refused.ext(controller::dispatch::LEADER_ADDRESS), Some(g.addrs[leader].as_str()));

    g.wait_same_tables(leader, &[0, 1, 2]).await;
    g.stop(leader).await;
    let others: Vec<usize> = (0..3).filter(|&i| i != leader).collect();
    let new = g.wait_leader(&others).await;

    // Nothing committed before the failover is lost.
    let (code, info, set) = replica_info(&client, &g.addrs[new], GROUP_A).await;
    assert_eq!(code, success());
    assert_eq!((info.master_broker_id, info.master_epoch), (Some(1), Some(1)));
    let set = set.expect("sync-state set");
    assert_eq!(set.sync_state_set.0, BTreeSet::from([1, 2, 3]));
    assert_eq!(set.sync_state_set_epoch, 2);

    // The new leader commits.
    let moved = call(&client, &g.addrs[new], admin_elect(2)).await;
    assert_eq!(moved.code, success(), "{:?}", moved.remark);
    let h: ElectMasterResponseHeader = moved.decode_header();
    assert_eq!((h.master_broker_id, h.master_epoch), (Some(2), Some(2)));

    // The old leader comes back from its store and catches up.
    g.restart(leader).await;
    let tables = g.wait_same_tables(new, &[0, 1, 2]).await;
    assert_eq!(tables.sync_states[GROUP_A].master_broker_id, Some(2));
    beats.cancel();
    g.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_leader_cannot_commit_and_stops_leading() {
    let mut g = Group::start(3).await;
    let client = client(&g.addrs);
    let brokers = three_brokers(&g, &client).await;
    let beats = heartbeat_all(&g, &brokers, NEVER_EXPIRES_MS).await;
    assert_eq!(brokers[0].elect(&g, &client).await.code, success());
    assert_eq!(alter(&g, &client, GROUP_A, 1, 1, &[1, 2, 3], 1).await.code, success());
    let old = g.wait_leader(&[]).await;
    g.wait_same_tables(old, &[0, 1, 2]).await;

    let others: Vec<usize> = (0..3).filter(|&i| i != old).collect();
    let other_addrs: Vec<&str> = others.iter().map(|&i| g.addrs[i].as_str()).collect();
    g.cuts.isolate(&g.addrs[old], &other_addrs);
    let new = g.wait_leader(&others).await;

    // The old leader, cut off, neither commits nor claims to lead.
    let refused = call(&client, &g.addrs[old], admin_elect(2)).await;
    assert_ne!(refused.code, success(), "an isolated node committed an election");
    let meta: GetMetaDataResponseHeader = call(
        &client,
        &g.addrs[old],
        RemotingCommand::request(RequestCode::ControllerGetMetadataInfo),
    )
    .await
    .decode_header();
    assert_eq!(meta.is_leader, Some(false));
    // The majority elects another master meanwhile.
    let moved = call(&client, &g.addrs[new], admin_elect(3)).await;
    assert_eq!(moved.code, success(), "{:?}", moved.remark);
    let h: ElectMasterResponseHeader = moved.decode_header();
    assert_eq!((h.master_broker_id, h.master_epoch), (Some(3), Some(2)));
    let stale = g.node(old).tables();
    assert_eq!(
        (stale.sync_states[GROUP_A].master_broker_id, stale.sync_states[GROUP_A].master_epoch),
        (Some(1), 1),
        "the isolated node applied nothing after the cut"
    );

    // Healed: one history everywhere, one master per epoch.
    g.cuts.heal();
    let tables = g.wait_same_tables(new, &[0, 1, 2]).await;
    let sync = &tables.sync_states[GROUP_A];
    assert_eq!((sync.master_broker_id, sync.master_epoch), (Some(3), 2));
    beats.cancel();
    g.stop_all().await;
}

fn small_snapshots(c: &mut controller::Config) {
    c.raft_snapshot_logs = 3;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_restarted_from_disk_comes_back_with_the_same_state() {
    let mut g = Group::start_with(3, small_snapshots).await;
    let client = client(&g.addrs);
    let mut brokers = three_brokers(&g, &client).await;
    for port in [40911, 40921] {
        brokers.push(Broker::register(&g, &client, "broker-b", &format!("127.0.0.1:{port}")).await);
    }
    let beats = heartbeat_all(&g, &brokers, NEVER_EXPIRES_MS).await;
    assert_eq!(brokers[0].elect(&g, &client).await.code, success());
    assert_eq!(brokers[4].elect(&g, &client).await.code, success());
    assert_eq!(alter(&g, &client, GROUP_A, 1, 1, &[1, 3], 1).await.code, success());
    let leader = g.wait_leader(&[]).await;
    let before = g.wait_same_tables(leader, &[0, 1, 2]).await;
    assert_eq!(before.replicas.len(), 2);
    let snapshotted = eventually("a snapshot on the leader", || async {
        g.node(leader).raft().metrics().borrow().snapshot.is_some().then_some(())
    })
    .await;
    let _: () = snapshotted;

    // The brokers keep heartbeating until every node is down: a broker connection that closes
    // while a leader runs is a broker lost, and the leader would elect anew.
    g.stop_all().await;
    beats.cancel();
    for i in 0..3 {
        g.restart(i).await;
    }
    let leader = g.wait_leader(&[]).await;
    let after = g.wait_same_tables(leader, &[0, 1, 2]).await;
    assert_eq!(after, before);
    for i in 0..3 {
        assert_eq!(g.node(i).tables(), before, "node {i}");
    }
    g.stop_all().await;
}

/// A fake broker port that records every NOTIFY_BROKER_ROLE_CHANGED it receives.
async fn notification_sink() -> (String, tokio::sync::mpsc::UnboundedReceiver<RemotingCommand>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut frames = FramedRead::new(tcp, RemotingCodec::new());
                while let Some(Ok(cmd)) = frames.next().await {
                    if cmd.code == RequestCode::NotifyBrokerRoleChanged.to_i32() {
                        let _ = tx.send(cmd);
                    }
                }
            });
        }
    });
    (addr, rx)
}

fn quick_expiry(c: &mut controller::Config) {
    c.scan_not_active_broker_interval = 200;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_elects_and_announces_a_new_master_when_the_master_stops_heartbeating() {
    let mut g = Group::start_with(3, quick_expiry).await;
    let client = client(&g.addrs);
    let mut brokers = Vec::new();
    let mut sinks = Vec::new();
    for _ in 0..3 {
        let (addr, rx) = notification_sink().await;
        brokers.push(Broker::register(&g, &client, GROUP_A, &addr).await);
        sinks.push(rx);
    }
    let master_beats = heartbeat_all(&g, &brokers[..1], 3000).await;
    let slave_beats = heartbeat_all(&g, &brokers[1..], NEVER_EXPIRES_MS).await;
    assert_eq!(brokers[0].elect(&g, &client).await.code, success());
    assert_eq!(alter(&g, &client, GROUP_A, 1, 1, &[1, 2, 3], 1).await.code, success());

    master_beats.cancel();
    // The leader notices (heartbeat timeout 3 s) and elects one of the in-sync slaves.
    let (info, set) = eventually("a new master", || async {
        let (code, info, set) =
            replica_info(&client, &g.addrs[g.wait_leader(&[]).await], GROUP_A).await;
        (code == success() && info.master_broker_id.is_some_and(|m| m != 1)).then_some((info, set))
    })
    .await;
    let master = info.master_broker_id.expect("master");
    assert!([2, 3].contains(&master));
    assert_eq!(info.master_epoch, Some(2));
    assert_eq!(set.map(|s| s.sync_state_set.0), Some(BTreeSet::from([master])));

    // Both live slaves were told (the first election's note, to whoever was alive then, comes
    // first); the dead master was not.
    for i in [1usize, 2] {
        let note = loop {
            let note = tokio::time::timeout(DEADLINE, sinks[i].recv())
                .await
                .expect("notified in time")
                .expect("note");
            if note.decode_header::<NotifyBrokerRoleChangedRequestHeader>().master_epoch != Some(1)
            {
                break note;
            }
        };
        let h: NotifyBrokerRoleChangedRequestHeader = note.decode_header();
        assert_eq!((h.master_broker_id, h.master_epoch), (Some(master), Some(2)));
        let body: SyncStateSet = from_json(note.body_bytes()).expect("body");
        assert_eq!(body.sync_state_set.0, BTreeSet::from([master]));
        assert!(note.is_oneway());
    }
    while let Ok(note) = sinks[0].try_recv() {
        let epoch = note.decode_header::<NotifyBrokerRoleChangedRequestHeader>().master_epoch;
        assert_eq!(epoch, Some(1), "the dead master is not notified of its successor");
    }
    slave_beats.cancel();
    tokio::time::sleep(Duration::from_millis(1)).await;
    g.stop_all().await;
}
