//! Every typed nameserver call over TCP against the real server (`daemon::run`).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use client::{BrokerIdentity, Client, ClientConfig, RegisterBroker, RouteOptions, UnitTopics};
use common::{eventually, TestServer, LIMIT};
use remoting::body::{
    perm, sys_flag, DataVersion, QueueData, RegisterBrokerBody, TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
};
use remoting::ResponseCode;

fn topic(name: &str, queues: i32) -> TopicConfig {
    TopicConfig { read_queue_nums: queues, write_queue_nums: queues, ..TopicConfig::named(name) }
}

/// A registration of `topics` plus the broker-name topic every Java broker has (a table of one
/// topic from an unknown broker is refused by the nameserver's single-topic guard).
fn registration(id: BrokerIdentity, topics: &[TopicConfig], counter: i64) -> RegisterBroker {
    let own = topic(&id.broker_name, 1);
    let table = topics
        .iter()
        .chain([&own])
        .map(|t| (t.topic_name.clone().unwrap_or_default(), t.clone()))
        .collect();
    RegisterBroker {
        identity: id,
        body: RegisterBrokerBody {
            filter_server_list: Some(Vec::new()),
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper {
                data_version: DataVersion {
                    counter,
                    state_version: 0,
                    timestamp: 1_700_000_000_000 + counter,
                },
                topic_config_table: std::sync::Arc::new(table),
                ..Default::default()
            },
        },
        compressed: false,
    }
}

fn master_a() -> BrokerIdentity {
    BrokerIdentity::master("DefaultCluster", "broker-a", "127.0.0.1:10911")
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f).await.expect("test finished in time")
}

#[tokio::test]
async fn kv_config_put_get_list_delete() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        assert_eq!(c.get_kv_config("ns", "k").await.expect("answered"), None);
        assert_eq!(c.get_kv_list_by_namespace("ns").await.expect("answered"), None);
        c.put_kv_config("ns", "k", "v1").await.expect("put");
        c.put_kv_config("ns", "k2", "v2").await.expect("put");
        assert_eq!(c.get_kv_config("ns", "k").await.expect("get").as_deref(), Some("v1"));
        let table =
            c.get_kv_list_by_namespace("ns").await.expect("list").expect("namespace exists");
        assert_eq!(
            table.table,
            BTreeMap::from([("k".into(), "v1".into()), ("k2".into(), "v2".into())])
        );
        c.delete_kv_config("ns", "k").await.expect("delete");
        assert_eq!(c.get_kv_config("ns", "k").await.expect("get"), None);
        assert_eq!(
            c.get_kv_list_by_namespace("ns").await.expect("list").expect("kept").table.len(),
            1
        );
    })
    .await;
}

#[tokio::test]
async fn registered_broker_appears_in_cluster_info_routes_and_topic_lists() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        let unit = TopicConfig { topic_sys_flag: sys_flag::UNIT, ..topic("UnitTopic", 2) };
        let reg = registration(master_a(), &[topic("TopicA", 4), unit], 1);
        let result = c.register_broker(&reg).await.expect("registered");
        assert_eq!(result.master_addr, None);
        assert_eq!(result.ha_server_addr, None);

        let info = c.cluster_info().await.expect("cluster info");
        assert!(info.cluster_addr_table["DefaultCluster"].contains("broker-a"));
        assert_eq!(info.broker_addr_table["broker-a"].broker_addrs.0[&0], "127.0.0.1:10911");

        let route = c.get_route("TopicA").await.expect("route");
        assert_eq!(route.queue_datas.len(), 1);
        assert_eq!(route.queue_datas[0].write_queue_nums, 4);
        assert_eq!(route.queue_datas[0].perm, perm::READ | perm::WRITE);
        assert_eq!(route.broker_datas[0].broker_addrs.0[&0], "127.0.0.1:10911");

        let all = c.all_topic_list().await.expect("all topics").topic_list;
        assert!(
            all.contains(&"TopicA".to_owned()) && all.contains(&"UnitTopic".to_owned()),
            "{all:?}"
        );
        let by_cluster =
            c.topics_by_cluster("DefaultCluster").await.expect("by cluster").topic_list;
        assert!(by_cluster.contains(&"TopicA".to_owned()));
        assert!(c
            .topics_by_cluster("NoSuchCluster")
            .await
            .expect("unknown cluster")
            .topic_list
            .is_empty());
        let system = c.system_topic_list().await.expect("system topics");
        assert!(
            system.topic_list.contains(&"DefaultCluster".to_owned())
                && system.topic_list.contains(&"broker-a".to_owned())
        );
        assert_eq!(system.broker_addr.as_deref(), Some("127.0.0.1:10911"));
        let unit = c.unit_topic_list(UnitTopics::Unit).await.expect("unit topics").topic_list;
        assert_eq!(unit, ["UnitTopic"]);
        assert!(c
            .unit_topic_list(UnitTopics::HasUnitSub)
            .await
            .expect("312")
            .topic_list
            .is_empty());
        assert!(c
            .unit_topic_list(UnitTopics::HasUnitSubUnunit)
            .await
            .expect("313")
            .topic_list
            .is_empty());

        let group =
            c.get_broker_member_group("DefaultCluster", "broker-a").await.expect("member group");
        assert_eq!(group.broker_addrs.0[&0], "127.0.0.1:10911");
        assert_eq!(group.broker_name, "broker-a");
    })
    .await;
}

