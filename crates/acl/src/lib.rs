//! Access control (who may do what): decides, before any handler runs, whether a request may be
//! served — accounts, roles, the signature check, per-address failure windows, the accounts
//! file's hot reload and the audit lines.
//!
//! Off by default (`authenticationEnabled=false`, Java-compatible): the server then holds no
//! [`Auth`] and pays one `Option` check per request. When on, [`Auth::admit`] accepts a request
//! that needs nothing (a read in `authenticationMode=writes`), or one from an account of the
//! accounts file whose role grants the request and whose address is allowed — identified by a
//! RocketMQ request signature (`AccessKey` + `Signature`, see `remoting::signature`), else by a
//! verified client certificate's subject CN — or an unsigned one from a
//! `globalWhiteRemoteAddresses` address. Anything else is a [`Refusal`], which `dispatch` turns
//! into NO_PERMISSION (16) before the handler runs, so nothing of it is applied.
//!
//! Architecture invariant: this crate never builds a response and does not depend on the
//! nameserver; it knows request codes only through [`policy::access_of`] (what an audit line
//! says a request touched is handed to it, [`audit::Touched`]), and its settings only through
//! [`Settings`].

mod accounts;
mod address;
pub mod audit;
mod basic;
mod failures;
mod ownership;
mod peer;
pub mod policy;
mod reload;
mod settings;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use arc_swap::ArcSwap;
use remoting::signature::{self, ACCESS_KEY};
use remoting::RemotingCommand;
use tokio::time::Instant;
use tracing::{debug, info, warn};

pub use accounts::{Account, Accounts, AccountsError};
pub use address::{AddrList, AddrPattern};
pub use audit::{Accepted, Counters, Reason, Touched, Who};
pub use basic::BasicCredentials;
pub use failures::{
    Failures, Principal, Recorded, CAPACITY as FAILURE_CAPACITY, LIMIT as FAILURE_LIMIT,
    WINDOW as FAILURE_WINDOW,
};
pub use ownership::{NamePattern, NotOwned, Ownership};
pub use peer::Peer;
pub use policy::{access_of, Access, Role};
pub use reload::{spawn_reloader, spawn_reloader_every};
pub use settings::{AuthMode, Settings};

/// Why a request was refused. `Display` is the response remark: it says which check failed,
/// never which secret or field was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Unsigned where a signature is needed.
    #[error(
        "access denied: request code {code} must be signed (AccessKey and Signature of an account)"
    )]
    NoSignature {
        /// The request code.
        code: i32,
    },
    /// The access key names no account.
    #[error("access denied: unknown access key")]
    UnknownAccessKey,
    /// The signature does not match the request.
    #[error("access denied: signature mismatch (wrong secret key, or the request was changed after signing)")]
    BadSignature,
    /// The account's role does not grant the request.
    #[error("access denied: role {role} may not send request code {code}")]
    RoleDenied {
        /// The account's role.
        role: &'static str,
        /// The request code.
        code: i32,
    },
    /// The account may not connect from this address.
    #[error("access denied: this account may not connect from {ip}")]
    AddressDenied {
        /// The client's address.
        ip: IpAddr,
    },
    /// The account may not act for the broker group the request names (`clusters`,
    /// `brokerNames` of the accounts file).
    #[error("access denied: account {account} may not act for {group}")]
    NotOwner {
        /// The account.
        account: Arc<str>,
        /// The cluster and group the request named (clipped).
        group: NotOwned,
    },
    /// A Raft RPC not signed with the controller peers' access key (`controllerPeerCredentials`).
    #[error("access denied: request code {code} is a Raft RPC between controller nodes; it must be signed with the peers' credentials (controllerPeerCredentials)")]
    NotPeer {
        /// The request code.
        code: i32,
    },
    /// Too many failures of this access key (or of unsigned requests) from this address
    /// lately: refused without verifying anything until the window ends.
    #[error("access denied: too many failed attempts from {ip} ({who}); retry when the failure window ends")]
    RateLimited {
        /// The client's address.
        ip: IpAddr,
        /// Whose failures: the access key, unknown keys, or unsigned requests.
        who: Principal,
    },
}

