//! End-to-end route reads over TCP: 105 GET_ROUTEINFO_BY_TOPIC (legacy vs standard JSON, zone
//! filtering, orderTopicConf, needWaitForService) and 106 GET_BROKER_CLUSTER_INFO.

mod common;

use std::time::Duration;

use common::{
    body_text, data_version, frame_body, header_json, plain_success_header, request, Broker, Conn,
    TestServer,
};
use remoting::body::{from_json, to_legacy_json, RegisterBrokerBody, TopicConfig, TopicRouteData};
use remoting::{RemotingCommand, RequestCode};

/// TV-12: the legacy route body of broker-a (ids 0 and 1), TopicTest with 8 queues.
const TV12: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;
/// TV-13: the same route in standard JSON.
const TV13: &str = r#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.47:10911","1":"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;

const NOT_EXIST_TAIL: &str =
    "\\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

async fn register_tv12(server: &TestServer) -> Conn {
    let mut conn = server.connect().await;
    let master = Broker::new("TestCluster", "broker-a", "192.168.0.47:10911", 0);
    let slave = Broker::new("TestCluster", "broker-a", "192.168.0.47:10921", 1);
    conn.register(&master, &["TopicTest", "%RETRY%group"]).await;
    conn.register(&slave, &["TopicTest", "%RETRY%group"]).await;
    conn
}

fn route_request(version: i32, ext: &[(&str, &str)]) -> RemotingCommand {
    let mut ext = ext.to_vec();
    ext.insert(0, ("topic", "TopicTest"));
    let mut cmd = request(RequestCode::GetRouteinfoByTopic, &ext, None);
    cmd.version = version;
    cmd
}

#[tokio::test]
async fn old_client_gets_legacy_route_frame_byte_for_byte() {
    let server = TestServer::start().await;
    let _broker = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(route_request(317, &[])).await;
    // TV-11 with the TV-12 body.
    assert_eq!(&frame[..8], &[0x00, 0x00, 0x01, 0x7e, 0x00, 0x00, 0x00, 0x5f]);
    assert_eq!(header_json(&frame), plain_success_header(1));
    assert_eq!(String::from_utf8_lossy(frame_body(&frame)), TV12);
}

#[tokio::test]
async fn current_client_gets_standard_route_frame_byte_for_byte() {
    let server = TestServer::start().await;
    let _broker = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(route_request(479, &[])).await;
    assert_eq!(&frame[..8], &[0x00, 0x00, 0x01, 0x82, 0x00, 0x00, 0x00, 0x5f]);
    assert_eq!(header_json(&frame), plain_success_header(1));
    assert_eq!(String::from_utf8_lossy(frame_body(&frame)), TV13);
}

/// (request version, extra ext fields, expected body).
type JsonCase = (i32, &'static [(&'static str, &'static str)], &'static str);

#[tokio::test]
async fn json_form_follows_version_401_and_accept_standard_json_only() {
    let server = TestServer::start().await;
    let mut conn = register_tv12(&server).await;
    let cases: [JsonCase; 7] = [
        (400, &[], TV12),
        (401, &[], TV13),
        (612, &[], TV13),
        (400, &[("acceptStandardJsonOnly", "true")], TV13),
        (121, &[("acceptStandardJsonOnly", "TRUE")], TV13),
        (400, &[("acceptStandardJsonOnly", "false")], TV12),
        (401, &[("acceptStandardJsonOnly", "false")], TV13),
    ];
    for (version, ext, expected) in cases {
        let resp = conn.call(route_request(version, ext)).await;
        assert_eq!(resp.code, 0);
        assert_eq!(body_text(&resp), expected, "version {version} {ext:?}");
    }
}

#[tokio::test]
async fn unknown_topic_is_topic_not_exist_with_faq_remark() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(route_request(479, &[])).await;
    // TV-18.
    assert_eq!(&frame[..8], &[0x00, 0x00, 0x00, 0xf9, 0x00, 0x00, 0x00, 0xf5]);
    assert_eq!(
        header_json(&frame),
        format!(
            r#"{{"code":17,"flag":1,"language":"JAVA","opaque":1,"remark":"No topic route info in name server for the topic: TopicTest{NOT_EXIST_TAIL}","serializeTypeCurrentRPC":"JSON","version":479}}"#
        )
    );
    assert!(frame_body(&frame).is_empty());
}

