//! The nameserver's route tables: [`RouteTable`] (pure Java `RouteInfoManager` semantics) and
//! [`Routes`] (the concurrent wrapper the server shares between tasks, with the encoded-route cache).
//!
//! Architecture Invariant: nothing in this module sees a socket, a `RemotingCommand` or a clock.
//! Time comes in as `now_ms` (milliseconds of any clock the caller keeps consistent), and a
//! connection is an opaque [`ConnId`]. Nothing here sends anything: NOTIFY_MIN_BROKER_ID_CHANGE is
//! returned as data ([`MinBrokerIdChange`]) for the server to send or log.
//!
//! Files: `table.rs` (the data model), `register.rs` (REGISTER_BROKER, REGISTER_TOPIC),
//! `unregister.rs` (batched unregistration, topic deletion, write permissions), `query.rs` (route
//! pickup, zone filter, lists), `live.rs` (heartbeats, expiry, connection close), `cache.rs` (encoded bodies, per queue list),
//! `routes.rs` ([`Routes`]: `snapshot()` for every read, `write()` for every change), `snapshot/` (the tables as route-snapshot bytes and back: v2 binary, v1 JSON read),
//! `view.rs` (read-only views for the operations API).
//!
//! Deliberate departures from Java (none visible on the wire for a well-behaved broker):
//! * Unregistrations produced by expiry or connection close are fenced with the generation of the
//!   live entry they were decided on ([`Fence`]); if the broker registered again meanwhile, applying
//!   them does nothing (Java's §11 #36 race is gone). Explicit UNREGISTER_BROKER requests are not
//!   fenced.
//! * A live entry whose address no broker group holds any more (§11 #13) is removed when it
//!   expires or its connection closes, instead of leaking.
//! * TopicConfigs without a name are skipped (Java throws half-way, §11 #29); a null broker id in
//!   an unregistration is "not the minimum" (Java aborts the batch); a reduced broker without
//!   BrokerData is skipped in the topic clean-up (errata E).
//! * Map orders are deterministic (sorted) instead of JDK hash order; "the first QueueData" of a
//!   topic is the one of the smallest broker name.

mod cache;
mod entry;
mod live;
mod query;
mod register;
mod routes;
mod snapshot;
mod table;
#[cfg(test)]
mod tests;
mod unregister;
mod view;

pub use query::{zone_filter, UnitKind};
pub use routes::{RouteForm, Routes};
#[cfg(any(test, feature = "snapshot-v1-writer"))]
pub use snapshot::to_v1_snapshot;
pub use snapshot::{
    SnapshotError, SnapshotInfo, FORMAT_VERSION as SNAPSHOT_FORMAT_VERSION, RESTORED_CONN,
};
pub use table::RouteTable;
pub use view::{BrokerRow, LiveRow, TopicFilter, TopicPage};

/// Where a body's `DataVersion` sits (kept opaque here; the server computes it from the bytes).
pub use remoting::body::VersionFrame;

use remoting::body::{DataVersion, TopicConfigAndMappingSerializeWrapper};

/// The identity of one broker connection, chosen by the server (Java: the Netty `Channel`).
pub type ConnId = u64;

/// Java's `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`: the liveness timeout of a broker that sent none.
pub const DEFAULT_HEARTBEAT_TIMEOUT_MS: i64 = 120_000;

/// Java `TopicValidator.SYNC_BROKER_MEMBER_GROUP_PREFIX`: topics never given an acting master.
pub const SYNC_BROKER_MEMBER_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// One REGISTER_BROKER request, decoded by the server.
#[derive(Debug, Clone, Default)]
pub struct RegisterBroker {
    pub cluster: String,
    pub broker_addr: String,
    pub broker_name: String,
    pub broker_id: i64,
    /// The broker's HA address (returned to its slaves when it is the master).
    pub ha_server_addr: String,
    /// The `__ZONE_NAME` ext field of the request.
    pub zone_name: Option<String>,
    /// `None` ⇒ [`DEFAULT_HEARTBEAT_TIMEOUT_MS`].
    pub heartbeat_timeout_millis: Option<i64>,
    /// `None` marks a pre-5.0 broker (it never acts as master for its group's topics).
    pub enable_acting_master: Option<bool>,
    /// The topic table; the server passes an empty one with a zero `DataVersion` when the request
    /// had no body.
    pub topic_config: TopicConfigAndMappingSerializeWrapper,
    /// `None` leaves the filter-server entry untouched; an empty list removes it.
    pub filter_server_list: Option<Vec<String>>,
    /// The connection the request came on.
    pub conn: ConnId,
    /// A digest of everything in the request that affects the tables (body bytes and header
    /// fields), when the server computed one: an identical later request may then take
    /// [`RouteTable::refresh_unchanged`].
    pub request_digest: Option<u64>,
    /// Where the body's `DataVersion` sits, when the digest covers the body without it (a later
    /// request differing only there may take the shortcut with its new version).
    pub version_frame: Option<VersionFrame>,
    /// Kept in the live entry for the next registration's difference, when the server computed
    /// one.
    pub delta_base: Option<DeltaBase>,
}

