//! Broker requests: 103 register, 104 unregister, 322 query data version, 904 heartbeat,
//! 205/327 write permission, 901 member group.

use std::sync::Arc;

use remoting::body::compressed::BodyLimits;
use remoting::body::difference::Skimmed;
use remoting::body::{
    from_json, BodyError, DataVersion, KvTable, RegisterBrokerBody,
    TopicConfigAndMappingSerializeWrapper,
};
use remoting::headers::{
    AddWritePermOfBrokerRequestHeader, AddWritePermOfBrokerResponseHeader,
    BrokerHeartbeatRequestHeader, GetBrokerMemberGroupRequestHeader, QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader, RegisterBrokerRequestHeader, RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader, WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader, ZONE_NAME,
};
use remoting::text::clip;
use remoting::{version, RemotingCommand};
use tracing::{debug, info, warn};

use super::ahead::{base_of, prepare, Ahead};
use super::{success, success_json, HandlerError, HandlerResult};
use crate::config::Config;
use crate::limits::Cap;
use crate::metrics::{RegistrationOutcome, RemovalReason};
use crate::route::{
    RegisterBroker, RegisterOutcome, RouteTable, UnchangedRegistration, UnregisterRequest,
    VersionFrame,
};
use crate::state::{ConnCtx, State};
use events::{EventKind, NewEvent};
use kv::ORDER_TOPIC_CONFIG;
use remoting::body::register_digest::{
    digest_around_version, digest_fields, digest_registration, Digested,
};

/// A handler-level REGISTER_BROKER failure (`dispatch` answers code 1 and `"extFields":{}`
/// like Java's).
fn register_failed(remark: &'static str) -> HandlerError {
    HandlerError::RegisterFailed(remark)
}

/// Decodes the registration body by the sender's version; an absent body is an empty table.
/// Java: `DefaultRequestProcessor#extractRegisterBrokerBodyFromRequest` / `#extractRegisterTopicConfigFromRequest`
pub(super) fn register_body(
    request: &RemotingCommand,
    compressed: bool,
    limits: BodyLimits,
) -> Result<RegisterBrokerBody, BodyError> {
    if request.version < 0 {
        return Err(BodyError::NegativeVersion(request.version));
    }
    match request.body.as_deref() {
        None if request.version >= version::V3_0_11 => Ok(RegisterBrokerBody {
            filter_server_list: Some(Vec::new()),
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper::default(),
        }),
        None => Ok(RegisterBrokerBody {
            filter_server_list: None,
            topic_config_serialize_wrapper: TopicConfigAndMappingSerializeWrapper::default(),
        }),
        Some(bytes) => {
            RegisterBrokerBody::decode_limited(bytes, compressed, request.version, limits)
        }
    }
}

/// The answer to a body [`register_body`] refused: a cap's own remark (the registration is
/// refused, the broker's routes stay as they were), else Java's.
fn body_refused(state: &State, conn: &ConnCtx, error: BodyError) -> HandlerResult {
    let (cap, key) = match &error {
        BodyError::NegativeVersion(version) => {
            return Err(HandlerError::System(format!(
                "java.lang.ArrayIndexOutOfBoundsException: Index {version} out of bounds"
            )))
        }
        BodyError::TooLarge(_) => (Cap::InflatedBody, "registerBodyMaxInflatedBytes"),
        BodyError::TooManyTopics { .. } => (Cap::TopicsPerBroker, "registerBrokerMaxTopics"),
        _ => {
            warn!(error = %error, "undecodable RegisterBrokerBody");
            return Err(HandlerError::System(
                "org.apache.rocketmq.remoting.exception.RemotingCommandException: Failed to decode RegisterBrokerBody"
                    .to_owned(),
            ));
        }
    };
    let remark = format!("register broker failed: {error} ({key})");
    state.limits.triggered(cap, state.uptime_ms(), format_args!("{} {remark}", conn.peer));
    Err(HandlerError::Capped(remark))
}

/// Bodies above this size go to the registration lane (one thread fewer than the cores): a
/// 50k-topic one holds up neither this worker's other connections nor, if saturated, reads.
const INLINE_REGISTER_BODY_LIMIT: usize = 64 * 1024;

