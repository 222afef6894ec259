//! Signatures a connection has had verified. A RocketMQ client signs the same request the same
//! way every time (no timestamp or nonce: a route refresh of one topic carries one signature
//! for as long as the client runs), so a connection's repeated request is recognised by its
//! signature, account and exact content, and its HmacSHA1 is not computed again.
//!
//! Sound because an entry is only used when all three match what was verified: the same
//! signature over different content (a replay over a changed body) or for another account is
//! checked in full, and an entry holds the account object it was verified with, so an accounts
//! file reload (new objects, perhaps new secrets) invalidates every entry. The cache is per
//! connection: what one client sent never vouches for another's request.

use std::collections::HashMap;
use std::sync::Arc;

use remoting::signature::{self, SigningKey, SIGNATURE};
use remoting::RemotingCommand;

use super::Account;

/// Entries per connection; the table starts over when it is full.
const MAX_ENTRIES: usize = 256;
/// Requests whose signed content is longer (registrations with their topic tables) are checked
/// every time and not kept: they are rare, and their content is large.
const MAX_CONTENT: usize = 4096;

/// One connection's verified signatures.
#[derive(Default)]
pub struct VerifiedSignatures {
    entries: HashMap<Box<str>, Verified>,
    /// Reused for building each request's content.
    scratch: Vec<u8>,
    /// HmacSHA1 checks made (misses of the cache), for tests.
    checked: u64,
}

/// What a signature was verified for.
struct Verified {
    account: Arc<Account>,
    content: Box<[u8]>,
}

impl std::fmt::Debug for VerifiedSignatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedSignatures")
            .field("entries", &self.entries.len())
            .field("checked", &self.checked)
            .finish()
    }
}

impl VerifiedSignatures {
    /// Whether `request` carries the signature `key` (the secret of `account`) gives its
    /// content: remembered when this connection sent the same signature over the same content
    /// for the same account before, else checked in constant time and remembered.
    pub fn verify(
        &mut self,
        account: &Arc<Account>,
        key: &SigningKey,
        request: &RemotingCommand,
    ) -> bool {
        let Some(given) = request.ext(SIGNATURE) else {
            return false;
        };
        if request.body_bytes().len() > MAX_CONTENT {
            self.checked += 1;
            return signature::verify(key, request);
        }
        signature::server_content_into(request, &mut self.scratch);
        let content = self.scratch.as_slice();
        if let Some(seen) = self.entries.get(given) {
            if Arc::ptr_eq(&seen.account, account) && *seen.content == *content {
                return true;
            }
        }
        self.checked += 1;
        let valid = signature::verify_content(key, content, given);
        if valid && content.len() <= MAX_CONTENT {
            if self.entries.len() >= MAX_ENTRIES {
                self.entries.clear();
            }
            let entry = Verified { account: Arc::clone(account), content: content.into() };
            self.entries.insert(given.into(), entry);
        }
        if self.scratch.capacity() > 2 * MAX_CONTENT {
            // A request with a huge header: do not keep its buffer for the connection's life.
            self.scratch = Vec::new();
        }
        valid
    }

    /// HmacSHA1 checks made so far (the requests the cache did not answer).
    pub fn checked(&self) -> u64 {
        self.checked
    }
}

#[cfg(test)]
mod tests {
    use remoting::signature::Credentials;
    use remoting::RequestCode;

    use super::*;
    use crate::auth::Accounts;

    fn accounts(secret: &str) -> Accounts {
        Accounts::parse(&format!(
            "accounts:\n  - accessKey: reader\n    secretKey: {secret}\n    role: reader\n  - accessKey: other\n    secretKey: {secret}-other\n    role: reader\n"
        ))
        .expect("accounts")
    }

    fn signed(secret: &str, topic: &str, body: Option<&[u8]>) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic);
        cmd.ext_fields = Some([("topic", topic)].into_iter().collect());
        cmd.body = body.map(bytes::Bytes::copy_from_slice);
        Credentials::new("reader", secret).sign(&mut cmd);
        cmd
    }

    fn lookup<'a>(accounts: &'a Accounts, name: &str) -> (&'a Arc<Account>, &'a SigningKey) {
        let account = accounts.by_access_key(name).expect("account");
        (account, account.key().expect("secret"))
    }

    #[test]
    fn a_repeated_request_is_verified_once() {
        let accounts = accounts("s3cret");
        let (account, key) = lookup(&accounts, "reader");
        let mut cache = VerifiedSignatures::default();
        let request = signed("s3cret", "TopicA", None);
        for _ in 0..5 {
            assert!(cache.verify(account, key, &request));
        }
        assert_eq!(cache.checked(), 1);
        assert!(cache.verify(account, key, &signed("s3cret", "TopicB", None)));
        assert_eq!(cache.checked(), 2, "another topic is another signature");
    }

    #[test]
    fn a_remembered_signature_over_changed_content_is_refused() {
        let accounts = accounts("s3cret");
        let (account, key) = lookup(&accounts, "reader");
        let mut cache = VerifiedSignatures::default();
        let good = signed("s3cret", "TopicA", Some(b"body"));
        assert!(cache.verify(account, key, &good));
        // The same Signature field on a changed body, and on a changed header.
        let mut replay = good.clone();
        replay.body = Some(bytes::Bytes::from_static(b"bodY"));
        assert!(!cache.verify(account, key, &replay));
        let mut replay = good.clone();
        replay.ext_fields.as_mut().expect("fields").insert("topic", "TopicB");
        assert!(!cache.verify(account, key, &replay));
        // Another account does not inherit the entry: it is checked (with its own secret).
        let (other, other_key) = lookup(&accounts, "other");
        let before = cache.checked();
        assert!(!cache.verify(other, other_key, &good), "another secret");
        assert_eq!(cache.checked(), before + 1);
        assert!(cache.verify(account, key, &good), "the original still verifies");
    }

    #[test]
    fn a_reloaded_accounts_file_invalidates_what_was_verified() {
        let old = accounts("s3cret");
        let (account, key) = lookup(&old, "reader");
        let mut cache = VerifiedSignatures::default();
        let request = signed("s3cret", "TopicA", None);
        assert!(cache.verify(account, key, &request));
        // The secret changed: the old signature is checked again, and fails.
        let new = accounts("changed");
        let (account, key) = lookup(&new, "reader");
        assert!(!cache.verify(account, key, &request));
        assert!(cache.verify(account, key, &signed("changed", "TopicA", None)));
    }

    #[test]
    fn the_table_is_bounded_and_large_content_is_never_kept() {
        let accounts = accounts("s3cret");
        let (account, key) = lookup(&accounts, "reader");
        let mut cache = VerifiedSignatures::default();
        for i in 0..MAX_ENTRIES + 10 {
            assert!(cache.verify(account, key, &signed("s3cret", &format!("T{i}"), None)));
        }
        assert!(cache.entries.len() <= MAX_ENTRIES);
        let big = signed("s3cret", "TopicA", Some(&vec![b'x'; MAX_CONTENT + 1]));
        let before = cache.checked();
        assert!(cache.verify(account, key, &big));
        assert!(cache.verify(account, key, &big));
        assert_eq!(cache.checked(), before + 2, "checked every time");
        assert!(cache.scratch.capacity() <= 2 * MAX_CONTENT);
    }
}
