//! Accounts over HTTP Basic: the HTTP listener's requests checked against the same accounts,
//! roles, address rules, failure window and counters as the remoting port's. An HTTP route
//! names the request code it mirrors (its access is [`access_of`] of that code), so
//! `/api/v1/kv/NS` needs what GET_KV_CONFIG (101) needs.
//!
//! The secret is compared in constant time without keeping it: both the account's key and the
//! presented secret sign the same fixed text, and the two signatures are compared with
//! `subtle` (`remoting::signature` keeps only the HMAC key of an account).

use std::net::SocketAddr;

use remoting::signature::{sign_fields, SigningKey};
use subtle::ConstantTimeEq;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::audit::{self, Accepted, Reason, Who};
use crate::failures::{Principal, Recorded};
use crate::policy::{access_of, Access};
use crate::settings::AuthMode;
use crate::{Auth, Refusal};

/// What the signatures compared by [`secret_matches`] sign.
const PROBE: &[u8] = b"rocketmq-namesrv http basic";

/// An accessKey and secretKey pair, as an HTTP `Authorization: Basic` header carries them.
#[derive(Clone, Copy)]
pub struct BasicCredentials<'a> {
    /// The account's `accessKey`.
    pub access_key: &'a str,
    /// Its `secretKey`.
    pub secret_key: &'a str,
}

