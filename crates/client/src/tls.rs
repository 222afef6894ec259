//! TLS on the client side of a remoting connection: [`TlsSettings`], Java's client keys
//! (`tls.enable`, `tls.test.mode.enable`, `tls.client.*`), and [`ClientTls`], the rustls client
//! configuration they describe (ring provider), handed to [`crate::ClientConfig::tls`].
//!
//! Java's meaning, kept: in test mode (`tls.test.mode.enable`, default true) the client trusts
//! any server certificate and presents none; otherwise it trusts any server certificate unless
//! `tls.client.authServer` is true, then only one chaining to `tls.client.trustCertPath`, and it
//! presents `tls.client.certPath` / `tls.client.keyPath` when both are set (mutual TLS).
//! Differences: a checked server certificate must also name the host the client dials (rustls
//! always checks the name); `authServer` without a trust file is an error here, as no system
//! trust store is read. Java: `TlsHelper#buildSslContext(true)`

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// `tls.enable`: the client speaks TLS (Java default false).
pub const KEY_ENABLE: &str = "tls.enable";
/// `tls.test.mode.enable` (Java default true).
pub const KEY_TEST_MODE: &str = "tls.test.mode.enable";
/// `tls.client.certPath`.
pub const KEY_CERT_PATH: &str = "tls.client.certPath";
/// `tls.client.keyPath`.
pub const KEY_KEY_PATH: &str = "tls.client.keyPath";
/// `tls.client.keyPassword`.
pub const KEY_KEY_PASSWORD: &str = "tls.client.keyPassword";
/// `tls.client.authServer` (Java default false).
pub const KEY_AUTH_SERVER: &str = "tls.client.authServer";
/// `tls.client.trustCertPath`.
pub const KEY_TRUST_CERT_PATH: &str = "tls.client.trustCertPath";

/// The client-side TLS settings, Java's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `tls.enable`, default false.
    pub enable: bool,
    /// `tls.test.mode.enable`, default true: trust any server, present no certificate.
    pub test_mode: bool,
    /// `tls.client.certPath`: PEM chain presented to the server, leaf first.
    pub cert_path: Option<PathBuf>,
    /// `tls.client.keyPath`: its PEM private key (PKCS#8, PKCS#1, SEC1, or encrypted PKCS#8).
    pub key_path: Option<PathBuf>,
    /// `tls.client.keyPassword`: the password of an encrypted PKCS#8 key.
    pub key_password: Option<String>,
    /// `tls.client.authServer`, default false: check the server's certificate.
    pub auth_server: bool,
    /// `tls.client.trustCertPath`: PEM CA certificates the server's certificate must chain to.
    pub trust_cert_path: Option<PathBuf>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            enable: false,
            test_mode: true,
            cert_path: None,
            key_path: None,
            key_password: None,
            auth_server: false,
            trust_cert_path: None,
        }
    }
}

impl TlsSettings {
    /// Reads the keys from one source. Never fails: booleans are Java's `Boolean.parseBoolean`
    /// (only `true`, any case), blank paths are unset. Java: `TlsSystemConfig`
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let non_blank = |key: &str| lookup(key).filter(|v| !v.trim().is_empty());
        let path = |key: &str| non_blank(key).map(|v| PathBuf::from(v.trim()));
        let is_true =
            |key: &str| lookup(key).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        TlsSettings {
            enable: is_true(KEY_ENABLE),
            test_mode: lookup(KEY_TEST_MODE).is_none_or(|v| v.trim().eq_ignore_ascii_case("true")),
            cert_path: path(KEY_CERT_PATH),
            key_path: path(KEY_KEY_PATH),
            key_password: non_blank(KEY_KEY_PASSWORD),
            auth_server: is_true(KEY_AUTH_SERVER),
            trust_cert_path: path(KEY_TRUST_CERT_PATH),
        }
    }

    /// The rustls configuration these settings describe (whatever `enable` says); files are
    /// read now. Errors name the key at fault.
    pub fn build(&self) -> Result<ClientTls, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Invalid { key: KEY_ENABLE, reason: e.to_string() })?;
        let builder = if self.test_mode || !self.auth_server {
            builder.dangerous().with_custom_certificate_verifier(Arc::new(AnyServerCertificate {
                algorithms: provider.signature_verification_algorithms,
            }))
        } else {
            let path = self.trust_cert_path.as_deref().ok_or(TlsError::Missing {
                key: KEY_TRUST_CERT_PATH,
                why: "when tls.client.authServer is true (no system trust store is read)",
            })?;
            let mut roots = RootCertStore::empty();
            for cert in load_certs(KEY_TRUST_CERT_PATH, path)? {
                roots.add(cert).map_err(|e| pem_error(KEY_TRUST_CERT_PATH, path, e))?;
            }
            builder.with_root_certificates(roots)
        };
        let config = match (self.test_mode, &self.cert_path, &self.key_path) {
            (false, Some(cert), Some(key)) => {
                let chain = load_certs(KEY_CERT_PATH, cert)?;
                let key = load_key(key, self.key_password.as_deref())?;
                check_key(&provider, &chain, &key)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| TlsError::Invalid { key: KEY_KEY_PATH, reason: e.to_string() })?
            }
            (false, Some(_), None) => {
                return Err(TlsError::Missing {
                    key: KEY_KEY_PATH,
                    why: "with tls.client.certPath",
                })
            }
            (false, None, Some(_)) => {
                return Err(TlsError::Missing {
                    key: KEY_CERT_PATH,
                    why: "with tls.client.keyPath",
                })
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(ClientTls {
            config: Arc::new(RwLock::new(Arc::new(config))),
            verifies_server: !self.test_mode && self.auth_server,
        })
    }
}

