//! RocketMQ request signing (the ACL scheme every Java client, broker and `mqadmin` speaks): the
//! content a signature covers and its HmacSHA1 signature, on both sides of the wire.
//!
//! A signed request carries `AccessKey`, an optional `SecurityToken` and `Signature` in its
//! `extFields`. `Signature` is Base64(HmacSHA1(secretKey, content)) where content is the UTF-8
//! values of every ext field except `Signature`, in Java key order (`String#compareTo`: UTF-16
//! code units), concatenated, followed by the body bytes. The server side also leaves out
//! `_UNIQUE_KEY_QUERY` for clients of version V4_9_3 or older.
//! Java: `AclClientRPCHook#doBeforeRequest`, `AclUtils#combineRequestContent`, `AclSigner`,
//! `DefaultAuthenticationContextBuilder#build(ChannelHandlerContext, RemotingCommand)`,
//! `DefaultAuthenticationHandler#doAuthenticate`

use std::cmp::Ordering;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

use crate::command::RemotingCommand;
use crate::version;

/// `extFields` key of the access key. Java: `SessionCredentials.ACCESS_KEY`
pub const ACCESS_KEY: &str = "AccessKey";
/// `extFields` key of the optional security token. Java: `SessionCredentials.SECURITY_TOKEN`
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// `extFields` key of the signature. Java: `SessionCredentials.SIGNATURE`
pub const SIGNATURE: &str = "Signature";
/// Left out of the server's content for clients of version V4_9_3 or older.
/// Java: `MixAll.UNIQUE_MSG_QUERY_FLAG`
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

/// Length of a Base64 HmacSHA1 signature (20 bytes → 28 characters).
const SIGNATURE_LEN: usize = 28;

/// A secret key ready to sign with (the HMAC pads are hashed once, here; boxed, so credentials
/// stay small in the structs that carry them). Its `Debug` never shows the secret.
#[derive(Clone)]
pub struct SigningKey(Box<Hmac<Sha1>>);

impl SigningKey {
    /// The key for `secret` (its UTF-8 bytes, as Java's `secretKey.getBytes(UTF_8)`).
    pub fn new(secret: &str) -> Self {
        // HMAC takes a key of any length.
        match Hmac::new_from_slice(secret.as_bytes()) {
            Ok(mac) => SigningKey(Box::new(mac)),
            Err(_) => unreachable!("HMAC accepts a key of any length"),
        }
    }

    /// A fresh MAC state keyed with this secret.
    fn mac(&self) -> Hmac<Sha1> {
        Hmac::clone(&self.0)
    }
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(<redacted>)")
    }
}

/// What a client signs with. Its `Debug` never shows the secret. Java: `SessionCredentials`
#[derive(Clone)]
pub struct Credentials {
    /// Sent as `AccessKey`.
    pub access_key: String,
    /// Sent as `SecurityToken` when present.
    pub security_token: Option<String>,
    key: SigningKey,
}

impl Credentials {
    /// Credentials without a security token.
    pub fn new(access_key: impl Into<String>, secret_key: &str) -> Self {
        Credentials {
            access_key: access_key.into(),
            security_token: None,
            key: SigningKey::new(secret_key),
        }
    }

    /// Adds a security token (sent, and signed, as `SecurityToken`).
    pub fn with_security_token(mut self, token: impl Into<String>) -> Self {
        self.security_token = Some(token.into());
        self
    }

    /// Signs `request` as Java's `AclClientRPCHook` does: sets `AccessKey` (and `SecurityToken`),
    /// then `Signature` over every other ext field and the body. Signing again replaces the
    /// previous signature. Java: `AclClientRPCHook#doBeforeRequest`
    pub fn sign(&self, request: &mut RemotingCommand) {
        let body = request.body.as_deref().unwrap_or(&[]);
        let fields = request.ext_fields.get_or_insert_with(Default::default);
        fields.insert(ACCESS_KEY, self.access_key.clone());
        if let Some(token) = &self.security_token {
            fields.insert(SECURITY_TOKEN, token.clone());
        }
        let signature = sign_fields(&self.key, fields.iter(), body);
        fields.insert(SIGNATURE, signature);
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("security_token", &self.security_token.as_ref().map(|_| "<redacted>"))
            .field("secret_key", &"<redacted>")
            .finish()
    }
}

