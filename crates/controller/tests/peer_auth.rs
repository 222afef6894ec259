//! Raft traffic between controller nodes is authenticated (#21, finding 6): with
//! `authenticationEnabled`, a three-node group whose nodes sign their RPCs with
//! `controllerPeerCredentials` elects and replicates as before, while a client that is not a
//! peer — unsigned, or signed by an admin account of the accounts file — sends a vote with a far
//! higher term and an append over a real socket: both are refused with NO_PERMISSION before
//! Raft sees them, and no node's term, vote or log changes. The same vote signed with the peer
//! credentials is served (so the refusal is the signature's, not the body's).

mod common;

use std::path::PathBuf;
use std::sync::OnceLock;

use common::Group;
use controller::raft::network::{APPEND_ENTRIES, GROUP, VOTE};
use controller::Config;
use remoting::signature::Credentials;
use remoting::{RemotingCommand, RequestCode};

const PEERS: &str = r#"{"accessKey":"peers","secretKey":"peer-secret-1"}"#;
const NO_PERMISSION: i32 = 16;

/// The accounts file of every node (one per test process).
fn accounts() -> &'static PathBuf {
    static FILE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &FILE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("dir");
            let path = dir.path().join("auth.yml");
            std::fs::write(
                &path,
                "accounts:\n  - {accessKey: ops, secretKey: ops-secret, role: admin}\n",
            )
            .expect("write accounts");
            (dir, path)
        })
        .1
}

fn secured(c: &mut Config) {
    c.set_known("authenticationEnabled", "true").expect("key");
    c.set_known("authConfigPath", &accounts().to_string_lossy()).expect("key");
    c.set_known("controllerPeerCredentials", PEERS).expect("key");
}

/// A Raft RPC of `group` with this JSON body.
fn rpc(code: i32, group: &str, body: &str) -> RemotingCommand {
    let fields: remoting::ExtFields = [(GROUP, group)].into_iter().collect();
    RemotingCommand::request(RequestCode::Unknown(code))
        .with_ext_fields(fields)
        .with_body(body.as_bytes().to_vec())
}

/// (term, voted for, last log index) of every node.
fn raft_state(g: &Group) -> Vec<(u64, String, Option<u64>)> {
    (0..g.nodes.len())
        .map(|i| {
            let m = g.node(i).raft().metrics().borrow().clone();
            (m.current_term, format!("{:?}", m.vote), m.last_log_index)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_is_not_a_peer_can_neither_vote_nor_append() {
    let mut g = Group::start_with(3, secured).await;
    let leader = g.wait_leader(&[]).await;
    let target = (leader + 1) % 3;
    // Let the group settle: the followers have the leader's log.
    common::eventually("followers caught up", || async {
        let s = raft_state(&g);
        (s.iter().all(|x| x.0 == s[leader].0 && x.2 == s[leader].2)).then_some(())
    })
    .await;
    let before = raft_state(&g);
    let term = before[leader].0;

    let vote = format!(
        r#"{{"vote":{{"leader_id":{{"term":{},"node_id":9}},"committed":false}},"last_log_id":{{"leader_id":{{"term":{},"node_id":9}},"index":1000000}}}}"#,
        term + 100,
        term + 100
    );
    let append = format!(
        r#"{{"vote":{{"leader_id":{{"term":{},"node_id":9}},"committed":true}},"prev_log_id":null,"entries":[],"leader_commit":null}}"#,
        term + 100
    );
    let mut forged = Vec::new();
    for (code, body) in [(VOTE, &vote), (APPEND_ENTRIES, &append)] {
        forged.push(rpc(code, &g.group, body));
        let mut by_admin = rpc(code, &g.group, body);
        Credentials::new("ops", "ops-secret").sign(&mut by_admin);
        forged.push(by_admin);
        let mut wrong_secret = rpc(code, &g.group, body);
        Credentials::new("peers", "guess").sign(&mut wrong_secret);
        forged.push(wrong_secret);
    }
    let client = common::client(&g.addrs);
    for request in forged {
        let code = request.code;
        let resp = common::call(&client, &g.addrs[target], request).await;
        assert_eq!(resp.code, NO_PERMISSION, "forged {code} refused: {:?}", resp.remark);
        assert!(
            resp.remark.as_deref().unwrap_or("").starts_with("access denied"),
            "{:?}",
            resp.remark
        );
    }
    // The leader keeps heartbeating through the forgeries: nothing moved.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(raft_state(&g), before, "no node's term, vote or log changed");
    assert_eq!(g.wait_leader(&[]).await, leader, "the leader stays");

    // The same kind of vote signed with the peers' credentials reaches Raft (and, with a stale
    // term, is answered and rejected by it).
    let stale =
        r#"{"vote":{"leader_id":{"term":0,"node_id":9},"committed":false},"last_log_id":null}"#;
    let mut peer_signed = rpc(VOTE, &g.group, stale);
    Credentials::new("peers", "peer-secret-1").sign(&mut peer_signed);
    let resp = common::call(&client, &g.addrs[target], peer_signed).await;
    assert_eq!(resp.code, 0, "a peer's RPC is served: {:?}", resp.remark);
    assert!(
        String::from_utf8_lossy(resp.body_bytes()).contains("\"Ok\""),
        "{:?}",
        resp.body_bytes()
    );
    assert_eq!(raft_state(&g)[target].0, term, "a stale vote moves no term");
    g.stop_all().await;
}

#[test]
fn a_secured_group_of_several_nodes_needs_peer_credentials() {
    let mut c = Config::default();
    c.set_known("controllerDLegerGroup", "g").expect("key");
    c.set_known("controllerDLegerPeers", "n0-127.0.0.1:1;n1-127.0.0.1:2").expect("key");
    c.set_known("controllerDLegerSelfId", "n0").expect("key");
    c.set_known("authenticationEnabled", "true").expect("key");
    let err = c.validate().expect_err("refused");
    assert!(err.to_string().contains("controllerPeerCredentials"), "{err}");
    c.set_known("controllerPeerCredentials", "peers:secret").expect("key");
    let err = c.validate().expect_err("not JSON");
    assert!(
        err.to_string().contains("controllerPeerCredentials")
            && !err.to_string().contains("secret\""),
        "{err}"
    );
    c.set_known("controllerPeerCredentials", PEERS).expect("key");
    c.validate().expect("valid with peer credentials");
}
