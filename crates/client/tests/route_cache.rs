//! The producer route cache against a real nameserver: fetching, periodic and on-demand refresh.

mod common;

use std::time::Duration;

use client::agent::{Agent, AgentConfig, TopicTable};
use client::route_cache::{RouteCache, RouteCacheConfig};
use client::{BrokerIdentity, Client};
use common::{eventually, TestServer, LIMIT};
use remoting::body::TopicConfig;

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f).await.expect("test finished in time")
}

fn broker(server: &TestServer, name: &str, port: u16) -> Agent {
    let id = BrokerIdentity::master("DefaultCluster", name, &format!("127.0.0.1:{port}"));
    let t = TopicConfig { read_queue_nums: 2, write_queue_nums: 2, ..TopicConfig::named("Orders") };
    let cfg = AgentConfig { period: Duration::from_secs(600), ..AgentConfig::default() };
    Agent::start(&server.addr_string(), id.clone(), &TopicTable::with_broker_topics(&id, [t]), cfg)
        .expect("agent")
}

#[tokio::test]
async fn cache_builds_queues_and_refreshes_after_wiped_write_perm() {
    within(async {
        let server = TestServer::start().await;
        let (a, b) = (broker(&server, "broker-a", 10911), broker(&server, "broker-b", 10921));
        a.wait_registered(1).await;
        b.wait_registered(1).await;
        let client = Client::new(&server.addr_string()).expect("client");
        let cache = RouteCache::new(client.clone(), RouteCacheConfig::default());
        let info = cache.publish_info("Orders").await.expect("route");
        let queues: Vec<String> =
            info.queues.iter().map(|q| format!("{}/{}", q.broker_name, q.queue_id)).collect();
        assert_eq!(queues, ["broker-a/0", "broker-a/1", "broker-b/0", "broker-b/1"]);
        assert_eq!(info.master_addr("broker-b"), Some("127.0.0.1:10921"));

        client.wipe_write_perm("broker-a").await.expect("wipe");
        // Cached until refreshed; a reported failure refreshes on demand.
        assert_eq!(cache.publish_info("Orders").await.expect("cached").queues.len(), 4);
        let info = cache
            .report_failure("Orders", "broker-a", Duration::from_millis(3))
            .await
            .expect("refreshed");
        assert!(info.queues.iter().all(|q| q.broker_name == "broker-b"));
        let q = cache.select_queue("Orders", None).await.expect("route").expect("a queue");
        assert_eq!(q.broker_name, "broker-b");
    })
    .await;
}

#[tokio::test]
async fn refresher_picks_up_order_conf_changes() {
    within(async {
        let server = TestServer::start_with(|c| c.order_message_enable = true).await;
        let a = broker(&server, "broker-a", 10911);
        a.wait_registered(1).await;
        let client = Client::new(&server.addr_string()).expect("client");
        let cache = RouteCache::new(
            client.clone(),
            RouteCacheConfig { poll_interval: Duration::from_millis(50), ..Default::default() },
        );
        let _refresher = cache.spawn_refresher();
        assert!(!cache.publish_info("Orders").await.expect("route").order_topic);
        client
            .put_kv_config("ORDER_TOPIC_CONFIG", "Orders", "broker-a:3")
            .await
            .expect("order conf");
        let info = eventually("order conf in cache", || async {
            cache.cached("Orders").filter(|i| i.order_topic)
        })
        .await;
        assert_eq!(info.queues.len(), 3);
    })
    .await;
}

#[tokio::test]
async fn unknown_topic_is_an_error_and_not_cached() {
    within(async {
        let server = TestServer::start().await;
        let cache = RouteCache::new(
            Client::new(&server.addr_string()).expect("client"),
            RouteCacheConfig::default(),
        );
        let err = cache.publish_info("Nope").await.expect_err("no route");
        assert_eq!(err.code(), Some(17));
        assert!(cache.topics().is_empty());
    })
    .await;
}
