//! End-to-end broker requests over TCP: 103 REGISTER_BROKER, 104 UNREGISTER_BROKER,
//! 205/327 write permission, 322 QUERY_DATA_VERSION, 901 GET_BROKER_MEMBER_GROUP and
//! 904 BROKER_HEARTBEAT — codes, exact headers (errata C), remarks and bodies.

mod common;

use common::{
    body_text, data_version, frame_body, frame_header, frame_type, header_json,
    plain_success_header, register_body, register_body_of, request, Broker, TestServer,
};
use remoting::body::{body_crc32, to_legacy_json, RegisterBrokerBody, TopicConfig};
use remoting::{RemotingCommand, RequestCode};

fn master() -> Broker {
    Broker::new("DefaultCluster", "broker-a", "192.168.0.47:10911", 0)
}

fn slave() -> Broker {
    Broker::new("DefaultCluster", "broker-a", "192.168.0.47:10921", 1)
}

fn with_opaque(mut cmd: RemotingCommand, opaque: i32) -> RemotingCommand {
    cmd.opaque = opaque;
    cmd
}

#[tokio::test]
async fn master_registration_answers_empty_ext_fields_and_no_body() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call_as_is(&with_opaque(master().register(&["TopicTest", "Other"]), 5)).await;
    // errata C "REGISTER_BROKER, master", 110 bytes; no ORDER_TOPIC_CONFIG namespace ⇒ no body.
    assert_eq!(
        header_json(&frame),
        r#"{"code":0,"extFields":{},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(frame_header(&frame).len(), 110);
    assert!(frame_body(&frame).is_empty());
    assert_eq!(&frame[..8], &[0, 0, 0, 114, 0, 0, 0, 110]);
}

#[tokio::test]
async fn master_registration_header_is_binary_when_serialize_type_is_rocketmq() {
    let server = TestServer::start_with(|c| {
        c.serialize_type = Some(remoting::SerializeType::RocketMq);
    })
    .await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call_as_is(&with_opaque(master().register(&["TopicTest", "Other"]), 5)).await;
    // errata C, ROCKETMQ-binary variant: the empty ext map is written as length 0.
    let expected: [u8; 29] = [
        0x00, 0x00, 0x00, 0x19, 0x01, 0x00, 0x00, 0x15, // frame prefix and header info
        0x00, 0x00, 0x00, 0x01, 0xdf, // code 0, JAVA, version 479
        0x00, 0x00, 0x00, 0x05, // opaque
        0x00, 0x00, 0x00, 0x01, // flag
        0x00, 0x00, 0x00, 0x00, // remark length
        0x00, 0x00, 0x00, 0x00, // ext length
    ];
    assert_eq!(&frame[..], &expected[..]);
    assert_eq!(frame_type(&frame), 1);
}

#[tokio::test]
async fn slave_registration_returns_master_addr_and_masters_ha_addr() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call_as_is(&with_opaque(slave().register(&["TopicTest", "Other"]), 5)).await;
    // errata C "REGISTER_BROKER, slave with live master", 179 bytes, JDK HashMap order.
    assert_eq!(
        header_json(&frame),
        r#"{"code":0,"extFields":{"haServerAddr":"192.168.0.47:10912","masterAddr":"192.168.0.47:10911"},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(frame_header(&frame).len(), 179);
}

#[tokio::test]
async fn slave_without_live_master_gets_empty_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.register(&slave(), &["TopicTest", "Other"]).await;
    assert_eq!(resp.ext_fields.as_ref().map(|e| e.len()), Some(0));
}

#[tokio::test]
async fn crc32_mismatch_is_system_error_with_empty_ext_fields() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let body = register_body(&["TopicTest", "Other"], data_version(1));
    let wrong = body_crc32(&body).wrapping_add(1).to_string();
    let mut cmd = master().register_body(body);
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.insert("bodyCrc32", wrong);
    }
    let frame = raw.call_as_is(&with_opaque(cmd, 5)).await;
    // errata C "REGISTER_BROKER crc32 not match", 137 bytes.
    assert_eq!(
        header_json(&frame),
        r#"{"code":1,"extFields":{},"flag":1,"language":"JAVA","opaque":5,"remark":"crc32 not match","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(frame_header(&frame).len(), 137);

    // Nothing was registered.
    let mut conn = server.connect().await;
    assert!(conn.route("TopicTest").await.is_none());
}