/// 103: register or refresh a broker and its topics.
/// Java: `DefaultRequestProcessor#registerBroker` + `RouteInfoManager#registerBroker`
pub async fn register(
    state: &Arc<State>,
    conn: &ConnCtx,
    request: &RemotingCommand,
) -> HandlerResult {
    let to_lane = |went: bool| conn.to_lane.store(went, std::sync::atomic::Ordering::Release);
    if request.body_bytes().len() <= INLINE_REGISTER_BODY_LIMIT {
        to_lane(false);
        return register_now(state, conn, request, (Publish::Now, None, Ahead::default())).0;
    }
    // A re-registration that differs from the broker's last one in its DataVersion alone (every
    // broker, every 30 s) costs a digest of its body: answered here, never queued on the lane
    // behind registrations that must decode theirs (#25). Not tried when the last one changed
    // part of the table (a broker that changes its table goes on doing so): the lane's skim
    // digests the body on its way, and one found unchanged there is answered there.
    let started = std::time::Instant::now();
    let mut digested = None;
    let changing = conn.changing.load(std::sync::atomic::Ordering::Acquire);
    if let Some((result, outcome)) =
        (!changing).then(|| unchanged_in_place(state, conn, request, &mut digested)).flatten()
    {
        record(state, request, started, outcome, true);
        to_lane(false);
        return result;
    }
    // The broker is alive now, however long its registration waits for the lane: refresh its
    // live entry at once, so a queue behind a read storm never expires it.
    let header: RegisterBrokerRequestHeader = request.decode_header();
    if let (Some(cluster), Some(addr)) = (&header.cluster_name, &header.broker_addr) {
        state.routes.snapshot().heartbeat(cluster, addr, state.now_ms());
    }
    // Counted until answered: large frames of connections whose last registration went to the
    // lane wait to begin while it has enough queued.
    to_lane(true);
    let _queued = state.limits.lane_gate.enter(request.body_bytes().len() as u64);
    let (lane_state, conn, request) = (Arc::clone(state), conn.clone(), request.clone());
    let prepare = move || {
        let ahead = prepare(&lane_state, &request);
        let held = ahead.held;
        ((lane_state, request, ahead), held)
    };
    let apply = move |(state, request, ahead): (Arc<State>, RemotingCommand, Ahead)| {
        let how = (Publish::WithBatch, digested, ahead);
        let (result, outcome) = register_now(&state, &conn, &request, how);
        let changed = outcome == RegistrationOutcome::Difference;
        conn.changing.store(changed, std::sync::atomic::Ordering::Release);
        result
    };
    let registered = state.work.lane.run_prepared(prepare, apply).await;
    registered.map_err(|e| HandlerError::System(format!("register task failed: {e}")))?
}

/// The registration body's limits as configured.
pub(super) fn body_limits(config: &Config) -> BodyLimits {
    BodyLimits {
        max_inflated: u64::try_from(config.register_body_max_inflated_bytes).unwrap_or(0),
        max_topics: usize::try_from(config.register_broker_max_topics).unwrap_or(0),
    }
}

/// When a registration's write is published.
#[derive(Debug, Clone, Copy)]
enum Publish {
    /// With the lane's batch: its flush publishes it before any of the batch is answered.
    WithBatch,
    /// At once (with the batch before it, if any): an inline registration is answered now.
    Now,
}

/// Applies a registration's write to the route table, published as `publish` says.
fn apply<R>(state: &State, publish: Publish, f: impl FnOnce(&mut RouteTable) -> R) -> R {
    match publish {
        Publish::WithBatch => state.routes.write_batched(f),
        Publish::Now => state.routes.write(f),
    }
}

/// Whether the registrant has a live entry in `table` (the table as its write left it).
fn registrant_live(table: &RouteTable, request: &RemotingCommand) -> bool {
    let (cluster, addr) = (request.ext("clusterName"), request.ext("brokerAddr"));
    cluster.zip(addr).is_some_and(|(cluster, addr)| table.last_heartbeat(cluster, addr).is_some())
}

/// [`register_counted`], counted in `registrations_total` and `registration_apply_seconds`.
/// `digested`: the body as digested on arrival, if it was ([`unchanged_in_place`]); with how it
/// went.
fn register_now(
    state: &State,
    conn: &ConnCtx,
    request: &RemotingCommand,
    (publish, digested, ahead): (Publish, Option<Digested>, Ahead),
) -> (HandlerResult, RegistrationOutcome) {
    let started = std::time::Instant::now();
    let (result, outcome, live) =
        register_counted(state, conn, request, publish, (digested, ahead));
    record(state, request, started, outcome, live);
    (result, outcome)
}

/// Counts a registration and keeps (or drops) the broker's remoting version; `live`: whether
/// the registrant had a live entry once its write was done.
fn record(
    state: &State,
    request: &RemotingCommand,
    started: std::time::Instant,
    outcome: RegistrationOutcome,
    live: bool,
) {
    if matches!(
        outcome,
        RegistrationOutcome::Applied
            | RegistrationOutcome::Difference
            | RegistrationOutcome::Unchanged
    ) {
        if let (Some(cluster), Some(addr)) = (request.ext("clusterName"), request.ext("brokerAddr"))
        {
            // Only a live broker's version is kept (its record goes with it): a registration
            // fenced by a newer stateVersion left no live entry, and keeps no record (#21).
            if live {
                state.sinks.versions.set(cluster, addr, request.version);
            } else {
                state.sinks.versions.remove(cluster, addr);
            }
        }
    }
    state.sinks.metrics.registration(outcome);
    state.sinks.metrics.registration_apply.observe(started.elapsed());
}

