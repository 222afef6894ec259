//! One function per controller request code: decode the typed header and body, hand the
//! decision to the node ([`Node::propose`] for writes, [`Node::read`] for reads), build the
//! response. Java: `ControllerRequestProcessor`, `DLedgerController`

use std::sync::Arc;

use remoting::body::{from_json, SyncStateSet};
use remoting::headers::{
    AlterSyncStateSetRequestHeader, ApplyBrokerIdRequestHeader, BrokerHeartbeatRequestHeader,
    CleanControllerBrokerDataRequestHeader, ElectMasterRequestHeader, GetMetaDataResponseHeader,
    GetNextBrokerIdRequestHeader, GetReplicaInfoRequestHeader,
    RegisterBrokerToControllerRequestHeader,
};
use remoting::{RemotingCommand, ResponseCode};
use tokio::time::Instant;

use crate::config::Config;
use crate::elect::BrokerLiveness;
use crate::failover;
use crate::liveness::{BrokerKey, Heartbeat, DEFAULT_HEARTBEAT_TIMEOUT};
use crate::node::{Node, NodeError};
use crate::proposal::{proposed, read_response};
use crate::replicas::Replicas;

/// Why a request could not be answered normally; `dispatch` turns it into a response.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error(transparent)]
    Node(#[from] NodeError),
    /// A body that does not decode (Java: the fastjson exception → SYSTEM_ERROR).
    #[error("{0}")]
    BadBody(String),
    /// Java answers `createResponseCommand(null)`: SYSTEM_ERROR "not set any response code".
    #[error("not set any response code")]
    NoResponseCode,
    /// The config update failed; the remark and code are Java's.
    #[error("{remark}")]
    Config { code: ResponseCode, remark: String },
}

/// 1001 CONTROLLER_ALTER_SYNC_STATE_SET.
pub async fn alter_sync_state_set(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header: AlterSyncStateSetRequestHeader = req.decode_header();
    let Some(body) = req.body.as_deref() else {
        return Err(HandlerError::BadBody(
            "java.lang.NullPointerException: no SyncStateSet body".into(),
        ));
    };
    let set: SyncStateSet = from_json(body).map_err(|e| HandlerError::BadBody(e.to_string()))?;
    Ok(node
        .propose(Box::new(move |t: &Replicas, live: &dyn BrokerLiveness, _: &Config| {
            proposed(t.alter_sync_state_set(&header, &set, live))
        }))
        .await?)
}

/// 1002 CONTROLLER_ELECT_MASTER; a new master is announced to the group's live brokers when
/// `notifyBrokerRoleChanged`.
pub async fn elect_master(
    node: &Arc<Node>,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header = req.decode_header::<ElectMasterRequestHeader>();
    Ok(failover::elect(node, header, crate::metrics::Trigger::Admin).await?)
}

/// 1003 CONTROLLER_REGISTER_BROKER.
pub async fn register_broker(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header: RegisterBrokerToControllerRequestHeader = req.decode_header();
    Ok(node
        .propose(Box::new(move |t: &Replicas, live: &dyn BrokerLiveness, _: &Config| {
            proposed(t.register_broker(&header, live))
        }))
        .await?)
}

/// 1004 CONTROLLER_GET_REPLICA_INFO.
pub async fn replica_info(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header: GetReplicaInfoRequestHeader = req.decode_header();
    Ok(node.read(|t, _| read_response(t.replica_info(&header))).await?)
}

/// 1005 CONTROLLER_GET_METADATA_INFO: served by every node. `peers` is `id:addr;` per peer.
/// Java: `DLedgerController#getControllerMetadata`
pub fn metadata(node: &Node) -> RemotingCommand {
    let leader = node.leader();
    let peers: String = node.peers().iter().map(|p| format!("{}:{};", p.id, p.addr)).collect();
    let header = GetMetaDataResponseHeader {
        group: Some(node.group()),
        controller_leader_id: leader.as_ref().map(|l| l.id.clone()),
        controller_leader_address: leader.map(|l| l.addr),
        is_leader: Some(node.is_leader()),
        peers: Some(peers),
    };
    RemotingCommand::response(ResponseCode::Success, None).with_header(&header)
}

