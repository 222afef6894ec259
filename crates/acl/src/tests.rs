//! The gate's decisions: each identification path, each refusal, the rate limit, the counters.

use std::path::PathBuf;

use remoting::signature::Credentials;
use remoting::{ExtFields, RequestCode as C};

use super::*;

const FILE: &str = r#"
globalWhiteRemoteAddresses: [10.9.0.0/16]
accounts:
  - {accessKey: broker-a, secretKey: "broker-secret", role: broker, whiteRemoteAddress: 127.0.0.1}
  - {accessKey: ops, secretKey: "ops-secret", role: admin}
  - {accessKey: viewer, secretKey: "viewer-secret", role: reader}
  - {accessKey: cert-ops, role: admin, certificateCN: ops.example.com}
"#;

fn gate(mode: AuthMode) -> Auth {
    Auth::new(mode, PathBuf::from("/unused"), Accounts::parse(FILE).expect("valid"))
}

fn caller(peer: &str) -> Caller<'static> {
    Caller { peer: peer.parse().expect("addr"), proxy: None, certificate_cn: None }
}

fn request(code: C) -> RemotingCommand {
    let fields: ExtFields =
        [("namespace", "ns"), ("key", "k"), ("value", "v")].into_iter().collect();
    RemotingCommand::request(code).with_ext_fields(fields).with_body(&b"body"[..])
}

fn signed(code: C, access_key: &str, secret: &str) -> RemotingCommand {
    let mut request = request(code);
    Credentials::new(access_key, secret).sign(&mut request);
    request
}

fn now() -> Instant {
    Instant::now()
}

#[test]
fn reads_are_open_in_writes_mode_even_with_an_unknown_signature() {
    let auth = gate(AuthMode::Writes);
    let local = caller("192.0.2.1:5000");
    assert_eq!(auth.check(local, &request(C::GetRouteinfoByTopic), now), Ok(Who::Anonymous));
    let foreign = signed(C::GetRouteinfoByTopic, "broker-acl-key", "not ours");
    assert_eq!(auth.check(local, &foreign, now), Ok(Who::Anonymous));
    assert_eq!(auth.counters.refused_count(Reason::UnknownAccessKey), 0);
}

#[test]
fn writes_need_a_valid_signature_of_an_account_whose_role_allows_them() {
    let auth = gate(AuthMode::Writes);
    let local = caller("127.0.0.1:5000");
    let cases = [
        (request(C::PutKvConfig), Err(Refusal::NoSignature { code: 100 })),
        (signed(C::PutKvConfig, "ops", "ops-secret"), Ok(Who::Account("ops".into()))),
        (signed(C::PutKvConfig, "ops", "wrong"), Err(Refusal::BadSignature)),
        (signed(C::PutKvConfig, "nobody", "ops-secret"), Err(Refusal::UnknownAccessKey)),
        (
            signed(C::PutKvConfig, "viewer", "viewer-secret"),
            Err(Refusal::RoleDenied { role: "reader", code: 100 }),
        ),
        (
            signed(C::WipeWritePermOfBroker, "broker-a", "broker-secret"),
            Err(Refusal::RoleDenied { role: "broker", code: 205 }),
        ),
        (
            signed(C::RegisterBroker, "broker-a", "broker-secret"),
            Ok(Who::Account("broker-a".into())),
        ),
        (signed(C::RegisterBroker, "ops", "ops-secret"), Ok(Who::Account("ops".into()))),
        (signed(C::RegisterBroker, "cert-ops", "anything"), Err(Refusal::BadSignature)),
    ];
    for (i, (request, expected)) in cases.into_iter().enumerate() {
        assert_eq!(auth.check(local, &request, now), expected, "case {i}");
    }
}

#[test]
fn a_signature_over_a_changed_body_is_refused() {
    let auth = gate(AuthMode::Writes);
    let mut replayed = signed(C::PutKvConfig, "ops", "ops-secret");
    replayed.body = Some(bytes::Bytes::from_static(b"other body"));
    assert_eq!(auth.check(caller("127.0.0.1:1"), &replayed, now), Err(Refusal::BadSignature));
}