#[tokio::test]
async fn crc32_of_an_absent_body_is_zero() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut cmd = master().request(RequestCode::RegisterBroker, None);
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.insert("bodyCrc32", "12345");
    }
    let resp = conn.call(cmd).await;
    assert_eq!(resp.code, 1);
    assert_eq!(resp.remark.as_deref(), Some("crc32 not match"));
}

#[tokio::test]
async fn matching_crc32_is_accepted() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let body = register_body(&["TopicTest", "Other"], data_version(1));
    let crc = body_crc32(&body).to_string();
    let mut cmd = master().register_body(body);
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.insert("bodyCrc32", crc);
    }
    let resp = conn.call(cmd).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert!(conn.route("TopicTest").await.is_some());
}

#[tokio::test]
async fn single_topic_registration_before_full_one_fails_but_keeps_group() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call_as_is(&with_opaque(master().register(&["TopicTest"]), 5)).await;
    // errata C: same header as crc32 not match.
    assert_eq!(
        header_json(&frame),
        r#"{"code":1,"extFields":{},"flag":1,"language":"JAVA","opaque":5,"remark":"register broker failed","serializeTypeCurrentRPC":"JSON","version":479}"#
    );

    let mut conn = server.connect().await;
    assert!(conn.route("TopicTest").await.is_none(), "no topic registered");
    // §11 #31: cluster and BrokerData side effects stay.
    let info = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(
        body_text(&info),
        r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#
    );

    // After a full registration, an incremental single-topic one is accepted.
    conn.register(&master(), &["TopicTest", "Other"]).await;
    conn.register(&master(), &["NewTopic"]).await;
    assert!(conn.route("NewTopic").await.is_some());
}

#[tokio::test]
async fn undecodable_compressed_body_is_system_error_without_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut cmd = master().register_body(b"definitely not zlib".to_vec());
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.insert("compressed", "true");
    }
    let resp = conn.call(cmd).await;
    assert_eq!(resp.code, 1);
    assert!(resp.ext_fields.is_none(), "framework-built error (errata B1)");
    let remark = resp.remark.unwrap_or_default();
    assert!(remark.contains("Failed to decode RegisterBrokerBody"), "{remark}");
}

#[tokio::test]
async fn undecodable_json_body_is_system_error_without_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp =
        conn.call(master().register_body(b"{\"topicConfigSerializeWrapper\":[".to_vec())).await;
    assert_eq!(resp.code, 1);
    assert!(resp.ext_fields.is_none());
    assert!(resp.remark.unwrap_or_default().contains("Failed to decode RegisterBrokerBody"));
}

#[tokio::test]
async fn negative_version_or_missing_broker_id_is_system_error_without_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut negative = master().register(&["TopicTest", "Other"]);
    negative.version = -1;
    let resp = conn.call(negative).await;
    assert_eq!(resp.code, 1);
    assert!(resp.ext_fields.is_none());

    let mut no_id = master().register(&["TopicTest", "Other"]);
    if let Some(ext) = no_id.ext_fields.as_mut() {
        ext.remove("brokerId");
    }
    let resp = conn.call(no_id).await;
    assert_eq!(resp.code, 1);
    assert!(resp.ext_fields.is_none());
    assert!(conn.route("TopicTest").await.is_none());
}

