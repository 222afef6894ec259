//! Golden wire vectors: remoting-protocol §12 (TV-01…TV-11, TV-17…TV-19, TV-26…TV-28) and the
//! exact response headers of errata §C, A3 and A4, asserted byte for byte.

use bytes::{Bytes, BytesMut};
use remoting::frame::{decode_frame, encode_to_bytes, header_info};
use remoting::header::{binary, json};
use remoting::headers::{
    CommandHeader, GetKvConfigResponseHeader, GetRouteInfoRequestHeader,
    QueryDataVersionResponseHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use remoting::{
    ExtFields, LanguageCode, RemotingCodec, RemotingCommand, RequestCode, ResponseCode,
    SerializeType,
};
use tokio_util::codec::Decoder;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn ext(pairs: &[(&str, &str)]) -> ExtFields {
    pairs.iter().copied().collect()
}

fn json_header(cmd: &RemotingCommand) -> String {
    String::from_utf8(json::encode_to_vec(cmd)).unwrap()
}

fn binary_header(cmd: &RemotingCommand) -> Vec<u8> {
    let mut out = Vec::new();
    binary::encode(cmd, &mut out).unwrap();
    out
}

/// A frame carrying `header` as JSON and `body`, built by hand (prefix + header-info + bytes).
fn json_frame(header: &str, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + header.len() + body.len()) as u32).to_be_bytes());
    f.extend_from_slice(&header_info(header.len() as u32, SerializeType::Json).to_be_bytes());
    f.extend_from_slice(header.as_bytes());
    f.extend_from_slice(body);
    f
}

/// A NameServer response (JAVA, version 479, flag 1) to a request with `opaque`.
fn response(code: ResponseCode, remark: Option<&str>, opaque: i32) -> RemotingCommand {
    let request = RemotingCommand::default().with_opaque(opaque);
    RemotingCommand::response(code, remark.map(str::to_owned)).respond_to(&request)
}

/// The TV-03 command: code 103, JAVA, version 2333, opaque 0, flag 0.
fn tv03_command() -> RemotingCommand {
    RemotingCommand {
        code: 103,
        version: 2333,
        serialize_type: SerializeType::RocketMq,
        ..Default::default()
    }
}

#[test]
fn tv01_tv02_header_info_marks_the_protocol_type() {
    assert_eq!(header_info(261, SerializeType::Json).to_be_bytes(), [0x00, 0x00, 0x01, 0x05]);
    assert_eq!(
        header_info(16_777_215, SerializeType::RocketMq).to_be_bytes(),
        [0x01, 0xFF, 0xFF, 0xFF]
    );
}

#[test]
fn tv03_binary_header_without_remark_or_ext() {
    let bytes = hex("00 67 00 09 1d 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00");
    assert_eq!(binary_header(&tv03_command()), bytes);
    let back = binary::decode(&bytes).unwrap();
    assert_eq!(back, tv03_command());
    assert_eq!((back.remark, back.ext_fields), (None, None));
}

#[test]
fn tv04_binary_header_with_remark() {
    let cmd = RemotingCommand { remark: Some("Sample Remark".into()), ..tv03_command() };
    let bytes = hex(
        "00 67 00 09 1d 00 00 00 00 00 00 00 00 00 00 00 0d 53 61 6d 70 6c 65 20 52 65 6d 61 72 6b 00 00 00 00",
    );
    assert_eq!(binary_header(&cmd), bytes);
    assert_eq!(binary::decode(&bytes).unwrap(), cmd);
}

#[test]
fn tv05_tv06_binary_header_with_ext_and_its_frame() {
    let cmd = RemotingCommand { ext_fields: Some(ext(&[("key", "value")])), ..tv03_command() };
    let header = hex(
        "00 67 00 09 1d 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 0e 00 03 6b 65 79 00 00 00 05 76 61 6c 75 65",
    );
    assert_eq!(binary_header(&cmd), header);
    assert_eq!(binary::decode(&header).unwrap(), cmd);

    let mut frame = hex("00 00 00 27 01 00 00 23");
    frame.extend_from_slice(&header);
    assert_eq!(&encode_to_bytes(&cmd).unwrap()[..], &frame[..]);
    assert_eq!(decode_frame(&frame).unwrap(), cmd);
}

