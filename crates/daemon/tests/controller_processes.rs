//! Three `mqcontroller` processes: `kill -9` of the leader gives a new leader that lost nothing,
//! a frozen leader (SIGSTOP: cut off from everyone) cannot keep leading and steps down when it
//! wakes up, and after every node is restarted from its store the group answers the same; each
//! node's HTTP listener (`httpListenPort`) shows it all in `/metrics` and `/readyz`, and a port
//! that cannot be bound leaves the node serving without it.

/// This crate's harness (HTTP requests, scrapes).
#[path = "common/mod.rs"]
mod harness;
/// The controller crate's test harness (its clients and request builders).
use harness::controllers::ctl as common;

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
    /// Each node's HTTP listener.
    http: Vec<std::net::SocketAddr>,
    configs: Vec<std::path::PathBuf>,
    children: Vec<Option<Child>>,
    _dir: tempfile::TempDir,
}

impl Procs {
    fn write(dir: &Path) -> (Vec<String>, Vec<std::net::SocketAddr>, Vec<std::path::PathBuf>) {
        let addrs: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", free_port())).collect();
        let http: Vec<std::net::SocketAddr> =
            (0..3).map(|_| std::net::SocketAddr::from(([127, 0, 0, 1], free_port()))).collect();
        let peers: Vec<String> =
            addrs.iter().enumerate().map(|(i, a)| format!("n{i}-{a}")).collect();
        let configs = (0..3)
            .map(|i| {
                let path = dir.join(format!("controller-{i}.properties"));
                let text = format!(
                    "controllerDLegerGroup=procs\ncontrollerDLegerPeers={}\ncontrollerDLegerSelfId=n{i}\n\
                     controllerStorePath={}\nbindAddress=127.0.0.1\nraftHeartbeatIntervalMillis=100\n\
                     raftElectionTimeoutMillis=800\nhttpListenPort={}\n",
                    peers.join(";"),
                    dir.join(format!("store-{i}")).display(),
                    http[i].port()
                );
                std::fs::write(&path, text).expect("write config");
                path
            })
            .collect();
        (addrs, http, configs)
    }

    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (addrs, http, configs) = Self::write(dir.path());
        let mut p = Procs { addrs, http, configs, children: Vec::new(), _dir: dir };
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

    /// `GET path` on node `i`'s HTTP listener.
    async fn get(&self, i: usize, path: &str) -> harness::HttpResponse {
        harness::http_get(self.http[i], path, &[]).await
    }

