//! The RocketMQ 5 controller: automatic master election for brokers in controller mode
//! (`enableControllerMode=true`), replicated across a group of controller nodes with openraft.
//!
//! `replicas` is the replicated state machine (pure), `elect` the election policy, `liveness`
//! the broker heartbeat table, `raft` the replication (store, state machine, RPCs), `node` a
//! running node, `server`/`dispatch`/`handler` the controller port, `failover` and `notify`
//! what happens when a master goes away. [`run`] serves a node on a bound listener; the
//! `mqcontroller` binary and `mqnamesrv` with `enableControllerInNamesrv=true` are thin
//! wrappers around it.

pub mod cli;
pub mod client_tls;
pub mod config;
pub mod dispatch;
pub mod elect;
pub mod failover;
pub mod guard;
pub mod handler;
pub mod liveness;
pub mod metrics;
pub mod node;
pub mod notify;
mod proposal;
pub mod raft;
pub mod replicas;
pub mod server;
pub mod status;

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpListener;

pub use config::{Config, SharedConfig};
pub use guard::{Guard, GuardError};
pub use node::{Node, StartError};

/// Why the controller port cannot be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("bindAddress {0} does not resolve")]
    Resolve(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
}

/// Binds the controller port: `bindAddress` and the port of this node's entry in
/// `controllerDLegerPeers` (Java's DLedger controller listens there; `listenPort` is ignored).
pub async fn bind(config: &Config) -> Result<TcpListener, BindError> {
    let peer = config.self_peer()?;
    let port: u16 = peer.addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).unwrap_or(0);
    let host = config.bind_address.trim().trim_start_matches('[').trim_end_matches(']');
    let addr = match host.parse::<IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port),
        Err(_) => tokio::net::lookup_host((host, port))
            .await
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| BindError::Resolve(host.to_owned()))?,
    };
    TcpListener::bind(addr).await.map_err(|source| BindError::Listen { addr, source })
}

/// Starts a controller node with `config` and serves its port on `listener` until `shutdown`
/// completes (or the node stops), with the TLS and access control its keys describe
/// ([`Guard::from_config`]); then stops accepting, closes connections and stops Raft.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()>,
) -> Result<(), StartError> {
    let guard = Guard::from_config(&config)?;
    let node = Node::start(Arc::new(SharedConfig::new(config)), None).await?;
    server::serve(listener, node, guard, shutdown).await;
    Ok(())
}