impl Refusal {
    /// The counter and log reason.
    pub fn reason(&self) -> Reason {
        match self {
            Refusal::NoSignature { .. } => Reason::NoSignature,
            Refusal::UnknownAccessKey => Reason::UnknownAccessKey,
            Refusal::BadSignature => Reason::BadSignature,
            Refusal::RoleDenied { .. } => Reason::RoleDenied,
            Refusal::AddressDenied { .. } => Reason::AddressDenied,
            Refusal::NotOwner { .. } => Reason::NotOwner,
            Refusal::RateLimited { .. } => Reason::RateLimited,
            Refusal::NotPeer { .. } => Reason::NotPeer,
        }
    }
}

/// The connection facts a check needs.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// The client's address (from a trusted proxy's PROXY preface when there was one).
    pub peer: SocketAddr,
    /// The TCP peer when it is not `peer` (the trusted proxy), named in the refusal lines.
    pub proxy: Option<SocketAddr>,
    /// The subject CN of the client certificate, when one was presented and verified against
    /// `tls.server.trustCertPath`.
    pub certificate_cn: Option<&'a str>,
}

/// The access-control gate: mode, the current accounts, failure windows and counters.
pub struct Auth {
    mode: AuthMode,
    path: PathBuf,
    accounts: ArcSwap<Accounts>,
    failures: Failures,
    /// Accepted and refused requests (authenticated ones only).
    pub counters: Counters,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth")
            .field("mode", &self.mode)
            .field("path", &self.path)
            .field("accounts", &self.accounts.load().len())
            .finish_non_exhaustive()
    }
}

impl Auth {
    /// The gate for `settings` when access control is enabled (`None` otherwise): reads the
    /// accounts file now (an unreadable or invalid file is an error: the server must not start
    /// without the accounts it was told to enforce) and warns when every user may read it.
    pub fn from_settings(settings: &Settings) -> Result<Option<Auth>, AccountsError> {
        if !settings.enabled {
            return Ok(None);
        }
        let path = settings.path.clone();
        let accounts = Accounts::load(&path)?;
        warn_if_world_readable(&path);
        warn_overlapping_brokers(&accounts);
        info!(
            path = %path.display(),
            accounts = accounts.len(),
            mode = ?settings.mode,
            "authentication enabled"
        );
        let mut auth = Auth::new(settings.mode, path, accounts);
        if let Some(window) = settings.failure_window {
            auth.failures = Failures::new(window, FAILURE_CAPACITY);
        }
        Ok(Some(auth))
    }

    /// A gate with these accounts (`path` is what the reloader watches).
    pub fn new(mode: AuthMode, path: PathBuf, accounts: Accounts) -> Auth {
        Auth {
            mode,
            path,
            accounts: ArcSwap::from_pointee(accounts),
            failures: Failures::default(),
            counters: Counters::default(),
        }
    }

    /// Which requests must be authenticated.
    pub fn mode(&self) -> AuthMode {
        self.mode
    }

    /// The accounts file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The accounts in force.
    pub fn accounts(&self) -> arc_swap::Guard<Arc<Accounts>> {
        self.accounts.load()
    }

    /// Puts new accounts in force (a reload).
    pub fn replace_accounts(&self, accounts: Accounts) {
        self.accounts.store(Arc::new(accounts));
    }

    /// Forgets failure windows that have ended.
    pub fn prune_failures(&self, now: Instant) {
        self.failures.prune(now);
    }

    /// Admission, the one call every port makes before any handler: whether `request` may be
    /// served, and as whom — who sent it and whether its role grants it (`identify_request`), then,
    /// for a broker request, whether the account owns the broker group it names
    /// (`check_owner`). Each refusal is counted once and logged on the audit target.
    pub fn admit(
        &self,
        caller: Caller<'_>,
        request: &RemotingCommand,
        now: impl Fn() -> Instant,
    ) -> Result<Who, Refusal> {
        let (who, how) = self.identify_request(caller, request, now)?;
        self.check_owner(&who, request)?;
        if let Some(how) = how {
            self.counters.accepted(how);
        }
        Ok(who)
    }

