//! Route reads: 105 GET_ROUTEINFO_BY_TOPIC, 106 GET_BROKER_CLUSTER_INFO.

use remoting::body::{to_legacy_json, to_standard_json};
use remoting::headers::{GetRouteInfoRequestHeader, HeaderValue, ZONE_MODE, ZONE_NAME};
use remoting::{version, RemotingCommand};

use super::{or_null, success, success_json, HandlerError, HandlerResult};
use crate::route::{zone_filter, RouteForm};
use crate::state::State;
use kv::ORDER_TOPIC_CONFIG;

/// 105: the topic's route, in standard JSON for clients ≥ V4_9_4 or `acceptStandardJsonOnly`,
/// else legacy JSON; zone-filtered (always legacy) when the client asks for its zone.
/// Java: `ClientRequestProcessor#getRouteInfoByTopic` + `ZoneRouteRPCHook#doAfterResponse`
pub fn get_route(state: &State, request: &RemotingCommand) -> HandlerResult {
    let config = state.config.load();
    if config.need_wait_for_service
        && state.uptime().as_secs() < u64::try_from(config.wait_seconds_for_service).unwrap_or(0)
    {
        return Err(HandlerError::System("name server not ready".to_owned()));
    }
    let header: GetRouteInfoRequestHeader = request.decode_header();
    let topic = header.topic.as_deref().unwrap_or_default();
    let form = route_form(request.version, header.accept_standard_json_only);
    let zone = zone_of(request);
    let support_acting_master = config.support_acting_master;

    let body = if zone.is_some() || config.order_message_enable {
        // Uncommon paths: build the route and encode it for this request only.
        state.routes.snapshot().pickup_route(topic, support_acting_master).map(|mut route| {
            if config.order_message_enable {
                route.order_topic_conf = state.kv.get(ORDER_TOPIC_CONFIG, topic);
            }
            match zone {
                Some(zone) => to_legacy_json(&zone_filter(route, zone)).into(),
                None if form == RouteForm::Standard => to_standard_json(&route).into(),
                None => to_legacy_json(&route).into(),
            }
        })
    } else {
        let (body, cached) =
            state.routes.snapshot().lookup_route_body(topic, form, support_acting_master);
        if body.is_some() {
            state.sinks.metrics.route_cache_lookup(cached);
        }
        body
    };
    match body {
        Some(body) => Ok(success().with_body(body)),
        None => Err(HandlerError::TopicNotExist(format!(
            "No topic route info in name server for the topic: {}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.",
            or_null(&header.topic)
        ))),
    }
}

/// 105 on the common path, the body only: when the request needs nothing but the cached route
/// (`needWaitForService` and `orderMessageEnable` off, no zone, a topic given), calls `write`
/// with the route body as the cache holds it (borrowed, not copied) and whether it came from
/// the cache, and returns what `write` returns. Otherwise (including "no route") `false`,
/// without calling `write`: the request goes to [`get_route`]. `dispatch` frames the answer.
#[inline]
pub(crate) fn with_cached_route(
    state: &State,
    request: &RemotingCommand,
    write: impl FnOnce(&[u8], bool) -> bool,
) -> bool {
    let config = state.config.load();
    if config.need_wait_for_service || config.order_message_enable || zone_of(request).is_some() {
        return false;
    }
    let Some(topic) = request.ext("topic") else {
        return false;
    };
    let accept = request.ext("acceptStandardJsonOnly").and_then(<bool as HeaderValue>::parse);
    let form = route_form(request.version, accept);
    state.routes.snapshot().with_route_body(
        topic,
        form,
        config.support_acting_master,
        |body, cached| body.is_some_and(|body| write(body, cached)),
    )
}

/// Standard JSON for clients ≥ V4_9_4 or those that accept only it, else legacy.
/// Java: `ClientRequestProcessor#getRouteInfoByTopic`
fn route_form(client_version: i32, accept_standard_json_only: Option<bool>) -> RouteForm {
    if client_version >= version::V4_9_4 || accept_standard_json_only == Some(true) {
        RouteForm::Standard
    } else {
        RouteForm::Legacy
    }
}

/// The client's zone when it asked for zone-filtered routes (`__ZONE_MODE=true` and a
/// non-blank `__ZONE_NAME`). Java: `ZoneRouteRPCHook#doAfterResponse`
fn zone_of(request: &RemotingCommand) -> Option<&str> {
    let mode = request.ext(ZONE_MODE)?;
    let zone = request.ext(ZONE_NAME)?;
    (mode.eq_ignore_ascii_case("true") && !zone.trim().is_empty()).then_some(zone)
}

/// 106: every broker group and cluster, legacy JSON.
/// Java: `DefaultRequestProcessor#getBrokerClusterInfo`
pub fn cluster_info(state: &State) -> HandlerResult {
    Ok(success_json(&state.routes.snapshot().cluster_info()))
}
