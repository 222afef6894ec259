//! Golden vectors for the JSON bodies (remoting-protocol §8, §9, §12 and errata): exact legacy and
//! standard bytes, lenient reading, the compressed RegisterBrokerBody and the body CRC.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use remoting::body::{
    body_crc32, body_crc32_matches, from_json, to_legacy_json, to_standard_json, BodyError,
    BrokerData, BrokerMemberGroup, ClusterInfo, DataVersion, GetBrokerMemberGroupResponseBody,
    IntKeyMap, KvTable, QueueData, RegisterBrokerBody, TopicConfig,
    TopicConfigAndMappingSerializeWrapper, TopicFilterType, TopicList, TopicQueueMappingInfo,
    TopicRouteData,
};
use serde::{Deserialize, Serialize};

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("JSON output is UTF-8")
}

fn legacy<T: Serialize>(v: &T) -> String {
    text(to_legacy_json(v))
}

fn standard<T: Serialize>(v: &T) -> String {
    text(to_standard_json(v))
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn addrs(entries: &[(i64, &str)]) -> IntKeyMap<i64, String> {
    entries.iter().map(|(k, v)| (*k, (*v).to_owned())).collect()
}

fn queue_a() -> QueueData {
    QueueData {
        broker_name: "broker-a".into(),
        perm: 6,
        read_queue_nums: 8,
        topic_sys_flag: 0,
        write_queue_nums: 8,
    }
}

/// The data of Java test `TopicRouteDataTest`.
fn route_tv12() -> TopicRouteData {
    TopicRouteData {
        broker_datas: vec![BrokerData {
            broker_addrs: addrs(&[(0, "192.168.0.47:10911"), (1, "192.168.0.47:10921")]),
            broker_name: "broker-a".into(),
            cluster: "TestCluster".into(),
            enable_acting_master: false,
            zone_name: None,
        }],
        filter_server_table: BTreeMap::new(),
        order_topic_conf: None,
        queue_datas: vec![queue_a()],
        topic_queue_mapping_by_broker: None,
    }
}

const TV12: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;
const TV13: &str = r#"{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.47:10911","1":"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;

#[test]
fn tv12_legacy_route_body_is_byte_exact() {
    assert_eq!(legacy(&route_tv12()), TV12);
    assert_eq!(TV12.len(), 283);
}

#[test]
fn tv13_standard_route_body_is_byte_exact() {
    assert_eq!(standard(&route_tv12()), TV13);
    assert_eq!(TV13.len(), 287);
}

#[test]
fn tv12_and_tv13_both_read_back_to_the_same_route() {
    assert_eq!(from_json::<TopicRouteData>(TV12.as_bytes()).unwrap(), route_tv12());
    assert_eq!(from_json::<TopicRouteData>(TV13.as_bytes()).unwrap(), route_tv12());
}

#[test]
fn tv13_int_key_order_is_jdk_hashmap_in_legacy_and_numeric_in_standard() {
    let bd = BrokerMemberGroup {
        broker_addrs: addrs(&[(10, "a"), (2, "b"), (16, "c")]),
        broker_name: "x".into(),
        cluster: "c".into(),
    };
    assert_eq!(
        legacy(&bd),
        r#"{"brokerAddrs":{16:"c",2:"b",10:"a"},"brokerName":"x","cluster":"c"}"#
    );
    assert_eq!(
        standard(&bd),
        r#"{"brokerAddrs":{"2":"b","10":"a","16":"c"},"brokerName":"x","cluster":"c"}"#
    );
}

#[test]
fn legacy_int_key_order_follows_hashmap_resize_and_long_hash() {
    // 13 entries pass the 0.75 threshold of 16: the table has 32 buckets, so 16 and 17 sort
    // after 15 instead of landing in buckets 0 and 1.
    let m: IntKeyMap<i64, i32> = (0..13).map(|k| (k * 4 % 52, 0)).collect();
    let order: Vec<i64> = m.jdk_hash_order().into_iter().map(|(k, _)| *k).collect();
    let mut expected: Vec<i64> = m.0.keys().copied().collect();
    expected.sort_by_key(|k| k % 32);
    assert_eq!(order, expected);
    // Long.hashCode(-1) = 0 and Long.hashCode(1 << 32) = 1: bucket 0 before bucket 1 before 2.
    let m: IntKeyMap<i64, i32> = [(2, 0), (1 << 32, 0), (-1, 0)].into_iter().collect();
    let order: Vec<i64> = m.jdk_hash_order().into_iter().map(|(k, _)| *k).collect();
    assert_eq!(order, vec![-1, 1 << 32, 2]);
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct MapHolder {
    map: IntKeyMap<i64, String>,
}

#[test]
fn tv14_long_keyed_map_is_unquoted_in_legacy_and_quoted_in_standard() {
    let v = MapHolder { map: addrs(&[(0, "Test")]) };
    assert_eq!(legacy(&v), r#"{"map":{0:"Test"}}"#);
    assert_eq!(standard(&v), r#"{"map":{"0":"Test"}}"#);
    assert!(
        serde_json::from_slice::<serde_json::Value>(&to_legacy_json(&v)).is_err(),
        "legacy is not strict JSON"
    );
    assert!(serde_json::from_slice::<serde_json::Value>(&to_standard_json(&v)).is_ok());
    assert_eq!(from_json::<MapHolder>(br#"{"map":{0:"Test"}}"#).unwrap(), v);
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StringListHolder {
    string_list: Vec<String>,
}

#[test]
fn tv15_string_list_is_written_in_list_order() {
    let v =
        StringListHolder { string_list: ["a", "o", "e", "i", "u", "v"].map(String::from).to_vec() };
    assert_eq!(legacy(&v), r#"{"stringList":["a","o","e","i","u","v"]}"#);
}

#[test]
fn tv20_masked_crc32_of_check_string_and_empty_input() {
    assert_eq!(body_crc32(b"123456789"), 1_274_296_614);
    assert_eq!(body_crc32(b""), 0);
}

#[test]
fn crc_check_skips_zero_and_treats_missing_body_as_zero() {
    assert!(body_crc32_matches(Some(b"anything"), 0));
    assert!(body_crc32_matches(Some(b"123456789"), 1_274_296_614));
    assert!(!body_crc32_matches(Some(b"123456780"), 1_274_296_614));
    assert!(!body_crc32_matches(None, 5));
}

const TV21_JSON: &str = r#"{"attributes":{},"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG","topicName":"0","topicSysFlag":0,"writeQueueNums":16}"#;

#[test]
fn tv21_default_topic_config_in_json_and_compact_form() {
    let tc = TopicConfig::named("0");
    assert_eq!(legacy(&tc), TV21_JSON);
    assert_eq!(tc.encode_compact(), "0 16 16 6 SINGLE_TAG {}");
    assert_eq!(TopicConfig::decode_compact("0 16 16 6 SINGLE_TAG {}").unwrap(), tc);
    assert_eq!(from_json::<TopicConfig>(TV21_JSON.as_bytes()).unwrap(), tc);
}

#[test]
fn tv21_null_attributes_end_the_compact_form_in_a_space() {
    let tc = TopicConfig { attributes: None, ..TopicConfig::named("0") };
    assert_eq!(tc.encode_compact(), "0 16 16 6 SINGLE_TAG ");
    // Java split drops the trailing empty part, and `new TopicConfig()` starts with `{}`.
    assert_eq!(
        TopicConfig::decode_compact("0 16 16 6 SINGLE_TAG ").unwrap(),
        TopicConfig::named("0")
    );
}

#[test]
fn compact_form_carries_attributes_but_not_sys_flag_or_order() {
    let tc = TopicConfig {
        attributes: Some([("message.type".to_owned(), "FIFO".to_owned())].into()),
        order: true,
        topic_sys_flag: 3,
        topic_filter_type: TopicFilterType::MultiTag,
        ..TopicConfig::named("T")
    };
    let line = tc.encode_compact();
    assert_eq!(line, r#"T 16 16 6 MULTI_TAG {"message.type":"FIFO"}"#);
    let back = TopicConfig::decode_compact(&line).unwrap();
    assert_eq!(back, TopicConfig { order: false, topic_sys_flag: 0, ..tc });
}

#[test]
fn b2_bad_compact_lines_fail_but_bad_attributes_are_ignored() {
    for bad in [
        "",
        "T 1 1 6",
        "T x 1 6 SINGLE_TAG",
        "T 1 1 6.0 SINGLE_TAG {}",
        "T 1 1 6 single_tag {}",
        "T 1  1 6 SINGLE_TAG",
    ] {
        assert!(
            matches!(TopicConfig::decode_compact(bad), Err(BodyError::CompactTopicConfig { .. })),
            "{bad:?} must be rejected"
        );
    }
    let tc = TopicConfig::decode_compact(r#"T 1 2 6 SINGLE_TAG {"k":"a b"}"#).unwrap();
    assert_eq!(tc.attributes, Some(BTreeMap::new()));
    let tc = TopicConfig::decode_compact("T 1 2 6 SINGLE_TAG not-json").unwrap();
    assert_eq!(tc.attributes, Some(BTreeMap::new()));
    assert_eq!((tc.read_queue_nums, tc.write_queue_nums), (1, 2));
}

const TV22_PLAIN: &str = "000000387b22636f756e746572223a312c22737461746556657273696f6e223a302c2274696d657374616d70223a313730303030303030303030307d000000010000001d546f706963546573742034203420362053494e474c455f544147207b7d000000025b5d00000000";
const TV22_ZLIB: &str = "78da636060b0a8564ace2fcd2b492d52b232d4512a2e492c490d4b2d2acecccf53b232d0512ac9cc4d050ae61600a5cd0d10a09681818111886543f20b329343806a144c80d04c21d8d3cfddc7353ec4d15da11aa488293a164832000052771b61";

fn body_tv22() -> RegisterBrokerBody {
    let mut body = RegisterBrokerBody::default();
    let w = &mut body.topic_config_serialize_wrapper;
    w.data_version = DataVersion { counter: 1, state_version: 0, timestamp: 1_700_000_000_000 };
    let tc =
        TopicConfig { read_queue_nums: 4, write_queue_nums: 4, ..TopicConfig::named("TopicTest") };
    std::sync::Arc::make_mut(&mut w.topic_config_table).insert("TopicTest".into(), tc);
    body
}

fn inflate(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(bytes).read_to_end(&mut out).expect("valid zlib");
    out
}

#[test]
fn tv22_jdk_compressed_body_decodes() {
    let zlib = hex(TV22_ZLIB);
    assert_eq!(zlib.len(), 97);
    assert_eq!(body_crc32(&zlib), 164_289_492);
    let body = RegisterBrokerBody::decode_compressed(&zlib, 479).unwrap();
    assert_eq!(body, body_tv22());
    assert_eq!(RegisterBrokerBody::decode(&zlib, true, 479).unwrap(), body_tv22());
}

#[test]
fn tv22_own_encoding_has_the_jdk_plaintext_and_best_compression_header() {
    let zlib = body_tv22().encode_compressed(479);
    assert_eq!(&zlib[..2], &[0x78, 0xDA]);
    assert_eq!(inflate(&zlib), hex(TV22_PLAIN));
    assert_eq!(RegisterBrokerBody::decode_compressed(&zlib, 479).unwrap(), body_tv22());
}

/// Compresses `plain` as a broker would.
fn deflate(plain: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(plain).unwrap();
    z.finish().unwrap()
}

fn block(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&i32::try_from(bytes.len()).unwrap().to_be_bytes());
    out.extend_from_slice(bytes);
}

/// A compressed body whose topic line and filter JSON are given, followed by one mapping.
fn compressed_with(line: &str, filter: &str) -> Vec<u8> {
    let mut p = Vec::new();
    block(&mut p, br#"{"counter":2,"stateVersion":0,"timestamp":5}"#);
    p.extend_from_slice(&1i32.to_be_bytes());
    block(&mut p, line.as_bytes());
    block(&mut p, filter.as_bytes());
    p.extend_from_slice(&1i32.to_be_bytes());
    block(&mut p, br#"{"bname":"broker-a","currIdMap":{0:0},"dirty":false,"epoch":7,"scope":"__global__","topic":"S","totalQueues":1}"#);
    deflate(&p)
}

#[test]
fn compressed_mapping_section_is_read_only_from_version_413() {
    let z = compressed_with("T 4 4 6 SINGLE_TAG {}", "[]");
    let new = RegisterBrokerBody::decode_compressed(&z, 413).unwrap();
    let info = &new.topic_config_serialize_wrapper.topic_queue_mapping_info_map["S"];
    assert_eq!(info.curr_id_map, Some([(0, 0)].into_iter().collect()));
    assert_eq!(info.epoch, 7);
    let old = RegisterBrokerBody::decode_compressed(&z, 412).unwrap();
    assert!(old.topic_config_serialize_wrapper.topic_queue_mapping_info_map.is_empty());
    assert_eq!(old.topic_config_serialize_wrapper.topic_config_table["T"].read_queue_nums, 4);
}

#[test]
fn compressed_filter_list_null_is_none_and_garbage_is_empty() {
    let body = RegisterBrokerBody::decode_compressed(
        &compressed_with("T 4 4 6 SINGLE_TAG {}", "null"),
        479,
    )
    .unwrap();
    assert_eq!(body.filter_server_list, None);
    let body =
        RegisterBrokerBody::decode_compressed(&compressed_with("T 4 4 6 SINGLE_TAG {}", "{x"), 479)
            .unwrap();
    assert_eq!(body.filter_server_list, Some(vec![]));
    let body = RegisterBrokerBody::decode_compressed(
        &compressed_with("T 4 4 6 SINGLE_TAG {}", r#"["f:1"]"#),
        479,
    )
    .unwrap();
    assert_eq!(body.filter_server_list, Some(vec!["f:1".to_owned()]));
}

#[test]
fn compressed_body_with_a_bad_topic_line_is_rejected_whole() {
    let z = compressed_with("T 4 4 6", "[]");
    assert!(matches!(
        RegisterBrokerBody::decode_compressed(&z, 479),
        Err(BodyError::CompactTopicConfig { .. })
    ));
}

#[test]
fn compressed_body_errors_on_truncation_negative_length_and_non_zlib() {
    let full = hex(TV22_PLAIN);
    // Cut inside the topic line.
    let short = deflate(&full[..70]);
    assert!(matches!(
        RegisterBrokerBody::decode_compressed(&short, 479),
        Err(BodyError::Truncated)
    ));
    // Cut the zlib stream itself.
    let zlib = hex(TV22_ZLIB);
    assert!(RegisterBrokerBody::decode_compressed(&zlib[..40], 479).is_err());
    let mut neg = Vec::new();
    neg.extend_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        RegisterBrokerBody::decode_compressed(&deflate(&neg), 479),
        Err(BodyError::NegativeLength(-1))
    ));
    assert!(matches!(
        RegisterBrokerBody::decode_compressed(TV12.as_bytes(), 479),
        Err(BodyError::Inflate(_))
    ));
    assert!(RegisterBrokerBody::decode_compressed(&[], 479).is_err());
}

#[test]
fn compressed_body_with_absurd_count_fails_without_allocating_it() {
    let mut p = Vec::new();
    block(&mut p, br#"{"counter":1}"#);
    p.extend_from_slice(&i32::MAX.to_be_bytes());
    block(&mut p, b"T 1 1 6 SINGLE_TAG");
    p.extend_from_slice(&0x7fff_fff0i32.to_be_bytes());
    assert!(matches!(
        RegisterBrokerBody::decode_compressed(&deflate(&p), 479),
        Err(BodyError::TooLarge(_))
    ));
}

#[test]
fn compressed_body_ignores_a_missing_zlib_trailer_when_every_part_was_read() {
    let zlib = hex(TV22_ZLIB);
    // The last 4 bytes are the Adler-32 trailer; Java never reads that far.
    assert_eq!(
        RegisterBrokerBody::decode_compressed(&zlib[..zlib.len() - 4], 412).unwrap(),
        body_tv22()
    );
}

const TV23: &str = r#"{"brokerAddrTable":{"master":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"master","cluster":"DEFAULT_CLUSTER","enableActingMaster":false}},"clusterAddrTable":{"DEFAULT_CLUSTER":["master"]}}"#;

#[test]
fn tv23_cluster_info_is_byte_exact_and_reads_back() {
    let bd = BrokerData {
        broker_addrs: addrs(&[(0, "127.0.0.1:10911")]),
        broker_name: "master".into(),
        cluster: "DEFAULT_CLUSTER".into(),
        ..BrokerData::default()
    };
    let ci = ClusterInfo {
        broker_addr_table: [("master".to_owned(), bd)].into(),
        cluster_addr_table: [("DEFAULT_CLUSTER".to_owned(), BTreeSet::from(["master".to_owned()]))]
            .into(),
    };
    assert_eq!(legacy(&ci), TV23);
    assert_eq!(from_json::<ClusterInfo>(TV23.as_bytes()).unwrap(), ci);
}

#[test]
fn tv24_kv_table_is_byte_exact() {
    let kv = KvTable {
        table: [("key1", "value1"), ("key2", "value2")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
    };
    assert_eq!(legacy(&kv), r#"{"table":{"key1":"value1","key2":"value2"}}"#);
}

#[test]
fn tv25_zero_data_version_is_byte_exact() {
    assert_eq!(legacy(&DataVersion::default()), r#"{"counter":0,"stateVersion":0,"timestamp":0}"#);
}

#[test]
fn tv29_broker_member_group_body_is_byte_exact() {
    let body = GetBrokerMemberGroupResponseBody {
        broker_member_group: BrokerMemberGroup {
            broker_addrs: addrs(&[(0, "192.168.0.47:10911"), (1, "192.168.0.47:10921")]),
            broker_name: "broker-a".into(),
            cluster: "DefaultCluster".into(),
        },
    };
    assert_eq!(
        legacy(&body),
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );
}

fn route_full() -> TopicRouteData {
    let mut route = route_tv12();
    route.broker_datas[0].zone_name = Some("zone-a".into());
    route
        .filter_server_table
        .insert("192.168.0.47:10911".into(), vec!["192.168.0.47:30000".into()]);
    route.order_topic_conf = Some("broker-a:8".into());
    let info = TopicQueueMappingInfo {
        bname: Some("broker-a".into()),
        curr_id_map: Some([(0, 0), (1, 1)].into_iter().collect()),
        epoch: 1_700_000_000_000,
        topic: Some("TopicTest".into()),
        total_queues: 2,
        ..TopicQueueMappingInfo::default()
    };
    route.topic_queue_mapping_by_broker = Some([("broker-a".to_owned(), info)].into());
    route
}

const ROUTE_FULL_LEGACY: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.47:10911",1:"192.168.0.47:10921"},"brokerName":"broker-a","cluster":"TestCluster","enableActingMaster":false,"zoneName":"zone-a"}],"filterServerTable":{"192.168.0.47:10911":["192.168.0.47:30000"]},"orderTopicConf":"broker-a:8","queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}],"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":1700000000000,"scope":"__global__","topic":"TopicTest","totalQueues":2}}}"#;

#[test]
fn fully_populated_route_is_byte_exact_in_both_forms() {
    assert_eq!(legacy(&route_full()), ROUTE_FULL_LEGACY);
    let std_form = ROUTE_FULL_LEGACY
        .replace(r#"{0:"192"#, r#"{"0":"192"#)
        .replace(r#",1:"192"#, r#","1":"192"#)
        .replace("{0:0,1:1}", r#"{"0":0,"1":1}"#);
    assert_eq!(standard(&route_full()), std_form);
    assert_eq!(from_json::<TopicRouteData>(ROUTE_FULL_LEGACY.as_bytes()).unwrap(), route_full());
    assert_eq!(from_json::<TopicRouteData>(std_form.as_bytes()).unwrap(), route_full());
}

#[test]
fn register_topic_body_is_byte_exact() {
    let route = TopicRouteData { queue_datas: vec![queue_a()], ..TopicRouteData::default() };
    let expected = r#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#;
    assert_eq!(legacy(&route), expected);
    assert_eq!(from_json::<TopicRouteData>(expected.as_bytes()).unwrap(), route);
}

const REGISTER_BODY: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;

#[test]
fn register_broker_body_is_byte_exact_with_its_crc() {
    let mut body = body_tv22();
    body.topic_config_serialize_wrapper.mapping_data_version.timestamp = 1_700_000_000_000;
    let bytes = to_legacy_json(&body);
    assert_eq!(text(bytes.clone()), REGISTER_BODY);
    assert_eq!(bytes.len(), 449);
    assert_eq!(body_crc32(&bytes), 1_188_899_506);
    assert_eq!(RegisterBrokerBody::decode(&bytes, false, 479).unwrap(), body);
}

#[test]
fn pre_v3_0_11_broker_sends_a_bare_wrapper() {
    let bare =
        r#"{"dataVersion":{"counter":3,"timestamp":9},"topicConfigTable":{"A":{"topicName":"A"}}}"#;
    let body = RegisterBrokerBody::decode(bare.as_bytes(), false, 36).unwrap();
    assert_eq!(body.filter_server_list, None);
    let w = &body.topic_config_serialize_wrapper;
    assert_eq!(w.data_version, DataVersion { counter: 3, state_version: 0, timestamp: 9 });
    assert_eq!(w.topic_config_table["A"], TopicConfig::named("A"));
    assert!(matches!(
        RegisterBrokerBody::decode(bare.as_bytes(), false, -1),
        Err(BodyError::NegativeVersion(-1))
    ));
}

#[test]
fn b5_topic_lists_keep_the_given_array_order() {
    for s in [
        r#"{"topicList":["%RETRY%group","TopicTest"]}"#,
        r#"{"brokerAddr":"192.168.0.47:10911","topicList":["broker-a","DefaultCluster"]}"#,
    ] {
        let list: TopicList = from_json(s.as_bytes()).unwrap();
        assert_eq!(legacy(&list), s);
    }
    let list: TopicList = from_json(br#"{"topicList":["%RETRY%group","TopicTest"]}"#).unwrap();
    assert_eq!(list.broker_addr, None);
    assert_eq!(list.topic_list, vec!["%RETRY%group".to_owned(), "TopicTest".to_owned()]);
}

#[test]
fn b7_astral_char_is_utf16_escaped_in_standard_and_raw_in_legacy() {
    let route = TopicRouteData {
        order_topic_conf: Some("\u{1F600}/\u{7f}é\n".into()),
        ..TopicRouteData::default()
    };
    assert_eq!(
        standard(&route),
        r#"{"brokerDatas":[],"filterServerTable":{},"orderTopicConf":"\uD83D\uDE00\/\u007F\u00E9\n","queueDatas":[]}"#
    );
    assert_eq!(
        legacy(&route),
        "{\"brokerDatas\":[],\"filterServerTable\":{},\"orderTopicConf\":\"\u{1F600}/\\u007Fé\\n\",\"queueDatas\":[]}"
    );
    assert_eq!(from_json::<TopicRouteData>(&to_standard_json(&route)).unwrap(), route);
    assert_eq!(from_json::<TopicRouteData>(&to_legacy_json(&route)).unwrap(), route);
}

#[test]
fn map_keys_are_escaped_per_mode_and_string_number_keys_stay_quoted() {
    let kv = KvTable {
        table: [("a/\u{e9}", "1"), ("0", "2"), ("", "3")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
    };
    assert_eq!(legacy(&kv), "{\"table\":{\"\":\"3\",\"0\":\"2\",\"a/\u{e9}\":\"1\"}}");
    assert_eq!(standard(&kv), r#"{"table":{"":"3","0":"2","a\/\u00E9":"1"}}"#);
}

#[test]
fn longs_beyond_2_pow_53_are_strings_only_in_standard_form() {
    let dv = DataVersion {
        counter: 9_007_199_254_740_992,
        state_version: 9_007_199_254_740_991,
        timestamp: -9_007_199_254_740_992,
    };
    assert_eq!(
        standard(&dv),
        r#"{"counter":"9007199254740992","stateVersion":9007199254740991,"timestamp":"-9007199254740992"}"#
    );
    assert_eq!(
        legacy(&dv),
        r#"{"counter":9007199254740992,"stateVersion":9007199254740991,"timestamp":-9007199254740992}"#
    );
    assert_eq!(from_json::<DataVersion>(&to_standard_json(&dv)).unwrap(), dv);
    let big: IntKeyMap<i64, i64> = [(i64::MAX, i64::MIN)].into_iter().collect();
    assert_eq!(standard(&big), r#"{"9223372036854775807":"-9223372036854775808"}"#);
    assert_eq!(legacy(&big), "{9223372036854775807:-9223372036854775808}");
}

#[test]
fn missing_properties_take_java_defaults() {
    let tc: TopicConfig = from_json(br#"{"topicName":"x"}"#).unwrap();
    assert_eq!((tc.read_queue_nums, tc.write_queue_nums, tc.perm), (16, 16, 6));
    assert_eq!(tc.attributes, Some(BTreeMap::new()));
    let info: TopicQueueMappingInfo = from_json(b"{}").unwrap();
    assert_eq!(info.scope.as_deref(), Some("__global__"));
    let body: RegisterBrokerBody = from_json(b"{}").unwrap();
    assert_eq!(body.filter_server_list, Some(vec![]));
}

#[test]
fn scalars_are_read_leniently_and_unknown_or_null_properties_ignored() {
    let json = br#"{"brokerName":7,"perm":"6","readQueueNums":8.0,"topicSysFlag":null,"writeQueueNums":" 8 ","extra":{"x":[1]}}"#;
    let q: QueueData = from_json(json).unwrap();
    assert_eq!(q, QueueData { broker_name: "7".into(), ..queue_a() });
    let bd: BrokerData =
        from_json(br#"{"brokerAddrs":null,"enableActingMaster":"true","zoneName":null}"#).unwrap();
    assert!(bd.enable_acting_master);
    assert!(bd.broker_addrs.0.is_empty());
    assert!(from_json::<QueueData>(br#"{"perm":"six"}"#).is_err());
    assert!(from_json::<QueueData>(br#"{"perm":1} x"#).is_err());
}

#[test]
fn fastjson_ref_objects_are_resolved_or_ignored() {
    let json = br#"{"dataVersion":{"counter":1},"topicConfigTable":{"A":{"attributes":{"k":"v"},"topicName":"A"},"B":{"attributes":{"$ref":"$.topicConfigSerializeWrapper.topicConfigTable.A.attributes"},"topicName":"B"},"C":{"$ref":"@"}},"topicQueueMappingInfoMap":{"S":{"currIdMap":{"$ref":".."},"topic":"S"}}}"#;
    let json = [&br#"{"topicConfigSerializeWrapper":"#[..], &json[..], b"}"].concat();
    let body: RegisterBrokerBody = from_json(&json).unwrap();
    let w: &TopicConfigAndMappingSerializeWrapper = &body.topic_config_serialize_wrapper;
    let attrs = w.topic_config_table["B"].attributes.clone().unwrap();
    assert_eq!(attrs.get("k").map(String::as_str), Some("v"));
    assert!(!w.topic_config_table.contains_key("C"));
    assert_eq!(w.topic_queue_mapping_info_map["S"].curr_id_map, None);
    // A "$ref" key inside an integer-keyed map is skipped.
    let m: MapHolder = from_json(br#"{"map":{"$ref":"$.x",1:"a"}}"#).unwrap();
    assert_eq!(m.map, addrs(&[(1, "a")]));
}
