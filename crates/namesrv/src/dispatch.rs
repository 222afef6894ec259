//! Request code → handler, one line per code; and the one place where an error becomes a
//! response code and remark.

use std::sync::Arc;

use remoting::{version, RemotingCommand, RequestCode as C, ResponseCode};
use tracing::{debug, warn};

use crate::handler::{broker, config, kv, route, topic};
use crate::state::{ConnCtx, State};
use acl::{Caller, Refusal, Touched, Who};

/// What a handler answers: a response to send, or an error mapped to a response here.
pub type HandlerResult = Result<RemotingCommand, HandlerError>;

/// Failures that become framework-built responses (no `extFields`). Handler-level answers with
/// their own codes (TOPIC_NOT_EXIST, QUERY_NOT_FOUND, NO_PERMISSION, …) are `Ok` responses.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// SYSTEM_ERROR (1) with this remark (Java: an exception in the processor).
    #[error("{0}")]
    System(String),
    /// SYSTEM_ERROR (1) with no remark (Java: unregistration queue full).
    #[error("system error")]
    SystemNoRemark,
    /// REQUEST_CODE_NOT_SUPPORTED (3).
    #[error("request type {0} not supported")]
    NotSupported(i32),
    /// NO_PERMISSION (16): access control refused the request before any handler ran.
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// Access control for `request` (a no-op when `authenticationEnabled` is off): who it is from,
/// or the refusal answer to send instead of running any handler. Response frames are not
/// checked (they are dropped). Call [`dispatch_admitted`] with the `Who` after it.
pub fn admit(
    state: &State,
    conn: &ConnCtx,
    request: &RemotingCommand,
) -> Result<Who, HandlerError> {
    let Some(gate) = state.auth.as_deref() else {
        return Ok(Who::Anonymous);
    };
    if request.is_response() {
        return Ok(Who::Anonymous);
    }
    let caller = Caller {
        peer: conn.peer,
        proxy: conn.proxy,
        certificate_cn: conn.certificate_cn.as_deref(),
    };
    Ok(gate.admit(caller, request, tokio::time::Instant::now)?)
}

/// The answer to write for a request whose handling ended in `error` (e.g. a refusal by
/// [`admit`]); `None` for a oneway request.
pub fn finish(
    state: &State,
    request: &RemotingCommand,
    error: HandlerError,
) -> Option<RemotingCommand> {
    if request.is_oneway() {
        return None;
    }
    let mut response = error_response(request, error).respond_to(request);
    response.serialize_type = state.serialize_type();
    Some(response)
}

/// Answers one frame: [`admit`], then [`dispatch_admitted`]. `None` when nothing must be
/// written: the frame was a response (a nameserver sends no requests, so it is dropped) or the
/// request was oneway.
/// Java: `NettyRemotingAbstract#processRequestCommand` + `DefaultRequestProcessor#processRequest`
pub async fn dispatch(
    state: &Arc<State>,
    conn: &ConnCtx,
    request: RemotingCommand,
) -> Option<RemotingCommand> {
    match admit(state, conn, &request) {
        Ok(who) => dispatch_admitted(state, conn, request, who).await,
        Err(refused) => finish(state, &request, refused),
    }
}

