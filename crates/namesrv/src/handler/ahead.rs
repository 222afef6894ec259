//! What the registration lane's prepare thread does for a large REGISTER_BROKER while a lane
//! thread applies the ones before it (#25): skims and digests its body and decodes its
//! difference from the address's base of the moment, or, when the lane will decode the body
//! whole (no base: a broker's first registration, as at a fleet's cold start; a compressed
//! body; `deleteTopicWithBrokerRegistration`), decodes it, from its skim when it has one. The
//! lane takes each only if it still applies (the same flag, base and body limits), or redoes it.

use remoting::body::compressed::BodyLimits;
use remoting::body::difference::Skimmed;
use remoting::body::register_digest::digest_fields;
use remoting::body::table_digest::DeltaBase;
use remoting::body::{BodyError, RegisterBrokerBody, TopicConfig};
use remoting::headers::{RegisterBrokerRequestHeader, ZONE_NAME};
use remoting::RemotingCommand;

use super::broker::{body_limits, register_body};
use crate::state::State;

/// A registration's body as prepared ahead: skimmed, and decoded whole within these limits when
/// no difference was found.
#[derive(Default)]
pub(super) struct Ahead {
    pub skimmed: Option<Skimmed>,
    pub body: Option<(BodyLimits, Result<RegisterBrokerBody, BodyError>)>,
    /// The bytes it holds besides the request's frame ([`Ahead::held_bytes`]).
    pub held: usize,
}

impl Ahead {
    /// The bytes it holds besides the request's frame (charged to the frame budget already),
    /// for the lane's bound on what is prepared ahead: the skim's (with the fixed part of a
    /// difference decoded ahead), and what was decoded: its strings, at most the JSON they came
    /// from (the body, or a compressed one's inflated cap), and a fixed size per topic.
    fn held_bytes(&self, body: usize, compressed: bool) -> usize {
        let skimmed = self.skimmed.as_ref().map_or(0, Skimmed::held_bytes);
        let json = |limits: &BodyLimits| match compressed {
            true => usize::try_from(limits.max_inflated).unwrap_or(usize::MAX),
            false => body,
        };
        let decoded = match &self.body {
            Some((limits, Ok(decoded))) => {
                let topics = decoded.topic_config_serialize_wrapper.topic_config_table.len();
                json(limits).saturating_add(topics * std::mem::size_of::<(String, TopicConfig)>())
            }
            Some((_, Err(_))) => 0,
            None => body, // a difference decoded ahead: its strings
        };
        skimmed.saturating_add(decoded)
    }
}

/// The base of the registration's address: its difference's, and its skim's guide.
pub(super) fn base_of(state: &State, header: &RegisterBrokerRequestHeader) -> Option<DeltaBase> {
    let (cluster, addr) = (header.cluster_name.as_deref()?, header.broker_addr.as_deref()?);
    state.routes.snapshot().delta_base(cluster, addr)
}

/// The work of the module docs, as the tables and the config are now.
pub(super) fn prepare(state: &State, request: &RemotingCommand) -> Ahead {
    let header: RegisterBrokerRequestHeader = request.decode_header();
    let (config, compressed) = (state.config.load(), header.compressed.unwrap_or(false));
    let (delete_topics, limits) =
        (config.delete_topic_with_broker_registration, body_limits(&config));
    let fields = digest_fields(request, &header, request.ext(ZONE_NAME), delete_topics);
    let base = base_of(state, &header);
    let skim = || Skimmed::new(request, &fields, delete_topics, base.as_ref());
    let mut skimmed = (!compressed).then(skim).flatten();
    let differs = match (skimmed.as_mut(), base) {
        (Some(s), Some(base)) if !delete_topics && base.rest_digest == s.base().rest_digest => {
            s.decode_ahead(request.body_bytes(), base, limits.max_topics)
        }
        _ => false,
    };
    let body = (!differs).then(|| {
        let recent = &mut state.work.recent_tables.lock();
        let whole = skimmed.as_ref().and_then(|s| s.decode_whole(request, limits, recent));
        (limits, whole.map_or_else(|| register_body(request, compressed, limits), Ok))
    });
    let mut ahead = Ahead { skimmed, body, held: 0 };
    ahead.held = ahead.held_bytes(request.body_bytes().len(), compressed);
    ahead
}
