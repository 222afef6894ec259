//! The controller commands of `mqadmin` against a group of three of our controllers (in this
//! process): every command given a follower's address still reaches the leader, and the
//! output has Java's shape.

mod common;

use std::sync::Arc;
use std::time::Duration;

use client::Client;
use common::{mqadmin, stdout, LIMIT};
use remoting::headers::*;
use remoting::{RemotingCommand, RequestCode};
use tokio::runtime::Runtime;

struct Controllers {
    addrs: Vec<String>,
    nodes: Vec<Arc<controller::Node>>,
    _dirs: Vec<tempfile::TempDir>,
    rt: Runtime,
}

impl Controllers {
    fn start() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (addrs, nodes, dirs) = rt.block_on(async {
            let mut listeners = Vec::new();
            for _ in 0..3 {
                listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind"));
            }
            let addrs: Vec<String> =
                listeners.iter().map(|l| l.local_addr().expect("addr").to_string()).collect();
            let peers: Vec<String> =
                addrs.iter().enumerate().map(|(i, a)| format!("n{i}-{a}")).collect();
            let mut nodes = Vec::new();
            let mut dirs = Vec::new();
            for (i, listener) in listeners.into_iter().enumerate() {
                let dir = tempfile::tempdir().expect("tempdir");
                let config = controller::Config {
                    controller_dleger_group: Some("admin-test".into()),
                    controller_dleger_peers: Some(peers.join(";")),
                    controller_dleger_self_id: Some(format!("n{i}")),
                    controller_store_path: dir.path().to_string_lossy().into_owned(),
                    config_store_path: dir
                        .path()
                        .join("controller.properties")
                        .to_string_lossy()
                        .into_owned(),
                    raft_heartbeat_interval_millis: 100,
                    raft_election_timeout_millis: 2000, // wide: CI runs many tests at once on 2 cores
                    extra: [("rocketmq.mySecretToken".to_owned(), "s3cret-token".to_owned())]
                        .into(),
                    ..controller::Config::default()
                };
                let node =
                    controller::Node::start(Arc::new(controller::SharedConfig::new(config)), None)
                        .await
                        .expect("start");
                tokio::spawn(controller::server::serve(
                    listener,
                    node.clone(),
                    controller::Guard::open(),
                    std::future::pending(),
                ));
                nodes.push(node);
                dirs.push(dir);
            }
            (addrs, nodes, dirs)
        });
        Self { addrs, nodes, _dirs: dirs, rt }
    }

    /// Index of the leader once exactly one node leads.
    fn leader(&self) -> usize {
        let deadline = std::time::Instant::now() + LIMIT;
        loop {
            let leaders: Vec<usize> = (0..3).filter(|&i| self.nodes[i].is_leader()).collect();
            if let [one] = leaders[..] {
                return one;
            }
            assert!(std::time::Instant::now() < deadline, "no leader");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A follower's address (commands given it must still reach the leader).
    fn follower(&self) -> String {
        self.addrs[(self.leader() + 1) % 3].clone()
    }

    /// Sends `req` to the leader, following leadership changes.
    fn to_leader(&self, req: RemotingCommand) -> RemotingCommand {
        let deadline = std::time::Instant::now() + LIMIT;
        loop {
            let addr = self.addrs[self.leader()].clone();
            let client = Client::new(&addr).expect("client");
            let resp = self.rt.block_on(async { client.invoke(req.clone()).await.map(|(_, r)| r) });
            if let Ok(r) = resp {
                if r.code != 2007 {
                    return r;
                }
            }
            assert!(std::time::Instant::now() < deadline, "no leader answered");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Registers brokers 1 and 2 of `broker-a` (3 too, which never heartbeats), heartbeats 1
    /// and 2 on every node from their own connections, and elects broker 1.
    fn group_with_brokers(&self) -> Vec<Client> {
        for port in [30911, 30921, 30931] {
            let addr = format!("127.0.0.1:{port}");
            let next = self.to_leader(
                RemotingCommand::request(RequestCode::ControllerGetNextBrokerId).with_header(
                    &GetNextBrokerIdRequestHeader {
                        cluster_name: Some("DefaultCluster".into()),
                        broker_name: Some("broker-a".into()),
                    },
                ),
            );
            let id =
                next.decode_header::<GetNextBrokerIdResponseHeader>().next_broker_id.expect("id");
            let applied = self.to_leader(
                RemotingCommand::request(RequestCode::ControllerApplyBrokerId).with_header(
                    &ApplyBrokerIdRequestHeader {
                        cluster_name: Some("DefaultCluster".into()),
                        broker_name: Some("broker-a".into()),
                        applied_broker_id: Some(id),
                        register_check_code: Some(format!("{addr};1")),
                    },
                ),
            );
            assert_eq!(applied.code, 0, "{:?}", applied.remark);
        }
        let clients: Vec<Client> =
            (0..2).map(|_| Client::new(&self.addrs.join(";")).expect("client")).collect();
        for (i, client) in clients.iter().enumerate() {
            let header = BrokerHeartbeatRequestHeader {
                cluster_name: Some("DefaultCluster".into()),
                broker_addr: Some(format!("127.0.0.1:309{}1", i + 1)),
                broker_name: Some("broker-a".into()),
                broker_id: Some(i as i64 + 1),
                heartbeat_timeout_mills: Some(600_000),
                ..Default::default()
            };
            for addr in &self.addrs {
                let req =
                    RemotingCommand::request(RequestCode::BrokerHeartbeat).with_header(&header);
                self.rt
                    .block_on(async { client.pinned(addr).invoke(req).await.expect("heartbeat") });
            }
        }
        let elected = self.to_leader(
            RemotingCommand::request(RequestCode::ControllerElectMaster).with_header(
                &ElectMasterRequestHeader {
                    cluster_name: Some("DefaultCluster".into()),
                    broker_name: Some("broker-a".into()),
                    broker_id: Some(1),
                    designate_elect: Some(false),
                    invoke_time: Some(1),
                },
            ),
        );
        assert_eq!(elected.code, 0, "{:?}", elected.remark);
        // The master reports broker 2 in sync (an admin may only elect a member of the set).
        let set = remoting::body::SyncStateSet {
            sync_state_set: [1, 2].into_iter().collect(),
            sync_state_set_epoch: 1,
        };
        let altered = self.to_leader(
            RemotingCommand::request(RequestCode::ControllerAlterSyncStateSet)
                .with_header(&AlterSyncStateSetRequestHeader {
                    broker_name: Some("broker-a".into()),
                    master_broker_id: Some(1),
                    master_epoch: Some(1),
                    invoke_time: Some(1),
                })
                .with_body(remoting::body::to_legacy_json(&set)),
        );
        assert_eq!(altered.code, 0, "{:?}", altered.remark);
        clients
    }
}

#[test]
fn controller_commands_reach_the_leader_through_any_node() {
    let c = Controllers::start();
    let _brokers = c.group_with_brokers();
    let leader = c.leader();

    let out =
        mqadmin().args(["getControllerMetaData", "-a", &c.follower()]).output().expect("runs");
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(text.starts_with("\n#ControllerGroup\tadmin-test\n#ControllerLeaderId\tn"), "{text}");
    assert!(text.contains(&format!("#ControllerLeaderAddress\t{}", c.addrs[leader])), "{text}");
    assert_eq!(text.matches("\n#Peer:\tn").count(), 3, "{text}");

    let out = mqadmin()
        .args(["getSyncStateSet", "-a", &c.follower(), "-b", "broker-a"])
        .output()
        .expect("runs");
    let text = stdout(&out);
    assert!(
        text.starts_with("\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n#MasterAddr\t127.0.0.1:30911\n#MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t2\n"),
        "{text}"
    );
    assert!(text.contains("\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='127.0.0.1:30911', alive=true}\n"), "{text}");
    assert!(text.contains("\nNotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=3, brokerAddress='127.0.0.1:30931', alive=false}\n"), "{text}");

    // Java's two-letter -bn works.
    let out = mqadmin()
        .args([
            "electMaster",
            "-a",
            &c.follower(),
            "-c",
            "DefaultCluster",
            "-bn",
            "broker-a",
            "-b",
            "2",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{out:?}");
    let text = stdout(&out);
    assert!(
        text.starts_with("\n#ClusterName\tDefaultCluster\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t127.0.0.1:30921\n#MasterEpoch\t2\n#SyncStateSetEpoch\t3\n"),
        "{text}"
    );
    assert!(text.contains("\t#Broker\t3\t127.0.0.1:30931\n"), "{text}");
    // Broker 3 is not alive: an admin cannot make it master.
    let out = mqadmin()
        .args([
            "electMaster",
            "-a",
            &c.follower(),
            "-c",
            "DefaultCluster",
            "-bn",
            "broker-a",
            "-b",
            "3",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2012"), "{out:?}");

    let out = mqadmin()
        .args([
            "cleanBrokerMetadata",
            "-a",
            &c.follower(),
            "-c",
            "DefaultCluster",
            "-bn",
            "broker-a",
            "-b",
            "3",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        stdout(&out),
        "clear broker broker-a metadata from controller success! \n",
        "{out:?}"
    );
    let out = mqadmin()
        .args(["--json", "getSyncStateSet", "-a", &c.follower(), "-b", "broker-a"])
        .output()
        .expect("runs");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let ids: Vec<i64> = ["inSyncReplicas", "notInSyncReplicas"]
        .iter()
        .flat_map(|k| json["broker-a"][k].as_array().cloned().unwrap_or_default())
        .map(|r| r["brokerId"].as_i64().expect("id"))
        .collect();
    assert_eq!(ids, [2, 1], "broker 3 is gone: {json}");
    // Without -c (and without -l) Java refuses.
    let out = mqadmin()
        .args(["cleanBrokerMetadata", "-a", &c.follower(), "-bn", "broker-a"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn controller_config_is_read_and_updated_on_every_node() {
    let c = Controllers::start();
    let all = c.addrs.join(";");
    let out = mqadmin()
        .args([
            "updateControllerConfig",
            "-a",
            &all,
            "-k",
            "enableElectUncleanMaster",
            "-v",
            "true",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        format!(
            "update controller config success![{}]\nenableElectUncleanMaster : true\n",
            c.addrs.join(", ")
        )
    );
    let out = mqadmin().args(["getControllerConfig", "-a", &all]).output().expect("runs");
    let text = stdout(&out);
    for addr in &c.addrs {
        assert!(text.contains(&format!("============{addr}============\n")), "{text}");
    }
    assert_eq!(
        text.matches(&format!("{:<50}=  true\n", "enableElectUncleanMaster")).count(),
        3,
        "{text}"
    );
    // Secrets are shown as `******`, like 319 and `-p` (Java's 1010 shows them).
    assert!(!text.contains("s3cret-token"), "{text}");
    assert_eq!(text.matches(&format!("{:<50}=  ******\n", "rocketmq.mySecretToken")).count(), 3);
    for node in &c.nodes {
        assert!(node.config().load().enable_elect_unclean_master, "applied at once");
    }
    let out = mqadmin()
        .args(["updateControllerConfig", "-a", &all, "-k", "configStorePath", "-v", "/tmp/x"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Can not update config in black list."),
        "{out:?}"
    );
}
