//! Property tests for the JSON bodies: random routes and cluster infos survive both output forms,
//! random compressed bodies survive encode/decode, and random bytes never make a decoder panic.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::{btree_map, btree_set, vec};
use proptest::option;
use proptest::prelude::*;
use remoting::body::{
    from_json, to_legacy_json, to_standard_json, BrokerData, ClusterInfo, DataVersion, IntKeyMap,
    QueueData, RegisterBrokerBody, TopicConfig, TopicFilterType, TopicQueueMappingInfo,
    TopicRouteData,
};

/// Any text, including controls, quotes, `/`, C1, U+2028 and astral chars.
fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z0-9.:%_/\"\\\\ -]{0,12}"]
}

fn broker_data() -> impl Strategy<Value = BrokerData> {
    (
        btree_map(any::<i64>(), any_text(), 0..20),
        any_text(),
        any_text(),
        any::<bool>(),
        option::of(any_text()),
    )
        .prop_map(|(addrs, broker_name, cluster, enable_acting_master, zone_name)| {
            BrokerData {
                broker_addrs: IntKeyMap(addrs),
                broker_name,
                cluster,
                enable_acting_master,
                zone_name,
            }
        })
}

fn queue_data() -> impl Strategy<Value = QueueData> {
    (any_text(), any::<i32>(), any::<i32>(), any::<i32>(), any::<i32>()).prop_map(
        |(broker_name, perm, read_queue_nums, topic_sys_flag, write_queue_nums)| QueueData {
            broker_name,
            perm,
            read_queue_nums,
            topic_sys_flag,
            write_queue_nums,
        },
    )
}

fn mapping_info() -> impl Strategy<Value = TopicQueueMappingInfo> {
    (
        option::of(any_text()),
        option::of(btree_map(any::<i32>(), any::<i32>(), 0..20)),
        any::<bool>(),
        any::<i64>(),
        // `None` would read back as the `"__global__"` default, as in Java.
        any_text(),
        option::of(any_text()),
        any::<i32>(),
    )
        .prop_map(|(bname, ids, dirty, epoch, scope, topic, total_queues)| {
            TopicQueueMappingInfo {
                bname,
                curr_id_map: ids.map(IntKeyMap),
                dirty,
                epoch,
                scope: Some(scope),
                topic,
                total_queues,
            }
        })
}

fn route() -> impl Strategy<Value = TopicRouteData> {
    (
        vec(broker_data(), 0..4),
        btree_map(any_text(), vec(any_text(), 0..3), 0..3),
        option::of(any_text()),
        vec(queue_data(), 0..4),
        option::of(btree_map(any_text(), mapping_info(), 0..3)),
    )
        .prop_map(
            |(broker_datas, filter_server_table, order_topic_conf, queue_datas, mapping)| {
                TopicRouteData {
                    broker_datas,
                    filter_server_table,
                    order_topic_conf,
                    queue_datas,
                    topic_queue_mapping_by_broker: mapping,
                }
            },
        )
}

fn cluster_info() -> impl Strategy<Value = ClusterInfo> {
    (
        btree_map(any_text(), broker_data(), 0..4),
        btree_map(any_text(), btree_set(any_text(), 0..4), 0..4),
    )
        .prop_map(
            |(broker_addr_table, cluster_addr_table): (
                BTreeMap<_, _>,
                BTreeMap<_, BTreeSet<_>>,
            )| ClusterInfo { broker_addr_table, cluster_addr_table },
        )
}

/// Text the compact TopicConfig line can carry: no spaces.
fn word() -> impl Strategy<Value = String> {
    "[A-Za-z0-9%_.:\\-\"\\\\é]{0,10}"
}