/// Answers one frame that [`admit`] accepted as `who`, and writes its audit line.
pub async fn dispatch_admitted(
    state: &Arc<State>,
    conn: &ConnCtx,
    request: RemotingCommand,
    who: Who,
) -> Option<RemotingCommand> {
    if request.is_response() {
        debug!(peer = %conn.peer, opaque = request.opaque, "response received but no request matches; dropped");
        return None;
    }
    let response = if state.is_shutting_down() && request.version > version::V5_3_1 {
        RemotingCommand::response(ResponseCode::GoAway, Some("please go away".to_owned()))
    } else {
        let result = match request.request_code() {
            C::PutKvConfig => kv::put(state, &request).await,
            C::GetKvConfig => kv::get(state, &request),
            C::DeleteKvConfig => kv::delete(state, &request).await,
            C::GetKvlistByNamespace => kv::list_namespace(state, &request),
            C::RegisterBroker => broker::register(state, conn, &request).await,
            C::UnregisterBroker => broker::unregister(state, &request),
            C::QueryDataVersion => broker::query_data_version(state, &request),
            C::BrokerHeartbeat => broker::heartbeat(state, &request),
            C::WipeWritePermOfBroker => broker::wipe_write_perm(state, &request),
            C::AddWritePermOfBroker => broker::add_write_perm(state, &request),
            C::GetBrokerMemberGroup => broker::member_group(state, &request),
            C::GetRouteinfoByTopic => route::get_route(state, &request),
            C::GetBrokerClusterInfo => route::cluster_info(state),
            C::GetAllTopicListFromNameserver => topic::all_topics(state),
            C::DeleteTopicInNamesrv => topic::delete_topic(state, &request),
            C::RegisterTopicInNamesrv => topic::register_topic(state, &request),
            C::GetTopicsByCluster => topic::topics_by_cluster(state, &request),
            C::GetSystemTopicListFromNs => topic::system_topics(state),
            C::GetUnitTopicList => topic::unit_topics(state, topic::UnitKind::Unit),
            C::GetHasUnitSubTopicList => topic::unit_topics(state, topic::UnitKind::HasUnitSub),
            C::GetHasUnitSubUnunitTopicList => {
                topic::unit_topics(state, topic::UnitKind::HasUnitSubNotUnit)
            }
            C::UpdateNamesrvConfig => config::update(state, &request).await,
            C::GetNamesrvConfig => config::get(state),
            // Notifications the nameserver sends, and the controller's codes (served on the
            // controller's own port, as in Java).
            _ => Err(HandlerError::NotSupported(request.code)),
        };
        result.unwrap_or_else(|e| error_response(&request, e))
    };
    audit(&who, conn, &request, (!request.is_oneway()).then_some(response.code));
    if request.is_oneway() {
        return None;
    }
    let mut response = response.respond_to(&request);
    response.serialize_type = state.serialize_type();
    Some(response)
}

/// The audit line of an accepted request (written only for requests that change state): what
/// it touched, read from its fields.
fn audit(who: &Who, conn: &ConnCtx, request: &RemotingCommand, result: Option<i32>) {
    acl::audit::record(who, conn.peer, conn.proxy, request.code, result, || {
        let code = C::from_i32(request.code);
        let field = |name: &str| request.ext(name);
        Touched {
            cluster: field("clusterName"),
            broker: field("brokerName"),
            broker_addr: field("brokerAddr"),
            topic: field("topic"),
            namespace: field("namespace"),
            key: field("key"),
            config_keys: (code == C::UpdateNamesrvConfig).then(|| config_keys(request)),
            periodic: matches!(code, C::BrokerHeartbeat | C::QueryDataVersion),
        }
    });
}

/// The keys an UPDATE_NAMESRV_CONFIG body sets (names only: values may be secrets).
fn config_keys(request: &RemotingCommand) -> String {
    crate::properties::parse_bytes(request.body_bytes())
        .map(|entries| entries.into_iter().map(|(k, _)| k).collect::<Vec<_>>().join(","))
        .unwrap_or_default()
}

/// The only mapping from an error to the wire.
fn error_response(request: &RemotingCommand, error: HandlerError) -> RemotingCommand {
    match error {
        HandlerError::System(remark) => {
            warn!(code = request.code, %remark, "request failed");
            RemotingCommand::response(ResponseCode::SystemError, Some(remark))
        }
        HandlerError::SystemNoRemark => RemotingCommand::response(ResponseCode::SystemError, None),
        HandlerError::NotSupported(code) => {
            warn!(code, "request type not supported");
            RemotingCommand::response(
                ResponseCode::RequestCodeNotSupported,
                Some(format!(" request type {code} not supported")),
            )
        }
        HandlerError::Refused(refusal) => {
            RemotingCommand::response(ResponseCode::NoPermission, Some(refusal.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keys_name_the_keys_and_never_the_values() {
        let request = RemotingCommand::request(C::UpdateNamesrvConfig)
            .with_body(&b"orderMessageEnable=true\ntls.server.keyPassword=hunter2\n"[..]);
        let keys = config_keys(&request);
        assert_eq!(keys, "orderMessageEnable,tls.server.keyPassword");
    }
}
