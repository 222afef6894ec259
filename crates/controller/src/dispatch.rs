//! Request code → handler, one line per code; the only place an error becomes a response code
//! and remark.

use std::sync::Arc;

use remoting::{RemotingCommand, RequestCode as C, ResponseCode};

use acl::Touched;

use crate::guard::{Conn, Guard};
use crate::handler::{self, HandlerError};
use crate::metrics::RequestResult;
use crate::node::{Node, NodeError};
use crate::raft::network;

/// Ext fields added to CONTROLLER_NOT_LEADER when this node knows the leader (Java sends
/// none; Java clients ignore them, and this crate's `mqadmin` follows them).
pub const LEADER_ID: &str = "controllerLeaderId";
/// See [`LEADER_ID`].
pub const LEADER_ADDRESS: &str = "controllerLeaderAddress";

/// Answers one request received on connection `conn`, once `guard` admitted it (a refusal is
/// NO_PERMISSION with the refusal as remark, as on the nameserver's port); `None` for a oneway
/// request or a stray response. An accepted state-changing request gets its audit line.
pub async fn dispatch(
    node: &Arc<Node>,
    guard: &Guard,
    conn: &Conn,
    request: RemotingCommand,
) -> Option<RemotingCommand> {
    if request.is_response() {
        tracing::debug!(
            opaque = request.opaque,
            "response received but no request matches; dropped"
        );
        return None;
    }
    let who = match guard.admit(conn, &request) {
        Ok(who) => who,
        Err(refusal) => {
            let refused =
                RemotingCommand::response(ResponseCode::NoPermission, Some(refusal.to_string()));
            return (!request.is_oneway()).then(|| refused.respond_to(&request));
        }
    };
    let response = answer(node, conn.id, &request).await;
    if guard.auth.is_some() && !network::is_raft_rpc(request.code) {
        let result = (!request.is_oneway()).then_some(response.code);
        acl::audit::record(&who, conn.peer, None, request.code, result, || Touched {
            cluster: request.ext("clusterName"),
            broker: request.ext("brokerName"),
            broker_addr: request.ext("brokerAddr").or_else(|| request.ext("brokerAddress")),
            periodic: request.code == C::BrokerHeartbeat.to_i32(),
            ..Touched::default()
        });
    }
    if request.is_oneway() {
        return None;
    }
    Some(response.respond_to(&request))
}

/// The answer to an admitted request, counted and timed (Raft RPCs aside).
async fn answer(node: &Arc<Node>, conn: u64, request: &RemotingCommand) -> RemotingCommand {
    let started = std::time::Instant::now();
    let result = match request.request_code() {
        C::BrokerHeartbeat => Ok(handler::heartbeat(node, conn, request)),
        C::ControllerAlterSyncStateSet => handler::alter_sync_state_set(node, request).await,
        C::ControllerElectMaster => handler::elect_master(node, request).await,
        C::ControllerRegisterBroker => handler::register_broker(node, request).await,
        C::ControllerGetReplicaInfo => handler::replica_info(node, request).await,
        C::ControllerGetMetadataInfo => Ok(handler::metadata(node)),
        C::ControllerGetSyncStateData => handler::sync_state_data(node, request).await,
        C::UpdateControllerConfig => handler::update_config(node, request).await,
        C::GetControllerConfig => Ok(handler::get_config(node)),
        C::CleanBrokerData => handler::clean_broker_data(node, request).await,
        C::ControllerGetNextBrokerId => handler::next_broker_id(node, request).await,
        C::ControllerApplyBrokerId => handler::apply_broker_id(node, request).await,
        C::Unknown(code) if network::is_raft_rpc(code) => {
            Ok(network::serve(node.raft(), &node.group(), request).await)
        }
        _ => Ok(RemotingCommand::response(
            ResponseCode::RequestCodeNotSupported,
            Some(format!(" request type {} not supported", request.code)),
        )),
    };
    let response = result.unwrap_or_else(|e| error_response(request, e));
    if !network::is_raft_rpc(request.code) {
        let result = if request.is_oneway() {
            RequestResult::Oneway
        } else {
            RequestResult::Answered(response.code)
        };
        node.metrics().requests.record(request.code, result, started.elapsed());
    }
    response
}

/// The only mapping from an error to the wire.
fn error_response(request: &RemotingCommand, error: HandlerError) -> RemotingCommand {
    match error {
        HandlerError::Node(NodeError::NotLeader { leader }) => {
            let mut cmd = RemotingCommand::response(
                ResponseCode::ControllerNotLeader,
                Some(NodeError::NotLeader { leader: None }.to_string()),
            );
            if let Some(l) = leader {
                cmd.ext_fields =
                    Some([(LEADER_ID, l.id), (LEADER_ADDRESS, l.addr)].into_iter().collect());
            }
            cmd
        }
        HandlerError::Config { code, remark } => RemotingCommand::response(code, Some(remark)),
        e => {
            tracing::warn!(code = request.code, error = %e, "controller request failed");
            RemotingCommand::response(ResponseCode::SystemError, Some(e.to_string()))
        }
    }
}
