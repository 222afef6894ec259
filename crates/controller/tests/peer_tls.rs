//! TLS between controller nodes (#21): a three-node group whose ports are in `enforcing` mode,
//! with access control on and the Raft RPCs signed with `controllerPeerCredentials`, dials its
//! peers over TLS, elects a leader and replicates; a peer-signed Raft RPC sent in plaintext to
//! one of its ports is closed unanswered, while the same RPC over TLS is served. With
//! `tls.server.need.client.auth=require` (certificates checked against the group's CA) the
//! nodes present their `tls.client.certPath` and still form the group, and a TLS client without
//! a certificate gets no answer.

mod common;
// The test PKI is the client tests' (one copy).
#[path = "../../client/tests/common/pki.rs"]
mod pki;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use client::{Client, ClientConfig, Credentials, TlsSettings};
use common::{Broker, Group};
use controller::raft::network::{GROUP, VOTE};
use controller::Config;
use remoting::{RemotingCommand, RequestCode};

const PEERS: &str = r#"{"accessKey":"peers","secretKey":"peer-secret-1"}"#;

struct Files {
    pki: pki::Pki,
    accounts: PathBuf,
}

/// The CA, certificates and accounts file every node of this test process uses.
fn files() -> &'static Files {
    static FILES: OnceLock<Files> = OnceLock::new();
    FILES.get_or_init(|| {
        let pki = pki::pki();
        let accounts = pki.dir.path().join("auth.yml");
        std::fs::write(
            &accounts,
            "accounts:\n  - {accessKey: ops, secretKey: ops-secret, role: admin}\n  \
             - {accessKey: bk, secretKey: bk-secret, role: broker}\n",
        )
        .expect("write accounts");
        Files { pki, accounts }
    })
}

fn set(c: &mut Config, pairs: &[(&str, &str)]) {
    for (k, v) in pairs {
        c.set_known(k, v).expect(k);
    }
}

/// Enforcing TLS (test mode: a self-signed certificate per node), access control on.
fn enforcing(c: &mut Config) {
    let f = files();
    set(
        c,
        &[
            ("tls.server.mode", "enforcing"),
            ("tls.config.file", "/nonexistent/tls.properties"),
            ("authenticationEnabled", "true"),
            ("authConfigPath", f.accounts.to_str().expect("utf-8")),
            ("controllerPeerCredentials", PEERS),
        ],
    );
}

/// [`enforcing`] with the CA's certificates, checked both ways: mutual TLS between the nodes.
fn mutual(c: &mut Config) {
    enforcing(c);
    let p = &files().pki;
    let (cert, key, ca) = (
        p.cert.to_str().expect("utf-8"),
        p.key.to_str().expect("utf-8"),
        p.ca.to_str().expect("utf-8"),
    );
    set(
        c,
        &[
            ("tls.test.mode.enable", "false"),
            ("tls.server.certPath", cert),
            ("tls.server.keyPath", key),
            ("tls.server.need.client.auth", "require"),
            ("tls.server.authClient", "true"),
            ("tls.server.trustCertPath", ca),
            ("tls.client.authServer", "true"),
            ("tls.client.trustCertPath", ca),
            ("tls.client.certPath", cert),
            ("tls.client.keyPath", key),
        ],
    );
}

/// A client of the group's ports: over TLS (`tls`), signing as `key`/`secret`.
fn client(g: &Group, tls: Option<TlsSettings>, key: &str, secret: &str) -> Client {
    let config = ClientConfig {
        request_timeout: Duration::from_secs(10),
        credentials: Some(Credentials::new(key, secret)),
        tls: tls.map(|s| s.build().expect("client TLS")),
        ..ClientConfig::default()
    };
    Client::with_config(&g.addrs.join(";"), config).expect("client")
}

fn test_mode_tls() -> Option<TlsSettings> {
    Some(TlsSettings { enable: true, ..TlsSettings::default() })
}

/// A stale vote (term 0) signed by the peers: Raft answers it and changes nothing.
fn stale_vote(g: &Group) -> RemotingCommand {
    let body =
        r#"{"vote":{"leader_id":{"term":0,"node_id":9},"committed":false},"last_log_id":null}"#;
    let fields: remoting::ExtFields = [(GROUP, g.group.as_str())].into_iter().collect();
    RemotingCommand::request(RequestCode::Unknown(VOTE))
        .with_ext_fields(fields)
        .with_body(body.as_bytes().to_vec())
}

