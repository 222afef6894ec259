//! Topic administration and lists: 206, 216, 217, 224, 304, 311, 312, 313.

use remoting::body::{from_json, TopicRouteData};
use remoting::headers::{
    DeleteTopicFromNamesrvRequestHeader, GetTopicsByClusterRequestHeader,
    RegisterTopicRequestHeader,
};
use remoting::RemotingCommand;
use tracing::warn;

use super::{success, success_json, HandlerError, HandlerResult};
use crate::state::State;

pub use crate::route::UnitKind;

fn disabled() -> HandlerError {
    HandlerError::System("disable".to_owned())
}

/// 206: every topic, when `enableAllTopicList`.
/// Java: `DefaultRequestProcessor#getAllTopicListFromNameserver`
pub fn all_topics(state: &State) -> HandlerResult {
    if !state.config.load().enable_all_topic_list {
        return Err(disabled());
    }
    Ok(success_json(&state.routes.snapshot().all_topics()))
}

/// 216: remove a topic, or only its queues on one cluster's brokers.
/// Java: `DefaultRequestProcessor#deleteTopicInNamesrv`
pub fn delete_topic(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: DeleteTopicFromNamesrvRequestHeader = request.decode_header();
    if let Some(topic) = header.topic.as_deref() {
        let cluster = header.cluster_name.as_deref().filter(|c| !c.is_empty());
        if state.routes.snapshot().contains_topic(topic) {
            state.routes.write(|t| t.delete_topic(topic, cluster));
            let detail =
                cluster.map_or_else(|| "all clusters".to_owned(), |c| format!("cluster {c}"));
            let mut event =
                events::NewEvent::new(events::EventKind::TopicDeleted, detail).topic(topic);
            event.cluster = cluster.map(str::to_owned);
            state.event(event);
        }
    }
    Ok(success())
}

/// 217: add or replace queues of a topic from the body's `queueDatas`; always SUCCESS.
/// Java: `DefaultRequestProcessor#registerTopicToNamesrv`
pub fn register_topic(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: RegisterTopicRequestHeader = request.decode_header();
    let Some(body) = request.body.as_deref() else {
        return Ok(success());
    };
    let route: TopicRouteData = from_json(body)
        .map_err(|e| HandlerError::System(format!("com.alibaba.fastjson.JSONException: {e}")))?;
    match header.topic.as_deref() {
        Some(topic) if !route.queue_datas.is_empty() => {
            state.routes.write(|t| t.register_topic(topic, route.queue_datas));
        }
        Some(_) => {}
        None => warn!("REGISTER_TOPIC_IN_NAMESRV without a topic; ignored"),
    }
    Ok(success())
}

/// 224: topics with queues on any broker of a cluster, when `enableTopicList`.
/// Java: `DefaultRequestProcessor#getTopicsByCluster`
pub fn topics_by_cluster(state: &State, request: &RemotingCommand) -> HandlerResult {
    if !state.config.load().enable_topic_list {
        return Err(disabled());
    }
    let header: GetTopicsByClusterRequestHeader = request.decode_header();
    Ok(success_json(
        &state.routes.snapshot().topics_by_cluster(header.cluster.as_deref().unwrap_or_default()),
    ))
}

/// 304: cluster and broker names, with one broker address to ask for the rest.
/// Java: `DefaultRequestProcessor#getSystemTopicListFromNs`
pub fn system_topics(state: &State) -> HandlerResult {
    Ok(success_json(&state.routes.snapshot().system_topics()))
}

/// 311/312/313: unit topic lists, when `enableTopicList`.
/// Java: `DefaultRequestProcessor#getUnitTopicList` and siblings
pub fn unit_topics(state: &State, kind: UnitKind) -> HandlerResult {
    if !state.config.load().enable_topic_list {
        return Err(disabled());
    }
    Ok(success_json(&state.routes.snapshot().unit_topics(kind)))
}
