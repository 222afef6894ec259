//! Typed calls for every request the nameserver serves, built and read like the Java client
//! (`MQClientAPIImpl`) and broker (`BrokerOuterAPI`) do.
//!
//! Every method follows the handle's target: a [`Client`] fails over across its list, a
//! [`Client::pinned`] handle talks to one nameserver. Nothing here loops over the list; callers
//! that must reach every nameserver (as Java's admin does for KV and perm changes) use
//! [`Client::each_namesrv`].

use std::collections::BTreeMap;

use bytes::Bytes;
use remoting::body::{
    self, BrokerMemberGroup, ClusterInfo, DataVersion, GetBrokerMemberGroupResponseBody, KvTable,
    QueueData, RegisterBrokerBody, TopicList, TopicRouteData,
};
use remoting::headers::{
    AddWritePermOfBrokerRequestHeader, AddWritePermOfBrokerResponseHeader,
    BrokerHeartbeatRequestHeader, DeleteKvConfigRequestHeader, DeleteTopicFromNamesrvRequestHeader,
    GetBrokerMemberGroupRequestHeader, GetKvConfigRequestHeader, GetKvConfigResponseHeader,
    GetKvListByNamespaceRequestHeader, GetRouteInfoRequestHeader, GetTopicsByClusterRequestHeader,
    PutKvConfigRequestHeader, QueryDataVersionRequestHeader, QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, RegisterTopicRequestHeader,
    UnregisterBrokerRequestHeader, WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use serde::de::DeserializeOwned;

use crate::client::Client;
use crate::error::{Error, Result};

/// Ext field carrying a broker's zone (Java `MixAll.ZONE_NAME`).
pub const ZONE_NAME_EXT: &str = remoting::headers::ZONE_NAME;

/// Who a broker is: the header fields of REGISTER/UNREGISTER_BROKER, QUERY_DATA_VERSION and
/// BROKER_HEARTBEAT.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerIdentity {
    pub cluster_name: String,
    pub broker_name: String,
    /// 0 = master.
    pub broker_id: i64,
    /// `ip:port` the broker serves on; the nameserver keys its tables by it.
    pub broker_addr: String,
    pub ha_server_addr: String,
    /// Sent as ext `__ZONE_NAME` when set.
    pub zone_name: Option<String>,
    /// Header `enableActingMaster` (a 5.x broker always sends it).
    pub enable_acting_master: bool,
    /// Header `heartbeatTimeoutMillis` (Java sends it only with `enableSlaveActingMaster`).
    pub heartbeat_timeout_millis: Option<i64>,
}

impl BrokerIdentity {
    /// A master (id 0) of `cluster`/`name` at `addr`, HA address = addr's host with port + 1.
    pub fn master(cluster: &str, name: &str, addr: &str) -> Self {
        Self::new(cluster, name, 0, addr)
    }

    /// A member with id `id` at `addr`; the HA address is addr's host with port + 1.
    pub fn new(cluster: &str, name: &str, id: i64, addr: &str) -> Self {
        let ha = match addr.rsplit_once(':').and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?))) {
            Some((host, port)) => format!("{host}:{}", port.wrapping_add(1)),
            None => addr.to_owned(),
        };
        Self {
            cluster_name: cluster.into(),
            broker_name: name.into(),
            broker_id: id,
            broker_addr: addr.into(),
            ha_server_addr: ha,
            zone_name: None,
            enable_acting_master: false,
            heartbeat_timeout_millis: None,
        }
    }

    /// Adds the zone ext field, as a Java broker's RPC hook does, when a zone is set.
    fn with_zone(&self, mut cmd: RemotingCommand) -> RemotingCommand {
        if let Some(zone) = &self.zone_name {
            cmd.ext_fields
                .get_or_insert_with(Default::default)
                .insert(ZONE_NAME_EXT, zone.as_str());
        }
        cmd
    }
}