/// A broker registers through the leader and every node applies the same tables.
async fn replicates(g: &Group, brokers: &Client) {
    let leader = g.wait_leader(&[]).await;
    Broker::register(g, brokers, "broker-tls", "127.0.0.1:30911").await;
    let tables = g.wait_same_tables(leader, &[0, 1, 2]).await;
    assert!(format!("{tables:?}").contains("broker-tls"), "replicated: {tables:?}");
}

/// The answer's code, or the error's text.
async fn ask(c: &Client, addr: &str, req: RemotingCommand) -> Result<i32, String> {
    let pinned = c.pinned(addr);
    let sent = pinned.invoke(req);
    match tokio::time::timeout(Duration::from_secs(20), sent).await.expect("bounded") {
        Ok((_, resp)) => Ok(resp.code),
        Err(e) => Err(e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcing_group_talks_tls_between_its_nodes_and_closes_plaintext() {
    let mut g = Group::start_with(3, enforcing).await;
    assert!(g.node(0).config().snapshot().peers_over_tls());
    replicates(&g, &client(&g, test_mode_tls(), "bk", "bk-secret")).await;

    let peers = client(&g, test_mode_tls(), "peers", "peer-secret-1");
    assert_eq!(ask(&peers, &g.addrs[1], stale_vote(&g)).await, Ok(0), "a peer over TLS");
    let plain = client(&g, None, "peers", "peer-secret-1");
    let refused = ask(&plain, &g.addrs[1], stale_vote(&g)).await;
    assert!(refused.is_err(), "plaintext to an enforcing port is closed: {refused:?}");
    g.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_present_their_client_certificate_to_peers_that_require_one() {
    let mut g = Group::start_with(3, mutual).await;
    let p = &files().pki;
    let checked = TlsSettings {
        enable: true,
        test_mode: false,
        auth_server: true,
        trust_cert_path: Some(p.ca.clone()),
        ..TlsSettings::default()
    };
    let with_cert = TlsSettings {
        cert_path: Some(p.cert.clone()),
        key_path: Some(p.key.clone()),
        ..checked.clone()
    };
    replicates(&g, &client(&g, Some(with_cert.clone()), "bk", "bk-secret")).await;

    let peer = client(&g, Some(with_cert), "peers", "peer-secret-1");
    assert_eq!(ask(&peer, &g.addrs[2], stale_vote(&g)).await, Ok(0), "with the certificate");
    let no_cert = client(&g, Some(checked), "peers", "peer-secret-1");
    let refused = ask(&no_cert, &g.addrs[2], stale_vote(&g)).await;
    assert!(refused.is_err(), "without a client certificate: {refused:?}");
    g.stop_all().await;
}

#[test]
fn enforcing_is_accepted_for_a_group_and_bad_client_keys_name_the_key() {
    let mut c = Config::default();
    set(
        &mut c,
        &[
            ("controllerDLegerGroup", "g"),
            ("controllerDLegerPeers", "n0-127.0.0.1:1;n1-127.0.0.1:2"),
            ("controllerDLegerSelfId", "n0"),
            ("tls.server.mode", "enforcing"),
            ("tls.config.file", "/nonexistent/tls.properties"),
        ],
    );
    c.validate().expect("enforcing with two nodes");
    assert!(c.peers_over_tls());
    let p = &files().pki;
    set(
        &mut c,
        &[
            ("tls.test.mode.enable", "false"),
            ("tls.server.certPath", p.cert.to_str().expect("utf-8")),
            ("tls.server.keyPath", p.key.to_str().expect("utf-8")),
        ],
    );
    controller::Guard::from_config(&c).expect("the server keys are good");
    set(&mut c, &[("tls.client.authServer", "true")]);
    let err = controller::Guard::from_config(&c).expect_err("no trust file").to_string();
    assert!(err.contains("tls.client.trustCertPath"), "{err}");
    set(&mut c, &[("tls.client.trustCertPath", "/nonexistent/ca.pem")]);
    let err = controller::Guard::from_config(&c).expect_err("unreadable").to_string();
    assert!(err.contains("tls.client.trustCertPath"), "{err}");
}
