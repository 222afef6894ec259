//! The one way through the server: every frame a connection reads is answered by [`answer`] —
//! admission (access control), 105 answered in place from the cached route body, GO_AWAY,
//! request code → handler (one line per code), the audit line, and the response finished
//! (opaque, flag, serialization) into the connection's write buffer. The one place where an
//! error ([`HandlerError`], a refusal included) becomes a response code and remark.

use std::sync::Arc;

use bytes::BytesMut;
use remoting::{version, ExtFields, FrameError, RemotingCommand, RequestCode as C, ResponseCode};
use tracing::{debug, warn};

use crate::handler::{broker, config, kv, route, topic, HandlerError, HandlerResult};
use crate::metrics::{Pending, RequestResult};
use crate::state::{ConnCtx, State};
use acl::{Caller, Touched, Who};

/// GET_ROUTEINFO_BY_TOPIC, answered in place when it can be (see [`in_place`]).
const ROUTE_CODE: i32 = C::GetRouteinfoByTopic.to_i32();

const SUCCESS: i32 = ResponseCode::Success.to_i32();

/// Answers one frame read from `conn`, appending the answer to `out` (the connection's write
/// buffer, below its backpressure boundary): [`admit`], then 105 [`in_place`] when it can be,
/// else [`respond`]; the answer finished by [`finish`]. A response frame is dropped (a
/// nameserver sends no requests) and a oneway request answered by nothing. Route-cache
/// look-ups are counted in `pending`. Returns how the request ended (the connection records
/// it); `Err` when its answer cannot be encoded (the connection is then closed).
/// Java: `NettyRemotingAbstract#processRequestCommand` + `DefaultRequestProcessor#processRequest`
pub(crate) async fn answer(
    state: &Arc<State>,
    conn: &ConnCtx,
    request: RemotingCommand,
    out: &mut BytesMut,
    pending: &mut Pending,
) -> Result<RequestResult, FrameError> {
    if request.is_response() {
        debug!(peer = %conn.peer, opaque = request.opaque, "response received but no request matches; dropped");
        return Ok(RequestResult::Oneway);
    }
    let who = match admit(state, conn, &request) {
        Ok(who) => who,
        Err(refused) => return finish(state, &request, error_response(&request, refused), out),
    };
    if request.code == ROUTE_CODE && in_place(state, &request, out, pending) {
        return Ok(RequestResult::Answered(SUCCESS));
    }
    let response = respond(state, conn, &request, &who).await;
    finish(state, &request, response, out)
}

/// Access control for `request` (a no-op when `authenticationEnabled` is off): who it is from,
/// or the refusal to answer instead of running any handler.
fn admit(state: &State, conn: &ConnCtx, request: &RemotingCommand) -> Result<Who, HandlerError> {
    let Some(gate) = state.access.auth.as_deref() else {
        return Ok(Who::Anonymous);
    };
    let caller = Caller {
        peer: conn.peer,
        proxy: conn.proxy,
        certificate_cn: conn.certificate_cn.as_deref(),
    };
    Ok(gate.admit(caller, request, tokio::time::Instant::now)?)
}

/// 105 on the common path: the SUCCESS frame written straight into `out` with the body the
/// route cache holds (no response body built, the body copied once, into `out`); `true` when
/// answered so. `false`, with `out` untouched, when the request needs more than the cached
/// route (oneway, GO_AWAY, a zone, the order config, no route; see
/// `handler::route::with_cached_route`): it then goes to its handler. The bytes equal what
/// [`respond`] and [`finish`] would write.
#[inline]
fn in_place(
    state: &State,
    request: &RemotingCommand,
    out: &mut BytesMut,
    pending: &mut Pending,
) -> bool {
    if request.is_response() || request.is_oneway() || going_away(state, request) {
        return false;
    }
    route::with_cached_route(state, request, |body, cached| {
        pending.route_cache_lookup(state.sinks.metrics.enabled(), cached);
        let mut response = crate::handler::success().respond_to(request);
        response.serialize_type = state.serialize_type();
        remoting::frame::encode_with_body(&response, body, out).is_ok()
    })
}

/// During the graceful shutdown window, clients that know GO_AWAY (after V5_3_1) get it
/// instead of an answer. Java: `NettyRemotingAbstract#processRequestCommand`
fn going_away(state: &State, request: &RemotingCommand) -> bool {
    state.is_shutting_down() && request.version > version::V5_3_1
}

/// The answer to an admitted request — GO_AWAY, else its handler's (an error mapped by
/// [`error_response`]) — and its audit line.
async fn respond(
    state: &Arc<State>,
    conn: &ConnCtx,
    request: &RemotingCommand,
    who: &Who,
) -> RemotingCommand {
    let response = if going_away(state, request) {
        RemotingCommand::response(ResponseCode::GoAway, Some("please go away".to_owned()))
    } else {
        handle(state, conn, request).await.unwrap_or_else(|e| error_response(request, e))
    };
    audit(who, conn, request, (!request.is_oneway()).then_some(response.code));
    response
}