/// A REGISTER_BROKER request: who, the topic table (and filter servers) as a Java broker sends
/// them, and whether to send the zlib body of old brokers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBroker {
    pub identity: BrokerIdentity,
    pub body: RegisterBrokerBody,
    /// Send the compressed body (and header `compressed=true`) instead of JSON.
    pub compressed: bool,
}

/// What the nameserver answers a registration with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterBrokerResult {
    /// The group's master, for a slave whose master is live.
    pub master_addr: Option<String>,
    /// The master's HA address, for a slave whose master is live.
    pub ha_server_addr: Option<String>,
    /// The `ORDER_TOPIC_CONFIG` namespace, when the nameserver returns it.
    pub kv_table: Option<KvTable>,
}

/// The answer to QUERY_DATA_VERSION.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryDataVersionResult {
    /// True when the nameserver has no live entry or a different version.
    pub changed: bool,
    /// The nameserver's stored version, when it has a live entry.
    pub data_version: Option<DataVersion>,
}

/// How to ask for a route.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteOptions {
    /// Header `acceptStandardJsonOnly`; absent when `None`.
    pub accept_standard_json_only: Option<bool>,
    /// Request `version` instead of the client's (e.g. 400 for a pre-4.9.4 client, which gets
    /// legacy JSON).
    pub version: Option<i32>,
}

/// The three unit-topic lists (311, 312, 313).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitTopics {
    /// GET_UNIT_TOPIC_LIST: `topicSysFlag & UNIT`.
    Unit,
    /// GET_HAS_UNIT_SUB_TOPIC_LIST: `topicSysFlag & UNIT_SUB`.
    HasUnitSub,
    /// GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: UNIT_SUB without UNIT.
    HasUnitSubUnunit,
}

pub(crate) fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

impl Client {
    /// Sends `req`; a response with another code than `expected` becomes [`Error::Server`].
    async fn call(
        &self,
        req: RemotingCommand,
        expected: ResponseCode,
    ) -> Result<(String, RemotingCommand)> {
        self.call_timeout(req, expected, self.config().request_timeout).await
    }

    async fn call_timeout(
        &self,
        req: RemotingCommand,
        expected: ResponseCode,
        timeout: std::time::Duration,
    ) -> Result<(String, RemotingCommand)> {
        let (addr, resp) = self.invoke_timeout(req, timeout).await?;
        if resp.code != expected.to_i32() {
            return Err(Error::Server { addr, code: resp.code, remark: resp.remark });
        }
        Ok((addr, resp))
    }

    pub(crate) async fn call_ok(&self, req: RemotingCommand) -> Result<(String, RemotingCommand)> {
        self.call(req, ResponseCode::Success).await
    }

    /// GET_ROUTEINFO_BY_TOPIC (105) as a Java 5.3.3 client asks it.
    /// Java: MQClientAPIImpl#getTopicRouteInfoFromNameServer
    pub async fn get_route(&self, topic: &str) -> Result<TopicRouteData> {
        self.get_route_with(topic, RouteOptions::default()).await
    }

    /// GET_ROUTEINFO_BY_TOPIC with a chosen version / `acceptStandardJsonOnly`, decoded.
    /// Errors: TOPIC_NOT_EXIST (17) and other codes as [`Error::Server`].
    pub async fn get_route_with(&self, topic: &str, opts: RouteOptions) -> Result<TopicRouteData> {
        let (addr, body) = self.get_route_body(topic, opts).await?;
        decode(&addr, &body)
    }

    /// GET_ROUTEINFO_BY_TOPIC, returning the raw body (legacy or standard JSON as the server
    /// chose) and the answering address.
    pub async fn get_route_body(&self, topic: &str, opts: RouteOptions) -> Result<(String, Bytes)> {
        let header = GetRouteInfoRequestHeader {
            topic: some(topic),
            accept_standard_json_only: opts.accept_standard_json_only,
        };
        let mut req = self.request(RequestCode::GetRouteinfoByTopic).with_header(&header);
        if let Some(v) = opts.version {
            req.version = v;
        }
        let (addr, resp) = self.call_ok(req).await?;
        let Some(body) = resp.body else {
            return Err(Error::Server { addr, code: resp.code, remark: resp.remark });
        };
        Ok((addr, body))
    }

