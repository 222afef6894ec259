//! The nameserver core: configuration, route tables, KV store, dispatch and handlers, and the
//! server loop of a wire-compatible Apache RocketMQ NameServer.
//!
//! [`build_state`] loads the state, [`server::serve`] serves the RocketMQ remoting protocol on
//! a bound listener until a shutdown future completes. Bytes in from the network come through
//! `transport`, the access-control gate is `acl`'s; what wires them together with the HTTP
//! surface and the embedded controller (`run(listeners, config, shutdown)`) is `crates/daemon`.
mod background;
pub(crate) mod codec;
pub mod config;
pub(crate) mod dispatch;
pub(crate) mod handler;
pub mod limits;
pub mod metrics;
pub mod route;
pub mod server;
pub(crate) mod shutdown;
pub mod snapshot;
pub mod state;
#[cfg(test)]
mod tests;
pub(crate) mod versions;

pub(crate) use conf::persist;
pub use conf::properties;

use std::sync::Arc;

pub use config::{Config, SharedConfig};
pub use state::State;

/// Why the server state could not be built.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Kv(#[from] ::kv::KvError),
}

/// Builds the server state from `config`: validates it, loads the KV store and restores the
/// route snapshot (when `routeSnapshotEnable`), so that the routes are there before the first
/// client is accepted. `auth` is the access-control gate (`None`: every request accepted).
/// Blocking (file I/O).
pub fn build_state(config: Config, auth: Option<Arc<acl::Auth>>) -> Result<Arc<State>, StateError> {
    config.validate()?;
    tracing::info!(
        trusted = %config.trusted_proxies_text(),
        "PROXY prefaces honoured from these peers (proxyProtocolTrustedAddresses)"
    );
    let kv = ::kv::KvStore::load(&config.kv_config_path)?;
    let mut state = State::new(Arc::new(SharedConfig::new(config)), kv);
    state.access.auth = auth;
    let state = Arc::new(state);
    if let Some(file) = &state.work.route_snapshot {
        file.restore(&state.routes, state.now_ms());
    }
    Ok(state)
}
