//! Controller peers: the one identity whose Raft RPCs (vote, append, snapshot) a controller
//! node serves when access control is on. Every node of a group holds the same peer
//! credentials (`controllerPeerCredentials`) and signs its RPCs with them; a request without
//! that access key, or whose signature does not verify with its secret, is refused before
//! openraft sees it — so a client that is not a peer can neither vote nor append.
//!
//! The peer identity is not an account of the accounts file: an admin account may change
//! configuration and elect masters, but it is not a Raft member.

use std::sync::Arc;

use remoting::signature::{self, Credentials, SigningKey, ACCESS_KEY};
use remoting::RemotingCommand;
use tokio::time::Instant;
use tracing::debug;

use crate::audit::{self, Accepted, Reason, Who};
use crate::failures::Principal;
use crate::{Auth, Caller, Refusal};

/// The peer credentials a node signs with and checks against.
pub struct Peer {
    access_key: Arc<str>,
    key: SigningKey,
    credentials: Credentials,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer").field("access_key", &self.access_key).finish_non_exhaustive()
    }
}

impl Peer {
    /// The peer identity with this access key and secret key (neither empty).
    pub fn new(access_key: &str, secret_key: &str) -> Result<Peer, String> {
        if access_key.trim().is_empty() || secret_key.is_empty() {
            return Err("accessKey and secretKey must both be given".into());
        }
        Ok(Peer {
            access_key: Arc::from(access_key),
            key: SigningKey::new(secret_key),
            credentials: Credentials::new(access_key, secret_key),
        })
    }

    /// What a node signs its own RPCs with.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// The access key.
    pub fn access_key(&self) -> &str {
        &self.access_key
    }
}

impl Auth {
    /// Whether a Raft RPC may be served: signed with `peer`'s credentials (`None`: no peer
    /// credentials configured, so every Raft RPC is refused). Refusals are counted, logged on
    /// the audit target and counted against the caller's address like any other (a forger is
    /// blocked after ten); an accepted RPC counts as accepted by signature and is not audited
    /// (heartbeats come several times a second).
    pub fn admit_peer(
        &self,
        caller: Caller<'_>,
        request: &RemotingCommand,
        peer: Option<&Peer>,
        now: impl Fn() -> Instant,
    ) -> Result<Who, Refusal> {
        let ip = caller.peer.ip().to_canonical();
        let principal = match (request.ext(ACCESS_KEY), peer) {
            (None, _) => Principal::Unsigned,
            (Some(key), Some(peer)) if key == &*peer.access_key => {
                Principal::Account(Arc::clone(&peer.access_key))
            }
            (Some(_), _) => Principal::UnknownKey,
        };
        if self.failures.any_blocked() && self.failures.is_blocked(ip, &principal, now()) {
            self.counters.refused(Reason::RateLimited);
            debug!(target: audit::TARGET, peer = %caller.peer, code = request.code, principal = %principal, "refused: blocked after repeated failures");
            return Err(Refusal::RateLimited { ip, who: principal });
        }
        let verified = match (&principal, peer) {
            (Principal::Account(_), Some(peer)) => signature::verify(&peer.key, request),
            _ => false,
        };
        if verified {
            self.counters.accepted(Accepted::Signature);
            return Ok(Who::Account(Arc::clone(&peer.expect("verified").access_key)));
        }
        let refusal = match principal {
            Principal::Account(_) => Refusal::BadSignature,
            _ => Refusal::NotPeer { code: request.code },
        };
        self.refused(caller, request, &refusal, ip, &principal, now());
        Err(refusal)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use remoting::{ExtFields, RequestCode};

    use super::*;
    use crate::{Accounts, AuthMode, FAILURE_LIMIT};

    fn vote() -> RemotingCommand {
        let fields: ExtFields = [("group", "g")].into_iter().collect();
        RemotingCommand::request(RequestCode::Unknown(60102))
            .with_ext_fields(fields)
            .with_body(&b"{\"vote\":1}"[..])
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_peer_credentials_pass_and_a_forger_is_blocked() {
        let accounts = Accounts::parse(
            "accounts:\n  - {accessKey: ops, secretKey: ops-secret, role: admin}\n",
        )
        .expect("valid");
        let auth = Auth::new(AuthMode::Writes, PathBuf::from("/unused"), accounts);
        let peer = Peer::new("peers", "peer-secret").expect("peer");
        let caller = Caller {
            peer: "127.0.0.1:1".parse().expect("addr"),
            proxy: None,
            certificate_cn: None,
        };
        let mut signed = vote();
        peer.credentials().sign(&mut signed);
        assert_eq!(
            auth.admit_peer(caller, &signed, Some(&peer), Instant::now),
            Ok(Who::Account("peers".into()))
        );
        assert_eq!(
            auth.admit_peer(caller, &signed, None, Instant::now),
            Err(Refusal::NotPeer { code: 60102 }),
            "no peer credentials: nothing passes"
        );
        let mut admin = vote();
        Credentials::new("ops", "ops-secret").sign(&mut admin);
        assert_eq!(
            auth.admit_peer(caller, &admin, Some(&peer), Instant::now),
            Err(Refusal::NotPeer { code: 60102 }),
            "an admin account is no peer"
        );
        assert_eq!(
            auth.admit_peer(caller, &vote(), Some(&peer), Instant::now),
            Err(Refusal::NotPeer { code: 60102 })
        );
        let mut tampered = signed.clone();
        tampered.body = Some(b"{\"vote\":2}".to_vec().into());
        for _ in 1..FAILURE_LIMIT {
            assert_eq!(
                auth.admit_peer(caller, &tampered, Some(&peer), Instant::now),
                Err(Refusal::BadSignature)
            );
        }
        assert_eq!(
            auth.admit_peer(caller, &tampered, Some(&peer), Instant::now),
            Err(Refusal::BadSignature)
        );
        assert!(
            matches!(
                auth.admit_peer(caller, &signed, Some(&peer), Instant::now),
                Err(Refusal::RateLimited { .. })
            ),
            "the guessed key is blocked at that address"
        );
        assert_eq!(auth.counters.refused_count(Reason::NotPeer), 3);
        assert!(
            format!("{peer:?}").contains("peers") && !format!("{peer:?}").contains("peer-secret")
        );
    }
}
