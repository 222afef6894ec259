//! Typed calls for the RocketMQ 5 controller's requests, built and read like the Java admin
//! (`MQClientAPIImpl`) and broker (`BrokerOuterAPI`) do. A handle talks to its target; writes
//! and most reads must reach the leader, found with [`Client::controller_leader`] as Java's
//! admin does (ask any controller for the metadata, then talk to the leader it names). Also
//! GET_BROKER_EPOCH_CACHE, the one controller-mode read that brokers serve.

use std::collections::BTreeMap;

use remoting::body::{
    self, BrokerReplicasInfo, ElectMasterResponseBody, EpochEntryCache, SyncStateSet,
};
use remoting::headers::{
    CleanControllerBrokerDataRequestHeader, ElectMasterRequestHeader, ElectMasterResponseHeader,
    GetMetaDataResponseHeader, GetReplicaInfoRequestHeader, GetReplicaInfoResponseHeader,
};
use remoting::{RequestCode, ResponseCode};

use crate::client::Client;
use crate::error::{Error, Result};
use crate::namesrv::{bad, decode_opt, some};

/// How long [`Client::on_controller_leader`] keeps looking for a leader before giving a 2007
/// back: an election at the default timeouts (1.5 s, randomized up to twice that) plus the new
/// leader's first quorum confirmation, with room for a busy machine.
pub const LEADER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The pause between two attempts of [`Client::on_controller_leader`].
const LEADER_RETRY_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Client {
    /// CONTROLLER_GET_METADATA_INFO (1005): the group, its leader and peers, as this handle's
    /// target sees them. Java: `MQClientAPIImpl#getControllerMetaData`
    pub async fn get_controller_metadata(&self) -> Result<GetMetaDataResponseHeader> {
        let (_, resp) = self.call_ok(self.request(RequestCode::ControllerGetMetadataInfo)).await?;
        Ok(resp.decode_header())
    }

    /// A handle pinned to the controller leader, as named by this handle's target.
    pub async fn controller_leader(&self) -> Result<Client> {
        let meta = self.get_controller_metadata().await?;
        match meta.controller_leader_address.filter(|a| !a.is_empty()) {
            Some(leader) => Ok(self.pinned(&leader)),
            None => {
                Err(bad(self.pinned_addr().unwrap_or_default(), "the controller knows no leader"))
            }
        }
    }

    /// Runs `call` on the controller leader; when the node it reached answers
    /// CONTROLLER_NOT_LEADER (2007: leadership moved between the look-up and the call, or an
    /// election is under way, and nothing was applied), looks the leader up again and retries
    /// every half second for up to [`LEADER_WAIT`]. Java's admin fails at the first 2007; any
    /// other answer or error is returned as it is.
    pub async fn on_controller_leader<T, F, Fut>(&self, call: F) -> Result<T>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        self.on_controller_leader_within(LEADER_WAIT, call).await
    }

    /// [`Client::on_controller_leader`], giving the 2007 back once `wait` has passed.
    pub async fn on_controller_leader_within<T, F, Fut>(
        &self,
        wait: std::time::Duration,
        call: F,
    ) -> Result<T>
    where
        F: Fn(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let outcome = match self.controller_leader().await {
                Ok(leader) => call(leader).await,
                Err(e) => Err(e),
            };
            match outcome {
                Err(Error::Server { code, .. })
                    if code == i32::from(ResponseCode::ControllerNotLeader)
                        && tokio::time::Instant::now() + LEADER_RETRY_EVERY < deadline =>
                {
                    tokio::time::sleep(LEADER_RETRY_EVERY).await;
                }
                other => return other,
            }
        }
    }

    /// CONTROLLER_GET_SYNC_STATE_DATA (1006) for `broker_names` (a JSON list body).
    /// Java: `MQClientAPIImpl#getInSyncStateData` (after finding the leader)
    pub async fn get_sync_state_data(&self, broker_names: &[String]) -> Result<BrokerReplicasInfo> {
        let req = self
            .request(RequestCode::ControllerGetSyncStateData)
            .with_body(body::to_legacy_json(broker_names));
        let (addr, resp) = self.call_ok(req).await?;
        decode_opt(&addr, resp.body.as_deref())
    }

    /// CONTROLLER_GET_REPLICA_INFO (1004): a group's master and sync-state set.
    /// Java: `BrokerOuterAPI#getReplicaInfo`
    pub async fn get_replica_info(
        &self,
        broker_name: &str,
    ) -> Result<(GetReplicaInfoResponseHeader, SyncStateSet)> {
        let header = GetReplicaInfoRequestHeader { broker_name: some(broker_name) };
        let (addr, resp) = self
            .call_ok(self.request(RequestCode::ControllerGetReplicaInfo).with_header(&header))
            .await?;
        Ok((resp.decode_header(), decode_opt(&addr, resp.body.as_deref())?))
    }

    /// CONTROLLER_ELECT_MASTER (1002) as an admin asks it (`designateElect`: this broker or
    /// nobody). Java: `MQClientAPIImpl#electMaster`
    pub async fn elect_master(
        &self,
        cluster: &str,
        broker_name: &str,
        broker_id: i64,
    ) -> Result<(ElectMasterResponseHeader, ElectMasterResponseBody)> {
        let header = ElectMasterRequestHeader {
            cluster_name: some(cluster),
            broker_name: some(broker_name),
            broker_id: Some(broker_id),
            designate_elect: Some(true),
            invoke_time: Some(now_millis()),
        };
        let (addr, resp) = self
            .call_ok(self.request(RequestCode::ControllerElectMaster).with_header(&header))
            .await?;
        Ok((resp.decode_header(), decode_opt(&addr, resp.body.as_deref())?))
    }

    /// CLEAN_BROKER_DATA (1011): forget a group, or the ids `1;2;3` of it.
    /// Java: `MQClientAPIImpl#cleanControllerBrokerData`
    pub async fn clean_controller_broker_data(
        &self,
        cluster: Option<&str>,
        broker_name: &str,
        ids_to_clean: Option<&str>,
        clean_living_broker: bool,
    ) -> Result<()> {
        let header = CleanControllerBrokerDataRequestHeader {
            cluster_name: cluster.map(str::to_owned),
            broker_name: some(broker_name),
            broker_controller_ids_to_clean: ids_to_clean.map(str::to_owned),
            is_clean_living_broker: Some(clean_living_broker),
            invoke_time: Some(now_millis()),
        };
        self.call_ok(self.request(RequestCode::CleanBrokerData).with_header(&header))
            .await
            .map(drop)
    }

    /// GET_BROKER_EPOCH_CACHE (1007), which a broker in controller mode serves (no header, no
    /// body): its cluster, name, id, master epochs and max commit-log offset. Send it through a
    /// handle pinned to the broker. Java: `MQClientAPIImpl#getBrokerEpochCache`
    pub async fn get_broker_epoch_cache(&self) -> Result<EpochEntryCache> {
        let (addr, resp) = self.call_ok(self.request(RequestCode::GetBrokerEpochCache)).await?;
        decode_opt(&addr, resp.body.as_deref())
    }

    /// GET_CONTROLLER_CONFIG (1010), parsed. Java: `MQClientAPIImpl#getControllerConfig`
    pub async fn get_controller_config(&self) -> Result<BTreeMap<String, String>> {
        let (_, resp) = self.call_ok(self.request(RequestCode::GetControllerConfig)).await?;
        Ok(crate::properties::parse(&String::from_utf8_lossy(resp.body_bytes())))
    }

    /// UPDATE_CONTROLLER_CONFIG (1009) with `key=value` lines; nothing is sent for an empty
    /// map. Java: `MQClientAPIImpl#updateControllerConfig`
    pub async fn update_controller_config(&self, props: &BTreeMap<String, String>) -> Result<()> {
        let text = crate::properties::to_string(props);
        if text.is_empty() {
            return Ok(());
        }
        let req = self.request(RequestCode::UpdateControllerConfig).with_body(text.into_bytes());
        self.call_ok(req).await.map(drop)
    }
}