#[tokio::test]
async fn compressed_registration_is_decoded_and_loses_topic_sys_flag() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut body = RegisterBrokerBody::default();
    let wrapper = &mut body.topic_config_serialize_wrapper;
    wrapper.data_version = data_version(1);
    for name in ["TopicTest", "Other"] {
        let mut tc = TopicConfig::named(name);
        tc.read_queue_nums = 4;
        tc.write_queue_nums = 4;
        tc.topic_sys_flag = 1;
        std::sync::Arc::make_mut(&mut wrapper.topic_config_table).insert(name.to_owned(), tc);
    }
    let mut cmd = master().register_body(body.encode_compressed(479));
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.insert("compressed", "true");
    }
    let resp = conn.call(cmd).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let route = conn.route("TopicTest").await.expect("route");
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].read_queue_nums, 4);
    assert_eq!(route.queue_datas[0].topic_sys_flag, 0, "§11 #33");
}

#[tokio::test]
async fn pre_v3_0_11_broker_sends_a_bare_topic_config_wrapper() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut cmd = master().register_body(
        br#"{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"OldTopic":{"topicName":"OldTopic","readQueueNums":2,"writeQueueNums":2,"perm":6},"Other":{"topicName":"Other"}}}"#.to_vec(),
    );
    cmd.version = 36;
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.remove("enableActingMaster");
    }
    let resp = conn.call(cmd).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let route = conn.route("OldTopic").await.expect("route");
    assert_eq!(route.queue_datas[0].write_queue_nums, 2);
}

#[tokio::test]
async fn order_topic_config_table_is_returned_to_the_broker() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.register(&master(), &["TopicTest", "Other"]).await;
    assert!(resp.body.is_none(), "no namespace ⇒ no body");

    conn.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4").await;
    let resp = conn.register(&master(), &["TopicTest", "Other"]).await;
    assert_eq!(body_text(&resp), r#"{"table":{"TopicTest":"broker-a:4"}}"#);

    // Namespace present but empty ⇒ {"table":{}} (errata A2).
    let del = conn
        .call(request(
            RequestCode::DeleteKvConfig,
            &[("namespace", "ORDER_TOPIC_CONFIG"), ("key", "TopicTest")],
            None,
        ))
        .await;
    assert_eq!(del.code, 0);
    let resp = conn.register(&master(), &["TopicTest", "Other"]).await;
    assert_eq!(body_text(&resp), r#"{"table":{}}"#);
    assert_eq!(resp.body.as_ref().map(|b| b.len()), Some(12));
}

#[tokio::test]
async fn return_order_topic_config_to_broker_can_be_turned_off_at_runtime() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.put_kv("ORDER_TOPIC_CONFIG", "TopicTest", "broker-a:4").await;
    assert!(conn.register(&master(), &["TopicTest", "Other"]).await.body.is_some());
    conn.update_config("returnOrderTopicConfigToBroker=false\n").await;
    assert!(conn.register(&master(), &["TopicTest", "Other"]).await.body.is_none());
}

#[tokio::test]
async fn unregister_answers_success_and_removes_the_broker_soon_after() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(master().request(RequestCode::UnregisterBroker, None)).await;
    assert_eq!(header_json(&frame), plain_success_header(1));
    conn.wait_for_route("TopicTest", "gone", |r| r.is_none()).await;
    let info = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(body_text(&info), r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#);
}

#[tokio::test]
async fn unregister_without_header_fields_is_success() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.call(request(RequestCode::UnregisterBroker, &[], None)).await;
    assert_eq!(resp.code, 0);
}

