//! A throw-away PKI for TLS tests: a CA, a certificate it signed for `localhost` / 127.0.0.1
//! (usable by a server and as a client certificate), and an unrelated CA, as PEM files.
#![allow(dead_code)]

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

pub struct Pki {
    pub dir: tempfile::TempDir,
    /// The CA that signed `cert`.
    pub ca: PathBuf,
    /// A CA that signed nothing here.
    pub other_ca: PathBuf,
    /// Signed by `ca`: SANs `localhost` and `127.0.0.1`, CN `node`, server and client use.
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key")).expect("CA")
}

pub fn pki() -> Pki {
    let dir = tempfile::tempdir().expect("dir");
    let path = |name: &str| dir.path().join(name);
    let authority = ca("test CA");
    let other = ca("other CA");
    let mut params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).expect("sans");
    params.distinguished_name.push(DnType::CommonName, "node");
    params.extended_key_usages =
        vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &authority).expect("signed");
    std::fs::write(path("ca.pem"), authority.pem()).expect("write");
    std::fs::write(path("other-ca.pem"), other.pem()).expect("write");
    std::fs::write(path("cert.pem"), cert.pem()).expect("write");
    std::fs::write(path("key.pem"), key.serialize_pem()).expect("write");
    Pki {
        ca: path("ca.pem"),
        other_ca: path("other-ca.pem"),
        cert: path("cert.pem"),
        key: path("key.pem"),
        dir,
    }
}