#[tokio::test]
async fn unknown_topic_is_topic_not_exist_with_remark() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        let err = c.get_route("Nope").await.expect_err("no such topic");
        assert_eq!(err.response_code(), Some(ResponseCode::TopicNotExist));
        assert!(
            err.remark().is_some_and(
                |r| r.starts_with("No topic route info in name server for the topic: Nope")
            ),
            "{err}"
        );
    })
    .await;
}

#[tokio::test]
async fn route_json_form_follows_version_and_accept_standard_json_only() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        c.register_broker(&registration(master_a(), &[topic("TopicA", 4)], 1))
            .await
            .expect("registered");
        let body = |opts| {
            let c = c.clone();
            async move {
                String::from_utf8(c.get_route_body("TopicA", opts).await.expect("route").1.to_vec())
                    .expect("utf8")
            }
        };
        let legacy = body(RouteOptions { version: Some(400), ..Default::default() }).await;
        assert!(legacy.contains(r#"{0:"127.0.0.1:10911"}"#), "{legacy}");
        let standard = body(RouteOptions::default()).await;
        assert!(standard.contains(r#"{"0":"127.0.0.1:10911"}"#), "{standard}");
        let forced =
            body(RouteOptions { version: Some(400), accept_standard_json_only: Some(true) }).await;
        assert!(forced.contains(r#"{"0":"127.0.0.1:10911"}"#), "{forced}");
        // Both forms decode to the same route.
        let a = c
            .get_route_with("TopicA", RouteOptions { version: Some(400), ..Default::default() })
            .await
            .expect("legacy");
        assert_eq!(a, c.get_route("TopicA").await.expect("standard"));
    })
    .await;
}

#[tokio::test]
async fn slave_learns_its_master_and_order_config_comes_back_on_registration() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        c.register_broker(&registration(master_a(), &[topic("TopicA", 4)], 1))
            .await
            .expect("master");
        c.put_kv_config("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4").await.expect("order conf");
        let slave = BrokerIdentity::new("DefaultCluster", "broker-a", 1, "127.0.0.1:10921");
        let r =
            c.register_broker(&registration(slave, &[topic("TopicA", 4)], 1)).await.expect("slave");
        assert_eq!(r.master_addr.as_deref(), Some("127.0.0.1:10911"));
        assert_eq!(r.ha_server_addr.as_deref(), Some("127.0.0.1:10912"));
        assert_eq!(r.kv_table.expect("order config table").table["TopicA"], "broker-a:4");
    })
    .await;
}

#[tokio::test]
async fn compressed_registration_registers_topics() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        let mut reg = registration(master_a(), &[topic("Zipped", 3)], 1);
        reg.compressed = true;
        let cmd = c.register_broker_command(&reg);
        assert_eq!(cmd.ext("compressed"), Some("true"));
        assert_eq!(cmd.body_bytes().first(), Some(&0x78), "zlib stream");
        c.send_register_broker(cmd).await.expect("registered");
        assert_eq!(c.get_route("Zipped").await.expect("route").queue_datas[0].read_queue_nums, 3);
    })
    .await;
}

