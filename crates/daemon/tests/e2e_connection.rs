//! End-to-end connection behaviour: oneway requests, pipelining, stray responses, malformed
//! frames (closing only their connection), headers from Go/Node/Rust/binary peers, unknown codes
//! and the idle close.

mod common;

use std::time::Duration;

use common::{
    decode, frame_body, frame_type, header_json, json_frame, request, Broker, Conn, RawConn,
    TestServer,
};
use remoting::{RemotingCommand, RequestCode, SerializeType};
use tokio::time::Instant;

/// TV-12's legacy body, for a route registered by [`register_tv12`].
const TV12: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;

/// Registers broker-a (ids 0 and 1); the returned connection keeps the brokers alive.
async fn register_tv12(server: &TestServer) -> Conn {
    let mut conn = server.connect().await;
    let master = Broker::new("TestCluster", "broker-a", "192.168.0.47:10911", 0);
    let slave = Broker::new("TestCluster", "broker-a", "192.168.0.47:10921", 1);
    conn.register(&master, &["TopicTest", "Other"]).await;
    conn.register(&slave, &["TopicTest", "Other"]).await;
    conn
}

fn oneway(mut cmd: RemotingCommand, opaque: i32) -> RemotingCommand {
    cmd.set_oneway(true);
    cmd.opaque = opaque;
    cmd
}

#[tokio::test]
async fn oneway_requests_are_processed_but_never_answered() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    // A oneway success, a oneway handler error and a oneway unknown code: no answer for any.
    raw.send(&oneway(
        request(
            RequestCode::PutKvConfig,
            &[("namespace", "ns"), ("key", "k"), ("value", "v")],
            None,
        ),
        100,
    ))
    .await;
    raw.send(&oneway(request(RequestCode::PutKvConfig, &[], None), 101)).await;
    let mut unknown = request(RequestCode::GetKvConfig, &[], None);
    unknown.code = 999;
    raw.send(&oneway(unknown, 102)).await;

    let frame = raw
        .call_as_is(&request(RequestCode::GetKvConfig, &[("namespace", "ns"), ("key", "k")], None))
        .await;
    let resp = decode(&frame);
    assert_eq!(resp.opaque, 0, "the first answer is the normal request's");
    assert_eq!(resp.code, 0, "the oneway PUT was applied");
    assert_eq!(resp.ext("value"), Some("v"));
}

#[tokio::test]
async fn pipelined_requests_are_all_answered_in_order() {
    let server = TestServer::start().await;
    let _brokers = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    let mut batch = Vec::new();
    for opaque in 1..=100 {
        let mut cmd = match opaque % 4 {
            0 => request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicTest")], None),
            1 => request(RequestCode::GetBrokerClusterInfo, &[], None),
            2 => request(RequestCode::GetKvConfig, &[("namespace", "ns"), ("key", "k")], None),
            _ => {
                let mut c = request(RequestCode::GetKvConfig, &[], None);
                c.code = 4242;
                c
            }
        };
        cmd.opaque = opaque;
        batch.extend_from_slice(&remoting::frame::encode_to_bytes(&cmd).expect("encode"));
    }
    raw.write(&batch).await;
    for opaque in 1..=100 {
        let frame = raw.read_frame().await.expect("every request answered");
        let resp = decode(&frame);
        assert_eq!(resp.opaque, opaque);
        let expected = match opaque % 4 {
            0 | 1 => 0,
            2 => 22,
            _ => 3,
        };
        assert_eq!(resp.code, expected, "opaque {opaque}");
    }
}

#[tokio::test]
async fn frames_with_the_response_flag_are_dropped_silently() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let mut stray = RemotingCommand::response(remoting::ResponseCode::Success, None);
    stray.opaque = 55;
    raw.send(&stray).await;
    let mut stray_request_code = request(RequestCode::GetBrokerClusterInfo, &[], None);
    stray_request_code.flag = 1;
    stray_request_code.opaque = 56;
    raw.send(&stray_request_code).await;

    let frame = raw.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(decode(&frame).opaque, 1);
}

