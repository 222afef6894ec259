//! The nameserver's request and response headers (namesrv-behaviour §2.2, §5.10), field by field
//! in Java declaration order with their Java wire names.

use crate::command::ExtFields;
use crate::headers::{ext_in_java_order, CommandHeader, HeaderValue};

command_header! {
    /// 100 PUT_KV_CONFIG. Java: `PutKVConfigRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct PutKvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
        value: String = "value",
    }
}

command_header! {
    /// 101 GET_KV_CONFIG. Java: `GetKVConfigRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetKvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
    }
}

command_header! {
    /// Response to 101: the value when found. Java: `GetKVConfigResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetKvConfigResponseHeader {
        value: String = "value",
    }
}

command_header! {
    /// 102 DELETE_KV_CONFIG. Java: `DeleteKVConfigRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct DeleteKvConfigRequestHeader {
        namespace: String = "namespace",
        key: String = "key",
    }
}

command_header! {
    /// 103 REGISTER_BROKER. `compressed` absent means false and `body_crc32` absent means 0 (Java
    /// primitive/initialized defaults); `enable_acting_master` absent means an old broker.
    /// Java: `RegisterBrokerRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct RegisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        ha_server_addr: String = "haServerAddr",
        broker_id: i64 = "brokerId",
        heartbeat_timeout_millis: i64 = "heartbeatTimeoutMillis",
        enable_acting_master: bool = "enableActingMaster",
        compressed: bool = "compressed",
        body_crc32: i32 = "bodyCrc32",
    }
}

command_header! {
    /// Response to 103: set only for a slave whose master is live. Java: `RegisterBrokerResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct RegisterBrokerResponseHeader {
        ha_server_addr: String = "haServerAddr",
        master_addr: String = "masterAddr",
    }
}

command_header! {
    /// 104 UNREGISTER_BROKER. Java: `UnRegisterBrokerRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct UnregisterBrokerRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// 105 GET_ROUTEINFO_BY_TOPIC. Java: `GetRouteInfoRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetRouteInfoRequestHeader {
        topic: String = "topic",
        accept_standard_json_only: bool = "acceptStandardJsonOnly",
    }
}

command_header! {
    /// 205 WIPE_WRITE_PERM_OF_BROKER. Java: `WipeWritePermOfBrokerRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct WipeWritePermOfBrokerRequestHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to 205. Java: `WipeWritePermOfBrokerResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct WipeWritePermOfBrokerResponseHeader {
        wipe_topic_count: i32 = "wipeTopicCount",
    }
}

command_header! {
    /// 327 ADD_WRITE_PERM_OF_BROKER. Java: `AddWritePermOfBrokerRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct AddWritePermOfBrokerRequestHeader {
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to 327. Java: `AddWritePermOfBrokerResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct AddWritePermOfBrokerResponseHeader {
        add_topic_count: i32 = "addTopicCount",
    }
}

command_header! {
    /// 216 DELETE_TOPIC_IN_NAMESRV. Java: `DeleteTopicFromNamesrvRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct DeleteTopicFromNamesrvRequestHeader {
        topic: String = "topic",
        cluster_name: String = "clusterName",
    }
}

command_header! {
    /// 217 REGISTER_TOPIC_IN_NAMESRV (the queues travel in the body). Java: `RegisterTopicRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct RegisterTopicRequestHeader {
        topic: String = "topic",
    }
}

command_header! {
    /// 219 GET_KVLIST_BY_NAMESPACE. Java: `GetKVListByNamespaceRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetKvListByNamespaceRequestHeader {
        namespace: String = "namespace",
    }
}

command_header! {
    /// 224 GET_TOPICS_BY_CLUSTER. Java: `GetTopicsByClusterRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetTopicsByClusterRequestHeader {
        cluster: String = "cluster",
    }
}

command_header! {
    /// 322 QUERY_DATA_VERSION (the broker's DataVersion travels in the body).
    /// Java: `QueryDataVersionRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct QueryDataVersionRequestHeader {
        broker_name: String = "brokerName",
        broker_addr: String = "brokerAddr",
        cluster_name: String = "clusterName",
        broker_id: i64 = "brokerId",
    }
}

command_header! {
    /// Response to 322. Java: `QueryDataVersionResponseHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct QueryDataVersionResponseHeader {
        changed: bool = "changed",
    }
}

command_header! {
    /// 901 GET_BROKER_MEMBER_GROUP. Java: `GetBrokerMemberGroupRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct GetBrokerMemberGroupRequestHeader {
        cluster_name: String = "clusterName",
        broker_name: String = "brokerName",
    }
}

command_header! {
    /// 904 BROKER_HEARTBEAT. Note the Java spelling `heartbeatTimeoutMills` on the wire.
    /// Java: `BrokerHeartbeatRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct BrokerHeartbeatRequestHeader {
        cluster_name: String = "clusterName",
        broker_addr: String = "brokerAddr",
        broker_name: String = "brokerName",
        broker_id: i64 = "brokerId",
        epoch: i32 = "epoch",
        max_offset: i64 = "maxOffset",
        confirm_offset: i64 = "confirmOffset",
        heartbeat_timeout_mills: i64 = "heartbeatTimeoutMills",
        election_priority: i32 = "electionPriority",
    }
}

