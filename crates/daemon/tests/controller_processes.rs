//! Three `mqcontroller` processes: `kill -9` of the leader gives a new leader that lost nothing,
//! a frozen leader (SIGSTOP: cut off from everyone) cannot keep leading and steps down when it
//! wakes up, and after every node is restarted from its store the group answers the same.

/// The controller crate's test harness (its clients and request builders).
#[path = "../../controller/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use client::Client;
use common::{client, eventually, request, CLUSTER, DEADLINE};
use remoting::body::{from_json, to_legacy_json, BrokerReplicasInfo, SyncStateSet};
use remoting::headers::*;
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const GROUP_A: &str = "broker-a";

/// A port the OS just handed out (bound on 127.0.0.1:0, then released for the child).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

struct Procs {
    addrs: Vec<String>,
    configs: Vec<std::path::PathBuf>,
    children: Vec<Option<Child>>,
    _dir: tempfile::TempDir,
}

impl Procs {
    fn write(dir: &Path) -> (Vec<String>, Vec<std::path::PathBuf>) {
        let addrs: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", free_port())).collect();
        let peers: Vec<String> =
            addrs.iter().enumerate().map(|(i, a)| format!("n{i}-{a}")).collect();
        let configs = (0..3)
            .map(|i| {
                let path = dir.join(format!("controller-{i}.properties"));
                let text = format!(
                    "controllerDLegerGroup=procs\ncontrollerDLegerPeers={}\ncontrollerDLegerSelfId=n{i}\n\
                     controllerStorePath={}\nbindAddress=127.0.0.1\nraftHeartbeatIntervalMillis=100\n\
                     raftElectionTimeoutMillis=800\n",
                    peers.join(";"),
                    dir.join(format!("store-{i}")).display()
                );
                std::fs::write(&path, text).expect("write config");
                path
            })
            .collect();
        (addrs, configs)
    }

    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (addrs, configs) = Self::write(dir.path());
        let mut p = Procs { addrs, configs, children: Vec::new(), _dir: dir };
        for i in 0..3 {
            let child = p.spawn(i).await;
            p.children.push(Some(child));
        }
        p
    }

    /// Starts node `i` and waits for its boot line.
    async fn spawn(&self, i: usize) -> Child {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mqcontroller"))
            .arg("-c")
            .arg(&self.configs[i])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn mqcontroller");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        tokio::time::timeout(DEADLINE, async {
            while let Some(line) = lines.next_line().await.expect("read") {
                if line.starts_with("The Controller Server boot success.") {
                    return;
                }
            }
            panic!("mqcontroller {i} exited before booting");
        })
        .await
        .expect("boot in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        child
    }

    fn signal(&self, i: usize, signal: &str) {
        let pid = self.children[i].as_ref().and_then(Child::id).expect("running");
        let ok = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .expect("kill");
        assert!(ok.success(), "kill -{signal} {pid}");
    }

    async fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.children[i].take() {
            child.kill().await.expect("kill -9");
        }
    }

    async fn terminate(&mut self, i: usize) {
        self.signal(i, "TERM");
        let mut child = self.children[i].take().expect("running");
        let status = tokio::time::timeout(DEADLINE, child.wait())
            .await
            .expect("exits in time")
            .expect("wait");
        assert!(status.success(), "SIGTERM exits 0: {status}");
    }

    async fn restart(&mut self, i: usize) {
        let child = self.spawn(i).await;
        self.children[i] = Some(child);
    }

    /// The node that says it leads, among `among`, once the others (answering) agree.
    async fn leader(&self, client: &Client, among: &[usize]) -> usize {
        eventually("a leader all live nodes agree on", || async {
            let mut leader = None;
            for &i in among {
                let resp = tokio::time::timeout(
                    Duration::from_secs(2),
                    client
                        .pinned(&self.addrs[i])
                        .invoke(RemotingCommand::request(RequestCode::ControllerGetMetadataInfo)),
                )
                .await;
                let Ok(Ok((_, resp))) = resp else { return None };
                let h: GetMetaDataResponseHeader = resp.decode_header();
                let named = self
                    .addrs
                    .iter()
                    .position(|a| Some(a) == h.controller_leader_address.as_ref())?;
                if leader.is_some_and(|l| l != named) {
                    return None;
                }
                leader = Some(named);
                if named == i && h.is_leader != Some(true) {
                    return None;
                }
            }
            leader.filter(|l| among.contains(l))
        })
        .await
    }

    /// Sends `req` to the leader among `among`, following CONTROLLER_NOT_LEADER.
    async fn to_leader(
        &self,
        client: &Client,
        among: &[usize],
        req: RemotingCommand,
    ) -> RemotingCommand {
        eventually("an answer from the leader", || async {
            let l = self.leader(client, among).await;
            match client.pinned(&self.addrs[l]).invoke(req.clone()).await {
                Ok((_, r)) if r.code != ResponseCode::ControllerNotLeader.to_i32() => Some(r),
                _ => None,
            }
        })
        .await
    }
}