    /// Node `i`'s `/metrics`.
    async fn scrape(&self, i: usize) -> harness::Scrape {
        let response = self.get(i, "/metrics").await;
        assert_eq!(response.status, 200, "{}", response.body);
        harness::Scrape::parse(&response.body)
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

    // The leader's /metrics: it leads, it elected on the admin's request, the group has its
    // master heartbeating, the three in sync.
    let first = p.leader(&admin, &all).await;
    let s = eventually("the leader's scrape shows the group", || async {
        let s = p.scrape(first).await;
        (s.value("rocketmq_controller_sync_state_set_size", &[("broker_name", GROUP_A)])
            == Some(3.0)
            && s.value("rocketmq_controller_live_brokers", &[]) == Some(3.0))
        .then_some(s)
    })
    .await;
    assert_eq!(s.value("rocketmq_controller_role", &[("role", "leader")]), Some(1.0));
    assert_eq!(s.value("rocketmq_controller_ready", &[]), Some(1.0));
    assert_eq!(
        s.value("rocketmq_controller_broker_group_has_master", &[("broker_name", GROUP_A)]),
        Some(1.0)
    );
    assert_eq!(
        s.value(
            "rocketmq_controller_elections_total",
            &[("trigger", "admin"), ("result", "elected")]
        ),
        Some(1.0)
    );
    assert!(s.value("rocketmq_controller_heartbeats_total", &[]).unwrap_or(0.0) >= 3.0);
    // Raft's entries: the membership (0), the leader's first (1), three ids, the election and
    // the sync-state set, all committed and applied once answered.
    let raft = |name: &str| s.value(name, &[]).unwrap_or(0.0);
    let committed = raft("rocketmq_controller_raft_commit_index");
    assert!(committed >= 6.0, "commit index {committed}");
    assert_eq!(raft("rocketmq_controller_raft_applied_index"), committed);
    assert!(raft("rocketmq_controller_raft_term") >= 1.0);
    assert!(raft("rocketmq_controller_store_size_bytes") > 0.0);
    assert_eq!(
        s.value(
            "rocketmq_controller_requests_total",
            &[("request", "CONTROLLER_APPLY_BROKER_ID"), ("result", "SUCCESS")]
        ),
        Some(3.0)
    );
    for i in all.iter().filter(|&&i| i != first) {
        let s = p.scrape(*i).await;
        assert_eq!(s.value("rocketmq_controller_role", &[("role", "follower")]), Some(1.0));
        assert_eq!(p.get(*i, "/readyz").await.status, 200, "a follower knowing the leader");
    }

    // Freeze the leader: the other two elect a leader and commit without it.
    let frozen = first;
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
    let woken = eventually("the woken node's scrape shows it following", || async {
        let s = p.scrape(frozen).await;
        (s.value("rocketmq_controller_role", &[("role", "follower")]) == Some(1.0)).then_some(s)
    })
    .await;
    assert!(
        woken.value("rocketmq_controller_leader_changes_total", &[]).unwrap_or(0.0) >= 2.0,
        "it saw itself lead, then the new leader"
    );
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
    let mut leading = 0;
    for &i in &rest {
        assert_eq!(p.get(i, "/readyz").await.status, 200, "node {i} knows the new leader");
        let s = p.scrape(i).await;
        leading += s.value("rocketmq_controller_role", &[("role", "leader")]).unwrap_or(0.0) as i32;
        assert_eq!(
            s.value("rocketmq_controller_master_epoch", &[("broker_name", GROUP_A)]),
            Some(2.0)
        );
    }
    assert_eq!(leading, 1, "exactly one survivor leads");

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

/// `httpListenPort` already taken: the node logs it, says so in its boot lines and serves its
/// group without HTTP; `httpListenPort=0` opens no HTTP listener.
#[tokio::test]
async fn a_taken_http_port_leaves_the_node_serving_without_http() {
    let dir = tempfile::tempdir().expect("tempdir");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_port = taken.local_addr().expect("addr").port();
    for (port, expected) in [
        (taken_port, "HTTP listener not serving (see the error above)"),
        (0, "HTTP listener disabled (httpListenPort=0)"),
    ] {
        let addr = format!("127.0.0.1:{}", free_port());
        let path = dir.path().join(format!("c{port}.properties"));
        std::fs::write(
            &path,
            format!(
                "controllerDLegerGroup=solo\ncontrollerDLegerPeers=n0-{addr}\ncontrollerDLegerSelfId=n0\n\
                 controllerStorePath={}\nbindAddress=127.0.0.1\nhttpListenPort={port}\n",
                dir.path().join(format!("store-{port}")).display()
            ),
        )
        .expect("write");
        let mut child = Command::new(env!("CARGO_BIN_EXE_mqcontroller"))
            .arg("-c")
            .arg(&path)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn mqcontroller");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let said = tokio::time::timeout(DEADLINE, async {
            while let Some(line) = lines.next_line().await.expect("read") {
                if line.starts_with("HTTP ") {
                    return line;
                }
            }
            panic!("mqcontroller exited before its HTTP line");
        })
        .await
        .expect("boot in time");
        assert_eq!(said, expected);
        let admin = client(std::slice::from_ref(&addr));
        eventually("the node leads its one-node group", || async {
            let (_, r) = admin
                .pinned(&addr)
                .invoke(RemotingCommand::request(RequestCode::ControllerGetMetadataInfo))
                .await
                .ok()?;
            let h: GetMetaDataResponseHeader = r.decode_header();
            (h.is_leader == Some(true)).then_some(())
        })
        .await;
        child.kill().await.expect("kill");
        let mut stderr = String::new();
        tokio::io::AsyncReadExt::read_to_string(
            &mut child.stderr.take().expect("stderr"),
            &mut stderr,
        )
        .await
        .expect("stderr");
        if port != 0 {
            assert!(stderr.contains("httpListenPort"), "the error names the key: {stderr}");
        }
    }
    drop(taken);
}