/// The unchanged-registration shortcut alone, at the cost of one digest of the body: a body
/// equal to this address's last fully applied one outside its `DataVersion`, with a matching
/// `bodyCrc32`. `None` for anything else (then [`register_counted`] decides, CRC errors
/// included), with the body's digest around the stamped frame in `digested` when it was
/// computed (the lane then does not digest the body again).
fn unchanged_in_place(
    state: &State,
    conn: &ConnCtx,
    request: &RemotingCommand,
    digested: &mut Option<Digested>,
) -> Option<(HandlerResult, RegistrationOutcome)> {
    let header: RegisterBrokerRequestHeader = request.decode_header();
    if header.compressed.unwrap_or(false) {
        return None;
    }
    let (cluster, broker_addr) = (header.cluster_name.as_deref()?, header.broker_addr.as_deref()?);
    let (broker_name, broker_id) = (header.broker_name.as_deref()?, header.broker_id?);
    let (frame, stamped_digest) = state.routes.snapshot().version_frame(cluster, broker_addr)?;
    let config = state.config.load();
    let zone_name = request.ext(ZONE_NAME);
    let delete_topics = config.delete_topic_with_broker_registration;
    let fields = digest_fields(request, &header, zone_name, delete_topics);
    let body = request.body_bytes();
    let around = digest_around_version(&fields, body, frame);
    let digested = digested.insert(Digested { frame, delete_topics, around });
    let around = digested.around.as_ref().filter(|a| a.digest == stamped_digest)?;
    let crc = header.body_crc32.unwrap_or(0);
    if crc != 0 && frame.body_crc32(&body[around.middle.clone()]) != crc {
        return None;
    }
    let key = UnchangedRegistration {
        cluster,
        broker_addr,
        broker_name,
        broker_id,
        request_digest: around.digest,
        conn: conn.id,
        data_version: Some(around.version),
    };
    let outcome = state.routes.refresh_unchanged(&key, state.now_ms(), false)?;
    debug!(broker = %clip(broker_addr), "re-registration with an unchanged topic table: answered in place");
    Some((Ok(register_response(state, &config, outcome)), RegistrationOutcome::Unchanged))
}

/// A registration: its answer, how it went, and whether the registrant is live after it.
type Counted = (HandlerResult, RegistrationOutcome, bool);

fn register_counted(
    state: &State,
    conn: &ConnCtx,
    request: &RemotingCommand,
    publish: Publish,
    (digested, ahead): (Option<Digested>, Ahead),
) -> Counted {
    let header: RegisterBrokerRequestHeader = request.decode_header();
    let config = state.config.load();
    let delete_topics = config.delete_topic_with_broker_registration;
    let zone_name = request.ext(ZONE_NAME);
    let compressed = header.compressed.unwrap_or(false);
    let fields = digest_fields(request, &header, zone_name, delete_topics);
    // One walk of the body (here, or ahead): its topic-table entries and where its DataVersion
    // sits.
    let mut skimmed = match ahead.skimmed.filter(|s| s.delete_topics == delete_topics) {
        None if !compressed => {
            Skimmed::new(request, &fields, delete_topics, base_of(state, &header).as_ref())
        }
        skimmed => skimmed,
    };
    let digested = digested.filter(|d| d.delete_topics == delete_topics);
    let stamped = header.cluster_name.as_deref().zip(header.broker_addr.as_deref());
    let stamped = stamped.and_then(|(c, a)| state.routes.snapshot().version_frame(c, a));
    let skim = (compressed, skimmed.as_ref());
    let Some((request_digest, data_version, version_frame)) =
        digest_registration(request, &header, &fields, skim, stamped, digested)
    else {
        warn!(peer = %conn.peer, "register broker: body crc32 does not match");
        return (Err(register_failed("crc32 not match")), RegistrationOutcome::CrcMismatch, false);
    };
    if let Some(outcome) = refresh_unchanged(state, conn, &header, (request_digest, data_version)) {
        let response = register_response(state, &config, outcome);
        return (Ok(response), RegistrationOutcome::Unchanged, true);
    }
    let limits = body_limits(&config);
    let digest = (request_digest, version_frame);
    if let Some(skimmed) = skimmed.as_mut().filter(|_| !delete_topics) {
        let applied =
            register_delta(state, (conn, request, publish), &header, skimmed, digest, &limits);
        if let Some(applied) = applied {
            return applied;
        }
    }
    // Decoded ahead within the same limits, or now.
    let predecoded = ahead.body.filter(|(within, _)| *within == limits).map(|(_, body)| body);
    let body = match predecoded.unwrap_or_else(|| register_body(request, compressed, limits)) {
        Ok(body) => body,
        Err(e) => return (body_refused(state, conn, e), RegistrationOutcome::Refused, false),
    };
    // The base the next registration may be applied as a difference from.
    let base = skimmed
        .filter(|s| s.matches(&body.topic_config_serialize_wrapper.topic_config_table))
        .map(|s| s.base().clone());
    let topics = body.topic_config_serialize_wrapper.topic_config_table.len();
    let (mut registration, event) =
        match registration(state, header, zone_name, body, topics, conn, digest) {
            Ok(both) => both,
            Err(e) => return (Err(e), RegistrationOutcome::Refused, false),
        };
    registration.delta_base = base;
    let (applied, live) = apply(state, publish, |t| {
        let applied = t.register_broker(&mut registration, state.now_ms(), delete_topics);
        (applied, registrant_live(t, request))
    });
    state.routes.discard(Box::new(registration));
    match applied {
        Ok(outcome) => {
            state.event(event);
            (Ok(register_response(state, &config, outcome)), RegistrationOutcome::Applied, live)
        }
        Err(e) => {
            info!(error = %e, "register broker failed");
            (Err(register_failed("register broker failed")), RegistrationOutcome::Refused, false)
        }
    }
}