    /// [`Auth::admit`] without the ownership check (the unit tests' view of identification).
    #[cfg(test)]
    pub(crate) fn check(
        &self,
        caller: Caller<'_>,
        request: &RemotingCommand,
        now: impl Fn() -> Instant,
    ) -> Result<Who, Refusal> {
        let (who, how) = self.identify_request(caller, request, now)?;
        if let Some(how) = how {
            self.counters.accepted(how);
        }
        Ok(who)
    }

    /// Whether `request` may be served, and as whom ([`Who::Reader`] for an authenticated read:
    /// its identity is not kept), ownership aside. Counts and logs a refusal, and counts it
    /// against the caller's address and [`Principal`] (its access key, unknown keys, or
    /// unsigned): a pair that failed too often is refused before any signature is verified.
    /// `now` reads the failure-window clock (only when some pair is blocked or a request is
    /// refused). An acceptance is not counted here: how it was accepted is returned, for
    /// [`Auth::admit`] to count once ownership passed too.
    fn identify_request(
        &self,
        caller: Caller<'_>,
        request: &RemotingCommand,
        now: impl Fn() -> Instant,
    ) -> Result<(Who, Option<Accepted>), Refusal> {
        let access = policy::access_of_request(request);
        if access == Access::Read && self.mode == AuthMode::Writes {
            // Open: not even a signature is checked, so clients signing for their brokers'
            // ACL with keys this server does not know keep reading routes.
            return Ok((Who::Anonymous, None));
        }
        let ip = caller.peer.ip().to_canonical();
        let accounts = self.accounts.load();
        let principal = principal_of(&accounts, caller, request);
        if self.failures.any_blocked() && self.failures.is_blocked(ip, &principal, now()) {
            self.counters.refused(Reason::RateLimited);
            debug!(
                target: audit::TARGET,
                peer = %caller.peer,
                proxy = caller.proxy.as_ref().map(tracing::field::display),
                code = request.code,
                principal = %principal,
                "refused: blocked after repeated failures"
            );
            return Err(Refusal::RateLimited { ip, who: principal });
        }
        match identify(&accounts, caller, ip, request, access) {
            Ok((who, how)) => Ok((who, Some(how))),
            Err(refusal) => {
                self.refused(caller, request, &refusal, ip, &principal, now());
                Err(refusal)
            }
        }
    }

    /// Whether the account `who` stands for owns the broker group `request` names, for a
    /// request needing broker access (called by [`Auth::admit`] once the caller is identified). An unsigned
    /// request from an allowed address, an account with neither `clusters` nor `brokerNames`,
    /// and a request naming no cluster or group pass. A refusal is counted and logged, not
    /// counted against the address: the caller proved who it is.
    fn check_owner(&self, who: &Who, request: &RemotingCommand) -> Result<(), Refusal> {
        if policy::access_of_request(request) != Access::Broker {
            return Ok(());
        }
        let (Who::Account(key) | Who::Certificate(key)) = who else {
            return Ok(());
        };
        let accounts = self.accounts.load();
        let Some(account) = accounts.by_access_key(key) else {
            return Ok(());
        };
        let Err(group) = account.ownership.permits(request) else {
            return Ok(());
        };
        let refusal = Refusal::NotOwner { account: Arc::clone(key), group };
        self.counters.refused(refusal.reason());
        warn!(
            target: audit::TARGET,
            who = %who,
            code = request.code,
            reason = refusal.reason().label(),
            remark = %refusal,
            "refused"
        );
        Err(refusal)
    }