#[tokio::test]
async fn wipe_and_add_write_perm_answer_topic_counts_in_ext_fields() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    let mut raw = server.connect_raw().await;

    let wipe = raw
        .call(request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None))
        .await;
    assert_eq!(
        header_json(&wipe),
        r#"{"code":0,"extFields":{"wipeTopicCount":"2"},"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    let route = conn.route("TopicTest").await.expect("route");
    assert_eq!(route.queue_datas[0].perm, 4);

    let add = raw
        .call(request(RequestCode::AddWritePermOfBroker, &[("brokerName", "broker-a")], None))
        .await;
    assert_eq!(
        header_json(&add),
        r#"{"code":0,"extFields":{"addTopicCount":"2"},"flag":1,"language":"JAVA","opaque":2,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    let route = conn.route("TopicTest").await.expect("route");
    assert_eq!(route.queue_datas[0].perm, 6);
}

#[tokio::test]
async fn write_perm_of_unknown_broker_counts_zero() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    for (code, key) in [
        (RequestCode::WipeWritePermOfBroker, "wipeTopicCount"),
        (RequestCode::AddWritePermOfBroker, "addTopicCount"),
    ] {
        let resp = conn.call(request(code, &[("brokerName", "nope")], None)).await;
        assert_eq!(resp.code, 0);
        assert_eq!(resp.ext(key), Some("0"));
        assert_eq!(resp.ext_fields.as_ref().map(|e| e.len()), Some(1));
    }
}

#[tokio::test]
async fn add_write_perm_resets_perm_to_exactly_read_write() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let configs = ["TopicTest", "Other"]
        .iter()
        .map(|t| {
            let mut tc = TopicConfig::named(*t);
            tc.perm = 4 | 1; // READ | INHERIT
            tc
        })
        .collect();
    let resp = conn.call(master().register_body(register_body_of(configs, data_version(1)))).await;
    assert_eq!(resp.code, 0);
    assert_eq!(conn.route("TopicTest").await.expect("route").queue_datas[0].perm, 5);
    let resp = conn
        .call(request(RequestCode::AddWritePermOfBroker, &[("brokerName", "broker-a")], None))
        .await;
    assert_eq!(resp.ext("addTopicCount"), Some("2"));
    assert_eq!(conn.route("TopicTest").await.expect("route").queue_datas[0].perm, 6);
}

#[tokio::test]
async fn query_data_version_of_unknown_broker_is_changed_without_body() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw
        .call(
            master().request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(1)))),
        )
        .await;
    assert_eq!(
        header_json(&frame),
        r#"{"code":0,"extFields":{"changed":"true"},"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert!(frame_body(&frame).is_empty());
}

#[tokio::test]
async fn query_data_version_compares_with_the_stored_version_and_returns_it() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    let stored = r#"{"counter":1,"stateVersion":0,"timestamp":1700000000000}"#;

    let same = conn
        .call(
            master().request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(1)))),
        )
        .await;
    assert_eq!(same.code, 0);
    assert_eq!(same.ext("changed"), Some("false"));
    assert_eq!(body_text(&same), stored);

    let newer = conn
        .call(
            master().request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(2)))),
        )
        .await;
    assert_eq!(newer.ext("changed"), Some("true"));
    assert_eq!(body_text(&newer), stored, "the stored version, not the sent one");

    let absent = conn.call(master().request(RequestCode::QueryDataVersion, None)).await;
    assert_eq!(absent.code, 0, "§11 #8");
    assert_eq!(absent.ext("changed"), Some("true"));
    assert_eq!(body_text(&absent), stored);

    // Another cluster with the same address is another live entry (§11 #16).
    let mut other = master();
    other.cluster = "OtherCluster".to_owned();
    let resp = conn
        .call(other.request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(1)))))
        .await;
    assert_eq!(resp.ext("changed"), Some("true"));
    assert!(resp.body.is_none());
}

#[tokio::test]
async fn member_group_keeps_placeholder_remark_and_lists_addresses() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    conn.register(&slave(), &["TopicTest", "Other"]).await;
    let mut raw = server.connect_raw().await;
    let frame = raw
        .call(request(
            RequestCode::GetBrokerMemberGroup,
            &[("clusterName", "DefaultCluster"), ("brokerName", "broker-a")],
            None,
        ))
        .await;
    // errata A4.
    assert_eq!(
        header_json(&frame),
        r#"{"code":0,"flag":1,"language":"JAVA","opaque":1,"remark":"not set any response code","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    // TV-29.
    assert_eq!(
        String::from_utf8_lossy(frame_body(&frame)),
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );
}