/// An identical re-registration (this request digest), refreshed in place when the tables
/// allow it ([`crate::route::Routes::refresh_unchanged`], waiting for the writer lock).
fn refresh_unchanged(
    state: &State,
    conn: &ConnCtx,
    header: &RegisterBrokerRequestHeader,
    (request_digest, data_version): (u64, Option<DataVersion>),
) -> Option<RegisterOutcome> {
    let key = UnchangedRegistration {
        cluster: header.cluster_name.as_deref()?,
        broker_addr: header.broker_addr.as_deref()?,
        broker_name: header.broker_name.as_deref()?,
        broker_id: header.broker_id?,
        request_digest,
        conn: conn.id,
        data_version,
    };
    let outcome = state.routes.refresh_unchanged(&key, state.now_ms(), true)?;
    debug!(broker = %clip(key.broker_addr), new_version = data_version.is_some(), "re-registration with an unchanged topic table: body not decoded");
    Some(outcome)
}

/// The registration as its difference from this address's last one, decoding only the topic
/// entries that one did not have (`remoting::body::difference`; done ahead when the base is
/// the same); `None` when it cannot be (no base, another rest, an entry the full decoder must
/// judge, or the tables no longer allow it).
fn register_delta(
    state: &State,
    (conn, request, publish): (&ConnCtx, &RemotingCommand, Publish),
    header: &RegisterBrokerRequestHeader,
    skimmed: &mut Skimmed,
    digest: (u64, Option<VersionFrame>),
    limits: &BodyLimits,
) -> Option<Counted> {
    let zone_name = request.ext(ZONE_NAME);
    let base = base_of(state, header)?;
    if base.rest_digest != skimmed.base().rest_digest {
        return None;
    }
    let body = skimmed.changed_body(request.body_bytes(), &base, limits.max_topics)?;
    let (mut registration, event) =
        registration(state, header.clone(), zone_name, body, skimmed.topics(), conn, digest)
            .ok()?;
    registration.delta_base = Some(skimmed.base().clone());
    let now_ms = state.now_ms();
    let config = state.config.load();
    let (applied, live) = apply(state, publish, |t| {
        let applied = t.register_delta(registration, &base, now_ms);
        (applied, registrant_live(t, request))
    });
    match applied? {
        Ok(outcome) => {
            state.event(event);
            let response = register_response(state, &config, outcome);
            Some((Ok(response), RegistrationOutcome::Difference, live))
        }
        Err(e) => {
            info!(error = %e, "register broker failed");
            let failed = register_failed("register broker failed");
            Some((Err(failed), RegistrationOutcome::Refused, false))
        }
    }
}

/// SUCCESS with the master's addresses for a slave (`extFields:{}` for a master) and, when
/// `returnOrderTopicConfigToBroker`, the ORDER_TOPIC_CONFIG namespace as a KVTable body.
fn register_response(state: &State, config: &Config, outcome: RegisterOutcome) -> RemotingCommand {
    let mut response = success().with_header(&RegisterBrokerResponseHeader {
        ha_server_addr: outcome.ha_server_addr,
        master_addr: outcome.master_addr,
    });
    if config.return_order_topic_config_to_broker {
        if let Some(table) = state.kv.list(ORDER_TOPIC_CONFIG) {
            response = response.with_body(remoting::body::to_legacy_json(&KvTable { table }));
        }
    }
    response
}

