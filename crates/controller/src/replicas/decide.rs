//! What the leader answers to each controller request, and which event (if any) it proposes.
//! Reads only; the event changes the state once Raft has committed it. Remarks and codes are
//! Java's. Java: `ReplicasInfoManager#alterSyncStateSet`, `#electMaster`, `#getNextBrokerId`,
//! `#applyBrokerId`, `#registerBroker`, `#getReplicaInfo`, `#getSyncStateData`,
//! `#cleanBrokerData`

use std::collections::BTreeSet;

use remoting::body::{
    to_legacy_json, BrokerAddrs, BrokerMemberGroup, BrokerReplicasInfo, ElectMasterResponseBody,
    LongSet, ReplicaIdentity, ReplicasInfo, SyncStateSet,
};
use remoting::headers::{
    AlterSyncStateSetRequestHeader, AlterSyncStateSetResponseHeader, ApplyBrokerIdRequestHeader,
    ApplyBrokerIdResponseHeader, CleanControllerBrokerDataRequestHeader, CommandHeader,
    ElectMasterRequestHeader, ElectMasterResponseHeader, GetNextBrokerIdRequestHeader,
    GetNextBrokerIdResponseHeader, GetReplicaInfoRequestHeader, GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerRequestHeader, RegisterBrokerToControllerResponseHeader,
};
use remoting::{ExtFields, ResponseCode};

use super::event::Event;
use super::group::{BrokerReplicaInfo, SyncStateInfo, FIRST_BROKER_CONTROLLER_ID};
use super::Replicas;
use crate::elect::{self, BrokerLiveness, Candidates};

/// The answer to a request and the event to replicate before sending it. Java: `ControllerResult`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision<H> {
    pub code: ResponseCode,
    pub remark: Option<String>,
    /// The response header; `None` for Java's header-less (`Void`) results.
    pub header: Option<H>,
    /// The JSON body, as Java writes it.
    pub body: Option<Vec<u8>>,
    pub event: Option<Event>,
}

/// The header of a result with none (Java `ControllerResult<Void>`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoHeader;

impl CommandHeader for NoHeader {
    fn from_ext(_: Option<&ExtFields>) -> Self {
        NoHeader
    }
    fn to_ext(&self) -> ExtFields {
        ExtFields::new()
    }
}

impl<H> Decision<H> {
    fn ok(header: Option<H>) -> Self {
        Self { code: ResponseCode::Success, remark: None, header, body: None, event: None }
    }

    fn fail(header: Option<H>, code: ResponseCode, remark: impl Into<String>) -> Self {
        Self { code, remark: Some(remark.into()), header, body: None, event: None }
    }