/// 1006 CONTROLLER_GET_SYNC_STATE_DATA: the body is a JSON list of broker names.
pub async fn sync_state_data(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let Some(body) = req.body.as_deref() else { return Err(HandlerError::NoResponseCode) };
    let names: Vec<String> = from_json(body).map_err(|e| HandlerError::BadBody(e.to_string()))?;
    if names.is_empty() {
        return Err(HandlerError::NoResponseCode);
    }
    Ok(node.read(|t, live| read_response(t.sync_state_data(&names, live))).await?)
}

/// 904 BROKER_HEARTBEAT: served by every node (brokers heartbeat them all). Java:
/// `ControllerRequestProcessor#handleBrokerHeartbeat`
pub fn heartbeat(node: &Node, conn: u64, req: &RemotingCommand) -> RemotingCommand {
    let h: BrokerHeartbeatRequestHeader = req.decode_header();
    let Some(broker_id) = h.broker_id else {
        return RemotingCommand::response(
            ResponseCode::ControllerInvalidRequest,
            Some("Heart beat with empty brokerId".into()),
        );
    };
    let timeout = h.heartbeat_timeout_mills.map_or(DEFAULT_HEARTBEAT_TIMEOUT, |ms| {
        std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    });
    let beat = Heartbeat {
        key: BrokerKey {
            cluster: h.cluster_name.unwrap_or_default(),
            broker_name: h.broker_name.unwrap_or_default(),
            broker_id,
        },
        broker_addr: h.broker_addr.unwrap_or_default(),
        timeout,
        epoch: h.epoch.unwrap_or(-1),
        max_offset: h.max_offset.unwrap_or(-1),
        confirm_offset: h.confirm_offset.unwrap_or(-1),
        election_priority: h.election_priority.unwrap_or(i32::MAX),
    };
    node.with_heartbeats(|t| t.on_heartbeat(beat, Some(conn), Instant::now()));
    node.metrics().heartbeat();
    RemotingCommand::response(ResponseCode::Success, Some("Heart beat success".into()))
}

/// 1009 UPDATE_CONTROLLER_CONFIG: served by every node; persisted to `configStorePath`.
/// Java: `ControllerRequestProcessor#handleUpdateControllerConfig`
pub async fn update_config(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let shared = node.config().clone();
    let body = req.body.clone().unwrap_or_default();
    let result =
        tokio::task::spawn_blocking(move || shared.apply_update(&body)).await.map_err(|e| {
            HandlerError::Config { code: ResponseCode::SystemError, remark: e.to_string() }
        })?;
    match result {
        Ok(()) => Ok(RemotingCommand::response(ResponseCode::Success, None)),
        Err(e @ conf::ConfigUpdateError::NoPermission { .. }) => {
            Err(HandlerError::Config { code: ResponseCode::NoPermission, remark: e.to_string() })
        }
        Err(e) => {
            Err(HandlerError::Config { code: ResponseCode::SystemError, remark: e.to_string() })
        }
    }
}

/// 1010 GET_CONTROLLER_CONFIG: every set key as `key=value\n`, sorted, secrets shown as `******`
/// (like 319; Java shows them).
pub fn get_config(node: &Node) -> RemotingCommand {
    let text = node.config().to_public_properties_text();
    let cmd = RemotingCommand::response(ResponseCode::Success, None);
    if text.is_empty() {
        cmd
    } else {
        cmd.with_body(text.into_bytes())
    }
}

/// 1011 CLEAN_BROKER_DATA.
pub async fn clean_broker_data(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header: CleanControllerBrokerDataRequestHeader = req.decode_header();
    Ok(node
        .propose(Box::new(move |t: &Replicas, live: &dyn BrokerLiveness, _: &Config| {
            proposed(t.clean_broker_data(&header, live))
        }))
        .await?)
}

/// 1012 CONTROLLER_GET_NEXT_BROKER_ID (a read in Java too).
pub async fn next_broker_id(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header: GetNextBrokerIdRequestHeader = req.decode_header();
    Ok(node.read(|t, _| read_response(t.next_broker_id(&header))).await?)
}

/// 1013 CONTROLLER_APPLY_BROKER_ID.
pub async fn apply_broker_id(
    node: &Node,
    req: &RemotingCommand,
) -> Result<RemotingCommand, HandlerError> {
    let header: ApplyBrokerIdRequestHeader = req.decode_header();
    Ok(node
        .propose(Box::new(move |t: &Replicas, _: &dyn BrokerLiveness, _: &Config| {
            proposed(t.apply_broker_id(&header))
        }))
        .await?)
}