#[test]
fn tv07_binary_header_with_remark_ext_and_flags() {
    let cmd = RemotingCommand {
        code: 1,
        version: 99,
        opaque: 1001,
        flag: 3,
        remark: Some("remark".into()),
        ext_fields: Some(ext(&[("str", "s1"), ("num", "100")])),
        serialize_type: SerializeType::RocketMq,
        ..Default::default()
    };
    let bytes =
        hex("00 01 00 00 63 00 00 03 e9 00 00 00 03 00 00 00 06 72 65 6d 61 72 6b 00 00 00 17 \
         00 03 73 74 72 00 00 00 02 73 31 00 03 6e 75 6d 00 00 00 03 31 30 30");
    assert_eq!(bytes.len(), 50);
    assert_eq!(binary_header(&cmd), bytes);
    let back = binary::decode(&bytes).unwrap();
    assert_eq!(back, cmd);
    assert!(back.is_response() && back.is_oneway());
}

const TV08: &str = r#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#;

#[test]
fn tv08_java_client_route_request_json_header_and_prefix() {
    let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic).with_opaque(1);
    cmd = cmd.with_header(&GetRouteInfoRequestHeader {
        topic: Some("TopicTest".into()),
        accept_standard_json_only: None,
    });
    assert_eq!(json_header(&cmd), TV08);
    assert_eq!(TV08.len(), 131);
    let frame = encode_to_bytes(&cmd).unwrap();
    assert_eq!(frame[..8], hex("00 00 00 87 00 00 00 83")[..]);
    assert_eq!(frame.len(), 4 + 4 + 131);
    let back = decode_frame(&frame).unwrap();
    assert_eq!(back, cmd);
    assert_eq!(
        back.decode_header::<GetRouteInfoRequestHeader>().topic.as_deref(),
        Some("TopicTest")
    );
}

#[test]
fn tv09_go_client_request_decodes() {
    let header = r#"{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}"#;
    assert_eq!(header.len(), 108);
    let frame = json_frame(header, b"");
    assert_eq!(frame[..8], hex("00 00 00 70 00 00 00 6c")[..]);
    let cmd = decode_frame(&frame).unwrap();
    assert_eq!(
        (cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag),
        (105, LanguageCode::Go, 317, 1, 0)
    );
    assert_eq!(cmd.remark.as_deref(), Some(""));
    assert_eq!(cmd.ext_fields, Some(ext(&[("topic", "TopicTest")])));
    assert_eq!((cmd.body, cmd.serialize_type), (None, SerializeType::Json));
}

#[test]
fn tv10_node_client_request_decodes_including_non_string_ext_values() {
    let header = r#"{"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":{"topic":"TopicTest"}}"#;
    assert_eq!(header.len(), 98);
    let frame = json_frame(header, b"");
    assert_eq!(frame[..8], hex("00 00 00 66 00 00 00 62")[..]);
    let cmd = decode_frame(&frame).unwrap();
    assert_eq!(
        (cmd.code, cmd.language, cmd.version, cmd.opaque),
        (105, LanguageCode::Java, 121, 1)
    );
    assert_eq!(cmd.remark, None);
    assert_eq!(cmd.ext("topic"), Some("TopicTest"));

    let variant = r#"{"code":105,"language":"JAVA","opaque":1,"flag":0,"version":121,"extFields":{"topic":"TopicTest","queueId":0,"unitMode":false}}"#;
    let cmd = decode_frame(&json_frame(variant, b"")).unwrap();
    assert_eq!(
        cmd.ext_fields,
        Some(ext(&[("topic", "TopicTest"), ("queueId", "0"), ("unitMode", "false")]))
    );
}

const TV12: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;
const TV13: &str = r#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.47:10911","1":"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;