#[tokio::test]
async fn malformed_frames_close_only_their_own_connection() {
    let server = TestServer::start().await;
    let mut good = server.connect().await;
    let probes: [(&str, Vec<u8>); 9] = [
        ("frame above the limit", hex("00FFFFFD 00000000 00000000")),
        ("high bit set", hex("80000000 00000000 00000000")),
        ("frame shorter than 4", hex("00000002 0000 00000000 0000")),
        ("unknown serialize type", hex("00000008 05000004 7b7d2020")),
        ("header longer than frame", hex("00000008 00000005 7b7d2020")),
        ("null JSON header", hex("00000008 00000004 6e756c6c")),
        ("empty JSON header", hex("00000004 00000000 00000000")),
        ("top-level array header", json_frame(r#"[{"code":106}]"#)),
        ("trailing garbage after header", json_frame(r#"{"code":106} x"#)),
    ];
    for (what, bytes) in probes {
        let mut bad = server.connect_raw().await;
        bad.write(&bytes).await;
        assert!(bad.is_closed_by_server().await, "{what}: closed, no reply");
        let resp = good.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
        assert_eq!(resp.code, 0, "{what}: other connections keep working");
    }
}

// Paused time: the waits below end only once the server has nothing left to do, so a slow
// machine cannot make "nothing came back" pass before the server even read the prefix.
#[tokio::test(start_paused = true)]
async fn frame_at_the_length_limit_is_not_refused_at_the_prefix() {
    let server = TestServer::start().await;
    let mut at_limit = server.connect_raw().await;
    at_limit.write(&hex("00FFFFFC 00000004")).await;
    let mut over = server.connect_raw().await;
    over.write(&hex("00FFFFFD 00000004")).await;
    assert!(over.is_closed_by_server().await);
    // The connection at the limit is still waiting for its 16 MiB: nothing came back.
    assert!(at_limit.read_frame_within(Duration::from_millis(200)).await.is_none());
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1];
    let still_open =
        tokio::time::timeout(Duration::from_millis(100), at_limit.stream.read(&mut buf))
            .await
            .is_err();
    assert!(still_open, "a frame of exactly 16 777 212 bytes is allowed");
}

#[tokio::test]
async fn go_client_header_is_answered_in_json() {
    let server = TestServer::start().await;
    let _brokers = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    // TV-09.
    let frame = json_frame(
        r#"{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}"#,
    );
    assert_eq!(&frame[..8], &hex("00000070 0000006c")[..]);
    raw.write(&frame).await;
    let answer = raw.read_frame().await.expect("answer");
    assert_eq!(&answer[..8], &hex("0000017e 0000005f")[..], "TV-11");
    assert_eq!(
        header_json(&answer),
        r#"{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(String::from_utf8_lossy(frame_body(&answer)), TV12);
}

#[tokio::test]
async fn node_client_header_with_number_and_boolean_ext_values_is_answered() {
    let server = TestServer::start().await;
    let _brokers = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    // TV-10 and its variant.
    let plain = json_frame(
        r#"{"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":{"topic":"TopicTest"}}"#,
    );
    assert_eq!(&plain[..8], &hex("00000066 00000062")[..]);
    let variant = json_frame(
        r#"{"code":105,"language":"JAVA","opaque":2,"flag":0,"version":121,"extFields":{"topic":"TopicTest","queueId":0,"unitMode":false}}"#,
    );
    raw.write(&plain).await;
    raw.write(&variant).await;
    for opaque in 1..=2 {
        let answer = raw.read_frame().await.expect("answer");
        assert_eq!(frame_type(&answer), 0, "JSON answer");
        let resp = decode(&answer);
        assert_eq!((resp.opaque, resp.code), (opaque, 0));
        assert_eq!(String::from_utf8_lossy(resp.body_bytes()), TV12);
    }
}

#[tokio::test]
async fn lenient_json_headers_are_accepted() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let headers = [
        // rocketmq-rust: explicit nulls, RUST language.
        r#"{"code":106,"language":"RUST","version":479,"opaque":1,"flag":0,"remark":null,"extFields":null,"serializeTypeCurrentRPC":"JSON"}"#,
        // errata B8: trailing comma, numeric string code, language as an ordinal.
        r#"{"code":"106","language":9,"opaque":2,"flag":0,"version":479,}"#,
        // Unknown keys, lowercase language, trailing whitespace.
        "{\"opaque\":3,\"code\":106,\"language\":\"java\",\"whatever\":[1,2]} \n",
    ];
    for (i, header) in headers.iter().enumerate() {
        raw.write(&json_frame(header)).await;
        let resp = decode(&raw.read_frame().await.expect("answer"));
        assert_eq!(resp.opaque, i as i32 + 1, "{header}");
        assert_eq!(resp.code, 0, "{header}");
    }
}

#[tokio::test]
async fn binary_header_request_gets_a_json_answer() {
    let server = TestServer::start().await;
    let _brokers = register_tv12(&server).await;
    let mut raw = server.connect_raw().await;
    let mut cmd = request(RequestCode::GetRouteinfoByTopic, &[("topic", "TopicTest")], None);
    cmd.serialize_type = SerializeType::RocketMq;
    cmd.version = 317;
    cmd.opaque = 1;
    let sent = remoting::frame::encode_to_bytes(&cmd).expect("encode");
    assert_eq!(sent[4], 1, "a ROCKETMQ binary request");
    let answer = raw.call_as_is(&cmd).await;
    assert_eq!(frame_type(&answer), 0, "answers are JSON by default, not mirrored");
    assert_eq!(
        header_json(&answer),
        r#"{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(String::from_utf8_lossy(frame_body(&answer)), TV12);
}

#[tokio::test]
async fn unknown_codes_are_not_supported_with_a_leading_space_remark() {
    let server = TestServer::start().await;
    let mut raw = server.connect_raw().await;
    let mut cmd = request(RequestCode::GetKvConfig, &[], None);
    cmd.code = 999;
    cmd.opaque = 7;
    let frame = raw.call_as_is(&cmd).await;
    // TV-17.
    assert_eq!(&frame[..8], &hex("0000008e 0000008a")[..]);
    assert_eq!(
        header_json(&frame),
        r#"{"code":3,"flag":1,"language":"JAVA","opaque":7,"remark":" request type 999 not supported","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    // Codes the nameserver only sends, and odd values, are unknown too.
    for code in [905, 0, -1, 1001, i32::MAX] {
        let mut cmd = request(RequestCode::GetKvConfig, &[], None);
        cmd.code = code;
        let resp = decode(&raw.call(cmd).await);
        assert_eq!(resp.code, 3, "{code}");
        assert_eq!(resp.remark, Some(format!(" request type {code} not supported")));
        assert!(resp.ext_fields.is_none());
    }
}

#[tokio::test(start_paused = true)]
async fn idle_connection_is_closed_after_server_channel_max_idle_time() {
    let server = TestServer::start_with(|c| c.server_channel_max_idle_time_seconds = 1).await;
    let mut idle = server.connect_raw().await;
    let mut busy = server.connect_raw().await;
    let started = Instant::now();

    // The busy connection talks every 400 ms for 3 s and stays open.
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        let frame = busy.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
        assert_eq!(decode(&frame).code, 0);
    }
    assert!(idle.is_closed_by_server().await, "idle connection closed");
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(1), "not before 1 s: {elapsed:?}");

    // A fresh connection is closed after about one second of silence, not before.
    let mut fresh = server.connect_raw().await;
    let opened = Instant::now();
    assert!(fresh.is_closed_by_server().await);
    let waited = opened.elapsed();
    assert!(waited >= Duration::from_secs(1) && waited < Duration::from_secs(3), "{waited:?}");
}

/// Bytes from hex text; spaces are ignored.
fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).expect("ascii");
            u8::from_str_radix(s, 16).expect("hex digit pair")
        })
        .collect()
}

#[tokio::test]
async fn a_closed_connection_does_not_disturb_others() {
    let server = TestServer::start().await;
    let mut a = RawConn::connect(server.addr).await;
    let mut b = server.connect().await;
    a.send(&request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    drop(a);
    let resp = b.call(request(RequestCode::GetBrokerClusterInfo, &[], None)).await;
    assert_eq!(resp.code, 0);
}
