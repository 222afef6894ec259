//! Request signing against Apache RocketMQ's own classes: `acl/vectors.json` was written by
//! `acl/AclVectors.java` (run by `acl/generate`) with the 5.5.0 `AclClientRPCHook` signing random
//! ext fields and bodies, and the ACL 2.0 `DefaultAuthenticationContextBuilder` + `AclSigner`
//! building and signing the server's content. Plus property tests of the scheme itself.

use base64::Engine as _;
use bytes::Bytes;
use proptest::prelude::*;
use remoting::signature::{self, Credentials, SigningKey, ACCESS_KEY, SECURITY_TOKEN, SIGNATURE};
use remoting::{ExtFields, RemotingCommand, RequestCode};
use serde_json::Value;

fn b64(value: &Value) -> Option<Vec<u8>> {
    value.as_str().map(|s| base64::engine::general_purpose::STANDARD.decode(s).expect("base64"))
}

fn pairs(value: &Value) -> Vec<(String, String)> {
    value
        .as_array()
        .expect("array of pairs")
        .iter()
        .map(|p| (p[0].as_str().unwrap().to_owned(), p[1].as_str().unwrap().to_owned()))
        .collect()
}

fn command(
    version: i32,
    fields: Option<Vec<(String, String)>>,
    body: Option<Vec<u8>>,
) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::PutKvConfig);
    cmd.version = version;
    cmd.ext_fields = fields.map(|f| f.into_iter().collect::<ExtFields>());
    cmd.body = body.map(Bytes::from);
    cmd
}

fn vectors() -> Vec<Value> {
    let text = include_str!("acl/vectors.json");
    serde_json::from_str::<Value>(text).expect("vectors.json").as_array().unwrap().clone()
}

#[test]
fn signing_and_verifying_agree_with_the_java_classes_on_every_vector() {
    let vectors = vectors();
    assert!(vectors.len() >= 300, "{} vectors", vectors.len());
    let (mut accepted, mut refused) = (0, 0);
    for (i, v) in vectors.iter().enumerate() {
        let version = v["version"].as_i64().unwrap() as i32;
        let secret = v["secretKey"].as_str().unwrap();
        let body = b64(&v["body"]);

        // Client side: our signer, given what the Java hook was given, writes the same fields.
        let before = pairs(&v["fieldsBefore"]);
        let mut ours = command(version, Some(before), body.clone());
        let mut credentials = Credentials::new(v["accessKey"].as_str().unwrap(), secret);
        if let Some(token) = v["securityToken"].as_str() {
            credentials = credentials.with_security_token(token);
        }
        credentials.sign(&mut ours);
        let java_fields = pairs(&v["extFields"]);
        let mut ours_sorted: Vec<_> = ours
            .ext_fields
            .as_ref()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let mut java_sorted = java_fields.clone();
        ours_sorted.sort();
        java_sorted.sort();
        assert_eq!(ours_sorted, java_sorted, "vector {i}: the signed ext fields");
        assert_eq!(
            ours.ext(SIGNATURE),
            v["clientSignature"].as_str(),
            "vector {i}: client signature"
        );

        // Server side: the content Java checks, and its verdict on the Java client's request.
        let signed = command(version, Some(java_fields), body);
        assert_eq!(
            signature::server_content(&signed),
            b64(&v["serverContent"]).unwrap_or_default(),
            "vector {i}: server content"
        );
        let java_accepts = v["accepted"].as_bool().unwrap();
        assert_eq!(
            signature::verify(&SigningKey::new(secret), &signed),
            java_accepts,
            "vector {i}: verdict"
        );
        if java_accepts {
            accepted += 1;
        } else {
            refused += 1;
        }
    }
    // The Java server refuses an old client's signed _UNIQUE_KEY_QUERY: both verdicts occur.
    assert!(accepted > 200 && refused > 10, "accepted {accepted}, refused {refused}");
}

fn field() -> impl Strategy<Value = (String, String)> {
    ("[A-Za-z_\u{e9}\u{4e2d}\u{e000}\u{1f600}]{1,6}", "\\PC{0,12}")
}

proptest! {
    #[test]
    fn a_signature_verifies_whatever_the_field_order(
        fields in proptest::collection::vec(field(), 0..20),
        body in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..200)),
        secret in "\\PC{1,20}",
        token in proptest::option::of("[a-z0-9]{1,8}"),
    ) {
        let mut cmd = command(479, Some(fields.clone()), body.clone());
        let mut credentials = Credentials::new("ak", &secret);
        if let Some(token) = &token {
            credentials = credentials.with_security_token(token.clone());
        }
        credentials.sign(&mut cmd);
        let key = SigningKey::new(&secret);
        prop_assert!(signature::verify(&key, &cmd));
        prop_assert_eq!(cmd.ext(ACCESS_KEY), Some("ak"));
        prop_assert_eq!(cmd.ext(SECURITY_TOKEN), token.as_deref());

        // The same fields written in the reverse order carry the same signature.
        let mut reversed: Vec<(String, String)> =
            cmd.ext_fields.as_ref().unwrap().iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        reversed.reverse();
        let again = command(479, Some(reversed), body);
        prop_assert!(signature::verify(&key, &again));
    }

    #[test]
    fn any_changed_body_byte_or_value_is_refused(
        fields in proptest::collection::vec(field(), 1..10),
        body in proptest::collection::vec(any::<u8>(), 1..200),
        flip in any::<prop::sample::Index>(),
        secret in "[a-z]{8}",
    ) {
        let mut cmd = command(479, Some(fields), Some(body.clone()));
        Credentials::new("ak", &secret).sign(&mut cmd);
        let key = SigningKey::new(&secret);
        let mut tampered = body;
        let i = flip.index(tampered.len());
        tampered[i] ^= 0x01;
        let mut changed = cmd.clone();
        changed.body = Some(Bytes::from(tampered));
        prop_assert!(!signature::verify(&key, &changed));

        let mut changed = cmd.clone();
        let fields = changed.ext_fields.as_mut().unwrap();
        let (k, v) = fields.iter().find(|(k, _)| *k != SIGNATURE).map(|(k, v)| (k.to_owned(), v.to_owned())).unwrap();
        fields.insert(k, format!("{v}x"));
        prop_assert!(!signature::verify(&key, &changed));
        let other = format!("{secret}x");
        prop_assert!(!signature::verify(&SigningKey::new(&other), &cmd));
    }
}