#[tokio::test]
async fn register_broker_request_looks_like_a_java_broker() {
    let c = Client::new("127.0.0.1:9876").expect("client");
    let cmd = c.register_broker_command(&registration(master_a(), &[topic("TopicA", 4)], 1));
    let keys: Vec<&str> = cmd.ext_fields.as_ref().expect("ext").iter().map(|(k, _)| k).collect();
    assert_eq!(
        keys,
        [
            "brokerId",
            "bodyCrc32",
            "clusterName",
            "brokerAddr",
            "enableActingMaster",
            "haServerAddr",
            "compressed",
            "brokerName"
        ]
    );
    let crc = remoting::body::body_crc32(cmd.body_bytes()).to_string();
    assert_eq!(cmd.ext("bodyCrc32"), Some(crc.as_str()));
    assert_eq!((cmd.code, cmd.version, cmd.language), (103, 479, remoting::LanguageCode::Java));
    assert!(cmd
        .body_bytes()
        .starts_with(br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":"#));
    assert_eq!(cmd.ext(client::ZONE_NAME_EXT), None);
    let mut zoned = master_a();
    zoned.zone_name = Some("zone-1".into());
    let cmd = c.register_broker_command(&registration(zoned, &[topic("TopicA", 4)], 1));
    assert_eq!(cmd.ext("__ZONE_NAME"), Some("zone-1"));
}

#[tokio::test]
async fn query_data_version_and_heartbeats() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        let reg = registration(master_a(), &[topic("TopicA", 4)], 7);
        c.register_broker(&reg).await.expect("registered");
        let stored = reg.body.topic_config_serialize_wrapper.data_version;
        let same = c.query_data_version(&master_a(), &stored).await.expect("query");
        assert!(!same.changed);
        assert_eq!(same.data_version, Some(stored));
        let other = DataVersion { counter: 8, ..stored };
        assert!(c.query_data_version(&master_a(), &other).await.expect("query").changed);
        let unknown = BrokerIdentity::master("DefaultCluster", "broker-x", "127.0.0.1:19999");
        let r = c.query_data_version(&unknown, &stored).await.expect("query");
        assert!(r.changed);
        assert_eq!(r.data_version, None);
        c.query_data_version_oneway(&master_a(), &stored).await.expect("oneway sent");
        c.broker_heartbeat(&master_a()).await.expect("oneway sent");
        c.broker_heartbeat_sync(&master_a()).await.expect("answered SUCCESS");
    })
    .await;
}

#[tokio::test]
async fn wipe_and_add_write_perm_change_route_perm() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        c.register_broker(&registration(master_a(), &[topic("TopicA", 4)], 1))
            .await
            .expect("registered");
        assert_eq!(
            c.wipe_write_perm("broker-a").await.expect("wipe"),
            2,
            "TopicA and the broker-name topic"
        );
        assert_eq!(c.get_route("TopicA").await.expect("route").queue_datas[0].perm, perm::READ);
        assert_eq!(c.add_write_perm("broker-a").await.expect("add"), 2);
        assert_eq!(
            c.get_route("TopicA").await.expect("route").queue_datas[0].perm,
            perm::READ | perm::WRITE
        );
        assert_eq!(c.wipe_write_perm("no-such-broker").await.expect("wipe"), 0);
    })
    .await;
}

#[tokio::test]
async fn register_topic_and_delete_topic_by_cluster() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        c.register_broker(&registration(master_a(), &[topic("TopicA", 4)], 1))
            .await
            .expect("registered");
        let qd = QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 2,
            write_queue_nums: 2,
            topic_sys_flag: 0,
        };
        c.register_topic("Single", &[qd]).await.expect("register topic");
        assert_eq!(c.get_route("Single").await.expect("route").queue_datas[0].write_queue_nums, 2);
        c.delete_topic("Single", Some("OtherCluster")).await.expect("delete in another cluster");
        assert!(c.get_route("Single").await.is_ok(), "other cluster's delete leaves it");
        c.delete_topic("Single", Some("DefaultCluster")).await.expect("delete");
        let err = c.get_route("Single").await.expect_err("deleted");
        assert_eq!(err.code(), Some(17));
        c.delete_topic("TopicA", None).await.expect("delete everywhere");
        assert_eq!(c.get_route("TopicA").await.expect_err("deleted").code(), Some(17));
    })
    .await;
}

