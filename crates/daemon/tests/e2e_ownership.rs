//! Broker ownership over TCP (#21, finding 5): with access control on, account `broker-a`
//! (`brokerNames: [bn-a]`) can neither overwrite, heartbeat for, query the data version of, nor
//! unregister broker group `bn-victim` that `broker-b` registered: each is refused with
//! NO_PERMISSION and a remark naming the group, and the route tables are byte-for-byte as
//! before; its own group still registers.

mod common;

use common::{request, write_accounts, Broker, Conn, TestServer};
use remoting::signature::Credentials;
use remoting::{RemotingCommand, RequestCode};

const ACCOUNTS: &str = r#"
accounts:
  - {accessKey: ops, secretKey: "ops-secret-1", role: admin}
  - {accessKey: broker-a, secretKey: "broker-a-secret", role: broker, brokerNames: [bn-a]}
  - {accessKey: broker-b, secretKey: "broker-b-secret", role: broker, clusters: [DefaultCluster], brokerNames: ["bn-victim*"]}
"#;

const NO_PERMISSION: i32 = 16;

fn signed(mut request: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    Credentials::new(access_key, secret).sign(&mut request);
    request
}

/// The route tables as the server reports them.
async fn tables(conn: &mut Conn) -> (Vec<u8>, Vec<u8>) {
    let ops = |r| signed(r, "ops", "ops-secret-1");
    let cluster = ops(request(RequestCode::GetBrokerClusterInfo, &[], None));
    let route = ops(request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicV")], None));
    (conn.call(cluster).await.body_bytes().to_vec(), conn.call(route).await.body_bytes().to_vec())
}

#[tokio::test]
async fn a_broker_account_cannot_act_for_a_group_it_does_not_own() {
    let dir = tempfile::tempdir().expect("dir");
    let accounts = dir.path().join("auth.yml");
    write_accounts(&accounts, ACCOUNTS);
    let server = TestServer::start_in(dir, |c| {
        c.authentication_enabled = Some(true);
        c.auth_config_path = Some(accounts.to_string_lossy().into_owned());
    })
    .await;
    let mut conn = server.connect().await;
    let victim = Broker::new("DefaultCluster", "bn-victim", "127.0.0.1:10911", 0);
    let as_b = |r| signed(r, "broker-b", "broker-b-secret");
    let resp = conn.call(as_b(victim.register(&["TopicV", "TopicV2"]))).await;
    assert_eq!(resp.code, 0, "the owner registers: {:?}", resp.remark);
    let before = tables(&mut conn).await;

    // broker-a takes the group's name with an address of its own, then tries the rest.
    let hijack = Broker::new("DefaultCluster", "bn-victim", "127.0.0.1:20911", 0);
    let as_a = |r| signed(r, "broker-a", "broker-a-secret");
    let attacks = [
        hijack.register(&["TopicV", "TopicX"]),
        hijack.request(RequestCode::BrokerHeartbeat, None),
        hijack.request(
            RequestCode::QueryDataVersion,
            Some(common::register_body(&[], common::data_version(1))),
        ),
        victim.request(RequestCode::UnregisterBroker, None),
        request(
            RequestCode::GetBrokerMemberGroup,
            &[("clusterName", "DefaultCluster"), ("brokerName", "bn-victim")],
            None,
        ),
    ];
    for attack in attacks {
        let code = attack.code;
        let resp = conn.call(as_a(attack)).await;
        assert_eq!(resp.code, NO_PERMISSION, "code {code}: {:?}", resp.remark);
        let remark = resp.remark.as_deref().unwrap_or_default();
        assert!(
            remark.contains("account broker-a may not act for broker group \"bn-victim\""),
            "code {code}: {remark}"
        );
    }
    assert_eq!(tables(&mut conn).await, before, "the route tables are unchanged");

    // Its own group registers; the owner still unregisters its own.
    let own = Broker::new("DefaultCluster", "bn-a", "127.0.0.1:30911", 0);
    let resp = conn.call(as_a(own.register(&["TopicA", "TopicA2"]))).await;
    assert_eq!(resp.code, 0, "broker-a registers bn-a: {:?}", resp.remark);
    let resp = conn.call(as_b(victim.request(RequestCode::UnregisterBroker, None))).await;
    assert_eq!(resp.code, 0, "the owner unregisters: {:?}", resp.remark);
    // A group of another cluster is refused to broker-b even with a matching name.
    let elsewhere = Broker::new("OtherCluster", "bn-victim-2", "127.0.0.1:40911", 0);
    let resp = conn.call(as_b(elsewhere.register(&["TopicO", "TopicO2"]))).await;
    assert_eq!(resp.code, NO_PERMISSION, "{:?}", resp.remark);
    server.stop().await;
}