#[test]
fn an_account_outside_its_white_remote_address_is_refused_after_its_signature_checks() {
    let auth = gate(AuthMode::Writes);
    let remote = caller("192.0.2.7:5000");
    let ip: IpAddr = "192.0.2.7".parse().expect("ip");
    let request = signed(C::RegisterBroker, "broker-a", "broker-secret");
    assert_eq!(auth.check(remote, &request, now), Err(Refusal::AddressDenied { ip }));
    let forged = signed(C::RegisterBroker, "broker-a", "guess");
    assert_eq!(
        auth.check(remote, &forged, now),
        Err(Refusal::BadSignature),
        "no hint without the secret"
    );
    let mapped = caller("[::ffff:127.0.0.1]:5000");
    assert!(auth.check(mapped, &request, now).is_ok(), "IPv4-mapped loopback is 127.0.0.1");
}

#[test]
fn all_mode_refuses_unsigned_reads_and_accepts_any_account_for_them() {
    let auth = gate(AuthMode::All);
    let local = caller("127.0.0.1:5000");
    assert_eq!(
        auth.check(local, &request(C::GetRouteinfoByTopic), now),
        Err(Refusal::NoSignature { code: 105 })
    );
    for (key, secret) in
        [("viewer", "viewer-secret"), ("broker-a", "broker-secret"), ("ops", "ops-secret")]
    {
        let request = signed(C::GetRouteinfoByTopic, key, secret);
        assert_eq!(auth.check(local, &request, now), Ok(Who::Reader), "{key}");
    }
    let foreign = signed(C::GetRouteinfoByTopic, "broker-acl-key", "not ours");
    assert_eq!(auth.check(local, &foreign, now), Err(Refusal::UnknownAccessKey));
}

#[test]
fn a_verified_certificate_cn_stands_for_its_account_and_a_signature_wins_over_it() {
    let auth = gate(AuthMode::All);
    let with_cert = Caller { certificate_cn: Some("ops.example.com"), ..caller("127.0.0.1:5000") };
    assert_eq!(
        auth.check(with_cert, &request(C::UpdateNamesrvConfig), now),
        Ok(Who::Certificate("cert-ops".into()))
    );
    let unknown_cn = Caller { certificate_cn: Some("someone.example.com"), ..with_cert };
    assert_eq!(
        auth.check(unknown_cn, &request(C::PutKvConfig), now),
        Err(Refusal::NoSignature { code: 100 })
    );
    let viewer = signed(C::PutKvConfig, "viewer", "viewer-secret");
    assert_eq!(
        auth.check(with_cert, &viewer, now),
        Err(Refusal::RoleDenied { role: "reader", code: 100 }),
        "the signed identity is the one checked"
    );
    assert_eq!(auth.counters.accepted_count(Accepted::Certificate), 1);
}

#[test]
fn unsigned_requests_from_a_global_white_address_are_accepted() {
    let auth = gate(AuthMode::All);
    assert_eq!(
        auth.check(caller("10.9.1.2:5000"), &request(C::DeleteTopicInNamesrv), now),
        Ok(Who::Whitelisted)
    );
    let bad = signed(C::DeleteTopicInNamesrv, "ops", "wrong");
    assert_eq!(
        auth.check(caller("10.9.1.2:5000"), &bad, now),
        Err(Refusal::BadSignature),
        "a signature is always checked"
    );
}