#[test]
fn tv11_success_response_header_and_prefixes_with_route_bodies() {
    let cmd = response(ResponseCode::Success, None, 1);
    let header = json_header(&cmd);
    assert_eq!(
        header,
        r#"{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(header.len(), 95);
    assert_eq!((TV12.len(), TV13.len()), (283, 287));

    let legacy = encode_to_bytes(&cmd.clone().with_body(TV12)).unwrap();
    assert_eq!(legacy[..8], hex("00 00 01 7e 00 00 00 5f")[..]);
    assert_eq!(&legacy[8 + 95..], TV12.as_bytes());
    let standard = encode_to_bytes(&cmd.with_body(TV13)).unwrap();
    assert_eq!(standard[..8], hex("00 00 01 82 00 00 00 5f")[..]);
    assert_eq!(decode_frame(&standard).unwrap().body.as_deref(), Some(TV13.as_bytes()));
}

#[test]
fn tv17_unsupported_code_response() {
    let cmd =
        response(ResponseCode::RequestCodeNotSupported, Some(" request type 999 not supported"), 7);
    let want = r#"{"code":3,"flag":1,"language":"JAVA","opaque":7,"remark":" request type 999 not supported","serializeTypeCurrentRPC":"JSON","version":479}"#;
    assert_eq!(json_header(&cmd), want);
    assert_eq!(want.len(), 138);
    assert_eq!(encode_to_bytes(&cmd).unwrap()[..8], hex("00 00 00 8e 00 00 00 8a")[..]);
}

#[test]
fn tv18_topic_not_exist_response_escapes_the_newline() {
    let remark = "No topic route info in name server for the topic: TopicTest\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";
    let cmd = response(ResponseCode::TopicNotExist, Some(remark), 1);
    let want = r#"{"code":17,"flag":1,"language":"JAVA","opaque":1,"remark":"No topic route info in name server for the topic: TopicTest\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.","serializeTypeCurrentRPC":"JSON","version":479}"#;
    assert_eq!(json_header(&cmd), want);
    assert_eq!(want.len(), 245);
    assert_eq!(encode_to_bytes(&cmd).unwrap()[..8], hex("00 00 00 f9 00 00 00 f5")[..]);
    assert_eq!(
        decode_frame(&encode_to_bytes(&cmd).unwrap()).unwrap().remark.as_deref(),
        Some(remark)
    );
}

const TV19: &str = r#"{"code":103,"extFields":{"brokerId":"0","bodyCrc32":"1188899506","clusterName":"DefaultCluster","brokerAddr":"192.168.0.47:10911","enableActingMaster":"false","haServerAddr":"192.168.0.47:10912","compressed":"false","brokerName":"broker-a"},"flag":0,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#;

fn tv19_header() -> RegisterBrokerRequestHeader {
    RegisterBrokerRequestHeader {
        broker_name: Some("broker-a".into()),
        broker_addr: Some("192.168.0.47:10911".into()),
        cluster_name: Some("DefaultCluster".into()),
        ha_server_addr: Some("192.168.0.47:10912".into()),
        broker_id: Some(0),
        heartbeat_timeout_millis: None,
        enable_acting_master: Some(false),
        compressed: Some(false),
        body_crc32: Some(1_188_899_506),
    }
}

#[test]
fn tv19_register_broker_request_header_bytes_and_prefix() {
    let cmd = RemotingCommand::request(RequestCode::RegisterBroker)
        .with_opaque(5)
        .with_header(&tv19_header());
    assert_eq!(json_header(&cmd), TV19);
    assert_eq!(TV19.len(), 326);
    // The 449-byte RegisterBrokerBody itself is the bodies module's vector; only its length matters here.
    let frame = encode_to_bytes(&cmd.with_body(vec![b'x'; 449])).unwrap();
    assert_eq!(frame[..8], hex("00 00 03 0b 00 00 01 46")[..]);
    let back = decode_frame(&frame).unwrap();
    assert_eq!(back.decode_header::<RegisterBrokerRequestHeader>(), tv19_header());
    assert_eq!(back.body.map(|b| b.len()), Some(449));
}

/// Errata §C: response headers when the handler's response has a header class.
#[test]
fn errata_c_response_headers_with_a_header_class() {
    let cases: Vec<(RemotingCommand, &str, usize)> = vec![
        (
            response(ResponseCode::Success, None, 5)
                .with_header(&RegisterBrokerResponseHeader::default()),
            r#"{"code":0,"extFields":{},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            110,
        ),
        (
            response(ResponseCode::Success, None, 5).with_header(&RegisterBrokerResponseHeader {
                master_addr: Some("192.168.0.47:10911".into()),
                ha_server_addr: Some("192.168.0.47:10912".into()),
            }),
            r#"{"code":0,"extFields":{"haServerAddr":"192.168.0.47:10912","masterAddr":"192.168.0.47:10911"},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            179,
        ),
        (
            response(ResponseCode::SystemError, Some("crc32 not match"), 5)
                .with_header(&RegisterBrokerResponseHeader::default()),
            r#"{"code":1,"extFields":{},"flag":1,"language":"JAVA","opaque":5,"remark":"crc32 not match","serializeTypeCurrentRPC":"JSON","version":479}"#,
            137,
        ),
        (
            response(ResponseCode::QueryNotFound, Some("No config item, Namespace: ns Key: k"), 2)
                .with_header(&GetKvConfigResponseHeader::default()),
            r#"{"code":22,"extFields":{},"flag":1,"language":"JAVA","opaque":2,"remark":"No config item, Namespace: ns Key: k","serializeTypeCurrentRPC":"JSON","version":479}"#,
            159,
        ),
        (
            response(ResponseCode::Success, None, 2)
                .with_header(&GetKvConfigResponseHeader { value: Some("v1".into()) }),
            r#"{"code":0,"extFields":{"value":"v1"},"flag":1,"language":"JAVA","opaque":2,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            122,
        ),
        (
            response(ResponseCode::Success, None, 5)
                .with_header(&WipeWritePermOfBrokerResponseHeader { wipe_topic_count: Some(3) }),
            r#"{"code":0,"extFields":{"wipeTopicCount":"3"},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            130,
        ),
        (
            response(ResponseCode::Success, None, 5)
                .with_header(&QueryDataVersionResponseHeader { changed: Some(true) }),
            r#"{"code":0,"extFields":{"changed":"true"},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            126,
        ),
    ];
    for (cmd, want, len) in cases {
        assert_eq!(json_header(&cmd), want);
        assert_eq!(want.len(), len, "{want}");
        let frame = encode_to_bytes(&cmd).unwrap();
        assert_eq!(frame.len(), 8 + len);
        assert_eq!(decode_frame(&frame).unwrap(), cmd);
    }
}

/// Errata §C, last row: the ROCKETMQ-binary master REGISTER_BROKER response (empty map → extLen 0).
#[test]
fn errata_c_binary_register_broker_response() {
    let mut cmd = response(ResponseCode::Success, None, 5)
        .with_header(&RegisterBrokerResponseHeader::default());
    cmd.serialize_type = SerializeType::RocketMq;
    let frame = encode_to_bytes(&cmd).unwrap();
    assert_eq!(
        &frame[..],
        &hex("00000019 01000015 0000 00 01df 00000005 00000001 00000000 00000000")[..]
    );
    let back = decode_frame(&frame).unwrap();
    assert_eq!(back.ext_fields, None, "an empty binary map decodes as no map");
    assert_eq!((back.code, back.version, back.opaque, back.flag), (0, 479, 5, 1));
}

/// Errata A3 and A4: the plain 904 success and the 901 remark quirk.
#[test]
fn errata_a3_a4_heartbeat_and_member_group_response_headers() {
    assert_eq!(
        json_header(&response(ResponseCode::Success, None, 9)),
        r#"{"code":0,"flag":1,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    assert_eq!(
        json_header(&response(ResponseCode::Success, Some("not set any response code"), 2)),
        r#"{"code":0,"flag":1,"language":"JAVA","opaque":2,"remark":"not set any response code","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
}

#[test]
fn typed_response_headers_decode_from_the_wire() {
    let frame = encode_to_bytes(
        &response(ResponseCode::Success, None, 5)
            .with_header(&WipeWritePermOfBrokerResponseHeader { wipe_topic_count: Some(3) }),
    )
    .unwrap();
    let back = decode_frame(&frame).unwrap();
    assert_eq!(
        WipeWritePermOfBrokerResponseHeader::from_ext(back.ext_fields.as_ref()).wipe_topic_count,
        Some(3)
    );
}

/// TV-26: frame-length boundaries and the bad-frame probes (each an error, never a reply).
#[test]
fn tv26_frame_length_boundary_and_bad_frames() {
    let mut codec = RemotingCodec::new();
    let mut buf = BytesMut::from(&hex("00 FF FF FC")[..]);
    assert!(
        codec.decode(&mut buf).unwrap().is_none(),
        "16 777 212 is accepted: wait for the frame"
    );

    for probe in [
        "00 FF FF FD",
        "80 00 00 00",
        "00 00 00 08 05 00 00 04 7b 7d 20 20",
        "00 00 00 08 00 00 00 05 7b 7d 20 20",
        "00 00 00 08 00 00 00 04 6e 75 6c 6c",
    ] {
        let mut codec = RemotingCodec::new();
        let mut buf = BytesMut::from(&hex(probe)[..]);
        assert!(codec.decode(&mut buf).is_err(), "accepted {probe}");
    }
}

#[test]
fn tv26_a_valid_12_byte_probe_decodes() {
    // Same shape as the probes above, but type 0, header `{}` and a 2-byte body.
    let mut buf = BytesMut::from(&hex("00 00 00 08 00 00 00 02 7b 7d 20 20")[..]);
    let cmd = RemotingCodec::new().decode(&mut buf).unwrap().unwrap();
    assert_eq!(cmd.body, Some(Bytes::from_static(b"  ")));
}

/// TV-27: an empty remark is written like none; a zero-length ext value reads as absent.
#[test]
fn tv27_empty_remark_and_zero_length_ext_value() {
    let cmd = RemotingCommand { remark: Some(String::new()), ..tv03_command() };
    assert_eq!(binary_header(&cmd), binary_header(&tv03_command()));
    assert_eq!(binary::decode(&binary_header(&cmd)).unwrap().remark, None);

    let mut header = hex("00 67 00 09 1d 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 07");
    header.extend_from_slice(&hex("00 01 6b 00 00 00 00"));
    let back = binary::decode(&header).unwrap();
    assert_eq!(back.ext("k"), None);
}

/// TV-28: language byte 0x0c and JSON name "RUST"; "GO" and "JAVA".
#[test]
fn tv28_language_codes_on_the_wire() {
    let mut header = binary_header(&tv03_command());
    header[2] = 0x0c;
    assert_eq!(binary::decode(&header).unwrap().language, LanguageCode::Rust);
    let rust = RemotingCommand { language: LanguageCode::Rust, ..tv03_command() };
    assert_eq!(binary_header(&rust)[2], 0x0c);
    assert_eq!(json::decode(br#"{"language":"RUST"}"#).unwrap().language, LanguageCode::Rust);
    assert!(json_header(&rust).contains(r#""language":"RUST""#));
    assert_eq!(json::decode(br#"{"language":"GO"}"#).unwrap().language.to_u8(), 9);
    assert_eq!(json::decode(br#"{"language":"JAVA"}"#).unwrap().language.to_u8(), 0);
}

/// Errata B8: what the JSON header parser accepts and rejects.
#[test]
fn errata_b8_json_header_acceptance() {
    for ok in [
        r#"{"code":105,}"#,
        r#"{code:105}"#,
        r#"{'code':105}"#,
        r#"{"code":"105"}"#,
        "{\"code\":105}\n",
    ] {
        assert_eq!(json::decode(ok.as_bytes()).unwrap().code, 105, "{ok}");
    }
    assert_eq!(json::decode(br#"{"language":9}"#).unwrap().language, LanguageCode::Go);
    assert_eq!(json::decode(br#"{"language":"java"}"#).unwrap().language, LanguageCode::Java);
    assert_eq!(json::decode(br#"{"extFields":{"a":[1,2]}}"#).unwrap().ext("a"), Some("[1,2]"));
    for bad in [r#"{"code":105} x"#, r#"{"code":105}{}"#, "[]", "", "null"] {
        assert!(json::decode(bad.as_bytes()).is_err(), "accepted {bad:?}");
    }
}
