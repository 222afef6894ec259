//! The listening sockets: the remoting listener (`bindAddress`:`listenPort`) and the optional
//! HTTP listener (`httpBindAddress`:`httpListenPort`, none when the port is 0). Binding is
//! separate from serving so that tests and embedders pass listeners they bound themselves
//! (`127.0.0.1:0`), like `mini-redis`'s `run(listener, shutdown)`.

use std::net::{IpAddr, SocketAddr};

use tokio::net::TcpListener;

use namesrv::config::Config;

/// The listeners the server serves.
#[derive(Debug)]
pub struct Listeners {
    /// The RocketMQ remoting listener.
    pub remoting: TcpListener,
    /// The HTTP listener (metrics, probes, API, dashboard, address server); `None`: no HTTP.
    pub http: Option<TcpListener>,
    /// The embedded controller's port (its entry in `controllerDLegerPeers`), used only with
    /// `enableControllerInNamesrv`; `None`: bound in the background when the controller starts.
    pub controller: Option<TcpListener>,
}

impl From<TcpListener> for Listeners {
    /// Remoting only: no HTTP listener.
    fn from(remoting: TcpListener) -> Self {
        Self { remoting, http: None, controller: None }
    }
}

/// Why a listener could not be opened; the message names the config keys.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The address does not resolve.
    #[error("{key} {host:?} does not resolve: {reason}")]
    Resolve {
        /// The config key of the address.
        key: &'static str,
        host: String,
        reason: String,
    },
    /// The port is taken or not allowed.
    #[error("cannot listen on {addr} (config key {key}): {source}")]
    Listen {
        /// The config key of the port.
        key: &'static str,
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Binds the remoting listener and, unless `httpListenPort` is 0, the HTTP listener (an
/// embedded controller binds its own port when it starts: a port it cannot have never stops
/// the nameserver).
pub async fn bind(config: &Config) -> Result<Listeners, BindError> {
    let remoting =
        listen("bindAddress", &config.bind_address, "listenPort", config.listen_port).await?;
    let http = if config.http_listen_port == 0 {
        None
    } else {
        let (host_key, host) = match config.http_bind_address.as_deref() {
            Some(host) if !host.is_empty() => ("httpBindAddress", host),
            _ => ("bindAddress", config.bind_address.as_str()),
        };
        Some(listen(host_key, host, "httpListenPort", config.http_listen_port).await?)
    };
    Ok(Listeners { remoting, http, controller: None })
}

/// Resolves `host` (IPv4, IPv6 with or without brackets, or a host name) and binds `port`;
/// errors name `host_key` and `port_key`.
pub(crate) async fn listen(
    host_key: &'static str,
    host: &str,
    port_key: &'static str,
    port: i32,
) -> Result<TcpListener, BindError> {
    let addr = resolve(host_key, host, port_key, port).await?;
    TcpListener::bind(addr).await.map_err(|source| BindError::Listen {
        key: port_key,
        addr,
        source,
    })
}

async fn resolve(
    host_key: &'static str,
    host: &str,
    port_key: &'static str,
    port: i32,
) -> Result<SocketAddr, BindError> {
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    let port = u16::try_from(port).map_err(|_| BindError::Resolve {
        key: port_key,
        host: port.to_string(),
        reason: "not a port".to_owned(),
    })?;
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    let unresolved =
        |reason: String| BindError::Resolve { key: host_key, host: host.to_owned(), reason };
    tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| unresolved(e.to_string()))?
        .next()
        .ok_or_else(|| unresolved("no address".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback(http_port: i32) -> Config {
        Config {
            bind_address: "127.0.0.1".into(),
            listen_port: 0,
            http_listen_port: http_port,
            ..Config::default()
        }
    }

    #[tokio::test]
    async fn http_listen_port_zero_opens_no_http_listener() {
        let listeners = bind(&loopback(0)).await.expect("bound");
        assert!(listeners.http.is_none());
    }

    #[tokio::test]
    async fn the_http_listener_binds_http_bind_address() {
        // A port of our own, released just before: the only fixed port we can name.
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        let port = probe.local_addr().expect("addr").port();
        drop(probe);
        let config =
            Config { http_bind_address: Some("127.0.0.1".into()), ..loopback(port.into()) };
        match bind(&config).await {
            Ok(listeners) => {
                let http = listeners.http.expect("an HTTP listener");
                assert_eq!(http.local_addr().expect("addr").port(), port);
            }
            // Another process took the port in between: not what this test is about.
            Err(BindError::Listen { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }

    #[tokio::test]
    async fn a_taken_http_port_is_an_error_naming_the_key() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("taken");
        let port = taken.local_addr().expect("addr").port();
        let err = bind(&loopback(port.into())).await.expect_err("port in use");
        let message = err.to_string();
        assert!(message.contains("httpListenPort"), "{message}");
        assert!(message.contains(&port.to_string()), "{message}");
    }
}