/// What a fully applied registration leaves for applying the broker's next one as a
/// difference (#25); computed by the server from the body's bytes (this module sees none).
pub use remoting::body::table_digest::DeltaBase;

/// The identity of a re-registration that may skip the full algorithm.
#[derive(Debug, Clone, Copy)]
pub struct UnchangedRegistration<'a> {
    pub cluster: &'a str,
    pub broker_addr: &'a str,
    pub broker_name: &'a str,
    pub broker_id: i64,
    pub request_digest: u64,
    pub conn: ConnId,
    /// The request's `DataVersion` when the digest left it out (it then replaces the live
    /// entry's); `None` when the digest covered the whole body.
    pub data_version: Option<DataVersion>,
}

/// What a successful registration tells the server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterOutcome {
    /// The live master's address, for a non-master registrant (response header `masterAddr`).
    pub master_addr: Option<String>,
    /// The live master's HA address (response header `haServerAddr`).
    pub ha_server_addr: Option<String>,
    /// Set when the registrant lowered its group's minimum broker id: what Java would send as
    /// NOTIFY_MIN_BROKER_ID_CHANGE when `notifyMinBrokerIdChanged` is on.
    pub min_broker_id_change: Option<MinBrokerIdChange>,
    /// True when the registration was ignored because the id's current holder has a newer
    /// `stateVersion` (§5.3 step 6). The answer is still SUCCESS with no master info.
    pub stale_state_version: bool,
}

/// Why a registration failed (the server answers SYSTEM_ERROR "register broker failed").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// A single-topic registration from a broker id the group does not have yet (§5.3 step 7).
    #[error("single-topic registration from broker id {broker_id} before its full registration")]
    NotRegisteredYet {
        /// The broker id that has no address in its group.
        broker_id: i64,
    },
}

/// One unregistration (an UNREGISTER_BROKER header, or the result of expiry / connection close).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnregisterRequest {
    pub cluster_name: String,
    pub broker_addr: String,
    /// Empty for an orphan live entry (its address is in no broker group any more).
    pub broker_name: String,
    /// `None` (a header without `brokerId`) is never the group's minimum.
    pub broker_id: Option<i64>,
    /// `None` for UNREGISTER_BROKER (applied unconditionally, like Java).
    pub fence: Option<Fence>,
}

/// What a batch of unregistrations did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnregisterOutcome {
    /// The NOTIFY_MIN_BROKER_ID_CHANGE messages Java would send.
    pub notify: Vec<MinBrokerIdChange>,
    /// Indices (into the batch) of the requests that removed a live broker (not skipped by
    /// their fence, and the broker was live).
    pub live_removed: Vec<usize>,
}

/// The live entry an expiry / connection-close unregistration was decided on. Applying the request
/// does nothing unless that very entry is still the live one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    generation: u64,
    conn: ConnId,
    orphan: bool,
}

impl Fence {
    /// The registration generation the decision was based on.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The connection of that registration (the server may close it, as Java does on expiry).
    pub fn conn(&self) -> ConnId {
        self.conn
    }

    /// True when the entry's address belonged to no broker group (only the live entry goes).
    pub fn is_orphan(&self) -> bool {
        self.orphan
    }
}

/// A NOTIFY_MIN_BROKER_ID_CHANGE (905) that Java would send: header fields and target addresses.
/// Java: `RouteInfoManager#notifyMinBrokerIdChanged` + `#chooseBrokerAddrsToNotify`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinBrokerIdChange {
    pub broker_name: String,
    pub min_broker_id: i64,
    pub min_broker_addr: String,
    /// The address that went away (unregistration), `None` for a registration.
    pub offline_broker_addr: Option<String>,
    /// The registrant's HA address (registration), `None` for an unregistration.
    pub ha_broker_addr: Option<String>,
    /// Whom to send it to: every member after an unregistration or in a one-member group, else
    /// every member except the minimum.
    pub targets: Vec<String>,
}