/// Why a client TLS configuration could not be built. Every variant names the key at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A configured file could not be read.
    #[error("{key}: cannot read {}: {source}", path.display())]
    Read {
        key: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A configured file is not usable PEM.
    #[error("{key}: {}: {reason}", path.display())]
    Pem { key: &'static str, path: PathBuf, reason: String },
    /// A key the others make necessary is absent.
    #[error("{key} must be set {why}")]
    Missing { key: &'static str, why: &'static str },
    /// A key has a value that cannot be used.
    #[error("{key}: {reason}")]
    Invalid { key: &'static str, reason: String },
}

impl TlsError {
    /// The key at fault.
    pub fn key(&self) -> &'static str {
        match self {
            TlsError::Read { key, .. }
            | TlsError::Pem { key, .. }
            | TlsError::Missing { key, .. }
            | TlsError::Invalid { key, .. } => key,
        }
    }
}

/// A built client TLS configuration. Cheap to clone; clones share the configuration in force,
/// which [`ClientTls::reload`] replaces for the connections made after it.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<RwLock<Arc<rustls::ClientConfig>>>,
    verifies_server: bool,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("verifies_server", &self.verifies_server)
            .field("client_certificate", &self.current().client_auth_cert_resolver.has_certs())
            .finish()
    }
}

impl ClientTls {
    /// Whether the server's certificate is checked (chain and name).
    pub fn verifies_server(&self) -> bool {
        self.verifies_server
    }

    /// The rustls configuration new connections use.
    pub fn current(&self) -> Arc<rustls::ClientConfig> {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Builds `settings` again (their files read now) and puts the result in force for every
    /// connection made from now on, by this value and its clones; established connections keep
    /// theirs. On error the configuration in force stays. The settings should be the ones this
    /// was built from: whether the server is checked is not changed.
    pub fn reload(&self, settings: &TlsSettings) -> Result<(), TlsError> {
        let fresh = settings.build()?.current();
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = fresh;
        Ok(())
    }

    /// The handshake over `tcp` to `addr` (`host:port`; the host is the name checked).
    pub(crate) async fn connect(
        &self,
        addr: &str,
        tcp: tokio::net::TcpStream,
    ) -> io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        tokio_rustls::TlsConnector::from(self.current()).connect(name, tcp).await
    }
}

/// Accepts any server certificate (Java's `InsecureTrustManagerFactory`), while the handshake
/// still checks the server's signature with the certificate's key.
#[derive(Debug)]
struct AnyServerCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

fn pem_error(key: &'static str, path: &Path, reason: impl ToString) -> TlsError {
    TlsError::Pem { key, path: path.to_owned(), reason: reason.to_string() }
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { key, path: path.to_owned(), source })
}

/// Every `CERTIFICATE` block of a PEM file, in order; at least one.
fn load_certs(key: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(key, path, e))?;
    if certs.is_empty() {
        return Err(pem_error(key, path, "no CERTIFICATE block"));
    }
    Ok(certs)
}