    /// Counts and logs a refusal, and counts it against (`ip`, `principal`).
    fn refused(
        &self,
        caller: Caller<'_>,
        request: &RemotingCommand,
        refusal: &Refusal,
        ip: IpAddr,
        principal: &Principal,
        now: Instant,
    ) {
        self.counters.refused(refusal.reason());
        let access_key = request.ext(ACCESS_KEY).map(remoting::text::clip);
        let blocked_for_secs = match self.failures.record(ip, principal, now) {
            Recorded::Blocked { until } => Some(until.saturating_duration_since(now).as_secs()),
            Recorded::Counted { .. } | Recorded::Full => None,
        };
        warn!(
            target: audit::TARGET,
            peer = %caller.peer,
            proxy = caller.proxy.as_ref().map(tracing::field::display),
            code = request.code,
            access_key = access_key.map(tracing::field::display),
            reason = refusal.reason().label(),
            blocked_for_secs,
            "{}",
            if blocked_for_secs.is_some() {
                "refused; this access key is blocked at this address after repeated failures"
            } else {
                "refused"
            }
        );
    }
}

/// Warns for each pair of broker accounts that may act for a common broker group (start-up
/// and reload).
pub fn warn_overlapping_brokers(accounts: &Accounts) {
    for (a, b) in accounts.overlapping_brokers() {
        warn!(
            first = %a,
            second = %b,
            "two broker accounts may act for the same broker group (give each its own clusters/brokerNames): either can overwrite or unregister the other's brokers"
        );
    }
}

/// Whose failures `request` counts towards: the account its access key (or, unsigned, its
/// verified client certificate) names, unknown keys, or unsigned requests. Look-ups only: no
/// signature is verified here.
fn principal_of(accounts: &Accounts, caller: Caller<'_>, request: &RemotingCommand) -> Principal {
    let account = match request.ext(ACCESS_KEY) {
        Some(key) => match accounts.by_access_key(key) {
            Some(account) => account,
            None => return Principal::UnknownKey,
        },
        None => match caller.certificate_cn.and_then(|cn| accounts.by_certificate_cn(cn)) {
            Some(account) => account,
            None => return Principal::Unsigned,
        },
    };
    Principal::Account(Arc::clone(&account.access_key))
}

/// Who sent `request`: a signature first, then a client certificate, then an allowed address.
fn identify(
    accounts: &Accounts,
    caller: Caller<'_>,
    ip: IpAddr,
    request: &RemotingCommand,
    access: Access,
) -> Result<(Who, Accepted), Refusal> {
    let (account, how) = if let Some(access_key) = request.ext(ACCESS_KEY) {
        // Java: an AccessKey field means "signed" (DefaultAuthenticationContextBuilder).
        let account = accounts.by_access_key(access_key).ok_or(Refusal::UnknownAccessKey)?;
        let verified = account.key().is_some_and(|key| signature::verify(key, request));
        if !verified {
            return Err(Refusal::BadSignature);
        }
        (account, Accepted::Signature)
    } else if let Some(account) =
        caller.certificate_cn.and_then(|cn| accounts.by_certificate_cn(cn))
    {
        (account, Accepted::Certificate)
    } else if accounts.globally_allowed(ip) {
        return Ok((Who::Whitelisted, Accepted::Whitelisted));
    } else {
        return Err(Refusal::NoSignature { code: request.code });
    };
    if !account.allows_address(ip) {
        return Err(Refusal::AddressDenied { ip });
    }
    if !account.role.allows(access) {
        return Err(Refusal::RoleDenied { role: account.role.name(), code: request.code });
    }
    let who = match how {
        _ if access == Access::Read => Who::Reader,
        Accepted::Certificate => Who::Certificate(Arc::clone(&account.access_key)),
        _ => Who::Account(Arc::clone(&account.access_key)),
    };
    Ok((who, how))
}

/// Warns when every user of the machine may read the accounts file (it holds secrets).
fn warn_if_world_readable(path: &std::path::Path) {
    if accounts::world_readable(path) {
        warn!(
            path = %path.display(),
            "the accounts file is readable by every user of this machine; it holds secret keys (chmod 600 it)"
        );
    }
}

#[cfg(test)]
mod tests;