/// Java's `String#compareTo`: UTF-16 code units, so a character outside the BMP (a surrogate
/// pair, 0xD800..) sorts below U+E000..U+FFFF, unlike in UTF-8 byte order.
pub fn java_key_order(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Whether the server leaves `key` out of the signed content (see the module docs).
fn server_skips(key: &str, client_version: i32) -> bool {
    key == SIGNATURE || (client_version <= version::V4_9_3 && key == UNIQUE_KEY_QUERY)
}

/// Feeds the values of `fields` in Java key order, then `body`, to `sink`.
fn for_each_content_part<'a>(
    fields: impl Iterator<Item = (&'a str, &'a str)>,
    body: &'a [u8],
    mut sink: impl FnMut(&[u8]),
) {
    // Requests carry a handful of fields: sort references on the stack.
    let mut small: [(&str, &str); 16] = [("", ""); 16];
    let mut large = Vec::new();
    let mut n = 0;
    for field in fields {
        if n < small.len() {
            small[n] = field;
        } else {
            if large.is_empty() {
                large.extend_from_slice(&small);
            }
            large.push(field);
        }
        n += 1;
    }
    let sorted: &mut [(&str, &str)] = if large.is_empty() { &mut small[..n] } else { &mut large };
    sorted.sort_unstable_by(|a, b| java_key_order(a.0, b.0));
    for (_, value) in sorted.iter() {
        sink(value.as_bytes());
    }
    sink(body);
}