#[tokio::test]
async fn member_group_of_unknown_broker_is_empty_with_requested_names() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn
        .call(request(
            RequestCode::GetBrokerMemberGroup,
            &[("clusterName", "c"), ("brokerName", "x")],
            None,
        ))
        .await;
    assert_eq!(resp.code, 0);
    assert_eq!(resp.remark.as_deref(), Some("not set any response code"));
    assert_eq!(
        body_text(&resp),
        r#"{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"x","cluster":"c"}}"#
    );
}

#[tokio::test]
async fn heartbeat_that_is_not_oneway_gets_a_plain_success() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(master().request(RequestCode::BrokerHeartbeat, None)).await;
    // errata A3.
    assert_eq!(header_json(&frame), plain_success_header(1));
    assert!(frame_body(&frame).is_empty());
}

#[tokio::test]
async fn oneway_heartbeat_gets_no_reply() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    let mut hb = master().request(RequestCode::BrokerHeartbeat, None);
    hb.set_oneway(true);
    hb.opaque = 1000;
    conn.send(hb).await;
    let resp = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_ne!(resp.opaque, 1000, "the first answer is the normal request's");
}

#[tokio::test]
async fn state_version_fence_answers_success_with_empty_ext_fields_and_keeps_the_holder() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let holder = Broker::new("DefaultCluster", "broker-a", "192.168.0.47:10911", 0);
    let newer = remoting::body::DataVersion { counter: 1, state_version: 5, timestamp: 1 };
    let resp = conn.call(holder.register_body(register_body(&["TopicTest", "Other"], newer))).await;
    assert_eq!(resp.code, 0);

    // Another address claims id 0 with an older stateVersion (§5.3 step 6).
    let stale = Broker::new("DefaultCluster", "broker-a", "192.168.0.48:10911", 0);
    let older = remoting::body::DataVersion { counter: 9, state_version: 3, timestamp: 2 };
    let mut raw = server.connect_raw().await;
    let frame = raw
        .call_as_is(&with_opaque(
            stale.register_body(register_body(&["TopicTest", "Other"], older)),
            5,
        ))
        .await;
    assert_eq!(
        header_json(&frame),
        r#"{"code":0,"extFields":{},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    let route = conn.route("TopicTest").await.expect("route");
    assert_eq!(
        route.broker_datas[0].broker_addrs.0.get(&0).map(String::as_str),
        Some("192.168.0.47:10911")
    );
    // The stale address has no live entry: its QUERY_DATA_VERSION says "changed", no body.
    let resp = conn.call(stale.request(RequestCode::QueryDataVersion, None)).await;
    assert_eq!(resp.ext("changed"), Some("true"));
    assert!(resp.body.is_none());
}

#[tokio::test]
async fn old_version_slave_registers_its_address_but_no_topics() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut cmd = Broker::new("DefaultCluster", "broker-a", "192.168.0.47:10921", 2333)
        .register(&["TopicTest", "Other"]);
    if let Some(ext) = cmd.ext_fields.as_mut() {
        ext.remove("enableActingMaster");
    }
    let resp = conn.call(cmd).await;
    assert_eq!(resp.code, 0);
    assert!(conn.route("TopicTest").await.is_none(), "§11 #5: no topics");
    let info = conn.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(
        body_text(&info),
        r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{2333:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#
    );
}

#[tokio::test]
async fn delete_topic_with_broker_registration_is_dynamic() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other", "Gone"]).await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    assert!(conn.route("Gone").await.is_some(), "kept by default (§11 #18)");

    conn.update_config("deleteTopicWithBrokerRegistration=true\n").await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    assert!(conn.route("Gone").await.is_none(), "removed once the key is on");
    assert!(conn.route("Other").await.is_some());
}

#[tokio::test]
async fn oneway_registration_is_applied_without_a_reply() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let mut cmd = master().register(&["TopicTest", "Other"]);
    cmd.set_oneway(true);
    cmd.opaque = 4242;
    conn.send(cmd).await;
    // The next frame answers this call, and the registration was applied before it.
    assert!(conn.route("TopicTest").await.is_some());
}

