//! A wire-compatible Apache RocketMQ NameServer.
//!
//! `run(listeners, config, shutdown)` serves the RocketMQ remoting protocol on a bound listener
//! (and the HTTP operations surface on a second one, if given) until `shutdown` completes; the
//! `mqnamesrv` binary is a thin wrapper around it (`listen::bind`, then `server::serve`).
mod background;
pub mod cli;
pub mod codec;
pub mod config;
pub mod controller;
pub mod dispatch;
pub mod events;
pub mod handler;
pub mod http;
pub mod kv;
pub mod lane;
pub mod limits;
pub mod listen;
pub mod metrics;
pub mod route;
pub mod server;
pub mod shutdown;
pub mod snapshot;
pub mod state;
pub mod versions;

pub(crate) use conf::persist;
pub use conf::properties;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

pub use config::{Config, SharedConfig};
pub use listen::Listeners;
pub use state::State;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(transparent)]
    Kv(#[from] kv::KvError),
    #[error("TLS: {0}")]
    Tls(#[from] transport::TlsError),
    #[error(transparent)]
    Auth(#[from] acl::AccountsError),
}

/// Builds the server state from `config`: validates it, loads the KV store, the TLS context and
/// (when `authenticationEnabled`) the accounts file, and restores the route snapshot (when
/// `routeSnapshotEnable`), so that the routes are there before the first client is accepted.
/// Blocking (file I/O).
pub fn build_state(config: Config) -> Result<Arc<State>, RunError> {
    config.validate()?;
    let kv = kv::KvStore::load(&config.kv_config_path)?;
    let settings = tls_settings(&config);
    if settings.mode != transport::TlsMode::Disabled
        && !settings.test_mode
        && settings.client_auth != transport::ClientAuth::None
        && !settings.auth_client
    {
        tracing::warn!(
            "client certificates are asked for but not checked: tls.server.authClient is false (Java's default), so any certificate is accepted and none is an identity; set tls.server.authClient=true and tls.server.trustCertPath to check them"
        );
    }
    let tls = transport::TlsContext::new(settings)?;
    let auth = acl::Auth::from_settings(&config.acl_settings())?;
    let mut state = State::new(Arc::new(SharedConfig::new(config)), kv, tls);
    state.auth = auth.map(Arc::new);
    let state = Arc::new(state);
    if let Some(file) = &state.route_snapshot {
        file.restore(&state.routes, state.now_ms());
    }
    Ok(state)
}

/// The `tls.*` settings: the `-c` file's keys, overridden by the file named by `tls.config.file`
/// (Java: `TlsHelper#extractTlsConfigFromFile`) when it exists.
fn tls_settings(config: &Config) -> transport::TlsSettings {
    let lookup = |key: &str| config.get(key);
    let file = transport::TlsSettings::config_file_path(lookup);
    let overrides = read_properties(&file);
    transport::TlsSettings::from_layers(lookup, |key| overrides.get(key).cloned())
}

fn read_properties(path: &Path) -> std::collections::BTreeMap<String, String> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| properties::parse_bytes(&bytes).ok())
        .map(|entries| entries.into_iter().collect())
        .unwrap_or_default()
}

/// Serves the nameserver on `listeners` with `config` until `shutdown` completes; then stops
/// accepting, answers what connections already sent, stops background tasks and returns.
///
/// A plain `TcpListener` serves remoting only; [`Listeners`] with `http: Some(..)` also serves
/// the HTTP operations surface on that listener. The `httpListenPort` key is used only by
/// [`listen::bind`] (the binary): a test passing its own listeners never opens port 8080.
pub async fn run(
    listeners: impl Into<Listeners>,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let state = build_state(config)?;
    server::serve(listeners, state, shutdown).await;
    Ok(())
}
