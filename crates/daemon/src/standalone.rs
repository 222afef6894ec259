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

/// Serves `node` on `peer` (the controller port, behind `guard`: its TLS and access control,
/// with the certificate and accounts files watched and reloaded) and, if given, its HTTP
/// listener on `http` until `shutdown` completes; the HTTP listener and the watchers stop once
/// the node has.
pub async fn serve(
    peer: TcpListener,
    http: Option<TcpListener>,
    node: Arc<controller::Node>,
    guard: controller::Guard,
    shutdown: impl Future<Output = ()>,
) {
    let http_stop = CancellationToken::new();
    let http = http.map(|listener| {
        let stopped = http_stop.clone().cancelled_owned();
        tokio::spawn(ops::serve_controller(listener, node.clone(), guard.auth.clone(), stopped))
    });
    let mut watchers = Vec::new();
    if let Some(auth) = &guard.auth {
        watchers.push(acl::spawn_reloader(Arc::clone(auth), http_stop.clone().cancelled_owned()));
    }
    if guard.tls.mode() != transport::TlsMode::Disabled {
        let tls = Arc::clone(&guard.tls);
        watchers.push(transport::spawn_reloader(tls, http_stop.clone().cancelled_owned()));
    }
    controller::server::serve(peer, node, guard, shutdown).await;
    http_stop.cancel();
    for task in watchers.into_iter().chain(http) {
        let _ = task.await;
    }
}