/// Base64(HmacSHA1(key, values of `fields` but `Signature` in Java key order ++ `body`)): the
/// client's signature. Java: `AclUtils#combineRequestContent` + `AclSigner#calSignature`
pub fn sign_fields<'a>(
    key: &SigningKey,
    fields: impl Iterator<Item = (&'a str, &'a str)>,
    body: &'a [u8],
) -> String {
    let mut mac = key.mac();
    for_each_content_part(fields.filter(|(k, _)| *k != SIGNATURE), body, |part| mac.update(part));
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// The bytes the server checks a signature against (for tests and diagnostics; [`verify`] does
/// not build them). Java: `DefaultAuthenticationContextBuilder#build`
pub fn server_content(request: &RemotingCommand) -> Vec<u8> {
    let mut content = Vec::new();
    let fields = request.ext_fields.iter().flat_map(|f| f.iter());
    let kept = fields.filter(|(k, _)| !server_skips(k, request.version));
    for_each_content_part(kept, request.body_bytes(), |part| content.extend_from_slice(part));
    content
}

/// Whether `request`'s `Signature` is the one `key` gives its content, compared in constant
/// time (the expected value is computed in full whatever the given one is). A missing
/// signature is `false`. Java: `DefaultAuthenticationHandler#doAuthenticate`
pub fn verify(key: &SigningKey, request: &RemotingCommand) -> bool {
    let Some(fields) = request.ext_fields.as_ref() else {
        return false;
    };
    let given = fields.get(SIGNATURE);
    let mut mac = key.mac();
    let kept = fields.iter().filter(|(k, _)| !server_skips(k, request.version));
    for_each_content_part(kept, request.body_bytes(), |part| mac.update(part));
    let mut expected = [0u8; SIGNATURE_WORDS * 8];
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(mac.finalize().into_bytes(), &mut expected)
        .unwrap_or(0);
    match given {
        Some(given) if written == SIGNATURE_LEN && given.len() == SIGNATURE_LEN => {
            let mut given_words = [0u8; SIGNATURE_WORDS * 8];
            given_words[..SIGNATURE_LEN].copy_from_slice(given.as_bytes());
            bool::from(words(&expected).ct_eq(&words(&given_words)))
        }
        _ => false,
    }
}

/// 8-byte words covering a signature (the constant-time comparison then takes 4 steps, not 28).
const SIGNATURE_WORDS: usize = SIGNATURE_LEN.div_ceil(8);

fn words(bytes: &[u8; SIGNATURE_WORDS * 8]) -> [u64; SIGNATURE_WORDS] {
    std::array::from_fn(|i| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
        u64::from_ne_bytes(word)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::ExtFields;
    use crate::RequestCode;

    fn request(fields: &[(&str, &str)], body: Option<&[u8]>) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::PutKvConfig);
        cmd.ext_fields = Some(fields.iter().copied().collect::<ExtFields>());
        cmd.body = body.map(bytes::Bytes::copy_from_slice);
        cmd
    }

    #[test]
    fn java_order_puts_astral_characters_below_the_private_use_area() {
        assert_eq!(java_key_order("\u{1F600}", "\u{E000}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{E000}"), Ordering::Greater, "UTF-8 order differs");
        assert_eq!(java_key_order("Signature", "AccessKey"), Ordering::Greater);
    }

    #[test]
    fn a_signed_request_verifies_and_any_change_breaks_it() {
        let credentials = Credentials::new("broker", "12345678");
        let mut cmd = request(&[("namespace", "ns"), ("key", "k"), ("value", "v")], Some(b"body"));
        credentials.sign(&mut cmd);
        let key = SigningKey::new("12345678");
        assert!(verify(&key, &cmd));
        assert!(!verify(&SigningKey::new("12345679"), &cmd), "another secret");

        let mut changed = cmd.clone();
        changed.body = Some(bytes::Bytes::from_static(b"bodY"));
        assert!(!verify(&key, &changed), "another body");
        let mut changed = cmd.clone();
        changed.ext_fields.as_mut().unwrap().insert("value", "w");
        assert!(!verify(&key, &changed), "another value");
        let mut changed = cmd.clone();
        changed.ext_fields.as_mut().unwrap().remove(SIGNATURE);
        assert!(!verify(&key, &changed), "no signature");
        assert!(!verify(&key, &request(&[], None)), "nothing at all");
    }

    #[test]
    fn the_content_is_the_sorted_values_then_the_body() {
        let cmd = request(&[("b", "2"), ("a", "1"), (SIGNATURE, "x"), ("c", "3")], Some(b"!"));
        assert_eq!(server_content(&cmd), b"123!");
    }

    #[test]
    fn old_clients_unique_key_query_is_left_out_of_the_server_content() {
        let mut cmd = request(&[("a", "1"), (UNIQUE_KEY_QUERY, "true")], None);
        cmd.version = version::V4_9_3;
        assert_eq!(server_content(&cmd), b"1");
        cmd.version = version::V4_9_4;
        assert_eq!(server_content(&cmd), b"true1", "`_` sorts before `a`");
    }

    #[test]
    fn debug_output_never_shows_a_secret() {
        let credentials = Credentials::new("ak", "s3cr3t").with_security_token("t0k3n");
        let shown = format!("{credentials:?} {:?}", SigningKey::new("s3cr3t"));
        assert!(!shown.contains("s3cr3t") && !shown.contains("t0k3n"), "{shown}");
        assert!(shown.contains("ak"));
    }

    #[test]
    fn many_fields_sort_like_few() {
        let fields: Vec<(String, String)> =
            (0..40).rev().map(|i| (format!("k{i:02}"), format!("{i},"))).collect();
        let mut cmd = RemotingCommand::request(RequestCode::PutKvConfig);
        cmd.ext_fields = Some(fields.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
        let expected: String = (0..40).map(|i| format!("{i},")).collect();
        assert_eq!(server_content(&cmd), expected.as_bytes());
    }
}