#[tokio::test]
async fn route_request_without_topic_is_topic_not_exist_for_null() {
    let server = TestServer::start().await;
    let _broker = register_tv12(&server).await;
    let mut conn = server.connect().await;
    let resp = conn.call(request(RequestCode::GetRouteinfoByTopic, &[], None)).await;
    assert_eq!(resp.code, 17);
    assert!(resp
        .remark
        .unwrap_or_default()
        .starts_with("No topic route info in name server for the topic: null\nSee "));
}

#[tokio::test]
async fn zone_mode_keeps_brokers_of_the_zone_and_masterless_ones_in_legacy_json() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let a = Broker::new("C", "broker-a", "10.0.0.1:10911", 0).with_ext("__ZONE_NAME", "z1");
    let b = Broker::new("C", "broker-b", "10.0.0.2:10911", 0).with_ext("__ZONE_NAME", "z2");
    // A slave-only group in another zone: "master down: read from any slave".
    let c = Broker::new("C", "broker-c", "10.0.0.3:10921", 1).with_ext("__ZONE_NAME", "z2");
    for broker in [&a, &b, &c] {
        conn.register(broker, &["TopicTest", "Other"]).await;
    }

    let unfiltered = conn.route("TopicTest").await.expect("route");
    assert_eq!(unfiltered.broker_datas.len(), 3);
    assert_eq!(unfiltered.queue_datas.len(), 3);

    for (mode, zone) in [("true", "z1"), ("TRUE", "Z1")] {
        let resp =
            conn.call(route_request(479, &[("__ZONE_MODE", mode), ("__ZONE_NAME", zone)])).await;
        assert_eq!(resp.code, 0);
        let text = body_text(&resp);
        assert!(
            text.contains(r#""brokerAddrs":{0:"10.0.0.1:10911"}"#),
            "legacy JSON even for a standard client: {text}"
        );
        let route: TopicRouteData = from_json(resp.body_bytes()).expect("route");
        let mut names: Vec<_> = route.broker_datas.iter().map(|b| b.broker_name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["broker-a", "broker-c"], "{text}");
        let mut queues: Vec<_> = route.queue_datas.iter().map(|q| q.broker_name.as_str()).collect();
        queues.sort_unstable();
        assert_eq!(queues, ["broker-a", "broker-c"]);
        let a = route.broker_datas.iter().find(|b| b.broker_name == "broker-a").expect("broker-a");
        assert_eq!(a.zone_name.as_deref(), Some("z1"));
    }

    // Zone mode off, or a blank zone name: no filtering, and the client's JSON form.
    for ext in [
        &[("__ZONE_MODE", "false"), ("__ZONE_NAME", "z1")][..],
        &[("__ZONE_MODE", "true"), ("__ZONE_NAME", "  ")][..],
        &[("__ZONE_NAME", "z1")][..],
    ] {
        let resp = conn.call(route_request(479, ext)).await;
        let route: TopicRouteData = from_json(resp.body_bytes()).expect("route");
        assert_eq!(route.broker_datas.len(), 3, "{ext:?}");
        assert!(body_text(&resp).contains(r#"{"0":"10.0.0.1:10911"}"#), "{ext:?}");
    }
}

#[tokio::test]
async fn zone_filter_drops_filter_servers_of_removed_brokers() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    for (name, addr, zone) in
        [("broker-a", "10.0.0.1:10911", "z1"), ("broker-b", "10.0.0.2:10911", "z2")]
    {
        let broker = Broker::new("C", name, addr, 0).with_ext("__ZONE_NAME", zone);
        let mut body = RegisterBrokerBody {
            filter_server_list: Some(vec![format!("{addr}-filter")]),
            ..RegisterBrokerBody::default()
        };
        let wrapper = &mut body.topic_config_serialize_wrapper;
        wrapper.data_version = data_version(1);
        for t in ["TopicTest", "Other"] {
            std::sync::Arc::make_mut(&mut wrapper.topic_config_table)
                .insert(t.to_owned(), TopicConfig::named(t));
        }
        let resp = conn.call(broker.register_body(to_legacy_json(&body))).await;
        assert_eq!(resp.code, 0);
    }
    let full = conn.route("TopicTest").await.expect("route");
    assert_eq!(full.filter_server_table.len(), 2);
    let resp =
        conn.call(route_request(479, &[("__ZONE_MODE", "true"), ("__ZONE_NAME", "z2")])).await;
    let route: TopicRouteData = from_json(resp.body_bytes()).expect("route");
    assert_eq!(route.filter_server_table.keys().collect::<Vec<_>>(), ["10.0.0.2:10911"]);
    assert_eq!(route.filter_server_table["10.0.0.2:10911"], ["10.0.0.2:10911-filter"]);
}

#[tokio::test]
async fn order_message_enable_adds_order_topic_conf_at_runtime() {
    let server = TestServer::start().await;
    let mut conn = register_tv12(&server).await;
    conn.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:8").await;
    let resp = conn.call(route_request(317, &[])).await;
    assert_eq!(body_text(&resp), TV12, "off by default");

    conn.update_config("orderMessageEnable=true\n").await;
    let legacy = conn.call(route_request(317, &[])).await;
    assert_eq!(
        body_text(&legacy),
        TV12.replace(
            r#""filterServerTable":{},"#,
            r#""filterServerTable":{},"orderTopicConf":"broker-a:8","#
        )
    );
    let standard = conn.call(route_request(479, &[])).await;
    assert_eq!(
        body_text(&standard),
        TV13.replace(
            r#""filterServerTable":{},"#,
            r#""filterServerTable":{},"orderTopicConf":"broker-a:8","#
        )
    );
    // A topic without an order config has no orderTopicConf.
    let other = conn
        .call(request(RequestCode::GetRouteinfoByTopic, &[("topic", "%RETRY%group")], None))
        .await;
    assert!(!body_text(&other).contains("orderTopicConf"));

    conn.update_config("orderMessageEnable=false\n").await;
    let resp = conn.call(route_request(317, &[])).await;
    assert_eq!(body_text(&resp), TV12);
}

#[tokio::test(start_paused = true)]
async fn need_wait_for_service_refuses_routes_until_the_wait_is_over() {
    let server = TestServer::start_with(|c| {
        c.need_wait_for_service = true;
        c.wait_seconds_for_service = 45;
    })
    .await;
    let mut conn = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(route_request(479, &[])).await;
    assert_eq!(
        header_json(&frame),
        r#"{"code":1,"flag":1,"language":"JAVA","opaque":1,"remark":"name server not ready","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    // Other requests are served meanwhile.
    let info = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(info.code, 0);

    tokio::time::sleep(Duration::from_secs(46)).await;
    let resp = conn.call(route_request(317, &[])).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(body_text(&resp), TV12);
}

#[tokio::test]
async fn need_wait_for_service_and_its_wait_are_dynamic() {
    let server = TestServer::start().await;
    let mut conn = register_tv12(&server).await;
    assert_eq!(conn.call(route_request(479, &[])).await.code, 0);

    conn.update_config("needWaitForService=true\n").await;
    let resp = conn.call(route_request(479, &[])).await;
    assert_eq!(resp.code, 1);
    assert_eq!(resp.remark.as_deref(), Some("name server not ready"));
    assert!(resp.ext_fields.is_none());

    conn.update_config("waitSecondsForService=0\n").await;
    assert_eq!(conn.call(route_request(479, &[])).await.code, 0);

    conn.update_config("waitSecondsForService=45\n").await;
    assert_eq!(conn.call(route_request(479, &[])).await.code, 1);
    conn.update_config("needWaitForService=false\n").await;
    assert_eq!(conn.call(route_request(479, &[])).await.code, 0);
}

#[tokio::test]
async fn cluster_info_lists_groups_and_clusters_in_legacy_json() {
    let server = TestServer::start().await;
    let _broker = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(header_json(&frame), plain_success_header(1));
    assert_eq!(
        String::from_utf8_lossy(frame_body(&frame)),
        r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}},"clusterAddrTable":{"TestCluster":["broker-a"]}}"#
    );
}

#[tokio::test]
async fn cluster_info_of_an_empty_server_is_two_empty_tables() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(resp.code, 0);
    assert_eq!(body_text(&resp), r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#);
}

#[tokio::test]
async fn slave_only_acting_master_group_is_read_only_and_rewritten_when_supported() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let slave =
        Broker::new("C", "broker-a", "10.0.0.1:10921", 1).with_ext("enableActingMaster", "true");
    conn.register(&slave, &["TopicTest", "Other"]).await;

    let route = conn.route("TopicTest").await.expect("prime slave registered the topics");
    assert_eq!(route.queue_datas[0].perm, 4, "write bit cleared without a master");
    assert!(route.broker_datas[0].enable_acting_master);
    let text = body_text(&conn.call(route_request(479, &[])).await);
    assert!(text.contains(r#""brokerAddrs":{"1":"10.0.0.1:10921"}"#), "{text}");

    conn.update_config("supportActingMaster=true\n").await;
    let text = body_text(&conn.call(route_request(479, &[])).await);
    assert!(text.contains(r#""brokerAddrs":{"0":"10.0.0.1:10921"}"#), "acting master: {text}");
}