/// The private key; an `ENCRYPTED PRIVATE KEY` (PKCS#8, PBES2) is decrypted with `password`.
fn load_key(path: &Path, password: Option<&str>) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(KEY_KEY_PATH, path)?;
    let text = String::from_utf8_lossy(&bytes);
    if !text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| pem_error(KEY_KEY_PATH, path, e));
    }
    let password = password.ok_or(TlsError::Missing {
        key: KEY_KEY_PASSWORD,
        why: "when tls.client.keyPath holds an ENCRYPTED PRIVATE KEY",
    })?;
    // Only the encrypted block (the file may hold certificates too).
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let block = text
        .find(BEGIN)
        .and_then(|b| text[b..].find(END).map(|e| &text[b..b + e + END.len()]))
        .ok_or_else(|| pem_error(KEY_KEY_PATH, path, "unterminated ENCRYPTED PRIVATE KEY"))?;
    let (_, der) = pkcs8::der::pem::decode_vec(block.as_bytes())
        .map_err(|e| pem_error(KEY_KEY_PATH, path, e))?;
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
        .map_err(|e| pem_error(KEY_KEY_PATH, path, e))?;
    let plain = info.decrypt(password).map_err(|e| TlsError::Invalid {
        key: KEY_KEY_PASSWORD,
        reason: format!("cannot decrypt {} (wrong password?): {e}", path.display()),
    })?;
    Ok(PrivatePkcs8KeyDer::from(plain.as_bytes().to_vec()).into())
}

/// Refuses a key that does not belong to the certificate (when rustls can tell).
fn check_key(
    provider: &CryptoProvider,
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
) -> Result<(), TlsError> {
    let signing = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| TlsError::Invalid { key: KEY_KEY_PATH, reason: e.to_string() })?;
    match rustls::sign::CertifiedKey::new(chain.to_vec(), signing).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(()),
        Err(e) => Err(TlsError::Invalid {
            key: KEY_KEY_PATH,
            reason: format!("does not match the certificate in {KEY_CERT_PATH}: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::HashMap<String, String> =
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn defaults_are_javas() {
        let s = TlsSettings::from_lookup(|_| None);
        assert_eq!(s, TlsSettings::default());
        assert!(!s.enable && s.test_mode && !s.auth_server);
        let s = TlsSettings::from_lookup(lookup(&[
            (KEY_ENABLE, "TRUE"),
            (KEY_TEST_MODE, "no"),
            (KEY_AUTH_SERVER, "yes"),
            (KEY_CERT_PATH, " /c.pem "),
            (KEY_TRUST_CERT_PATH, " "),
        ]));
        assert!(s.enable && !s.test_mode && !s.auth_server);
        assert_eq!(s.cert_path, Some(PathBuf::from("/c.pem")));
        assert_eq!(s.trust_cert_path, None);
    }

    #[test]
    fn an_encrypted_client_key_needs_its_password() {
        let dir = tempfile::tempdir().unwrap();
        let generated = rcgen::generate_simple_self_signed(vec!["node".to_owned()]).unwrap();
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        let der = generated.signing_key.serialize_der();
        let info = pkcs8::PrivateKeyInfo::try_from(der.as_slice()).unwrap();
        let params =
            pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(1000, b"saltsalt", &[7; 16])
                .unwrap();
        let pem = info
            .encrypt_with_params(params, "s3cret")
            .unwrap()
            .to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
            .unwrap();
        // The certificate and the encrypted key in one file, as some tools write them.
        std::fs::write(&cert, generated.cert.pem()).unwrap();
        std::fs::write(&key, format!("{}{}", generated.cert.pem(), pem.as_str())).unwrap();
        let settings = |password: Option<&str>| TlsSettings {
            test_mode: false,
            cert_path: Some(cert.clone()),
            key_path: Some(key.clone()),
            key_password: password.map(str::to_owned),
            ..TlsSettings::default()
        };
        assert_eq!(settings(None).build().unwrap_err().key(), KEY_KEY_PASSWORD);
        assert_eq!(settings(Some("wrong")).build().unwrap_err().key(), KEY_KEY_PASSWORD);
        let built = settings(Some("s3cret")).build().expect("decrypted");
        assert!(format!("{built:?}").contains("client_certificate: true"), "{built:?}");
    }

    #[test]
    fn errors_name_the_key() {
        let checked = TlsSettings { test_mode: false, auth_server: true, ..TlsSettings::default() };
        assert_eq!(checked.build().unwrap_err().key(), KEY_TRUST_CERT_PATH);
        let missing =
            TlsSettings { trust_cert_path: Some("/nonexistent/ca.pem".into()), ..checked.clone() };
        assert_eq!(missing.build().unwrap_err().key(), KEY_TRUST_CERT_PATH);
        let half = TlsSettings {
            test_mode: false,
            cert_path: Some("/nonexistent/c.pem".into()),
            ..TlsSettings::default()
        };
        assert_eq!(half.build().unwrap_err().key(), KEY_KEY_PATH);
        // Test mode reads no file at all.
        let test = TlsSettings { cert_path: Some("/nonexistent".into()), ..TlsSettings::default() };
        assert!(!test.build().expect("test mode").verifies_server());
    }
}