fn compact_topic() -> impl Strategy<Value = TopicConfig> {
    (
        word(),
        any::<i32>(),
        any::<i32>(),
        any::<i32>(),
        prop_oneof![Just(TopicFilterType::SingleTag), Just(TopicFilterType::MultiTag)],
        // `None` would read back as `{}`, Java's initial value.
        btree_map(word(), word(), 0..3),
    )
        .prop_map(|(name, read, write, perm, filter, attributes)| TopicConfig {
            attributes: Some(attributes),
            perm,
            read_queue_nums: read,
            topic_filter_type: filter,
            topic_name: Some(name),
            write_queue_nums: write,
            ..TopicConfig::default()
        })
}

fn compressible_body() -> impl Strategy<Value = RegisterBrokerBody> {
    (
        (any::<i64>(), any::<i64>(), any::<i64>()),
        vec(compact_topic(), 0..6),
        option::of(vec(any_text(), 0..3)),
        vec(mapping_info(), 0..3),
    )
        .prop_map(
            |((counter, state_version, timestamp), topics, filter_server_list, infos)| {
                let mut body =
                    RegisterBrokerBody { filter_server_list, ..RegisterBrokerBody::default() };
                let w = &mut body.topic_config_serialize_wrapper;
                w.data_version = DataVersion { counter, state_version, timestamp };
                for t in topics {
                    std::sync::Arc::make_mut(&mut w.topic_config_table)
                        .insert(t.topic_name.clone().unwrap_or_default(), t);
                }
                for (i, mut info) in infos.into_iter().enumerate() {
                    let topic = format!("static-{i}");
                    info.topic = Some(topic.clone());
                    w.topic_queue_mapping_info_map.insert(topic, info);
                }
                body
            },
        )
}

proptest! {
    #[test]
    fn route_round_trips_through_legacy_json(r in route()) {
        prop_assert_eq!(from_json::<TopicRouteData>(&to_legacy_json(&r)).unwrap(), r);
    }

    #[test]
    fn route_round_trips_through_standard_json(r in route()) {
        let bytes = to_standard_json(&r);
        prop_assert!(bytes.iter().all(|b| (0x20..0x7f).contains(b)), "standard form is printable ASCII");
        prop_assert_eq!(from_json::<TopicRouteData>(&bytes).unwrap(), r);
    }

    #[test]
    fn cluster_info_round_trips_through_both_forms(c in cluster_info()) {
        prop_assert_eq!(from_json::<ClusterInfo>(&to_legacy_json(&c)).unwrap(), c.clone());
        prop_assert_eq!(from_json::<ClusterInfo>(&to_standard_json(&c)).unwrap(), c);
    }

    #[test]
    fn compressed_body_round_trips(body in compressible_body()) {
        let z = body.encode_compressed(479);
        prop_assert_eq!(RegisterBrokerBody::decode_compressed(&z, 479).unwrap(), body);
    }

    #[test]
    fn random_bytes_never_panic_the_compressed_decoder(bytes in vec(any::<u8>(), 0..512), version in any::<i32>()) {
        let _ = RegisterBrokerBody::decode_compressed(&bytes, version);
        let _ = RegisterBrokerBody::decode(&bytes, true, version);
    }

    #[test]
    fn random_plaintext_in_valid_zlib_never_panics_the_decoder(plain in vec(any::<u8>(), 0..512), prefix in vec(any::<u8>(), 0..64)) {
        use std::io::Write;
        // Start with a plausible DataVersion block so the decoder gets past the first part.
        let mut p = Vec::new();
        p.extend_from_slice(&2i32.to_be_bytes());
        p.extend_from_slice(b"{}");
        p.extend_from_slice(&prefix);
        p.extend_from_slice(&plain);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&p).unwrap();
        let _ = RegisterBrokerBody::decode_compressed(&z.finish().unwrap(), 479);
    }

    #[test]
    fn random_bytes_never_panic_the_json_reader(bytes in vec(any::<u8>(), 0..256)) {
        let _ = from_json::<RegisterBrokerBody>(&bytes);
        let _ = from_json::<TopicRouteData>(&bytes);
    }
}