/// Request code → handler, one line per code.
async fn handle(state: &Arc<State>, conn: &ConnCtx, request: &RemotingCommand) -> HandlerResult {
    match request.request_code() {
        C::PutKvConfig => kv::put(state, request).await,
        C::GetKvConfig => kv::get(state, request),
        C::DeleteKvConfig => kv::delete(state, request).await,
        C::GetKvlistByNamespace => kv::list_namespace(state, request),
        C::RegisterBroker => broker::register(state, conn, request).await,
        C::UnregisterBroker => broker::unregister(state, request),
        C::QueryDataVersion => broker::query_data_version(state, request),
        C::BrokerHeartbeat => broker::heartbeat(state, request),
        C::WipeWritePermOfBroker => broker::wipe_write_perm(state, request).await,
        C::AddWritePermOfBroker => broker::add_write_perm(state, request).await,
        C::GetBrokerMemberGroup => broker::member_group(state, request),
        C::GetRouteinfoByTopic => route::get_route(state, request),
        C::GetBrokerClusterInfo => route::cluster_info(state),
        C::GetAllTopicListFromNameserver => topic::all_topics(state),
        C::DeleteTopicInNamesrv => topic::delete_topic(state, request),
        C::RegisterTopicInNamesrv => topic::register_topic(state, request),
        C::GetTopicsByCluster => topic::topics_by_cluster(state, request),
        C::GetSystemTopicListFromNs => topic::system_topics(state),
        C::GetUnitTopicList => topic::unit_topics(state, topic::UnitKind::Unit),
        C::GetHasUnitSubTopicList => topic::unit_topics(state, topic::UnitKind::HasUnitSub),
        C::GetHasUnitSubUnunitTopicList => {
            topic::unit_topics(state, topic::UnitKind::HasUnitSubNotUnit)
        }
        C::UpdateNamesrvConfig => config::update(state, request).await,
        C::GetNamesrvConfig => config::get(state),
        // Notifications the nameserver sends, and the controller's codes (served on the
        // controller's own port, as in Java).
        _ => Err(HandlerError::NotSupported(request.code)),
    }
}

/// Appends `response`, finished as the answer to `request` (its opaque echoed, the response
/// flag, the server's header serialization), to `out`; nothing for a oneway request.
fn finish(
    state: &State,
    request: &RemotingCommand,
    response: RemotingCommand,
    out: &mut BytesMut,
) -> Result<RequestResult, FrameError> {
    if request.is_oneway() {
        return Ok(RequestResult::Oneway);
    }
    let mut response = response.respond_to(request);
    response.serialize_type = state.serialize_type();
    remoting::frame::encode_into(&response, out)?;
    Ok(RequestResult::Answered(response.code))
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
    use {HandlerError as E, ResponseCode as R};
    // Last, whether Java's answer carries its response header, no field set: `"extFields":{}`.
    let (code, remark, empty_header) = match error {
        E::System(remark) => {
            warn!(code = request.code, %remark, "request failed");
            (R::SystemError, Some(remark), false)
        }
        E::SystemNoRemark => (R::SystemError, None, false),
        E::NotSupported(code) => {
            warn!(code, "request type not supported");
            (R::RequestCodeNotSupported, Some(format!(" request type {code} not supported")), false)
        }
        E::Refused(refusal) => (R::NoPermission, Some(refusal.to_string()), false),
        E::NotPermitted(remark) => (R::NoPermission, Some(remark.to_owned()), false),
        E::Capped(remark) => (R::SystemError, Some(remark), true),
        E::RegisterFailed(remark) => (R::SystemError, Some(remark.to_owned()), true),
        E::TopicNotExist(remark) => (R::TopicNotExist, Some(remark), false),
        E::NotFound(remark) => (R::QueryNotFound, Some(remark), false),
        E::ValueNotFound(remark) => (R::QueryNotFound, Some(remark), true),
    };
    let response = RemotingCommand::response(code, remark);
    if empty_header {
        return response.with_ext_fields(ExtFields::default());
    }
    response
}

#[cfg(test)]
mod tests {
    use remoting::body::{to_legacy_json, DataVersion, RegisterBrokerBody, TopicConfig};
    use remoting::SerializeType;

    use super::*;
    use crate::config::Config;

    fn state_with(dir: &tempfile::TempDir, adjust: impl FnOnce(&mut Config)) -> Arc<State> {
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        let mut config = Config {
            kv_config_path: path("kvConfig.json"),
            config_store_path: path("namesrv.properties"),
            ..Config::default()
        };
        adjust(&mut config);
        crate::build_state(config, None).expect("state")
    }

    fn ctx() -> ConnCtx {
        ConnCtx::new(1, "127.0.0.1:1".parse().expect("addr"), Arc::default())
    }

