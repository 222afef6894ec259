//! `mqcontroller` as it runs: a controller node on its peer port (its entry in
//! `controllerDLegerPeers`) and its HTTP listener (`httpListenPort`: metrics and probes,
//! served by `ops`). The HTTP listener answers until the node has stopped, so `/readyz` says
//! so while it stops.
//!
//! Architecture invariant: the HTTP listener never stops the node: a port that cannot be bound
//! is logged and the node serves on without it.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::listen::{self, BindError};

/// Binds the HTTP listener of `config` (`httpBindAddress`, else `bindAddress`, and
/// `httpListenPort`); `Ok(None)` when the port is 0.
pub async fn bind_http(config: &controller::Config) -> Result<Option<TcpListener>, BindError> {
    if config.http_listen_port == 0 {
        return Ok(None);
    }
    let (host_key, host) = match config.http_bind_address.as_deref() {
        Some(host) if !host.is_empty() => ("httpBindAddress", host),
        _ => ("bindAddress", config.bind_address.as_str()),
    };
    listen::listen(host_key, host, "httpListenPort", config.http_listen_port).await.map(Some)
}

/// Serves `node` on `peer` (the controller port) and, if given, its HTTP listener on `http`
/// until `shutdown` completes; the HTTP listener stops once the node has.
pub async fn serve(
    peer: TcpListener,
    http: Option<TcpListener>,
    node: Arc<controller::Node>,
    shutdown: impl Future<Output = ()>,
) {
    let http_stop = CancellationToken::new();
    let http = http.map(|listener| {
        let stopped = http_stop.clone().cancelled_owned();
        tokio::spawn(ops::serve_controller(listener, node.clone(), stopped))
    });
    controller::server::serve(peer, node, shutdown).await;
    http_stop.cancel();
    if let Some(task) = http {
        let _ = task.await;
    }
}