    fn with_body(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    fn with_event(mut self, event: Event) -> Self {
        self.event = Some(event);
        self
    }
}

/// A request field Java would dereference while it is absent: Java fails the request with
/// SYSTEM_ERROR (a `NullPointerException`), and so does this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("java.lang.NullPointerException: request field {0} is missing")]
pub struct MissingField(pub &'static str);

fn need<T: Clone>(v: &Option<T>, name: &'static str) -> Result<T, MissingField> {
    v.clone().ok_or(MissingField(name))
}

/// Java `String.valueOf` of a nullable id.
fn show(id: Option<i64>) -> String {
    id.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

fn sync_state_body(set: &BTreeSet<i64>, epoch: i32) -> Vec<u8> {
    to_legacy_json(&SyncStateSet {
        sync_state_set: LongSet(set.clone()),
        sync_state_set_epoch: epoch,
    })
}

impl Replicas {
    fn group(&self, broker_name: &str) -> Option<(&SyncStateInfo, &BrokerReplicaInfo)> {
        if !self.contains(broker_name) {
            return None;
        }
        Some((self.sync_states.get(broker_name)?, self.replicas.get(broker_name)?))
    }

    /// 1001 CONTROLLER_ALTER_SYNC_STATE_SET: the master reports a new sync-state set.
    /// Java: `ReplicasInfoManager#alterSyncStateSet`
    pub fn alter_sync_state_set(
        &self,
        req: &AlterSyncStateSetRequestHeader,
        new_set: &SyncStateSet,
        live: &dyn BrokerLiveness,
    ) -> Result<Decision<AlterSyncStateSetResponseHeader>, MissingField> {
        use ResponseCode as R;
        let header = || Some(AlterSyncStateSetResponseHeader { new_sync_state_set_epoch: Some(0) });
        let broker_name = need(&req.broker_name, "brokerName")?;
        let Some((sync, info)) = self.group(&broker_name) else {
            return Ok(Decision::fail(
                header(),
                R::ControllerAlterSyncStateSetFailed,
                "Broker metadata is not existed",
            ));
        };
        let new_ids = &new_set.sync_state_set.0;
        if *new_ids == sync.sync_state_set {
            return Ok(Decision::fail(
                header(),
                R::ControllerAlterSyncStateSetFailed,
                "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet",
            ));
        }
        if sync.master_broker_id.is_none() || sync.master_broker_id != req.master_broker_id {
            return Ok(Decision::fail(
                header(),
                R::ControllerInvalidMaster,
                format!(
                    "Rejecting alter syncStateSet request because the current leader is:{{{}}}, not {{{}}}",
                    show(sync.master_broker_id),
                    show(req.master_broker_id)
                ),
            ));
        }
        let master_epoch = need(&req.master_epoch, "masterEpoch")?;
        if master_epoch != sync.master_epoch {
            return Ok(Decision::fail(
                header(),
                R::ControllerFencedMasterEpoch,
                format!(
                    "Rejecting alter syncStateSet request because the current master epoch is:{{{}}}, not {{{}}}",
                    sync.master_epoch, master_epoch
                ),
            ));
        }
        if new_set.sync_state_set_epoch != sync.sync_state_set_epoch {
            return Ok(Decision::fail(
                header(),
                R::ControllerFencedSyncStateSetEpoch,
                format!(
                    "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{}}}, not {{{}}}",
                    sync.sync_state_set_epoch, new_set.sync_state_set_epoch
                ),
            ));
        }
        for id in new_set.sync_state_set.jdk_hash_order() {
            if !info.brokers.contains_key(&id) {
                return Ok(Decision::fail(
                    header(),
                    R::ControllerInvalidReplicas,
                    format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't exist"),
                ));
            }
            if !live.is_alive(&info.cluster_name, &info.broker_name, id) {
                return Ok(Decision::fail(
                    header(),
                    R::ControllerBrokerNotAlive,
                    format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't alive"),
                ));
            }
        }
        if !sync.master_broker_id.is_some_and(|m| new_ids.contains(&m)) {
            return Ok(Decision::fail(
                header(),
                R::ControllerAlterSyncStateSetFailed,
                format!(
                    "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{}}}",
                    show(sync.master_broker_id)
                ),
            ));
        }
        let epoch = sync.sync_state_set_epoch + 1;
        Ok(Decision::ok(Some(AlterSyncStateSetResponseHeader {
            new_sync_state_set_epoch: Some(epoch),
        }))
        .with_body(sync_state_body(new_ids, epoch))
        .with_event(Event::AlterSyncStateSet {
            broker_name,
            new_sync_state_set: new_ids.clone(),
            fence: Some((sync.master_epoch, sync.sync_state_set_epoch)),
        }))
    }

    /// 1002 CONTROLLER_ELECT_MASTER, from a broker (its own id: taken as is on the group's
    /// first election), an admin (`designateElect`: that id or nobody) or the controller itself
    /// (id -1 or absent: a failure still records that the group has no master).
    /// `unclean`: `enableElectUncleanMaster`. Java: `ReplicasInfoManager#electMaster`
    pub fn elect_master(
        &self,
        req: &ElectMasterRequestHeader,
        live: &dyn BrokerLiveness,
        unclean: bool,
    ) -> Result<Decision<ElectMasterResponseHeader>, MissingField> {
        use ResponseCode as R;
        let broker_name = need(&req.broker_name, "brokerName")?;
        let empty = || Some(ElectMasterResponseHeader::default());
        let Some((sync, info)) = self.group(&broker_name) else {
            return Ok(Decision::fail(
                empty(),
                R::ControllerBrokerNeedToBeRegistered,
                "Broker hasn't been registered",
            ));
        };
        let old_master = sync.master_broker_id;
        let all = info.all_ids();
        let mut new_master = if sync.is_first_time_for_elect() { req.broker_id } else { None };
        if new_master.is_none_or(|m| m == -1) {
            let preferred = if req.designate_elect.unwrap_or(false) { req.broker_id } else { None };
            new_master = elect::elect(
                live,
                &Candidates {
                    cluster: &info.cluster_name,
                    broker_name: &info.broker_name,
                    sync_state_set: &sync.sync_state_set,
                    all_replicas: unclean.then_some(&all),
                    old_master,
                    preferred,
                },
            );
        }
        let fence = Some((sync.master_epoch, sync.sync_state_set_epoch));
        match new_master {
            Some(m) if Some(m) == old_master => {
                let remark = format!(
                    "The old master {m} is still alive, not need to elect new master for broker {}",
                    info.broker_name
                );
                tracing::warn!(broker = %broker_name, master = m, "{remark}");
                let header = ElectMasterResponseHeader {
                    master_broker_id: Some(m),
                    master_address: info.address(Some(m)).map(str::to_owned),
                    master_epoch: Some(sync.master_epoch),
                    sync_state_set_epoch: Some(sync.sync_state_set_epoch),
                };
                let body = ElectMasterResponseBody {
                    broker_member_group: None,
                    sync_state_set: LongSet(sync.sync_state_set.clone()),
                };
                Ok(Decision::fail(Some(header), R::ControllerMasterStillExist, remark)
                    .with_body(to_legacy_json(&body)))
            }
            Some(m) => {
                let header = ElectMasterResponseHeader {
                    master_broker_id: Some(m),
                    master_address: info.address(Some(m)).map(str::to_owned),
                    master_epoch: Some(sync.master_epoch + 1),
                    sync_state_set_epoch: Some(sync.sync_state_set_epoch + 1),
                };
                let body = ElectMasterResponseBody {
                    broker_member_group: Some(member_group(info)),
                    sync_state_set: LongSet([m].into()),
                };
                tracing::info!(broker = %broker_name, master = m, "elect new master");
                Ok(Decision::ok(Some(header)).with_body(to_legacy_json(&body)).with_event(
                    Event::ElectMaster {
                        broker_name,
                        new_master_elected: true,
                        new_master_broker_id: Some(m),
                        fence,
                    },
                ))
            }
            None if req.broker_id.is_none_or(|id| id == -1) => {
                tracing::warn!(broker = %broker_name, "failed to elect a new master");
                Ok(Decision::fail(
                    empty(),
                    R::ControllerMasterNotAvailable,
                    "Old master has down and failed to elect a new broker master",
                )
                .with_event(Event::ElectMaster {
                    broker_name,
                    new_master_elected: false,
                    new_master_broker_id: None,
                    fence,
                }))
            }
            None => {
                tracing::warn!(broker = %broker_name, "failed to elect a new master");
                Ok(Decision::fail(
                    empty(),
                    R::ControllerElectMasterFailed,
                    "Failed to elect a new master",
                ))
            }
        }
    }

    /// The group's members as the body of an election answer. Java:
    /// `ReplicasInfoManager#buildBrokerMemberGroup`
    pub fn member_group_of(&self, broker_name: &str) -> Option<BrokerMemberGroup> {
        self.replicas.get(broker_name).map(member_group)
    }

    /// 1012 CONTROLLER_GET_NEXT_BROKER_ID. Java: `ReplicasInfoManager#getNextBrokerId`
    pub fn next_broker_id(
        &self,
        req: &GetNextBrokerIdRequestHeader,
    ) -> Decision<GetNextBrokerIdResponseHeader> {
        let next = req
            .broker_name
            .as_deref()
            .and_then(|n| self.replicas.get(n))
            .map_or(FIRST_BROKER_CONTROLLER_ID, |info| info.next_assign_broker_id);
        Decision::ok(Some(GetNextBrokerIdResponseHeader {
            cluster_name: req.cluster_name.clone(),
            broker_name: req.broker_name.clone(),
            next_broker_id: Some(next),
        }))
    }

    /// 1013 CONTROLLER_APPLY_BROKER_ID: a broker claims an id; granted when it is free, or
    /// already its own (same register check code). Java: `ReplicasInfoManager#applyBrokerId`
    pub fn apply_broker_id(
        &self,
        req: &ApplyBrokerIdRequestHeader,
    ) -> Result<Decision<ApplyBrokerIdResponseHeader>, MissingField> {
        let broker_name = need(&req.broker_name, "brokerName")?;
        let check_code = need(&req.register_check_code, "registerCheckCode")?;
        let id = need(&req.applied_broker_id, "appliedBrokerId")?;
        let address = check_code.split(';').next().unwrap_or("").to_owned();
        let header = || {
            Some(ApplyBrokerIdResponseHeader {
                cluster_name: req.cluster_name.clone(),
                broker_name: req.broker_name.clone(),
            })
        };
        let event = Event::ApplyBrokerId {
            cluster_name: req.cluster_name.clone().unwrap_or_default(),
            broker_name: broker_name.clone(),
            broker_address: address,
            new_broker_id: id,
            register_check_code: check_code.clone(),
        };
        match self.replicas.get(&broker_name) {
            None if id == FIRST_BROKER_CONTROLLER_ID => Ok(Decision::ok(header()).with_event(event)),
            None => Ok(Decision::fail(
                header(),
                ResponseCode::ControllerBrokerIdInvalid,
                format!("Broker-set: {broker_name} hasn't been registered in controller, but broker try to apply brokerId: {id}"),
            )),
            Some(info) => match info.brokers.get(&id) {
                Some(r) if r.register_check_code != check_code => Ok(Decision::fail(
                    header(),
                    ResponseCode::ControllerBrokerIdInvalid,
                    format!("Fail to apply brokerId: {id} in broker-set: {broker_name}"),
                )),
                _ => Ok(Decision::ok(header()).with_event(event)),
            },
        }
    }

    /// 1003 CONTROLLER_REGISTER_BROKER: a broker with an id says it is up (at this address);
    /// the answer names the master when one exists and is alive.
    /// Java: `ReplicasInfoManager#registerBroker`
    pub fn register_broker(
        &self,
        req: &RegisterBrokerToControllerRequestHeader,
        live: &dyn BrokerLiveness,
    ) -> Result<Decision<RegisterBrokerToControllerResponseHeader>, MissingField> {
        let broker_name = need(&req.broker_name, "brokerName")?;
        let cluster = req.cluster_name.clone().unwrap_or_default();
        let mut header = RegisterBrokerToControllerResponseHeader {
            cluster_name: req.cluster_name.clone(),
            broker_name: req.broker_name.clone(),
            ..Default::default()
        };
        let Some((sync, info)) = self.group(&broker_name) else {
            return Ok(Decision::fail(
                Some(header),
                ResponseCode::ControllerBrokerNeedToBeRegistered,
                format!("Broker-set: {broker_name} hasn't been registered in controller"),
            ));
        };
        let id = req.broker_id;
        let Some(replica) = id.and_then(|id| info.brokers.get(&id)) else {
            return Ok(Decision::fail(
                Some(header),
                ResponseCode::ControllerBrokerNeedToBeRegistered,
                format!(
                    "BrokerId: {} hasn't been registered in broker-set: {broker_name}",
                    show(id)
                ),
            ));
        };
        let address = need(&req.broker_address, "brokerAddress")?;
        if let Some(master) =
            sync.master_broker_id.filter(|&m| live.is_alive(&cluster, &broker_name, m))
        {
            header.master_broker_id = Some(master);
            header.master_address = info.address(Some(master)).map(str::to_owned);
            header.master_epoch = Some(sync.master_epoch);
            header.sync_state_set_epoch = Some(sync.sync_state_set_epoch);
        }
        let mut decision = Decision::ok(Some(header))
            .with_body(sync_state_body(&sync.sync_state_set, sync.sync_state_set_epoch));
        if replica.address != address {
            decision = decision.with_event(Event::UpdateBrokerAddress {
                cluster_name: cluster,
                broker_name,
                broker_address: address,
                broker_id: id.unwrap_or_default(),
            });
        }
        Ok(decision)
    }

    /// 1004 CONTROLLER_GET_REPLICA_INFO. Java: `ReplicasInfoManager#getReplicaInfo`
    pub fn replica_info(
        &self,
        req: &GetReplicaInfoRequestHeader,
    ) -> Decision<GetReplicaInfoResponseHeader> {
        match req.broker_name.as_deref().and_then(|n| self.group(n)) {
            Some((sync, info)) => Decision::ok(Some(GetReplicaInfoResponseHeader {
                master_broker_id: sync.master_broker_id,
                master_address: info.address(sync.master_broker_id).map(str::to_owned),
                master_epoch: Some(sync.master_epoch),
            }))
            .with_body(sync_state_body(&sync.sync_state_set, sync.sync_state_set_epoch)),
            None => Decision::fail(
                Some(GetReplicaInfoResponseHeader::default()),
                ResponseCode::ControllerBrokerMetadataNotExist,
                "Broker metadata is not existed",
            ),
        }
    }

    /// 1006 CONTROLLER_GET_SYNC_STATE_DATA: every named group's master and replicas, each
    /// replica marked alive or not. Java: `ReplicasInfoManager#getSyncStateData`
    pub fn sync_state_data(
        &self,
        broker_names: &[String],
        live: &dyn BrokerLiveness,
    ) -> Decision<NoHeader> {
        let mut out = BrokerReplicasInfo::default();
        for name in broker_names {
            let Some((sync, info)) = self.group(name) else { continue };
            let (mut in_sync, mut not_in_sync) = (Vec::new(), Vec::new());
            for (&id, replica) in &info.brokers {
                let identity = ReplicaIdentity {
                    alive: Some(live.is_alive(&info.cluster_name, name, id)),
                    broker_address: replica.address.clone(),
                    broker_id: id,
                    broker_name: name.clone(),
                };
                if sync.sync_state_set.contains(&id) {
                    in_sync.push(identity);
                } else {
                    not_in_sync.push(identity);
                }
            }
            out.replicas_info_table.insert(
                name.clone(),
                ReplicasInfo {
                    in_sync_replicas: in_sync,
                    master_address: info.address(sync.master_broker_id).map(str::to_owned),
                    master_broker_id: sync.master_broker_id,
                    master_epoch: sync.master_epoch,
                    not_in_sync_replicas: not_in_sync,
                    sync_state_set_epoch: sync.sync_state_set_epoch,
                },
            );
        }
        Decision::ok(None).with_body(to_legacy_json(&out))
    }

    /// 1011 CLEAN_BROKER_DATA: forget a group, or some of its ids, when they are not alive
    /// (unless `isCleanLivingBroker`). Java: `ReplicasInfoManager#cleanBrokerData`
    pub fn clean_broker_data(
        &self,
        req: &CleanControllerBrokerDataRequestHeader,
        live: &dyn BrokerLiveness,
    ) -> Result<Decision<NoHeader>, MissingField> {
        let code = ResponseCode::ControllerInvalidCleanBrokerMetadata;
        let broker_name = need(&req.broker_name, "brokerName")?;
        let cluster = req.cluster_name.clone().unwrap_or_default();
        let ids_text =
            req.broker_controller_ids_to_clean.as_deref().filter(|s| !s.trim().is_empty());
        let mut ids = None;
        if !req.is_clean_living_broker.unwrap_or(false) {
            let has_master =
                self.sync_states.get(&broker_name).is_some_and(|s| s.master_broker_id.is_some());
            if ids_text.is_none() && has_master {
                return Ok(Decision::fail(
                    None,
                    code,
                    format!("Broker {broker_name} is still alive, clean up failure"),
                ));
            }
            if let Some(text) = ids_text {
                let parsed = match parse_ids(text) {
                    Ok(parsed) => parsed,
                    Err(e) => {
                        return Ok(Decision::fail(
                            None,
                            code,
                            format!("Please set the option <brokerControllerIdsToClean> according to the format, exception: {e}"),
                        ))
                    }
                };
                if let Some(id) =
                    parsed.iter().find(|&&id| live.is_alive(&cluster, &broker_name, id))
                {
                    return Ok(Decision::fail(
                        None,
                        code,
                        format!("Broker [{broker_name},  {id}] is still alive, clean up failure"),
                    ));
                }
                ids = Some(parsed);
            }
        }
        if self.contains(&broker_name) {
            return Ok(Decision::ok(None)
                .with_event(Event::CleanBrokerData { broker_name, broker_id_set_to_clean: ids }));
        }
        Ok(Decision::fail(
            None,
            code,
            format!("Broker {broker_name} is not existed,clean broker data failure."),
        ))
    }
}

/// `1;2;3` as Java reads it: `String#split(";")` (trailing empty pieces dropped), then
/// `Long#valueOf` of each piece.
fn parse_ids(text: &str) -> Result<BTreeSet<i64>, String> {
    let mut pieces: Vec<&str> = text.split(';').collect();
    while pieces.last() == Some(&"") {
        pieces.pop();
    }
    pieces
        .into_iter()
        .map(|p| {
            p.parse::<i64>()
                .map_err(|_| format!("java.lang.NumberFormatException: For input string: \"{p}\""))
        })
        .collect()
}

fn member_group(info: &BrokerReplicaInfo) -> BrokerMemberGroup {
    BrokerMemberGroup {
        broker_addrs: BrokerAddrs::from_iter(
            info.brokers.iter().map(|(&id, r)| (id, r.address.clone())),
        ),
        broker_name: info.broker_name.clone(),
        cluster: info.cluster_name.clone(),
    }
}