    /// A 5.x master registering these topics (8 queues each), through [`answer`].
    async fn register(state: &Arc<State>, topics: &[&str]) {
        let mut body = RegisterBrokerBody::default();
        let wrapper = &mut body.topic_config_serialize_wrapper;
        wrapper.data_version =
            DataVersion { counter: 1, state_version: 0, timestamp: 1_700_000_000_000 };
        for topic in topics {
            let mut config = TopicConfig::named(*topic);
            (config.read_queue_nums, config.write_queue_nums) = (8, 8);
            std::sync::Arc::make_mut(&mut wrapper.topic_config_table)
                .insert((*topic).to_owned(), config);
        }
        let ext = [
            ("brokerName", "broker-a"),
            ("brokerAddr", "192.168.0.47:10911"),
            ("clusterName", "DefaultCluster"),
            ("haServerAddr", "192.168.0.47:10912"),
            ("brokerId", "0"),
            ("enableActingMaster", "false"),
            ("compressed", "false"),
        ];
        let mut request = RemotingCommand::request(C::RegisterBroker);
        request.ext_fields = Some(ext.into_iter().collect());
        request.body = Some(to_legacy_json(&body).into());
        let (mut out, mut pending) = (BytesMut::new(), Pending::default());
        let result = answer(state, &ctx(), request, &mut out, &mut pending).await;
        assert_eq!(result.expect("encoded"), RequestResult::Answered(SUCCESS));
    }

    fn route_request(ext: &[(&str, &str)], version: i32, opaque: i32) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(C::GetRouteinfoByTopic);
        if !ext.is_empty() {
            cmd.ext_fields = Some(ext.iter().copied().collect());
        }
        cmd.version = version;
        cmd.opaque = opaque;
        cmd
    }

    /// The bytes the general path (the handler, then [`finish`]) writes for `request`.
    async fn general(state: &Arc<State>, request: &RemotingCommand) -> BytesMut {
        let response = respond(state, &ctx(), request, &Who::Anonymous).await;
        let mut out = BytesMut::new();
        finish(state, request, response, &mut out).expect("encoded");
        out
    }

    fn in_place_into(state: &State, request: &RemotingCommand, out: &mut BytesMut) -> bool {
        in_place(state, request, out, &mut Pending::default())
    }

    #[tokio::test]
    async fn in_place_answers_equal_the_general_path() {
        for serialize in [SerializeType::Json, SerializeType::RocketMq] {
            let dir = tempfile::tempdir().expect("dir");
            let state = state_with(&dir, |c| c.serialize_type = Some(serialize));
            register(&state, &["TopicTest", "Other"]).await;
            let cases = [
                route_request(&[("topic", "TopicTest")], 479, 1),
                route_request(&[("topic", "TopicTest")], 317, -7),
                route_request(&[("topic", "Other"), ("acceptStandardJsonOnly", "TRUE")], 317, 9),
                route_request(
                    &[("topic", "Other"), ("acceptStandardJsonOnly", "no")],
                    100,
                    i32::MAX,
                ),
            ];
            for (i, request) in cases.iter().enumerate() {
                let mut fast = BytesMut::from(&b"earlier"[..]);
                assert!(
                    in_place_into(&state, request, &mut fast),
                    "{serialize:?} case {i} answered"
                );
                assert_eq!(&fast[..7], b"earlier", "appended");
                assert_eq!(fast[7..], general(&state, request).await[..], "{serialize:?} case {i}");
            }
            assert_eq!(state.serialize_type(), serialize);
        }
    }

    #[tokio::test]
    async fn requests_needing_more_than_the_cached_route_are_declined() {
        let dir = tempfile::tempdir().expect("dir");
        let state = state_with(&dir, |_| {});
        register(&state, &["TopicTest", "Other"]).await;
        let mut oneway = route_request(&[("topic", "TopicTest")], 479, 1);
        oneway.set_oneway(true);
        let mut response = route_request(&[("topic", "TopicTest")], 479, 1);
        response.flag = 1;
        let declined = [
            route_request(&[("topic", "Nope")], 479, 1),
            route_request(&[], 479, 1),
            route_request(
                &[("topic", "TopicTest"), ("__ZONE_MODE", "true"), ("__ZONE_NAME", "z")],
                479,
                1,
            ),
            oneway,
            response,
        ];
        for request in &declined {
            let mut out = BytesMut::new();
            assert!(!in_place_into(&state, request, &mut out), "{request:?}");
            assert!(out.is_empty());
        }
        let ordered = {
            let dir2 = tempfile::tempdir().expect("dir");
            let s = state_with(&dir2, |c| c.order_message_enable = true);
            register(&s, &["TopicTest", "Other"]).await;
            let mut out = BytesMut::new();
            in_place_into(&s, &route_request(&[("topic", "TopicTest")], 479, 1), &mut out)
        };
        assert!(!ordered, "orderMessageEnable adds the KV order config: general path");
    }

    #[test]
    fn config_keys_name_the_keys_and_never_the_values() {
        let request = RemotingCommand::request(C::UpdateNamesrvConfig)
            .with_body(&b"orderMessageEnable=true\ntls.server.keyPassword=hunter2\n"[..]);
        let keys = config_keys(&request);
        assert_eq!(keys, "orderMessageEnable,tls.server.keyPassword");
    }
}
