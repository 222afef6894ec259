//! The audit trail (structured log lines to the `audit` target) and the counts of accepted and
//! refused requests by reason.
//!
//! Every accepted state-changing request is logged with who sent it, from where, what it
//! touched (as the server read it from the request: [`Touched`]) and its result: at `info`,
//! except requests the server calls periodic (BROKER_HEARTBEAT, QUERY_DATA_VERSION: `debug`).
//! Refusals are logged by the gate (`warn`). `RUST_LOG=audit=info`
//! keeps only this trail; `audit=off` silences it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use remoting::RequestCode as C;
use tracing::{debug, info};

use super::policy::{access_of, Access};

/// The `tracing` target of the audit trail.
pub const TARGET: &str = "audit";

/// Who a request was accepted as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// No authentication: it is off, or the request is an open read.
    Anonymous,
    /// An account, by its verified signature.
    Account(Arc<str>),
    /// An account, by the subject CN of a verified client certificate.
    Certificate(Arc<str>),
    /// An unsigned request from a `globalWhiteRemoteAddresses` address.
    Whitelisted,
    /// An authenticated read: who sent it is not kept (reads are not audited, and cloning the
    /// account's name on every route read would cost a shared reference count).
    Reader,
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Anonymous => f.write_str("anonymous"),
            Who::Account(key) => write!(f, "account:{key}"),
            Who::Certificate(key) => write!(f, "certificate:{key}"),
            Who::Whitelisted => f.write_str("whitelisted-address"),
            Who::Reader => f.write_str("authenticated-reader"),
        }
    }
}

/// What an accepted state-changing request touched, as the server read it from the request:
/// this crate knows the names of no request's fields. A field the request does not carry is
/// `None` and left out of the line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Touched<'a> {
    pub cluster: Option<&'a str>,
    pub broker: Option<&'a str>,
    pub broker_addr: Option<&'a str>,
    pub topic: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub key: Option<&'a str>,
    /// The keys a configuration update sets (names only: values may be secrets).
    pub config_keys: Option<String>,
    /// Sent on a period (heartbeats, data-version queries): logged at `debug`, not `info`.
    pub periodic: bool,
}

/// Writes the audit line of an accepted request with request code `code`, if it changes state
/// ([`access_of`]); `touched` is called only then. `result` is the response code (`None` for a
/// oneway request). `peer` is the client address, `proxy` the TCP peer when it is another (a
/// trusted proxy that named `peer` in a PROXY preface): the line then names both.
pub fn record<'a>(
    who: &Who,
    peer: SocketAddr,
    proxy: Option<SocketAddr>,
    code: i32,
    result: Option<i32>,
    touched: impl FnOnce() -> Touched<'a>,
) {
    if access_of(code) == Access::Read {
        return;
    }
    let touched = touched();
    let request = C::from_i32(code);
    let result = result.map_or_else(|| "oneway".to_owned(), |c| c.to_string());
    macro_rules! line {
        ($level:ident) => {
            $level!(
                target: TARGET,
                who = %who,
                peer = %peer,
                proxy = proxy.as_ref().map(tracing::field::display),
                code,
                request = ?request,
                cluster = shown(touched.cluster),
                broker = shown(touched.broker),
                broker_addr = shown(touched.broker_addr),
                topic = shown(touched.topic),
                namespace = shown(touched.namespace),
                key = shown(touched.key),
                config_keys = shown(touched.config_keys.as_deref()),
                result = %result,
                "accepted"
            )
        };
    }
    if touched.periodic {
        line!(debug);
    } else {
        line!(info);
    }
}

/// A field taken from the request, for the line: quoted, escaped and clipped
/// ([`remoting::text::clip`]).
fn shown(field: Option<&str>) -> Option<tracing::field::DisplayValue<remoting::text::Clipped<'_>>> {
    field.map(|v| tracing::field::display(remoting::text::clip(v)))
}