fn next_id() -> RemotingCommand {
    request(
        RequestCode::ControllerGetNextBrokerId,
        &GetNextBrokerIdRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(GROUP_A.into()),
        },
    )
}

fn sync_state_data() -> RemotingCommand {
    RemotingCommand::request(RequestCode::ControllerGetSyncStateData)
        .with_body(to_legacy_json(&[GROUP_A]))
}

/// The group as the leader reports it, without the liveness flags (which depend on who has
/// heard from whom lately).
fn without_liveness(resp: &RemotingCommand) -> BTreeMap<String, String> {
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let mut info: BrokerReplicasInfo = from_json(resp.body_bytes()).expect("decode");
    for r in info.replicas_info_table.values_mut() {
        for m in r.in_sync_replicas.iter_mut().chain(r.not_in_sync_replicas.iter_mut()) {
            m.alive = None;
        }
    }
    info.replicas_info_table.into_iter().map(|(k, v)| (k, format!("{v:?}"))).collect()
}

fn elect(id: i64, admin: bool) -> RemotingCommand {
    request(
        RequestCode::ControllerElectMaster,
        &ElectMasterRequestHeader {
            cluster_name: Some(CLUSTER.into()),
            broker_name: Some(GROUP_A.into()),
            broker_id: Some(id),
            designate_elect: Some(admin),
            invoke_time: Some(1),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controller_processes_survive_kill_freeze_and_restart() {
    let mut p = Procs::start().await;
    let all = [0, 1, 2];
    let admin = client(&p.addrs);

    // A group of three brokers, heartbeating every node from their own connections.
    for (i, port) in [30911, 30921, 30931].into_iter().enumerate() {
        let id = p
            .to_leader(&admin, &all, next_id())
            .await
            .decode_header::<GetNextBrokerIdResponseHeader>()
            .next_broker_id;
        assert_eq!(id, Some(i as i64 + 1));
        let applied = p
            .to_leader(
                &admin,
                &all,
                request(
                    RequestCode::ControllerApplyBrokerId,
                    &ApplyBrokerIdRequestHeader {
                        cluster_name: Some(CLUSTER.into()),
                        broker_name: Some(GROUP_A.into()),
                        applied_broker_id: id,
                        register_check_code: Some(format!("127.0.0.1:{port};1")),
                    },
                ),
            )
            .await;
        assert_eq!(applied.code, 0, "{:?}", applied.remark);
    }
    let beats = common::keep_heartbeating(
        p.addrs.clone(),
        (1..=3).map(|id| (GROUP_A.to_owned(), format!("127.0.0.1:309{id}1"), id)).collect(),
        common::NEVER_EXPIRES_MS,
    )
    .await;
    assert_eq!(p.to_leader(&admin, &all, elect(1, false)).await.code, 0);
    let set =
        SyncStateSet { sync_state_set: [1, 2, 3].into_iter().collect(), sync_state_set_epoch: 1 };
    let altered = p
        .to_leader(
            &admin,
            &all,
            request(
                RequestCode::ControllerAlterSyncStateSet,
                &AlterSyncStateSetRequestHeader {
                    broker_name: Some(GROUP_A.into()),
                    master_broker_id: Some(1),
                    master_epoch: Some(1),
                    invoke_time: Some(1),
                },
            )
            .with_body(to_legacy_json(&set)),
        )
        .await;
    assert_eq!(altered.code, 0, "{:?}", altered.remark);

    // Freeze the leader: the other two elect a leader and commit without it.
    let frozen = p.leader(&admin, &all).await;
    p.signal(frozen, "STOP");
    let awake: Vec<usize> = all.iter().copied().filter(|&i| i != frozen).collect();
    let moved = p.to_leader(&admin, &awake, elect(2, true)).await;
    assert_eq!(moved.code, 0, "{:?}", moved.remark);
    let h: ElectMasterResponseHeader = moved.decode_header();
    assert_eq!((h.master_broker_id, h.master_epoch), (Some(2), Some(2)));
    // Woken up, it no longer leads and names the new leader.
    p.signal(frozen, "CONT");
    let leader = p.leader(&admin, &all).await;
    assert_ne!(leader, frozen);
    let refused = admin.pinned(&p.addrs[frozen]).invoke(elect(3, true)).await.expect("answered").1;
    assert_eq!(refused.code, ResponseCode::ControllerNotLeader.to_i32());
    let before = without_liveness(&p.to_leader(&admin, &all, sync_state_data()).await);

    // kill -9 of the leader: the next one lost nothing.
    p.kill(leader).await;
    let rest: Vec<usize> = all.iter().copied().filter(|&i| i != leader).collect();
    let after_kill = without_liveness(&p.to_leader(&admin, &rest, sync_state_data()).await);
    assert_eq!(after_kill, before);
    let (_, info) = (
        0,
        p.to_leader(
            &admin,
            &rest,
            request(
                RequestCode::ControllerGetReplicaInfo,
                &GetReplicaInfoRequestHeader { broker_name: Some(GROUP_A.into()) },
            ),
        )
        .await,
    );
    let info: GetReplicaInfoResponseHeader = info.decode_header();
    assert_eq!((info.master_broker_id, info.master_epoch), (Some(2), Some(2)));

    // Every node restarted from its store: the same answers.
    p.restart(leader).await;
    for i in all {
        p.terminate(i).await;
    }
    for i in all {
        p.restart(i).await;
    }
    let restarted = without_liveness(&p.to_leader(&admin, &all, sync_state_data()).await);
    assert_eq!(restarted, before);
    beats.cancel();
    for i in all {
        p.kill(i).await;
    }
}

#[tokio::test]
async fn print_lists_every_key_and_a_bad_key_stops_start_up_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.properties");
    std::fs::write(
        &path,
        "controllerDLegerGroup=g\nenableElectUncleanMaster=true\nsomeJavaKey=kept\n",
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_mqcontroller"))
        .arg("-c")
        .arg(&path)
        .arg("-p")
        .output()
        .await
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf8");
    for line in [
        "controllerDLegerGroup=g",
        "enableElectUncleanMaster=true",
        "scanNotActiveBrokerInterval=5000",
        "listenPort=19876",
        "someJavaKey=kept",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_mqcontroller"))
        .arg("-c")
        .arg(&path)
        .output()
        .await
        .expect("run");
    assert_eq!(out.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&out.stderr).contains("controllerDLegerSelfId"), "{out:?}");
    std::fs::write(&path, "controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-127.0.0.1:1\ncontrollerDLegerSelfId=n0\nscanNotActiveBrokerInterval=soon\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_mqcontroller"))
        .arg("-c")
        .arg(&path)
        .output()
        .await
        .expect("run");
    assert_eq!(out.status.code(), Some(255));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("scanNotActiveBrokerInterval"),
        "{out:?}"
    );
    let out =
        Command::new(env!("CARGO_BIN_EXE_mqcontroller")).arg("-x").output().await.expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .starts_with("Unrecognized option: -x\nusage: mqcontroller"),
        "{out:?}"
    );
}
