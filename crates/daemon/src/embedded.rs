//! The embedded RocketMQ controller (`enableControllerInNamesrv=true`): the controller keys of
//! the nameserver's `-c` file start a controller node on its own port (its entry in
//! `controllerDLegerPeers`), next to the nameserver, in the same runtime.
//!
//! Architecture invariant: the nameserver never waits for the controller. A bad controller key
//! stops start-up with a message naming it (like any bad value); anything that goes wrong after
//! that — the port, the store, Raft — is logged and the nameserver keeps serving routes.
//! Java: `NamesrvStartup#createAndStartControllerManager`

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use namesrv::config::{Config, ConfigError};

/// `-p` lines of the controller's keys that are the nameserver's own when it is embedded: its
/// HTTP listener (the controller's metrics are on the nameserver's `/metrics`), its TLS and its
/// access control (the controller port shares the nameserver's).
pub const NAMESRV_OWNED: [&str; 14] = [
    "httpListenPort=",
    "httpBindAddress=",
    "authenticationEnabled=",
    "authConfigPath=",
    "authenticationMode=",
    "tls.server.mode=",
    "tls.test.mode.enable=",
    "tls.server.need.client.auth=",
    "tls.server.keyPath=",
    "tls.server.keyPassword=",
    "tls.server.certPath=",
    "tls.server.authClient=",
    "tls.server.trustCertPath=",
    "tls.config.file=",
];

/// The controller configuration from the nameserver's file: its controller keys only, as Java
/// applies the same properties to a fresh `ControllerConfig` (so `configStorePath` is the
/// controller's own unless the file sets it). `None` when `enableControllerInNamesrv` is off.
pub fn controller_config(config: &Config) -> Result<Option<controller::Config>, ConfigError> {
    if !config.enable_controller_in_namesrv {
        return Ok(None);
    }
    let entries = match &config.loaded_from {
        Some(path) => read_entries(path)?,
        None => Vec::new(),
    };
    controller::Config::from_entries(entries).map(Some)
}

fn read_entries(path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let bytes = std::fs::read(path)
        .map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    conf::properties::parse_bytes(&bytes)
        .map_err(|source| ConfigError::Parse { path: path.to_owned(), source })
}

/// The embedded controller's guard: the nameserver's TLS context and access-control gate (so
/// one failure window, one set of counters and one accounts file serve both ports) and the
/// peers' credentials of the controller keys.
pub fn guard(
    config: &controller::Config,
    tls: &Arc<transport::TlsContext>,
    auth: Option<&Arc<acl::Auth>>,
) -> Result<controller::Guard, ConfigError> {
    // The node's outgoing TLS (`tls.enable`, `tls.client.*`): a bad key stops start-up.
    config.client_tls()?;
    Ok(controller::Guard {
        tls: Arc::clone(tls),
        auth: auth.cloned(),
        peer: config.peer_credentials()?.map(Arc::new),
    })
}

/// Binds the controller port and starts the node in the background (recorded in `slot` once
/// started, for the nameserver's `/metrics` and dashboard); serves until `shutdown`. Failures
/// are logged, never returned: the nameserver goes on without its controller.
pub fn spawn(
    config: controller::Config,
    listener: Option<TcpListener>,
    guard: controller::Guard,
    slot: ops::EmbeddedController,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let listener = match listener {
            Some(l) => l,
            None => match controller::bind(&config).await {
                Ok(l) => l,
                Err(e) => {
                    tracing::error!(error = %e, "embedded controller not started; the nameserver goes on without it");
                    return;
                }
            },
        };
        let addr = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let node = match controller::Node::start(
            Arc::new(controller::SharedConfig::new(config)),
            None,
        )
        .await
        {
            Ok(node) => node,
            Err(e) => {
                tracing::error!(error = %e, "embedded controller not started; the nameserver goes on without it");
                return;
            }
        };
        slot.set(node.clone());
        println!("The ControllerManager boot success. serializeType=JSON, address {addr}");
        controller::server::serve(listener, node, guard, shutdown).await;
    })
}
