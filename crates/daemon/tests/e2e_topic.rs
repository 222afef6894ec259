//! End-to-end topic administration and lists over TCP: 206, 216, 217, 224, 304, 311, 312, 313,
//! including the `enableAllTopicList` / `enableTopicList` gates switched at runtime.

mod common;

use common::{
    body_text, data_version, header_json, register_body_of, request, Broker, Conn, TestServer,
};
use remoting::body::{from_json, TopicConfig, TopicList};
use remoting::{RemotingCommand, RequestCode};

fn topic_configs(topics: &[(&str, i32)]) -> Vec<TopicConfig> {
    topics
        .iter()
        .map(|(name, sys_flag)| {
            let mut tc = TopicConfig::named(*name);
            tc.topic_sys_flag = *sys_flag;
            tc
        })
        .collect()
}

fn broker_a() -> Broker {
    Broker::new("C1", "broker-a", "10.0.0.1:10911", 0)
}

fn broker_b() -> Broker {
    Broker::new("C2", "broker-b", "10.0.0.2:10911", 0)
}

/// broker-a (cluster C1): T0 (flag 0), T1 (unit); broker-b (C2): T0, T2 (unit sub), T3 (both).
async fn two_clusters(server: &TestServer) -> Conn {
    let mut conn = server.connect().await;
    for (broker, topics) in [
        (broker_a(), &[("T0", 0), ("T1", 1)][..]),
        (broker_b(), &[("T0", 0), ("T2", 2), ("T3", 3)][..]),
    ] {
        let body = register_body_of(topic_configs(topics), data_version(1));
        let resp = conn.call(broker.register_body(body)).await;
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
    }
    conn
}

/// The sorted `topicList` of a SUCCESS TopicList answer without ext fields or remark.
fn topic_list(resp: &RemotingCommand) -> (Option<String>, Vec<String>) {
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert!(resp.ext_fields.is_none() && resp.remark.is_none());
    let list: TopicList = from_json(resp.body_bytes()).expect("TopicList JSON");
    let mut topics = list.topic_list;
    topics.sort_unstable();
    (list.broker_addr, topics)
}

async fn list(conn: &mut Conn, code: RequestCode, ext: &[(&str, &str)]) -> Vec<String> {
    topic_list(&conn.call(request(code, ext, None)).await).1
}

#[tokio::test]
async fn all_topic_list_names_every_topic() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    assert_eq!(
        list(&mut conn, RequestCode::GetAllTopicListFromNameserver, &[]).await,
        ["T0", "T1", "T2", "T3"]
    );
}

#[tokio::test]
async fn all_topic_list_of_empty_server_is_an_empty_list() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.call(request(RequestCode::GetAllTopicListFromNameserver, &[], None)).await;
    assert_eq!(body_text(&resp), r#"{"topicList":[]}"#);
}

#[tokio::test]
async fn all_topic_list_is_disabled_and_enabled_again_at_runtime() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    conn.update_config("enableAllTopicList=false\n").await;
    let mut raw = server.connect_raw().await;
    let frame = raw.call(request(RequestCode::GetAllTopicListFromNameserver, &[], None)).await;
    assert_eq!(
        header_json(&frame),
        r#"{"code":1,"flag":1,"language":"JAVA","opaque":1,"remark":"disable","serializeTypeCurrentRPC":"JSON","version":479}"#
    );
    // The other gate is independent.
    assert_eq!(
        list(&mut conn, RequestCode::GetTopicsByCluster, &[("cluster", "C1")]).await,
        ["T0", "T1"]
    );
    conn.update_config("enableAllTopicList=true\n").await;
    assert_eq!(
        list(&mut conn, RequestCode::GetAllTopicListFromNameserver, &[]).await,
        ["T0", "T1", "T2", "T3"]
    );
}