#[tokio::test]
async fn wiped_write_perm_survives_identical_re_registration_until_data_version_changes() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&master(), &["TopicTest", "Other"]).await;
    let wipe = request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None);
    assert_eq!(conn.call(wipe).await.ext("wipeTopicCount"), Some("2"));

    // §11 #32: the unchanged DataVersion re-sent every 30 s does not touch existing queues.
    conn.register(&master(), &["TopicTest", "Other"]).await;
    assert_eq!(conn.route("TopicTest").await.expect("route").queue_datas[0].perm, 4);

    let resp = conn
        .call(master().register_body(register_body(&["TopicTest", "Other"], data_version(2))))
        .await;
    assert_eq!(resp.code, 0);
    assert_eq!(conn.route("TopicTest").await.expect("route").queue_datas[0].perm, 6);
}

/// A re-registration whose body differs from the previous one only in its DataVersion skips
/// decoding the topic table; every observable result stays Java's.
#[tokio::test]
async fn data_version_bumps_with_an_unchanged_topic_table_behave_like_java() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let register = |topics: Vec<remoting::body::TopicConfig>, counter: i64| {
        master().register_body(register_body_of(topics, data_version(counter)))
    };
    let topic = |name: &str, perm: i32| remoting::body::TopicConfig {
        read_queue_nums: 8,
        write_queue_nums: 8,
        perm,
        ..remoting::body::TopicConfig::named(name)
    };
    let query = |counter: i64| {
        master()
            .request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(counter))))
    };
    let perm =
        |route: Option<remoting::body::TopicRouteData>| route.expect("route").queue_datas[0].perm;

    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 6)], 1)).await.code, 0);
    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 6)], 2)).await.code, 0);
    assert_eq!(conn.call(query(2)).await.ext("changed"), Some("false"), "version 2 stored");
    assert_eq!(perm(conn.route("B").await), 6);

    // A new version re-puts every queue, undoing a wipe, as in Java.
    let wipe = request(RequestCode::WipeWritePermOfBroker, &[("brokerName", "broker-a")], None);
    assert_eq!(conn.call(wipe).await.code, 0);
    assert_eq!(perm(conn.route("B").await), 4);
    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 6)], 3)).await.code, 0);
    assert_eq!(perm(conn.route("B").await), 6, "restored by the new version");
    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 6)], 4)).await.code, 0);

    // A changed topic is seen whatever the version's length.
    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 2)], 5)).await.code, 0);
    assert_eq!(perm(conn.route("B").await), 2);
    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 2)], 123_456_789)).await.code, 0);
    assert_eq!(conn.call(query(123_456_789)).await.ext("changed"), Some("false"));
    assert_eq!(conn.call(register(vec![topic("A", 6), topic("B", 6)], 7)).await.code, 0);
    assert_eq!(perm(conn.route("B").await), 6);
    assert_eq!(conn.call(query(7)).await.ext("changed"), Some("false"));

    // A body whose version is not an object where the last one sat is decoded in full (and
    // refused, as Java refuses it).
    let bad = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":"x","topicConfigTable":{}}}"#;
    assert_eq!(conn.call(master().register_body(bad.to_vec())).await.code, 1);
    assert_eq!(conn.call(query(7)).await.ext("changed"), Some("false"), "nothing applied");
}