/// The registration the route tables apply, from a decoded body, and the event it makes
/// (registered, or re-registered when the address was live). Java refuses a header without
/// the broker's names and id with a NullPointerException.
fn registration(
    state: &State,
    header: RegisterBrokerRequestHeader,
    zone_name: Option<&str>,
    body: RegisterBrokerBody,
    topics: usize,
    conn: &ConnCtx,
    (request_digest, version_frame): (u64, Option<VersionFrame>),
) -> Result<(RegisterBroker, NewEvent), HandlerError> {
    let (Some(cluster), Some(broker_addr), Some(broker_name), Some(broker_id)) =
        (header.cluster_name, header.broker_addr, header.broker_name, header.broker_id)
    else {
        return Err(HandlerError::System(
            "java.lang.NullPointerException: clusterName, brokerAddr, brokerName and brokerId are required".to_owned(),
        ));
    };
    let was_live = state.routes.snapshot().last_heartbeat(&cluster, &broker_addr).is_some();
    let event = NewEvent::new(
        if was_live { EventKind::BrokerReregistered } else { EventKind::BrokerRegistered },
        format!(
            "{topics} topics, data version {}",
            body.topic_config_serialize_wrapper.data_version.counter
        ),
    )
    .broker(&cluster, &broker_name, &broker_addr, Some(broker_id));
    let registration = RegisterBroker {
        cluster,
        broker_addr,
        broker_name,
        broker_id,
        ha_server_addr: header.ha_server_addr.unwrap_or_default(),
        zone_name: zone_name.map(str::to_owned),
        heartbeat_timeout_millis: header.heartbeat_timeout_millis,
        enable_acting_master: header.enable_acting_master,
        topic_config: body.topic_config_serialize_wrapper,
        filter_server_list: body.filter_server_list,
        conn: conn.id,
        request_digest: Some(request_digest),
        version_frame,
        delta_base: None,
    };
    Ok((registration, event))
}

/// 104: queue the unregistration; it is applied by the batch task. Queue full → code 1, no remark.
/// Java: `DefaultRequestProcessor#unregisterBroker`
pub fn unregister(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: UnregisterBrokerRequestHeader = request.decode_header();
    let (Some(cluster_name), Some(broker_addr), Some(broker_name)) =
        (header.cluster_name, header.broker_addr, header.broker_name)
    else {
        warn!("UNREGISTER_BROKER without cluster, address or name; nothing to do");
        return Ok(success());
    };
    let queued = state.submit_unregister(
        UnregisterRequest {
            cluster_name,
            broker_addr,
            broker_name,
            broker_id: header.broker_id,
            fence: None,
        },
        RemovalReason::Unregistered,
    );
    if queued {
        Ok(success())
    } else {
        Err(HandlerError::SystemNoRemark)
    }
}

/// 322: has the broker's topic config changed since its last registration? Also a heartbeat.
/// Java: `DefaultRequestProcessor#queryBrokerTopicConfig`
pub fn query_data_version(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: QueryDataVersionRequestHeader = request.decode_header();
    let data_version: Option<DataVersion> = match request.body.as_deref() {
        Some(body) => Some(from_json(body).map_err(|e| {
            HandlerError::System(format!("com.alibaba.fastjson.JSONException: {e}"))
        })?),
        None => None,
    };
    let cluster = header.cluster_name.unwrap_or_default();
    let addr = header.broker_addr.unwrap_or_default();
    let (changed, stored) =
        state.routes.snapshot().query_data_version(&cluster, &addr, data_version, state.now_ms());
    let mut response =
        success().with_header(&QueryDataVersionResponseHeader { changed: Some(changed) });
    if let Some(stored) = stored {
        response = response.with_body(remoting::body::to_legacy_json(&stored));
    }
    Ok(response)
}

/// 904: refresh the broker's liveness. Java: `DefaultRequestProcessor#brokerHeartbeat`
pub fn heartbeat(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: BrokerHeartbeatRequestHeader = request.decode_header();
    if let (Some(cluster), Some(addr)) = (header.cluster_name, header.broker_addr) {
        state.routes.snapshot().heartbeat(&cluster, &addr, state.now_ms());
    }
    Ok(success())
}

/// [`State::write_scanning`], its failure a system error.
async fn write_scanning<R: Send + 'static>(
    state: &Arc<State>,
    f: impl FnOnce(&mut RouteTable) -> R + Send + 'static,
) -> Result<R, HandlerError> {
    let written = state.write_scanning(f).await;
    written.map_err(|e| HandlerError::System(format!("route write failed: {e}")))
}

/// 205: clear the write bit of every queue of a broker group; answers the topic count.
/// Java: `DefaultRequestProcessor#wipeWritePermOfBroker`
pub async fn wipe_write_perm(state: &Arc<State>, request: &RemotingCommand) -> HandlerResult {
    let header: WipeWritePermOfBrokerRequestHeader = request.decode_header();
    let count = match header.broker_name.clone() {
        Some(name) => write_scanning(state, move |t| t.wipe_write_perm(&name)).await?,
        None => 0,
    };
    info!(
        broker = header.broker_name.as_deref().map(|b| tracing::field::display(clip(b))),
        count, "wiped write permission"
    );
    state.event(perm_event(EventKind::WritePermWiped, header.broker_name.as_deref(), count));
    Ok(success()
        .with_header(&WipeWritePermOfBrokerResponseHeader { wipe_topic_count: Some(count) }))
}