#[tokio::test]
async fn topics_by_cluster_lists_topics_on_the_clusters_brokers() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    assert_eq!(
        list(&mut conn, RequestCode::GetTopicsByCluster, &[("cluster", "C1")]).await,
        ["T0", "T1"]
    );
    assert_eq!(
        list(&mut conn, RequestCode::GetTopicsByCluster, &[("cluster", "C2")]).await,
        ["T0", "T2", "T3"]
    );
    // Unknown or absent cluster: empty list, still SUCCESS (§11 #28).
    for ext in [&[("cluster", "nope")][..], &[][..]] {
        let resp = conn.call(request(RequestCode::GetTopicsByCluster, ext, None)).await;
        assert_eq!(resp.code, 0);
        assert_eq!(body_text(&resp), r#"{"topicList":[]}"#);
    }
}

#[tokio::test]
async fn unit_topic_lists_look_at_the_sys_flag() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    assert_eq!(list(&mut conn, RequestCode::GetUnitTopicList, &[]).await, ["T1", "T3"]);
    assert_eq!(list(&mut conn, RequestCode::GetHasUnitSubTopicList, &[]).await, ["T2", "T3"]);
    assert_eq!(list(&mut conn, RequestCode::GetHasUnitSubUnunitTopicList, &[]).await, ["T2"]);
}

#[tokio::test]
async fn topic_list_gate_disables_224_and_311_to_313_at_runtime() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    conn.update_config("enableTopicList=false\n").await;
    for (code, ext) in [
        (RequestCode::GetTopicsByCluster, &[("cluster", "C1")][..]),
        (RequestCode::GetUnitTopicList, &[][..]),
        (RequestCode::GetHasUnitSubTopicList, &[][..]),
        (RequestCode::GetHasUnitSubUnunitTopicList, &[][..]),
    ] {
        let resp = conn.call(request(code, ext, None)).await;
        assert_eq!(resp.code, 1, "{code:?}");
        assert_eq!(resp.remark.as_deref(), Some("disable"), "{code:?}");
        assert!(resp.ext_fields.is_none() && resp.body.is_none(), "{code:?}");
    }
    // 206 and 304 are not gated by enableTopicList.
    assert_eq!(
        list(&mut conn, RequestCode::GetAllTopicListFromNameserver, &[]).await,
        ["T0", "T1", "T2", "T3"]
    );
    assert_eq!(conn.call(request(RequestCode::GetSystemTopicListFromNs, &[], None)).await.code, 0);
    conn.update_config("enableTopicList=true\n").await;
    assert_eq!(list(&mut conn, RequestCode::GetUnitTopicList, &[]).await, ["T1", "T3"]);
}

#[tokio::test]
async fn system_topic_list_names_clusters_and_brokers_with_one_address() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let master = Broker::new("DefaultCluster", "broker-a", "192.168.0.47:10911", 0);
    conn.register(&master, &["TopicTest", "Other"]).await;
    let resp = conn.call(request(RequestCode::GetSystemTopicListFromNs, &[], None)).await;
    // errata B5's second example, in whatever order: both elements and the address.
    let text = body_text(&resp);
    assert!(
        text == r#"{"brokerAddr":"192.168.0.47:10911","topicList":["broker-a","DefaultCluster"]}"#
            || text
                == r#"{"brokerAddr":"192.168.0.47:10911","topicList":["DefaultCluster","broker-a"]}"#,
        "{text}"
    );
}

#[tokio::test]
async fn system_topic_list_of_empty_server_has_no_broker_addr() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    let resp = conn.call(request(RequestCode::GetSystemTopicListFromNs, &[], None)).await;
    assert_eq!(body_text(&resp), r#"{"topicList":[]}"#);
}

