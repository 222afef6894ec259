//! Tests of the route tables, by topic: registration, unregistration, reads, liveness, and the
//! concurrent wrapper. Scenarios follow Java's `RouteInfoManager*Test` and namesrv-behaviour §11.

mod cache;
mod live;
mod query;
mod register;
mod snapshot;
mod unchanged;
mod unregister;
mod view;

use remoting::body::{
    DataVersion, TopicConfig, TopicConfigAndMappingSerializeWrapper, TopicRouteData,
};

use super::{
    ConnId, RegisterBroker, RegisterError, RegisterOutcome, RouteTable, UnregisterRequest,
};

impl RouteTable {
    /// [`RouteTable::register_broker`] of a registration the caller has no more use for.
    pub(crate) fn register_owned(
        &mut self,
        mut req: RegisterBroker,
        now_ms: u64,
        delete_topic_with_registration: bool,
    ) -> Result<RegisterOutcome, RegisterError> {
        self.register_broker(&mut req, now_ms, delete_topic_with_registration)
    }
}

const CLUSTER: &str = "DefaultCluster";
const BROKER: &str = "broker-a";
const MASTER_ADDR: &str = "127.0.0.1:10911";
const MASTER_HA: &str = "127.0.0.1:20911";
const SLAVE_ADDR: &str = "127.0.0.1:30911";
const SLAVE_HA: &str = "127.0.0.1:40911";
const NOW: u64 = 1_000_000;

/// A broker's identity and registration settings (Java test `BrokerBasicInfo`).
#[derive(Debug, Clone)]
struct Broker {
    cluster: String,
    name: String,
    addr: String,
    ha: String,
    id: i64,
    acting_master: Option<bool>,
    dv: DataVersion,
    timeout: Option<i64>,
    conn: ConnId,
    zone: Option<String>,
    filters: Option<Vec<String>>,
}

impl Broker {
    /// The master of broker-a, acting master enabled (Java `defaultBroker()`).
    fn master() -> Self {
        Self {
            cluster: CLUSTER.to_owned(),
            name: BROKER.to_owned(),
            addr: MASTER_ADDR.to_owned(),
            ha: MASTER_HA.to_owned(),
            id: 0,
            acting_master: Some(true),
            dv: DataVersion { counter: 1, state_version: 0, timestamp: 1_700_000_000_000 },
            timeout: None,
            conn: 1,
            zone: None,
            filters: Some(Vec::new()),
        }
    }

    /// Its slave with id 1 (Java `slaveBroker()`).
    fn slave() -> Self {
        Self {
            addr: SLAVE_ADDR.to_owned(),
            ha: SLAVE_HA.to_owned(),
            id: 1,
            conn: 2,
            ..Self::master()
        }
    }

    fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    fn cluster(mut self, cluster: &str) -> Self {
        self.cluster = cluster.to_owned();
        self
    }

    fn addr(mut self, addr: &str) -> Self {
        self.addr = addr.to_owned();
        self
    }

    fn id(mut self, id: i64) -> Self {
        self.id = id;
        self
    }

    fn acting_master(mut self, on: Option<bool>) -> Self {
        self.acting_master = on;
        self
    }

    fn conn(mut self, conn: ConnId) -> Self {
        self.conn = conn;
        self
    }

    fn timeout(mut self, ms: i64) -> Self {
        self.timeout = Some(ms);
        self
    }

    fn zone(mut self, zone: &str) -> Self {
        self.zone = Some(zone.to_owned());
        self
    }

    fn state_version(mut self, v: i64) -> Self {
        self.dv.state_version = v;
        self
    }

    /// Java `dataVersion.nextVersion()`.
    fn next_version(mut self) -> Self {
        self.dv.counter += 1;
        self
    }

    /// A registration of `configs` exactly.
    fn request_with(&self, configs: Vec<TopicConfig>) -> RegisterBroker {
        RegisterBroker {
            cluster: self.cluster.clone(),
            broker_addr: self.addr.clone(),
            broker_name: self.name.clone(),
            broker_id: self.id,
            ha_server_addr: self.ha.clone(),
            zone_name: self.zone.clone(),
            heartbeat_timeout_millis: self.timeout,
            enable_acting_master: self.acting_master,
            topic_config: TopicConfigAndMappingSerializeWrapper {
                data_version: self.dv,
                topic_config_table: configs
                    .into_iter()
                    .map(|tc| (tc.topic_name.clone().unwrap_or_default(), tc))
                    .collect::<std::collections::BTreeMap<_, _>>()
                    .into(),
                ..Default::default()
            },
            filter_server_list: self.filters.clone(),
            conn: self.conn,
            request_digest: None,
            version_frame: None,
            delta_base: None,
        }
    }

    /// A registration of `baseTopic` (Java default config) plus `topics` (perm 6, 8 queues),
    /// like Java's `registerBrokerWithNormalTopic`.
    fn request(&self, topics: &[&str]) -> RegisterBroker {
        let mut configs = vec![TopicConfig::named("baseTopic")];
        configs.extend(topics.iter().map(|t| topic_config(t, 6)));
        self.request_with(configs)
    }

    /// Its UNREGISTER_BROKER header.
    fn unregister(&self) -> UnregisterRequest {
        UnregisterRequest {
            cluster_name: self.cluster.clone(),
            broker_addr: self.addr.clone(),
            broker_name: self.name.clone(),
            broker_id: Some(self.id),
            fence: None,
        }
    }
}

/// A topic config with 8 read / 8 write queues.
fn topic_config(name: &str, perm: i32) -> TopicConfig {
    TopicConfig { perm, read_queue_nums: 8, write_queue_nums: 8, ..TopicConfig::named(name) }
}

/// Every topic's bucket is marked for each broker with a queue in it (`RouteTable::buckets`:
/// the scans that read only a group's buckets would miss an unmarked topic).
fn assert_buckets_cover(t: &RouteTable) {
    for (topic, entry) in t.topics.iter() {
        let bucket = cowmap::bucket(t.topics.hash_of(topic));
        for (g, _) in entry.queues.iter() {
            assert!(t.buckets.of([&**g]).contains(&bucket), "{topic}'s bucket is marked for {g}");
        }
    }
}

/// Registers at [`NOW`], keeping topics absent from the registration.
fn register(table: &mut RouteTable, broker: &Broker, topics: &[&str]) -> RegisterOutcome {
    table.register_owned(broker.request(topics), NOW, false).expect("registration accepted")
}

fn route(table: &RouteTable, topic: &str) -> TopicRouteData {
    table.pickup_route(topic, true).unwrap_or_else(|| panic!("no route for {topic}"))
}

/// (id, addr) of the route's group named `broker`.
fn addrs_of(route: &TopicRouteData, broker: &str) -> Vec<(i64, String)> {
    let bd = route.broker_datas.iter().find(|bd| bd.broker_name == broker).expect("group in route");
    bd.broker_addrs.0.iter().map(|(id, a)| (*id, a.clone())).collect()
}

fn perm_of(route: &TopicRouteData, broker: &str) -> i32 {
    route.queue_datas.iter().find(|q| q.broker_name == broker).expect("queue in route").perm
}
