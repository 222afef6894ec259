//! Raft RPCs between controller nodes, carried as remoting commands on the controller port
//! under private request codes ([`APPEND_ENTRIES`], [`VOTE`], [`INSTALL_SNAPSHOT`]): the
//! request body is the openraft request as JSON, with the group in ext field `group`; the
//! answer is SUCCESS with openraft's `Result` as JSON, or SYSTEM_ERROR for a request that is
//! malformed or names another group. A Java DLedger node's RPCs (codes 50000+) are answered
//! REQUEST_CODE_NOT_SUPPORTED: Java and Rust nodes cannot form one group.
//!
//! The RPCs go through the node's peer client (`node.rs`): signed with
//! `controllerPeerCredentials` when set, and over TLS when the node's `tls.server.mode` is
//! `enforcing` or `tls.enable` is true (`tls.client.*`: the peer's certificate checked, a client
//! certificate presented).

use std::collections::BTreeSet;
use std::error::Error;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use client::Client;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use remoting::{RemotingCommand, RequestCode, ResponseCode};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{PeerNode, Raft, TypeConfig};

/// AppendEntries (and heartbeats). Not a Java request code.
pub const APPEND_ENTRIES: i32 = 60101;
/// RequestVote. Not a Java request code.
pub const VOTE: i32 = 60102;
/// InstallSnapshot (one chunk). Not a Java request code.
pub const INSTALL_SNAPSHOT: i32 = 60103;

/// The ext field naming the sender's group.
pub const GROUP: &str = "group";

/// Links cut on purpose, for tests of partitions inside one process: an RPC from `from` to
/// `to` (node addresses) fails as unreachable while the pair is cut.
#[derive(Debug, Default)]
pub struct Cuts {
    pairs: Mutex<BTreeSet<(String, String)>>,
}

impl Cuts {
    /// Cuts every link between `addr` and the others, both ways.
    pub fn isolate(&self, addr: &str, others: &[&str]) {
        let mut pairs = self.pairs.lock().unwrap_or_else(PoisonError::into_inner);
        for other in others {
            pairs.insert((addr.to_owned(), (*other).to_owned()));
            pairs.insert(((*other).to_owned(), addr.to_owned()));
        }
    }

    /// Restores every link.
    pub fn heal(&self) {
        self.pairs.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn is_cut(&self, from: &str, to: &str) -> bool {
        self.pairs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&(from.to_owned(), to.to_owned()))
    }
}

/// Makes a [`PeerLink`] per target for openraft.
pub struct Network {
    group: String,
    self_addr: String,
    client: Client,
    cuts: Option<Arc<Cuts>>,
}

impl Network {
    /// RPCs of `group` sent from the node at `self_addr` through `client`; `cuts` only in tests.
    pub fn new(group: &str, self_addr: &str, client: Client, cuts: Option<Arc<Cuts>>) -> Self {
        Self { group: group.to_owned(), self_addr: self_addr.to_owned(), client, cuts }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerLink;

    async fn new_client(&mut self, target: u64, node: &PeerNode) -> PeerLink {
        PeerLink {
            target,
            addr: node.addr.clone(),
            group: self.group.clone(),
            self_addr: self.self_addr.clone(),
            client: self.client.pinned(&node.addr),
            cuts: self.cuts.clone(),
        }
    }
}

/// The RPC sender to one peer.
pub struct PeerLink {
    target: u64,
    addr: String,
    group: String,
    self_addr: String,
    client: Client,
    cuts: Option<Arc<Cuts>>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct LinkError(String);

impl PeerLink {
    async fn call<Req, Resp, E>(
        &self,
        code: i32,
        req: &Req,
        timeout: Duration,
    ) -> Result<Resp, RPCError<u64, PeerNode, RaftError<u64, E>>>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: Error + DeserializeOwned,
    {
        if self.cuts.as_ref().is_some_and(|c| c.is_cut(&self.self_addr, &self.addr)) {
            return Err(RPCError::Unreachable(Unreachable::new(&LinkError(format!(
                "link to {} cut",
                self.addr
            )))));
        }
        let body = serde_json::to_vec(req).map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        let mut cmd = self.client.request(RequestCode::Unknown(code)).with_body(body);
        cmd.ext_fields = Some([(GROUP, self.group.as_str())].into_iter().collect());
        let resp = match self.client.invoke_timeout(cmd, timeout).await {
            Ok((_, resp)) => resp,
            Err(e) if e.is_transport() => return Err(RPCError::Unreachable(Unreachable::new(&e))),
            Err(e) => return Err(RPCError::Network(NetworkError::new(&e))),
        };
        if resp.code != ResponseCode::Success.to_i32() {
            let why = format!(
                "{} answered {}: {}",
                self.addr,
                resp.code,
                resp.remark.unwrap_or_default()
            );
            return Err(RPCError::Network(NetworkError::new(&LinkError(why))));
        }
        let result: Result<Resp, RaftError<u64, E>> = serde_json::from_slice(resp.body_bytes())
            .map_err(|e| RPCError::Network(NetworkError::new(&e)))?;
        result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for PeerLink {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, PeerNode, RaftError<u64>>> {
        self.call(APPEND_ENTRIES, &rpc, option.hard_ttl()).await
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, PeerNode, RaftError<u64, InstallSnapshotError>>,
    > {
        self.call(INSTALL_SNAPSHOT, &rpc, option.hard_ttl()).await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, PeerNode, RaftError<u64>>> {
        self.call(VOTE, &rpc, option.hard_ttl()).await
    }
}

/// Whether `code` is one of the Raft RPC codes.
pub fn is_raft_rpc(code: i32) -> bool {
    matches!(code, APPEND_ENTRIES | VOTE | INSTALL_SNAPSHOT)
}

/// Serves one Raft RPC received on the controller port: SUCCESS with openraft's result as
/// JSON, or SYSTEM_ERROR for another group or a body that does not decode.
pub async fn serve(raft: &Raft, group: &str, request: &RemotingCommand) -> RemotingCommand {
    if request.ext(GROUP) != Some(group) {
        let remark = format!(
            "Raft RPC for group {:?}, this node serves group {group:?}",
            request.ext(GROUP)
        );
        return RemotingCommand::response(ResponseCode::SystemError, Some(remark));
    }
    let body = request.body_bytes();
    let encoded = match request.code {
        APPEND_ENTRIES => match serde_json::from_slice(body) {
            Ok(rpc) => serde_json::to_vec(&raft.append_entries(rpc).await),
            Err(e) => return bad_body(e),
        },
        VOTE => match serde_json::from_slice(body) {
            Ok(rpc) => serde_json::to_vec(&raft.vote(rpc).await),
            Err(e) => return bad_body(e),
        },
        INSTALL_SNAPSHOT => match serde_json::from_slice(body) {
            Ok(rpc) => serde_json::to_vec(&raft.install_snapshot(rpc).await),
            Err(e) => return bad_body(e),
        },
        other => {
            return RemotingCommand::response(
                ResponseCode::RequestCodeNotSupported,
                Some(format!(" request type {other} not supported")),
            )
        }
    };
    match encoded {
        Ok(bytes) => RemotingCommand::response(ResponseCode::Success, None).with_body(bytes),
        Err(e) => RemotingCommand::response(ResponseCode::SystemError, Some(e.to_string())),
    }
}

fn bad_body(e: serde_json::Error) -> RemotingCommand {
    RemotingCommand::response(ResponseCode::SystemError, Some(format!("bad Raft RPC body: {e}")))
}