#[tokio::test(start_paused = true)]
async fn repeated_failures_block_the_key_at_the_address_even_for_a_right_signature() {
    let auth = gate(AuthMode::Writes);
    let attacker = caller("127.0.0.1:6000");
    let ip: IpAddr = "127.0.0.1".parse().expect("ip");
    for _ in 0..FAILURE_LIMIT {
        let guess = signed(C::PutKvConfig, "ops", "guess");
        assert_eq!(auth.check(attacker, &guess, Instant::now), Err(Refusal::BadSignature));
    }
    let right = signed(C::PutKvConfig, "ops", "ops-secret");
    let blocked = Refusal::RateLimited { ip, who: crate::Principal::Account("ops".into()) };
    assert_eq!(auth.check(attacker, &right, Instant::now), Err(blocked));
    assert_eq!(
        auth.check(attacker, &request(C::GetRouteinfoByTopic), Instant::now),
        Ok(Who::Anonymous),
        "open reads are not blocked"
    );
    assert_eq!(
        auth.check(attacker, &request(C::PutKvConfig), Instant::now),
        Err(Refusal::NoSignature { code: request(C::PutKvConfig).code }),
        "unsigned requests from the address are checked as before"
    );
    assert!(auth.check(caller("127.0.0.2:1"), &right, Instant::now).is_ok(), "others are not");
    tokio::time::advance(FAILURE_WINDOW).await;
    assert_eq!(auth.check(attacker, &right, Instant::now), Ok(Who::Account("ops".into())));
    assert_eq!(auth.counters.refused_count(Reason::BadSignature), u64::from(FAILURE_LIMIT));
    assert_eq!(auth.counters.refused_count(Reason::RateLimited), 1);
    assert_eq!(auth.counters.refused_count(Reason::NoSignature), 1);
    assert_eq!(auth.counters.accepted_count(Accepted::Signature), 2);
}

#[test]
fn remarks_say_which_check_failed_and_never_a_secret() {
    let auth = gate(AuthMode::Writes);
    let local = caller("127.0.0.1:1");
    let refusals = [
        auth.check(local, &request(C::PutKvConfig), now),
        auth.check(local, &signed(C::PutKvConfig, "ops", "ops-secreT"), now),
        auth.check(local, &signed(C::PutKvConfig, "viewer", "viewer-secret"), now),
    ];
    let remarks: Vec<String> =
        refusals.iter().map(|r| r.as_ref().expect_err("refused").to_string()).collect();
    assert!(remarks[0].contains("must be signed"), "{}", remarks[0]);
    assert!(remarks[1].contains("signature mismatch"), "{}", remarks[1]);
    assert!(remarks[2].contains("role reader may not send request code 100"), "{}", remarks[2]);
    for remark in &remarks {
        assert!(remark.starts_with("access denied: "), "{remark}");
        assert!(!remark.contains("ops-secret") && !remark.contains("viewer-secret"), "{remark}");
    }
}

#[test]
fn admit_checks_the_role_and_then_the_ownership_counting_each_refusal_once() {
    let file = r#"
accounts:
  - {accessKey: broker-a, secretKey: "a-secret", role: broker, brokerNames: [bn-a]}
  - {accessKey: viewer, secretKey: "viewer-secret", role: reader}
"#;
    let auth = Auth::new(
        AuthMode::Writes,
        PathBuf::from("/unused"),
        Accounts::parse(file).expect("valid"),
    );
    let local = caller("127.0.0.1:1");
    let for_group = |name: &str, key: &str, secret: &str| {
        let fields: ExtFields = [("clusterName", "c"), ("brokerName", name)].into_iter().collect();
        let mut request =
            RemotingCommand::request(C::ControllerAlterSyncStateSet).with_ext_fields(fields);
        Credentials::new(key, secret).sign(&mut request);
        request
    };
    assert_eq!(
        auth.admit(local, &for_group("bn-a", "broker-a", "a-secret"), now),
        Ok(Who::Account("broker-a".into()))
    );
    let refused = auth.admit(local, &for_group("bn-victim", "broker-a", "a-secret"), now);
    assert!(matches!(refused, Err(Refusal::NotOwner { .. })), "{refused:?}");
    let refused = auth.admit(local, &for_group("bn-a", "viewer", "viewer-secret"), now);
    assert!(matches!(refused, Err(Refusal::RoleDenied { .. })), "{refused:?}");
    assert_eq!(auth.counters.refused_count(Reason::NotOwner), 1);
    assert_eq!(auth.counters.refused_count(Reason::RoleDenied), 1);
    assert_eq!(
        auth.counters.accepted_count(Accepted::Signature),
        1,
        "an ownership refusal is no acceptance"
    );
}
