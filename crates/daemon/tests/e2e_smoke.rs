//! End-to-end smoke: a broker registers over TCP and a client reads its route.

mod common;

use common::{body_text, request, TestServer};
use remoting::body::{to_legacy_json, DataVersion, RegisterBrokerBody, TopicConfig};
use remoting::{RequestCode, ResponseCode};

fn register_body(topics: &[&str]) -> Vec<u8> {
    let mut body = RegisterBrokerBody::default();
    let wrapper = &mut body.topic_config_serialize_wrapper;
    wrapper.data_version =
        DataVersion { counter: 1, state_version: 0, timestamp: 1_700_000_000_000 };
    for t in topics {
        let mut tc = TopicConfig::named(*t);
        tc.read_queue_nums = 8;
        tc.write_queue_nums = 8;
        std::sync::Arc::make_mut(&mut wrapper.topic_config_table).insert((*t).to_owned(), tc);
    }
    to_legacy_json(&body)
}

#[tokio::test]
async fn registered_topic_route_is_served_in_both_json_forms() {
    let server = TestServer::start().await;
    let mut broker = server.connect().await;
    let body = register_body(&["TopicTest", "Other"]);
    let resp = broker
        .call(request(
            RequestCode::RegisterBroker,
            &[
                ("brokerName", "broker-a"),
                ("brokerAddr", "192.168.0.47:10911"),
                ("clusterName", "TestCluster"),
                ("haServerAddr", "192.168.0.47:10912"),
                ("brokerId", "0"),
                ("enableActingMaster", "false"),
            ],
            Some(&body),
        ))
        .await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(resp.ext_fields.as_ref().map(|e| e.len()), Some(0), "extFields:{{}} for a master");

    let mut client = server.connect().await;
    let mut req = request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicTest")], None);
    req.version = 317;
    let legacy = client.call(req).await;
    assert_eq!(legacy.code, 0);
    assert_eq!(
        body_text(&legacy),
        r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.47:10911"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#
    );
    let standard = client
        .call(request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicTest")], None))
        .await;
    assert!(body_text(&standard).contains(r#"{"0":"192.168.0.47:10911"}"#));

    let missing =
        client.call(request(RequestCode::GetRouteinfoByTopic, &[("topic", "Nope")], None)).await;
    assert_eq!(missing.response_code(), ResponseCode::TopicNotExist);
    assert_eq!(
        missing.remark.as_deref(),
        Some("No topic route info in name server for the topic: Nope\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")
    );
}

#[tokio::test]
async fn unknown_code_is_not_supported_with_java_remark() {
    let server = TestServer::start().await;
    let mut client = server.connect().await;
    let mut req = request(RequestCode::GetKvConfig, &[], None);
    req.code = 999;
    let resp = client.call(req).await;
    assert_eq!(resp.code, 3);
    assert_eq!(resp.remark.as_deref(), Some(" request type 999 not supported"));
    assert!(resp.ext_fields.is_none());
}