/// Why a request was refused; one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No signature (nor certificate, nor allowed address) where one is needed.
    NoSignature,
    /// The access key names no account.
    UnknownAccessKey,
    /// The signature does not match.
    BadSignature,
    /// The account's role does not grant the request.
    RoleDenied,
    /// The account may not connect from this address.
    AddressDenied,
    /// The address failed too often recently.
    RateLimited,
    /// The account may not act for the broker group the request names.
    NotOwner,
    /// A Raft RPC not signed with the controller peers' credentials.
    NotPeer,
}

impl Reason {
    /// Every reason, in counter order.
    pub const ALL: [Reason; 8] = [
        Reason::NoSignature,
        Reason::UnknownAccessKey,
        Reason::BadSignature,
        Reason::RoleDenied,
        Reason::AddressDenied,
        Reason::RateLimited,
        Reason::NotOwner,
        Reason::NotPeer,
    ];

    /// The label of the reason in logs and metrics.
    pub fn label(self) -> &'static str {
        match self {
            Reason::NoSignature => "no_signature",
            Reason::UnknownAccessKey => "unknown_access_key",
            Reason::BadSignature => "bad_signature",
            Reason::RoleDenied => "role_denied",
            Reason::AddressDenied => "address_denied",
            Reason::RateLimited => "rate_limited",
            Reason::NotOwner => "not_owner",
            Reason::NotPeer => "not_peer",
        }
    }
}

/// How a request was accepted; one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// By signature.
    Signature,
    /// By client certificate.
    Certificate,
    /// From a `globalWhiteRemoteAddresses` address.
    Whitelisted,
}

impl Accepted {
    /// Every way, in counter order.
    pub const ALL: [Accepted; 3] =
        [Accepted::Signature, Accepted::Certificate, Accepted::Whitelisted];

    /// The label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            Accepted::Signature => "signature",
            Accepted::Certificate => "certificate",
            Accepted::Whitelisted => "whitelisted_address",
        }
    }
}

/// Stripes of the acceptance counters: every route read in `authenticationMode=all` counts one,
/// so threads count on lines of their own instead of bouncing one between cores.
const STRIPES: usize = 8;

/// One cache line per stripe.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe([AtomicU64; 3]);

/// This thread's stripe.
fn stripe() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
    }
    MINE.with(|i| *i)
}

/// Counts of authenticated requests accepted (by how) and refused (by reason). Open reads in
/// `authenticationMode=writes` are not counted (they are not checked).
#[derive(Debug, Default)]
pub struct Counters {
    accepted: [Stripe; STRIPES],
    refused: [AtomicU64; Reason::ALL.len()],
}

impl Counters {
    /// Counts an acceptance.
    pub fn accepted(&self, how: Accepted) {
        self.accepted[stripe()].0[how as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a refusal.
    pub fn refused(&self, reason: Reason) {
        self.refused[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Acceptances so far by how.
    pub fn accepted_count(&self, how: Accepted) -> u64 {
        self.accepted.iter().map(|s| s.0[how as usize].load(Ordering::Relaxed)).sum()
    }

    /// Refusals so far for `reason`.
    pub fn refused_count(&self, reason: Reason) -> u64 {
        self.refused[reason as usize].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_count_each_reason_apart() {
        let counters = Counters::default();
        counters.refused(Reason::BadSignature);
        counters.refused(Reason::BadSignature);
        counters.refused(Reason::RateLimited);
        counters.accepted(Accepted::Certificate);
        assert_eq!(counters.refused_count(Reason::BadSignature), 2);
        assert_eq!(counters.refused_count(Reason::RateLimited), 1);
        assert_eq!(counters.refused_count(Reason::NoSignature), 0);
        assert_eq!(counters.accepted_count(Accepted::Certificate), 1);
        assert_eq!(counters.accepted_count(Accepted::Signature), 0);
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        for (i, a) in Accepted::ALL.iter().enumerate() {
            assert_eq!(*a as usize, i);
        }
    }
}