#[tokio::test]
async fn delete_topic_without_cluster_removes_it_everywhere() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    for ext in [&[("topic", "T0")][..], &[("topic", "T2"), ("clusterName", "")][..]] {
        let resp = conn.call(request(RequestCode::DeleteTopicInNamesrv, ext, None)).await;
        assert_eq!(resp.code, 0);
        assert!(resp.ext_fields.is_none() && resp.remark.is_none() && resp.body.is_none());
    }
    assert!(conn.route("T0").await.is_none());
    assert!(conn.route("T2").await.is_none());
    assert_eq!(
        list(&mut conn, RequestCode::GetAllTopicListFromNameserver, &[]).await,
        ["T1", "T3"]
    );
}

#[tokio::test]
async fn delete_topic_with_cluster_removes_only_that_clusters_queues() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    let resp = conn
        .call(request(
            RequestCode::DeleteTopicInNamesrv,
            &[("topic", "T0"), ("clusterName", "C1")],
            None,
        ))
        .await;
    assert_eq!(resp.code, 0);
    let route = conn.route("T0").await.expect("T0 still on broker-b");
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "broker-b");
    assert_eq!(route.broker_datas.len(), 1);

    // An unknown cluster is a no-op; the last cluster's deletion drops the topic.
    for cluster in ["nope", "C2"] {
        let resp = conn
            .call(request(
                RequestCode::DeleteTopicInNamesrv,
                &[("topic", "T0"), ("clusterName", cluster)],
                None,
            ))
            .await;
        assert_eq!(resp.code, 0);
    }
    assert!(conn.route("T0").await.is_none());
}

#[tokio::test]
async fn deleted_topic_reappears_when_its_broker_registers_again() {
    let server = TestServer::start().await;
    let mut conn = server.connect().await;
    conn.register(&broker_a(), &["T0", "T1"]).await;
    let resp =
        conn.call(request(RequestCode::DeleteTopicInNamesrv, &[("topic", "T0")], None)).await;
    assert_eq!(resp.code, 0);
    assert!(conn.route("T0").await.is_none());
    conn.register(&broker_a(), &["T0", "T1"]).await;
    assert!(conn.route("T0").await.is_some(), "§5.3 10c");
}

fn register_topic(topic: &str, body: Option<&str>) -> RemotingCommand {
    request(RequestCode::RegisterTopicInNamesrv, &[("topic", topic)], body.map(str::as_bytes))
}

#[tokio::test]
async fn register_topic_adds_queues_for_known_brokers_only() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    let known = r#"{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":3,"topicSysFlag":0,"writeQueueNums":3}]}"#;
    let resp = conn.call(register_topic("NewTopic", Some(known))).await;
    assert_eq!(resp.code, 0);
    assert!(resp.ext_fields.is_none() && resp.remark.is_none());
    let route = conn.route("NewTopic").await.expect("route");
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].write_queue_nums, 3);

    // A new topic with any unknown broker is not stored at all, yet answered SUCCESS.
    let mixed = r#"{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1},{"brokerName":"ghost","perm":6,"readQueueNums":1,"topicSysFlag":0,"writeQueueNums":1}]}"#;
    let resp = conn.call(register_topic("Ghostly", Some(mixed))).await;
    assert_eq!(resp.code, 0);
    assert!(conn.route("Ghostly").await.is_none());

    // An existing topic's queue data is replaced.
    let bigger = r#"{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":5,"topicSysFlag":0,"writeQueueNums":5}]}"#;
    assert_eq!(conn.call(register_topic("NewTopic", Some(bigger))).await.code, 0);
    let route = conn.route("NewTopic").await.expect("route");
    assert_eq!(route.queue_datas[0].write_queue_nums, 5);
}

#[tokio::test]
async fn register_topic_without_body_or_queues_is_success_and_does_nothing() {
    let server = TestServer::start().await;
    let mut conn = two_clusters(&server).await;
    for body in [None, Some(r#"{"queueDatas":[]}"#), Some("{}")] {
        let resp = conn.call(register_topic("Nothing", body)).await;
        assert_eq!(resp.code, 0, "{body:?}");
    }
    assert!(conn.route("Nothing").await.is_none());
}