#[tokio::test]
async fn namesrv_config_get_update_and_blacklist() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        let before = c.get_namesrv_config().await.expect("config");
        assert_eq!(before.get("orderMessageEnable").map(String::as_str), Some("false"));
        c.update_namesrv_config(&BTreeMap::from([("orderMessageEnable".into(), "true".into())]))
            .await
            .expect("update");
        let after = c.get_namesrv_config().await.expect("config");
        assert_eq!(after.get("orderMessageEnable").map(String::as_str), Some("true"));
        let err = c
            .update_namesrv_config(&BTreeMap::from([("kvConfigPath".into(), "/tmp/x".into())]))
            .await
            .expect_err("blacklisted");
        assert_eq!(err.response_code(), Some(ResponseCode::NoPermission));
        assert_eq!(err.remark(), Some("Can not update config in black list."));
        c.update_namesrv_config(&BTreeMap::new()).await.expect("empty update sends nothing");
    })
    .await;
}

#[tokio::test]
async fn unregistered_broker_disappears() {
    within(async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        c.register_broker(&registration(master_a(), &[topic("TopicA", 4)], 1))
            .await
            .expect("registered");
        c.unregister_broker(&master_a()).await.expect("unregister");
        eventually("broker-a removed", || {
            let c = c.clone();
            async move {
                (!c.cluster_info().await.ok()?.broker_addr_table.contains_key("broker-a"))
                    .then_some(())
            }
        })
        .await;
        assert_eq!(c.get_route("TopicA").await.expect_err("route gone").code(), Some(17));
    })
    .await;
}

#[tokio::test]
async fn fails_over_when_one_of_two_nameservers_is_stopped() {
    within(async {
        let first = TestServer::start().await;
        let second = TestServer::start().await;
        let list = format!("{};{}", first.addr, second.addr);
        let c = Client::with_config(&list, ClientConfig::default()).expect("client");
        for ns in c.each_namesrv() {
            ns.put_kv_config("ns", "k", "v").await.expect("put on each");
        }
        let (stopped, _dir) = first.stop().await;
        for _ in 0..4 {
            assert_eq!(
                c.get_kv_config("ns", "k").await.expect("answered by the live one").as_deref(),
                Some("v")
            );
        }
        let err =
            c.pinned(&stopped.to_string()).get_kv_config("ns", "k").await.expect_err("stopped");
        assert!(err.is_transport(), "{err}");
        drop(second);
    })
    .await;
}

/// A registration body of several MB (written in chunks) arrives whole: every topic routable.
/// It is applied on the registration lane, whose threads run at the lowest priority: on a
/// machine busy with other processes that takes long, hence the generous bounds.
#[tokio::test]
async fn a_multi_megabyte_registration_is_written_and_applied_whole() {
    tokio::time::timeout(Duration::from_secs(180), async {
        let server = TestServer::start().await;
        let c = Client::new(&server.addr_string()).expect("client");
        let topics: Vec<TopicConfig> =
            (0..12_000).map(|i| topic(&format!("BigTopic-{i:06}"), 4)).collect();
        let req = registration(master_a(), &topics, 1);
        assert!(remoting::body::to_legacy_json(&req.body).len() > 1 << 20, "several chunks");
        let cmd = c.register_broker_command(&req);
        c.send_register_broker_timeout(cmd, Duration::from_secs(150)).await.expect("registered");
        for name in ["BigTopic-000000", "BigTopic-006000", "BigTopic-011999"] {
            let route = c.get_route(name).await.expect("route");
            assert_eq!(route.queue_datas[0].read_queue_nums, 4, "{name}");
        }
    })
    .await
    .expect("test finished in time");
}