impl std::fmt::Debug for BasicCredentials<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicCredentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// Whether `secret` is the secret of `key`, in time independent of where they differ.
fn secret_matches(key: &SigningKey, secret: &str) -> bool {
    let expected = sign_fields(key, std::iter::empty(), PROBE);
    let given = sign_fields(&SigningKey::new(secret), std::iter::empty(), PROBE);
    bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

impl Auth {
    /// Whether an HTTP request from `peer` needing what request code `code` needs may be
    /// served, with these Basic credentials (`None`: none were sent). Reads in
    /// `authenticationMode=writes` are open (credentials are not even looked at, as on the
    /// remoting port). Without credentials only a `globalWhiteRemoteAddresses` address is
    /// accepted. Refusals are counted with the remoting ones and logged to the audit target;
    /// a refused pair of credentials counts against the address's failure window (a request
    /// without credentials does not: a browser always asks once without them).
    pub fn check_basic(
        &self,
        peer: SocketAddr,
        credentials: Option<BasicCredentials<'_>>,
        code: i32,
        now: impl Fn() -> Instant,
    ) -> Result<Who, Refusal> {
        let access = access_of(code);
        if access == Access::Read && self.mode() == AuthMode::Writes {
            return Ok(Who::Anonymous);
        }
        let ip = peer.ip().to_canonical();
        let principal = match credentials {
            None => Principal::Unsigned,
            Some(c) => match self.accounts().by_access_key(c.access_key) {
                Some(account) => Principal::Account(std::sync::Arc::clone(&account.access_key)),
                None => Principal::UnknownKey,
            },
        };
        if self.failures.any_blocked() && self.failures.is_blocked(ip, &principal, now()) {
            self.counters.refused(Reason::RateLimited);
            debug!(target: audit::TARGET, peer = %peer, code, transport = "http", principal = %principal, "refused: blocked after repeated failures");
            return Err(Refusal::RateLimited { ip, who: principal });
        }
        let result = self.identify_basic(peer, credentials, code, access);
        match &result {
            Ok((_, how)) => self.counters.accepted(*how),
            Err(refusal) => {
                self.counters.refused(refusal.reason());
                let access_key = credentials.map(|c| remoting::text::clip(c.access_key));
                let recorded = credentials.map(|_| self.failures.record(ip, &principal, now()));
                let blocked = matches!(recorded, Some(Recorded::Blocked { .. }));
                warn!(
                    target: audit::TARGET,
                    peer = %peer,
                    code,
                    transport = "http",
                    access_key = access_key.map(tracing::field::display),
                    reason = refusal.reason().label(),
                    blocked,
                    "refused"
                );
            }
        }
        result.map(|(who, _)| who)
    }

    fn identify_basic(
        &self,
        peer: SocketAddr,
        credentials: Option<BasicCredentials<'_>>,
        code: i32,
        access: Access,
    ) -> Result<(Who, Accepted), Refusal> {
        let ip = peer.ip().to_canonical();
        let accounts = self.accounts();
        let Some(credentials) = credentials else {
            if accounts.globally_allowed(ip) {
                return Ok((Who::Whitelisted, Accepted::Whitelisted));
            }
            return Err(Refusal::NoSignature { code });
        };
        let account =
            accounts.by_access_key(credentials.access_key).ok_or(Refusal::UnknownAccessKey)?;
        if !account.key().is_some_and(|key| secret_matches(key, credentials.secret_key)) {
            return Err(Refusal::BadSignature);
        }
        if !account.allows_address(ip) {
            return Err(Refusal::AddressDenied { ip });
        }
        if !account.role.allows(access) {
            return Err(Refusal::RoleDenied { role: account.role.name(), code });
        }
        let who = if access == Access::Read {
            Who::Reader
        } else {
            Who::Account(std::sync::Arc::clone(&account.access_key))
        };
        Ok((who, Accepted::Signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Accounts, FAILURE_LIMIT};
    use remoting::RequestCode as C;

    const FILE: &str = r#"
accounts:
  - {accessKey: ops, secretKey: "ops-secret", role: admin}
  - {accessKey: viewer, secretKey: "viewer-secret", role: reader, whiteRemoteAddress: 127.0.0.1}
"#;

    fn gate(mode: AuthMode) -> Auth {
        Auth::new(mode, "auth.yml".into(), Accounts::parse(FILE).expect("accounts"))
    }

    fn peer(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().expect("ip"), 40000)
    }

    fn basic<'a>(access_key: &'a str, secret_key: &'a str) -> Option<BasicCredentials<'a>> {
        Some(BasicCredentials { access_key, secret_key })
    }

    #[tokio::test(start_paused = true)]
    async fn basic_credentials_follow_the_remoting_rules() {
        let gate = gate(AuthMode::All);
        let kv = C::GetKvConfig.to_i32();
        let here = peer("127.0.0.1");
        let check = |c, code| gate.check_basic(here, c, code, Instant::now);
        assert_eq!(check(basic("viewer", "viewer-secret"), kv), Ok(Who::Reader));
        assert_eq!(check(None, kv), Err(Refusal::NoSignature { code: kv }));
        assert_eq!(check(basic("viewer", "viewer-secreT"), kv), Err(Refusal::BadSignature));
        assert_eq!(check(basic("viewer", "viewer-secret-"), kv), Err(Refusal::BadSignature));
        assert_eq!(check(basic("viewer", ""), kv), Err(Refusal::BadSignature));
        assert_eq!(check(basic("nobody", "x"), kv), Err(Refusal::UnknownAccessKey));
        let put = C::PutKvConfig.to_i32();
        assert_eq!(
            check(basic("viewer", "viewer-secret"), put),
            Err(Refusal::RoleDenied { role: "reader", code: put })
        );
        assert_eq!(check(basic("ops", "ops-secret"), put), Ok(Who::Account("ops".into())));
        let far =
            gate.check_basic(peer("10.1.1.1"), basic("viewer", "viewer-secret"), kv, Instant::now);
        assert!(matches!(far, Err(Refusal::AddressDenied { .. })), "{far:?}");
        assert_eq!(gate.counters.refused_count(crate::Reason::BadSignature), 3);
        assert_eq!(gate.counters.refused_count(crate::Reason::NoSignature), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn reads_are_open_in_writes_mode_and_guessing_blocks_the_address() {
        let open = gate(AuthMode::Writes);
        let kv = C::GetKvConfig.to_i32();
        assert_eq!(open.check_basic(peer("10.0.0.1"), None, kv, Instant::now), Ok(Who::Anonymous));

        let gate = gate(AuthMode::All);
        let guesser = peer("10.0.0.2");
        for _ in 0..20 {
            let _ = gate.check_basic(guesser, None, kv, Instant::now);
        }
        assert_eq!(
            gate.check_basic(guesser, basic("ops", "ops-secret"), kv, Instant::now),
            Ok(Who::Reader),
            "requests without credentials never block"
        );
        for _ in 0..FAILURE_LIMIT {
            let _ = gate.check_basic(guesser, basic("ops", "guess"), kv, Instant::now);
        }
        assert!(matches!(
            gate.check_basic(guesser, basic("ops", "ops-secret"), kv, Instant::now),
            Err(Refusal::RateLimited { .. })
        ));
    }
}