/// 327: set perm to read+write on every queue of a broker group; answers the topic count.
/// Java: `DefaultRequestProcessor#addWritePermOfBroker`
pub async fn add_write_perm(state: &Arc<State>, request: &RemotingCommand) -> HandlerResult {
    let header: AddWritePermOfBrokerRequestHeader = request.decode_header();
    let count = match header.broker_name.clone() {
        Some(name) => write_scanning(state, move |t| t.add_write_perm(&name)).await?,
        None => 0,
    };
    info!(
        broker = header.broker_name.as_deref().map(|b| tracing::field::display(clip(b))),
        count, "added write permission"
    );
    state.event(perm_event(EventKind::WritePermAdded, header.broker_name.as_deref(), count));
    Ok(success().with_header(&AddWritePermOfBrokerResponseHeader { add_topic_count: Some(count) }))
}

/// The event of a write-permission change of broker group `name` touching `count` topics.
fn perm_event(kind: EventKind, name: Option<&str>, count: i32) -> NewEvent {
    let mut event = NewEvent::new(kind, format!("{count} topics"));
    event.broker_name = name.map(str::to_owned);
    event
}

/// 901: the addresses of a broker group. Java keeps the placeholder remark on success.
/// Java: `DefaultRequestProcessor#getBrokerMemberGroup`
pub fn member_group(state: &State, request: &RemotingCommand) -> HandlerResult {
    let header: GetBrokerMemberGroupRequestHeader = request.decode_header();
    let body = state.routes.snapshot().broker_member_group(
        header.cluster_name.as_deref().unwrap_or_default(),
        header.broker_name.as_deref().unwrap_or_default(),
    );
    let mut response = success_json(&body);
    response.remark = Some("not set any response code".to_owned());
    Ok(response)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use remoting::body::{to_legacy_json, TopicConfig};
    use remoting::RequestCode;

    use super::*;
    use crate::config::Config;

    fn registration(topics: usize, counter: i64) -> RemotingCommand {
        with_perm(topics, counter, 6)
    }

    /// [`registration`] with every topic's `perm` this.
    fn with_perm(topics: usize, counter: i64, perm: i32) -> RemotingCommand {
        let mut body = RegisterBrokerBody::default();
        let wrapper = &mut body.topic_config_serialize_wrapper;
        wrapper.data_version = DataVersion { counter, state_version: 0, timestamp: 1 };
        for i in 0..topics {
            let name = format!("Topic-{i:05}");
            let tc = TopicConfig { perm, ..TopicConfig::named(name.clone()) };
            std::sync::Arc::make_mut(&mut wrapper.topic_config_table).insert(name, tc);
        }
        let ext = [
            ("clusterName", "C"),
            ("brokerAddr", "10.0.0.1:10911"),
            ("brokerName", "b"),
            ("brokerId", "0"),
            ("enableActingMaster", "false"),
        ];
        let mut cmd = RemotingCommand::request(RequestCode::RegisterBroker);
        cmd.ext_fields = Some(ext.into_iter().collect());
        cmd.body = Some(to_legacy_json(&body).into());
        cmd
    }

    /// Yields until `done` holds; fails after 10 s of real time (a hang, not a slow machine).
    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::task::yield_now().await;
        }
    }

    fn fresh_state(dir: &tempfile::TempDir) -> Arc<State> {
        let kv_config_path = dir.path().join("kv.json").to_string_lossy().into_owned();
        crate::build_state(Config { kv_config_path, ..Config::default() }, None).expect("state")
    }

    /// A broker's first registration (no base to take a difference from) is decoded whole
    /// ahead, on the lane's prepare thread; its next one only skimmed and its difference
    /// decoded. A body decoded ahead within other limits than the lane applies it under is
    /// decoded again.
    #[tokio::test]
    async fn a_first_registration_is_decoded_ahead_within_the_limits_it_is_applied_under() {
        let dir = tempfile::tempdir().expect("dir");
        let state = fresh_state(&dir);
        let conn = ConnCtx::new(1, "127.0.0.1:1".parse().expect("addr"), Arc::default());
        let first = registration(2_000, 1);
        let ahead = prepare(&state, &first);
        assert!(ahead.skimmed.is_some());
        // What it holds counts toward the lane's bound: its JSON and more.
        assert!(ahead.held > first.body_bytes().len(), "{} held", ahead.held);
        let (within, body) = ahead.body.expect("decoded ahead");
        assert_eq!(within, body_limits(&state.config.load()));
        let topics = body.expect("decodes").topic_config_serialize_wrapper.topic_config_table;
        assert_eq!(topics.len(), 2_000);
        assert_eq!(register(&state, &conn, &first).await.expect("registered").code, 0);
        let next = prepare(&state, &registration(2_001, 2));
        assert!(next.body.is_none() && next.skimmed.is_some(), "a difference now");
        assert!(next.held > 2_001 * 32, "the skim's places and digests: {} held", next.held);

        // Another broker's first registration, decoded ahead; then the topic cap is lowered.
        let mut other = registration(300, 1);
        other.ext_fields.as_mut().expect("ext").insert("brokerAddr", "10.0.0.2:1");
        let ahead = prepare(&state, &other);
        assert!(ahead.body.as_ref().is_some_and(|(_, body)| body.is_ok()));
        state.config.apply_update(b"registerBrokerMaxTopics=100").expect("updated");
        let (refused, _) = register_now(&state, &conn, &other, (Publish::Now, None, ahead));
        assert!(refused.is_err(), "decoded again within the new cap, and refused");
        assert_eq!(state.routes.snapshot().topic_count(), 2_000);
    }

    /// A difference found ahead against a base that another registration of the address
    /// replaced before the lane took it is found again, against the base the tables hold.
    #[tokio::test]
    async fn a_difference_found_ahead_of_another_registration_is_found_again() {
        let dir = tempfile::tempdir().expect("dir");
        let state = fresh_state(&dir);
        let conn = ConnCtx::new(1, "127.0.0.1:1".parse().expect("addr"), Arc::default());
        let publish = |ahead| (Publish::Now, None, ahead);
        let first = registration(2_000, 1);
        assert_eq!(
            register_now(&state, &conn, &first, publish(Ahead::default())).0.expect("ok").code,
            0
        );
        // Against the first table the third body differs in one topic, Topic-02000.
        let third = registration(2_001, 3);
        let ahead = prepare(&state, &third);
        assert!(ahead.body.is_none(), "a difference found ahead");
        // The second makes every topic read-only.
        let second = with_perm(2_000, 2, 4);
        assert_eq!(
            register_now(&state, &conn, &second, publish(Ahead::default())).0.expect("ok").code,
            0
        );
        let perm = |topic: &str| {
            let route = state.routes.snapshot().pickup_route(topic, false).expect("route");
            route.queue_datas[0].perm
        };
        assert_eq!(perm("Topic-00000"), 4);
        assert_eq!(register_now(&state, &conn, &third, publish(ahead)).0.expect("ok").code, 0);
        assert_eq!((perm("Topic-00000"), perm("Topic-02000")), (6, 6), "as the third body says");
    }

    // Paused time: the liveness clock moves only when the test advances it, and every wait is on
    // an event (lane threads held, heartbeat stamped), so the machine's speed cannot matter.
    #[tokio::test(start_paused = true)]
    async fn a_registration_waiting_for_the_lane_has_already_refreshed_its_broker() {
        let dir = tempfile::tempdir().expect("dir");
        let state = fresh_state(&dir);
        let conn = ConnCtx::new(1, "127.0.0.1:1".parse().expect("addr"), Arc::default());
        let first = registration(2_000, 1);
        assert!(first.body_bytes().len() > INLINE_REGISTER_BODY_LIMIT, "goes to the lane");
        assert_eq!(register(&state, &conn, &first).await.expect("registered").code, 0);
        let to_lane = || conn.to_lane.load(std::sync::atomic::Ordering::Acquire);
        assert!(to_lane(), "its next large frame asks the lane gate");
        let heartbeat =
            || state.routes.snapshot().last_heartbeat("C", "10.0.0.1:10911").expect("live").0;
        let registered_at = heartbeat();

        // Hold every lane thread, and know that they are held.
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let mut releases = Vec::new();
        let mut blockers = Vec::new();
        for _ in 0..state.work.lane.threads() {
            let (release, held) = std::sync::mpsc::channel::<()>();
            releases.push(release);
            let (lane_state, started_tx) = (Arc::clone(&state), started_tx.clone());
            blockers.push(tokio::spawn(async move {
                lane_state
                    .work
                    .lane
                    .run(move || {
                        let _ = started_tx.send(());
                        held.recv_timeout(Duration::from_secs(60))
                    })
                    .await
            }));
        }
        let mut held = 0;
        until("the lane threads to be held", || {
            held += started.try_iter().count();
            held == releases.len()
        })
        .await;

        // A re-registration that differs in its DataVersion alone is answered in place, never
        // queued (#25).
        let unchanged = registration(2_000, 2);
        assert_eq!(register(&state, &conn, &unchanged).await.expect("answered").code, 0);
        assert_eq!(state.limits.lane_gate.queued_bytes(), 0);
        assert!(!to_lane(), "answered in place: its next large frame never waits at the gate");

        // 50 ms later a changed registration arrives: it waits, yet its broker is refreshed.
        tokio::time::advance(Duration::from_millis(50)).await;
        let changed = registration(2_001, 3);
        let body_len = changed.body_bytes().len() as u64;
        let waiting = {
            let (state, conn) = (Arc::clone(&state), conn.clone());
            tokio::spawn(async move { register(&state, &conn, &changed).await })
        };
        until("the queued registration to refresh its broker", || heartbeat() != registered_at)
            .await;
        assert_eq!(heartbeat(), registered_at + 50, "stamped at its arrival");
        assert!(!waiting.is_finished(), "queued behind the held lane");
        // Its body counts toward the lane gate's mark until it is answered.
        assert_eq!(state.limits.lane_gate.queued_bytes(), body_len);
        assert!(to_lane());

        for release in releases {
            release.send(()).expect("release");
        }
        for blocker in blockers {
            assert!(
                blocker.await.expect("joined").expect("ran").is_ok(),
                "released, not timed out"
            );
        }
        assert_eq!(waiting.await.expect("joined").expect("registered").code, 0);
        assert_eq!(state.limits.lane_gate.queued_bytes(), 0);
    }

    /// A broker whose last registration changed part of its table: its next body is not
    /// digested on arrival but skimmed (and digested on the way) on the lane, which answers an
    /// unchanged one as unchanged, with the stamp a digest on arrival compares against; the
    /// one after that is tried on arrival again, and answered there.
    #[tokio::test]
    async fn after_a_changed_table_the_next_body_is_digested_on_the_lane_only() {
        let dir = tempfile::tempdir().expect("dir");
        let state = fresh_state(&dir);
        let conn = ConnCtx::new(1, "127.0.0.1:1".parse().expect("addr"), Arc::default());
        let flags = || {
            let load = |flag: &std::sync::atomic::AtomicBool| {
                flag.load(std::sync::atomic::Ordering::Acquire)
            };
            (load(&conn.to_lane), load(&conn.changing))
        };
        let count = |wanted: RegistrationOutcome| {
            let all = state.sinks.metrics.registrations();
            all.into_iter().find(|(outcome, _)| *outcome == wanted).map_or(0, |(_, n)| n)
        };
        let steps = [
            // First: decoded whole on the lane.
            (registration(2_000, 1), RegistrationOutcome::Applied, (true, false)),
            // Its DataVersion alone: answered on arrival.
            (registration(2_000, 2), RegistrationOutcome::Unchanged, (false, false)),
            // A perm changed in every topic: a difference, on the lane.
            (with_perm(2_000, 3, 2), RegistrationOutcome::Difference, (true, true)),
            // The DataVersion alone again: not digested on arrival, found unchanged on the lane.
            (with_perm(2_000, 4, 2), RegistrationOutcome::Unchanged, (true, false)),
            // And the next one on arrival again.
            (with_perm(2_000, 5, 2), RegistrationOutcome::Unchanged, (false, false)),
        ];
        for (n, (request, outcome, after)) in steps.into_iter().enumerate() {
            let before = count(outcome);
            assert_eq!(register(&state, &conn, &request).await.expect("registered").code, 0);
            assert_eq!(count(outcome), before + 1, "step {n}: {outcome:?}");
            assert_eq!(flags(), after, "step {n}: (to the lane, changing)");
        }
        let table = state.routes.snapshot();
        let (_, stored) = table.query_data_version("C", "10.0.0.1:10911", None, 0);
        assert_eq!(stored.map(|v| v.counter), Some(5), "the last version is kept");
    }

    /// WIPE_WRITE_PERM_OF_BROKER scans every topic: it waits for the route table's writer on
    /// the registration lane, so the one thread of a current-thread runtime goes on running its
    /// other tasks meanwhile, and answers once the writer is free, with the change published.
    #[tokio::test(flavor = "current_thread")]
    async fn a_write_permission_switch_waits_for_the_writer_off_the_io_threads() {
        use crate::tests::{registration as broker_b, HeldWriter};

        let dir = tempfile::tempdir().expect("dir");
        let state = fresh_state(&dir);
        state.routes.write(|t| t.register_owned(broker_b(), 1, false)).expect("registered");
        let held = HeldWriter::hold(&state).await;
        let mut wipe = RemotingCommand::request(RequestCode::WipeWritePermOfBroker);
        wipe.ext_fields = Some([("brokerName", "b")].into_iter().collect());
        let answer = tokio::spawn({
            let state = Arc::clone(&state);
            async move { wipe_write_perm(&state, &wipe).await }
        });
        for _ in 0..1_000 {
            tokio::task::yield_now().await;
        }
        assert!(!answer.is_finished(), "answered while the writer was held");
        assert!(
            !held.release().await,
            "the runtime's thread was blocked until the watchdog released the writer"
        );
        let answer = answer.await.expect("joined").expect("wiped");
        let count = crate::state::SCAN_ON_LANE_TOPICS.to_string();
        assert_eq!(answer.ext("wipeTopicCount"), Some(count.as_str()));
        let route = state.routes.snapshot().pickup_route("T1", true).expect("route");
        assert_eq!(route.queue_datas[0].perm & remoting::body::perm::WRITE, 0);
    }
}