command_header! {
    /// 905 NOTIFY_MIN_BROKER_ID_CHANGE, sent by the nameserver to brokers (oneway).
    /// Java: `NotifyMinBrokerIdChangeRequestHeader`
    #[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
    pub struct NotifyMinBrokerIdChangeRequestHeader {
        min_broker_id: i64 = "minBrokerId",
        broker_name: String = "brokerName",
        min_broker_addr: String = "minBrokerAddr",
        offline_broker_addr: String = "offlineBrokerAddr",
        ha_broker_addr: String = "haBrokerAddr",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::{java_hash_map_order, CommandHeader, ZONE_NAME};
    use crate::{ExtFields, RemotingCommand};

    fn ext(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().copied().collect()
    }

    fn keys(e: &ExtFields) -> Vec<&str> {
        e.iter().map(|(k, _)| k).collect()
    }
    #[test]
    fn tv19_register_broker_ext_is_in_jdk_hash_map_order() {
        let h = RegisterBrokerRequestHeader {
            broker_name: Some("broker-a".into()),
            broker_addr: Some("192.168.0.47:10911".into()),
            cluster_name: Some("DefaultCluster".into()),
            ha_server_addr: Some("192.168.0.47:10912".into()),
            broker_id: Some(0),
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: Some(false),
            body_crc32: Some(1_188_899_506),
        };
        let e = h.to_ext();
        assert_eq!(
            e.iter().collect::<Vec<_>>(),
            [
                ("brokerId", "0"),
                ("bodyCrc32", "1188899506"),
                ("clusterName", "DefaultCluster"),
                ("brokerAddr", "192.168.0.47:10911"),
                ("enableActingMaster", "false"),
                ("haServerAddr", "192.168.0.47:10912"),
                ("compressed", "false"),
                ("brokerName", "broker-a"),
            ]
        );
        assert_eq!(RegisterBrokerRequestHeader::from_ext(Some(&e)), h);
    }

    #[test]
    fn register_broker_response_ext_order_is_ha_server_addr_then_master_addr() {
        let h = RegisterBrokerResponseHeader {
            master_addr: Some("192.168.0.47:10911".into()),
            ha_server_addr: Some("192.168.0.47:10912".into()),
        };
        assert_eq!(keys(&h.to_ext()), ["haServerAddr", "masterAddr"]);
        assert!(RegisterBrokerResponseHeader::default().to_ext().is_empty());
    }

    #[test]
    fn no_ext_map_leaves_every_field_none() {
        assert_eq!(
            RegisterBrokerRequestHeader::from_ext(None),
            RegisterBrokerRequestHeader::default()
        );
        let empty = ExtFields::new();
        assert_eq!(
            GetRouteInfoRequestHeader::from_ext(Some(&empty)),
            GetRouteInfoRequestHeader::default()
        );
    }

    #[test]
    fn numbers_parse_like_java_and_bad_ones_are_ignored() {
        let e = ext(&[
            ("brokerId", "+7"),
            ("bodyCrc32", " 5"),
            ("heartbeatTimeoutMillis", "9223372036854775808"),
            ("brokerName", "b"),
        ]);
        let h = RegisterBrokerRequestHeader::from_ext(Some(&e));
        assert_eq!(h.broker_id, Some(7));
        assert_eq!(h.body_crc32, None, "Integer.parseInt does not trim");
        assert_eq!(h.heartbeat_timeout_millis, None, "overflow is a parse failure");
        assert_eq!(h.broker_name.as_deref(), Some("b"));
        let e = ext(&[("wipeTopicCount", "-2147483648"), ("addTopicCount", "")]);
        assert_eq!(
            WipeWritePermOfBrokerResponseHeader::from_ext(Some(&e)).wipe_topic_count,
            Some(i32::MIN)
        );
        assert_eq!(AddWritePermOfBrokerResponseHeader::from_ext(Some(&e)).add_topic_count, None);
    }

    #[test]
    fn booleans_parse_like_java_parse_boolean() {
        for (s, want) in [
            ("true", true),
            ("TRUE", true),
            ("True", true),
            ("yes", false),
            ("1", false),
            ("", false),
        ] {
            let e = ext(&[("acceptStandardJsonOnly", s)]);
            assert_eq!(
                GetRouteInfoRequestHeader::from_ext(Some(&e)).accept_standard_json_only,
                Some(want),
                "{s:?}"
            );
        }
    }

    #[test]
    fn broker_heartbeat_uses_the_java_spelling_mills() {
        let h = BrokerHeartbeatRequestHeader {
            heartbeat_timeout_mills: Some(30_000),
            ..Default::default()
        };
        assert_eq!(h.to_ext().get("heartbeatTimeoutMills"), Some("30000"));
        let e = ext(&[("heartbeatTimeoutMillis", "1")]);
        assert_eq!(BrokerHeartbeatRequestHeader::from_ext(Some(&e)).heartbeat_timeout_mills, None);
    }

    #[test]
    fn with_header_merges_into_existing_ext_in_jdk_hash_map_order() {
        let h = RegisterBrokerResponseHeader {
            ha_server_addr: Some("h".into()),
            master_addr: Some("m".into()),
        };
        let cmd = RemotingCommand::default()
            .with_ext_fields(ext(&[("masterAddr", "old"), (ZONE_NAME, "z")]))
            .with_header(&h);
        let e = cmd.ext_fields.unwrap();
        let mut want = [("masterAddr", "m"), (ZONE_NAME, "z"), ("haServerAddr", "h")];
        java_hash_map_order(&mut want);
        assert_eq!(e.iter().collect::<Vec<_>>(), want);
        assert_eq!(e.get("masterAddr"), Some("m"));
    }

    #[test]
    fn with_header_creates_an_empty_map_for_an_all_none_header() {
        let cmd = RemotingCommand::default().with_header(&RegisterBrokerResponseHeader::default());
        assert_eq!(cmd.ext_fields, Some(ExtFields::new()));
    }
}