/// The checksum of a body that differs from the last one only in its DataVersion is computed
/// from the stamped parts: a right one passes, a wrong one is refused like Java's.
#[tokio::test]
async fn body_crc32_is_checked_on_version_only_re_registrations() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let with_crc = |counter: i64, delta: i32| {
        let body = register_body(&["A", "B"], data_version(counter));
        let crc = remoting::body::body_crc32(&body).wrapping_add(delta);
        let mut cmd = master().register_body(body);
        cmd.ext_fields.as_mut().expect("ext").insert("bodyCrc32", crc.to_string());
        cmd
    };
    let query = |counter: i64| {
        master()
            .request(RequestCode::QueryDataVersion, Some(to_legacy_json(&data_version(counter))))
    };
    assert_eq!(conn.call(with_crc(1, 0)).await.code, 0);
    assert_eq!(conn.call(with_crc(2, 0)).await.code, 0);
    assert_eq!(conn.call(query(2)).await.ext("changed"), Some("false"));
    let refused = conn.call(with_crc(3, 1)).await;
    assert_eq!((refused.code, refused.remark.as_deref()), (1, Some("crc32 not match")));
    assert_eq!(conn.call(query(2)).await.ext("changed"), Some("false"), "version 3 not applied");
    assert_eq!(conn.call(with_crc(3, 0)).await.code, 0);
    assert_eq!(conn.call(query(3)).await.ext("changed"), Some("false"));
}

/// A table large enough for the registration lane (~190 KB), changed a little at a time: each
/// registration is applied as its difference from the last (the lane's prepare thread skims
/// it guided by the last body, a run of entries at a time where the bytes are the same), and
/// the routes are what Java's whole-table registration leaves.
#[tokio::test]
async fn a_large_table_changed_a_little_at_a_time_routes_like_the_whole_table() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let names: Vec<String> = (0..1_000).map(|i| format!("topic-{i:04}")).collect();
    // Each round: the topics whose perm is not 6, the one left out, the topics added (4 queues).
    type Round<'a> = (&'a [(usize, i32)], Option<usize>, &'a [&'a str]);
    let rounds: [Round; 6] = [
        (&[], None, &[]),
        // Three topics in three runs changed in place.
        (&[(3, 2), (500, 2), (999, 2)], None, &[]),
        // One change undone, another made; one left out, one added at the end.
        (&[(500, 2), (999, 2), (200, 4)], Some(10), &["zz-added"]),
        // The same table again.
        (&[(500, 2), (999, 2), (200, 4)], Some(10), &["zz-added"]),
        // One added in front (every run after it one entry later), and a change.
        (&[(500, 2), (999, 2), (200, 4), (7, 2)], Some(10), &["a-front", "zz-added"]),
        (&[(500, 2), (999, 2), (200, 2), (7, 2)], Some(10), &["a-front", "zz-added"]),
    ];
    let perm_of = |(changed, _, _): &Round, i: usize| {
        changed.iter().find(|(at, _)| *at == i).map_or(6, |(_, perm)| *perm)
    };
    let route = |route: Option<remoting::body::TopicRouteData>| {
        route.map(|route| (route.queue_datas[0].perm, route.queue_datas[0].read_queue_nums))
    };
    for (n, round) in rounds.iter().enumerate() {
        let (_, left_out, added) = round;
        let topic = |name: &str, perm: i32, queues: i32| TopicConfig {
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm,
            ..TopicConfig::named(name)
        };
        let mut topics: Vec<TopicConfig> = (0..names.len())
            .filter(|i| Some(*i) != *left_out)
            .map(|i| topic(&names[i], perm_of(round, i), 8))
            .collect();
        topics.extend(added.iter().map(|name| topic(name, 6, 4)));
        let body = register_body_of(topics, data_version(n as i64 + 1));
        assert!(body.len() > 64 * 1024, "a body for the lane");
        assert_eq!(conn.call(master().register_body(body)).await.code, 0, "round {n}");
        for i in [0, 3, 6, 7, 8, 10, 200, 499, 500, 501, 998, 999] {
            // A topic left out keeps its queues (Java, without
            // `deleteTopicWithBrokerRegistration`).
            let expected = Some((perm_of(round, i), 8));
            assert_eq!(route(conn.route(&names[i]).await), expected, "round {n}, topic {i}");
        }
        for name in ["a-front", "zz-added"] {
            let expected = added.contains(&name).then_some((6, 4));
            assert_eq!(route(conn.route(name).await), expected, "round {n}, {name}");
        }
    }
}
