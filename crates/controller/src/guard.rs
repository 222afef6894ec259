//! What stands before the controller port's handlers: TLS (the nameserver's `tls.*` keys and
//! semantics, through `transport`) and access control (`acl`, the nameserver's accounts and
//! roles; Raft RPCs only from the group's peers). Built from a standalone controller's keys
//! ([`Guard::from_config`]), or handed over by the nameserver that embeds the controller, whose
//! TLS context and gate it then shares (one failure window for both ports).
//!
//! A PROXY preface is never honoured on the controller port: the client address is the TCP peer.

use std::net::SocketAddr;
use std::sync::Arc;

use acl::{Auth, Caller, Peer, Refusal, Who};
use remoting::RemotingCommand;

use crate::config::Config;
use crate::raft::network;

/// Why a guard cannot be built from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(transparent)]
    Config(#[from] conf::ConfigError),
    #[error("TLS: {0}")]
    Tls(#[from] transport::TlsError),
    #[error(transparent)]
    Auth(#[from] acl::AccountsError),
}

/// TLS and access control of one controller port.
#[derive(Debug, Clone)]
pub struct Guard {
    /// How connections negotiate TLS.
    pub tls: Arc<transport::TlsContext>,
    /// The access-control gate (`None`: access control off).
    pub auth: Option<Arc<Auth>>,
    /// The peers' credentials Raft RPCs must be signed with.
    pub peer: Option<Arc<Peer>>,
}

/// The connection a request came on.
#[derive(Debug, Clone)]
pub struct Conn {
    /// The connection id (broker liveness keys on it).
    pub id: u64,
    /// The TCP peer.
    pub peer: SocketAddr,
    /// The verified client certificate's subject CN.
    pub certificate_cn: Option<Arc<str>>,
}

impl Guard {
    /// The guard a standalone controller's keys describe: its `tls.*` keys and its own gate.
    /// Blocking (reads the certificate and accounts files).
    pub fn from_config(config: &Config) -> Result<Guard, GuardError> {
        let tls = Arc::new(transport::TlsContext::new(config.tls_settings())?);
        let auth = Auth::from_settings(&config.acl_settings())?.map(Arc::new);
        let peer = config.peer_credentials()?.map(Arc::new);
        // The node's outgoing TLS (to its peers and brokers): a bad `tls.client.*` key stops
        // start-up here, before the port opens.
        config.client_tls()?;
        Ok(Guard { tls, auth, peer })
    }

    /// No TLS, no access control (tests of the controller alone).
    pub fn open() -> Guard {
        Guard { tls: Arc::new(transport::TlsContext::disabled()), auth: None, peer: None }
    }

    /// Whether `request` may be served on `conn`, and as whom: a Raft RPC only when signed with
    /// the peers' credentials, anything else by the nameserver's rules ([`Auth::admit`]).
    pub fn admit(&self, conn: &Conn, request: &RemotingCommand) -> Result<Who, Refusal> {
        let Some(auth) = self.auth.as_deref() else {
            return Ok(Who::Anonymous);
        };
        let caller =
            Caller { peer: conn.peer, proxy: None, certificate_cn: conn.certificate_cn.as_deref() };
        let now = tokio::time::Instant::now;
        if network::is_raft_rpc(request.code) {
            auth.admit_peer(caller, request, self.peer.as_deref(), now)
        } else {
            auth.admit(caller, request, now)
        }
    }
}