    /// GET_BROKER_CLUSTER_INFO (106). Java: MQClientAPIImpl#getBrokerClusterInfo
    pub async fn cluster_info(&self) -> Result<ClusterInfo> {
        let (addr, resp) = self.call_ok(self.request(RequestCode::GetBrokerClusterInfo)).await?;
        decode_opt(&addr, resp.body.as_deref())
    }

    /// PUT_KV_CONFIG (100). Java: MQClientAPIImpl#putKVConfigValue (which sends to every nameserver)
    pub async fn put_kv_config(&self, namespace: &str, key: &str, value: &str) -> Result<()> {
        let header = PutKvConfigRequestHeader {
            namespace: some(namespace),
            key: some(key),
            value: some(value),
        };
        self.call_ok(self.request(RequestCode::PutKvConfig).with_header(&header)).await.map(drop)
    }

    /// GET_KV_CONFIG (101): `Ok(None)` when the nameserver answers QUERY_NOT_FOUND.
    /// Java: MQClientAPIImpl#getKVConfigValue
    pub async fn get_kv_config(&self, namespace: &str, key: &str) -> Result<Option<String>> {
        let header = GetKvConfigRequestHeader { namespace: some(namespace), key: some(key) };
        match self.call_ok(self.request(RequestCode::GetKvConfig).with_header(&header)).await {
            Ok((_, resp)) => Ok(resp.decode_header::<GetKvConfigResponseHeader>().value),
            Err(e) if e.response_code() == Some(ResponseCode::QueryNotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// DELETE_KV_CONFIG (102). Java: MQClientAPIImpl#deleteKVConfigValue
    pub async fn delete_kv_config(&self, namespace: &str, key: &str) -> Result<()> {
        let header = DeleteKvConfigRequestHeader { namespace: some(namespace), key: some(key) };
        self.call_ok(self.request(RequestCode::DeleteKvConfig).with_header(&header)).await.map(drop)
    }

    /// GET_KVLIST_BY_NAMESPACE (219): `Ok(None)` when the namespace does not exist.
    /// Java: MQClientAPIImpl#getKVListByNamespace
    pub async fn get_kv_list_by_namespace(&self, namespace: &str) -> Result<Option<KvTable>> {
        let header = GetKvListByNamespaceRequestHeader { namespace: some(namespace) };
        match self
            .call_ok(self.request(RequestCode::GetKvlistByNamespace).with_header(&header))
            .await
        {
            Ok((addr, resp)) => decode_opt(&addr, resp.body.as_deref()).map(Some),
            Err(e) if e.response_code() == Some(ResponseCode::QueryNotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The REGISTER_BROKER command for `req`, as a Java broker builds it: JSON body (or the zlib
    /// body when `compressed`) and `bodyCrc32` of the bytes sent.
    /// Java: BrokerOuterAPI#registerBrokerAll
    pub fn register_broker_command(&self, req: &RegisterBroker) -> RemotingCommand {
        let id = &req.identity;
        let body: Vec<u8> = if req.compressed {
            req.body.encode_compressed(self.config().version)
        } else {
            body::to_legacy_json(&req.body)
        };
        let header = RegisterBrokerRequestHeader {
            broker_name: some(&id.broker_name),
            broker_addr: some(&id.broker_addr),
            cluster_name: some(&id.cluster_name),
            ha_server_addr: some(&id.ha_server_addr),
            broker_id: Some(id.broker_id),
            heartbeat_timeout_millis: id.heartbeat_timeout_millis,
            enable_acting_master: Some(id.enable_acting_master),
            compressed: Some(req.compressed),
            body_crc32: Some(body::body_crc32(&body)),
        };
        id.with_zone(self.request(RequestCode::RegisterBroker).with_header(&header).with_body(body))
    }

    /// REGISTER_BROKER (103). Java: BrokerOuterAPI#registerBroker
    pub async fn register_broker(&self, req: &RegisterBroker) -> Result<RegisterBrokerResult> {
        self.send_register_broker(self.register_broker_command(req)).await
    }

    /// Sends a command made by [`Client::register_broker_command`] (encode once, send to many).
    pub async fn send_register_broker(&self, cmd: RemotingCommand) -> Result<RegisterBrokerResult> {
        self.send_register_broker_timeout(cmd, self.config().request_timeout).await
    }

    /// [`Client::send_register_broker`] with its own timeout (Java brokers wait 24 s).
    pub async fn send_register_broker_timeout(
        &self,
        cmd: RemotingCommand,
        timeout: std::time::Duration,
    ) -> Result<RegisterBrokerResult> {
        let (addr, resp) = self.call_timeout(cmd, ResponseCode::Success, timeout).await?;
        let kv_table = match resp.body.as_deref() {
            Some(b) => Some(decode(&addr, b)?),
            None => None,
        };
        let header: RegisterBrokerResponseHeader = resp.decode_header();
        Ok(RegisterBrokerResult {
            master_addr: header.master_addr,
            ha_server_addr: header.ha_server_addr,
            kv_table,
        })
    }

    /// UNREGISTER_BROKER (104); the nameserver removes the broker shortly after answering.
    /// Java: BrokerOuterAPI#unregisterBroker
    pub async fn unregister_broker(&self, id: &BrokerIdentity) -> Result<()> {
        let header = UnregisterBrokerRequestHeader {
            broker_name: some(&id.broker_name),
            broker_addr: some(&id.broker_addr),
            cluster_name: some(&id.cluster_name),
            broker_id: Some(id.broker_id),
        };
        let req = id.with_zone(self.request(RequestCode::UnregisterBroker).with_header(&header));
        self.call_ok(req).await.map(drop)
    }

    /// BROKER_HEARTBEAT (904), oneway like a Java broker. Java: BrokerOuterAPI#sendHeartbeat
    pub async fn broker_heartbeat(&self, id: &BrokerIdentity) -> Result<()> {
        self.invoke_oneway(self.heartbeat_command(id)).await
    }

    /// BROKER_HEARTBEAT (904) sent as a normal request (the nameserver answers SUCCESS).
    pub async fn broker_heartbeat_sync(&self, id: &BrokerIdentity) -> Result<()> {
        self.call_ok(self.heartbeat_command(id)).await.map(drop)
    }

    fn heartbeat_command(&self, id: &BrokerIdentity) -> RemotingCommand {
        let header = BrokerHeartbeatRequestHeader {
            cluster_name: some(&id.cluster_name),
            broker_addr: some(&id.broker_addr),
            broker_name: some(&id.broker_name),
            broker_id: Some(id.broker_id),
            heartbeat_timeout_mills: id.heartbeat_timeout_millis,
            ..Default::default()
        };
        id.with_zone(self.request(RequestCode::BrokerHeartbeat).with_header(&header))
    }

    /// QUERY_DATA_VERSION (322) with the broker's topic DataVersion as body.
    /// Java: BrokerOuterAPI#needRegister
    pub async fn query_data_version(
        &self,
        id: &BrokerIdentity,
        version: &DataVersion,
    ) -> Result<QueryDataVersionResult> {
        let (addr, resp) = self.call_ok(self.query_data_version_command(id, version)).await?;
        let header: QueryDataVersionResponseHeader = resp.decode_header();
        let changed = header
            .changed
            .ok_or_else(|| bad(&addr, "QUERY_DATA_VERSION response without `changed`"))?;
        let data_version = match resp.body.as_deref() {
            Some(b) => Some(decode(&addr, b)?),
            None => None,
        };
        Ok(QueryDataVersionResult { changed, data_version })
    }

    /// QUERY_DATA_VERSION sent oneway: the heartbeat of a broker with `compatibleWithOldNameSrv`.
    /// Java: BrokerOuterAPI#sendHeartbeatViaDataVersion
    pub async fn query_data_version_oneway(
        &self,
        id: &BrokerIdentity,
        version: &DataVersion,
    ) -> Result<()> {
        self.invoke_oneway(self.query_data_version_command(id, version)).await
    }

    fn query_data_version_command(
        &self,
        id: &BrokerIdentity,
        version: &DataVersion,
    ) -> RemotingCommand {
        let header = QueryDataVersionRequestHeader {
            broker_name: some(&id.broker_name),
            broker_addr: some(&id.broker_addr),
            cluster_name: some(&id.cluster_name),
            broker_id: Some(id.broker_id),
        };
        let req = self.request(RequestCode::QueryDataVersion).with_header(&header);
        id.with_zone(req.with_body(body::to_legacy_json(version)))
    }

    /// WIPE_WRITE_PERM_OF_BROKER (205): returns `wipeTopicCount`.
    /// Java: MQClientAPIImpl#wipeWritePermOfBroker
    pub async fn wipe_write_perm(&self, broker_name: &str) -> Result<i32> {
        let header = WipeWritePermOfBrokerRequestHeader { broker_name: some(broker_name) };
        let req = self.request(RequestCode::WipeWritePermOfBroker).with_header(&header);
        let (addr, resp) = self.call_ok(req).await?;
        let count = resp.decode_header::<WipeWritePermOfBrokerResponseHeader>().wipe_topic_count;
        count.ok_or_else(|| bad(&addr, "response without a numeric `wipeTopicCount`"))
    }

    /// ADD_WRITE_PERM_OF_BROKER (327): returns `addTopicCount`.
    /// Java: MQClientAPIImpl#addWritePermOfBroker
    pub async fn add_write_perm(&self, broker_name: &str) -> Result<i32> {
        let header = AddWritePermOfBrokerRequestHeader { broker_name: some(broker_name) };
        let req = self.request(RequestCode::AddWritePermOfBroker).with_header(&header);
        let (addr, resp) = self.call_ok(req).await?;
        let count = resp.decode_header::<AddWritePermOfBrokerResponseHeader>().add_topic_count;
        count.ok_or_else(|| bad(&addr, "response without a numeric `addTopicCount`"))
    }

    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206). Java: MQClientAPIImpl#getTopicListFromNameServer
    pub async fn all_topic_list(&self) -> Result<TopicList> {
        self.topic_list(self.request(RequestCode::GetAllTopicListFromNameserver)).await
    }

    /// GET_TOPICS_BY_CLUSTER (224). Java: MQClientAPIImpl#getTopicsByCluster
    pub async fn topics_by_cluster(&self, cluster: &str) -> Result<TopicList> {
        let header = GetTopicsByClusterRequestHeader { cluster: some(cluster) };
        self.topic_list(self.request(RequestCode::GetTopicsByCluster).with_header(&header)).await
    }

    /// GET_SYSTEM_TOPIC_LIST_FROM_NS (304): cluster and broker names, plus one broker address.
    /// Java: MQClientAPIImpl#getSystemTopicList (the nameserver part)
    pub async fn system_topic_list(&self) -> Result<TopicList> {
        self.topic_list(self.request(RequestCode::GetSystemTopicListFromNs)).await
    }

    /// GET_UNIT_TOPIC_LIST (311) / GET_HAS_UNIT_SUB_TOPIC_LIST (312) /
    /// GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST (313).
    pub async fn unit_topic_list(&self, which: UnitTopics) -> Result<TopicList> {
        let code = match which {
            UnitTopics::Unit => RequestCode::GetUnitTopicList,
            UnitTopics::HasUnitSub => RequestCode::GetHasUnitSubTopicList,
            UnitTopics::HasUnitSubUnunit => RequestCode::GetHasUnitSubUnunitTopicList,
        };
        self.topic_list(self.request(code)).await
    }

    async fn topic_list(&self, req: RemotingCommand) -> Result<TopicList> {
        let (addr, resp) = self.call_ok(req).await?;
        decode_opt(&addr, resp.body.as_deref())
    }

    /// DELETE_TOPIC_IN_NAMESRV (216); with a cluster, only that cluster's queues are removed.
    /// Java: MQClientAPIImpl#deleteTopicInNameServer
    pub async fn delete_topic(&self, topic: &str, cluster: Option<&str>) -> Result<()> {
        let header = DeleteTopicFromNamesrvRequestHeader {
            topic: some(topic),
            cluster_name: cluster.map(str::to_owned),
        };
        let req = self.request(RequestCode::DeleteTopicInNamesrv).with_header(&header);
        self.call_ok(req).await.map(drop)
    }

    /// REGISTER_TOPIC_IN_NAMESRV (217): a TopicRouteData body with only `queueDatas`.
    /// Java: BrokerOuterAPI#registerSingleTopicAll
    pub async fn register_topic(&self, topic: &str, queue_datas: &[QueueData]) -> Result<()> {
        let route = TopicRouteData { queue_datas: queue_datas.to_vec(), ..Default::default() };
        let req = self
            .request(RequestCode::RegisterTopicInNamesrv)
            .with_header(&RegisterTopicRequestHeader { topic: some(topic) })
            .with_body(body::to_legacy_json(&route));
        self.call_ok(req).await.map(drop)
    }

    /// GET_NAMESRV_CONFIG (319) as the properties text the nameserver sends (may be empty).
    pub async fn get_namesrv_config_text(&self) -> Result<String> {
        let (_, resp) = self.call_ok(self.request(RequestCode::GetNamesrvConfig)).await?;
        Ok(String::from_utf8_lossy(resp.body_bytes()).into_owned())
    }

    /// GET_NAMESRV_CONFIG (319), parsed. Java: MQClientAPIImpl#getNameServerConfig
    pub async fn get_namesrv_config(&self) -> Result<BTreeMap<String, String>> {
        Ok(crate::properties::parse(&self.get_namesrv_config_text().await?))
    }

    /// UPDATE_NAMESRV_CONFIG (318) with `key=value` lines. Nothing is sent for an empty map
    /// (like Java). Errors: NO_PERMISSION (16) for a blacklisted key.
    /// Java: MQClientAPIImpl#updateNameServerConfig
    pub async fn update_namesrv_config(&self, props: &BTreeMap<String, String>) -> Result<()> {
        let text = crate::properties::to_string(props);
        if text.is_empty() {
            return Ok(());
        }
        let req = self.request(RequestCode::UpdateNamesrvConfig).with_body(text.into_bytes());
        self.call_ok(req).await.map(drop)
    }

    /// GET_BROKER_MEMBER_GROUP (901). Java: BrokerOuterAPI#syncBrokerMemberGroup
    pub async fn get_broker_member_group(
        &self,
        cluster: &str,
        broker_name: &str,
    ) -> Result<BrokerMemberGroup> {
        let header = GetBrokerMemberGroupRequestHeader {
            cluster_name: some(cluster),
            broker_name: some(broker_name),
        };
        let req = self.request(RequestCode::GetBrokerMemberGroup).with_header(&header);
        let (addr, resp) = self.call_ok(req).await?;
        let body: GetBrokerMemberGroupResponseBody = decode_opt(&addr, resp.body.as_deref())?;
        Ok(body.broker_member_group)
    }
}

pub(crate) fn bad(addr: &str, reason: impl Into<String>) -> Error {
    Error::BadResponse { addr: addr.to_owned(), reason: reason.into() }
}

fn decode<T: DeserializeOwned>(addr: &str, bytes: &[u8]) -> Result<T> {
    body::from_json(bytes).map_err(|e| bad(addr, e.to_string()))
}

/// Decodes a body that must be there (Java's decode of a null body fails too).
pub(crate) fn decode_opt<T: DeserializeOwned>(addr: &str, bytes: Option<&[u8]>) -> Result<T> {
    match bytes {
        Some(b) => decode(addr, b),
        None => Err(bad(addr, "response has no body")),
    }
}
